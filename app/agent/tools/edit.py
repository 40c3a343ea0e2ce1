"""edit and write: change files, after the user approves the diff, and record a checkpoint.

Pi's argument shapes (`write {path, content}`, `edit {path, edits: [{oldText, newText}]}`, the
legacy top-level oldText/newText and `edits` as a JSON string), our own safety:

- the change is computed first and shown as a unified diff; nothing is written until the front
  end approves it (`changes.ApproveChange`: a dialog in the app, `--yes` in print mode);
- a path whose real location (links followed) is outside the working folder is flagged as such:
  the app asks about it separately, print mode refuses it even under --yes;
- a path in git's own folders (`.git` at any depth, any case; a repository's folder under any name;
  where a `.git` file points) is refused before anything is asked, whatever was allowed, unless
  the user named that file in config.toml's `writable_git_paths` (`workfolder.Boundary`): git runs
  commands it finds there by itself;
- only regular files are read or replaced (a directory, FIFO or device is named and refused),
  binary files are not edited, a file that changed while the user was deciding is not written,
  and a file is replaced whole or not at all (`file_write.replace_file`);
- the content before and after goes to the session as a checkpoint (`changes.FileRecorder`).

With a `FileHost` (host.py: an editor, `treechat acp`) the text is read from the editor and the
change is written through it (its buffer, unsaved changes included); what is at the path is
still looked at here first.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from treechat.llm.abort import AbortSignal
from treechat.workspace.blobs import size_text
from treechat.workspace.diff_text import Diff, binary_note, unified_diff

from ..types import JsonObject
from .base import AgentTool, OnUpdate, ToolResult, text_result
from .changes import (
    DECLINED,
    GIT_REFUSED,
    NO_APPROVAL,
    OUTSIDE_REFUSED,
    ApproveChange,
    FileRecorder,
    ProposedChange,
    Recorded,
)
from .edit_text import EditError, Replacement, TextFile, apply_edits, keep_form, prepare_edit_arguments
from .file_write import FileProblem, Target, inspect, open_parent, read_regular, replace_file
from .git_dir import dot_git_part, makes_repository
from .host import FileHost, HostError, bytes_text, text_bytes
from .offloop import Stop, ToolCancelled, off_loop
from .workfolder import Boundary, inside, shown_path

MAX_EDIT_BYTES = 10 * 1024 * 1024  # edit and write work on files up to this size
WORK_SECONDS = 30.0


class EditItem(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    old_text: str = Field(alias="oldText", description=(
        "Exact text for one targeted replacement. It must be unique in the original file and must not overlap "
        "with any other edits[].oldText in the same call."))
    new_text: str = Field(alias="newText", description="Replacement text for this targeted edit.")


class EditArgs(BaseModel):
    path: str = Field(description="Path to the file to edit (relative or absolute)")
    edits: list[EditItem] = Field(description=(
        "One or more targeted replacements. Each edit is matched against the original file, not incrementally. "
        "Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge "
        "them into one edit instead."))


class WriteArgs(BaseModel):
    path: str = Field(description="Path to the file to write (relative or absolute)")
    content: str = Field(description="Content to write to the file")


class _Failed(Exception):
    """A change that cannot be made; the text is the tool's (error) result."""


A = TypeVar("A", bound=BaseModel)


class _ChangeTool(AgentTool[A]):
    execution_mode = "sequential"  # two changes to one file must not interleave
    timeout = None  # waiting for the user's approval has no limit; the file work bounds itself

    def __init__(self, cwd: str | os.PathLike[str] | None = None, approve: ApproveChange | None = None,
                 recorder: FileRecorder | None = None, writable_git_paths: Iterable[str] = (),
                 files: FileHost | None = None) -> None:
        self.cwd = Path(cwd or os.getcwd())
        self.boundary = Boundary.of(self.cwd, writable_git_paths)
        self.folder = self.boundary.folder
        self.approve, self.recorder = approve, recorder
        self.files = files  # None: read and written here

    def _where(self, raw: str) -> tuple[str, str, bool]:
        """(real path, shown path, outside the working folder) of a path the model named."""
        real = os.path.realpath(self._named(raw))
        return real, shown_path(real, self.folder), not inside(real, self.folder)

    def _named(self, raw: str) -> str:
        raw = raw[1:] if raw.startswith("@") else raw  # as Pi: a path copied from an @mention
        path = Path(raw).expanduser()
        return os.path.normpath(path if path.is_absolute() else self.cwd / path)

    def _git_refusal(self, raw: str, real: str) -> ToolResult | None:
        """The error result for a path in git's own folders: as named (a link called `.git`) or as
        it really is; None when it is not, or the user named it in writable_git_paths."""
        if self.boundary.git_ok(real):
            return None
        git = self.boundary.git_part(real) or dot_git_part(self._named(raw))
        if git is None:
            return None
        return text_result(GIT_REFUSED.format(path=raw, git=git), is_error=True)

    async def _read(self, real: str, given: str, signal: AbortSignal | None, *, editing: bool) -> tuple[Target, bytes | None]:
        def work(stop: Stop) -> tuple[Target, bytes | None]:
            target = inspect(real)
            if target.kind == "missing":
                if editing:
                    raise _Failed(f"No such file: {given}. edit changes an existing file; write creates one.")
                return target, None
            if target.kind == "directory":
                raise _Failed(f"{given} is a directory; {'edit' if editing else 'write'} changes a file.")
            if target.kind == "special":
                raise _Failed(f"{given} is {target.special}; not {'edited' if editing else 'written'}.")
            if target.size > MAX_EDIT_BYTES:
                raise _Failed(f"{given} is {size_text(target.size)}; {'edit' if editing else 'write'} changes files "
                              f"up to {size_text(MAX_EDIT_BYTES)} (use bash for larger ones).")
            if self.files is not None:
                return target, b""  # the content is the editor's (below)
            data = read_regular(real, MAX_EDIT_BYTES)
            if len(data) > MAX_EDIT_BYTES:
                raise _Failed(f"{given} grew past {size_text(MAX_EDIT_BYTES)} while it was read; not changed.")
            return target, data

        target, data = await off_loop(work, signal, Stop(time.monotonic() + WORK_SECONDS))
        if self.files is not None and data is not None:
            data = await self._host_read(real, given)
        return target, data

    async def _host_read(self, real: str, given: str) -> bytes:
        assert self.files is not None
        try:
            data = text_bytes(await self.files.read_text(real))
        except HostError as err:
            raise _Failed(f"Could not read {given}: {err}") from None
        if len(data) > MAX_EDIT_BYTES:
            raise _Failed(f"{given} is {size_text(len(data))} in the editor; changes are made to files up to "
                          f"{size_text(MAX_EDIT_BYTES)}.")
        return data

    async def _change(self, tool: Literal["edit", "write"], call_id: str, given: str, real: str, shown: str,
                      outside: bool, before: bytes | None, after: bytes, diff: Diff, signal: AbortSignal | None,
                      done: str) -> ToolResult:
        """Ask, check the file is as it was read, replace it, record the checkpoint."""
        if makes_repository(real, after) and not self.boundary.git_ok(real):
            return text_result(GIT_REFUSED.format(path=given, git=f"{os.path.dirname(real)} (this HEAD would make it "
                                                  "one)"), is_error=True)
        change = ProposedChange(tool, shown, real, self.folder, outside, diff.text, diff.added, diff.removed,
                                before is None, _text(before), _text(after))
        if self.approve is None:
            return text_result(NO_APPROVAL.format(what=f"{tool} of {given}"), is_error=True)
        answer = await ask_or_stop(self.approve, change, signal)
        if answer is not True:
            if isinstance(answer, str):
                return text_result(answer, is_error=True)
            return text_result(DECLINED.format(path=given), is_error=True)
        if signal is not None and signal.aborted:
            return text_result(f"Not changed: the run was stopped before {given} was written.", is_error=True)
        if self.recorder is not None:  # what is about to be written, so a kill -9 in between is no "change on disk"
            await self.recorder.intend(real, before, after)
        try:
            if self.files is not None:
                await self._host_write(real, before, after, given)
            else:
                await asyncio.to_thread(_write_if_unchanged, real, before, after, given, self.boundary.git_ok(real))
        except _Failed as err:
            return text_result(str(err), is_error=True)
        except OSError as err:
            return text_result(f"Could not write {given}: {err.strerror or err}.", is_error=True)
        recorded = (await self.recorder.record(tool, call_id, real, before, after) if self.recorder is not None
                    else Recorded(None))
        text = done + (f" ({recorded.note})" if recorded.note else "")
        details = {"diff": diff.text, "firstChangedLine": diff.first_changed_line, "path": shown,
                   "added": diff.added, "removed": diff.removed, "created": before is None,
                   "checkpoint": recorded.checkpoint_id}
        return text_result(text, details=details)

    async def _host_write(self, real: str, before: bytes | None, after: bytes, given: str) -> None:
        """Through the editor: the text it has must still be what was approved (as here on disk)."""
        assert self.files is not None
        now = await asyncio.to_thread(inspect, real)
        current = await self._host_read(real, given) if now.kind == "file" else None
        if current != before or (before is None and now.kind != "missing"):
            raise _Failed(CHANGED_MEANWHILE.format(given=given))
        try:  # its folder, as the write here would open it: made if new, never through a link nor git's own
            folder, _ = await asyncio.to_thread(open_parent, real, make=before is None, git_ok=self.boundary.git_ok(real))
        except FileProblem as err:
            raise _Failed(f"Could not write {given}: {err.strerror}.") from None
        os.close(folder)
        try:
            await self.files.write_text(real, bytes_text(after))
        except HostError as err:
            raise _Failed(f"Could not write {given}: {err}") from None


CHANGED_MEANWHILE = ("{given} changed while the change was waiting for approval; not written. Read it again "
                     "and make the change again.")


def _text(data: bytes | None) -> str | None:
    """The text of a file's content, for a front end's diff view (None: new, or not UTF-8 text)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _write_if_unchanged(real: str, before: bytes | None, after: bytes, given: str, git_ok: bool) -> None:
    now = inspect(real)
    current = read_regular(real, MAX_EDIT_BYTES) if now.kind == "file" else None
    if current != before or (before is None and now.kind != "missing"):
        raise _Failed(CHANGED_MEANWHILE.format(given=given))
    try:
        replace_file(real, after, make_parents=before is None, git_ok=git_ok)
    except FileProblem as err:
        raise _Failed(f"Could not write {given}: {err.strerror}.") from None


class EditTool(_ChangeTool[EditArgs]):
    name, label = "edit", "Edit"
    description = ("Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
                   "non-overlapping region of the original file. If two changes affect the same block or nearby "
                   "lines, merge them into one edit instead of emitting overlapping edits. Do not include large "
                   "unchanged regions just to connect distant changes.")
    Args = EditArgs

    @property
    def parameters(self) -> JsonObject:
        """Pi's schema, written out: no `$defs`/`$ref`, which some servers' tool support lacks."""
        item = EditItem.model_json_schema()
        return {"type": "object", "additionalProperties": False, "required": ["path", "edits"], "properties": {
            "path": {"type": "string", "description": EditArgs.model_fields["path"].description},
            "edits": {"type": "array", "description": EditArgs.model_fields["edits"].description, "items": {
                "type": "object", "additionalProperties": False, "required": ["oldText", "newText"],
                "properties": {k: {"type": "string", "description": v["description"]}
                               for k, v in item["properties"].items()}}}}}

    def prepare_arguments(self, args: JsonObject) -> JsonObject:
        return prepare_edit_arguments(args)

    async def execute(self, tool_call_id: str, args: EditArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        real, shown, outside = self._where(args.path)
        refused = await asyncio.to_thread(self._git_refusal, args.path, real)
        if refused is not None:
            return refused
        try:
            _, before = await self._read(real, args.path, signal, editing=True)
            assert before is not None
            file = TextFile.decode(before)
            if file is None:
                raise _Failed(f"{args.path} is a binary file (not UTF-8 text); edit changes text files only.")
            edits = [Replacement(e.old_text, e.new_text) for e in args.edits]
            new_text, new_lf = apply_edits(file, edits, args.path)
        except (_Failed, EditError) as err:
            return text_result(str(err), is_error=True)
        except ToolCancelled:
            raise
        except OSError as err:
            return text_result(f"Could not edit file: {args.path}. {err.strerror or err}.", is_error=True)
        diff = unified_diff(file.text, new_lf, shown)
        return await self._change("edit", tool_call_id, args.path, real, shown, outside, before,
                                  new_text.encode("utf-8"), diff, signal,
                                  f"Successfully replaced {len(edits)} block(s) in {args.path}.")


class WriteTool(_ChangeTool[WriteArgs]):
    name, label = "write", "Write"
    description = ("Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
                   "Automatically creates parent directories. A file it replaces keeps its BOM and CRLF line endings.")
    Args = WriteArgs

    async def execute(self, tool_call_id: str, args: WriteArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        real, shown, outside = self._where(args.path)
        refused = await asyncio.to_thread(self._git_refusal, args.path, real)
        if refused is not None:
            return refused
        try:
            _, before = await self._read(real, args.path, signal, editing=False)
        except _Failed as err:
            return text_result(str(err), is_error=True)
        except OSError as err:
            return text_result(f"Could not write {args.path}: {err.strerror or err}.", is_error=True)
        existing = TextFile.decode(before) if before is not None else None
        content = keep_form(args.content, existing)
        after = content.encode("utf-8")
        if before == after:
            return text_result(f"{args.path} already has this content; nothing was written.",
                               details={"diff": "", "path": shown, "added": 0, "removed": 0, "created": False})
        if before is not None and existing is None:
            diff = binary_note(before, after, shown)
        else:
            diff = unified_diff(existing.text if existing else None, content.replace("\r\n", "\n"), shown)
        return await self._change("write", tool_call_id, args.path, real, shown, outside, before, after, diff,
                                  signal, f"Successfully wrote {len(after)} bytes to {args.path}")


async def ask_or_stop(approve: ApproveChange, change: ProposedChange, signal: AbortSignal | None) -> bool | str:
    """The answer, or False as soon as the run is stopped (the question is withdrawn)."""
    if signal is None:
        return await approve(change)
    ask = asyncio.ensure_future(approve(change))
    stop = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if ask in done:
        return ask.result()
    ask.cancel()
    try:
        await ask
    except asyncio.CancelledError:
        pass
    return False


def approve_inside(reason: str = OUTSIDE_REFUSED) -> ApproveChange:
    """Print mode's `--yes`: every change inside the working folder, none outside it."""

    async def approve(change: ProposedChange) -> bool | str:
        return True if not change.outside else reason.format(path=change.real_path, folder=change.folder)

    return approve


__all__ = ["EditTool", "WriteTool", "approve_inside", "MAX_EDIT_BYTES"]
