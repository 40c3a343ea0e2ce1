"""The first frame imports only what it draws (issue 27), whatever the modules are called.

The real `treechat` (its console entry, `treechat.cli.main.main`) runs in a pseudo-terminal; at the
first frame that shows the composer the probe writes down every module loaded, then lets the app
go on and writes them down again once the session is open. Nothing of the store, the providers,
the agent, the config's models or the heavy widgets may be in the first list, and all of them
must be in the second (the app did open its session after the frame). Names are checked as
prefixes, so a module moved or split by a re-layout is still caught."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from pathlib import Path

from .test_structure import modules

PROBE = r"""
import json, os, sys
import textual.app
from treechat.widgets.textual_internals import on_display, screen_text

first = []


def watched(screen, renderable):
    if renderable is None:
        return
    if not first and "Message… (/help" in screen_text(screen):
        first.append(sorted(sys.modules))
    if first and getattr(screen.app, "started", False):
        with open(sys.argv[1], "w") as out:
            json.dump({"first_frame": first[0], "open": sorted(sys.modules)}, out)
        os._exit(0)


on_display(textual.app.App, watched)
from treechat.cli.main import main

sys.exit(main(["--home", sys.argv[2]]))
"""

# What the first frame must not load: the store and its vocabulary, config.toml's checked models,
# the providers and their HTTP stack, the controller, the agent, the session's machinery, and the
# widgets whose content needs the session (the transcript's markdown, the tree, the dialogs).
NOT_BEFORE_FIRST_FRAME = (
    "pydantic", "httpx", "httpcore", "aiosqlite", "sqlite3", "markdown_it",
    "treechat.config.settings", "treechat.bootstrap", "treechat.chat", "treechat.chat.state", "treechat.chat.live",
    "treechat.agent", "treechat.llm", "treechat.session", "treechat.export.formats", "treechat.export.html",
    "treechat.cli.storage", "treechat.prompts.attachments", "treechat.storage.model", "treechat.storage.base",
    "treechat.storage.sqlite", "treechat.storage.jsonl", "treechat.storage.postgres",
    "treechat.widgets.screens", "treechat.widgets.transcript.view", "treechat.widgets.tree.view",
    "treechat.widgets.transcript.message_view", "treechat.widgets.transcript.streaming_view", "treechat.tui.view",
    "treechat.tui.models",
)
LOADED_ONCE_OPEN = ("pydantic", "treechat.chat", "treechat.storage.model", "treechat.storage.sqlite",
                    "treechat.widgets.transcript.view", "treechat.widgets.tree.view")
MAX_OURS = 42  # treechat modules in the first frame (42 today: the App, its parts, the CLI, the light widgets)
# (packages are not counted: a folder's __init__ is a name, not work; what it imports is counted)


def matching(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def run_in_terminal(tmp_path: Path, timeout: float = 90.0) -> dict[str, list[str]]:
    import fcntl
    import pty
    import struct
    import termios

    out, home = tmp_path / "modules.json", tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "TREECHAT_"))}
    env.update(TERM="xterm-256color", OPENAI_API_KEY="sk-offline", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", PROBE, str(out), str(home)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:  # read the terminal's output (or the app blocks on writing)
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    if not os.read(fd, 1 << 16):
                        break
                except OSError:
                    break
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                pid = 0
                break
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert out.exists(), "the app never drew its first frame and opened its session"
    return json.loads(out.read_text())


def test_the_first_frame_loads_no_store_provider_agent_or_heavy_widget(tmp_path: Path) -> None:
    seen = run_in_terminal(tmp_path)
    first, opened = seen["first_frame"], seen["open"]
    assert matching(first, NOT_BEFORE_FIRST_FRAME) == [], "loaded before the first frame"
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    ours = [m for m in first if m.startswith("treechat") and m not in packages]
    assert len(ours) <= MAX_OURS, ours
    assert set(LOADED_ONCE_OPEN) <= set(opened), "the session did not open after the first frame"
