"""tui.first_frame: the real `treechat` and a minimal Textual app (bench/minimal_textual.py) in
the same kind of terminal, alternating; run through `bench/tui.py --only first_frame`."""

from __future__ import annotations

import os
import re
import select
import signal
import statistics
import struct
import tempfile
import time
from typing import Any

from bench.tui_common import ROOT, emit, judged, load1, ms

ANSI = re.compile(rb"\x1b\[[0-9;?<>=$ ]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOPXZ\\^_c]")


FIRST_FRAME_SIZE = (160, 45)  # the terminal of issue 27's figures
SHOWN = ("Message… (/help", "palette")  # the composer's placeholder and the footer's palette key (both apps)


def first_frame_env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE off: an installed treechat has its .pyc files (pip compiles them), as
    # Textual's have here; without them every start compiles our modules again (~0.5 s)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "TREECHAT_", "TEXTUAL"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(TERM="xterm-256color", OPENAI_API_KEY="sk-bench-offline",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # port 9: refused
    return env


def first_frame_once(argv: list[str], cols: int, rows: int, env: dict[str, str] | None = None,
                     timeout: float = 20.0) -> dict:
    """Spawn `argv` in a pseudo-terminal of cols x rows; ms until the output holds SHOWN."""
    import fcntl
    import pty
    import termios

    env = dict(env or first_frame_env(), COLUMNS=str(cols), LINES=str(rows))
    found: dict[str, float] = {}
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # child: the terminal size is set on our side of the pty below, before any output
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    raw, seen = b"", ""
    first_byte: float | None = None
    done: float | None = None
    try:
        while time.perf_counter() - t0 < timeout:
            if not select.select([fd], [], [], 0.02)[0]:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            first_byte = first_byte or time.perf_counter()
            raw += chunk
            # only the new output (and a little before it, for a sequence cut in two) is read: read
            # whole each time, the output of a bigger screen cost the reader time, and a slow
            # reader slows the writer down
            seen = (seen + ANSI.sub(b"", raw[-(len(chunk) + 256):]).decode("utf-8", "replace"))[-4096:]
            for marker in SHOWN:
                if marker not in found and (marker in seen or marker in seen.lower()):
                    found[marker] = time.perf_counter()
            if len(found) == len(SHOWN):
                done = time.perf_counter()
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    if done is None or first_byte is None:
        raise RuntimeError(f"no first frame within {timeout}s; output tail: {ANSI.sub(b'', raw)[-400:]!r}")
    return {"ms": ms(done - t0), "composer_ms": ms(found[SHOWN[0]] - t0), "first_byte_ms": ms(first_byte - t0),
            "bytes": len(raw)}


class Tmux:
    """A tmux session of its own at cols x rows: `once(argv)` respawns its pane with argv and polls
    the pane's screen (capture-pane) until it shows SHOWN. What a user sees in a real terminal."""

    def __init__(self, cols: int, rows: int) -> None:
        import shutil
        import subprocess

        self.run = subprocess.run
        self.name = f"treechat-bench-ff-{os.getpid()}"
        tmux = shutil.which("tmux")
        if tmux is None:
            raise RuntimeError("tmux is not installed")
        self.tmux: str = tmux
        self.run([self.tmux, "new-session", "-d", "-s", self.name, "-x", str(cols), "-y", str(rows), "sleep 600"],
                 check=True)
        self.run([self.tmux, "set-option", "-t", self.name, "remain-on-exit", "on"], check=True)

    def once(self, argv: list[str], env: dict[str, str], timeout: float = 20.0) -> dict:
        import shlex

        command = " ".join(["exec", "env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                            *map(shlex.quote, argv)])
        found: dict[str, float] = {}
        shown = ""
        t0 = time.perf_counter()
        self.run([self.tmux, "respawn-pane", "-k", "-t", self.name, command], check=True)
        try:
            while time.perf_counter() - t0 < timeout:
                shown = self.run([self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True,
                                 text=True).stdout
                now = time.perf_counter()
                for marker in SHOWN:
                    if marker not in found and (marker in shown or marker in shown.lower()):
                        found[marker] = now
                if len(found) == len(SHOWN):
                    return {"ms": ms(now - t0), "composer_ms": ms(found[SHOWN[0]] - t0)}
                time.sleep(0.005)
            raise RuntimeError(f"no first frame in tmux within {timeout}s; screen: {shown[-400:]!r}")
        finally:
            self.run([self.tmux, "respawn-pane", "-k", "-t", self.name, "sleep 600"])

    def close(self) -> None:
        self.run([self.tmux, "kill-session", "-t", self.name])


def bench_first_frame(repeat: int, terminal: str, exe: str | None = None) -> None:
    """treechat and the minimal Textual app (bench/minimal_textual.py), alternating, in the same
    kind of terminal at 160x45; the medians and their ratio (issue 27: ≤ 1.5)."""
    cols, rows = FIRST_FRAME_SIZE
    python = str(ROOT / ".venv/bin/python")
    treechat = exe or str(ROOT / ".venv/bin/treechat")
    apps = {"treechat": lambda home: [treechat, "--home", home],
            "minimal": lambda home: [python, str(ROOT / "bench/minimal_textual.py")]}
    env = first_frame_env()
    tmux = Tmux(cols, rows) if terminal == "tmux" else None
    runs: dict[str, list[dict]] = {name: [] for name in apps}
    loads = [load1()]
    try:
        for i in range(repeat + 1):  # the first round warms the page cache and .pyc files: not counted
            for name in (list(apps) if i % 2 else list(apps)[::-1]):
                with tempfile.TemporaryDirectory(prefix="treechat-bench-ff-") as home:
                    argv = apps[name](home)
                    fig = tmux.once(argv, env) if tmux else first_frame_once(argv, cols, rows, env)
                if i:
                    runs[name].append(fig)
            loads.append(load1())
    finally:
        if tmux:
            tmux.close()
    med = {name: statistics.median(r["ms"] for r in got) for name, got in runs.items()}
    composer = {name: statistics.median(r["composer_ms"] for r in got) for name, got in runs.items()}
    fields: dict[str, Any] = {}
    if terminal == "pty":
        fields["first_byte_ms"] = statistics.median(r["first_byte_ms"] for r in runs["treechat"])
    emit(bench="tui.first_frame_minimal", ms=med["minimal"], composer_ms=composer["minimal"],
         runs_ms=[r["ms"] for r in runs["minimal"]], terminal=f"{terminal} {cols}x{rows}",
         what="bench/minimal_textual.py (an Input and a Footer): spawn -> its placeholder and footer on screen; "
              "composer_ms: the placeholder alone")
    judged("tui.first_frame", med["treechat"], runs_ms=[r["ms"] for r in runs["treechat"]], **fields,
           vs_minimal=round(med["treechat"] / med["minimal"], 2), vs_minimal_ok=med["treechat"] <= 1.5 * med["minimal"],
           composer_ms=composer["treechat"], composer_vs_minimal=round(composer["treechat"] / composer["minimal"], 2),
           minimal_ms=med["minimal"], terminal=f"{terminal} {cols}x{rows}", load1=loads,
           exe=treechat, what="spawn treechat --home FRESH -> composer placeholder and footer keys on screen; "
                "alternating with the minimal Textual app, medians; vs_minimal = treechat / minimal (issue 27: ≤ 1.5); "
                "composer_ms: until the composer shows (its placeholder), without waiting for the footer")

