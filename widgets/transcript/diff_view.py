"""A unified diff drawn in colour (ours, on Rich: added green, removed red, hunks cyan, the file
headers bold, context dim). The text comes from a file and a model: every line is shown with its
control characters as visible placeholders, as text, never as markup."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from treechat.text.sanitize import visible, visible_line

ADDED = Style(color="green")
REMOVED = Style(color="red")
HUNK = Style(color="cyan")
HEADER = Style(bold=True)
CONTEXT = Style(dim=True)
NOTE = Style(italic=True, dim=True)


def line_style(line: str) -> Style:
    if line.startswith(("+++ ", "--- ")):
        return HEADER
    if line.startswith("+"):
        return ADDED
    if line.startswith("-"):
        return REMOVED
    if line.startswith("@@"):
        return HUNK
    if line.startswith(("\\", "…", "Binary file")):
        return NOTE
    return CONTEXT


def render_diff(diff: str, *, max_lines: int | None = None) -> Text:
    """The diff text as coloured lines (at most `max_lines`, then a line saying how many more)."""
    lines = diff.split("\n") if diff else []
    shown = lines if max_lines is None else lines[:max_lines]
    out = Text(no_wrap=False)
    for i, line in enumerate(shown):
        if i:
            out.append("\n")
        # indentation stays; a control character (a lone CR included) is a visible placeholder
        out.append(visible(line.replace("\r", "\u240d").replace("\t", "    ")), line_style(line))
    if max_lines is not None and len(lines) > max_lines:
        out.append(f"\n… {len(lines) - max_lines:,} more lines", NOTE)
    return out


def change_summary(path: str, added: int, removed: int) -> str:
    """`notes.txt +3 −1` (the path made one visible line)."""
    return f"{visible_line(path, 80)} +{added} \u2212{removed}"


def result_change(tool_name: str, details: object, is_error: bool) -> tuple[str, str] | None:
    """(summary, diff) of an edit/write tool result that changed a file, else None."""
    if is_error or tool_name not in ("edit", "write") or not isinstance(details, dict):
        return None
    diff, path = details.get("diff"), details.get("path")
    added, removed = details.get("added"), details.get("removed")
    if not (isinstance(diff, str) and diff and isinstance(path, str)
            and isinstance(added, int) and isinstance(removed, int)):
        return None
    return change_summary(path, added, removed), diff
