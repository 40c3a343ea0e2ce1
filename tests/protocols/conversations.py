"""The conversations run through Pi 0.73.1 (to record tests/fixtures/pi_protocol/) and through
treechat (the tests), against the same loopback fake with the same script: what makes the two
comparable. `record_pi.py` runs them through Pi; the tests through treechat."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tests.fake_provider import FakeProvider

from .driver import Driver

USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi_protocol"


@dataclass(frozen=True)
class Conversation:
    """One `-p --mode json` run: the prompt, the tools on, the wire protocol and the fake's script."""

    prompt: str
    script: Callable[[FakeProvider], None]
    tools: tuple[str, ...] = ()
    api: Literal["openai", "anthropic"] = "openai"
    reasoning: bool = False


def _text(fp: FakeProvider) -> None:
    fp.script_openai(["Hel", "lo"], usage=USAGE)


def _read(fp: FakeProvider) -> None:
    fp.script_openai(tool_calls=[{"id": "c1", "name": "read", "arguments": ['{"path": ', '"hello.txt"}']}], usage=USAGE)
    fp.script_openai(["done"], usage=USAGE)


def _bash(fp: FakeProvider) -> None:
    fp.script_openai(tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"command": "echo hi"}'}], usage=USAGE)
    fp.script_openai(["ok"], usage=USAGE)


def _retry(fp: FakeProvider) -> None:
    fp.script_status(500, {"error": {"message": "server error", "type": "server_error"}})
    fp.script_openai(["ok"], usage=USAGE)


def _error(fp: FakeProvider) -> None:
    fp.script_status(400, {"error": {"message": "bad request", "type": "invalid_request_error"}})


def _anthropic_thinking(fp: FakeProvider) -> None:
    fp.script_anthropic(["Hel", "lo"], thinking=["hmm", " ok"])


def _anthropic_tool(fp: FakeProvider) -> None:
    fp.script_anthropic(["let me look"], tool_calls=[{"id": "c1", "name": "read",
                                                       "arguments": ['{"path": ', '"hello.txt"}']}])
    fp.script_anthropic(["done"])


JSON_CONVERSATIONS: dict[str, Conversation] = {
    "text": Conversation("hi", _text),
    "read": Conversation("read hello.txt", _read, tools=("read",)),
    "bash": Conversation("run echo", _bash, tools=("bash",)),  # (treechat asks first: the tests allow it)
    "retry": Conversation("hi", _retry),
    "error": Conversation("hi", _error),
    "anthropic_thinking": Conversation("hi", _anthropic_thinking, api="anthropic", reasoning=True),
    "anthropic_tool": Conversation("read hello.txt", _anthropic_tool, tools=("read",), api="anthropic"),
}
HELLO = "hello world\n"  # hello.txt in the working folder of every run


# ---------------------------------------------------------------- RPC plans (one per transcript)


async def plan_basic(d: Driver, fp: FakeProvider) -> None:
    """Most commands once, on one short conversation."""
    fp.script_openai(["Hel", "lo"], usage=USAGE)
    await d.call({"type": "get_state"})
    await d.call({"type": "prompt", "message": "hi"})
    await d.until("agent_end")
    for command in ({"type": "get_messages"}, {"type": "get_last_assistant_text"}, {"type": "get_session_stats"},
                    {"type": "get_fork_messages"}, {"type": "set_session_name", "name": "  named  "},
                    {"type": "set_session_name", "name": "  "}, {"type": "get_state"}, {"type": "get_commands"},
                    {"type": "get_available_models"}, {"type": "set_thinking_level", "level": "high"},
                    {"type": "cycle_thinking_level"}, {"type": "set_steering_mode", "mode": "all"},
                    {"type": "set_follow_up_mode", "mode": "all"}, {"type": "set_auto_compaction", "enabled": False},
                    {"type": "set_auto_retry", "enabled": False}, {"type": "abort_retry"}, {"type": "abort"},
                    {"type": "set_model", "provider": "fake", "modelId": "nope"},
                    {"type": "set_model", "provider": "fake", "modelId": "fake-model"}, {"type": "cycle_model"},
                    {"type": "bash", "command": "echo out; echo err >&2; exit 3"}, {"type": "abort_bash"}):
        await d.call(command)
    await d.call_unknown("nonsense")
    await d.send_raw(b"not json\n")
    await d.call({"type": "prompt"})
    await d.call({"type": "set_session_name"})
    await d.call({"type": "get_state"})
    await d.call({"type": "compact"})  # the fake has nothing scripted for it: the summary fails
    await d.call({"type": "clone"})
    await d.call({"type": "new_session"})
    await d.call({"type": "get_messages"})
    await d.call({"type": "export_html", "outputPath": "session.html"})


async def plan_steer(d: Driver, fp: FakeProvider) -> None:
    """A steer and a follow-up sent while a reply streams; a prompt without streamingBehavior refused."""
    gate = asyncio.Event()
    d.gates.append(gate)
    fp.script_openai(["first ", "reply"], usage=USAGE, gate=gate, gate_after=1)
    fp.script_openai(["after steer"], usage=USAGE)
    fp.script_openai(["after follow"], usage=USAGE)
    await d.call({"type": "prompt", "message": "one"})
    await d.until("message_update")
    await d.call({"type": "prompt", "message": "no behaviour"})
    await d.call({"type": "steer", "message": "steer me"})
    await d.call({"type": "prompt", "message": "follow me", "streamingBehavior": "followUp"})
    await d.call({"type": "get_state"})
    gate.set()
    await d.until_idle()
    await d.call({"type": "get_messages"})


async def plan_abort(d: Driver, fp: FakeProvider) -> None:
    """abort while a reply streams: the partial reply kept, the queued follow-up kept for the next prompt."""
    fp.script_openai(["part", "ial", " never"], usage=USAGE, hang_after=2)
    fp.script_openai(["next"], usage=USAGE)
    await d.call({"type": "prompt", "message": "one"})
    await d.until("message_update", 2)
    await d.call({"type": "follow_up", "message": "later"})
    await d.call({"type": "abort"})
    await d.until("agent_end")
    await d.call({"type": "get_state"})
    await d.call({"type": "get_messages"})
    await d.call({"type": "prompt", "message": "two"})
    await d.until("agent_end", 2)
    await d.call({"type": "get_messages"})


async def plan_fork(d: Driver, fp: FakeProvider) -> None:
    """Two prompts, then a fork before the second (its text comes back) and a fork of no entry."""
    fp.script_openai(["a1"], usage=USAGE)
    fp.script_openai(["a2"], usage=USAGE)
    await d.call({"type": "prompt", "message": "q1"})
    await d.until("agent_end")
    await d.call({"type": "prompt", "message": "q2"})
    await d.until("agent_end", 2)
    forks = await d.call({"type": "get_fork_messages"})
    second = forks["data"]["messages"][1]["entryId"]
    await d.call({"type": "fork", "entryId": second})
    await d.call({"type": "get_messages"})
    await d.call({"type": "fork", "entryId": "nope"})


RPC_PLANS: dict[str, Callable[[Driver, FakeProvider], Awaitable[None]]] = {
    "basic": plan_basic, "steer": plan_steer, "abort": plan_abort, "fork": plan_fork,
}


# ---------------------------------------------------------------- comparing


def kinds(records: list[dict[str, Any]]) -> list[str]:
    """What is compared with Pi: each record's kind, a reply's delta kind, a message's role and how
    it stopped, a response's command and outcome (values differ: ids, times, paths)."""
    out: list[str] = []
    for record in records:
        kind = record.get("type")
        if kind == "message_update":
            out.append(f"message_update {record['assistantMessageEvent']['type']}")
        elif kind in ("message_start", "message_end"):
            message = record["message"]
            stop = f"/{message.get('stopReason')}" if message["role"] == "assistant" else ""
            out.append(f"{kind} {message['role']}{stop}")
        elif kind == "response":
            out.append(f"response {record.get('command')} {record['success']}")
        else:
            out.append(str(kind))
    return out


# Fields Pi's objects carry that are its adapters' internals (a partial tool call's parse state, a
# response's ids) or that treechat adds (a failure's kind), optional ones (`sessionFile`: Pi's
# session file, which a database-backed session has not) and each tool's own (a result's
# `details`: bash's exit status here, its truncation in Pi): not part of the protocol's shape.
_OWN_FIELDS = frozenset({"responseId", "responseModel", "partialArgs", "partialJson", "streamIndex", "index",
                         "thinkingSignature", "errorKind", "compat", "sessionFile", "details"})


def shape(value: Any, path: str = "") -> set[str]:
    """Every key path with the kind of its value (numbers as one kind), for comparing shapes."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _OWN_FIELDS or (key == "arguments" and path.endswith("content[]")):
                continue  # (a streamed call's arguments: Pi parses them as they come, we when whole)
            kind = "number" if isinstance(item, int | float) and not isinstance(item, bool) else type(item).__name__
            out.add(f"{path}.{key}:{kind}")
            out |= shape(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            out |= shape(item, f"{path}[]")
    return out


def same_shape(ours: dict[str, Any], pi: dict[str, Any]) -> bool:
    """Of the same shape as Pi's record. A response's `id` is the request's. A reply's update is its delta's shape, and a message so far
    within Pi's: Pi's partial message is its live object, written once the stream has gone on, so
    it may already hold what later deltas bring."""
    if ours.get("type") == "response":  # (an unknown command's: Pi leaves its id out, we keep it)
        return shape({**ours, "id": None}) == shape({**pi, "id": None})
    if ours.get("type") != "message_update":
        return shape(ours) == shape(pi)
    delta = {k: v for k, v in ours["assistantMessageEvent"].items() if k != "partial"}
    pi_delta = {k: v for k, v in pi["assistantMessageEvent"].items() if k != "partial"}
    return shape(delta) == shape(pi_delta) and shape(ours["message"]) <= shape(pi["message"])


def load_fixture(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
