"""MCP servers, skills and prompt templates in the app (issue 24): servers start after the first
frame, a call is confirmed in the dialog typing cannot answer, Esc stops a call, `/mcp` lists
the servers, a project's .mcp.json is asked about once, templates are commands (Enter, Tab, F1)."""

from __future__ import annotations

import json
import sys

from treechat.config.state import StateFile
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import HelpScreen, TextDialog

from ..mcp.helpers import FAKE, time_server
from .conftest import idle, path_texts, screen_text, type_text, wait_for
from .questions import answer, asking, wait_asking


def tools_of(app) -> list[str]:
    return [t.name for t in app.chat.mcp.tools()]


async def test_a_model_calls_the_time_server_after_the_user_allows_it(make_app, fake, tmp_path) -> None:
    (tmp_path / "config.toml").write_text(f'[mcp_servers.time]\ncommand = "{time_server()}"\n')
    fake.script_openai(tool_calls=[{"id": "c1", "name": "time__get_current_time",
                                    "arguments": '{"timezone": "Asia/Tokyo"}'}])
    fake.script_openai(["It is late in Tokyo."])
    async with make_app() as (app, pilot):
        await wait_for(pilot, lambda: len(tools_of(app)) == 2, what="the time server's tools", rounds=3000)
        await type_text(pilot, "What time is it in Tokyo?")
        await pilot.press("enter")
        await wait_asking(pilot, app, "Let the model call time__get_current_time?", what="the confirmation",
                          rounds=1000)
        assert "Asia/Tokyo" in screen_text(app)
        await answer(pilot, app, "y")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the answer", rounds=2000)
        result = next(text for role, text in await path_texts(app) if role == "toolResult")
        assert json.loads(result)["timezone"] == "Asia/Tokyo"
        assert fake.requests[0].body["tools"][0]["function"]["name"] == "time__get_current_time"
        await type_text(pilot, "/mcp")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="/mcp")
        text = screen_text(app)
        assert "time  ready" in text and "time__get_current_time, time__convert_time" in text


async def test_esc_stops_a_call_and_a_broken_server_is_one_notice(make_app, fake, tmp_path) -> None:
    (tmp_path / "config.toml").write_text(
        f'[mcp_servers.slow]\ncommand = "{sys.executable}"\nargs = ["{FAKE}"]\ntrust = true\n'
        '[mcp_servers.gone]\ncommand = "treechat-no-such-server"\n')
    fake.script_openai(tool_calls=[{"id": "c1", "name": "slow__slow", "arguments": '{"seconds": 60}'}])
    fake.script_openai(["never asked"])
    notes: list[str] = []
    async with make_app(message_hook=lambda m: notes.append(m.event.text) if type(getattr(m, "event", None)).__name__ == "Notice" else None) \
            as (app, pilot):
        await wait_for(pilot, lambda: "slow__slow" in tools_of(app) and app.chat.mcp.servers.get("gone") is not None
                       and app.chat.mcp.servers["gone"].state == "failed", what="the servers", rounds=3000)
        assert [n for n in notes if "MCP server" in n] == [
            "MCP server 'gone' could not start: cannot start 'treechat-no-such-server': no such program (is it "
            "installed and on PATH?)."]
        await type_text(pilot, "wait for it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.is_running and len(fake.requests) == 1, what="the call")
        await pilot.pause(0.3)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.is_running, what="the stop", rounds=500)
        result = next(text for role, text in await path_texts(app) if role == "toolResult")
        assert "cancelled" in result or "stopped" in result
        assert len(fake.requests) == 1


async def test_a_projects_servers_are_asked_about_once(make_app, fake, tmp_path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": sys.executable,
                                                                             "args": [FAKE]}}}))
    async with make_app() as (app, pilot):
        for key in "yes a":  # typing at start: the question waits for a pause, and takes none of it
            await pilot.press(key if key != " " else "space")
            await pilot.pause(0.3)
            assert asking(app) is None
        assert app.query_one(Composer).text == "yes a"
        panel = await wait_asking(pilot, app, "Start this project's MCP servers?", rounds=1000)
        assert panel.spec.body.startswith(f"{tmp_path / '.mcp.json'} asks to run these MCP servers")
        assert f"  runs: {sys.executable} {FAKE}" in panel.spec.body.splitlines()  # the whole command line
        assert tools_of(app) == [] and panel.gate.state == "typing"  # they had typed: Esc first
        await pilot.press("y")
        await pilot.pause()
        assert not panel.answered and app.query_one(Composer).text == "yes ay"
        await pilot.press("escape")
        await answer(pilot, app, "y")
        await wait_for(pilot, lambda: "proj__echo" in tools_of(app), what="the project's server", rounds=3000)
    saved = StateFile(tmp_path).read()["mcp_project_trust"][str(tmp_path / ".mcp.json")]
    assert saved["answer"] == "trusted"
    async with make_app() as (app, pilot):  # asked once: the next start just starts them
        await wait_for(pilot, lambda: "proj__echo" in tools_of(app), what="the server, unasked", rounds=3000)
        assert app.questions.panel is None


async def test_templates_are_commands_with_tab_and_f1(make_app, fake, tmp_path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "review.md").write_text("---\ndescription: Review some files\nargument-hint: FILE…\n---\n"
                                       "Please review $1 and $2.\n")
    skill = tmp_path / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: How to deploy\n---\nRun make deploy.\n")
    fake.script_openai(["reviewed"])
    fake.script_openai(["deployed"])
    async with make_app() as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extras.loaded, what="the templates")
        composer = app.query_one(Composer)
        await type_text(pilot, "/rev")
        await pilot.press("tab")
        assert composer.text == "/review "
        await type_text(pilot, "foo.py bar")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the reply")
        assert fake.requests[0].body["messages"][-1] == {"role": "user", "content": "Please review foo.py and bar."}
        await type_text(pilot, "/skill deploy now please")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the skill's reply")
        sent = fake.requests[1].body["messages"][-1]["content"]
        assert sent.startswith(f'<skill name="deploy" location="{skill}">') and sent.endswith("now please")
        assert "Run make deploy." in sent
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="F1")
        assert "/review FILE…" in app.screen.extra and "Review some files" in app.screen.extra
        assert "`deploy` — How to deploy" in app.screen.extra
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"review")
        await wait_for(pilot, lambda: "Template: review" in screen_text(app), what="the palette's template")
        await pilot.press("enter")
        await wait_for(pilot, lambda: composer.text == "/review ", what="the template in the composer")


async def test_mcp_follows_the_servers_while_it_is_open(make_app, fake, tmp_path) -> None:
    """/mcp opened while a server starts says when it is ready (it stayed on "starting", issue 37)."""
    gate = tmp_path / "start-now"
    (tmp_path / "config.toml").write_text(
        f'[mcp_servers.quick]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "--wait-for", "{gate}"]\n')
    async with make_app() as (app, pilot):
        await wait_for(pilot, lambda: bool(app.chat.mcp.specs), what="the server declared")
        await app.run_slash("mcp", "")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="/mcp")
        await wait_for(pilot, lambda: "quick  starting" in screen_text(app), what="the server starting")
        gate.touch()
        await wait_for(pilot, lambda: "quick  ready" in screen_text(app), what="the server ready, on screen", rounds=3000)
