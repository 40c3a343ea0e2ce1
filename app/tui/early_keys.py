"""Keys typed while treechat starts are taken as typed, not as the shell's line editing made them.

Until Textual puts the terminal in raw mode (half a second after the spawn, when the App starts its
driver), the terminal is still as the shell left it: canonical, echoing, CR turned into LF. A
message typed in that moment ("treechat⏎hello⏎") was echoed over the screen and its Enter arrived
as a newline (Ctrl+J) in the composer: the message stayed there, unsent. So `treechat` takes the
terminal out of canonical mode, echo and CR translation as soon as it is running (a few tens of ms
after the spawn); Ctrl+C keeps its signal until Textual takes over. The App's driver
(`user_mode_driver`) then saves the terminal as the user had it, not as we changed it, so that what
Textual restores (on exit, on Ctrl+Z, around $EDITOR) is the user's own mode; `restore()` does it
too if the App never started.

Only for a real terminal on a system with termios; elsewhere nothing changes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.driver import Driver

try:
    import termios
except ImportError:  # not a POSIX system: Textual's own driver, unchanged
    termios = None  # type: ignore[assignment]

_saved: list[Any] | None = None  # the terminal's attributes before `take_keys_as_typed` (termios types them list[Any])
_fd: int | None = None


def take_keys_as_typed() -> bool:
    """Stdin's terminal: no line buffering, no echo, CR kept; True when it was changed."""
    global _saved, _fd
    if termios is None or _saved is not None:
        return False
    try:
        fd = sys.stdin.fileno()
        if not sys.stdin.isatty():
            return False
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflag
        mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)  # iflag
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except (OSError, ValueError, termios.error):
        return False  # (no fileno, a closed stdin, not a terminal after all)
    _saved, _fd = saved, fd
    return True


def restore() -> None:
    """The terminal as the user had it (after the App, or when it never started)."""
    global _saved
    if termios is None or _saved is None or _fd is None:
        return
    try:
        termios.tcsetattr(_fd, termios.TCSANOW, _saved)
    except termios.error:
        pass
    _saved = None


def user_mode_driver(chosen: type[Driver]) -> type[Driver]:
    """The App's driver, saving the user's terminal mode as the one to restore (when the terminal
    was changed and the driver is Textual's own for POSIX: TEXTUAL_DRIVER may name another)."""
    if _saved is None:
        return chosen
    from textual.drivers.linux_driver import LinuxDriver

    if chosen is not LinuxDriver:
        return chosen
    original = _saved

    class UserModeDriver(LinuxDriver):
        def start_application_mode(self) -> None:
            super().start_application_mode()  # type: ignore[no-untyped-call]  # (Textual's is unannotated)
            if self.attrs_before is not None:
                self.attrs_before = original

    return UserModeDriver
