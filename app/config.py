"""Settings: where files live and which providers exist. API keys are read, never written.

config.toml (in the home folder, or the platform config dir):

    model = "openai/gpt-4.1-mini"      # default model
    thinking = "medium"
    tools = ["read", "ls", "grep"]

    [providers.local]
    base_url = "http://127.0.0.1:8080/v1"
    api = "openai"                     # or "anthropic"
    api_key_env = "LOCAL_KEY"          # or api_key = "..."
    models = ["qwen3-8b"]              # or {"qwen3-8b" = {context_window = 32768}}
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .paths import config_path, resolve_home

APIS = ("openai", "anthropic")
THINKING = ("off", "minimal", "low", "medium", "high", "xhigh")


class ConfigError(Exception):
    """A config file we cannot use; the message names the file and the line."""


@dataclass
class ProviderConfig:
    name: str
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    models: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Settings:
    home: Path
    config_file: Path
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    default_model: str | None = None
    thinking_level: str | None = None
    tools: list[str] = field(default_factory=list)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)


def load_settings(home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    chosen = home or env.get("TREECHAT_HOME") or None
    settings = Settings(home=resolve_home(chosen), config_file=config_path(chosen), env=env)
    path = settings.config_file
    if not path.exists():
        return settings
    text = path.read_text("utf-8", errors="replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: {err}; fix the TOML syntax there.") from None
    _apply(settings, data, text, path)
    return settings


def _fail(path: Path, text: str, key_path: list[str], problem: str) -> ConfigError:
    line = _line_of(text, key_path)
    where = f"{path}, line {line}" if line else str(path)
    return ConfigError(f"{where}: {'.'.join(key_path)} {problem}.")


def _line_of(text: str, key_path: list[str]) -> int | None:
    """Best-effort line of a key: after its [table] header when it has one."""
    lines = text.splitlines()
    *tables, key = key_path
    start = 0
    if tables:
        header = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(re.escape(t) for t in tables) + r"\s*\]")
        found = next((i for i, l in enumerate(lines) if header.match(l)), None)
        if found is None:
            return None
        start = found + 1
    pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
    for i in range(start, len(lines)):
        if tables and lines[i].lstrip().startswith("["):
            break
        if pattern.match(lines[i]):
            return i + 1
    return start if tables else None


def _apply(settings: Settings, data: dict[str, Any], text: str, path: Path) -> None:
    model = data.get("model")
    if model is not None:
        if not isinstance(model, str) or "/" not in model:
            raise _fail(path, text, ["model"], 'must be "PROVIDER/MODEL-ID", e.g. "openai/gpt-4.1-mini"')
        settings.default_model = model
    thinking = data.get("thinking")
    if thinking is not None:
        if thinking not in THINKING:
            raise _fail(path, text, ["thinking"], f"must be one of {', '.join(THINKING)}")
        settings.thinking_level = thinking
    tools = data.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise _fail(path, text, ["tools"], 'must be a list of tool names, e.g. ["read", "ls"]')
        settings.tools = list(tools)
    providers = data.get("providers", {})
    if not isinstance(providers, dict):
        raise _fail(path, text, ["providers"], "must be a table of [providers.NAME] tables")
    for name, table in providers.items():
        if not isinstance(table, dict):
            raise _fail(path, text, ["providers", name], "must be a table")
        settings.providers[name] = _provider(name, table, text, path)


def _provider(name: str, table: dict[str, Any], text: str, path: Path) -> ProviderConfig:
    where = ["providers", name]
    for key in ("base_url", "api_key", "api_key_env"):
        if key in table and not isinstance(table[key], str):
            raise _fail(path, text, where + [key], "must be a string")
    api = table.get("api")
    if api is not None and api not in APIS:
        raise _fail(path, text, where + ["api"], 'must be "openai" or "anthropic"')
    raw_models = table.get("models", {})
    if isinstance(raw_models, list) and all(isinstance(m, str) for m in raw_models):
        models = {m: {} for m in raw_models}
    elif isinstance(raw_models, dict) and all(isinstance(v, dict) for v in raw_models.values()):
        models = {k: dict(v) for k, v in raw_models.items()}
    else:
        raise _fail(path, text, where + ["models"], 'must be a list of ids or a table of id = {context_window = …}')
    return ProviderConfig(name, table.get("base_url"), api, table.get("api_key"), table.get("api_key_env"), models)
