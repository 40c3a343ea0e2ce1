"""Issue 21 item 5: every line treechat writes goes through the one sanitiser. `treechat doctor`
shows what config.toml says as `-p` does: an OSC or a CSI in a model or provider name is ␛ text,
never sent to the terminal (before, the report carried them raw); so do the session ids an import
prints and a file name in a progress bar."""

from __future__ import annotations

import asyncio
import io
import json
import socket

import pytest

from tests.tui.conftest import fake, make_app, screen_text, type_text, wait_for  # noqa: F401  (fixtures)
from treechat.cli.main import main
from treechat.doctor.checks import run_doctor
from treechat.progress import progress

HOSTILE = "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202e"  # TOML escapes: OSC title, clear, 8-bit CSI, bidi


def closed_servers() -> tuple[tuple[str, str], ...]:
    ports = []
    for _ in range(4):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    return tuple((name, f"http://127.0.0.1:{port}") for name, port in zip(("ollama", "lmstudio", "llamacpp", "vllm"),
                                                                             ports))


def doctor(home, *, as_json: bool = False) -> str:
    out = io.StringIO()
    asyncio.run(run_doctor(str(home), as_json=as_json, out=out, env={"TERM": "xterm-256color"},
                           servers=closed_servers(), encoding="utf-8", tmux=lambda option: None))
    return out.getvalue()


def write_config(home) -> None:
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "evil{HOSTILE}/model{HOSTILE}"\n\n'
        f'[providers."evil{HOSTILE}"]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["model{HOSTILE}"]\n')


def test_the_text_report_shows_control_characters_as_placeholders(tmp_path):
    home = tmp_path / "home"
    write_config(home)
    text = doctor(home)
    assert "evil␛]0;pwned␇␛[2J<U+009B>31m<U+202E>" in text
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")


def test_the_json_report_escapes_them_and_keeps_the_value(tmp_path):
    home = tmp_path / "home"
    write_config(home)
    text = doctor(home, as_json=True)
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
    report = json.loads(text)
    assert any("evil\x1b]0;pwned\x07" in value for value in strings(report))  # the same value, escaped


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_import_prints_a_hostile_session_id_as_text(tmp_path, capsys):
    sid = "evil\x1b]0;pwned\x07\u202e"
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2025-01-01T00:00:00Z",
                                   "cwd": "/"}) + "\n" + json.dumps(
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}}) + "\n")
    assert main(["--home", str(tmp_path / "home"), "import", str(session)]) == 0
    out, err = capsys.readouterr()
    assert out == "evil␛]0;pwned␇<U+202E>\n"
    assert not any(ch in out + err for ch in "\x07\u202e")


def test_a_progress_description_is_shown_as_text():
    out = io.StringIO()
    with progress("Importing \x1b]0;pwned\x07[bold]x[/bold]", total=10, stream=out, force=True) as bar:
        bar.update(description="Importing \x1b]2;again\x07")
        bar.advance(10)
    text = out.getvalue()
    assert "\x1b]0;pwned" not in text and "\x1b]2;again" not in text and "\x07" not in text
    assert "␛]0;pwned␇[bold]x[/bold]" in text or "␛]2;again␇" in text


# ---------------------------------------------------------------- issue 36: names from a repository
# A skill folder named with an OSC 52 set the clipboard through a start-up toast. Every name and
# message that comes from a repository or a server (a skill's folder, name and description, a
# template's description and hint, an MCP server's stderr in its error) reaches the terminal only
# through the sanitiser: in toasts (every one passes TuiBase._on_notify), dialogs, F1, the palette,
# `-p`'s stderr and `treechat mcp`.

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # "set the clipboard to 'pwned'"
EVIL = f"evil {OSC52} SKILLMARK \x1b[2J \x9b31m \u202e\u2066 x"  # OSC 52, CSI, 8-bit CSI, bidi override and isolate
RAW = ("\x1b]52", "\x9b", "\u202e", "\u2066", "\x07")  # none of these may reach the terminal


def plant(folder) -> None:
    """A repository whose skill folder, skill description, template and MCP server carry EVIL."""
    skills = folder / ".agents" / "skills"
    (skills / EVIL).mkdir(parents=True)
    quoted = json.dumps(f"Does {EVIL} things")  # (YAML takes controls only escaped, in double quotes)
    (skills / EVIL / "SKILL.md").write_text(f"---\ndescription: {quoted}\n---\nbody\n")
    prompts = folder / ".treechat" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text(f"---\ndescription: {json.dumps('Review ' + EVIL)}\n"
                                       f"argument-hint: {json.dumps(f'<{EVIL}>')}\n---\nReview $1\n")


def evil_server_config(home) -> None:
    import sys

    from tests.mcp.helpers import FAKE

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[mcp_servers.loud]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps([FAKE, '--say', EVIL])}\n")


def clean(text: str) -> bool:
    return not any(raw in text for raw in RAW)


@pytest.mark.slow  # the real App
async def test_names_from_a_repository_reach_the_app_sanitised(make_app, tmp_path) -> None:  # noqa: F811
    from textual.notifications import Notification, Notify

    from treechat.widgets.screens import HelpScreen, TextDialog

    plant(tmp_path)
    evil_server_config(tmp_path)
    toasts: list[Notify] = []
    async with make_app(message_hook=lambda m: toasts.append(m) if isinstance(m, Notify) else None) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded and app.chat.mcp.servers.get("loud") is not None
                       and app.chat.mcp.servers["loud"].state == "failed", what="the skills and the server",
                       rounds=3000)
        await wait_for(pilot, lambda: len(toasts) >= 2, what="the two warnings")
        shown = [t.notification.message for t in toasts]  # as the App made them (in place, before drawing)
        assert any("SKILLMARK" in m for m in shown) and any("could not start" in m for m in shown)
        assert all(clean(m) for m in shown), shown
        assert clean(screen_text(app))
        assert clean(app.extensions_help()) and "SKILLMARK" in app.extensions_help()
        rows = app.chat.command_rows()
        assert rows and all(clean(f"{r.title} {r.usage} {r.help}") for r in rows)
        for command in ("/skill", "/mcp"):
            await type_text(pilot, command)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what=command)
            assert "SKILLMARK" in screen_text(app) or command == "/mcp"
            assert clean(screen_text(app))
            await pilot.press("escape")
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="F1")
        assert clean(screen_text(app))
        app.post_message(Notify(Notification(f"posted {EVIL} [link='https://example.com']link[/link]",
                                             markup=True)))  # past App.notify
        await pilot.pause()
        assert clean(toasts[-1].notification.message) and not toasts[-1].notification.markup


async def test_print_mode_and_treechat_mcp_show_the_names_as_text(tmp_path) -> None:
    from tests.fake_provider import FakeProvider
    from tests.mcp.helpers import treechat

    folder, home = tmp_path / "project", tmp_path / "home"
    (folder / ".git").mkdir(parents=True)
    plant(folder)
    evil_server_config(home)
    async with FakeProvider() as fp:
        fp.script_openai(["fine"])
        code, out, err = await treechat(home, "-p", "hi", "--model", "openai/fake-model", fp=fp, cwd=folder)
    assert code == 0 and clean(out + err) and "SKILLMARK" in err and "could not start" in err
    code, out, err = await treechat(home, "mcp", cwd=folder)
    assert code == 1 and clean(out + err) and "␛]52;c;cHduZWQ=␇" in out  # shown, not obeyed


@pytest.mark.slow  # the real treechat in a terminal
def test_the_real_app_in_a_terminal_writes_no_escape_from_a_name(tmp_path) -> None:
    """The real `treechat` in a pseudo-terminal, started in a repository with the OSC-52-named skill:
    everything it writes until the warning's words are on the screen carries none of the name's
    sequences (the screen's own escape codes are Textual's)."""
    import fcntl
    import os
    import pty
    import select
    import signal
    import struct
    import sys
    import termios
    import time

    folder, home = tmp_path / "project", tmp_path / "home"
    (folder / ".git").mkdir(parents=True)
    home.mkdir()
    plant(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "TREECHAT_"))}
    env.update(TERM="xterm-256color", HOME=str(tmp_path), OPENAI_API_KEY="sk-offline",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(folder)
        os.execve(sys.executable, [sys.executable, "-m", "treechat", "--home", str(home)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    written = bytearray()
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and b"SKILLMARK" not in written:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                written += chunk
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    assert b"SKILLMARK" in written, "the warning about the skill never reached the screen"
    assert b"\x1b]52" not in written and "\u202e".encode() not in written and "\x9b".encode() not in written
