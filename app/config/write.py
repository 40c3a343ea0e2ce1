"""Writing one setting back to config.toml without touching anything else in it.

The file is the user's: comments, order, spacing and every other key stay byte for byte. A
top-level `key = …` line gets its new value (its comment kept); without one, the key goes in
just before the first table (and its comment block), or at the end when there is none. The
result is parsed before it is written and must equal the old file plus this one change, or
nothing is written. The write is atomic (a temporary file renamed over it, same permissions), and
a symlinked config (dotfiles) is written where the link points.

Only plain settings are written this way (the theme); never a key or a provider table.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path

from .settings import ConfigError

WRITABLE = ("theme",)  # what the app may write; everything else only the person edits
_TABLE = re.compile(r"^\s*\[")
_VALUE = re.compile(r"""^(?P<lead>\s*(?P<key>[A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=\s*)"""
                    r"""(?P<value>"(?:[^"\\]|\\.)*"|'[^']*'|[^\s#]+)(?P<rest>\s*(?:#.*)?)$""")


def _top_level(lines: list[str]) -> tuple[int, list[int]]:
    """(index of the first table header or len(lines), indexes of top-level lines that are not
    inside a multi-line string)."""
    usable: list[int] = []
    inside: str | None = None
    for i, line in enumerate(lines):
        if inside is None and _TABLE.match(line):
            return i, usable
        if inside is None:
            usable.append(i)
        for quote in ('"""', "'''"):
            # an odd count of a triple quote on a line opens or closes a multi-line string
            if (inside in (None, quote)) and line.count(quote) % 2 == 1:
                inside = None if inside == quote else quote
    return len(lines), usable


def with_setting(text: str, key: str, value: str) -> str:
    """`text` with the top-level `key` set to the string `value`; raises ConfigError when the
    file cannot be edited safely (it does not parse, or the edit would change anything else)."""
    if key not in WRITABLE:
        raise ConfigError(f"{key!r} is not a setting treechat writes.")
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config.toml does not parse ({err}); fix it first.") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    assignment = f"{key} = {json.dumps(value, ensure_ascii=False)}"
    lines = text.splitlines(keepends=True)
    end, usable = _top_level(lines)
    for i in usable:
        match = _VALUE.match(lines[i].rstrip("\r\n"))
        if match and match.group("key").strip("\"'") == key:
            ending = lines[i][len(lines[i].rstrip("\r\n")):]
            lines[i] = match.group("lead") + json.dumps(value, ensure_ascii=False) + match.group("rest") + ending
            break
    else:
        if end == len(lines):
            if lines and not lines[-1].endswith(("\n", "\r")):
                lines[-1] += newline
            lines.append(assignment + newline)
        else:
            at = end
            while at > 0 and lines[at - 1].lstrip().startswith("#"):
                at -= 1  # a comment right above a table belongs to the table
            block = [assignment + newline]
            if at < len(lines) and lines[at].strip():
                block.append(newline)  # keep a blank line between the setting and what follows
            lines[at:at] = block
    new = "".join(lines)
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != {**before, key: value}:
        raise ConfigError(f"could not set {key} in config.toml without changing something else; set it there by hand.")
    return new


def write_setting(path: Path, key: str, value: str) -> None:
    """Set `key` in the config file at `path` (created when missing); ConfigError with one
    sentence when it cannot be done, and then the file is as it was."""
    target = path.resolve() if path.is_symlink() else path
    try:
        text = target.read_text("utf-8") if target.exists() else ""
    except OSError as err:
        raise ConfigError(f"{target}: cannot read it ({err.strerror or err}).") from None
    new = with_setting(text, key, value)
    if new == text:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o600
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(new)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise ConfigError(f"{target}: cannot write it ({err.strerror or err}).") from None
