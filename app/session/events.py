"""What the session layer tells its listeners, as Literal-tagged frozen dataclasses.

- `SessionChange`: a `Session`'s own changes (`Session.changes`), told synchronously right
  after the storage has them: an entry appended (ours, or adopted from another writer) or the
  leaf moved without a new entry.
- `SessionEvent`: what an `AgentSession` tells its listeners (`AgentSession.subscribe`): every
  agent event (treechat.agent.events), then the session's own below. Dispatch with `match`;
  `typing.assert_never` catches a kind left unhandled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from treechat.agent.events import AgentEvent
from treechat.agent.types import AgentMessage
from treechat.llm.types import ModelInfo
from treechat.storage.model import Entry

CompactionReason = Literal["manual", "threshold", "overflow"]


@dataclass(frozen=True)
class Appended:
    entry: Entry  # as stored: the new leaf, unless a run appended it on a branch the person is not on
    run: str | None = None  # the run whose writer appended it (None: the person, or another process)
    type: Literal["appended"] = "appended"


@dataclass(frozen=True)
class LeafMoved:
    leaf_id: str | None  # None: before the first entry
    type: Literal["leaf_moved"] = "leaf_moved"


SessionChange = Appended | LeafMoved


@dataclass(frozen=True, kw_only=True)
class QueueUpdate:
    steering: list[str] = field(default_factory=list)
    follow_up: list[str] = field(default_factory=list)
    type: Literal["queue_update"] = "queue_update"


@dataclass(frozen=True, kw_only=True)
class ModelChanged:
    model: ModelInfo
    type: Literal["model_changed"] = "model_changed"


@dataclass(frozen=True, kw_only=True)
class ThinkingLevelChanged:
    level: str
    type: Literal["thinking_level_changed"] = "thinking_level_changed"


@dataclass(frozen=True, kw_only=True)
class ActiveToolsChanged:
    names: list[str]
    type: Literal["active_tools_changed"] = "active_tools_changed"


@dataclass(frozen=True, kw_only=True)
class PersistFailed:
    """A message could not be written to the session (full disk, read-only store): it was kept
    in `recovery_path` (None: nowhere could take it; it stays on screen only) and the run stops."""

    message: AgentMessage
    reason: str
    recovery_path: Path | None
    type: Literal["persist_failed"] = "persist_failed"


@dataclass(frozen=True, kw_only=True)
class SessionReloaded:
    """The leaf moved (or the session was resumed): the transcript was rebuilt from the path."""

    leaf_id: str | None
    type: Literal["session_reloaded"] = "session_reloaded"


@dataclass(frozen=True, kw_only=True)
class CompactionResult:
    entry_id: str
    summary: str
    tokens_before: int
    tokens_after: int
    trigger: CompactionReason
    first_kept_entry_id: str


@dataclass(frozen=True, kw_only=True)
class CompactionStart:
    reason: CompactionReason
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(frozen=True, kw_only=True)
class CompactionEnd:
    """`result` is set when a compaction entry was appended (agent messages were rebuilt);
    `error` is one sentence otherwise; `will_retry`: the failed reply is sent again next."""

    reason: CompactionReason
    result: CompactionResult | None = None
    error: str | None = None
    will_retry: bool = False
    type: Literal["compaction_end"] = "compaction_end"


OwnEvent = (
    QueueUpdate
    | ModelChanged
    | ThinkingLevelChanged
    | ActiveToolsChanged
    | PersistFailed
    | SessionReloaded
    | CompactionStart
    | CompactionEnd
)
SessionEvent = AgentEvent | OwnEvent
