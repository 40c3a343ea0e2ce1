"""Record Pi 0.73.1's output for the conversations of conversations.py (run by hand, never by
the tests): each `-p --mode json` conversation and each RPC plan, against the loopback fake,
into tests/fixtures/pi_protocol/json_NAME.jsonl and rpc_NAME.jsonl.

    mkdir -p /tmp/pi && cd /tmp/pi && npm install @mariozechner/pi-coding-agent@0.73.1
    .venv/bin/python -m tests.protocols.record_pi --pi /tmp/pi/node_modules/.bin/pi

Pi runs with a throw-away HOME and PI_CODING_AGENT_DIR (nothing of a real setup is read or
written), offline, without context files, skills, extensions or templates; its models.json
names a custom provider `fake` at the fake (`openai-completions`, or `anthropic-messages`) and
its settings.json sets the agent's retry delay to 100 ms and the SDK's own retries to 0, so a
failed request is retried by the agent, as treechat's one retry layer does. The recorded lines
are Pi's, with the throw-away folder and the fake's port replaced (PI_TMP, PORT).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tests.fake_provider import FakeProvider

from .conversations import FIXTURES, HELLO, JSON_CONVERSATIONS, RPC_PLANS, Conversation
from .driver import Driver, ProcessChannel


def _setup(tmp: Path, fp: FakeProvider, *, api: str = "openai", reasoning: bool = False) -> dict[str, str]:
    agent = tmp / "agent"
    agent.mkdir()
    anthropic = api == "anthropic"
    provider = {"baseUrl": fp.base_url + ("" if anthropic else "/v1"),
                "api": "anthropic-messages" if anthropic else "openai-completions", "apiKey": "sk-fake",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False,
                           "supportsUsageInStreaming": True},
                "models": [{"id": "fake-model", "reasoning": reasoning}, {"id": "other-model"}]}
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    (agent / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 100, "provider": {"maxRetries": 0}}}))
    (tmp / "work").mkdir()
    (tmp / "work" / "hello.txt").write_text(HELLO)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(HOME=str(tmp), PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1")
    return env


_QUIET = ["--no-context-files", "--no-skills", "--no-extensions", "--no-prompt-templates"]


def _scrub(line: str, tmp: Path, fp: FakeProvider) -> str:
    return line.replace(str(tmp), "PI_TMP").replace(f"127.0.0.1:{fp.port}", "127.0.0.1:PORT")


async def record_json(pi: str, name: str, conversation: Conversation) -> list[str]:
    async with FakeProvider() as fp:
        conversation.script(fp)
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            env = _setup(tmp, fp, api=conversation.api, reasoning=conversation.reasoning)
            tools = ["--tools", ",".join(conversation.tools)] if conversation.tools else ["--no-tools"]
            proc = await asyncio.create_subprocess_exec(
                pi, "--model", "fake/fake-model", "--no-session", *_QUIET, *tools, "--mode", "json", conversation.prompt,
                cwd=tmp / "work", env=env, stdout=asyncio.subprocess.PIPE)
            out, _ = await proc.communicate()
            return [_scrub(line, tmp, fp) for line in out.decode().splitlines() if line.strip()]


async def record_rpc(pi: str, name: str, plan: Any) -> list[str]:
    async with FakeProvider() as fp:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            env = _setup(tmp, fp)
            channel = await ProcessChannel.start([pi, "--model", "fake/fake-model", *_QUIET, "--no-tools",
                                                  "--mode", "rpc"], cwd=str(tmp / "work"), env=env)
            driver = Driver(channel)
            try:
                await plan(driver, fp)
            finally:
                await driver.close()
            return [_scrub(line.decode(), tmp, fp) for line in driver.raw]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pi", default="pi", help="Pi 0.73.1's `pi` (node_modules/.bin/pi)")
    parser.add_argument("--out", default=str(FIXTURES))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, conversation in JSON_CONVERSATIONS.items():
        lines = asyncio.run(record_json(args.pi, name, conversation))
        (out / f"json_{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"json_{name}.jsonl")
    for name, plan in RPC_PLANS.items():
        lines = asyncio.run(record_rpc(args.pi, name, plan))
        (out / f"rpc_{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"rpc_{name}.jsonl")


if __name__ == "__main__":
    main()
