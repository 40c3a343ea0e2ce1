"""StatusBar: model • thinking │ tokens ↑↓ │ cost (this path) │ context % │ tools │ queue.

Data in: ``show_status(status)`` (every field) or ``update_status(...)`` with any of ``model``, ``thinking``, ``tokens_in``,
``tokens_out``, ``cost``, ``context_percent`` (None = unknown), ``context_estimated`` (draw
"~"), ``model_warning`` (no key: draw ⚠), ``tools`` (the names the next request carries: drawn
as their count), ``queued_steer``, ``queued_follow_up``, ``runs`` (how many runs go, on any
branch: drawn from one on; the tokens and cost are the branch on screen's). Each is also a
reactive attribute (nothing is drawn before the first call: the App's first frame comes before
the session is open). ``wait(seconds, reason)`` shows a countdown ("retrying in 12 s") until it
runs out or ``wait(0)`` ends it. Posts nothing.
"""

from __future__ import annotations

import math
import time
from typing import Protocol, TypedDict, Unpack

from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from treechat.text.sanitize import sanitize_line


class Fields(TypedDict, total=False):
    """What ``update_status`` sets (each a reactive of the bar)."""

    model: str
    thinking: str
    tokens_in: int
    tokens_out: int
    tokens_reported: bool
    cost: float
    context_percent: float | None
    context_estimated: bool
    model_warning: bool
    queued_steer: int
    queued_follow_up: int
    tools: tuple[str, ...]
    runs: int


class Shown(Protocol):
    """What the bar shows: the controller's status (``treechat.chat.events.Status``)."""

    @property
    def model(self) -> str: ...
    @property
    def thinking(self) -> str: ...
    @property
    def tokens_in(self) -> int: ...
    @property
    def tokens_out(self) -> int: ...
    @property
    def tokens_reported(self) -> bool: ...
    @property
    def cost(self) -> float: ...
    @property
    def context_percent(self) -> float | None: ...
    @property
    def context_estimated(self) -> bool: ...
    @property
    def model_warning(self) -> bool: ...
    @property
    def queued_steer(self) -> int: ...
    @property
    def queued_follow_up(self) -> int: ...
    @property
    def tools(self) -> tuple[str, ...]: ...
    @property
    def runs(self) -> int: ...


def tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


def tools_field(count: int) -> str:
    """`6 tools`, `1 tool`, `no tools`: what the model can do besides answering (/tools lists them)."""
    return "no tools" if count == 0 else f"{count} tool" if count == 1 else f"{count} tools"


class StatusBar(Widget):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._wait_until = 0.0
        self._wait_reason = ""
        self._wait_label = "retrying in"
        self._wait_timer: Timer | None = None
        self.known = False  # update_status was called

    model: reactive[str] = reactive("")
    thinking: reactive[str] = reactive("off")
    tokens_in: reactive[int] = reactive(0)
    tokens_out: reactive[int] = reactive(0)
    tokens_reported: reactive[bool] = reactive(True)  # False: the server counts none ("↑? ↓?")
    cost: reactive[float] = reactive(0.0)
    context_percent: reactive[float | None] = reactive(None)
    context_estimated: reactive[bool] = reactive(False)
    model_warning: reactive[bool] = reactive(False)
    queued_steer: reactive[int] = reactive(0)
    queued_follow_up: reactive[int] = reactive(0)
    tools: reactive[tuple[str, ...]] = reactive(())
    runs: reactive[int] = reactive(0)

    waiting: reactive[str] = reactive("")

    def wait(self, seconds: float, reason: str = "", *, label: str = "retrying in") -> None:
        """A visible wait: the countdown replaces itself every second until it runs out."""
        if self._wait_timer is not None:
            self._wait_timer.stop()
            self._wait_timer = None
        self._wait_until = time.monotonic() + seconds if seconds > 0 else 0.0
        self._wait_reason = sanitize_line(reason, 60)
        self._wait_label = label
        self._tick()
        if seconds > 0:
            self._wait_timer = self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        left = self._wait_until - time.monotonic()
        if left <= 0:
            self.waiting = ""
            if self._wait_timer is not None:
                self._wait_timer.stop()
                self._wait_timer = None
            return
        reason = f": {self._wait_reason}" if self._wait_reason else ""
        self.waiting = f"⏳ {self._wait_label} {math.ceil(left)} s{reason}"

    def update_status(self, **fields: Unpack[Fields]) -> None:
        """The fields given (the others stay as they are)."""
        self.known = True
        for name, value in fields.items():
            if name not in Fields.__annotations__:
                raise AttributeError(f"StatusBar has no field {name!r}")
            setattr(self, name, value)

    def show_status(self, status: Shown) -> None:
        """Every field, from the controller's status (`treechat.chat.events.Status`)."""
        self.update_status(model=status.model, thinking=status.thinking, tokens_in=status.tokens_in,
                           tokens_out=status.tokens_out, tokens_reported=status.tokens_reported, cost=status.cost,
                           context_percent=status.context_percent, context_estimated=status.context_estimated,
                           model_warning=status.model_warning, queued_steer=status.queued_steer,
                           queued_follow_up=status.queued_follow_up, tools=status.tools, runs=status.runs)

    def render(self) -> Content:
        if not self.known and not self.waiting:
            return Content("")  # the first frame, before the session is open: not known, not guessed
        counts = f"↑{tokens(self.tokens_in)} ↓{tokens(self.tokens_out)}" if self.tokens_reported else "↑? ↓?"
        fields: list[str | tuple[str, str]] = [counts, f"${self.cost:.2f}"]
        if self.context_percent is None:
            fields.append("ctx ?")
        else:
            mark = "~" if self.context_estimated else ""
            pct = self.context_percent
            style = "bold $error" if pct >= 90 else "$warning" if pct >= 75 else ""
            fields.append((f"ctx {mark}{pct:.0f}%", style))
        tools_at = len(fields)
        fields.append(tools_field(len(self.tools)))
        if self.runs:
            fields.append((f"{self.runs} run{'' if self.runs == 1 else 's'}", "bold $accent"))
        if self.queued_steer or self.queued_follow_up:
            fields.append((f"⚡{self.queued_steer} ⏭{self.queued_follow_up}", "$warning"))
        if self.waiting:
            fields.append((self.waiting, "bold $warning"))
        # What does not fit gives way from the left: a local model's id is often a long file name,
        # and at 80 columns it pushed the context figure (what a 2k-token model needs most) off the
        # end. The separators tighten first, then the model's name is cut to what is left; below
        # 80 columns the tools' count goes before the name is cut short (/tools says it).
        width = self.content_region.width or 10_000
        model = sanitize_line(self.model, 40) or "no model"
        warning = (" ⚠" if self.model_warning else "", "bold $error")
        for shown in (fields, fields[:tools_at] + fields[tools_at + 1:]):
            for sep in ("  │  ", " │ "):
                tail = Content.assemble(f" • {self.thinking}", *(x for f in shown for x in (sep, f)))
                room = width - tail.cell_length - Content.assemble(warning).cell_length
                if Content(model).cell_length <= room:
                    break
            if room >= 16:
                break
        name = Content.styled(model, "bold").truncate(max(room, 8), ellipsis=True)
        return Content.assemble(name, warning, tail)
