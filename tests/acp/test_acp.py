"""`treechat acp` driven by the ACP package's client side, as an editor drives it: the real
command as a child process over pipes, the loopback fake provider behind it."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    audio_block,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    FileEditToolCallContent,
    McpServerStdio,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.acp.editor import Editor, call, contents, echo, text_of, tool_results, treechat_acp, user_text
from tests.fake_provider import FakeProvider
from tests.images import png_bytes

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "fake_server.py"


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


async def test_a_sub_agents_question_names_it(tmp_path, work):
    """A task call's child asks through the same request, titled with who asks; its own calls are
    not the editor's (a question made for it), and the task call is shown as a sub-agent's."""
    editor = Editor(answers=["allow_once"])
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("t1", "task", description="say hi", prompt="Run echo hi.")])
        fake.script_openai(tool_calls=[call("b1", "bash", command="echo hi")])
        fake.script_openai(["it said hi"])  # the sub-agent's answer
        fake.script_openai(["done"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "bash,task") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=[text_block("delegate it")])
    assert answer.stop_reason == "end_turn"
    [question] = editor.questions
    assert question.title == "task 'say hi' asks: echo hi" and question.tool_call_id != "b1"
    started = editor.call_updates("t1")[0]
    assert started.title == "Sub-agent: say hi" and started.kind == "think"
    assert tool_results(fake.requests[3]) == ["it said hi"]


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
            async with asyncio.timeout(60):
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
            async with asyncio.timeout(60):
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
        assert first.thought() == "let me look"  # streamed as it came
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


async def test_the_editors_mcp_server_runs_and_its_calls_are_asked_about(tmp_path, work):
    editor = Editor(answers=["allow_always"])
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("m1", "fake_tools__echo", text="ping")])
        fake.script_openai(["first"])
        fake.script_openai(tool_calls=[call("m2", "fake_tools__echo", text="again")])
        fake.script_openai(["second"])
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[McpServerStdio(
                name="fake tools", command=sys.executable, args=[str(MCP_SERVER)], env=[])])).session_id
            first = await conn.prompt(session_id=sid, prompt=[text_block("use the tool")])
            second = await conn.prompt(session_id=sid, prompt=[text_block("once more")])
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert "fake_tools__echo" in [t["function"]["name"] for t in fake.requests[0].body["tools"]]
    [question] = editor.questions  # allowed for the session: the second call was not asked about
    assert (question.tool_call_id, question.title, question.kind) == ("m1", "fake_tools: echo", "other")
    assert '"text": "ping"' in text_of(contents(question)[0])
    assert "ping" in tool_results(fake.requests[1])[-1] and "again" in tool_results(fake.requests[3])[-1]
    assert [u.status for u in editor.call_updates("m2")][-1] == "completed"


async def test_model_and_thinking_are_config_options(tmp_path, work):
    home = tmp_path / "home"
    home.mkdir()
    editor = Editor()
    async with FakeProvider() as fake:
        (home / "config.toml").write_text(
            f'[providers.fake]\napi = "openai"\nbase_url = "{fake.base_url}"\napi_key = "k"\n'
            '[[providers.fake.models]]\nid = "plain"\n[[providers.fake.models]]\nid = "thinker"\nreasoning = true\n')
        echo(fake)
        async with treechat_acp(editor, fake, home, "--model", "fake/plain") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            options = {o.id: o for o in new.config_options or []}
            assert options["model"].current_value == "fake/plain" and options["model"].category == "model"
            groups = {g.group: [o.value for o in g.options] for g in options["model"].options}
            assert groups["fake"] == ["fake/plain", "fake/thinker"]
            assert [o.value for o in options["thinking"].options] == ["off"]  # plain does not think
            changed = await conn.set_config_option(config_id="model", session_id=new.session_id, value="fake/thinker")
            thinking = next(o for o in changed.config_options if o.id == "thinking")
            assert "high" in [o.value for o in thinking.options]
            changed = await conn.set_config_option(config_id="thinking", session_id=new.session_id, value="high")
            assert next(o for o in changed.config_options if o.id == "thinking").current_value == "high"
            with pytest.raises(RequestError):
                await conn.set_config_option(config_id="model", session_id=new.session_id, value="nowhere/none")
            with pytest.raises(RequestError):
                await conn.set_config_option(config_id="colour", session_id=new.session_id, value="red")
            await conn.prompt(session_id=new.session_id, prompt=[text_block("think")])
            listed = await conn.list_sessions(cwd=str(work))
    assert fake.requests[-1].body["model"] == "thinker"
    assert [(s.session_id, s.title) for s in listed.sessions] == [(new.session_id, "think")]


async def test_a_read_outside_the_working_folder_is_asked_about(tmp_path, work):
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    editor = Editor(answers=["reject_once", "allow_always"])
    async with FakeProvider() as fake:
        for n in (1, 2, 3):
            fake.script_openai(tool_calls=[call(f"r{n}", "read", path=str(outside))])
        fake.script_openai(["ok"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "read") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("read it")])
    assert len(editor.questions) == 2  # refused, allowed for the session, then not asked again
    assert "outside the working folder" in editor.questions[0].title
    assert editor.questions[0].tool_call_id == "r1"
    results = tool_results(fake.requests[-1])
    assert "Not read" in results[0] and "top secret" in results[1] and "top secret" in results[2]


async def test_a_buffer_changed_while_asked_is_not_overwritten(tmp_path, work):
    path = str(work / "notes.txt")
    (work / "notes.txt").write_text("one\n")
    editor = Editor(answers=["allow_once"], files={path: "one\n"})
    editor.while_asked = lambda: editor.files.update({path: "typed meanwhile\n"})
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("w1", "write", path="notes.txt", content="replaced\n")])
        fake.script_openai(["ok"])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "write") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities(fs=True))
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("write")])
    assert editor.writes == [] and editor.files[path] == "typed meanwhile\n"
    assert "changed while the change was waiting" in tool_results(fake.requests[1])[-1]
    assert editor.call_updates("w1")[-1].status == "failed"


async def test_stop_reasons_and_a_failing_provider(tmp_path, work):
    editor = Editor()
    async with FakeProvider() as fake:
        fake.script_openai(["cut sh"], finish="length")
        fake.script_openai(["no"], finish="content_filter")
        fake.script_status(400, {"error": {"message": "the request was bad in this way"}})
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            cut = await conn.prompt(session_id=sid, prompt=[text_block("long")])
            refused = await conn.prompt(session_id=sid, prompt=[text_block("bad")])
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=sid, prompt=[text_block("again")])
    assert (cut.stop_reason, refused.stop_reason) == ("max_tokens", "refusal")
    assert "the request was bad in this way" in str(failed.value)


async def test_prompt_blocks_images_mentions_and_embedded_files(tmp_path, work):
    editor = Editor()
    picture = base64.b64encode(png_bytes()).decode()
    async with FakeProvider() as fake:
        echo(fake)
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=[
                text_block("compare"), resource_link_block("b.py", f"file://{work}/b.py"), text_block("with"),
                resource_block(embedded_text_resource(f"file://{work}/c.py", "print('c')\n")),
                image_block(picture, "image/png")])
            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=sid, prompt=[text_block("hear"), audio_block("AAAA", "audio/wav")])
    assert answer.stop_reason == "end_turn" and len(fake.requests) == 1  # the audio prompt sent nothing
    [user] = [m for m in fake.requests[0].body["messages"] if m["role"] == "user"]
    text = "".join(p.get("text", "") for p in user["content"])
    assert text.startswith("compare b.py with c.py") and "<file path=\"c.py\">\nprint('c')\n</file>" in text
    assert [p["type"] for p in user["content"]].count("image_url") == 1
    assert "Audio" in str(refused.value.data)


async def test_prompt_templates_are_the_editors_slash_commands(tmp_path, work):
    (work / ".treechat" / "prompts").mkdir(parents=True)
    (work / ".treechat" / "prompts" / "review.md").write_text(
        "---\ndescription: Review a file with care\n---\nPlease review $1 closely.\n")
    editor = Editor()
    async with FakeProvider() as fake:
        echo(fake)
        async with treechat_acp(editor, fake, tmp_path / "home") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("/review main.py")])
    [offered] = editor.of(AvailableCommandsUpdate)
    assert [(c.name, c.description) for c in offered.available_commands] == [("review", "Review a file with care")]
    assert user_text(fake.requests[0]) == "Please review main.py closely."


async def test_the_editors_terminal_is_killed_at_the_time_limit_and_on_cancel(tmp_path, work):
    editor = Editor(answers=["allow_once", "allow_once"])
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[call("t1", "bash", command="sleep 30", timeout=0.3)])
        fake.script_openai(["it took too long"])
        fake.script_openai(tool_calls=[call("t2", "bash", command="sleep 30")])
        async with treechat_acp(editor, fake, tmp_path / "home", "--tools", "bash") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities(terminal=True))
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            timed = await conn.prompt(session_id=sid, prompt=[text_block("wait")])
            running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait again")]))
            await editor.until(lambda: len(editor.terminals) == 2)
            await conn.cancel(session_id=sid)
            async with asyncio.timeout(60):
                stopped = await running
    assert (timed.stop_reason, stopped.stop_reason) == ("end_turn", "cancelled")
    assert "timed out after 0.3 s" in tool_results(fake.requests[1])[-1]
    first, second = editor.terminals.values()
    assert first.killed and first.released and second.killed and second.released
    assert editor.call_updates("t2")[-1].status == "failed"
