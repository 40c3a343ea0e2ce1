"""Progress on long work (import, export, index rebuilds): a bar on a terminal, nothing otherwise.

    with progress("Importing", total=n_bytes, unit="bytes") as bar:
        for chunk in work:
            ...
            bar.advance(len(chunk))

On a terminal (stderr is a TTY) this draws a Rich progress bar with percentage, count, rate and
time left; when stderr is a pipe or a file it does nothing at all, so scripts and logs stay clean.
The bar is transient: when the work ends the line is cleared and the caller prints its summary.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, Protocol, TextIO

from treechat.text.sanitize import visible_line

if TYPE_CHECKING:  # (Rich is imported when a bar is drawn)
    from rich.progress import Progress, ProgressColumn, TaskID

Unit = Literal["bytes", "entries", "sessions", "items"]


class Reporter(Protocol):
    def advance(self, amount: float = 1) -> None: ...

    def update(self, *, completed: float | None = None, total: float | None = None,
               description: str | None = None) -> None: ...


class _Silent:
    def advance(self, amount: float = 1) -> None:
        pass

    def update(self, *, completed: float | None = None, total: float | None = None,
               description: str | None = None) -> None:
        pass


class _Bar:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress, self._task = progress, task

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)

    def update(self, *, completed: float | None = None, total: float | None = None,
               description: str | None = None) -> None:
        self._progress.update(self._task, completed=completed, total=total,
                              description=None if description is None else visible_line(description))


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False


@contextmanager
def progress(description: str, total: float | None, *, unit: Unit = "items",
             stream: TextIO | None = None, force: bool = False, enabled: bool = True) -> Iterator[Reporter]:
    """A progress reporter for `total` units of work (None: unknown, the bar pulses). `enabled`
    False: nothing is drawn (the terminal belongs to someone else, e.g. the app)."""
    stream = stream or sys.stderr
    if not enabled or not (force or is_terminal(stream)):
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    # a description can hold a file's name: shown as text (no Rich markup, controls as placeholders)
    columns: list[ProgressColumn] = [TextColumn("{task.description}", markup=False), BarColumn(), TaskProgressColumn()]
    if unit == "bytes":
        columns += [DownloadColumn(), TransferSpeedColumn()]
    else:
        columns += [MofNCompleteColumn(), _rate_column(unit)]
    columns.append(TimeRemainingColumn())
    console = Console(file=stream, force_terminal=True if force else None)
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(visible_line(description), total=total)
        yield _Bar(bar, task)


def _rate_column(unit: str) -> ProgressColumn:
    """ "1,234 entries/s" (Rich's own speed column speaks bytes only)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.speed
            return Text("" if speed is None else f"{speed:,.0f} {unit}/s", style="progress.data.speed")

    return RateColumn()


@contextmanager
def reading_progress(catalog: object, description: str, *, stream: TextIO | None = None,
                     force: bool = False) -> Iterator[None]:
    """A bar for a catalog that reads whole session files (JSONL: a first listing of a thousand
    files, a search), drawn from its `on_read(done, total)` reports and only once one comes: a
    listing served from the summary cache shows nothing."""
    if not hasattr(catalog, "on_read"):
        yield
        return
    from contextlib import ExitStack

    with ExitStack() as stack:
        bar: list[Reporter] = []

        def on_read(done: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(progress(description, total=total, unit="sessions", stream=stream,
                                                        force=force)))
            bar[0].update(completed=done, total=total)

        catalog.on_read = on_read
        try:
            yield
        finally:
            catalog.on_read = None
