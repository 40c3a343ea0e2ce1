"""An edit/write's diff and a checkpoint entry as page HTML: escaped text in spans whose classes
the stylesheet colours (no inline style: the page's CSP allows only its own stylesheet)."""

from __future__ import annotations

from treechat.storage.model import CustomEntry
from treechat.workspace.history import parse_checkpoint

from .render import esc

DIFF_LINES = 2_000  # a diff longer than this is cut (the tool result's own text says what changed)


def _kind(line: str) -> str:
    if line.startswith(("+++ ", "--- ")):
        return "dh"
    if line.startswith("+"):
        return "da"
    if line.startswith("-"):
        return "dr"
    if line.startswith("@@"):
        return "dk"
    return "dc"


def diff_html(summary: str, diff: str) -> str:
    """`<details class="diff" open>` with the summary (`notes.txt +3 −1`) and the coloured lines."""
    lines = diff.split("\n")
    shown = "".join(f'<span class="{_kind(line)}">{esc(line)}</span>\n' for line in lines[:DIFF_LINES])
    if len(lines) > DIFF_LINES:
        shown += f'<span class="dc">… {len(lines) - DIFF_LINES:,} more lines</span>\n'
    return f'<details class="diff" open><summary>{esc(summary)}</summary><pre class="diff">{shown}</pre></details>'


def checkpoint_html(entry: CustomEntry) -> str | None:
    """What a checkpoint recorded, one line per file (its blobs are data, not for reading)."""
    cp = parse_checkpoint(entry)
    if cp is None:
        return None
    items = []
    for change in cp.changes:
        what = "created" if change.before is None else "removed" if change.after is None else "changed"
        items.append(f"<li>{esc(change.path)}: {what}</li>")
    return (f'<div class="checkpoint"><p class="note">files changed by {esc(cp.tool)} (checkpoint: the content '
            f'before and after, {len(cp.blobs)} blob{"" if len(cp.blobs) == 1 else "s"})</p>'
            f'<ul>{"".join(items)}</ul></div>')


def details_diff(tool_name: str, details: object) -> tuple[str, str] | None:
    """(summary, diff) of an edit/write result that changed a file."""
    if tool_name not in ("edit", "write") or not isinstance(details, dict):
        return None
    diff, path = details.get("diff"), details.get("path")
    if not (isinstance(diff, str) and diff and isinstance(path, str)):
        return None
    return f"{path} +{details.get('added', 0)} \u2212{details.get('removed', 0)}", diff
