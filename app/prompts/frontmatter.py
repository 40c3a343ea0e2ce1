"""YAML front matter of a Markdown file (Agent Skills' SKILL.md, prompt templates), as Pi reads it.

The file starts with `---`; the front matter runs to the next line starting with `---`; the body
is what follows, trimmed. No front matter: an empty mapping and the whole text. Files are read
to MAX_BYTES at most and only when they are regular files (never a FIFO or a device).

The front matter comes from a repository, so its YAML is read within bounds: at most
MAX_FRONT_MATTER bytes, MAX_YAML_DEPTH lists and mappings inside each other and MAX_YAML_NODES
values, and no aliases (`*name`): ten nested aliases of ten made a "billion laughs" that took
2.2 GB when its value was turned into text. The bounds are checked on the parser's events
(libyaml's when PyYAML has it; the parser keeps a stack, it does not recurse), before any value
is built; only then is the text loaded, with the safe loader. Any problem is a FrontMatterError,
one line after the file's name, never a traceback.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

MAX_BYTES = 1_000_000
MAX_FRONT_MATTER = 64_000  # bytes of YAML: a name, a description and a few settings need a few hundred
MAX_YAML_DEPTH = 16
MAX_YAML_NODES = 2_000


class FrontMatterError(ValueError):
    """The file cannot be used; the text says why, in words that follow its path."""


def read_text(path: Path) -> str:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise FrontMatterError("is not a regular file")
        if info.st_size > MAX_BYTES:
            raise FrontMatterError(f"is over {MAX_BYTES // 1000} KB")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise FrontMatterError(f"cannot be read ({err.strerror or err})") from None
    if len(raw) > MAX_BYTES:
        raise FrontMatterError(f"is over {MAX_BYTES // 1000} KB")
    return raw.decode("utf-8", "replace")


def split_front_matter(text: str) -> tuple[dict[str, object], str]:
    """(front matter, body). Raises FrontMatterError for front matter that is not a YAML mapping."""
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if not normalized.startswith("---"):
        return {}, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return {}, normalized
    source, body = normalized[4:end], normalized[end + 4:].strip()
    parsed = load_yaml(source)
    if parsed is None:
        return {}, body
    if not isinstance(parsed, dict):
        raise FrontMatterError("has front matter that is not a mapping of keys to values")
    return {str(k): v for k, v in parsed.items()}, body


def load_yaml(source: str) -> object:
    """The value of a YAML document from outside, within the bounds above. Raises FrontMatterError."""
    if len(source.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER:
        raise FrontMatterError(f"has front matter over {MAX_FRONT_MATTER // 1000} KB")
    import yaml  # type: ignore[import-untyped]  # (PyYAML ships no type hints; loaded only for front matter)

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it
    try:
        _check_events(yaml, yaml.parse(source, Loader=loader))
        return yaml.load(source, Loader=loader)  # noqa: S506 - the safe loader (C or Python)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(err, "problem", None) or "is not valid YAML"
        raise FrontMatterError(f"has front matter that is not valid YAML{where}: {problem}") from None
    except FrontMatterError:
        raise
    except (ValueError, OverflowError, RecursionError, TypeError) as err:
        # a value the safe loader cannot build: an int of 5,000 digits, a date that is no date
        raise FrontMatterError(f"has front matter with a value treechat cannot read ({type(err).__name__})") from None


def _check_events(yaml: ModuleType, events: Iterable[object]) -> None:
    depth = nodes = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            raise FrontMatterError("has front matter with a YAML alias (*name), which treechat does not read")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise FrontMatterError(f"has front matter nested more than {MAX_YAML_DEPTH} deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise FrontMatterError(f"has front matter of over {MAX_YAML_NODES:,} values")


def read_front_matter(path: Path) -> tuple[dict[str, object], str]:
    return split_front_matter(read_text(path))
