"""Settings: where files live, which providers exist, the user's defaults. Keys are read, never written.

config.toml (in the home folder, or the platform's config folder) has one strict schema: every
key below is documented in docs/configuration.md, and unknown or mistyped keys (and a base_url no
request could use: not http(s), no host, a port out of 1-65535) are one clear error line naming each
key, the file and the line (tests/test_docs.py parses every TOML example in the docs and fails on a
key the page does not name, so they cannot drift).

    model = "openai/gpt-4.1-mini"      # default model, PROVIDER/MODEL-ID
    thinking = "medium"                # off | minimal | low | medium | high | xhigh
    tools = ["read", "ls", "grep"]     # built-in tools (default: all seven; [] turns them off)
    system_prompt = "Answer briefly."  # added to treechat's own system prompt
    theme = "textual-dark"             # any Textual theme (Ctrl+P → theme)
    storage = "postgres"               # sqlite (default) | jsonl | memory | postgres
    database_url = "postgresql://me@db.example/treechat"  # postgres; TREECHAT_DATABASE_URL wins

    [providers.local]
    base_url = "http://127.0.0.1:8080/v1"
    api = "openai"                     # or "anthropic", "openai-responses"
    api_key_env = "LOCAL_KEY"          # or api_key = "..."
    models = ["qwen3-8b"]              # or [[providers.local.models]] tables (id, input, context_window, ...)
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, ValidationError, field_validator
from pydantic_core import ErrorDetails

from treechat.storage.json_types import JsonObject
from treechat.storage.special import special_kind

from ..llm.apis import Api, one_of
from ..mcp.config import DEFAULT_TIMEOUT as DEFAULT_MCP_TIMEOUT
from ..mcp.config import McpServerConfig, McpServers
from .paths import config_path, resolve_home

# Every built-in tool is on unless config.toml's `tools` (or --tools) says otherwise: bash, edit and
# write ask before they act (the app's questions; `--yes` in -p), task starts a sub-agent with the
# others. They are agent.tools.BUILTIN_TOOLS, spelled out: settings load before any tool
# (tests/chat/test_tool_choice.py keeps the two equal).
DEFAULT_TOOLS = ("read", "ls", "grep", "bash", "edit", "write", "task")
THINKING = ("off", "minimal", "low", "medium", "high", "xhigh")


class ConfigError(Exception):
    """A config file we cannot use; the message names the file, the line and the key."""


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be a provider's base URL (None: it can), as words that follow its name:
    it must parse, be http or https, name a host, and give a port (if any) of 1-65535."""
    if not url:
        return 'is empty: give a URL such as "http://127.0.0.1:8080/v1", or leave it out'
    bad = next((i for i, ch in enumerate(url) if ord(ch) < 32 or ord(ch) == 127), None)
    if bad is not None:
        return f"contains a control character ({url[bad]!r} at position {bad + 1})"
    if url != url.strip():
        return "has spaces at its start or end"
    try:
        parts = urlsplit(url)
    except ValueError as err:
        return f"is not a URL ({str(err)[:1].lower()}{str(err)[1:]})"
    if parts.scheme not in ("http", "https"):
        # (the URL itself is not repeated: it may hold a password or a token)
        if "://" not in url:
            return "needs http:// or https:// at its start"
        return f"needs http:// or https://, not {parts.scheme or url.partition('://')[0]}://"
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if port and not port.isdigit():
        return f"has port {port!r}, which is not a number"
    if port and not 0 < int(port) <= 65535:
        return f"has port {int(port)}, which is out of range (1-65535)"
    if not parts.hostname:
        return 'names no host, e.g. "http://127.0.0.1:8080/v1"'
    if any(ch.isspace() for ch in parts.hostname):
        return f"has a space in its host {parts.hostname!r}"
    try:
        import httpx  # what the requests will parse it with: anything it refuses is refused here

        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as err:  # idna's own errors for a bad international name are UnicodeErrors
        return f"is not a usable URL ({err})"
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ModelRef = Annotated[str, StringConstraints(pattern=r"^[^/\s]+/\S+$")]


class ModelOptions(_Strict):
    """One model of a configured provider (anything left out comes from the catalog or defaults)."""

    id: str | None = None  # required in [[providers.NAME.models]] tables, implied by the key in a table of tables
    name: str | None = None
    input: list[Literal["text", "image"]] | None = None
    context_window: Annotated[int, Field(gt=0)] | None = None
    max_tokens: Annotated[int, Field(gt=0)] | None = None
    reasoning: bool | None = None
    api: Api | None = None  # this model's wire protocol, when not its provider's (e.g. a model served only by Responses)

    def as_spec(self) -> JsonObject:
        """The catalog's spelling of these options (what `model_info` reads)."""
        return {k: v for k, v in self.model_dump(exclude={"id"}).items() if v is not None}


class ProviderConfig(_Strict):
    name: str = ""
    api: Api | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    api_key_env: str | None = None
    models: dict[str, dict[str, object]] = Field(default_factory=dict)  # each as_spec(): llm.catalog.model_spec reads it

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        problem = None if value is None else base_url_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: object) -> dict[str, JsonObject]:
        # Three spellings: ["a", "b"]; {a = {...}}; [[providers.X.models]] tables with an id.
        out: dict[str, JsonObject] = {}
        if isinstance(value, dict):
            for key, options in value.items():
                if not isinstance(options, dict):
                    raise ValueError("must be a list of ids, a table of id = {context_window = …}, "
                                     "or [[providers.NAME.models]] tables")
                out[key] = ModelOptions(**options).as_spec()
            return out
        if not isinstance(value, list):
            raise ValueError("must be a list of ids, a table of id = {context_window = …}, "
                             "or [[providers.NAME.models]] tables")
        for item in value:
            if isinstance(item, str):
                out[item] = {}
            elif isinstance(item, dict):
                options = ModelOptions(**item)
                if not options.id:
                    raise ValueError("each [[providers.NAME.models]] table needs an id")
                out[options.id] = options.as_spec()
            else:
                raise ValueError("must list model ids (strings) or tables with an id")
        return out


class CompactionConfig(_Strict):
    enabled: bool = True
    reserve_tokens: Annotated[int, Field(ge=0)] = 16384
    keep_recent_tokens: Annotated[int, Field(ge=0)] = 20000


class ConfigFile(_Strict):
    """The whole of config.toml."""

    model: ModelRef | None = None
    thinking: Literal["off", "minimal", "low", "medium", "high", "xhigh"] | None = None
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    allow_reads_outside: bool = False  # read, ls and grep outside the working folder without asking
    # variables a tool's child (bash) gets although they hold secrets (tool_env.py withholds them)
    tool_env: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(default_factory=list)
    # files in git's own folders (.git/…) edit, write and restores may change: relative to the working folder
    writable_git_paths: list[str] = Field(default_factory=list)
    system_prompt: str | None = None
    theme: str | None = None
    # Bounded waits (seconds). A slow local model may think for minutes before its first byte;
    # a dead server should not take longer than that to be called dead.
    connect_timeout: Annotated[float, Field(gt=0)] = 10.0
    first_byte_timeout: Annotated[float, Field(gt=0)] = 300.0
    idle_timeout: Annotated[float, Field(gt=0)] = 120.0
    reply_timeout: Annotated[float, Field(gt=0)] = 3600.0  # one whole request, from sending to its end
    max_reply_mb: Annotated[float, Field(gt=0)] = 4.0  # text of one reply; a server sending more is cut off
    lock_timeout: Annotated[float, Field(gt=0)] = 30.0  # a write waiting for another process's lock
    max_input_mb: Annotated[float, Field(gt=0)] = 1.0  # text piped into -p, or pasted into the composer at once
    max_runs: Annotated[StrictInt, Field(ge=1, le=64)] = 4  # runs going at once in one session, each on its branch
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    storage: Literal["sqlite", "jsonl", "memory", "postgres"] | None = None
    database_url: str | None = Field(default=None, repr=False)  # may hold a password: never shown

    @field_validator("writable_git_paths")
    @classmethod
    def _writable_git_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if not path.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
                raise ValueError(f"{path!r} is not a path: name each file, e.g. \".git/info/exclude\"")
            if path.rstrip().endswith(("/", os.sep)):
                raise ValueError(f"{path!r} is a folder: name each file, e.g. \".git/info/exclude\"")
        return value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        from treechat.storage.postgres.url import problem

        found = None if value is None else problem(value)
        if found:
            raise ValueError(found)
        return value
    # MCP servers (issue 24): their tools join as NAME__TOOL; a call waits mcp_timeout seconds at most
    mcp_servers: McpServers = Field(default_factory=dict)
    mcp_timeout: Annotated[float, Field(gt=0)] = DEFAULT_MCP_TIMEOUT
    # how long `-p` waits for servers still starting before its first request (their tools join later)
    mcp_startup_wait: Annotated[float, Field(ge=0)] = 10.0


@dataclass
class Settings:
    home: Path
    config_file: Path
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    model: str | None = None
    thinking: str | None = None
    tools: list[str] = field(default_factory=lambda: list(DEFAULT_TOOLS))
    allow_reads_outside: bool = False
    tool_env: list[str] = field(default_factory=list)
    writable_git_paths: list[str] = field(default_factory=list)
    system_prompt: str | None = None
    theme: str | None = None
    connect_timeout: float = 10.0
    first_byte_timeout: float = 300.0
    idle_timeout: float = 120.0
    reply_timeout: float = 3600.0
    max_reply_mb: float = 4.0
    lock_timeout: float = 30.0
    max_input_mb: float = 1.0
    max_runs: int = 4
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    storage: str | None = None  # the backend config.toml chose (--storage wins)
    database_url: str | None = field(default=None, repr=False)  # config.toml's (TREECHAT_DATABASE_URL wins)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    config_loaded: bool = False  # a config file was found and read
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    mcp_timeout: float = DEFAULT_MCP_TIMEOUT
    mcp_startup_wait: float = 10.0


def load_settings(home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    chosen = home or env.get("TREECHAT_HOME") or None
    settings = Settings(home=resolve_home(chosen), config_file=config_path(chosen), env=env)
    path = settings.config_file
    kind = special_kind(path)
    if kind is not None:  # a FIFO would hold every start, a device never end
        raise ConfigError(f"{path}: it is {kind}, not a file; make it a file (or remove it: defaults are used).")
    try:
        text = path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return settings
    except OSError as err:
        raise ConfigError(f"{path}: cannot read it ({err.strerror or err}).") from None
    parsed = parse_config(text, path)
    settings.config_loaded = True
    for key in ("model", "thinking", "allow_reads_outside", "system_prompt", "theme", "connect_timeout",
                "first_byte_timeout", "idle_timeout", "reply_timeout", "max_reply_mb", "lock_timeout", "max_input_mb",
                "max_runs", "compaction", "storage", "database_url"):
        setattr(settings, key, getattr(parsed, key))
    settings.tools = list(parsed.tools)
    settings.tool_env = list(parsed.tool_env)
    settings.writable_git_paths = list(parsed.writable_git_paths)
    settings.providers = {name: p.model_copy(update={"name": name}) for name, p in parsed.providers.items()}
    settings.mcp_servers, settings.mcp_timeout = dict(parsed.mcp_servers), parsed.mcp_timeout
    settings.mcp_startup_wait = parsed.mcp_startup_wait
    return settings


def parse_config(text: str, path: Path | str = "config.toml") -> ConfigFile:
    """Validate config text; every problem is named in one ConfigError line."""
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: {err}; fix the TOML syntax there.") from None
    try:
        return ConfigFile(**data)
    except ValidationError as err:
        raise _problems(err, text, path) from None


def _problems(err: ValidationError, text: str, path: Path) -> ConfigError:
    """Every problem pydantic found, by line, in one line: "FILE, line 2: …; line 3: …." (the
    CLI shows an error as one line, and fixing one key should not reveal the next)."""
    found: dict[tuple[str, ...], tuple[int | None, str]] = {}
    for problem in err.errors():
        loc = [str(p) for p in problem["loc"]]
        # pydantic reports list positions and union branches in the location; keep the TOML keys
        keys = [p for p in loc if not p.isdigit() and p not in ("list[str]", "dict[str,dict[str,any]]", "dict[str,dict[str,object]]")]
        if tuple(keys) not in found:  # one message per key (a union reports each branch)
            found[tuple(keys)] = (_line_of(text, keys), _describe(problem, keys))
    ordered = sorted(found.values(), key=lambda item: (item[0] is None, item[0] or 0))
    parts = [f"line {line}: {message}" if line else message for line, message in ordered]
    first_line = ordered[0][0] if ordered else None
    return ConfigError(f"{path}{',' if first_line else ':'} {'; '.join(parts)}.")


def _describe(problem: ErrorDetails, keys: list[str]) -> str:
    if problem["type"] == "extra_forbidden":
        message = f"unknown key {keys[-1]!r}"
        known = _known_keys(keys[:-1])
        guess = next(iter(difflib.get_close_matches(keys[-1], known, n=1)), None) or _part_of(keys[-1], known)
        return message + (f" (did you mean {guess!r}?)" if guess else (f" (known keys: {', '.join(known)})" if known else ""))
    return f"{'.'.join(keys)} {_explain(problem, keys)}"


def _part_of(key: str, known: list[str]) -> str | None:
    """A known key that is a whole `_`-separated part of an unknown one (`default_model` → `model`)."""
    parts = set(key.split("_"))
    return next((k for k in known if k in parts), None)


def _explain(problem: ErrorDetails, keys: list[str]) -> str:
    key = keys[-1] if keys else ""
    if key == "model" and len(keys) == 1:
        return 'must be "PROVIDER/MODEL-ID", e.g. "openai/gpt-4.1-mini"'
    if key == "thinking":
        return f"must be one of {', '.join(THINKING)}"
    if key == "storage":
        return 'must be one of "sqlite", "jsonl", "memory", "postgres"'
    if key == "api":
        return f"must be {one_of()}"
    if key == "tools":
        return 'must be a list of tool names, e.g. ["read", "ls"]'
    if key == "writable_git_paths" and problem["type"] != "value_error":
        return 'must be a list of files, e.g. [".git/info/exclude"]'
    if key == "providers" and len(keys) == 1:
        return "must be a table of [providers.NAME] tables"
    if key == "mcp_servers" and len(keys) == 1 and problem["type"] != "value_error":
        return "must be a table of [mcp_servers.NAME] tables"
    message = str(problem.get("msg", "is not valid"))
    message = message.removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "should be" + message[len("Input should be"):]
    return message[0].lower() + message[1:] if message else "is not valid"


def _known_keys(table: list[str]) -> list[str]:
    """The keys allowed in the table at `table` (a path of TOML keys)."""
    if not table:
        fields: Iterable[str] = ConfigFile.model_fields
    elif table[0] == "providers" and len(table) >= 3 and table[2] == "models":
        fields = ModelOptions.model_fields
    elif table[0] == "providers" and len(table) == 2:
        fields = {k: v for k, v in ProviderConfig.model_fields.items() if k != "name"}
    elif table == ["compaction"]:
        fields = CompactionConfig.model_fields
    elif table[0] == "mcp_servers" and len(table) == 2:
        fields = McpServerConfig.model_fields
    else:
        return []
    return sorted(fields)


def _line_of(text: str, key_path: list[str]) -> int | None:
    """Best-effort line of a key: after its [table] (or [[table]]) header when it has one."""
    lines = text.splitlines()
    for depth in range(len(key_path), 0, -1):
        *tables, key = key_path[:depth]
        whole = re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(re.escape(t) for t in [*tables, key]) + r"\s*\]")
        found_table = next((i for i, line in enumerate(lines) if whole.match(line)), None)
        if found_table is not None and tables:  # a problem with a whole table ([mcp_servers.x]): its header
            return found_table + 1
        start = 0
        if tables:
            header = re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(re.escape(t) for t in tables) + r"\s*\]")
            found = next((i for i, line in enumerate(lines) if header.match(line)), None)
            if found is None:
                continue
            start = found + 1
        pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start, len(lines)):
            if tables and lines[i].lstrip().startswith("["):
                break
            if pattern.match(lines[i]):
                return i + 1
        header_here = re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(re.escape(t) for t in [*tables, key]) + r"\s*\]")
        found = next((i for i, line in enumerate(lines) if header_here.match(line)), None)
        if found is not None:
            return found + 1
        if tables:
            return start
    return None
