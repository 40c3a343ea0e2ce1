"""A repository's config runs nothing when treechat makes, fills and removes a run's git worktree
(issue 39): hooks (also under a repository's own core.hooksPath), an fsmonitor command, clean and
smudge filters and a textconv, each of which would leave a marker file, with the real git binary."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from treechat.workspace.worktrees import make_worktree, remove_worktree, sweep_dead


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "core.hooksPath=/dev/null", *args], check=True, capture_output=True, text=True).stdout


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, marks = tmp_path / "work", tmp_path / "marks"
    repo.mkdir()
    marks.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (repo / "notes.txt").write_text("base\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")

    def command(name: str, tail: str = "") -> str:
        return f"sh -c 'touch {marks}/{name}; {tail}'" if tail else f"touch {marks}/{name}"

    git(repo, "config", "filter.evil.smudge", command("smudge", "cat"))
    git(repo, "config", "filter.evil.clean", command("clean", "cat"))
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "diff.evil.textconv", command("textconv", "cat"))
    monitor = repo / ".git" / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marks}/fsmonitor\n")
    monitor.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(monitor))
    hooks = [repo / ".git" / "hooks", repo / ".git" / "own-hooks"]
    for folder in hooks:
        folder.mkdir(exist_ok=True)
        for hook in ("post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"):
            script = folder / hook
            script.write_text(f"#!/bin/sh\ntouch {marks}/{hook}-{folder.name}\n")
            script.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks[1]))
    (repo / "notes.txt").write_text("changed\n")  # a working state that differs from HEAD
    (repo / "new.txt").write_text("untracked\n")
    return repo, marks


def test_making_filling_and_removing_a_worktree_runs_none_of_a_repositorys_commands(tmp_path: Path) -> None:
    repo, marks = hostile_repo(tmp_path)
    home = tmp_path / "home"
    tree = make_worktree(home, "S1", "r2", str(repo))
    made = Path(tree.path)
    assert (made / "notes.txt").read_text() == "changed\n" and (made / "new.txt").read_text() == "untracked\n"
    remove_worktree(tree)
    assert not made.exists()
    assert sorted(os.listdir(marks)) == []


def test_the_sweep_after_a_kill_runs_none_of_a_repositorys_commands(tmp_path: Path) -> None:
    repo, marks = hostile_repo(tmp_path)
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom treechat.workspace.worktrees import make_worktree\n"
         f"t = make_worktree({str(home)!r}, 'S1', 'r2', {str(repo)!r})\nprint(t.path, flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    made = Path(child.stdout.readline().strip())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert sweep_dead(home) == [str(made)] and not made.exists()
    assert sorted(os.listdir(marks)) == []


def test_a_record_naming_a_folder_outside_the_homes_worktrees_removes_nothing(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    record = tmp_path / "home" / "worktrees" / "S1" / "r2-1.json"
    record.parent.mkdir(parents=True)
    record.write_text(f'{{"v": 1, "pid": 999999999, "repo": "{tmp_path}", "path": "{victim}"}}')
    sweep_dead(tmp_path / "home")
    assert (victim / "keep.txt").read_text() == "keep\n"


def test_bringing_a_sub_agents_changes_back_runs_none_of_a_repositorys_commands(tmp_path: Path) -> None:
    """A sub-agent's worktree is listed again when it ends (workspace/bring_back.py): in the
    worktree, with the repository's config shared, still nothing runs."""
    from treechat.agent.tools.workfolder import Boundary
    from treechat.workspace.bring_back import bring_back, start_of

    repo, marks = hostile_repo(tmp_path)
    tree = make_worktree(tmp_path / "home", "S1", "task-t2", str(repo))
    start = start_of(tree)
    (Path(tree.path) / "notes.txt").write_text("the sub-agent's\n")
    (Path(tree.path) / "added.txt").write_text("added\n")
    back = bring_back(tree, start, Boundary.of(str(repo)))
    remove_worktree(tree)
    assert sorted(b.shown for b in back.came_in) == ["added.txt", "notes.txt"]
    assert (repo / "notes.txt").read_text() == "the sub-agent's\n" and (repo / "added.txt").read_text() == "added\n"
    assert sorted(os.listdir(marks)) == []
