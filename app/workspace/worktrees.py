"""A git worktree of its own for a run that can change files while another run goes (issue 39).

Made under the home, `<home>/worktrees/<session>/<run>-<pid>`, from the person's working state:
the files of the working folder as they are on disk (HEAD plus uncommitted changes, tracked and
untracked-not-ignored), copied byte for byte. A record beside it
(`<home>/worktrees/<session>/<run>-<pid>.json`) names the process that made it, so the next start
of treechat removes a worktree whose process is gone (kill -9, a power cut): `sweep_dead`.

A repository's config must never make treechat run a program. What git could run here, and why
it does not:

- hooks (post-checkout, reference-transaction): every call has `-c core.hooksPath=/dev/null`;
- an fsmonitor command: `-c core.fsmonitor=false`;
- clean/smudge filters and textconv (config-defined commands `-c` cannot switch off as a class):
  no git command we run converts a file. The worktree is added with `--no-checkout` and its
  index read from HEAD with `read-tree` (no `-u`: no file written, none hashed); the files are
  copied from the working folder by treechat; `git worktree remove --force` skips the status
  check (which would refresh the index, running clean filters). `git stash create`, `checkout`,
  `reset`, `status` and `archive` are never run: each may filter.
- a pager, an editor, credentials: nothing asks, no terminal (`GIT_TERMINAL_PROMPT=0`, the pager
  `cat`), and the caller's `GIT_*` variables (GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_*, …) are dropped.

Every call is bounded in time and in the bytes read back.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from treechat.agent.tools.git_dir import is_dot_git
from treechat.agent.tools.reach import inside
from treechat.export.whole_file import write_private
from treechat.prompts.context_files import repository_root

SAFE_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
GIT_TIMEOUT = 60.0  # seconds for one git call
OUTPUT_LIMIT = 64 * 1024 * 1024  # bytes read back from one git call (a file list)
MAX_FILES = 100_000  # files copied into a worktree
MAX_BYTES = 2 * 1024 * 1024 * 1024  # bytes copied into a worktree
RECORD_LIMIT = 64 * 1024


class WorktreeError(Exception):
    """Why no worktree could be made; the text is one line for the person."""


@dataclass(frozen=True)
class Worktree:
    path: str  # the worktree's root (a real path)
    checkout: str  # the repository root it stands for (a real path)
    record: str  # its record file
    cwd: str  # the folder in it standing for the one treechat runs in

    def to_checkout(self, path: str) -> str:
        """A path in the worktree as the same path in the checkout (another path as it is)."""
        if os.path.isabs(path) and inside(path, self.path):
            rel = os.path.relpath(path, self.path)
            return self.checkout if rel == "." else os.path.join(self.checkout, rel)
        return path

    def to_worktree(self, path: str) -> str:
        """A path in the checkout as the same path in the worktree (another path as it is)."""
        if os.path.isabs(path) and inside(path, self.checkout):
            rel = os.path.relpath(path, self.checkout)
            return self.path if rel == "." else os.path.join(self.path, rel)
        return path


def root_of(cwd: str) -> str | None:
    """The repository root of `cwd` (real path), None outside git. Read, never asked of git."""
    found = repository_root(Path(cwd).resolve())
    return str(found) if found is not None else None


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


def git(args: Sequence[str], cwd: str, *, timeout: float = GIT_TIMEOUT, limit: int = OUTPUT_LIMIT) -> bytes:
    """Run `git -C cwd <SAFE_CONFIG> args`; its stdout. WorktreeError (one line) when it fails,
    takes longer than `timeout` or says more than `limit` bytes."""
    command = ["git", "-C", cwd, *SAFE_CONFIG, *args]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=git_env(),
                              timeout=timeout, check=False)
    except FileNotFoundError:
        raise WorktreeError("git is not installed here") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} took over {timeout:g} s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise WorktreeError(f"git {args[0]} failed: {said[-1] if said else f'exit status {done.returncode}'}")
    if len(done.stdout) > limit:
        raise WorktreeError(f"git {args[0]} said more than {limit} bytes")
    return done.stdout


def _start_time(pid: int) -> str | None:
    """When process `pid` started (Linux: its start time in clock ticks), to tell a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[19].decode() if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    now = _start_time(pid)
    return started is None or now is None or now == started


def _safe_name(text: str) -> str:
    return "".join(c for c in text if c.isalnum() or c in "-_")[:80] or "x"


def folder_of(home: str | os.PathLike[str]) -> Path:
    return Path(home) / "worktrees"


def make_worktree(home: str | os.PathLike[str], session_id: str, run_id: str, cwd: str) -> Worktree:
    """A worktree of the repository of `cwd` holding the working folder's files as they are now;
    blocking. WorktreeError (one line) when none can be made (outside git, no commit yet, too
    many files, git failing); nothing is left behind then."""
    checkout = root_of(cwd)
    if checkout is None:
        raise WorktreeError(f"{cwd} is not in a git repository")
    parent = folder_of(home) / _safe_name(session_id)
    parent.mkdir(parents=True, exist_ok=True)
    name = f"{_safe_name(run_id)}-{os.getpid()}"
    path = os.path.join(os.path.realpath(parent), name)
    record = str(parent / f"{name}.json")
    # the record first: a kill from here on leaves something the next start finds
    write_private(Path(record), json.dumps({"v": 1, "pid": os.getpid(), "started": _start_time(os.getpid()),
                                            "repo": checkout, "path": path}).encode())
    real = os.path.realpath(cwd)
    rel = os.path.relpath(real, checkout) if inside(real, checkout) else "."
    tree = Worktree(path, checkout, record, os.path.normpath(os.path.join(path, rel)))
    try:
        files = listed_files(checkout)
        git(["worktree", "add", "--no-checkout", "--detach", path], checkout)
        git(["read-tree", "HEAD"], path)
        _copy(checkout, path, files)
    except BaseException as err:
        remove_worktree(tree)
        if isinstance(err, OSError):
            raise WorktreeError(f"the files could not be copied: {err.strerror or err}") from None
        if isinstance(err, WorktreeError) and "invalid reference" in str(err):
            raise WorktreeError("the repository has no commit yet") from None
        raise
    return tree


def listed_files(checkout: str) -> list[str]:
    """The working folder's files git knows or would (tracked, untracked and not ignored): of a
    checkout, or of a worktree (what a sub-agent changed there: bring_back.py)."""
    out = git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], checkout)
    seen: dict[str, None] = {}
    for raw in out.split(b"\0"):
        if not raw or raw.endswith(b"/"):
            continue  # an untracked repository inside: not ours to copy
        rel = os.fsdecode(raw)
        parts = rel.split("/")
        if os.path.isabs(rel) or any(p in ("", ".", "..") or is_dot_git(p) for p in parts):
            continue  # (git lists none such; a damaged index might)
        seen.setdefault(rel, None)
        if len(seen) > MAX_FILES:
            raise WorktreeError(f"the working folder has over {MAX_FILES} files, too many to copy into a worktree")
    return list(seen)


def _copy(checkout: str, path: str, files: Sequence[str]) -> None:
    """Each file as it is on disk (a link as a link, never followed; a deleted one left out)."""
    total = 0
    for rel in files:
        src, dst = os.path.join(checkout, rel), os.path.join(path, rel)
        try:
            st = os.lstat(src)
        except FileNotFoundError:
            continue  # deleted in the working folder: deleted in the worktree too
        folder = os.path.dirname(dst)
        os.makedirs(folder, exist_ok=True)
        if not inside(os.path.realpath(folder), path):
            continue  # a link copied earlier stands on its way: never written through
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISREG(st.st_mode):
            total += st.st_size
            if total > MAX_BYTES:
                raise WorktreeError(f"the working folder holds over {MAX_BYTES // 2**30} GB, too much to copy "
                                    "into a worktree")
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            try:
                with os.fdopen(fd, "rb", closefd=False) as f_in, open(dst, "xb") as f_out:
                    shutil.copyfileobj(f_in, f_out, 1024 * 1024)
            finally:
                os.close(fd)
            os.chmod(dst, stat.S_IMODE(st.st_mode))
        # a submodule's folder, a FIFO, a device: not copied


def remove_worktree(tree: Worktree) -> None:
    """The worktree gone, and git's note of it, then its record; blocking, never raises."""
    _remove(tree.path, tree.checkout, Path(tree.record))


def _remove(path: str, repo: str, record: Path) -> None:
    own = os.path.realpath(record.parent)
    if os.path.dirname(path) != own:
        return  # a record naming somewhere else (damaged, or not ours): nothing outside is touched
    if os.path.isdir(repo):
        try:
            git(["worktree", "remove", "--force", path], repo, timeout=30)
        except WorktreeError:
            pass  # the repository moved or broke: at least our folder goes
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)  # (rmtree never follows a link out)
    try:
        record.unlink()
    except OSError:
        pass
    try:
        record.parent.rmdir()  # the session's folder, when it was the last
    except OSError:
        pass


def sweep_dead(home: str | os.PathLike[str]) -> list[str]:
    """Remove every worktree whose process is gone (its record says which); the paths removed.
    Blocking; never raises; only what is under `<home>/worktrees` is removed."""
    removed: list[str] = []
    top = folder_of(home)
    try:
        sessions = list(top.iterdir())
    except OSError:
        return removed
    for session in sessions:
        if session.is_symlink() or not session.is_dir():
            continue
        try:
            records = [p for p in session.iterdir() if p.suffix == ".json"]
        except OSError:
            continue
        for record in records:
            try:
                with open(record, "rb") as f:
                    data = json.loads(f.read(RECORD_LIMIT))
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict):
                continue
            pid, path, repo = data.get("pid"), data.get("path"), data.get("repo")
            started = data.get("started")
            if not isinstance(pid, int) or not isinstance(path, str) or not isinstance(repo, str):
                continue
            if _alive(pid, started if isinstance(started, str) else None):
                continue
            _remove(path, repo, record)
            removed.append(path)
    return removed
