"""`treechat doctor`: the one command to run when something is off.

It reports, one fact per line, what treechat would use: the config file (and whether it parses),
the data folder, the database and its schema version, the JSONL sessions folder, the model and
which providers have a key, the local servers that answer, and what the terminal can do. Nothing
is written, no key (nor any part of one) is ever shown, and every probe is bounded in time.
A broken config is one line of the report, not the end of it.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sqlite3
import stat
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TextIO
from urllib.parse import quote, urlsplit, urlunsplit

from treechat.storage.sqlite.db import SCHEMA_VERSION

from .. import __version__
from ..config.paths import config_path, resolve_home
from ..config.provider_keys import key_source
from ..config.settings import ConfigError, Settings, load_settings
from ..llm.detect import (
    LOCAL_SERVERS,
    DetectedServer,
    Unanswered,
    ask_url_servers,
    detect_local_servers,
    is_local_url,
    root_of,
)
from ..llm.local import shown_model_id, shown_ref, shown_url
from ..llm.registry import ModelRefError, ModelRegistry, base_url_env_problems
from ..llm.types import ModelInfo
from .postgres import postgres_checks
from .report import Check, failed, render_json, render_text
from .terminal import TmuxAsk, ask_tmux, terminal_checks

DETECT_TIMEOUT = 0.5  # seconds per local server, all asked at once


async def collect(home: str | None = None, *, env: Mapping[str, str] | None = None, model: str | None = None,
                  servers: tuple[tuple[str, str], ...] | None = None, timeout: float = DETECT_TIMEOUT,  # noqa: ASYNC109  the probes' budget, handed to detect_local_servers
                  encoding: str | None = None, tmux: TmuxAsk = ask_tmux) -> list[Check]:
    """Every fact, in report order. `servers` are the local servers to probe (default
    `LOCAL_SERVERS`; tests point them at closed ports); `tmux` asks tmux for an option."""
    env = os.environ if env is None else env
    servers = LOCAL_SERVERS if servers is None else servers
    chosen = home or env.get("TREECHAT_HOME") or None
    data_dir = resolve_home(chosen, create=False)
    config_file = config_path(chosen)
    checks = [*install_checks(), modes_check()]
    settings, config_check = _settings(chosen, data_dir, config_file, env)
    checks.append(config_check)
    checks += storage_checks(data_dir)
    checks += await postgres_checks(settings, env)
    registry, registry_problems = _registry(settings, env)
    checks += registry_problems
    checks += await model_checks(settings, registry, model, env, servers, timeout)
    checks += terminal_checks(env, encoding=encoding or _encoding(), tmux=tmux)
    return checks


async def run_doctor(home: str | None, *, model: str | None = None, as_json: bool = False, out: TextIO | None = None,
                     env: Mapping[str, str] | None = None, servers: tuple[tuple[str, str], ...] | None = None,
                     encoding: str | None = None, tmux: TmuxAsk = ask_tmux) -> int:
    """Write the report; 1 when something must be fixed before treechat can work, else 0."""
    out = out or sys.stdout
    checks = await collect(home, env=env, model=model, servers=servers, encoding=encoding, tmux=tmux)
    if as_json:
        out.write(render_json(checks, __version__))
    else:
        out.write(render_text(checks, ascii_only=not _can_write(out, "✓✗→·")))
    return 1 if failed(checks) else 0


def _can_write(out: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(out, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _encoding() -> str:
    import locale

    return getattr(sys.stdout, "encoding", None) or locale.getpreferredencoding(False)


# ---------------------------------------------------------------- install


def install_checks() -> list[Check]:
    try:
        textual = metadata.version("textual")
    except metadata.PackageNotFoundError:
        textual = "not installed"
    package = Path(__file__).resolve().parent.parent  # treechat/, above doctor/
    python_ok = sys.version_info >= (3, 11)
    return [
        Check("treechat", "treechat", "ok", f"{__version__} ({package})", data={"version": __version__, "path": str(package)}),
        Check("python", "Python", "ok" if python_ok else "fail", f"{platform.python_version()} ({sys.executable})",
              None if python_ok else "treechat needs Python 3.11 or newer",
              {"version": platform.python_version(), "executable": sys.executable}),
        Check("textual", "Textual", "ok" if textual != "not installed" else "fail", textual,
              None if textual != "not installed" else "reinstall treechat (pip install treechat)", {"version": textual}),
        Check("platform", "platform", "info", platform.platform(), data={"platform": platform.platform()}),
    ]


def modes_check() -> Check:
    """How treechat can be driven: the app, -p, and the protocols other programs speak."""
    return Check("modes", "modes", "info", "the app; -p (--mode text, or json: Pi's event stream); --mode rpc "
                 "(Pi 0.73.1's RPC protocol on stdin/stdout, and the tree)",
                 data={"modes": ["app", "text", "json", "rpc"], "protocol": "pi-0.73.1"})


# ---------------------------------------------------------------- files


def _settings(chosen: str | None, data_dir: Path, config_file: Path, env: Mapping[str, str]) -> tuple[Settings | None, Check]:
    """The settings (None when the config does not parse) and the config's line of the report."""
    data: dict[str, object] = {"path": str(config_file), "exists": config_file.exists(), "parsed": False}
    if not config_file.exists():
        # what load_settings would give, without creating the data folder
        data["parsed"] = True
        return (Settings(home=data_dir, config_file=config_file, env=env),
                Check("config", "config", "info", f"none at {config_file}: defaults in use", data=data))
    try:
        settings = load_settings(chosen, env=env)
    except ConfigError as err:
        data["error"] = str(err)
        return None, Check("config", "config", "fail", str(err),
                           "fix that line: treechat will not start until the file parses", data)
    data["parsed"] = True
    if settings.theme:
        data["theme"] = settings.theme
    if any(p.api_key for p in settings.providers.values()) and _shared(config_file):
        return settings, Check("config", "config", "warn", f"{config_file}: holds an api_key and others can read it",
                               f"chmod 600 {config_file}", data)
    return settings, Check("config", "config", "ok", str(config_file), data=data)


def _shared(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        return False


def storage_checks(data_dir: Path) -> list[Check]:
    checks: list[Check] = []
    if not data_dir.exists():
        checks.append(Check("data", "data folder", "info", f"{data_dir} (created on first run)",
                            data={"path": str(data_dir), "exists": False}))
    elif not os.access(data_dir, os.W_OK | os.X_OK):
        checks.append(Check("data", "data folder", "fail", f"{data_dir} is not writable",
                            "fix its permissions, or choose another folder with --home or TREECHAT_HOME",
                            {"path": str(data_dir), "exists": True, "writable": False}))
    else:
        checks.append(Check("data", "data folder", "ok", str(data_dir),
                            data={"path": str(data_dir), "exists": True, "writable": True}))
    checks.append(database_check(data_dir / "treechat.db"))
    folder = data_dir / "sessions"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    detail = (f"{len(files)} session file{'s' if len(files) != 1 else ''} in {folder}" if folder.is_dir()
              else f"none ({folder} is used with --storage jsonl)")
    checks.append(Check("jsonl", "JSONL sessions", "info", detail,
                        data={"path": str(folder), "exists": folder.is_dir(), "files": len(files)}))
    return checks


def database_check(path: Path) -> Check:
    data: dict[str, object] = {"path": str(path), "exists": path.exists(), "schema_version": None,
                               "current_version": SCHEMA_VERSION}
    if not path.exists():
        return Check("database", "database", "info", f"none yet at {path} (created on first run)", data=data)
    try:
        # read-only: the doctor never migrates, locks for writing or creates anything
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=1)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            # as `treechat sessions` counts: a session nothing was written to (an app opened and
            # closed) is not one
            sessions = int(conn.execute(
                "SELECT count(*) FROM sessions s WHERE EXISTS (SELECT 1 FROM session_entries e WHERE e.session_id = s.id)"
            ).fetchone()[0]) if version else 0
        finally:
            conn.close()
    except sqlite3.Error as err:
        data["error"] = str(err)
        return Check("database", "database", "fail", f"{path}: cannot be read ({err})",
                     "if another program holds it, close that; if it is damaged, move it aside (sessions "
                     "exported as JSONL can be imported again)", data)
    data.update(schema_version=version, sessions=sessions, size=path.stat().st_size)
    where = f"{path} · schema v{version}"
    count = f"{sessions} session{'s' if sessions != 1 else ''}"
    if version > SCHEMA_VERSION:
        return Check("database", "database", "fail", f"{where}, newer than this treechat (v{SCHEMA_VERSION})",
                     "upgrade treechat (pip install -U treechat)", data)
    if version < SCHEMA_VERSION:
        return Check("database", "database", "info", f"{where} · {count}: upgraded to v{SCHEMA_VERSION} when treechat "
                     "next opens it", data=data)
    if _shared(path):
        return Check("database", "database", "warn", f"{where} · {count}; others can read it", f"chmod 600 {path}", data)
    return Check("database", "database", "ok", f"{where} (current) · {count}", data=data)


# ---------------------------------------------------------------- models


def _registry(settings: Settings | None, env: Mapping[str, str]) -> tuple[ModelRegistry, list[Check]]:
    """The registry treechat would build, and a failing line for each part of it that cannot
    work: a base-URL variable no request could use (left out, so the rest is still checked) and a
    [providers.X] table that cannot work."""
    checks = [Check(f"env.{var}", var, "fail", message, f"fix {var} or unset it", {"variable": var})
              for var, message in base_url_env_problems(env, settings).items()]
    usable = {k: v for k, v in env.items() if k not in base_url_env_problems(env)}
    try:
        return ModelRegistry(settings, env=usable), checks
    except ModelRefError as err:  # a [providers.X] table that cannot work
        checks.append(Check("providers", "providers", "fail", str(err), "fix that table in config.toml"))
        return ModelRegistry(None, env=usable), checks


def _reason(err: BaseException) -> str:
    """One line saying what went wrong, from the first real error inside any exception group."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:200]


_redact = shown_url


def _provider(registry: ModelRegistry, name: str) -> ModelInfo:
    # the registry describes a provider through any model of it; "_" stands for none in particular
    return registry.resolve(f"{name}/_")


def _key_source(name: str, settings: Settings | None) -> str:
    return key_source(name, settings) or "config.toml"


def _apis(registry: ModelRegistry, name: str) -> tuple[str, dict[str, object]]:
    """Which protocol a provider speaks, as words ("api openai; openai-responses for gpt-5.3-codex
    and 4 more") and as data."""
    api, others = registry.apis(name)
    words = f"api {api}"
    for other in sorted(set(others.values())):
        ids = [m for m, a in others.items() if a == other]
        words += f"; {other} for {ids[0]}" + (f" and {len(ids) - 1} more" if len(ids) > 1 else "")
    return words, {"api": api, **({"model_apis": dict(others)} if others else {})}


def provider_checks(registry: ModelRegistry, settings: Settings | None,
                    answers: Mapping[str, DetectedServer | Unanswered] | None = None) -> list[Check]:
    checks = []
    for name in registry.provider_names:
        info = _provider(registry, name)
        if answers and name in answers:
            checks.append(url_server_check(registry, settings, name, answers[name]))
            continue
        if is_local_url(info.base_url):
            continue  # a server on this machine: its line is under "local servers"
        url = _redact(info.base_url)
        apis, api_data = _apis(registry, name)
        data: dict[str, object] = {"base_url": url, "key": False, **api_data}
        if registry.api_key(name):
            data.update(key=True, key_from=_key_source(name, settings))
            checks.append(Check(f"provider.{name}", name, "ok", f"key set ({_key_source(name, settings)}) · {url} · {apis}",
                                data=data))
        elif registry.key_problem(info) is None:
            checks.append(Check(f"provider.{name}", name, "ok", f"needs no key · {url} · {apis}", data=data))
        else:
            checks.append(Check(f"provider.{name}", name, "info",
                                f"no key (set {_key_source(name, settings)} to use it) · {apis}", data=data))
    return checks


def url_server_check(registry: ModelRegistry, settings: Settings | None, name: str,
                     answer: DetectedServer | Unanswered) -> Check:
    """The line of a server named by its URL (OPENAI_BASE_URL, or a base_url in config.toml
    listing no models): where it is, what it serves (its own `/models`), its key."""
    info = _provider(registry, name)
    url, source = _redact(info.base_url), registry.url_source(name) or "config.toml"
    data: dict[str, object] = {"base_url": url, "from": source, "key": bool(registry.api_key(name)),
                               "local": is_local_url(info.base_url), "models": []}
    key = (f"key set ({_key_source(name, settings)})" if registry.api_key(name)
           else "needs no key" if registry.key_problem(info) is None else None)
    where = f"{url} ({source})"
    fix_url = f"fix {source}" if source != "config.toml" else f"fix base_url in [providers.{name}]"
    if key is None:
        return Check(f"provider.{name}", name, "fail", f"{where} · no key",
                     f"set {_key_source(name, settings)} (the server's key)", data)
    if isinstance(answer, Unanswered):
        data["error"] = answer.reason
        fix = (f"check {_key_source(name, settings)}: the server refused it" if answer.refused_key else
               f"start that server or {fix_url}; or name a model it serves: --model {name}/MODEL-ID")
        return Check(f"provider.{name}", name, "warn", f"{where} did not list its models: {answer.reason}", fix, data)
    data["models"] = list(answer.models)
    if not answer.models:
        return Check(f"provider.{name}", name, "warn", f"{where} · {key} · lists no model",
                     "load or pull a model on that server", data)
    names = ", ".join(shown_model_id(m) for m in answer.models[:3]) + (", …" if len(answer.models) > 3 else "")
    count = f"{len(answer.models)} model{'s' if len(answer.models) != 1 else ''}"
    return Check(f"provider.{name}", name, "ok", f"{where} · serves {count} ({names}) · {key}", data=data)


def _root(base_url: str) -> str:
    """What a local server is probed at: its base URL without /v1 (nor a query)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path[:-3] if path.endswith("/v1") else path, "", ""))


def _configured_local(registry: ModelRegistry, settings: Settings | None,
                      servers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Providers config.toml puts on this machine, where the usual probes do not already look
    (a server named by its URL is asked for its own list instead)."""
    roots = {root.rstrip("/") for _, root in servers}
    named = {s.provider for s in registry.url_servers()}
    out: list[tuple[str, str]] = []
    for name in sorted(settings.providers) if settings is not None else []:
        if name not in registry.provider_names or name in named:
            continue
        base = _provider(registry, name).base_url
        root = _root(base)
        if is_local_url(base) and root not in roots:
            out.append((name, root))
            roots.add(root)
    return tuple(out)


def server_checks(usual: tuple[tuple[str, str], ...], configured: tuple[tuple[str, str], ...],
                  found: list[DetectedServer]) -> list[Check]:
    checks: list[Check] = []
    seen: set[str] = set()

    def check_id(name: str, root: str) -> str:
        wanted = f"local.{name}" if f"local.{name}" not in seen else f"local.{name}@{urlsplit(root).port}"
        seen.add(wanted)
        return wanted

    for server in found:
        names = ", ".join(shown_model_id(m) for m in server.models[:3]) + (", …" if len(server.models) > 3 else "")
        count = f"{len(server.models)} model{'s' if len(server.models) != 1 else ''}"
        checks.append(Check(check_id(server.provider, server.base_url), server.provider, "ok" if server.models else "warn",
                            f"{_redact(server.base_url)} · {count}" + (f" ({names})" if names else ""),
                            None if server.models else "the server answers but lists no model: load or pull one",
                            {"base_url": _redact(server.base_url), "models": list(server.models)}))
    answered = {_root(s.base_url) for s in found}
    for name, root in configured:
        if root not in answered:  # named in config.toml, and silent
            checks.append(Check(check_id(name, root), name, "warn", f"{_redact(root)} does not answer",
                                f"start that server, or fix base_url in [providers.{name}]",
                                {"base_url": _redact(root), "models": []}))
    if not found:
        ports = ", ".join(f"{name} :{urlsplit(root).port}" for name, root in usual)
        checks.append(Check("local", "local servers", "info", f"none answering (asked {ports})" if ports else "none asked",
                            data={"probed": [_redact(root) for _, root in (*usual, *configured)]}))
    return checks


async def model_checks(settings: Settings | None, registry: ModelRegistry, model: str | None, env: Mapping[str, str],
                       servers: tuple[tuple[str, str], ...], timeout: float) -> list[Check]:  # noqa: ASYNC109  the probes' budget, handed to detect_local_servers
    # Whatever a URL does to a probe (a port out of range, a name httpx refuses), it is a line of
    # the report, never a traceback.
    fix = "check base_url in config.toml and OPENAI_BASE_URL / ANTHROPIC_BASE_URL"
    problems: list[Check] = []
    configured: tuple[tuple[str, str], ...] = ()
    found: list[DetectedServer] = []
    answers: dict[str, DetectedServer | Unanswered] = {}
    try:
        named = registry.url_servers()
        taken = {root_of(s.base_url) for s in named}  # asked as named, not again on its port
        servers = tuple(s for s in servers if s[1].rstrip("/") not in taken)
        configured = _configured_local(registry, settings, servers)
        local, asked = await asyncio.gather(detect_local_servers((*servers, *configured), timeout=timeout),
                                            ask_url_servers(named, local_timeout=timeout))
        answers = {(a.provider if isinstance(a, DetectedServer) else a.server.provider): a for a in asked}
        found = [*(a for a in asked if isinstance(a, DetectedServer)), *local]
    except Exception as err:  # noqa: BLE001  doctor: whatever a check does, it is a line of the report
        problems.append(Check("local", "local servers", "fail", f"could not be asked ({_reason(err)})", fix))
    try:
        providers = provider_checks(registry, settings, answers)
    except Exception as err:  # noqa: BLE001  doctor: whatever a check does, it is a line of the report
        providers = [Check("provider", "providers", "fail", f"could not be checked ({_reason(err)})", fix)]
    try:  # (after a probe that failed, its line says all there is to say)
        servers_found = [] if problems else server_checks(servers, configured, [s for s in found if not s.by_url])
    except Exception as err:  # noqa: BLE001  doctor: whatever a check does, it is a line of the report
        servers_found = [Check("local", "local servers", "fail", f"could not be listed ({_reason(err)})", fix)]
    try:
        chosen = _model_check(settings, registry, model, found, providers, answers)
    except Exception as err:  # noqa: BLE001  doctor: whatever a check does, it is a line of the report
        chosen = Check("model", "model", "fail", f"could not be checked ({_reason(err)})", fix)
    return [chosen, *providers, *problems, *servers_found]


def _model_check(settings: Settings | None, registry: ModelRegistry, model: str | None, found: list[DetectedServer],
                 providers: list[Check], answers: Mapping[str, DetectedServer | Unanswered]) -> Check:
    ref = model or (settings.model if settings is not None else None)
    where = "--model" if model else "config.toml"
    if ref:
        try:
            info = registry.resolve(ref)
        except ModelRefError as err:
            return Check("model", "model", "fail", f"{ref} (from {where}) cannot be used", str(err), {"ref": ref, "from": where})
        data: dict[str, object] = {"ref": ref, "from": where, "api": info.api, "known": info.known,
                                   "context_window": info.context_window, "reasoning": info.reasoning,
                                   "images": "image" in info.input}
        problem = registry.key_problem(info)
        if problem:
            return Check("model", "model", "fail", f"{ref} (from {where}): no key for {info.provider}", problem, data)
        facts = [f"api {info.api}"]
        facts += [f"{info.context_window:,} tokens of context" if info.known else "not in the catalog (defaults assumed)"]
        facts += ["thinks"] if info.reasoning else []
        facts += ["images"] if "image" in info.input else []
        return Check("model", "model", "ok", f"{ref} (from {where}) · {' · '.join(facts)}", data=data)
    local = next((s for s in found if s.models), None)
    if local is not None:
        ref = f"{local.provider}/{local.models[0]}"
        shown = shown_ref(local.provider, local.models[0])
        said = (f"none set: {shown}, the first model of {_redact(local.base_url)}, will be used" if local.by_url
                else f"none set: the local server's {shown} will be used")
        return Check("model", "model", "ok", said, data={"ref": ref, "from": "named server" if local.by_url else "local server"})
    if any(c.status == "ok" for c in providers):
        return Check("model", "model", "warn", "none set", 'pick one with Ctrl+L in the app, or set model = "PROVIDER/ID" '
                     "in config.toml", {"ref": None})
    silent = next((a for a in answers.values() if isinstance(a, Unanswered)), None)
    if silent is not None:
        name = silent.server.provider
        return Check("model", "model", "fail", f"none can be used: the server at {_redact(silent.server.base_url)} "
                     f"({silent.server.source}) did not list its models", f"start it, or pass --model {name}/MODEL-ID "
                     f'(or set model = "{name}/MODEL-ID" in config.toml)', {"ref": None})
    return Check("model", "model", "fail", "no model can be used: no provider has a key and no local server answers",
                 "export OPENAI_API_KEY=… or ANTHROPIC_API_KEY=…, start Ollama, LM Studio, llama.cpp or vLLM, "
                 "or add [providers.NAME] to config.toml", {"ref": None})
