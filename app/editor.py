"""Composing a long prompt in the user's own editor ($VISUAL, then $EDITOR).

The text goes to a private temporary file, the editor runs on the terminal (the app suspends
around it), and what was saved comes back. An editor that fails or cannot be found is one
sentence; the composer's text is never lost.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

FALLBACKS = ("nano", "vi")


class EditorError(Exception):
    """The editor could not be run, or failed; the message says which and what to do."""


def editor_command(env: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            return shlex.split(value)
    for fallback in FALLBACKS:
        if shutil.which(fallback):
            return [fallback]
    raise EditorError("No editor found: set $VISUAL or $EDITOR (e.g. export EDITOR=nano).")


def edit_text(text: str, command: Sequence[str]) -> str:
    """Run `command FILE` on a file holding `text`; the file's text afterwards."""
    fd, name = tempfile.mkstemp(prefix="treechat-", suffix=".md")  # 0600: a prompt may be private
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            # a text file ends with a newline: an editor (or a script) that appends a line must
            # not glue it to the draft's last line
            out.write(text + "\n" if text and not text.endswith("\n") else text)
        try:
            result = subprocess.run([*command, str(path)], check=False)
        except OSError as err:
            raise EditorError(f"Could not start the editor {command[0]!r}: {err.strerror or err}.") from None
        if result.returncode != 0:
            raise EditorError(f"The editor {command[0]!r} exited with status {result.returncode}; "
                              "the composer keeps its text.")
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)
