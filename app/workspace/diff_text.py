"""The unified diff of one file's change, as text (`--- a/x`, `+++ b/x`, `@@` hunks), bounded.

Used for the edit/write approval, the tool result's `details.diff` (the transcript and the
exports draw it), and a restore's preview. Lines common to both ends are set aside before
difflib looks at the rest, so a one-line edit of a 100,000-line file costs a scan, not a
quadratic match; a middle part too large to match well is shown as removed then added.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTEXT = 3
MAX_LINES = 2000  # diff lines kept in the text (the counts cover everything)
MAX_CHARS = 200_000
_MATCH_LIMIT = 5_000  # lines on each side beyond which the middle is not matched line by line
NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class Diff:
    text: str
    added: int
    removed: int
    first_changed_line: int | None = None  # in the new file, 1-based
    cut: int = 0  # diff lines left out of `text`

    @property
    def summary(self) -> str:
        """`+3 −1`."""
        return f"+{self.added} \u2212{self.removed}"


def _lines(text: str | None) -> list[str]:
    return text.splitlines(keepends=True) if text else []


def unified_diff(before: str | None, after: str | None, name: str) -> Diff:
    """`before`/`after` None: the file did not exist (then is created / was removed)."""
    a, b = _lines(before), _lines(after)
    old, new = ("", "") if name.startswith("/") else ("a/", "b/")  # an absolute path as it is
    head = ["--- /dev/null" if before is None else f"--- {old}{name}",
            "+++ /dev/null" if after is None else f"+++ {new}{name}"]
    prefix = 0
    for x, y in zip(a, b):
        if x != y:
            break
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    start = max(0, prefix - CONTEXT)
    a_mid, b_mid = a[start:len(a) - max(0, suffix - CONTEXT)], b[start:len(b) - max(0, suffix - CONTEXT)]
    groups = _groups(a_mid, b_mid)
    body: list[str] = []
    added = removed = 0
    first: int | None = None
    for group in groups:
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body.append(f"@@ -{_range(start + i1, i2 - i1)} +{_range(start + j1, j2 - j1)} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                body.extend(_out(" ", a_mid[x1:x2]))
                continue
            if first is None:
                first = start + y1 + 1
            body.extend(_out("-", a_mid[x1:x2]))
            body.extend(_out("+", b_mid[y1:y2]))
            removed += x2 - x1
            added += y2 - y1
    kept: list[str] = []
    size = 0
    for line in body:
        size += len(line) + 1
        if len(kept) >= MAX_LINES or size > MAX_CHARS:
            break
        kept.append(line)
    cut = len(body) - len(kept)
    if cut:
        kept.append(f"… {cut:,} more diff lines not shown")
    return Diff("\n".join(head + kept) if body else "", added, removed, first, cut)


def _range(start: int, length: int) -> str:
    """A hunk's `start,length` as diff writes it (an empty range names the line before it)."""
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _out(mark: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.endswith("\r\n"):
            out.append(mark + line[:-2])
        elif line.endswith("\n"):
            out.append(mark + line[:-1])
        else:
            out.extend([mark + line, NO_NEWLINE])
    return out


Opcode = tuple[str, int, int, int, int]


def _groups(a: list[str], b: list[str]) -> list[list[Opcode]]:
    if a == b:
        return []
    if len(a) > _MATCH_LIMIT or len(b) > _MATCH_LIMIT:
        ops: list[Opcode] = [("replace", 0, len(a), 0, len(b))]
        return [ops]
    import difflib  # on first use: the app's start does not need it

    return [list(g) for g in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT)]


def binary_note(before: bytes | None, after: bytes | None, name: str) -> Diff:
    """For content that is not text: what changed, in one line."""
    def size(data: bytes | None) -> str:
        return "nothing" if data is None else f"{len(data):,} bytes"

    return Diff(f"Binary file {name}: {size(before)} → {size(after)}", 0, 0)


def decode(data: bytes | None) -> str | None:
    """Text for a diff, or raises UnicodeDecodeError / ValueError for binary content."""
    if data is None:
        return None
    if b"\0" in data[:8000]:
        raise ValueError("binary")
    return data.decode("utf-8")


def file_diff(before: bytes | None, after: bytes | None, name: str) -> Diff:
    """The diff of two versions of a file's bytes (None: absent), binary content in one line."""
    try:
        return unified_diff(decode(before), decode(after), name)
    except ValueError:
        return binary_note(before, after, name)
