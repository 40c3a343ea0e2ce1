"""Prompt templates: `.md` files that become slash commands (`/review foo.py` sends review.md's body).

Found in the project's `.treechat/prompts` and `.pi/prompts`, then the config folder's `prompts`
and Pi's `~/.pi/agent/prompts` (the first of a name wins; a second is a warning). Pi's rules
(0.73.1): the command is the file name without `.md`; `description` in the front matter (else the
body's first line, cut at 60 characters) and `argument-hint` are what the palette and F1 show;
the arguments are split like a shell's words (quotes group, no escapes) and fill `$1`, `$2`, …,
`${@:N}` / `${@:N:L}` (from the N-th, L of them), `$ARGUMENTS` and `$@` (all of them), one
kind after the other in that order.

A template is never a built-in command: one of the same name is a warning and not used.

The project's templates are the repository's: one whose real path is outside the working folder
(a link out) is listed by its name only and read when it is used, once the person allowed it
(outside.py). The person's own folders are read wherever their links lead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from treechat.text.sanitize import sanitize_line

from .frontmatter import FrontMatterError, read_front_matter

if TYPE_CHECKING:
    from .outside import ReadsOutside

COMMAND = re.compile(r"^[A-Za-z][\w-]*\Z")  # what the composer recognises as /name
MAX_DESCRIPTION, MAX_HINT = 300, 100  # characters of a template's description and argument hint, as shown


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    argument_hint: str
    path: Path
    bounded: bool = False  # the project's: read only inside the working folder, or where allowed

    def body(self, real: Path | None = None) -> str:
        """The body, read now (an edit shows at the next use), from `real`: where it was found to be."""
        return read_front_matter(real or self.path)[1]


def template_folders(cwd: Path, config_dir: Path | None, pi_dir: Path) -> list[tuple[Path, bool]]:
    """(folder, the person's own) in the order they are looked in."""
    folders = [(cwd / ".treechat" / "prompts", False), (cwd / ".pi" / "prompts", False)]
    if config_dir is not None:
        folders.append((config_dir / "prompts", True))
    folders.append((pi_dir / "prompts", True))
    unique: dict[Path, bool] = {}
    for folder, own in folders:
        unique[folder] = unique.get(folder, False) or own
    return list(unique.items())


LEADS_OUT = "(a link out of the working folder: asked before it is read)"


def load_templates(folders: list[tuple[Path, bool]], builtins: set[str],
                   outside: ReadsOutside) -> tuple[list[Template], list[str]]:
    """(the templates, one line per problem). A project's template outside the working folder
    is listed by name and not read, unless `outside` allows it already."""
    found: dict[str, Template] = {}
    problems: list[str] = []
    for folder, own in folders:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries[:2000]:
            if entry.name.startswith(".") or not entry.name.endswith(".md"):
                continue
            try:
                if not entry.is_file():
                    continue
            except OSError:
                continue
            path = Path(entry.path)
            name = entry.name[:-3]
            key = name.lower()  # the composer reads /Review as /review
            if not COMMAND.match(name):
                problems.append(f"{path}: {name!r} cannot be typed as a command (a letter, then letters, digits, "
                                "- and _); the template is not used.")
                continue
            if key in builtins:
                problems.append(f"{path}: /{key} is a built-in command; the template is not used.")
                continue
            if key in found:
                problems.append(f"{path}: /{key} is not used: {found[key].path} has that name.")
                continue
            real = Path(os.path.realpath(path))
            if not own and outside.verdict(str(real)) is not True:
                found[key] = Template(key, LEADS_OUT, "", path, bounded=True)  # asked when used
                continue
            try:
                front, body = read_front_matter(real)
            except FrontMatterError as err:
                problems.append(f"{path} {err}; the template is not used.")
                continue
            description = front.get("description")
            if not isinstance(description, str) or not description.strip():
                first = next((line.strip() for line in body.split("\n") if line.strip()), "")
                description = first[:60] + ("..." if len(first) > 60 else "")
            hint = front.get("argument-hint")
            # shown in the palette, completion and F1: one sanitised line each, bounded
            found[key] = Template(key, sanitize_line(description, MAX_DESCRIPTION),
                                  sanitize_line(hint, MAX_HINT) if hint else "", path, bounded=not own)
    return list(found.values()), problems


def parse_args(text: str) -> list[str]:
    """Shell-like words: spaces and tabs separate, quotes group (and are dropped), no escapes."""
    args: list[str] = []
    current, quote = "", ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current += ch
        elif ch in "\"'":
            quote = ch
        elif ch in " \t":
            if current:
                args.append(current)
                current = ""
        else:
            current += ch
    if current:
        args.append(current)
    return args


def substitute(content: str, args: list[str]) -> str:
    """Fill in the placeholders, positional ones first (Pi's order)."""

    def positional(match: re.Match[str]) -> str:
        index = int(match.group(1)) - 1
        return args[index] if 0 <= index < len(args) else ""

    def sliced(match: re.Match[str]) -> str:
        start = max(int(match.group(1)) - 1, 0)
        if match.group(2) is not None:
            return " ".join(args[start:start + int(match.group(2))])
        return " ".join(args[start:])

    every = " ".join(args)
    out = _replace(content, r"\$(\d+)", positional)
    out = _replace(out, r"\$\{@:(\d+)(?::(\d+))?\}", sliced)
    out = _replace(out, r"\$ARGUMENTS", lambda m: every)
    return _replace(out, r"\$@", lambda m: every)


def _replace(text: str, pattern: str, value: object) -> str:
    return re.sub(pattern, value, text)  # type: ignore[call-overload]


def expand(template: Template, args_text: str, real: Path | None = None) -> str:
    return substitute(template.body(real), parse_args(args_text))
