"""The edit tool's text work: matching each oldText once, all or nothing, keeping what the file is.

Pi's shapes and error texts (0.73.1 `edit-diff.ts`), our own rules where they protect the file:

- each oldText is matched against the original text (not after the other edits), must occur
  exactly once (two occurrences that overlap, "aa" in "aaa", count as two), and no two edits
  may overlap; any failure changes nothing and names the edit (`edits[1]`) so the model can
  correct itself;
- the match is exact, after line endings: a model writes "\\n" even where the file has "\\r\\n".
  Pi falls back to a fuzzy match that rewrites the whole file's quotes, dashes and trailing
  spaces; we do not (an edit changes only what it names), and say instead where the first line
  of an unmatched oldText does occur;
- a UTF-8 BOM stays; every line keeps its own ending (a file that mixes CRLF and LF keeps both),
  and the lines an edit adds take the ending of the lines it replaced (else the file's usual one).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from treechat import bounded_json

from ..types import Json, JsonObject

BOM = "\ufeff"


class EditError(ValueError):
    """An edit that cannot be applied as asked; the text is for the model."""


@dataclass(frozen=True)
class Replacement:
    old_text: str
    new_text: str


def prepare_edit_arguments(args: JsonObject) -> JsonObject:
    """Pi's repairs before validation: `edits` sent as a JSON string (some models do), and the
    legacy top-level `oldText`/`newText` pair appended to `edits`."""
    args = dict(args)
    given = args.get("edits")
    if isinstance(given, str):
        try:
            parsed = bounded_json.loads(given)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
    old, new = args.get("oldText"), args.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        listed = args.get("edits")
        edits: list[Json] = list(listed) if isinstance(listed, list) else []
        edits.append({"oldText": old, "newText": new})
        args = {k: v for k, v in args.items() if k not in ("oldText", "newText")}
        args["edits"] = edits
    return args


@dataclass(frozen=True)
class TextFile:
    """A decoded text file: its BOM, and its text with every CRLF read as LF (`crlf` holds the
    positions, in that text, of the line breaks that were CRLF)."""

    bom: str
    text: str
    crlf: tuple[int, ...]

    @classmethod
    def decode(cls, raw: bytes) -> TextFile | None:
        """None for a binary file: a NUL byte, or bytes that are not UTF-8."""
        if b"\0" in raw:
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        bom = BOM if text.startswith(BOM) else ""
        text = text[len(bom):]
        crlf: list[int] = []
        if "\r\n" in text:
            parts = text.split("\r\n")
            at = -1
            for part in parts[:-1]:
                at += len(part) + 1
                crlf.append(at)
            text = "\n".join(parts)
        return cls(bom, text, tuple(crlf))

    @property
    def usual_ending(self) -> str:
        """CRLF when most line breaks are, else LF."""
        breaks = self.text.count("\n")
        return "\r\n" if breaks and len(self.crlf) * 2 > breaks else "\n"

    def raw_index(self, index: int) -> int:
        """Where `index` of `text` is in the file's own text (after the BOM)."""
        return index + bisect_left(self.crlf, index)

    def raw_text(self) -> str:
        """The file's own text (after the BOM), line endings as they are."""
        if not self.crlf:
            return self.text
        out, last = [], 0
        for at in self.crlf:
            out.append(self.text[last:at])
            out.append("\r\n")
            last = at + 1
        out.append(self.text[last:])
        return "".join(out)

    def ending_in(self, start: int, end: int) -> str:
        """The ending of the line breaks in `text[start:end]` (the usual one if it has none)."""
        breaks = self.text.count("\n", start, end)
        if not breaks:
            return self.usual_ending
        crlf = bisect_left(self.crlf, end) - bisect_left(self.crlf, start)
        return "\r\n" if crlf * 2 >= breaks else "\n"


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _occurrences(text: str, needle: str, limit: int = 1000) -> list[int]:
    """Where `needle` starts in `text`, overlapping matches included (at most `limit`)."""
    found: list[int] = []
    at = text.find(needle)
    while at != -1 and len(found) < limit:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _hint(text: str, old: str) -> str:
    """Where the first line of an unmatched oldText does occur, if it does (once)."""
    first = next((line for line in old.split("\n") if line.strip()), "")
    if not first:
        return ""
    hits = _occurrences(text, first, 2)
    if len(hits) != 1:
        stripped = first.strip()
        if len(stripped) < 4 or len(hits) > 1:
            return ""
        hits = _occurrences(text, stripped, 2)
        if len(hits) != 1:
            return ""
        return (f" Its first line occurs at line {text.count(chr(10), 0, hits[0]) + 1} with other "
                "indentation or spacing; copy the text exactly as the file has it.")
    return (f" Its first line occurs at line {text.count(chr(10), 0, hits[0]) + 1}; the text differs "
            "after it (check whitespace and line breaks).")


def apply_edits(file: TextFile, edits: Sequence[Replacement], path: str) -> tuple[str, str]:
    """(the new file text, the new text with LF endings for a diff); raises EditError."""
    total = len(edits)
    if not total:
        raise EditError("Edit tool input is invalid. edits must contain at least one replacement.")
    text = file.text
    spans: list[tuple[int, int, int, str]] = []  # (start, end, edit index, new text with LF)
    for i, edit in enumerate(edits):
        old, new = _lf(edit.old_text), _lf(edit.new_text)
        if not old:
            what = "oldText" if total == 1 else f"edits[{i}].oldText"
            raise EditError(f"{what} must not be empty in {path}.")
        hits = _occurrences(text, old)
        if not hits:
            if total == 1:
                raise EditError(f"Could not find the exact text in {path}. The old text must match exactly "
                                f"including all whitespace and newlines.{_hint(text, old)}")
            raise EditError(f"Could not find edits[{i}] in {path}. The oldText must match exactly including all "
                            f"whitespace and newlines.{_hint(text, old)}")
        if len(hits) > 1:
            lines = ", ".join(str(text.count("\n", 0, h) + 1) for h in hits[:5])
            where = f" (at lines {lines}{', …' if len(hits) > 5 else ''})"
            if total == 1:
                raise EditError(f"Found {len(hits)} occurrences of the text in {path}{where}. The text must be "
                                "unique. Please provide more context to make it unique.")
            raise EditError(f"Found {len(hits)} occurrences of edits[{i}] in {path}{where}. Each oldText must be "
                            "unique. Please provide more context to make it unique.")
        spans.append((hits[0], hits[0] + len(old), i, new))
    spans.sort()
    for (_, end, a, _), (start, _, b, _) in zip(spans, spans[1:]):
        if end > start:
            raise EditError(f"edits[{a}] and edits[{b}] overlap in {path}. Merge them into one edit or target "
                            "disjoint regions.")
    raw = file.raw_text()
    raw_out, lf_out, raw_at, lf_at = [], [], 0, 0
    for start, end, _, new in spans:
        ending = file.ending_in(start, end)
        raw_start, raw_end = file.raw_index(start), file.raw_index(end)
        raw_out += [raw[raw_at:raw_start], new.replace("\n", ending) if ending != "\n" else new]
        lf_out += [text[lf_at:start], new]
        raw_at, lf_at = raw_end, end
    raw_out.append(raw[raw_at:])
    lf_out.append(text[lf_at:])
    new_raw, new_lf = "".join(raw_out), "".join(lf_out)
    if new_lf == text:
        if total == 1:
            raise EditError(f"No changes made to {path}. The replacement produced identical content. This might "
                            "indicate an issue with special characters or the text not existing as expected.")
        raise EditError(f"No changes made to {path}. The replacements produced identical content.")
    return file.bom + new_raw, new_lf


def keep_form(content: str, existing: TextFile | None) -> str:
    """What `write` puts in a file it replaces: the content with the file's BOM and, when the
    file's lines all end in CRLF and the content's in LF, CRLF endings (a model writes LF)."""
    if existing is None:
        return content
    if existing.bom and not content.startswith(BOM):
        content = existing.bom + content
    breaks = existing.text.count("\n")
    if breaks and len(existing.crlf) == breaks and "\r" not in content:
        content = content.replace("\n", "\r\n")
    return content


__all__ = ["EditError", "Replacement", "TextFile", "apply_edits", "keep_form", "prepare_edit_arguments"]
