"""What the controller (`treechat.chat.Chat`) tells its front ends: one tagged union, `ChatEvent`.

State changes are coalesced: whatever changed during one turn of the event loop (entries
appended, labels, the path shown, the header, the status, the queue, the run) arrives as one
frozen `ChatDelta`, each part as it was at the end of that turn (None: unchanged). What must stay
discrete and ordered (a session opened, a streamed reply's text, focus, notices and errors) is an
event of its own; the pending delta is delivered before it, so the order of changes is kept.

A front end reconciles its view from the event alone and never reads the controller's state or
storage to find out what happened. The TUI wraps each in one Textual message
(`treechat.tui.messages.ChatMessage`) and dispatches with `match`; print mode listens for a few.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # annotations only: the TUI's first frame imports these events, not the storage (issue 27)
    from treechat.agent.events import RetryWait, StreamWait
    from treechat.agent.types import AgentMessage
    from treechat.shown_path import ShownPath
    from treechat.storage.base import TreeRow
    from treechat.storage.model import AssistantMessage, Entry
    from treechat.storage.tree.index import TreeIndex
    from treechat.workspace.restore import RestorePlan


@dataclass(frozen=True)
class Status:
    """The status bar: model, thinking, tokens and cost of the path, context use, the tools, the queue."""

    model: str  # "provider/id", or "no model"
    thinking: str
    tokens_in: int = 0
    tokens_out: int = 0
    # False when the path has replies but not one token was counted: the server sends no usage
    # (llama-cpp-python streams none), so "↑0 ↓0" would be a wrong number; shown as "↑? ↓?"
    tokens_reported: bool = True
    cost: float = 0.0
    context_percent: float | None = None
    context_estimated: bool = False
    model_warning: bool = False  # the model cannot be used as it is (no key)
    queued_steer: int = 0
    queued_follow_up: int = 0
    tools: tuple[str, ...] = ()  # what the next request carries (built-in and MCP), by name
    runs: int = 0  # how many runs go, on every branch (the tokens and cost above are the leaf's path's)


@dataclass(frozen=True)
class Header:
    """The session header: what this session is, where we are in it, what is being previewed."""

    title: str
    depth: int  # entries on the path root → leaf
    branches: int  # conversation tips (metadata never counts); -1: not counted yet (a big tree being read)
    viewing: str | None = None  # the previewed entry's first line, when previewing
    at_start: bool = False  # the leaf is before every prompt of a session that has some (a rewind to the root)
    running_here: bool = False  # a run goes on the branch on screen (Enter steers it; elsewhere Enter starts one)
    runs: int = 0  # how many runs go, on every branch
    sub_agent_of: str | None = None  # a sub-agent's session: the id of the session whose `task` call made it

    @property
    def position(self) -> str:
        if self.depth == 0 and self.branches == 0:
            return "empty"
        if self.at_start:
            branches = "branch" if self.branches == 1 else "branches"
            return "at the start" + (f" · {self.branches} {branches}" if self.branches > 0 else "")
        entries = "entry" if self.depth == 1 else "entries"
        branches = "branch" if self.branches == 1 else "branches"
        if self.branches < 0:
            return f"{self.depth} {entries} on this branch · reading the tree…"
        return f"{self.depth} {entries} on this branch · {self.branches} {branches}"


Mark = tuple[str, int, int]  # (entry id, its position 1-based, how many alternatives): `‹ n/m ›`


@dataclass(frozen=True)
class SessionOpened:
    """A session became the current one: the whole view is drawn from this."""

    session_id: str
    tree: TreeIndex  # the controller's index (append-only; rows and labels come in deltas): readers never change it
    leaf_id: str | None
    path: ShownPath  # what the transcript shows (root or last compaction → leaf): its ids, its newest entries
    header: Header
    status: Status
    composer_text: str | None  # a draft kept from last time and/or text to edit (fork before)
    history: tuple[str, ...]  # the prompts on this branch, oldest first (Up in the composer)
    tree_loading: int = 0  # a big session: `tree` is its path only; TreeLoaded brings the rest (entries)
    marks: tuple[Mark, ...] = ()  # the path's newest entries with alternatives
    labels: tuple[tuple[str, str], ...] = ()  # the path's newest entries' labels


@dataclass(frozen=True)
class TreeLoaded:
    """A big session's whole tree was read after its first frame (SessionOpened had its path):
    the tree panel, the `‹ n/m ›` marks and the header follow."""

    tree: TreeIndex
    leaf_id: str | None


# ------------------------------------------------------------ the parts of a delta


@dataclass(frozen=True)
class EntryAppended:
    """An entry was persisted (by anyone: the agent, a compaction, a label, a model change)."""

    entry: Entry
    row: TreeRow
    leaf_id: str | None
    shown: bool  # it belongs at the end of the transcript now (it extends the path on screen)
    siblings: tuple[int, int] | None = None  # (position, count) when it has alternatives, as it was appended
    run: str | None = None  # the run that appended it (None: the person, another process)


@dataclass(frozen=True)
class LabelChanged:
    target_id: str
    label: str | None
    row: TreeRow | None  # the target's row with its new label (None if the target has no row)


@dataclass(frozen=True)
class PathChanged:
    """The transcript shows another path: the leaf moved, a preview started or ended, or a
    compaction replaced older messages with a summary."""

    path: ShownPath
    leaf_id: str | None
    preview_id: str | None
    cause: Literal["move", "preview", "compaction"]
    marks: tuple[Mark, ...] = ()  # the path's newest entries with alternatives
    labels: tuple[tuple[str, str], ...] = ()  # the path's newest entries' labels


@dataclass(frozen=True)
class QueueChanged:
    steering: tuple[str, ...]
    follow_up: tuple[str, ...]


@dataclass(frozen=True)
class RunTip:
    """A run going (issue 39): its id and its tip, the entry it appends under (the tree marks it)."""

    run: str
    tip: str | None


@dataclass(frozen=True)
class RunStarted:
    run: str | None = None


@dataclass(frozen=True)
class RunEnded:
    run: str | None = None


@dataclass(frozen=True)
class RunsChanged:
    """A run's tip moved (it appended), or the leaf moved onto or off a run's tip: the runs and
    whether one goes on the branch on screen are computed once, when the turn's delta is made."""


@dataclass(frozen=True)
class StatusChanged:
    """The status may have changed: it is computed once, when the turn's delta is made."""


@dataclass(frozen=True)
class HeaderChanged:
    """The header may have changed: computed once, when the turn's delta is made."""


# what the roles record on the bus (bus.py), told as one ChatDelta per turn
Change = (EntryAppended | LabelChanged | PathChanged | QueueChanged | RunStarted | RunEnded | RunsChanged
          | StatusChanged | HeaderChanged)


@dataclass(frozen=True)
class ChatDelta:
    """What changed during one turn of the event loop, as it was at the end of that turn. Every
    part is a snapshot (None or empty: unchanged); apply them in this order: `appended` rows
    and `labels` to the tree, `path` (which already holds `appended[:path_after]`), the rest of
    `appended` to the transcript, then header, status, queue and the runs."""

    appended: tuple[EntryAppended, ...] = ()
    labels: tuple[LabelChanged, ...] = ()
    path: PathChanged | None = None
    path_after: int = 0  # how many of `appended` came before `path` (and are in it)
    header: Header | None = None
    status: Status | None = None
    queue: QueueChanged | None = None
    running: bool | None = None  # whether a run goes on the branch on screen, at the end of the turn (when it changed)
    runs: tuple[RunTip, ...] | None = None  # the runs going at the end of the turn, with their tips (when they changed)

    def parts(self) -> Iterator[EntryAppended | LabelChanged | PathChanged | QueueChanged | Header | Status]:
        yield from self.appended
        yield from self.labels
        for part in (self.path, self.header, self.status, self.queue):
            if part is not None:
                yield part


# ------------------------------------------------------------ discrete events


@dataclass(frozen=True)
class Focused:
    """Bring one entry into view: the transcript scrolls to it and marks it, the tree's cursor
    goes to it (a search hit)."""

    entry_id: str


@dataclass(frozen=True)
class ReplyPending:
    """A request is going out: nothing of its reply has come yet (the front end shows the wait at
    once, not only after a silence). `run`: whose; `on_screen`: its branch is the one shown (its
    tip ends the path on screen; else the reply shows when the person goes there)."""

    run: str | None = None
    on_screen: bool = True

    @property
    def previewing(self) -> bool:
        """Another branch is on screen."""
        return not self.on_screen


@dataclass(frozen=True)
class ReplyStreaming:
    """The assistant message being streamed: `started` on its first event (and when the person
    comes to its branch while it streams: the reply as far as it came), then every update;
    `delta` is the new answer text of this update ("" for thinking, tool calls, the start).
    `run`: whose; `on_screen`: its branch is the one shown (told either way: a view that shows
    several runs at once reads them all)."""

    message: AssistantMessage
    started: bool = False
    delta: str = ""
    run: str | None = None
    on_screen: bool = True

    @property
    def previewing(self) -> bool:
        """Another branch is on screen."""
        return not self.on_screen


@dataclass(frozen=True)
class CompactionStarted:
    reason: str  # "manual" | "threshold" | "overflow"
    run: str | None = None
    on_screen: bool = True


@dataclass(frozen=True)
class CompactionEnded:
    reason: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    error: str | None = None  # one sentence when nothing was compacted
    run: str | None = None
    on_screen: bool = True


@dataclass(frozen=True)
class Waiting:
    """A wait the user should see: a retry back-off or Retry-After ("retry"), or a provider silent
    for over 5 s ("silence", `seconds` until the request gives up). `detail` is the provider
    layer's own event (`RetryWait` / `StreamWait`) for front ends that describe it in full."""

    seconds: float
    reason: str
    kind: Literal["retry", "silence"] = "retry"
    detail: RetryWait | StreamWait | None = None
    run: str | None = None
    on_screen: bool = True


@dataclass(frozen=True)
class Readiness:
    """Whether a message can go out now; `problem` says why not (no model, no key)."""

    problem: str | None
    servers: tuple[str, ...] = ()  # local servers found (offered in the model picker)


@dataclass(frozen=True)
class Notice:
    text: str
    severity: Literal["information", "warning"] = "information"


@dataclass(frozen=True)
class Failed:
    """Something the user asked for did not happen; one sentence saying why."""

    text: str


@dataclass(frozen=True)
class Unsaved:
    """A message could not be written to the session; it stays on screen and was kept in
    `recovery_path` (None: nowhere). The run stopped."""

    message: AgentMessage
    reason: str
    recovery_path: str | None


@dataclass(frozen=True)
class RestoreOffered:
    """The leaf moved to a point whose tracked files differ from the disk: offer to restore them
    (default No); `plan.ready` can be restored, `plan.blocked` changed on disk since treechat wrote them."""

    plan: RestorePlan


@dataclass(frozen=True)
class Succeeded:
    """A run finished cleanly: an earlier error is no longer news."""


@dataclass(frozen=True)
class SessionsChanged:
    """Another writer changed the store (a session added, written to, renamed, deleted): a
    sessions list on screen should be read again."""


ChatEvent = (ChatDelta | SessionOpened | TreeLoaded | Focused | ReplyPending | ReplyStreaming | CompactionStarted
             | CompactionEnded
             | Waiting | Readiness | Notice | Failed | Unsaved | RestoreOffered | Succeeded | SessionsChanged)
