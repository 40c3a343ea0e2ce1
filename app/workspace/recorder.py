"""The checkpoints edit, write and bash leave on the session tree (`agent.tools.changes.FileRecorder`).

A checkpoint is appended at the leaf while the tool runs: after the assistant message that asked
for the change, before the tool result that reports it. It carries the blobs of the contents
before and after that the path to it does not hold yet (one blob per distinct content along a
path; a content over MAX_TRACKED_BYTES is named by its hash only and the tool says so).

Around a bash command it looks only at tracked files a restore may write (`Boundary`): never at
one outside the working folder or in git's own folders (an imported session may name any path),
so no checkpoint of a command takes such a file in.

In a run's own git worktree (`worktrees.Worktree`) the files are changed there, and the
checkpoints name them as the checkout's files (so a restore brings them into the checkout) and
say which worktree made them; what treechat wrote on this disk (`WrittenLog`) stays the worktree's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treechat.agent.tools.changes import Recorded
from treechat.agent.tools.workfolder import Boundary
from treechat.session.session import BranchWriter, Session
from treechat.storage.base import StorageError

from .blobs import MAX_TRACKED_BYTES, digest, pack, size_text
from .disk import OnDisk, look
from .history import CUSTOM_TYPE, Checkpoint, FileChange, FileHistory, checkpoint_data, path_ids_of
from .written import WrittenLog

if TYPE_CHECKING:
    from .worktrees import Worktree

WATCH_LIMIT = 200  # tracked files looked at around a bash command (the most recently changed first)


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, OnDisk]


class SessionRecorder:
    """Records into `session` (a run's writer: its checkpoints go on its own branch); `path_ids()`
    gives the ids of the path to where it writes, root first (the controller's tree index has
    them; None: read from storage)."""

    def __init__(self, session: Session | BranchWriter, history: FileHistory,
                 path_ids: Callable[[], Sequence[str]] | None = None, written: WrittenLog | None = None,
                 boundary: Boundary | None = None, worktree: Worktree | None = None) -> None:
        self.session, self.history, self.path_ids = session, history, path_ids
        self.worktree = worktree  # where the files are changed, standing for the checkout (None: there)
        self.written = written  # what treechat last wrote on this machine (None: not kept)
        self.boundary = boundary  # which tracked files a command is watched for (None: every one)

    async def intend(self, path: str, before: bytes | None, after: bytes | None) -> None:
        if self.written is None:
            return
        change = (path, digest(before) if before is not None else None, digest(after) if after is not None else None)
        try:
            await asyncio.to_thread(self.written.intend, [change])
        except OSError:
            pass  # a home that cannot be written: a later restore asks for --force, nothing is lost

    async def record(self, tool: str, tool_call_id: str | None, path: str, before: bytes | None,
                     after: bytes | None) -> Recorded:
        return await self._append(tool, tool_call_id, [(path, before, after)])

    async def _append(self, tool: str, tool_call_id: str | None,
                      changed: Sequence[tuple[str, bytes | None, bytes | None]]) -> Recorded:
        ids = self.path_ids() if self.path_ids is not None else await path_ids_of(self.session.storage,
                                                                                   self.session.leaf_id)
        held = self.history.blobs_on(ids)
        blobs: dict[str, str] = {}
        not_kept: dict[str, str] = {}
        changes: list[FileChange] = []
        notes: list[str] = []
        for path, before, after in changed:
            names: list[str | None] = []
            for content in (before, after):
                if content is None:
                    names.append(None)
                    continue
                name = digest(content)
                names.append(name)
                if len(content) > MAX_TRACKED_BYTES:
                    not_kept[name] = (f"{size_text(len(content))}, over the {size_text(MAX_TRACKED_BYTES)} "
                                      "a checkpoint keeps")
                elif name not in held and name not in blobs:
                    blobs[name] = pack(content)
            if any(n in not_kept for n in names if n):
                notes.append(f"{os.path.basename(path)} is over the {size_text(MAX_TRACKED_BYTES)} a checkpoint keeps: "
                             "a restore cannot bring this version back")
            recorded = self.worktree.to_checkout(path) if self.worktree is not None else path
            changes.append(FileChange(recorded, names[0], names[1], None if after is None else len(after)))
        data = checkpoint_data(tool, tool_call_id, changes, blobs, not_kept,
                               self.worktree.path if self.worktree is not None else None)
        parent = self.session.leaf_id
        try:
            entry_id = await self.session.append_custom(CUSTOM_TYPE, data)
        except (StorageError, OSError) as err:
            return Recorded(None, f"the checkpoint could not be saved: {getattr(err, 'strerror', None) or err}")
        entry = await self.session.get_entry(entry_id)
        self.history.add(Checkpoint(entry_id, parent, entry.timestamp if entry is not None else "", tool,
                                    tool_call_id, tuple(changes), blobs, not_kept,
                                    self.worktree.path if self.worktree is not None else None))
        if self.written is not None:
            wrote = [(path, c.after) for (path, _, _), c in zip(changed, changes, strict=True)]
            try:
                await asyncio.to_thread(self.written.set, wrote)
            except OSError:
                pass  # a home that cannot be written: a later restore asks for --force, nothing is lost
        return Recorded(entry_id, "; ".join(notes))

    async def snapshot(self) -> Snapshot:
        return Snapshot(await asyncio.to_thread(lambda: {p: look(p, MAX_TRACKED_BYTES) for p in self._watched()}))

    async def record_command(self, tool_call_id: str | None, snapshot: object) -> list[str]:
        if not isinstance(snapshot, Snapshot) or not snapshot.files:
            return []
        now = await asyncio.to_thread(lambda: {p: look(p, MAX_TRACKED_BYTES) for p in snapshot.files})
        changed = []
        for path, was in snapshot.files.items():
            got = now[path]
            if was.other or got.other or was.content == got.content:
                continue  # unchanged, or not a file a checkpoint can hold
            changed.append((path, was.data, got.data))
        if changed:
            await self._append("bash", tool_call_id, changed)
        return [p for p, _, _ in changed]

    def _watched(self) -> list[str]:
        recent: dict[str, None] = {}
        for cp in reversed(self.history.checkpoints):
            for change in cp.changes:
                recent.setdefault(change.path, None)
            if len(recent) >= WATCH_LIMIT:
                break
        paths = list(recent)[:WATCH_LIMIT]
        if self.worktree is not None:
            paths = [self.worktree.to_worktree(p) for p in paths]
        return paths if self.boundary is None else [p for p in paths if self.boundary.restore_refusal(p) is None]
