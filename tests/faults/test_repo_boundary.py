"""The repository's machinery and the world outside the working folder are off limits (issue 36).

- A model's edit and write never write in git's own folders (`.git/config`, whose `core.fsmonitor`
  git runs on the next `git status`; `.git/hooks`), not with edits allowed for the session in the
  app, not under `-p --yes`; the real git binary shows nothing ran. Only a file the user names in
  config.toml's `writable_git_paths` is written there.
- A restore writes only inside the working folder, at the exact path: never through a folder
  swapped for a link, never to a path an imported session's checkpoint names outside (`/restore`,
  the offer after a move, `treechat restore`, `treechat files` say so in one line each).
- A restore (or an edit) killed with -9 at any point leaves no temporary file in the user's folder
  and no file falsely "changed on disk since treechat last wrote it" (a real child process,
  stopped where it says so on stdout, then killed).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from tests.tui.conftest import fake, make_app, path_texts, screen_text, type_text, wait_for  # noqa: F401  (fixtures)
from tests.tui.questions import answer as answer_question
from tests.tui.questions import asking as asked
from treechat.agent.tools.base import ToolResult
from treechat.agent.tools.changes import ProposedChange
from treechat.agent.tools.edit import WriteArgs, WriteTool
from treechat.agent.tools.file_write import FileProblem, replace_file
from treechat.agent.tools.workfolder import Boundary
from treechat.cli.main import build_parser, cmd_print
from treechat.widgets.question import gate as question_gate
from treechat.workspace.blobs import digest, pack

from .helpers import env, treechat_here

ARM = 0.2


def call(call_id: str, name: str, **args: object) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


# ---------------------------------------------------------------- a real repository and the real git


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real git in `repo`, with no system or user configuration (only the repository's own)."""
    isolated = {**os.environ, "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=isolated, capture_output=True, text=True, timeout=60)


def make_repo(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    assert git(repo, "init", "-q").returncode == 0
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")  # the user's own hook: executable, so an edit keeping its mode would run
    hook.chmod(0o755)


def attacks(repo: Path) -> tuple[str, str, str]:
    """(the config the model writes, the hook's old text, its new one): each makes git touch a marker."""
    config = f'[core]\n\tfsmonitor = "touch {repo.parent / "PWNED-fsmonitor"}; false"\n'
    return config, "exit 0\n", f"touch {repo.parent / 'PWNED-hook'}\nexit 0\n"


def git_ran_nothing(repo: Path) -> None:
    """`git status` and `git commit` in the repository: neither the fsmonitor command nor a hook ran."""
    git(repo, "status")
    git(repo, "commit", "-q", "--allow-empty", "-m", "after the model")
    assert not (repo.parent / "PWNED-fsmonitor").exists() and not (repo.parent / "PWNED-hook").exists()


def test_the_attack_is_real_when_the_file_is_written(tmp_path):
    """The control: the same files written by hand make git run both commands here (so the tests
    below that see no marker prove a refusal, not a git that ignores them)."""
    repo = tmp_path / "work"
    make_repo(repo)
    config, old, new = attacks(repo)
    with open(repo / ".git" / "config", "a") as f:
        f.write(config)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(hook.read_text().replace(old, new))
    git(repo, "status")
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert (tmp_path / "PWNED-fsmonitor").exists() and (tmp_path / "PWNED-hook").exists()


# ---------------------------------------------------------------- -p --yes


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    work = tmp_path / "work"
    make_repo(work)
    monkeypatch.chdir(work)
    return work


def run_print(monkeypatch, capsys, home: Path, *argv: str, script) -> tuple[int, str]:
    async def go() -> int:
        async with FakeProvider() as provider:
            monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "k")
            script(provider)
            return await cmd_print(build_parser().parse_args(["--home", str(home), "--model", "openai/gpt-4.1", *argv]))

    code = asyncio.run(go())
    _, err = capsys.readouterr()
    return code, err


def git_writes(provider: FakeProvider, repo: Path) -> None:
    """The model's tries: config and hooks, by every road (case, a link, `..`, a subfolder's own `.git`,
    a HEAD that would make a folder a repository, the `.git` file itself)."""
    config, old, new = attacks(repo)
    (repo / "gl").symlink_to(".git")
    tries = [call("c1", "write", path=".git/config", content=config),
             call("c2", "edit", path=".git/hooks/pre-commit", edits=[{"oldText": old, "newText": new}]),
             call("c3", "write", path=".git/hooks/post-checkout", content=f"#!/bin/sh\n{new}"),
             call("c4", "write", path=".GIT/config", content=config),
             call("c5", "write", path="gl/config", content=config),
             call("c6", "write", path="docs/../.git/info/attributes", content="* filter=x\n"),
             call("c7", "write", path="vendor/lib/.git/config", content=config),
             call("c8", "write", path="bare/HEAD", content="ref: refs/heads/main\n"),
             call("c9", "write", path=str(repo / ".git"), content="gitdir: /tmp\n")]
    for one in tries:
        provider.script_openai(tool_calls=[one])
    provider.script_openai(["done"])


def test_print_mode_with_yes_never_writes_git_s_own_folder(repo, monkeypatch, capsys):
    before = (repo / ".git" / "config").read_text()
    code, err = run_print(monkeypatch, capsys, repo.parent / "home", "-p", "set up git", "--tools", "write,edit",
                          "--yes", script=lambda provider: git_writes(provider, repo))
    assert code == 0, err
    assert err.count("is in git's own folder") == 9, err
    assert "writable_git_paths" in err  # the model is told how the user may allow one file
    assert (repo / ".git" / "config").read_text() == before
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (repo / ".git" / "hooks" / "post-checkout").exists() and not (repo / "vendor").exists()
    assert not (repo / "bare").exists() and not (repo / ".git" / "info" / "attributes").exists()
    git_ran_nothing(repo)


def test_a_file_named_in_writable_git_paths_is_written_and_nothing_else(repo, monkeypatch, capsys):
    home = repo.parent / "home"
    home.mkdir()
    (home / "config.toml").write_text('writable_git_paths = [".git/info/exclude"]\n')
    config, _, _ = attacks(repo)

    def script(provider):
        provider.script_openai(tool_calls=[call("c1", "write", path=".git/info/exclude", content="*.log\n")])
        provider.script_openai(tool_calls=[call("c2", "write", path=".git/config", content=config)])
        provider.script_openai(["done"])

    code, err = run_print(monkeypatch, capsys, home, "-p", "ignore logs", "--tools", "write", "--yes", script=script)
    assert code == 0, err
    assert (repo / ".git" / "info" / "exclude").read_text() == "*.log\n"
    assert err.count("is in git's own folder") == 1 and "config" in err
    (repo / "x.log").write_text("noise\n")
    assert "x.log" not in git(repo, "status", "--porcelain").stdout  # git reads what the user allowed
    git_ran_nothing(repo)


async def no_updates(partial: ToolResult) -> None:
    pass


async def approve_all(change: ProposedChange) -> bool:
    return True  # a person saying yes to everything, outside the folder too


async def test_where_a_git_file_points_is_git_s_own_folder_too(tmp_path):
    """A worktree's and a `--separate-git-dir` repository's `.git` is a file: the folder it names
    (outside the working folder, under any name) is refused even with every change approved, and
    so is a folder a `.git` file names before git made it."""
    main, tree, sep, plain = tmp_path / "main", tmp_path / "tree", tmp_path / "sep", tmp_path / "plain"
    make_repo(main)
    git(main, "commit", "-q", "--allow-empty", "-m", "first")
    assert git(main, "worktree", "add", "-q", str(tree)).returncode == 0
    plain.mkdir()
    assert git(plain, "init", "-q", f"--separate-git-dir={sep}").returncode == 0
    (tmp_path / "later").mkdir()
    (tmp_path / "later" / ".git").write_text("gitdir: build/gd\n")
    config, _, _ = attacks(main)
    tries = [(tree, str(main / ".git" / "config")), (tree, str(main / ".git" / "worktrees" / "tree" / "config")),
             (plain, str(sep / "config")), (plain, str(sep / "hooks" / "post-checkout")),
             (tmp_path / "later", "build/gd/config")]
    for cwd, path in tries:
        tool = WriteTool(cwd, approve_all)
        result = await tool.execute("c", WriteArgs(path=path, content=config), None, no_updates)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        assert result.is_error and "is in git's own folder" in text, (path, result)
    assert "fsmonitor" not in (sep / "config").read_text() and not (tmp_path / "later" / "build").exists()
    git_ran_nothing(tree)
    git_ran_nothing(plain)


@pytest.mark.parametrize(("value", "says"), [
    ('".git/info/exclude"', 'writable_git_paths must be a list of files, e.g. [".git/info/exclude"]'),
    ('[".git/hooks/"]', "writable_git_paths '.git/hooks/' is a folder: name each file"),
    ('[""]', "writable_git_paths '' is not a path"),
])
def test_writable_git_paths_is_checked_like_every_key(tmp_path, value, says):
    (tmp_path / "config.toml").write_text(f"writable_git_paths = {value}\n")
    done = treechat_here("--home", str(tmp_path), "doctor")
    assert f"line 1: {says}" in done.stdout + done.stderr, done


# ---------------------------------------------------------------- the app, edits allowed for the session


@pytest.fixture(autouse=True)
def quick_guard(monkeypatch):
    monkeypatch.setattr(question_gate, "ARM_DELAY", ARM)


async def answer(pilot, key: str) -> None:
    await answer_question(pilot, pilot.app, key)


def asking(app, words: str) -> bool:
    return asked(app, words) is not None


async def test_allowing_edits_for_the_session_does_not_reach_git_s_own_folder(make_app, fake, tmp_path):  # noqa: F811
    make_repo(tmp_path)  # the app's folder is the repository
    config, old, new = attacks(tmp_path)
    before = (tmp_path / ".git" / "config").read_text()
    fake.script_openai(tool_calls=[call("c1", "write", path="in.txt", content="a\n")])
    fake.script_openai(tool_calls=[call("c2", "write", path=".git/config", content=config)])
    fake.script_openai(tool_calls=[call("c3", "edit", path=".git/hooks/pre-commit",
                                        edits=[{"oldText": old, "newText": new}])])
    fake.script_openai(["done"])
    async with make_app(tools=["edit", "write"]) as (app, pilot):
        await type_text(pilot, "set things up")
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "Create in.txt"), what="the first dialog")
        await answer(pilot, "a")  # allow edits for this session
        # no question for the next two: refused before anything is asked (a dialog would hold the run here)
        await wait_for(pilot, lambda: len(fake.requests) == 4 and not app.chat.is_running, what="the run")
        results = [text for role, text in await path_texts(app) if role == "toolResult"]
    assert results[0].startswith("Successfully wrote")
    assert all("is in git's own folder" in r and "even with edits allowed" in r for r in results[1:]), results
    assert (tmp_path / ".git" / "config").read_text() == before
    git_ran_nothing(tmp_path)


# ---------------------------------------------------------------- restores: a folder swapped for a link


def first_session(monkeypatch, capsys, home: Path, script) -> str:
    code, err = run_print(monkeypatch, capsys, home, "-p", "go", "--tools", "write,edit", "--yes", script=script)
    assert code == 0, err
    found = re.search(r"session (\S+) \(continue", err)
    assert found, err
    return found.group(1)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    done = treechat_here(*argv)
    return done.returncode, done.stdout, done.stderr


def test_a_restore_never_writes_through_a_folder_swapped_for_a_link(repo, monkeypatch, capsys, tmp_path):
    home = tmp_path / "home"

    def script(provider):
        provider.script_openai(tool_calls=[call("c1", "write", path="sub/notes.txt", content="one\n")])
        provider.script_openai(["done"])

    sid = first_session(monkeypatch, capsys, home, script)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("one\n")  # what a removal would take, through the link
    (repo / "sub" / "notes.txt").rename(repo / "kept.txt")
    (repo / "sub").rmdir()
    (repo / "sub").symlink_to(outside)  # shown as the inside path `sub/notes.txt`
    for to in ("root", "leaf"):
        code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--to", to, "--yes")
        assert code == 1 and "Traceback" not in err, err
        assert f"treechat: refused sub/notes.txt: a folder on its way is a symbolic link now (to {outside / 'notes.txt'})" \
            in err, err
        assert (outside / "notes.txt").read_text() == "one\n"
    code, out, _ = cli(capsys, "--home", str(home), "files", sid)
    assert code == 0 and "never restored: a folder on its way is a symbolic link now" in out


def test_a_folder_swapped_between_the_plan_and_the_write_stops_the_write(tmp_path):
    """The swap after every check: the folders are opened without following a link, so the write
    fails there instead of landing outside."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    target = str(work / "sub" / "notes.txt")
    assert Boundary.of(work).restore_refusal(target) is None  # checked: fine
    (work / "sub").rmdir()
    (work / "sub").symlink_to(outside)  # then swapped
    with pytest.raises(FileProblem, match="symbolic link"):
        replace_file(target, b"x\n", make_parents=True)
    assert list(outside.iterdir()) == []
    (work / "sub").unlink()
    (work / "sub").mkdir()
    (work / "sub" / "HEAD").write_text("ref: refs/heads/main\n")  # or made a repository's folder meanwhile
    (work / "sub" / "objects").mkdir()
    (work / "sub" / "refs").mkdir()
    with pytest.raises(FileProblem, match="git's own folder"):
        replace_file(str(work / "sub" / "config"), b"[core]\n", make_parents=True)
    assert not (work / "sub" / "config").exists()


# ---------------------------------------------------------------- restores: an imported session's paths


def hostile_session(path: Path, files: dict[str, bytes]) -> None:
    """A Pi JSONL session whose one checkpoint says treechat wrote `files` (absolute paths)."""
    changes = [{"path": p, "before": None, "after": digest(data), "size": len(data)} for p, data in files.items()]
    entries = [
        {"type": "session", "version": 3, "id": "hostile-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "set up my shell", "timestamp": 1767225601000}},
        {"type": "custom", "id": "cp1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
         "customType": "treechat.files", "data": {
             "v": 1, "tool": "write", "toolCallId": "c1", "encoding": "zlib+base64", "files": changes,
             "blobs": {digest(data): pack(data) for data in files.values()}}},
        {"type": "message", "id": "a1", "parentId": "cp1", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}], "api": "", "provider": "",
                     "model": "", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                                     "total": 0}},
                     "stopReason": "stop", "timestamp": 1767225603000}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


ALIASES = b"alias ls='echo pwned'\n"


def hostile_files(work: Path, user_home: Path) -> dict[str, bytes]:
    return {str(user_home / ".bash_aliases"): ALIASES,  # outside
            str(work / ".." / "escape.txt"): b"x\n",  # not normalized: outside too
            "relative.txt": b"x\n",  # not an absolute path
            str(work / ".git" / "hooks" / "post-checkout"): b"#!/bin/sh\ntouch PWNED\n",  # git's own
            str(work / "notes.txt"): b"inside\n"}  # the one a restore may write


def test_treechat_restore_refuses_an_imported_session_s_paths_outside(repo, capsys, tmp_path):
    home, user_home = tmp_path / "home", tmp_path / "me"
    user_home.mkdir()
    hostile_session(tmp_path / "hostile.jsonl", hostile_files(repo, user_home))
    code, _, err = cli(capsys, "--home", str(home), "import", str(tmp_path / "hostile.jsonl"))
    assert code == 0, err
    code, out, err = cli(capsys, "--home", str(home), "files", "hostile-1")
    assert code == 0, err
    assert f"{user_home / '.bash_aliases'}  (1 change; never restored: it is outside the working folder {repo})" in out
    assert f".git/hooks/post-checkout  (1 change; never restored: it is in git's own folder {repo / '.git'})" in out
    assert "relative.txt  (1 change; never restored: it is not an absolute, normalized path)" in out
    code, out, err = cli(capsys, "--home", str(home), "restore", "hostile-1", "--to", "leaf", "--yes")
    assert code == 1 and "Traceback" not in err
    refused = [line for line in err.splitlines() if line.startswith("treechat: refused ")]
    assert len(refused) == 4 and all(line.endswith("; a restore never writes it") for line in refused), err
    assert f"treechat: refused {user_home / '.bash_aliases'}: it is outside the working folder {repo}" in err
    assert "restored notes.txt" in out and (repo / "notes.txt").read_text() == "inside\n"  # the rest proceeds
    assert list(user_home.iterdir()) == [] and not (tmp_path / "escape.txt").exists()
    assert not (repo / ".git" / "hooks" / "post-checkout").exists() and not (repo / "relative.txt").exists()
    # the undo touches only what the restore wrote
    code, out, err = cli(capsys, "--home", str(home), "restore", "hostile-1", "--undo")
    assert code == 0 and not (repo / "notes.txt").exists() and list(user_home.iterdir()) == [], err


@pytest.mark.slow  # the real App
async def test_the_app_names_an_imported_session_s_paths_outside_and_never_writes_them(make_app, fake, tmp_path):  # noqa: F811
    user_home = tmp_path.parent / f"{tmp_path.name}-me"
    user_home.mkdir()
    hostile_session(tmp_path / "hostile.jsonl", hostile_files(tmp_path, user_home))
    make_repo(tmp_path)
    imported = await asyncio.to_thread(treechat_here, "--home", str(tmp_path), "import", str(tmp_path / "hostile.jsonl"))
    assert imported.returncode == 0, imported.stderr
    async with make_app(session_id="hostile-1") as (app, pilot):
        await app.chat.choose("u1")  # before the checkpoint, then back: the offer after a move
        await app.chat.back()
        await wait_for(pilot, lambda: asking(app, "Restore 1 file to this point?"), what="the offer")
        assert "Never written:" in screen_text(app) and ".bash_aliases" in screen_text(app)
        notices = [n.message for n in app._notifications]
        assert any("name files a restore never writes" in n and str(user_home / ".bash_aliases") in n
                   for n in notices), notices
        await answer(pilot, "y")
        await wait_for(pilot, lambda: (tmp_path / "notes.txt").exists(), what="the inside file")
        # /restore says it again, in the same words, and still writes nothing outside
        assert await app.run_slash("restore", "")
        banner = app.query_one("#banner")
        await wait_for(pilot, lambda: "Never written:" in banner.text, what="/restore's line")
        assert f"{user_home / '.bash_aliases'} (it is outside the working folder {tmp_path})" in banner.text
        assert await app.run_slash("restore", "--undo")
        await wait_for(pilot, lambda: not (tmp_path / "notes.txt").exists(), what="the undo")
    assert list(user_home.iterdir()) == [] and not (tmp_path / ".git" / "hooks" / "post-checkout").exists()


def test_a_command_is_not_watched_in_a_file_a_restore_never_writes(repo, monkeypatch, capsys, tmp_path):
    """bash records what it changed in the tracked files, but never takes in one an imported
    session names outside the folder (its content would go into the session and its exports)."""
    home, user_home = tmp_path / "home", tmp_path / "me"
    user_home.mkdir()
    hostile_session(tmp_path / "hostile.jsonl", hostile_files(repo, user_home))
    assert cli(capsys, "--home", str(home), "import", str(tmp_path / "hostile.jsonl"))[0] == 0
    (user_home / ".bash_aliases").write_bytes(ALIASES)
    (repo / "notes.txt").write_text("inside\n")
    command = f"echo secret >> {user_home / '.bash_aliases'}; echo more >> notes.txt"

    def script(provider):
        provider.script_openai(tool_calls=[call("c1", "bash", command=command)])
        provider.script_openai(["done"])

    code, err = run_print(monkeypatch, capsys, home, "--session", "hostile-1", "-p", "go", "--tools", "bash", "--yes",
                          script=script)
    assert code == 0, err
    code, out, _ = cli(capsys, "--home", str(home), "files", "hostile-1", "--json")
    changes = {f["path"]: [c["tool"] for c in f["changes"]] for f in json.loads(out)["files"]}
    assert changes[str(repo / "notes.txt")] == ["write", "bash"]
    assert changes[str(user_home / ".bash_aliases")] == ["write"]  # not watched: nothing of it recorded


# ---------------------------------------------------------------- kill -9 in the middle


STOPPER = r"""
import os, sys
what, name, nth = sys.argv[1].split(":")
if os.environ.get("NO_TMPFILE"):
    del os.O_TMPFILE  # as a file system without it: the temporary file has a name all along
real = getattr(os, what)
left = [int(nth)]

def stop(src, dst, *args, **kwargs):
    base = os.path.basename(os.fsdecode(dst))
    if base == name or base.startswith(f".{name}.treechat-"):
        left[0] -= 1
        if left[0] == 0:
            os.write(1, b"\nSTOPPED\n")
            open(os.environ["STOP_FIFO"]).close()  # a FIFO nobody opens for writing: killed while it waits
    return real(src, dst, *args, **kwargs)

setattr(os, what, stop)
from treechat.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def stop_fifo(folder: Path) -> dict[str, str]:
    """The FIFO a stopped child waits on (nobody ever writes it), as the child's environment."""
    fifo = folder / "stop.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return {"STOP_FIFO": str(fifo)}


def killed_at(stop: str, home: Path, *argv: str, no_tmpfile: bool = False) -> None:
    """Run `treechat --home HOME ARGV` in a child that stops at `stop` ("replace:NAME:N", the Nth rename onto
    NAME; "link:NAME:1", naming NAME's unnamed file), and kill -9 it there."""
    child = subprocess.Popen([sys.executable, "-c", STOPPER, stop, "--home", str(home), *argv],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**env(), **stop_fifo(home.parent),
                                  **({"NO_TMPFILE": "1"} if no_tmpfile else {})})
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        if line.strip() == b"STOPPED":
            break
    else:
        child.wait(timeout=60)
        raise AssertionError(f"never stopped at {stop}: {b''.join(lines)!r} {child.stderr.read()!r}")  # type: ignore[union-attr]
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".treechat-" in p.name)


@pytest.fixture
def two_versions(repo, monkeypatch, capsys, tmp_path) -> tuple[Path, str, str]:
    """(home, session, the entry before the edit): notes.txt written "one", then edited to "two"."""
    home = tmp_path / "home"

    def script(provider):
        provider.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="one\n")])
        provider.script_openai(tool_calls=[call("c2", "edit", path="notes.txt", edits=[{"oldText": "one", "newText": "two"}])])
        provider.script_openai(["done"])

    sid = first_session(monkeypatch, capsys, home, script)
    code, out, _ = cli(capsys, "--home", str(home), "files", sid, "--json")
    assert code == 0
    before_edit = json.loads(out)["files"][0]["changes"][1]["parentId"]
    return home, sid, before_edit


@pytest.mark.parametrize(("stop", "no_tmpfile", "on_disk"), [
    ("replace:.json:1", False, "two\n"),  # the undo record saved, nothing else
    ("link:notes.txt:1", False, "two\n"),  # the new content written, unnamed
    ("replace:notes.txt:1", False, "two\n"),  # named, not yet renamed over the file
    ("replace:notes.txt:1", True, "two\n"),  # no O_TMPFILE: named all along
    ("replace:written.json:2", False, "one\n"),  # the file replaced, not yet said to be
])
@pytest.mark.slow  # kill -9 at every step
def test_a_restore_killed_with_9_leaves_no_temporary_file_and_no_false_change(repo, two_versions, capsys, stop,
                                                                             no_tmpfile, on_disk):
    home, sid, before_edit = two_versions
    if stop.startswith("replace:.json"):
        stop = f"replace:{sid}.json:1"
    killed_at(stop, home, "restore", sid, "--to", before_edit, "--yes", no_tmpfile=no_tmpfile)
    assert (repo / "notes.txt").read_text() == on_disk  # the old file or the new one, whole
    if stop.startswith("link") or stop.endswith(".json:1"):
        assert leftovers(repo) == []  # killed while the new content had no name: nothing at all
    code, out, err = cli(capsys, "--home", str(home), "files", sid)  # the next run
    assert code == 0 and leftovers(repo) == [], (out, err)
    # neither side is "changed": the killed restore can be undone (a file it had not reached yet is
    # as the undo expects it too), done again, and undone
    code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--undo")
    assert "changed" not in err and (code == 0 or "no restore to undo" in err), (out, err)
    assert (repo / "notes.txt").read_text() == "two\n"
    code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--to", before_edit, "--yes")
    assert code == 0 and "changed on disk" not in out + err, (out, err)
    assert (repo / "notes.txt").read_text() == "one\n"
    code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--to", "leaf", "--yes")
    assert code == 0 and (repo / "notes.txt").read_text() == "two\n", (out, err)
    assert leftovers(repo) == []


@pytest.mark.parametrize(("stop", "finished"), [("replace:notes.txt:1", False),  # named, not yet renamed
                                               ("replace:written.json:2", True)])  # undone, not yet said so
def test_an_undo_killed_with_9_leaves_no_temporary_file_and_no_false_change(repo, two_versions, capsys, stop, finished):
    home, sid, before_edit = two_versions
    code, _, err = cli(capsys, "--home", str(home), "restore", sid, "--to", before_edit, "--yes")
    assert code == 0 and (repo / "notes.txt").read_text() == "one\n", err
    killed_at(stop, home, "restore", sid, "--undo")
    assert (repo / "notes.txt").read_text() == ("two\n" if finished else "one\n")
    code, out, err = cli(capsys, "--home", str(home), "files", sid)
    assert code == 0 and leftovers(repo) == [], (out, err)
    code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--undo")
    if finished:  # the record of the restore went with the undo (what it wrote is not "changed" either)
        assert code == 1 and err == "treechat: no restore to undo in this session\n", err
    else:
        assert code == 0 and "changed since" not in err, (out, err)
    assert (repo / "notes.txt").read_text() == "two\n" and leftovers(repo) == []
    code, out, err = cli(capsys, "--home", str(home), "restore", sid, "--to", before_edit, "--yes")
    assert code == 0 and "changed on disk" not in out + err, (out, err)


@pytest.mark.parametrize(("stop", "on_disk"), [("replace:notes.txt:1", "two\n"), ("replace:written.json:2", "three\n")])
@pytest.mark.slow  # kill -9 at every step
async def test_an_edit_killed_with_9_leaves_no_temporary_file_and_no_false_change(repo, two_versions, capsys, stop,
                                                                                on_disk):
    home, sid, before_edit = two_versions
    async with FakeProvider() as provider:
        provider.script_openai(tool_calls=[call("c3", "edit", path="notes.txt",
                                                edits=[{"oldText": "two", "newText": "three"}])])
        provider.script_openai(["done"])
        child_env = {**env(), **stop_fifo(home.parent), "OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "k"}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", STOPPER, stop, "--home", str(home), "--model", "openai/gpt-4.1", "--session", sid,
            "-p", "again", "--tools", "edit", "--yes", cwd=repo, env=child_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert child.stdout is not None
        async with asyncio.timeout(60):
            while (line := await child.stdout.readline()) and line.strip() != b"STOPPED":
                pass
        assert line.strip() == b"STOPPED", await child.stderr.read()  # type: ignore[union-attr]
        child.kill()
        assert await child.wait() == -signal.SIGKILL
    assert (repo / "notes.txt").read_text() == on_disk
    code, out, err = await asyncio.to_thread(cli, capsys, "--home", str(home), "files", sid)
    assert code == 0 and leftovers(repo) == [], (out, err)
    code, out, err = await asyncio.to_thread(cli, capsys, "--home", str(home), "restore", sid, "--to", before_edit,
                                             "--yes")
    assert code == 0 and "changed on disk" not in out + err, (out, err)
    assert (repo / "notes.txt").read_text() == "one\n"
