"""Print mode end to end against the loopback fake provider, and keys never reaching disk."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from tests.narrow import assistant_of, first_text, of
from treechat.chat import Chat
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.base import SessionCatalog
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import MessageEntry, TextContent, ToolResultMessage

SECRET = "sk-test-SECRET-do-not-store-7f3a"


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def registry_for(fp: FakeProvider) -> ModelRegistry:
    return ModelRegistry(env={"OPENAI_BASE_URL": fp.base_url, "OPENAI_API_KEY": SECRET,
                              "ANTHROPIC_BASE_URL": fp.base_url, "ANTHROPIC_API_KEY": SECRET})


async def allow(command: str) -> bool:
    return True


class Place:
    """A catalog and one session in it, continued by every run (like `-c`)."""

    def __init__(self, tmp_path: Path, catalog: SessionCatalog | None = None) -> None:
        self.home, self.catalog, self.session_id = tmp_path, catalog or MemoryCatalog(), ""

    async def session(self) -> Session:
        if not self.session_id:
            self.session_id = (await self.catalog.create()).session_id
        return await Session.open(await self.catalog.open(self.session_id))


async def run(fp, place: Place, prompt="hi", model="openai/fake-model", *, tools=None, yes=False, cwd=None,
              registry=None, out=None):
    out, err = out or io.StringIO(), io.StringIO()
    chat = Chat(catalog=place.catalog, settings=load_settings(place.home, env={}), registry=registry or registry_for(fp),
                model_ref=model, tools=tools, cwd=cwd, confirm=allow if yes else None)
    await chat.open(await place.catalog.open((await place.session()).session_id))
    code = await run_print(chat, prompt, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def test_streams_the_reply_and_persists_the_exchange(fake, tmp_path) -> None:
    fake.script_openai(["Hel", "lo"], usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12})
    place = Place(tmp_path)
    code, out, err = await run(fake, place)
    assert (code, out, err) == (0, "Hello\n", "")
    ctx = await (await place.session()).build_session_context()
    assert [m.role for m in ctx.messages] == ["user", "assistant"]
    assert assistant_of(ctx.messages[1]).usage.input == 10 and assistant_of(ctx.messages[1]).usage.output == 2
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_an_empty_reply_is_said_on_stderr(fake, tmp_path) -> None:
    """A small local model may stop at once (seen with SmolLM2 on llama-cpp-python): nothing on
    stdout, so stderr says why instead of leaving a blank."""
    fake.script_openai([])
    code, out, err = await run(fake, Place(tmp_path))
    assert (code, out.strip()) == (0, "")
    assert err == "treechat: the model's reply was empty.\n"


async def test_same_session_continues_with_anthropic(fake, tmp_path) -> None:
    fake.script_openai(["first"])
    fake.script_anthropic(["second"])
    place = Place(tmp_path)
    assert (await run(fake, place))[0] == 0
    code, out, _ = await run(fake, place, "again", model="anthropic/claude-sonnet-4-5")
    assert (code, out) == (0, "second\n")
    sent = fake.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]


async def test_dropped_connection_stores_partial_error_and_exits_non_zero(fake, tmp_path) -> None:
    fake.script_openai(["partial ", "text", " never"], drop_after=2)
    place = Place(tmp_path)
    code, out, err = await run(fake, place)
    assert code == 1
    assert out == "partial text\n"
    assert err.count("\n") == 1 and err.startswith("treechat: ") and "lost" in err
    last = (await (await place.session()).get_branch())[-1]
    assert isinstance(last, MessageEntry) and assistant_of(last).stop_reason == "error"
    assert assistant_of(last).content == [TextContent(text="partial text")]


async def test_bash_without_yes_is_refused_with_a_clear_result(fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"command": "echo hi"}'}])
    fake.script_openai(["ok"])
    place = Place(tmp_path)
    code, _, _ = await run(fake, place, tools=["bash"], cwd=str(tmp_path))
    assert code == 0
    result = (await (await place.session()).build_session_context()).messages[2]
    assert result.role == "toolResult" and of(ToolResultMessage, result).is_error and "--yes" in first_text(result)


async def test_bash_with_yes_runs(fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"command": "echo hi"}'}])
    fake.script_openai(["ok"])
    place = Place(tmp_path)
    code, _, _ = await run(fake, place, tools=["bash"], yes=True, cwd=str(tmp_path))
    result = (await (await place.session()).build_session_context()).messages[2]
    assert code == 0 and not of(ToolResultMessage, result).is_error and first_text(result) == "hi"


async def test_unknown_model_provider_is_one_clear_line(fake, tmp_path) -> None:
    code, out, err = await run(fake, Place(tmp_path), model="nowhere/x")
    assert code == 2 and out == "" and err.startswith("treechat: Unknown provider 'nowhere'")


@pytest.mark.parametrize("backend", ["sqlite", "jsonl"])
async def test_no_api_key_in_any_file_written(fake, tmp_path, backend) -> None:
    home = tmp_path / "home"
    settings = load_settings(home, env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": SECRET})
    catalog = await open_catalog(backend, settings.home)
    try:
        place = Place(home, catalog)
        fake.script_openai(["fine"])
        code, _, _ = await run(fake, place, registry=ModelRegistry(settings))
        fake.script_status(401, {"error": {"message": f"bad key {SECRET[:6]}"}})
        await run(fake, place, "again", registry=ModelRegistry(settings))
    finally:
        await catalog.close()
    assert code == 0
    files = [p for p in Path(home).rglob("*") if p.is_file()]  # noqa: ASYNC240  a small local temp folder
    assert files, "the backend wrote nothing?"
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file")


async def test_a_reader_that_goes_away_does_not_lose_the_reply(fake, tmp_path) -> None:
    fake.script_openai(["a long ", "answer"])
    place = Place(tmp_path)
    code, _, err = await run(fake, place, out=_ClosedPipe())
    assert code == 0 and "Traceback" not in err
    ctx = await (await place.session()).build_session_context()
    assert assistant_of(ctx.messages[-1]).stop_reason == "stop" and first_text(ctx.messages[-1]) == "a long answer"


async def test_a_missing_key_fails_before_any_request_and_writes_nothing(fake, tmp_path) -> None:
    # OpenAI itself (no base URL) needs its key; a server on this machine does not (tests/llm/test_url_servers.py)
    place = Place(tmp_path)
    code, _, err = await run(fake, place, registry=ModelRegistry(env={}))
    assert code == 2 and fake.requests == []
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err
    assert (await (await place.session()).storage.get_session_stats()).entry_count == 0


@pytest.mark.parametrize("argv, piped, sent", [
    (["-p", "review this"], "diff --git a/x b/x\n+new line\n", "diff --git a/x b/x\n+new line\n\nreview this"),
    (["-p", "-"], "the whole prompt\nfrom stdin\n", "the whole prompt\nfrom stdin"),
    (["-p"], "just the pipe\n", "just the pipe"),
])
@pytest.mark.slow  # the real treechat process, for each way of piping
async def test_piped_stdin_goes_into_the_prompt_and_stdout_is_the_reply_only(fake, tmp_path, argv, piped, sent):
    """`git diff | treechat -p "review this"`, `… | treechat -p -` and `… | treechat -p`, in a real
    process with a real pipe."""
    import asyncio
    import os
    import sys

    fake.script_openai(["looks ", "fine"])
    env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": SECRET, "TREECHAT_HOME": str(tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "treechat", "--model", "openai/fake-model", *argv, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(piped.encode()), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode() == "looks fine\n"  # the reply and nothing else
    (request,) = fake.requests
    user = [m for m in request.body["messages"] if m["role"] == "user"][-1]
    text = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
    assert text == sent
