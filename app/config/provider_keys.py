"""Where a provider's API key comes from, by name only (the doctor and the model picker say it;
neither ever holds or shows the key itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm.catalog import builtin_providers

if TYPE_CHECKING:
    from .settings import Settings

KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def key_source(provider: str, settings: Settings | None = None) -> str | None:
    """"api_key in config.toml", the environment variable read for `provider`, or None when it
    names none. Mirrors `ModelRegistry`'s precedence: config api_key, config api_key_env, the
    provider's own variable."""
    configured = settings.providers.get(provider) if settings is not None else None
    if configured is not None and configured.api_key:
        return "api_key in config.toml"
    builtin = builtin_providers().get(provider)
    return ((configured.api_key_env if configured is not None else None) or KEY_VARS.get(provider)
            or (builtin.api_key_env if builtin is not None else None))


def missing_key_hint(provider: str, settings: Settings | None = None) -> str:
    """One short clause for a provider without its key: "no key: set OPENAI_API_KEY"."""
    var = key_source(provider, settings)
    if var and var != "api_key in config.toml":
        return f"no key: set {var}"
    return f"no key: add api_key to [providers.{provider}] in config.toml"
