"""`treechat -p PROMPT --model A --model B …` (issue 39): one prompt to several models at once.
Each reply is printed whole under a header naming its model, in the order the models were given
(the fake answers them in the opposite order); stderr says which failed and the status is 1; with
one --model nothing changes; what cannot be done is one line before anything is sent."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, Send, Status, openai_chunks, sse_frame
from treechat.chat import Chat
from treechat.cli.main import main
from treechat.cli.print_compare import run_compare
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import AssistantMessage, MessageEntry


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


class LastFirst:
    """Every reply waits until all `count` requests are in; then the last model's answers first,
    the first model's last (each reply released by the one after it), so stdout's order is the
    models' and not the replies'. A model named `bad` gets a 400 (not retried)."""

    def __init__(self, fake: FakeProvider, count: int) -> None:
        self.fake, self.count = fake, count
        self.gates = [asyncio.Event() for _ in range(count + 1)]
        self.order: list[str] = []
        fake.responder = self._answer

    def _answer(self, request: Any) -> list[Any] | None:
        if not isinstance(request.body, dict) or "messages" not in request.body:
            return None
        model = request.body["model"]
        index = len(self.order)
        self.order.append(model)
        if len(self.order) == self.count:
            self.gates[self.count].set()
        if model == "bad":
            self.gates[index].set()  # (its turn is now: it fails at once)
            return [Status(400, {"Content-Type": "application/json"}, "close"),
                    Send(b'{"error":{"message":"the bad model is down","type":"invalid_request_error"}}')]
        frames = [sse_frame(c) for c in openai_chunks([f"re {model}", "\nline two"])]
        steps = self.fake.sse_steps(frames, gate=self.gates[index + 1], gate_after=0)
        steps.append(_Release(self.gates[index]))
        return steps


class _Release(Send):
    """A step that opens the next gate once its reply is sent (a Send of nothing)."""

    def __init__(self, gate: asyncio.Event) -> None:
        def release(_: Any) -> bytes:
            gate.set()
            return b""
        super().__init__(release)


async def compare(fake: FakeProvider, tmp_path: Any, models: list[str], *, max_runs: int = 4) -> tuple[int, str, str,
                                                                                                       Chat]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(f"max_runs = {max_runs}\n")
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(home, env=env)
    chat = Chat(catalog=MemoryCatalog(), settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref=models[0], cwd=str(tmp_path), local_servers=(), tools=[])
    await chat.open(await chat.catalog.create(cwd=str(tmp_path)))
    out, err = io.StringIO(), io.StringIO()
    async with asyncio.timeout(30):  # requests sent one after another would never get past the gates
        code = await run_compare(chat, "which?", models, out=out, err=err)
    return code, out.getvalue(), err.getvalue(), chat


async def test_each_reply_whole_under_its_model_in_the_order_given(fake, tmp_path) -> None:
    served = LastFirst(fake, 3)
    code, out, err, chat = await compare(fake, tmp_path, ["openai/m1", "openai/m2", "openai/m3"])
    assert (code, err) == (0, "")
    assert out == ("## openai/m1\n\nre m1\nline two\n\n## openai/m2\n\nre m2\nline two\n\n"
                   "## openai/m3\n\nre m3\nline two\n")
    assert sorted(served.order) == ["m1", "m2", "m3"]
    # three sibling replies, the leaf where it was (before the prompt)
    roots = await chat.session.get_children(None)
    assert len(roots) == 3 and chat.leaf_id is None
    replies: list[str] = []
    for root in roots:
        branch, below = [root], root
        while children := await chat.session.get_children(below.id):
            (below,) = children  # one line each below where they part
            branch.append(below)
        replies += [e.message.model for e in branch if isinstance(e, MessageEntry)
                    and isinstance(e.message, AssistantMessage)]
    assert sorted(replies) == ["m1", "m2", "m3"]


async def test_a_failed_model_is_said_on_stderr_and_the_status_is_1(fake, tmp_path) -> None:
    LastFirst(fake, 3)
    code, out, err, _ = await compare(fake, tmp_path, ["openai/m1", "openai/bad", "openai/m3"])
    assert code == 1
    assert out == ("## openai/m1\n\nre m1\nline two\n\n## openai/bad\n\n(no reply: see stderr)\n\n"
                   "## openai/m3\n\nre m3\nline two\n")
    assert err.splitlines()[0] == "treechat: openai/bad: openai rejected the request (HTTP 400): the bad model is down."
    assert err.splitlines()[-1] == "treechat: 1 of 3 models failed: openai/bad"


async def test_the_same_model_twice_is_two_attempts(fake, tmp_path) -> None:
    LastFirst(fake, 2)
    code, out, _, _ = await compare(fake, tmp_path, ["openai/m1", "openai/m1"])
    assert code == 0 and out.startswith("## openai/m1 #1\n") and "\n## openai/m1 #2\n" in out


async def test_more_models_than_max_runs_is_one_line_and_sends_nothing(fake, tmp_path) -> None:
    code, out, err, chat = await compare(fake, tmp_path, ["openai/m1", "openai/m2", "openai/m3"], max_runs=2)
    assert (code, out) == (2, "")
    assert err == ("treechat: 3 models need 3 runs, more than max_runs = 2 in config.toml allows; "
                   "nothing was sent.\n")
    assert fake.requests == [] and chat.leaf_id is None


@pytest.mark.parametrize("argv, words", [
    (["--model", "openai/a", "--model", "openai/b"], "--model more than once is for -p"),
    (["-p", "hi", "--mode", "json", "--model", "openai/a", "--model", "openai/b"], "--mode json speaks for one model"),
])
def test_several_models_where_they_cannot_go_is_one_line(capsys, tmp_path, argv, words) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--home", str(tmp_path), *argv])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert words in err.splitlines()[-1]  # argparse's usage, then our one line


@pytest.mark.slow  # the real treechat process: the "done when"
async def test_done_when_three_models_leave_three_sibling_replies_whose_requests_overlapped(fake, tmp_path) -> None:
    LastFirst(fake, 3)
    env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k", "TREECHAT_HOME": str(tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "treechat", "-p", "which?", "--model", "openai/a", "--model", "openai/b", "--model",
        "openai/c", "--tools", "", env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode() == ("## openai/a\n\nre a\nline two\n\n## openai/b\n\nre b\nline two\n\n"
                            "## openai/c\n\nre c\nline two\n")
    sid = err.decode().split("session ")[1].split()[0]
    tree = io.StringIO()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "treechat", "tree", sid, env=env,
                                                stdout=asyncio.subprocess.PIPE)
    listed, _ = await asyncio.wait_for(proc.communicate(), 60)
    tree.write(listed.decode())
    assert tree.getvalue().count("which?") == 3  # three prompts, one per branch
