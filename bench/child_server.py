"""A loopback fake server in a child process of the bench (its own GIL and event loop: on a
thread of the measured process it lost the GIL to the App). The child prints its base URL, serves
until its stdin closes, then prints one JSON line of what it did; `finish()` reads that line."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Self


class ServerChild:
    def __init__(self, args: list[str], cwd: str, what: str) -> None:
        self.args, self.cwd, self.what = args, cwd, what

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=self.cwd)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"{self.what} did not start")
        return self

    def finish(self) -> dict[str, Any]:
        """What the child reports once told to stop (its stdin closed); {} if it said nothing."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        line = self.proc.stdout.readline()
        self.proc.wait(10)
        return json.loads(line) if line.strip() else {}

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
