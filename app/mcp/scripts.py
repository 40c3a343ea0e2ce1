"""What a project's MCP server runs from the repository, and which repository it is.

Trusting `.mcp.json` is trusting what it runs. `node ./server.js` runs the repository's
server.js, so the answer must not outlive a change to it (a pull that rewrites it); nor may it
carry over to another repository cloned at the same path. Here are the facts the trust is bound
to (trust.py), found without running anything:

- the repository's files the command or an argument names: a path that resolves inside the
  repository (`./run.sh`, `server.js`, `.`: a folder's files), the module of `python -m pkg`, the
  program found on PATH when it is inside the repository (`node_modules/.bin`), and the manifest
  a runner reads (`npm start`: package.json; `uv run`: pyproject.toml; `make`: Makefile). A file
  is hashed (SHA-256); a path that does not exist yet counts as missing, so its arrival asks again.
  Bounded: MAX_FILE bytes of one file and MAX_TOTAL of all are hashed, MAX_FILES files of a
  folder are looked at (beyond: size and modification time); dot-folders, node_modules and
  __pycache__ are not walked. What a script imports from elsewhere is not followed.
- the repository: the device and inode of its root, of `.git` and of its config, the config's
  time (written when it was cloned), and the origin URL it names, read as text (bounded; git is
  never run). Another clone at the same path differs in these; so does a `git config` or
  `git remote` change, which is asked about again too.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .config import McpServerConfig, MissingVariable, expand

MAX_FILE = 8 * 1024 * 1024  # bytes of one file hashed
MAX_TOTAL = 32 * 1024 * 1024  # bytes hashed for one .mcp.json in all
MAX_FILES = 2000  # files of one folder looked at
MAX_DEPTH = 8
MAX_GIT_TEXT = 65536  # bytes of .git/config (or a worktree's .git file) read
SKIPPED = frozenset({"node_modules", "__pycache__"})
SCRIPT = re.compile(r"\.(?:js|mjs|cjs|ts|mts|py|sh|bash|rb|pl|php|lua|jar|exe|bin)$")
MANIFESTS = {"npm": "package.json", "npx": "package.json", "pnpm": "package.json", "yarn": "package.json",
             "bun": "package.json", "node": "package.json", "deno": "deno.json", "uv": "pyproject.toml",
             "uvx": "pyproject.toml", "poetry": "pyproject.toml", "pdm": "pyproject.toml", "hatch": "pyproject.toml",
             "make": "Makefile", "cargo": "Cargo.toml", "go": "go.mod"}


def repository_of(folder: Path) -> Path:
    """The nearest folder at or above `folder` holding `.git`; `folder` when there is none."""
    from treechat.prompts.context_files import repository_root

    return repository_root(folder) or folder


def repository_identity(root: Path) -> dict[str, object]:
    """Which repository this is, not only where: device and inode of the root and of `.git`, the
    inode and time of its config (written when it was cloned: a clone made after the folder's
    inodes were freed and reused has another), and the origin URL that config names."""
    found: dict[str, object] = {}
    git = root / ".git"
    config = git_config(git)
    for key, path in (("root", root), ("git", git), ("config", config)):
        try:
            info = os.lstat(path) if path is not None else None
        except OSError:
            info = None
        found[key] = [info.st_dev, info.st_ino, info.st_mtime_ns if key == "config" else 0] if info else None
    text = _read_text(config) if config is not None else None
    found["origin"] = origin_url(text or "")
    return found


def _read_text(path: Path) -> str | None:
    """A regular file's text, at most MAX_GIT_TEXT bytes (never a FIFO or a device); None when not."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return f.read(MAX_GIT_TEXT).decode("utf-8", "replace")
    except OSError:
        return None


def git_config(git: Path) -> Path | None:
    """The config file of the repository whose `.git` is `git`: a folder, or a worktree's file
    naming its folder (whose `commondir` names the main one), read as text."""
    folder = git
    if not os.path.isdir(git):
        lines = (_read_text(git) or "").splitlines()
        if not lines or not lines[0].startswith("gitdir:"):
            return None
        folder = git.parent / lines[0][len("gitdir:"):].strip()
        common = (_read_text(folder / "commondir") or "").strip().splitlines()
        if common:
            folder = folder / common[0]
    return folder / "config"


def origin_url(config: str) -> str:
    """`[remote "origin"] url = …` in a git config's text ("" when there is none)."""
    section = ""
    for line in config.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = " ".join(line.strip("[]").split())
        elif section == 'remote "origin"' and line.partition("=")[0].strip().lower() == "url":
            return line.partition("=")[2].strip()
    return ""


# ---------------------------------------------------------------- what a server runs


def _expanded(text: str, env: Mapping[str, str]) -> str:
    try:
        return expand(text, env, "a path")
    except MissingVariable:
        return text


def run_folder(config: McpServerConfig, cwd: str, env: Mapping[str, str]) -> Path:
    """The folder the server starts in (as McpServer starts it)."""
    return Path(cwd, _expanded(config.cwd, env)) if config.cwd else Path(cwd)


class Named(NamedTuple):
    path: Path
    maybe: bool  # a place that would be used if it were there (a manifest, `-m`'s pkg.py): said only when it is


def named_paths(config: McpServerConfig, cwd: str, env: Mapping[str, str]) -> list[Named]:
    """The paths the command and its arguments name (before looking whether they are the repository's)."""
    if config.command is None:
        return []
    folder = run_folder(config, cwd, env)
    words = [_expanded(w, env) for w in (config.command, *config.args)]
    found: list[Named] = []
    program = words[0]
    if "/" in program:
        found.append(Named(folder / program, False))
    else:
        on_path = shutil.which(program, path=env.get("PATH"))
        if on_path is not None:
            found.append(Named(Path(on_path), False))
        manifest = MANIFESTS.get(Path(program).name)
        if manifest is not None:
            found.append(Named(folder / manifest, True))
    after_m = False
    for word in words[1:]:
        if after_m:  # python -m pkg.mod: the package, or pkg.py
            top = word.split(".")[0]
            found += [Named(folder / top, True), Named(folder / (top + ".py"), True)]
        after_m = word == "-m"
        if not word or word.startswith("-"):
            continue
        path = folder / word
        if "/" in word or SCRIPT.search(word) or os.path.lexists(path):
            found.append(Named(path, False))
    return found


@dataclass
class Budget:
    """How many bytes may still be hashed for one .mcp.json."""

    left: int = MAX_TOTAL


@dataclass
class Fingerprint:
    """The repository's files a server runs, each by content: relative path -> what it is."""

    files: dict[str, str] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)  # what the question names

    def shown(self) -> list[str]:
        """The files and folders named, for the question (relative to the repository)."""
        return sorted(self.said)


def fingerprint(paths: list[Named], root: Path, budget: Budget) -> Fingerprint:
    """What each path inside the repository `root` holds now (paths outside it are not the
    repository's: they are left out)."""
    real_root = os.path.realpath(root)
    out = Fingerprint()
    for path, maybe in paths:
        real = os.path.realpath(path)
        if not _inside(real, real_root):
            continue
        name = os.path.relpath(real, real_root)
        if not os.path.lexists(real):
            if maybe or SCRIPT.search(name):
                out.files[name] = "missing"  # when it comes, what runs changes
                if not maybe:
                    out.said.add(f"{name} (not there yet)")
            continue
        out.said.add(name + ("/" if os.path.isdir(real) else ""))
        if os.path.isdir(real):
            out.files[name + "/"] = "folder"
            for inner, what in _folder(Path(real), real_root, budget):
                out.files[f"{name}/\0{inner}"] = what
        else:
            out.files[name] = _file(Path(real), budget)
    return out


def _inside(real: str, folder: str) -> bool:
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def _file(path: Path, budget: Budget) -> str:
    """"sha256:…" of a regular file (its first MAX_FILE bytes, with its size, when bigger),
    "size:…" once the budget is spent, or what else it is."""
    try:
        info = os.stat(path)
    except OSError as err:
        return f"unreadable:{err.errno}"
    if not stat.S_ISREG(info.st_mode):
        return "special"  # a FIFO or a device is not opened
    if budget.left <= 0:
        return f"size:{info.st_size}:{info.st_mtime_ns}"
    digest = hashlib.sha256()
    take = min(MAX_FILE, budget.left)
    try:
        with open(path, "rb") as f:
            while take > 0 and (chunk := f.read(min(take, 1 << 20))):
                digest.update(chunk)
                take -= len(chunk)
                budget.left -= len(chunk)
    except OSError as err:
        return f"unreadable:{err.errno}"
    whole = info.st_size <= MAX_FILE
    return f"sha256:{digest.hexdigest()}" + ("" if whole else f":size:{info.st_size}:{info.st_mtime_ns}")


def _folder(folder: Path, real_root: str, budget: Budget) -> Iterator[tuple[str, str]]:
    """(relative path, what it is) of the files under `folder`, in a fixed order, bounded."""
    count = 0
    stack: list[tuple[Path, int]] = [(folder, 0)]
    while stack and count < MAX_FILES:
        current, depth = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if count >= MAX_FILES:
                yield "…", f"more than {MAX_FILES} files"
                return
            count += 1
            rel = os.path.relpath(entry.path, folder)
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                inside = _inside(target, real_root) and os.path.isfile(target)
                yield rel, _file(Path(target), budget) if inside else f"link:{_link(entry.path)}"
            elif entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in SKIPPED and depth < MAX_DEPTH:
                    stack.append((Path(entry.path), depth + 1))
            else:
                yield rel, _file(Path(entry.path), budget)


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError as err:
        return f"unreadable:{err.errno}"
