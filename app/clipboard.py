"""Putting text on the user's clipboard, wherever they are.

The terminal first: an OSC 52 sequence (written by the front end, e.g. Textual's
`copy_to_clipboard`) reaches the local clipboard over SSH and, in tmux with `set-clipboard on`,
tmux's paste buffer too. Terminals that ignore OSC 52 (macOS Terminal, some older ones) are
covered by the platform's own command when one exists: wl-copy (Wayland), xclip or xsel (X11),
pbcopy (macOS), clip.exe (WSL). The command runs in the background with a short timeout; no
command is not an error.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Mapping, Sequence

TIMEOUT = 2.0


def platform_command(env: Mapping[str, str] | None = None) -> Sequence[str] | None:
    """The local clipboard command for this session, or None (over SSH the remote one is wrong)."""
    env = os.environ if env is None else env
    if env.get("SSH_CONNECTION") or env.get("SSH_TTY"):
        return None  # a clipboard command here would fill the server's clipboard, not the user's
    candidates: list[list[str]] = []
    if sys.platform == "darwin":
        candidates.append(["pbcopy"])
    if env.get("WAYLAND_DISPLAY"):
        candidates.append(["wl-copy"])
    if env.get("DISPLAY"):
        candidates += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    if "microsoft" in os.uname().release.lower() if hasattr(os, "uname") else False:
        candidates.append(["clip.exe"])
    for command in candidates:
        if shutil.which(command[0]):
            return command
    return None


async def copy_with_command(text: str, command: Sequence[str] | None) -> bool:
    """Give `text` to the platform's clipboard command; False when there is none or it failed."""
    if not command:
        return False
    try:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        await asyncio.wait_for(process.communicate(text.encode("utf-8")), TIMEOUT)
    except (TimeoutError, OSError):
        return False
    return process.returncode == 0


def size_text(text: str) -> str:
    """ "Copied 1.2 kB" style size of what was copied."""
    n = len(text.encode("utf-8"))
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"
