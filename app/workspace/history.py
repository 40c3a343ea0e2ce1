"""Checkpoints on the session tree, and the state of every tracked file at any entry.

A checkpoint is a `custom` entry (Pi's kind for extension state: never part of the model's
context, kept by every backend, copied by a fork, exported to Pi JSONL as it is), appended
while the tool that changed the files runs, so it sits between the assistant message that asked
and the tool result that reports it:

    {"type": "custom", "customType": "treechat.files", "data": {
        "v": 1, "tool": "edit", "toolCallId": "call_1", "encoding": "zlib+base64",
        "files": [{"path": "/abs/notes.txt", "before": null, "after": "<sha256>", "size": 12}],
        "blobs": {"<sha256>": "<zlib, base64>"}}}

`before`/`after` null: the file did not exist. A content over MAX_TRACKED_BYTES is named by its
hash with no blob (`notKept` says why): that state is known but cannot be restored. A run in a git
worktree of its own (issue 39) records the paths of the checkout it stands for, and says where it
worked: `"worktree": "/home/…/worktrees/S/r2-123"` (the checkout's disk never held those contents).

The state of a file at entry E is the `after` of the last checkpoint touching it on the path
root → E; on a path that never touched it, the `before` of the first checkpoint (in append
order) that did: the file as it was before treechat first changed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from treechat.bounded_json import RawJson, RawObject
from treechat.storage.base import SessionStorage
from treechat.storage.json_types import JsonObject
from treechat.storage.model import CustomEntry, Entry

from .blobs import ENCODING, unpack

CUSTOM_TYPE = "treechat.files"
VERSION = 1


@dataclass(frozen=True)
class FileChange:
    path: str  # absolute
    before: str | None  # content hash; None: the file did not exist
    after: str | None
    size: int | None = None  # bytes after the change


@dataclass(frozen=True)
class Checkpoint:
    entry_id: str
    parent_id: str | None
    timestamp: str
    tool: str
    tool_call_id: str | None
    changes: tuple[FileChange, ...]
    blobs: Mapping[str, str] = field(default_factory=dict)  # hash -> packed content
    not_kept: Mapping[str, str] = field(default_factory=dict)  # hash -> why it has no blob
    worktree: str | None = None  # made in this worktree, its paths the checkout's (None: in the checkout)


def checkpoint_data(tool: str, tool_call_id: str | None, changes: Sequence[FileChange],
                    blobs: Mapping[str, str], not_kept: Mapping[str, str], worktree: str | None = None) -> JsonObject:
    files: list[JsonObject] = []
    for c in changes:
        item: JsonObject = {"path": c.path, "before": c.before, "after": c.after}
        if c.size is not None:
            item["size"] = c.size
        files.append(item)
    data: JsonObject = {"v": VERSION, "tool": tool, "toolCallId": tool_call_id, "encoding": ENCODING,
                      "files": files, "blobs": dict(blobs)}
    if not_kept:
        data["notKept"] = dict(not_kept)
    if worktree is not None:
        data["worktree"] = worktree
    return data


def _hash(value: RawJson) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: RawJson) -> RawObject:
    return value if isinstance(value, dict) else {}


def parse_checkpoint(entry: Entry) -> Checkpoint | None:
    """The checkpoint an entry holds, or None (another kind of entry, or data this version cannot
    read: a damaged or newer checkpoint is passed over, never an error)."""
    if not isinstance(entry, CustomEntry) or entry.custom_type != CUSTOM_TYPE or not isinstance(entry.data, dict):
        return None
    data: RawObject = entry.data  # (a checkpoint as stored: each value checked as it is read)
    if data.get("v") != VERSION or data.get("encoding", ENCODING) != ENCODING or not isinstance(data.get("files"), list):
        return None
    changes = []
    for item in data["files"]:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
            continue
        size = item.get("size")
        changes.append(FileChange(item["path"], _hash(item.get("before")), _hash(item.get("after")),
                                  size if isinstance(size, int) and not isinstance(size, bool) else None))
    blobs = _dict(data.get("blobs"))
    not_kept = _dict(data.get("notKept"))
    tool, call = data.get("tool"), data.get("toolCallId")
    tool = tool if isinstance(tool, str) else "?"
    call = call if isinstance(call, str) else None
    worktree = data.get("worktree")
    return Checkpoint(entry.id, entry.parent_id, entry.timestamp or "", tool, call, tuple(changes),
                      {k: v for k, v in blobs.items() if isinstance(k, str) and isinstance(v, str)},
                      {k: str(v) for k, v in not_kept.items() if isinstance(k, str)},
                      worktree if isinstance(worktree, str) and worktree else None)


class FileHistory:
    """Every checkpoint of one session, in append order."""

    def __init__(self, checkpoints: Iterable[Checkpoint] = ()) -> None:
        self.checkpoints: list[Checkpoint] = []
        self._ids: set[str] = set()
        for cp in checkpoints:
            self.add(cp)

    @classmethod
    async def load(cls, storage: SessionStorage) -> FileHistory:
        return cls(cp for e in await storage.find_entries("custom") if (cp := parse_checkpoint(e)) is not None)

    def add(self, checkpoint: Checkpoint) -> None:
        if checkpoint.entry_id not in self._ids:
            self._ids.add(checkpoint.entry_id)
            self.checkpoints.append(checkpoint)

    def add_entry(self, entry: Entry) -> bool:
        """Take a newly appended entry into account; True when it was a checkpoint."""
        cp = parse_checkpoint(entry)
        if cp is not None:
            self.add(cp)
        return cp is not None

    def __bool__(self) -> bool:
        return bool(self.checkpoints)

    @property
    def paths(self) -> list[str]:
        """Every tracked file, in the order treechat first changed it."""
        seen: dict[str, None] = {}
        for cp in self.checkpoints:
            for change in cp.changes:
                seen.setdefault(change.path, None)
        return list(seen)

    def changes_of(self, path: str) -> list[tuple[Checkpoint, FileChange]]:
        return [(cp, c) for cp in self.checkpoints for c in cp.changes if c.path == path]

    def state_at(self, path_ids: Sequence[str]) -> dict[str, str | None]:
        """Each tracked file's content hash at the end of the path `path_ids` (root first); None:
        the file did not exist there."""
        on_path = {entry_id: i for i, entry_id in enumerate(path_ids)}
        last: dict[str, tuple[int, str | None]] = {}
        first: dict[str, str | None] = {}
        for cp in self.checkpoints:
            at = on_path.get(cp.entry_id)
            for change in cp.changes:
                first.setdefault(change.path, change.before)
                if at is not None and (change.path not in last or last[change.path][0] <= at):
                    last[change.path] = (at, change.after)
        return {path: last[path][1] if path in last else first[path] for path in first}

    def last_recorded(self, path: str) -> tuple[str | None, str | None]:
        """(the content a checkpoint last recorded for `path`, that checkpoint's entry id) in
        append order: what treechat itself last made of the file; (None, None) if never."""
        for cp in reversed(self.checkpoints):
            for change in cp.changes:
                if change.path == path:
                    return change.after, cp.entry_id
        return None, None

    def unwritten_states(self, path: str) -> set[str | None]:
        """What a file treechat never wrote on this disk may hold without having "changed on disk":
        what the session's last checkpoint made in the checkout left; and what each worktree's
        first change of it found there (the person's working state it was copied from)."""
        states: set[str | None] = set()
        in_checkout = False
        worktrees: set[str] = set()
        for cp in reversed(self.checkpoints):
            for change in cp.changes:
                if change.path != path:
                    continue
                if cp.worktree is None and not in_checkout:
                    in_checkout = True
                    states.add(change.after)
        for cp in self.checkpoints:
            if cp.worktree is None or cp.worktree in worktrees:
                continue
            for change in cp.changes:
                if change.path == path:
                    worktrees.add(cp.worktree)
                    states.add(change.before)
                    break
        if not in_checkout and not worktrees:
            states.add(None)  # (as `last_recorded` says of a file no checkpoint names)
        return states

    def blobs_on(self, path_ids: Iterable[str]) -> set[str]:
        """The blob names the checkpoints on a path carry."""
        ids = set(path_ids)
        return {h for cp in self.checkpoints if cp.entry_id in ids for h in cp.blobs}

    def blob(self, content: str) -> bytes | None:
        """A content by its hash, from any checkpoint (None: not kept, or damaged)."""
        for cp in self.checkpoints:
            packed = cp.blobs.get(content)
            if packed is not None:
                data = unpack(packed, content)
                if data is not None:
                    return data
        return None

    def not_kept_reason(self, content: str) -> str | None:
        for cp in self.checkpoints:
            if content in cp.not_kept:
                return cp.not_kept[content]
        return None


async def path_ids_of(storage: SessionStorage, leaf_id: str | None) -> list[str]:
    """The ids root → `leaf_id` (for callers without a tree index: the CLI)."""
    if leaf_id is None:
        return []
    return [e.id for e in await storage.get_path_to_root(leaf_id)]
