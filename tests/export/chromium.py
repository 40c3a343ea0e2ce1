"""A headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium's `--remote-debugging-pipe` reads protocol messages (JSON, each ended by a NUL byte) on
fd 3 and writes replies and events on fd 4: no port, no websocket. The browser is started with
`posix_spawn` (the pipes moved onto fds 3 and 4 by the spawn itself), every wait has a deadline,
and the process is killed on exit. Events (network requests, console and CSP messages) are kept
for the test to inspect.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
    "--remote-debugging-pipe",
]


class BrowserError(RuntimeError):
    pass


class Chromium:
    def __init__(self, profile: Path, timeout: float = 30.0, size: tuple[int, int] = (1280, 900)) -> None:
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""
        self.session: str | None = None
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Well above 4 so the spawn's dup2 onto 3 and 4 never collides with a source fd.
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        argv = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "about:blank"]
        try:
            self.pid = os.posix_spawn(argv[0], argv, {**os.environ}, file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2),
                (os.POSIX_SPAWN_DUP2, high_r, 3), (os.POSIX_SPAWN_DUP2, high_w, 4),
            ], setpgroup=0)
        finally:
            for fd in (to_child_r, from_child_w, high_r, high_w, devnull):
                os.close(fd)
        self._out, self._in = to_child_w, from_child_r

    # ------------------------------------------------------------ protocol

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(time.monotonic() + self.timeout)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the protocol pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (timeout or self.timeout)
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    # ------------------------------------------------------------ page helpers

    def open(self, url: str) -> None:
        """Attach to the first tab, watch its network and console, and load `url`."""
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Network", "Log", "Runtime"):
            self.send(f"{domain}.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"timed out waiting for {expression}")

    def click(self, x: float, y: float) -> None:
        """A real mouse click (press and release) at page coordinates."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 0 if kind == "mouseMoved" else 1})

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def console_messages(self) -> list[str]:
        out = [e["params"]["entry"].get("text", "") for e in self.events if e.get("method") == "Log.entryAdded"]
        out += [" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"].get("args", []))
                for e in self.events if e.get("method") == "Runtime.consoleAPICalled"]
        out += [str(e["params"].get("exceptionDetails", {})) for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"]
        return out

    def close(self) -> None:
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the browser and its helper processes
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
