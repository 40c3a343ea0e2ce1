"""The file an export is written to: refused before anything is made when it cannot be written,
and every error said with the path the person gave (never the temporary file written beside it).
Used by every format of `treechat export` and by the app's `/export`."""

from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class OutputError(OSError):
    """An export's file that cannot be written, said with the path the person gave (never the
    temporary file written beside it): `strerror` is the whole sentence, `filename` is None."""


def check_output(path: Path) -> None:
    """Refuse a target an export cannot be written to before a temporary file is made beside it:
    a folder, or a folder that is missing or not a folder. OutputError names `path`."""
    if path.is_dir():
        raise OutputError(errno.EISDIR, f"Cannot write {path}: it is a directory")
    folder = path.parent
    if not folder.exists():
        raise OutputError(errno.ENOENT, f"Cannot write {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(errno.ENOTDIR, f"Cannot write {path}: {folder} is not a folder")


@contextmanager
def writing_to(path: Path) -> Iterator[None]:
    """Any OSError in the block (making, writing or renaming `path`'s temporary file) becomes an
    OutputError naming `path`."""
    try:
        yield
    except OutputError:
        raise
    except OSError as err:
        raise output_error(path, err) from err


def output_error(path: Path, err: OSError) -> OutputError:
    """`err`, met making, writing or renaming `path`'s temporary file, as a sentence naming `path`."""
    if err.errno == errno.EISDIR:
        reason = "it is a directory"
    elif err.errno == errno.ENOENT:
        reason = f"the folder {path.parent} does not exist"
    else:
        text = err.strerror or str(err)
        reason = text[:1].lower() + text[1:]
    return OutputError(err.errno or errno.EIO, f"Cannot write {path}: {reason}")


def write_text_file(path: Path, text: str) -> None:
    """A small export (Markdown) written whole, with the same checks and wording."""
    check_output(path)
    with writing_to(path):
        path.write_text(text, encoding="utf-8")
