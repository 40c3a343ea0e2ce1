"""Whether a project's `.mcp.json` servers may start: what the question shows, what the answer is
bound to, and the answer kept in state.json per file.

The question shows every server whole (`describe`): its command and each argument, its folder,
every env variable and header as written, its URL, and each `${NAME}` they read from the
person's environment, named ("reads your OPENAI_API_KEY"; the value is never shown).

The answer holds for exactly what was shown and what it runs (`binding`): the servers as the file
writes them (before `${NAME}` is filled in), the content of the repository's scripts a command
or an argument names (scripts.py), and the repository itself (its root's and `.git`'s identity and
its origin URL). A changed file, script or argument, or another repository cloned at the same
path, is asked about again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from treechat.config.state import StateFile

from .config import ProjectServers, ServerSpec
from .scripts import Budget, fingerprint, named_paths, repository_identity, repository_of, run_folder

TrustAnswer = Literal["trusted", "refused"]
KEY = "mcp_project_trust"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# ---------------------------------------------------------------- what the answer is bound to


def binding(found: ProjectServers, cwd: str, env: Mapping[str, str] | None = None) -> str:
    """A digest of everything the answer is given for (see the module's words)."""
    env = os.environ if env is None else env
    root = repository_of(found.path.parent)
    budget = Budget()
    files = {spec.name: fingerprint(named_paths(spec.config, cwd, env), root, budget).files
             for spec in found.servers if spec.config.kind == "stdio"}
    facts = {"declared": found.digest, "files": files, "repository": repository_identity(root)}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def remembered_trust(home: str | os.PathLike[str], found: ProjectServers, bound: str) -> TrustAnswer | None:
    """The answer given for this file, if it was given for exactly `bound` (`binding`)."""
    entries = StateFile(home).read().get(KEY)
    entry = entries.get(str(found.path)) if isinstance(entries, dict) else None
    if not isinstance(entry, dict) or entry.get("digest") != bound:
        return None
    answer = entry.get("answer")
    return answer if answer in ("trusted", "refused") else None


def remember_trust(home: str | os.PathLike[str], found: ProjectServers, bound: str, answer: TrustAnswer) -> bool:
    state = StateFile(home)
    entries = state.read().get(KEY)
    kept = dict(entries) if isinstance(entries, dict) else {}
    kept[str(found.path)] = {"digest": bound, "answer": answer}
    return state.update(**{KEY: kept})


# ---------------------------------------------------------------- what the question shows


def describe(found: ProjectServers, cwd: str, env: Mapping[str, str] | None = None) -> str:
    """The trust question's body: every server whole, what it reads of the person's environment,
    the repository's files it runs; then what the answer holds for."""
    env = os.environ if env is None else env
    lines = [f"{found.path} asks to run these MCP servers (their tools will ask before each call):", ""]
    root = repository_of(found.path.parent)
    for spec in found.servers:
        lines += server_lines(spec, cwd, env, root)
        lines.append("")
    if found.problems:
        lines += ["Not started (the file has problems):", *(f"  {p}" for p in found.problems), ""]
    lines += ["The answer holds for exactly these commands, arguments, variables and headers, the repository's files "
              "they run as they are now, and this repository: any change is asked about again.",
              "Start them only if you trust this project."]
    return "\n".join(lines)


def server_lines(spec: ServerSpec, cwd: str, env: Mapping[str, str], root: Path) -> list[str]:
    c = spec.config
    places: list[tuple[str, str]] = []  # (where, the text as written): what may read the environment
    if c.kind == "http":
        lines = [f"{spec.name}: an HTTP server", f"  url: {_value(str(c.url))}"]
        lines += [f"  header {_value(k)}: {_value(v)}" for k, v in c.headers.items()]
        places += [("the url", str(c.url)), *((f"header {k}", v) for k, v in c.headers.items())]
        return lines + _reads(places)
    command = str(c.command)
    lines = [f"{spec.name}: a program", f"  runs: {' '.join(_word(w) for w in (command, *c.args))}"]
    folder = str(run_folder(c, cwd, env))
    lines.append(f"  in: {_value(folder)}" + (f" (cwd {_value(c.cwd)})" if c.cwd else " (the folder treechat runs in)"))
    lines += [f"  env {_value(k)}={_value(v)}" for k, v in c.env.items()]
    places += [("the command", command), *((f"argument {i}", a) for i, a in enumerate(c.args, 1))]
    places += [("cwd", c.cwd or ""), *((f"env {k}", v) for k, v in c.env.items())]
    lines += _reads(places)
    names = fingerprint(named_paths(c, cwd, env), root, Budget(0)).shown()
    if names:
        lines.append(f"  runs the repository's {', '.join(_value(n) for n in names)} (its content, as it is now, is "
                     "part of what you trust)")
    return lines


def _reads(places: list[tuple[str, str]]) -> list[str]:
    """A line per `${NAME}` the server reads from your environment: where, and whether it is a secret."""
    from treechat.config.tool_env import is_secret

    found: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for where, text in places:
        for match in _REFERENCE.finditer(text):
            found.setdefault(match.group(1), []).append(where)
            if match.group(2) is not None:
                defaults[match.group(1)] = match.group(2)
    lines = []
    for name, wheres in found.items():
        what = f"your {name}" + (", a secret (a key or password)" if is_secret(name) else "")
        default = f" ({_value(defaults[name])} when it is not set)" if name in defaults else ""
        lines.append(f"  reads {what}{default}: in {', '.join(dict.fromkeys(_value(w) for w in wheres))}")
    return lines


def _value(text: str) -> str:
    """A value on one line, whatever it holds: controls and line breaks as visible marks."""
    from treechat.text.sanitize import visible

    return visible(text).replace("\n", "␊").replace("\t", "␉")


def _word(text: str) -> str:
    """One word of a command line as a shell would need it: quoted when it has spaces or quotes."""
    return shlex.quote(_value(text))
