"""Files in a prompt: `@path` tokens (composer and `-p`), `-a FILE` (print mode), pasted image
paths, and Tab completion of a partial `@pa`.

A text file's contents go into the message under its path; an image becomes an image block of
the user message (stored in the entry like any content). An `@` that does not name a readable
file stays text (`a@b.com`, `@user`, `@src/` a folder); a file that cannot be attached (too
big, binary and not an image) is one clear sentence and nothing is sent.

A file whose real path (links followed) is outside the working folder (`@../notes`, a link out,
`@~/x`, `-a /tmp/shot.png`) is a read outside (outside.py): read only once the person allowed it;
until asked, `expand_prompt` raises `Undecided`, and a refusal is one sentence.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from treechat.prompts.outside import ReadsOutside, Undecided
from treechat.storage.model import ImageContent
from treechat.storage.special import special_kind
from treechat.text.attached import file_block
from treechat.text.images import IMAGE_TYPES, ImageInfo, human_size, image_info, image_mime

MAX_TEXT_BYTES = 100_000  # ~25k tokens: more than that is a job for the read tool
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the strictest provider limit (Anthropic) per image
MAX_COMPLETIONS = 200

# `@` at the start or after a space or an opening bracket; quoted `@"a b.txt"` or a run of non-spaces
_TOKEN = re.compile(r'(?<![^\s(\[{])@(?:"([^"\n]+)"|([^\s"]+))')
_TRAILING = ".,;:!?)]}'\""


class AttachmentError(ValueError):
    """A file that was asked for but cannot be attached; the message is one sentence."""


@dataclass(frozen=True)
class Attachment:
    path: Path  # resolved
    shown: str  # the path as the person wrote it
    kind: Literal["text", "image"]
    size: int
    image: ImageInfo | None = None


@dataclass
class PreparedPrompt:
    """What to send: `text` with the attached text files, `images` for the user message."""

    text: str
    images: list[ImageContent] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)


def _resolve(raw: str, cwd: Path) -> Path:
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else cwd / path


def _readable_file(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False


def load_attachment(raw: str, cwd: str | os.PathLike[str], *,
                    real: Path | None = None) -> tuple[Attachment, str | ImageContent]:
    """Read one file for attaching: (facts, the text or the image block). Raises AttachmentError
    with a sentence naming the file when it is too big, binary, or cannot be read. `real`: where
    it was found to be (what was checked is what is read)."""
    path = _resolve(raw, Path(cwd))
    source = real or path
    kind = special_kind(source)
    if kind is not None:  # a FIFO's open would wait for a writer, a device's read may never end
        raise AttachmentError(f"{raw} is {kind}; only files can be attached.")
    try:
        size = source.stat().st_size
        with source.open("rb") as handle:
            head = handle.read(12)
            mime = image_mime(head)
            limit = MAX_IMAGE_BYTES if mime else MAX_TEXT_BYTES
            if size > limit:
                what = f"{IMAGE_TYPES[mime]} images" if mime else "text files"
                raise AttachmentError(f"{raw} is {human_size(size)}; {what} over {human_size(limit)} cannot be "
                                      "attached" + ("." if mime else " (ask the model to read parts of it instead)."))
            data = head + handle.read(limit + 1 - len(head))
    except FileNotFoundError:
        raise AttachmentError(f"{raw}: no such file.") from None
    except IsADirectoryError:
        raise AttachmentError(f"{raw} is a folder; attach files one by one.") from None
    except OSError as err:
        raise AttachmentError(f"{raw} cannot be read ({err.strerror or err}).") from None
    if mime:
        info = image_info(data, len(data))
        assert info is not None
        block = ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime)
        return Attachment(path=path, shown=raw, kind="image", size=len(data), image=info), block
    if b"\x00" in data[:8192]:
        raise AttachmentError(f"{raw} is a binary file; only text files and PNG, JPEG, GIF or WebP images "
                              "can be attached.")
    text = data.decode("utf-8", errors="replace")
    return Attachment(path=path, shown=raw, kind="text", size=len(data)), text


def _candidates(token: str) -> Iterable[str]:
    """The token as written, then with trailing punctuation peeled off ("see @a.txt.")."""
    yield token
    while token and token[-1] in _TRAILING:
        token = token[:-1]
        yield token


def expand_prompt(text: str, cwd: str | os.PathLike[str], *, attach: Sequence[str] = (),
                  outside: ReadsOutside | None = None) -> PreparedPrompt:
    """Resolve `@path` tokens in `text` and the explicit `attach` files (`-a`, which must exist).

    Each attached text file is appended as `<file path="…">…</file>`; each image becomes an image
    block; the token itself becomes the bare path, so the sentence still reads. Raises
    AttachmentError (one sentence) when a named file cannot be attached; nothing is half-done.
    A file outside the working folder is read only when `outside` allows it (None: nothing
    outside is); one nobody was asked about yet raises Undecided (it is pending in `outside`)."""
    base = Path(cwd)
    bound = outside or ReadsOutside.for_cwd(base)
    gate = _Gate(bound)
    files: list[tuple[Attachment, str | ImageContent]] = []
    seen: set[Path] = set()
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        quoted, bare = match.group(1), match.group(2)
        chosen = None
        if quoted is not None:
            if _readable_file(_resolve(quoted, base)):
                chosen, rest = quoted, ""
        else:
            for candidate in _candidates(bare):
                if _readable_file(_resolve(candidate, base)):
                    chosen, rest = candidate, bare[len(candidate):]
                    break
        if chosen is None:
            continue  # not a file: the `@` stays as typed
        real = gate.admit(chosen, base)
        if real is not None and real not in seen:
            seen.add(real)
            files.append(load_attachment(chosen, base, real=real))
        out.append(text[pos:match.start()] + chosen + rest)
        pos = match.end()
    out.append(text[pos:])
    for raw in attach:
        real = gate.admit(raw, base)
        if real is not None and real not in seen:
            seen.add(real)
            files.append(load_attachment(raw, base, real=real))
    gate.settle()
    body = "".join(out)
    blocks = [file_block(a.shown, content) for a, content in files if isinstance(content, str)]
    if blocks:
        body = (body.rstrip() + "\n\n" if body.strip() else "") + "\n\n".join(blocks)
    images = [content for _, content in files if isinstance(content, ImageContent)]
    return PreparedPrompt(text=body, images=images, attachments=[a for a, _ in files])


class _Gate:
    """The attachments of one prompt against the reads outside: each file's real path is checked
    before it is read; `settle` says what was refused or is still to be asked."""

    def __init__(self, bound: ReadsOutside) -> None:
        self.bound = bound
        self.refused: list[tuple[str, str]] = []
        self.undecided = False

    def admit(self, raw: str, base: Path) -> Path | None:
        """Where `raw` really is, when it may be read; None when it may not (yet). A file that
        does not exist is admitted: reading it says so."""
        path = _resolve(raw, base)
        if not os.path.exists(path):
            return path
        real = os.path.realpath(path)
        if self.bound.allows("attachment", raw, real):
            return Path(real)
        if self.bound.verdict(real) is None:
            self.undecided = True
        else:
            self.refused.append((raw, real))
        return None

    def settle(self) -> None:
        if self.refused:
            raw, real = self.refused[0]
            where = raw if os.path.normpath(raw) == real else f"{raw} ({real})"
            raise AttachmentError(f"{where} is outside the working folder {self.bound.folder}, and reading there was not "
                                  "allowed; nothing was sent.")
        if self.undecided:
            raise Undecided("attachments outside the working folder")


# ---------------------------------------------------------------- the composer


def _needs_quotes(path: str) -> bool:
    return any(c.isspace() or c == '"' for c in path)


def _quote(path: str) -> str:
    return f'@"{path}"' if _needs_quotes(path) else f"@{path}"


def _open_token(path: str, quoted: bool) -> str:
    """A token still being typed: quotes stay open so more of the path can follow."""
    return f'@"{path}' if quoted or _needs_quotes(path) else f"@{path}"


@dataclass(frozen=True)
class PathCompletion:
    """Tab after `@pa`: replace text[start:end] with `replacement`. `candidates` are the paths
    that matched (folders end with "/"), for a list under the composer."""

    start: int
    end: int
    replacement: str
    candidates: list[str]


def _partial_token(before: str) -> tuple[int, str, bool] | None:
    """(start of the `@` token that ends at the cursor, the partial path typed, quoted?)."""
    quote = before.rfind('@"')
    if quote != -1 and '"' not in before[quote + 2:] and "\n" not in before[quote:]:
        if quote == 0 or before[quote - 1].isspace() or before[quote - 1] in "([{":
            return quote, before[quote + 2:], True
    match = re.search(r'(?<![^\s(\[{])@([^\s"]*)$', before)
    return (match.start(), match.group(1), False) if match else None


def complete_at_path(text: str, cursor: int, cwd: str | os.PathLike[str]) -> PathCompletion | None:
    """Completions for the `@` path token that ends at `cursor`, or None when there is none (the
    composer then gives Tab its usual meaning). Hidden entries are offered only when the typed
    name starts with "."; one matching file is completed whole, with a space after it."""
    found = _partial_token(text[:cursor])
    if found is None:
        return None
    start, partial, quoted = found
    folder_text, _, name_part = partial.rpartition("/")
    folder_text = folder_text + "/" if "/" in partial else ""
    try:
        entries = sorted(os.scandir(_resolve(folder_text or ".", Path(cwd))), key=lambda e: e.name)
    except OSError:
        return None
    matches: list[tuple[str, bool]] = []
    for entry in entries:
        if not entry.name.startswith(name_part) or (entry.name.startswith(".") and not name_part.startswith(".")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        matches.append((folder_text + entry.name + ("/" if is_dir else ""), is_dir))
        if len(matches) >= MAX_COMPLETIONS:
            break
    if not matches:
        return None
    if len(matches) == 1:
        path, is_dir = matches[0]
        replacement = _open_token(path, quoted) if is_dir else _quote(path) + " "
    else:
        replacement = _open_token(os.path.commonprefix([m for m, _ in matches]), quoted)
    return PathCompletion(start=start, end=cursor, replacement=replacement, candidates=[m for m, _ in matches])


def pasted_image_token(pasted: str, cwd: str | os.PathLike[str]) -> str | None:
    """When a paste is the path of an image file (a terminal's drag and drop: quoted, `file://`,
    or with backslash-escaped spaces), the `@` token to insert instead; otherwise None."""
    raw = pasted.strip()
    if not raw or "\n" in raw:
        return None
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    elif raw.startswith("file://"):
        raw = unquote(urlparse(raw).path)
    else:
        raw = re.sub(r"\\(.)", r"\1", raw)
    path = _resolve(raw, Path(cwd))
    if not _readable_file(path):
        return None
    try:
        with path.open("rb") as handle:
            if image_mime(handle.read(12)) is None:
                return None
    except OSError:
        return None
    return _quote(raw)
