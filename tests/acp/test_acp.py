"""`treechat acp` driven by the ACP package's client side, as an editor drives it: the real
command as a child process over pipes, the loopback fake provider behind it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.acp.editor import Editor, call, contents, echo, text_of, tool_results, treechat_acp, user_text
from tests.fake_provider import FakeProvider


async def cli(home: Path, *argv: str) -> str:
    """`treechat --home HOME ARGV…` (another process reading the same store): its stdout."""
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "treechat", "--home", str(home), *argv],
                                   capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def work(tmp_path):
    folder = tmp_path / "work"
    (folder / ".git").mkdir(parents=True)
    return folder


async def test_an_editor_gets_echo_chunks_and_end_turn(tmp_path, work):
    editor = Editor()
    async with FakeProvider() as fake:
        echo(fake)
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            hello = await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                          client_capabilities=editor.capabilities())
            assert hello.protocol_version == PROTOCOL_VERSION
            caps = hello.agent_capabilities
            assert caps is not None and caps.load_session and caps.prompt_capabilities is not None
            assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
            assert hello.agent_info is not None and hello.agent_info.name == "treechat"
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            model = next(o for o in new.config_options or [] if o.id == "model")
            assert model.current_value == "openai/gpt-4.1"
            answer = await conn.prompt(session_id=new.session_id, prompt=[text_block("hello there")])
    assert answer.stop_reason == "end_turn"
    assert editor.said() == "echo: hello there"
    chunks = editor.of(AgentMessageChunk)
    assert len(chunks) >= 2 and len({c.message_id for c in chunks}) == 1  # streamed, one message
    assert user_text(fake.requests[-1]) == "hello there"
    listed = await cli(tmp_path / "home", "sessions", "--json")
    assert [s["id"] for s in json.loads(listed)] == [new.session_id]  # a session in treechat's store


async def test_a_shell_command_is_asked_about_and_the_answers_count(tmp_path, work):
    """allow_once runs it, reject_once refuses it (the model is told), allow_always runs this
    command from then on without asking; the calls go pending → in_progress → completed/failed."""
    editor = Editor(answers=["allow_once", "reject_once", "allow_always"])
    async with FakeProvider() as fake:
        for i in range(1, 5):
            fake.script_openai(tool_calls=[call(f"c{i}", "bash", command="echo hi-from-bash")])
            fake.script_openai([f"done {i}"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "bash") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            stops = [(await conn.prompt(session_id=sid, prompt=[text_block(f"run it {i}")])).stop_reason
                     for i in range(1, 5)]
    assert stops == ["end_turn"] * 4
    assert len(editor.questions) == 3  # the fourth ran without asking
    first = editor.questions[0]
    assert first.tool_call_id == "c1" and first.kind == "execute" and first.title == "echo hi-from-bash"
    assert editor.question_options[0] == ["allow_once", "allow_always", "reject_once"]
    statuses = [u.status for u in editor.call_updates("c1")]
    assert statuses == ["pending", "in_progress", "completed"]
    done = editor.call_updates("c1")[-1]
    assert "hi-from-bash" in text_of(contents(done)[0])
    assert [u.status for u in editor.call_updates("c2")][-1] == "failed"
    assert "hi-from-bash" in tool_results(fake.requests[1])[0]
    assert "declined" in tool_results(fake.requests[3])[-1]
    assert "hi-from-bash" in tool_results(fake.requests[7])[-1]  # allowed for the session


async def test_edits_go_through_the_editors_buffer_with_their_diff(tmp_path, work):
    """With fs offered, read and edit see the editor's text (not the disk's), the question
    carries the diff (the whole file before and after), and the change is written through the
    editor: the disk is left for the editor to save."""
    on_disk = work / "notes.txt"
    on_disk.write_text("saved\n")
    path = str(on_disk)
    editor = Editor(answers=["allow_once"], files={path: "unsaved one\n"})
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("r1", "read", path="notes.txt")])
        fake.script_openai(tool_calls=[call("e1", "edit", path="notes.txt",
                                            edits=[{"oldText": "one", "newText": "two"}])])
        fake.script_openai(["edited"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "read,edit") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities(fs=True))
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=[text_block("change it")])
    assert answer.stop_reason == "end_turn"
    assert "unsaved one" in tool_results(fake.requests[1])[0]  # read saw the buffer
    [question] = editor.questions
    assert question.tool_call_id == "e1" and question.kind == "edit"
    [diff] = contents(question)
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.path, diff.old_text, diff.new_text) == (path, "unsaved one\n", "unsaved two\n")
    assert editor.writes == [(path, "unsaved two\n")]
    assert on_disk.read_text() == "saved\n"
    read_call = editor.call_updates("r1")
    assert read_call[0].kind == "read" and read_call[0].locations == [ToolCallLocation(path=path)]
    edited = editor.call_updates("e1")[-1]
    assert edited.status == "completed" and isinstance(contents(edited)[0], FileEditToolCallContent)


async def test_bash_runs_in_the_editors_terminal_when_offered(tmp_path, work):
    editor = Editor(answers=["allow_once"])
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("b1", "bash", command="echo from-the-terminal; exit 3")])
        fake.script_openai(["seen"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "bash") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities(terminal=True))
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=[text_block("run")])
    assert answer.stop_reason == "end_turn"
    [(command, args, cwd)] = editor.created
    assert (command, args, cwd) == ("/bin/sh", ["-c", "echo from-the-terminal; exit 3"], str(work))
    [terminal] = editor.terminals.values()
    assert terminal.released
    result = tool_results(fake.requests[1])[0]
    assert "from-the-terminal" in result and "exited with code 3" in result
    updates = editor.call_updates("b1")
    assert any(isinstance(c, TerminalToolCallContent) for u in updates for c in (u.content or []))
    assert updates[-1].status == "failed" and isinstance(contents(updates[-1])[0], TerminalToolCallContent)


async def test_cancel_mid_stream_answers_cancelled_and_keeps_the_partial_reply(tmp_path, work):
    editor = Editor()
    gate = asyncio.Event()  # never set: the reply stops after its first words until the run is stopped
    async with FakeProvider() as fake:
        fake.script_openai(["partial ", "words", " never sent"], gate=gate, gate_after=2)
        fake.script_openai(["after the cancel"])
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("talk")]))
            await editor.until(lambda: "partial" in editor.said())
            await conn.cancel(session_id=sid)
            answer = await running
            again = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
    assert answer.stop_reason == "cancelled"
    assert again.stop_reason == "end_turn" and editor.said().endswith("after the cancel")
    tree = await cli(tmp_path / "home", "tree", sid, "--json")
    replies = [e["message"] for e in json.loads(tree)["entries"]
               if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert [r["stopReason"] for r in replies] == ["aborted", "stop"]
    assert replies[0]["content"][0]["text"].startswith("partial")


async def test_cancel_withdraws_an_open_question(tmp_path, work):
    editor = Editor(answers=["hold"])
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("c1", "bash", command="rm -rf nothing")])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "bash") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("clean")]))
            async with asyncio.timeout(60):
                await editor.asked.wait()
            await conn.cancel(session_id=sid)
            answer = await running
    assert answer.stop_reason == "cancelled"
    assert len(fake.requests) == 1  # nothing more was asked of the model
    assert editor.call_updates("c1")[-1].status == "failed"


async def test_load_replays_a_session_in_path_order(tmp_path, work):
    """A session made in one process (a prompt, a tool call and its result, thinking) is loaded
    by another: its path comes back as updates, in order, before the answer."""
    home = tmp_path / "home"
    (work / "a.txt").write_text("alpha\n")
    first = Editor()
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("r1", "read", path="a.txt")], reasoning=["let me look"])
        fake.script_openai(["it says alpha"])
        async with treechat_acp(first, fake, home, "--tools", "read") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=first.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("what is in a.txt?")])
        later = Editor()
        echo(fake)
        async with treechat_acp(later, fake, home, "--tools", "read") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=later.capabilities())
            loaded = await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
            replayed = list(later.updates)
            with pytest.raises(RequestError):
                await conn.load_session(cwd=str(work), session_id="no-such-session", mcp_servers=[])
            answer = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])
    assert loaded is not None and answer.stop_reason == "end_turn"
    kinds = [u.session_update for _, u in replayed if u.session_update != "available_commands_update"]
    assert kinds == ["user_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
                     "agent_message_chunk"]
    updates = [u for _, u in replayed]
    user = next(u for u in updates if isinstance(u, UserMessageChunk))
    assert user.content.text == "what is in a.txt?"
    start = next(u for u in updates if isinstance(u, ToolCallStart))
    assert (start.tool_call_id, start.kind, start.title) == ("r1", "read", "Read a.txt")
    result = next(u for u in updates if isinstance(u, ToolCallProgress))
    assert result.status == "completed" and "alpha" in text_of(contents(result)[0])
    assert "let me look" in later.thought() and later.said().startswith("it says alpha")
    assert later.said().endswith("echo: and now?")  # the loaded session goes on
