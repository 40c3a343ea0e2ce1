"""The file an export is written to: refused before anything is made when it cannot be written,
every error said with the path the person gave (never the temporary file written beside it), and
never replaced by something else (issue 21). Used by every format of `treechat export` and by the
app's `/export`.

- A regular file (or a new one) is written whole or not at all (`whole_file.WholeFile`: a file
  nobody can see yet, renamed over the target at the end); a new export is private (0600), a file
  written over keeps its own permissions. A killed export leaves nothing behind (an O_TMPFILE has
  no name; a named one is removed by the next export to that file once its process is gone).
- A symbolic link is written through: its target gets the export, the link stays a link.
- A character device (`/dev/null`, a terminal) or a FIFO is written into, never replaced; a FIFO
  nobody reads is refused after FIFO_WAIT seconds, a reader that stops reading after STALL.
- A block device (a disk) or a socket is refused with one line.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from treechat.storage.well_formed import well_formed_text

from .whole_file import WholeFile, open_folder

FIFO_WAIT = 10.0  # seconds for a reader to open a FIFO we export into
STALL = 30.0  # seconds a device or FIFO may accept nothing before the export gives up
NEW_MODE = 0o600  # a new export: private, like the sessions it comes from
_BUFFER = 1 << 16


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


class ExportFile:
    """An open export target (see the module's doc): `write` bytes, then `commit`; `discard`
    (or leaving `async with` by an exception) leaves the target as it was — or, for a device or
    FIFO, with what was written so far."""

    def __init__(self, path: Path, real: Path, fd: int, *, streaming: bool, whole: WholeFile | None = None,
                 folder_fd: int | None = None) -> None:
        self.path, self.real, self._fd = path, real, fd
        self.streaming = streaming  # a device or FIFO: written into, nothing renamed
        self.is_terminal = streaming and os.isatty(fd)
        self._whole, self._folder_fd = whole, folder_fd
        self._buffer = bytearray()
        self._closed = False

    @classmethod
    async def open(cls, path: Path) -> ExportFile:
        """Open `path` for an export, or raise OutputError naming it."""
        check_output(path)
        try:
            st: os.stat_result | None = os.stat(path)  # what the path reaches (through /dev/stdout too)
        except FileNotFoundError:
            st = None
        except OSError as err:
            raise output_error(path, err) from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            return await cls._open_special(path, st.st_mode)
        # a link is written through: the file it names is replaced, the link stays
        real = await asyncio.to_thread(_through_link, path)
        if st is None and real != path and not real.parent.is_dir():
            raise OutputError(errno.ENOENT, f"Cannot write {path}: it links to {real}, whose folder does not exist")
        mode = stat.S_IMODE(st.st_mode) if st is not None else NEW_MODE
        with writing_to(path):
            folder_fd = open_folder(real.parent)
            try:
                whole = WholeFile(folder_fd, real.name, mode)
            except BaseException:
                os.close(folder_fd)
                raise
        return cls(path, real, whole.fd, streaming=False, whole=whole, folder_fd=folder_fd)

    @classmethod
    async def _open_special(cls, path: Path, mode: int) -> ExportFile:
        if stat.S_ISDIR(mode):
            raise OutputError(errno.EISDIR, f"Cannot write {path}: it is a directory")
        if stat.S_ISBLK(mode):
            raise OutputError(errno.EPERM, f"Cannot write {path}: it is a block device (a disk); an export is "
                              "never written onto one")
        if stat.S_ISSOCK(mode):
            raise OutputError(errno.EPERM, f"Cannot write {path}: it is a socket; write to a file or a FIFO")
        flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK
        if stat.S_ISFIFO(mode):
            # opening a FIFO for writing waits for a reader: wait a bounded time, visibly bounded
            waited_until = time.monotonic() + FIFO_WAIT
            while True:
                try:
                    fd = os.open(path, flags)
                    break
                except OSError as err:
                    if err.errno != errno.ENXIO:
                        raise output_error(path, err) from None
                if time.monotonic() >= waited_until:
                    raise OutputError(errno.ENXIO, f"Cannot write {path}: it is a FIFO and nothing opened it for "
                                      f"reading within {FIFO_WAIT:g} s") from None
                await asyncio.sleep(0.05)
        else:
            with writing_to(path):
                fd = os.open(path, flags)
        return cls(path, path, fd, streaming=True)

    # ------------------------------------------------------------ writing

    _write = staticmethod(os.write)  # (a test makes it fail like a full disk)

    def write(self, data: bytes) -> int:
        self._buffer += data
        if len(self._buffer) >= _BUFFER:
            self._flush()
        return len(data)

    def _flush(self) -> None:
        view, done = memoryview(self._buffer), 0
        try:
            while done < len(view):
                try:
                    done += self._write(self._fd, view[done:])
                except BlockingIOError:
                    self._wait_writable()
        except OutputError:
            raise
        except OSError as err:
            raise output_error(self.path, err) from err
        finally:
            view.release()
            del self._buffer[:done]

    def _wait_writable(self) -> None:
        """A device or FIFO that takes nothing for STALL seconds ends the export (a reader that
        stopped reading would otherwise hold it forever)."""
        _, ready, _ = select.select([], [self._fd], [], STALL)
        if not ready:
            raise OutputError(errno.ETIMEDOUT, f"Cannot write {self.path}: nothing was read from it for {STALL:g} s")

    def commit(self) -> None:
        """Everything written lands: flushed into a device or FIFO, or renamed over the file.
        When that fails, nothing is left behind (the target is as it was)."""
        try:
            self._land()
        except BaseException:
            self.discard()
            raise

    def _land(self) -> None:
        self._flush()
        if self._whole is None:
            self._close()
            return
        with writing_to(self.path):
            self._closed = True  # (the whole file closes its descriptor)
            self._whole.land()
        self._close()

    def discard(self) -> None:
        """Nothing more lands; a temporary file is removed."""
        if self.streaming and not self._closed:
            try:
                self._flush()  # what was written so far still reaches the reader
            except OSError:
                pass
        if self._whole is not None:
            self._closed = True
            self._whole.discard()
        self._close()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)
        if self._folder_fd is not None:
            os.close(self._folder_fd)
            self._folder_fd = None

    async def __aenter__(self) -> ExportFile:
        return self

    async def __aexit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


async def write_text_file(path: Path, text: str) -> None:
    """A small export (Markdown) written whole, with the same checks and wording."""
    async with await ExportFile.open(path) as out:
        out.write(well_formed_text(text).encode("utf-8"))


def _through_link(path: Path) -> Path:
    """What writing `path` replaces: the file a link names (the link stays), else `path`."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path
