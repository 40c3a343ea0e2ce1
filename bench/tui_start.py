"""The start, as a user sees it (issue 27). Run through `bench/tui.py --only first_message`.

tui.first_message   a fake llama.cpp server (tests/fake_local_server.py, in its own process) whose
                    probe endpoints (/props, /v1/models, /api/show, …) trickle one byte every 50 ms
                    for ever; config.toml names it as a provider on 127.0.0.1, so the app asks it
                    for its window and models from start-up. `treechat` is started in a tmux pane
                    at 160x45; the moment the pane shows the composer, a message is typed (tmux
                    send-keys, then Enter). `shown_ms`: Enter -> the message on the screen outside
                    the composer (the composer empty again); `answered_ms`: Enter -> the server's
                    reply on the screen. Issue 27: on screen within 0.5 s, answered within 3 s,
                    while the probes are still trickling (`probes_open` says how many were).
                    Median of the runs; every run's figures too.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.child_server import ServerChild
from bench.storage import emit

ROOT = Path(__file__).resolve().parents[1]
TEXT = "hello from the first second"
REPLY = "ZQXREPLY answered at once"
PLACEHOLDER = "Message… (/help"


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def load1() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


async def serve_local() -> None:
    """Child-process side: print the base URL, serve until stdin closes, then print what it saw."""
    from tests.fake_local_server import LocalServer
    from tests.fake_provider import FakeProvider

    async with FakeProvider() as fake:
        LocalServer.llama_cpp(fake, trickle_probes=True, reply=REPLY)
        print(fake.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        print(json.dumps({"probes": len(fake.probes), "requests": len(fake.requests),
                          "disconnects": fake.disconnects}), flush=True)


class LocalServerProcess(ServerChild):
    def __init__(self) -> None:
        super().__init__([sys.executable, str(ROOT / "bench/tui.py"), "--serve-local"], str(ROOT),
                         "the fake local server")

    def seen(self) -> dict[str, int]:
        return self.finish()


def shown_outside_composer(screen: str, text: str) -> bool:
    """`text` on a line that is not the composer's (the composer, emptied, shows its placeholder)."""
    return PLACEHOLDER in screen and any(text in line and PLACEHOLDER not in line for line in screen.splitlines())


def first_message_once(env: dict[str, str], tmux: str, name: str, timeout: float = 30.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="treechat-bench-fm-") as home, LocalServerProcess() as server:
        Path(home, "config.toml").write_text(
            f'model = "local/model.gguf"\n\n[providers.local]\nbase_url = "{server.base_url}/v1"\n', "utf-8")
        argv = [str(ROOT / ".venv/bin/treechat"), "--home", home]
        command = " ".join(["exec", "env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                            *map(shlex.quote, argv)])

        def screen() -> str:
            return subprocess.run([tmux, "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout

        marks: dict[str, float] = {}
        t0 = time.perf_counter()
        subprocess.run([tmux, "respawn-pane", "-k", "-t", name, command], check=True)
        try:
            shown = ""
            while time.perf_counter() - t0 < timeout:
                shown = screen()
                now = time.perf_counter()
                if "composer" not in marks and PLACEHOLDER in shown:
                    marks["composer"] = now
                    subprocess.run([tmux, "send-keys", "-t", name, "-l", TEXT], check=True)
                    subprocess.run([tmux, "send-keys", "-t", name, "Enter"], check=True)
                    marks["enter"] = time.perf_counter()
                elif "enter" in marks and "shown" not in marks and shown_outside_composer(shown, TEXT):
                    marks["shown"] = now
                if "shown" in marks and REPLY in shown:
                    marks["answered"] = now
                    break
                time.sleep(0.005)
            else:
                raise RuntimeError(f"no answer on screen within {timeout}s; screen: {shown[-600:]!r}")
        finally:
            subprocess.run([tmux, "respawn-pane", "-k", "-t", name, "sleep 600"])
            seen = server.seen()
        enter = marks["enter"]
        return {"composer_ms": ms(marks["composer"] - t0), "shown_ms": ms(marks["shown"] - enter),
                "answered_ms": ms(marks["answered"] - enter), "probes_asked": seen.get("probes"),
                "probes_open": seen.get("probes", 0) - seen.get("disconnects", 0)}


def bench_first_message(repeat: int, env: dict[str, str]) -> None:
    tmux = shutil.which("tmux")
    if tmux is None:
        emit(bench="tui.first_message", skipped="tmux is not installed")
        return
    name = f"treechat-bench-fm-{os.getpid()}"
    subprocess.run([tmux, "new-session", "-d", "-s", name, "-x", "160", "-y", "45", "sleep 600"], check=True)
    subprocess.run([tmux, "set-option", "-t", name, "remain-on-exit", "on"], check=True)
    runs, loads = [], [load1()]
    try:
        for _ in range(repeat):
            runs.append(first_message_once(env, tmux, name))
            loads.append(load1())
    finally:
        subprocess.run([tmux, "kill-session", "-t", name])
    med = {k: statistics.median(r[k] for r in runs) for k in ("composer_ms", "shown_ms", "answered_ms")}
    emit(bench="tui.first_message", **med, shown_ok=med["shown_ms"] <= 500, answered_ok=med["answered_ms"] <= 3000,
         runs=runs, terminal="tmux 160x45", load1=loads,
         what="a llama.cpp fake whose probe endpoints trickle for ever; a message typed the moment the composer "
              "shows: Enter -> on screen (shown_ms, issue 27: <= 500) and answered (answered_ms, <= 3000)")
