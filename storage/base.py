"""The storage contract: one `SessionStorage` per session, one `SessionCatalog` per store.

Every backend (SQLite, JSONL, in-memory) implements both and passes the same conformance suite
(tests/storage/). Everything is async; methods never return internal mutable state.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from .json_types import JsonObject, SessionHeader

if TYPE_CHECKING:  # (annotations only: the storage commands start without pydantic's models)
    from .imports.records import ImportRecords
    from .model import Entry, SessionMetadata
    from .tree.columns import TreeColumns

# ---------------------------------------------------------------- errors


class StorageError(Exception):
    """Base of every error a backend raises on purpose. The message is for a person."""


class EntryNotFoundError(StorageError, KeyError):
    def __init__(self, entry_id: str | None):
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} not found")

    def __str__(self) -> str:  # KeyError would quote the message
        message: str = self.args[0]
        return message


class DuplicateEntryError(StorageError):
    def __init__(self, entry_id: str):
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} already exists in this session")


class InvalidTreeError(StorageError):
    """The tree holds a cycle (e.g. a self-parented entry); the message names the entry."""


class SessionNotFoundError(StorageError, KeyError):
    def __init__(self, session_ref: str):
        self.session_ref = session_ref
        super().__init__(
            f"No session matches '{session_ref}'; `treechat sessions` lists the ids"
        )

    def __str__(self) -> str:
        message: str = self.args[0]
        return message


class AmbiguousSessionError(StorageError):
    def __init__(self, session_ref: str, candidates: Sequence[str]):
        self.session_ref = session_ref
        self.candidates = list(candidates)
        shown = ", ".join(self.candidates[:5])
        super().__init__(f"'{session_ref}' matches {len(self.candidates)} sessions ({shown}); type more of the id")


class SessionFileError(StorageError):
    """A session file that cannot be read at all (missing, unreadable, not a session)."""


class DamagedStorageError(StorageError):
    """The store exists but cannot be read as one (a truncated or garbage database). The file is
    left as it is; the message names it and says what to do (move it aside)."""


class ReadOnlyStorageError(StorageError):
    """A write to a store that was opened read-only (its folder or file is not writable); reads
    and search still work. The message says why."""


class StorageWriteError(StorageError):
    """A write failed part-way (disk full, I/O error, file system turned read-only). Nothing of
    the failed write was stored; what was stored before is intact."""


def write_error(err: OSError, what: str) -> StorageError:
    """The typed error for an OSError raised while writing `what`."""
    import errno

    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ReadOnlyStorageError(f"Cannot write {what}: {err.strerror or err} (the store is read-only)")
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageWriteError(f"Cannot write {what}: the disk is full; free some space and try again")
    return StorageWriteError(f"Cannot write {what}: {err.strerror or err}")


# ---------------------------------------------------------------- value objects


@dataclass(frozen=True)
class SessionStats:
    """Whole-session aggregates (every branch). SQLite keeps these materialized."""

    entry_count: int = 0
    message_count: int = 0
    user_messages: int = 0
    assistant_messages: int = 0
    tool_results: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total_tokens: int = 0
    cost_total: float = 0.0


@dataclass(frozen=True)
class PathState:
    """What holds at one entry, accumulated along the path root → that entry.

    `model`, `thinking_level` and `active_tool_names` follow build_session_context's rules
    (an assistant message also sets the model; the last setting on the path wins).
    `context_tokens` is the input+cacheRead+cacheWrite+output of the last assistant message on
    the path (what the model last saw), 0 if none.
    """

    depth: int = 0
    message_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_total: float = 0.0
    context_tokens: int = 0
    model: dict[str, str] | None = None  # {"provider": ..., "modelId": ...}
    thinking_level: str = "off"
    active_tool_names: list[str] | None = None


@dataclass(frozen=True)
class EntryCursor:
    """Options for get_entries: a page of entries in sequence (append) order."""

    after_id: str | None = None  # start after this entry
    before_id: str | None = None  # stop before this entry
    limit: int | None = None
    types: Sequence[str] | None = None
    newest_first: bool = False


class TreeRow(NamedTuple):
    """One node of the tree skeleton: enough to draw the tree without loading entries.

    A NamedTuple, not a dataclass: a 100k-entry tree makes 100k of these, and tuple creation
    is several times cheaper than a frozen dataclass's __init__."""

    id: str
    parent_id: str | None
    type: str
    role: str | None  # message role for message entries
    preview: str  # first line of the text, at most ~120 characters
    timestamp: str
    label: str | None = None
    status: str | None = None  # a reply that failed ("error") or was stopped ("aborted")


@dataclass(frozen=True)
class SessionSummary:
    """A catalog row: read from materialized state, never by parsing every entry."""

    id: str
    created_at: str
    modified_at: str
    name: str | None = None
    cwd: str = ""
    entry_count: int = 0
    message_count: int = 0
    total_tokens: int = 0
    cost_total: float = 0.0
    first_message: str = ""
    path: str | None = None
    parent_session_id: str | None = None
    parent_entry_id: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "name": self.name,
            "created": self.created_at,
            "modified": self.modified_at,
            "cwd": self.cwd,
            "entryCount": self.entry_count,
            "messageCount": self.message_count,
            "totalTokens": self.total_tokens,
            "cost": self.cost_total,
            "firstMessage": self.first_message,
            "path": self.path,
            "parentSessionId": self.parent_session_id,
            "parentEntryId": self.parent_entry_id,
        }


def threaded(sessions: Sequence[SessionSummary]) -> builtins.list[tuple[SessionSummary, int]]:
    """(session, depth): each session made from another (a fork, a sub-agent's) right under its
    parent, the order otherwise kept; cycle-safe. (`treechat sessions` and the app's list.)"""
    known = {s.id for s in sessions}
    children: dict[str | None, builtins.list[SessionSummary]] = {}
    for s in sessions:
        parent = s.parent_session_id if s.parent_session_id in known and s.parent_session_id != s.id else None
        children.setdefault(parent, []).append(s)
    out: builtins.list[tuple[SessionSummary, int]] = []
    seen: set[str] = set()
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        s, depth = stack.pop()
        if s.id in seen:
            continue
        seen.add(s.id)
        out.append((s, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(s.id, []))]
    out += [(s, 0) for s in sessions if s.id not in seen]  # parent cycles: still listed
    return out


MAX_QUERY_CHARS = 1000  # a search query is cut here: a 100 KB one took 94 s (issue 21)


@dataclass(frozen=True)
class SearchHit:
    session_id: str
    entry_id: str
    type: str
    role: str | None
    snippet: str  # the match is wrapped in [[ ]] (widgets restyle it)
    rank: float  # lower is better
    session_name: str | None = None
    timestamp: str = ""
    session_title: str = ""  # what the session is known by: its name, else its first message (the sessions list)


def hit_labels(hits: Sequence[SearchHit], width: int = 40) -> list[str]:
    """How each hit names its session for a person: its title (cut to `width`), with the id's
    first characters only where two sessions among the hits share a title (or it has none)."""
    def title(hit: SearchHit) -> str:
        text = " ".join(hit.session_title.split())
        return text if len(text) <= width else text[: width - 1] + "…"

    sessions: dict[str, set[str]] = {}
    for hit in hits:
        sessions.setdefault(title(hit), set()).add(hit.session_id)
    short: dict[str, str] = {}  # as `treechat sessions` shows an id (13 characters), longer where that is not enough
    for ids in sessions.values():
        n = 13
        while len({i[:n] for i in ids}) < len(ids):
            n += 1
        short.update((i, i[:n]) for i in ids)
    return [f"{title(h)} · {short[h.session_id]}" if title(h) and len(sessions[title(h)]) > 1
            else title(h) or short[h.session_id] for h in hits]


class SearchHits(builtins.list[SearchHit]):
    """The hits of a search that had to stop early: `searched` entries were looked at (the newest),
    not all of them; `search(..., further=searched)` goes on from there. (A plain list of hits
    means every entry was searched, or `limit` hits were found.)"""

    searched: int = 0


def searched_only(hits: Sequence[SearchHit]) -> int | None:
    """How many (newest) entries a capped search looked at; None when it searched them all."""
    return hits.searched if isinstance(hits, SearchHits) else None


@dataclass
class ImportReport:
    """What an import or open had to skip. Nothing skipped means a clean file."""

    session_id: str = ""
    entries: int = 0
    skipped_lines: int = 0  # not JSON, or not a valid entry
    duplicate_ids: int = 0
    migrated_from: int | None = None  # file version before in-memory migration
    repaired: int = 0  # parent cycles broken (the entry that closed one became a root)
    problems: list[str] = field(default_factory=list)  # first few, human readable

    @property
    def skipped(self) -> int:
        return self.skipped_lines + self.duplicate_ids


@dataclass
class AppendedEntries:
    """What other writers (another process, another catalog) appended to a session since this
    storage object last looked: the entries in append order (leaf markers included: they never
    move this process's leaf) and the tree rows of the non-marker ones (labels as they are now)."""

    entries: list[Entry] = field(default_factory=list)
    rows: list[TreeRow] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries)


@dataclass(frozen=True)
class StoreChange:
    """What other writers (another process, another machine) changed in a store: the sessions
    whose entries changed, or None when any may have (a feed that lost its connection for a
    while, a change it cannot attribute). Sessions created, renamed or deleted count as changed."""

    session_ids: frozenset[str] | None = None

    def touches(self, session_id: str) -> bool:
        return self.session_ids is None or session_id in self.session_ids


@runtime_checkable
class ChangeFeed(Protocol):
    """`SessionCatalog.watch()`: how a front end hears that others wrote to the store, within a
    second (PostgreSQL: LISTEN/NOTIFY; SQLite: `PRAGMA data_version`; JSONL: the files' sizes and
    times; memory: never). It may also report this process's own writes: `poll_appended` tells
    them apart. A feed of a store others can write to reports at once first, naming no session
    (StoreChange(None)): its reader catches up with what was written before the feed began.
    One reader at a time."""

    async def next_change(self, timeout: float) -> StoreChange | None:  # noqa: ASYNC109  a poll in steps: None when it passes (a cancel could cut a read of the store)
        """The next change, or None when `timeout` seconds passed without one."""
        ...

    async def close(self) -> None: ...


# ---------------------------------------------------------------- protocols


@runtime_checkable
class SessionStorage(Protocol):
    """One session's entries and leaf pointer.

    Contract (checked by tests/storage/test_conformance.py):
    - `append_entry` stores an entry whose parent exists (or is None), whose id is new, and
      makes it the leaf — entry, aggregates, branch membership and index in one transaction.
      `leaf` entries are written only by `set_leaf_id`.
    - `append_entry(entry, move_leaf=False)` stores it the same way and leaves the stored leaf
      where it was: a run writing its own branch while the person is elsewhere (issue 39).
      JSONL's stored leaf is its last line: such an append puts the person's leaf back there
      with a `leaf` entry at the next `set_leaf_id` (to the leaf it has: "settle") or `close`,
      not one per entry; a process killed before then reopens at its newest entry (nothing lost).
    - `set_leaf_id` validates the target (None allowed) and persists a `leaf` entry whose
      parent and target are the new position (nothing when the stored leaf is there already).
    - Reads return fresh objects; unknown ids give None (get_entry) or raise EntryNotFoundError.
    """

    session_id: str

    async def get_metadata(self) -> SessionMetadata: ...
    async def get_leaf_id(self) -> str | None: ...
    async def set_leaf_id(self, leaf_id: str | None) -> None: ...
    async def create_entry_id(self) -> str: ...
    async def append_entry(self, entry: Entry, *, move_leaf: bool = True) -> None: ...
    async def get_entry(self, entry_id: str) -> Entry | None: ...
    async def find_entries(self, type: str) -> list[Entry]: ...
    async def get_children(self, parent_id: str | None) -> list[Entry]: ...
    async def get_label(self, entry_id: str) -> str | None: ...
    async def get_labels(self) -> dict[str, str]: ...
    async def get_session_name(self) -> str | None: ...
    async def get_session_stats(self) -> SessionStats: ...
    async def get_path_state(self, entry_id: str | None) -> PathState: ...
    async def get_path_to_root(self, leaf_id: str) -> list[Entry]: ...
    async def get_path_to_root_or_compaction(self, leaf_id: str) -> list[Entry]: ...
    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]: ...
    async def get_tree_rows(self) -> list[TreeRow]: ...

    async def get_tree_columns(self) -> TreeColumns:
        """The tree of `get_tree_rows`, a column per field and a slot per entry in append order
        (`tree/columns.py`): what the app opens a session with, with no object per entry."""
        ...

    async def get_path_rows(self, leaf_id: str) -> list[TreeRow]:
        """The tree rows of `get_path_to_root_or_compaction(leaf_id)`'s entries (no leaf marker),
        parents and labels as `get_tree_rows` gives them: a branch without reading the tree."""
        ...

    async def get_entries_by_ids(self, entry_ids: Sequence[str]) -> list[Entry]:
        """The entries with these ids, in the order asked (an unknown id is left out): the part
        of a path the transcript shows, a window at a time."""
        ...

    async def poll_appended(self) -> AppendedEntries:
        """Entries that other writers (another process or catalog) appended to this session since
        this object last looked, in order; empty when there are none. Cheap enough to call once a
        second (JSONL: one stat; SQLite: one indexed query). It never moves this object's leaf
        (`get_leaf_id` of JSONL and memory is this process's; SQLite's is the last writer's)."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class SessionCatalog(Protocol):
    """Creates, finds, lists, renames, forks, deletes and searches sessions of one store."""

    async def create(
        self,
        *,
        session_id: str | None = None,
        cwd: str = "",
        parent_session_id: str | None = None,
        parent_entry_id: str | None = None,
    ) -> SessionStorage: ...

    async def open(self, session_ref: str) -> SessionStorage:
        """By full id or unique prefix; SessionNotFoundError / AmbiguousSessionError otherwise."""

    async def latest(self) -> SessionStorage | None:
        """The most recently modified session, or None when the store is empty."""

    async def list(self) -> list[SessionSummary]:
        """Newest modified first."""

    async def rename(self, session_ref: str, name: str) -> None:
        """Appends a session_info entry (an empty name clears it)."""

    async def fork(self, session_ref: str, entry_id: str) -> SessionStorage:
        """A new session holding the path root → entry_id (labels on it kept), linked to its parent."""

    async def delete(self, session_ref: str) -> None: ...

    async def import_session(
        self, header: SessionHeader, entries: Sequence[Entry], leaf_id: str | None
    ) -> tuple[SessionStorage, ImportReport]:
        """Bulk-load already-parsed entries (from a Pi file). Duplicate ids are skipped and
        counted; orphans are kept (they show as roots); parent cycles are broken (reported).
        All or nothing: a failed import leaves no session behind."""

    async def import_records(
        self, header: SessionHeader, records: ImportRecords, report: ImportReport, *, replace: bool = False
    ) -> tuple[SessionStorage, ImportReport]:
        """The fast path of import: `imports.records.ImportRecords` read by `read_records`.
        The header's id is kept; StorageError if it exists unless `replace`."""

    async def has_session(self, session_id: str) -> bool:
        """Whether a session with exactly this id exists."""

    @property
    def read_only(self) -> str | None:
        """Why nothing can be saved in this store (opened read-only), or None. Reads and search
        work either way; a write raises ReadOnlyStorageError with the same reason."""

    async def search(
        self, query: str, *, session_id: str | None = None, limit: int = 50, further: int = 0
    ) -> builtins.list[SearchHit]:
        """The best hits first (`limit` at most). A search that had to stop early says how many of
        the newest entries it looked at (`searched_only`); `further=` that number looks at the
        next, older ones ("more…"). A search that looked at everything has nothing further: []."""
        ...

    def watch(self) -> ChangeFeed:
        """A feed of what other writers change in this store (see ChangeFeed); close it after use."""
        ...

    async def close(self) -> None: ...
