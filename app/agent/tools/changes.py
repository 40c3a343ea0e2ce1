"""What edit and write ask before they change a file, and whom they tell once they have.

- `ApproveChange(change) -> bool | str`: the front end's answer (a text: refused, saying why). The app shows the diff in a dialog
  typing cannot answer (and may allow edits for the session); print mode approves only with
  `--yes`, and never a change outside the working folder. None: nothing is changed.
- `FileRecorder`: the checkpoints (`treechat.workspace.recorder`): the content before and after
  each change goes on the session tree; the bash tool lets it look at the tracked files before
  and after a command.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True)
class ProposedChange:
    tool: Literal["edit", "write"]
    path: str  # as shown: relative to the working folder when inside it
    real_path: str  # every link followed
    folder: str  # the working folder
    outside: bool  # real_path is not in the working folder
    diff: str  # unified diff text (bounded)
    added: int
    removed: int
    created: bool  # the file does not exist yet
    # the whole text before (None: a new or binary file) and after, for a front end that shows
    # the change as two texts (an editor's diff view) rather than as `diff`
    before_text: str | None = None
    after_text: str | None = None
    worktree: bool = False  # made in the run's own git worktree, not in the person's folder (issue 39)

    @property
    def summary(self) -> str:
        """`notes.txt +3 −1`."""
        return f"{self.path} +{self.added} \u2212{self.removed}"


# True: make it; False: the user declined; a text: refused, and why (for the model)
ApproveChange = Callable[[ProposedChange], Awaitable[bool | str]]


@dataclass(frozen=True)
class Recorded:
    checkpoint_id: str | None  # the entry holding the change (None: it could not be written)
    note: str = ""  # for the model and the transcript: e.g. the content was too large to keep


class Snapshot(Protocol):
    """What a recorder saw of the tracked files before a command (its own type: opaque here)."""


class FileRecorder(Protocol):
    async def record(self, tool: str, tool_call_id: str | None, path: str, before: bytes | None,
                     after: bytes | None) -> Recorded:
        """A change edit or write made to `path` (absolute, real)."""
        ...

    async def intend(self, path: str, before: bytes | None, after: bytes | None) -> None:
        """`path` is about to go from `before` to `after` (None: absent): a process killed between
        the write and `record` leaves neither side "changed on disk"."""
        ...

    async def snapshot(self) -> Snapshot:
        """The tracked files as they are before a command runs."""
        ...

    async def record_command(self, tool_call_id: str | None, snapshot: Snapshot) -> list[str]:
        """Record what a command changed in the tracked files since `snapshot`; their paths."""
        ...


NO_APPROVAL = ("Not changed: {what} needs the user's approval and none can be given here; in print mode, "
               "rerun with --yes to allow edits in the working folder.")
OUTSIDE_REFUSED = ("Not changed: {path} is outside the working folder {folder}. Changes there are not made "
                   "without asking the user, and --yes does not allow them; ask the user to make this change, "
                   "or work inside the folder.")
GIT_REFUSED = ("Not changed: {path} is in git's own folder {git}, where git finds commands it runs by itself "
               "(hooks, core.fsmonitor in its config). A model's edit or write never changes anything there, even "
               "with edits allowed or --yes; tell the user what you wanted to change there and let them do it (they "
               "can allow one named file with writable_git_paths in config.toml).")
DECLINED = "The user declined this change to {path}; it was not made."
