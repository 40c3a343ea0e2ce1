"""A tool call as an editor shows it: its title, kind and locations, and what it produced.

The same for a call streaming now (`ToolCalls`, session.py) and one replayed from the tree
(history.py). ACP's kinds: read (read), search (ls, grep), execute (bash), edit (edit, write),
other (an MCP server's tool). Locations are absolute paths, so an editor can follow along.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ImageContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
)

from treechat.agent.tools.changes import ProposedChange
from treechat.mcp.tools import SEPARATOR
from treechat.storage.model import ImageContent, TextContent

Kind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
Content = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
TITLE_MAX = 200  # characters of a title (a long command is cut; its whole text is in rawInput)
DIFF_TEXT_MAX = 2_000_000  # characters of a file's before and after sent as a diff; larger: the unified diff

_KINDS: dict[str, Kind] = {"read": "read", "ls": "search", "grep": "search", "bash": "execute", "edit": "edit",
                           "write": "edit"}


@dataclass(frozen=True)
class Described:
    title: str
    kind: Kind
    locations: list[ToolCallLocation]


def _line(text: str) -> str:
    first = " ".join(text.strip().split())
    return first if len(first) <= TITLE_MAX else first[:TITLE_MAX - 1] + "…"


def _text(args: Mapping[str, object], key: str, default: str = "") -> str:
    value = args.get(key, default)
    return value if isinstance(value, str) else default


def absolute(path: str, cwd: str) -> str:
    path = os.path.expanduser(path[1:] if path.startswith("@") else path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def describe(name: str, args: Mapping[str, object], cwd: str) -> Described:
    """What a call to `name` with `args` is, for the editor's list of tool calls."""
    path = _text(args, "path", ".")
    where = [ToolCallLocation(path=absolute(path, cwd))]
    match name:
        case "read":
            offset = args.get("offset")
            line = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 1 else None
            title = f"Read {path}" + (f" (from line {line})" if line else "")
            return Described(_line(title), "read", [ToolCallLocation(path=where[0].path, line=line)])
        case "ls":
            return Described(_line(f"List {path}"), "search", where)
        case "grep":
            return Described(_line(f"Search for {_text(args, 'pattern')} in {path}"), "search", where)
        case "bash":
            return Described(_line(_text(args, "command")) or "Shell command", "execute", [])
        case "edit" | "write":
            return Described(_line(f"{'Edit' if name == 'edit' else 'Write'} {path}"), "edit", where)
        case "task":
            return Described(_line(f"Sub-agent: {_text(args, 'description')}"), "think", [])
        case _ if SEPARATOR in name:
            server, _, tool = name.partition(SEPARATOR)
            return Described(_line(f"{server}: {tool}"), "other", [])
        case _:
            return Described(_line(name), _KINDS.get(name, "other"), [])


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def result_content(blocks: Sequence[object]) -> list[Content]:
    """A tool result's text and images, as tool call content."""
    out: list[Content] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            out.append(text_content(block.text))
        elif isinstance(block, ImageContent):
            out.append(ContentToolCallContent(type="content", content=ImageContentBlock(
                type="image", data=block.data, mime_type=block.mime_type)))
    return out


def change_content(change: ProposedChange) -> list[Content]:
    """An edit or write the person is asked about, and that was made: the file before and after
    (an editor draws the diff), or the unified diff when the file is not text or too large."""
    before, after = change.before_text, change.after_text
    fits = after is not None and len(after) + len(before or "") <= DIFF_TEXT_MAX
    if fits and after is not None and (before is not None or change.created):
        return [FileEditToolCallContent(type="diff", path=change.real_path, old_text=before, new_text=after)]
    return [text_content(f"```diff\n{change.diff}\n```")] if change.diff else []


def replayed_change(name: str, args: Mapping[str, object], details: object, cwd: str) -> list[Content]:
    """An edit or write from the tree: the tree keeps the arguments and the unified diff, not the
    files, so an edit shows each replaced text, a new file its content, and a rewrite its diff."""
    path = absolute(_text(args, "path"), cwd)
    facts = details if isinstance(details, dict) else {}
    if name == "edit":
        edits = args.get("edits")
        if isinstance(edits, list):
            pieces = [(e.get("oldText"), e.get("newText")) for e in edits if isinstance(e, dict)]
            found = [FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)
                     for old, new in pieces if isinstance(old, str) and isinstance(new, str)]
            if found:
                return list(found)
    if name == "write" and facts.get("created") and isinstance(args.get("content"), str):
        return [FileEditToolCallContent(type="diff", path=path, old_text=None, new_text=_text(args, "content"))]
    diff = facts.get("diff")
    return [text_content(f"```diff\n{diff}\n```")] if isinstance(diff, str) and diff else []


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


__all__ = ["Described", "Kind", "Content", "describe", "absolute", "text_content", "result_content",
           "change_content", "replayed_change", "terminal_content"]
