"""MCP server settings: `[mcp_servers.NAME]` tables in config.toml and a project's `.mcp.json`.

config.toml is strict like the rest of it (unknown keys and impossible combinations are one line
naming the key and the line). `.mcp.json` is Claude Code's file, written for other tools too: its
unknown keys are ignored, and a server that cannot be used is one line while the others work.
Values may name environment variables as `${NAME}` (`${NAME:-default}`), filled in when the
server starts, so no secret has to sit in a file.

Nothing here imports the MCP SDK: settings are read at every start.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from treechat import bounded_json
from treechat.bounded_json import RawJson

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
DEFAULT_TIMEOUT = 60.0  # seconds one tool call may take (config: mcp_timeout, or a server's timeout)
DEFAULT_STARTUP_TIMEOUT = 30.0  # seconds a server may take to start and list its tools
MAX_PROJECT_FILE = 1_000_000  # bytes of .mcp.json read at most
PROJECT_FILE = ".mcp.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpServerConfig(BaseModel):
    """One `[mcp_servers.NAME]` table: a program to run (stdio) or an HTTP server (url)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    trust: bool = False  # its calls run without asking
    timeout: Annotated[float, Field(gt=0)] | None = None
    startup_timeout: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if self.command is not None and self.url is not None:
            raise ValueError("gives both command and url: a server is a program to run (command) "
                             "or an HTTP server (url), not both")
        if self.command is None and self.url is None:
            raise ValueError('needs command (a program to run, e.g. command = "mcp-server-time") '
                             'or url (an HTTP server, e.g. url = "http://127.0.0.1:8000/mcp")')
        if self.command is not None and not self.command.strip():
            raise ValueError("has an empty command")
        if self.url is not None:
            if self.args or self.env or self.cwd is not None:
                raise ValueError("gives args, env or cwd with a url: those are for a program to run (command)")
            problem = url_problem(self.url)
            if problem:
                raise ValueError(f"url {problem}")
        elif self.headers:
            raise ValueError("gives headers with a command: headers are for an HTTP server (url)")
        return self

    @property
    def kind(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an MCP server's address (None: it can). `${VAR}` parts are checked
    when the server starts."""
    if _VARIABLE.search(url):
        return None
    if not url or url != url.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "is empty or has spaces or control characters in it"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is no number or out of range
    except ValueError as err:
        return f"is not a URL ({err})"
    if parts.scheme not in ("http", "https"):
        return f"needs http:// or https://{', not ' + parts.scheme + '://' if parts.scheme else ''}"
    if not parts.hostname:
        return 'names no host, e.g. "http://127.0.0.1:8000/mcp"'
    return None


def _names(servers: RawJson) -> RawJson:
    bad = next((name for name in servers if not NAME.match(str(name))), None) if isinstance(servers, dict) else None
    if bad is not None:
        raise ValueError(f"has a server named {bad!r}: use letters, digits, - and _ (its tools are NAME__TOOL)")
    return servers


McpServers = Annotated[dict[str, McpServerConfig], BeforeValidator(_names)]


# ---------------------------------------------------------------- resolved servers


@dataclass(frozen=True)
class ServerSpec:
    """A server as treechat runs it: where it was declared and its limits, resolved."""

    name: str
    config: McpServerConfig
    origin: str  # "config.toml" or the path of the .mcp.json it came from
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT

    @property
    def trusted(self) -> bool:
        return self.config.trust

    @property
    def where(self) -> str:
        """What it is, for a listing: the command line or the URL (no header values)."""
        c = self.config
        if c.kind == "http":
            return str(c.url)
        return " ".join([str(c.command), *c.args])


def config_servers(servers: Mapping[str, McpServerConfig], default_timeout: float) -> list[ServerSpec]:
    return [ServerSpec(name, c, "config.toml", c.timeout or default_timeout,
                       c.startup_timeout or DEFAULT_STARTUP_TIMEOUT) for name, c in servers.items()]


class MissingVariable(ValueError):
    """A `${NAME}` the environment does not set (and that has no `:-default`)."""


def expand(text: str, env: Mapping[str, str], what: str) -> str:
    """`${NAME}` and `${NAME:-default}` filled in from `env`."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found is not None and (found or default is None):
            return found
        if default is not None:
            return default
        raise MissingVariable(f"{what} names ${{{name}}}, which is not set in the environment")

    return _VARIABLE.sub(value, text)


# ---------------------------------------------------------------- a project's .mcp.json


@dataclass
class ProjectServers:
    """What a project's `.mcp.json` declares: the servers, the lines about ones that cannot be
    used, and a digest of the whole declaration (trust is given to this exact content)."""

    path: Path
    servers: list[ServerSpec] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    digest: str = ""


def find_project_file(cwd: str | os.PathLike[str]) -> Path | None:
    """The nearest `.mcp.json` from the working folder up to the repository root (the nearest
    folder with `.git`; only the working folder when there is none)."""
    start = Path(cwd).resolve()
    folders = [start, *start.parents]
    root = next((f for f in folders if (f / ".git").exists()), None)
    for folder in folders if root is not None else [start]:
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if folder == root:
            break
    return None


def read_project_servers(path: Path, default_timeout: float) -> ProjectServers:
    """Parse Claude Code's `{"mcpServers": {NAME: {...}}}`; never raises."""
    found = ProjectServers(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_PROJECT_FILE + 1)
        if len(raw) > MAX_PROJECT_FILE:
            found.problems.append(f"{path}: over {MAX_PROJECT_FILE // 1000} KB; not read.")
            return found
        data = bounded_json.loads(raw.decode("utf-8", "replace"))  # (a repository's: nesting bounded too)
    except bounded_json.JsonBoundError as err:
        found.problems.append(f"{path} {err}; not read.")
        return found
    except (OSError, ValueError) as err:
        found.problems.append(f"{path}: cannot be read as JSON ({getattr(err, 'strerror', None) or err}).")
        return found
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        found.problems.append(f'{path}: has no "mcpServers" object.')
        return found
    found.digest = hashlib.sha256(json.dumps(servers, sort_keys=True).encode()).hexdigest()
    for name, entry in servers.items():
        spec, problem = _project_server(str(name), entry, path, default_timeout)
        if spec is not None:
            found.servers.append(spec)
        if problem:
            found.problems.append(problem)
    return found


def _project_server(name: str, entry: RawJson, path: Path, default_timeout: float) -> tuple[ServerSpec | None, str | None]:
    where = f"{path}: server {name!r}"
    if not isinstance(entry, dict):
        return None, f"{where} is not an object."
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind in ("sse",):
        return None, f"{where} uses the old SSE transport, which treechat does not speak; use its streamable HTTP URL."
    if kind not in ("stdio", "http", "streamable-http"):
        return None, f"{where} has type {kind!r}; treechat runs stdio and http servers."
    keys = ("command", "args", "env", "cwd") if kind == "stdio" else ("url", "headers")
    options = {k: entry[k] for k in keys if k in entry}
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name).strip("_-") or "server"
    try:
        config = McpServerConfig(**options)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        return None, f"{where}: {loc + ' ' if loc else ''}{message[:1].lower()}{message[1:]}."
    return ServerSpec(safe, config, str(path), default_timeout, DEFAULT_STARTUP_TIMEOUT), None
