"""The environment of what a tool starts (bash's shell, grep's scan): treechat's own without its secrets.

A command the model runs (`printenv`, `env`, `cat /proc/self/environ`) shows the model whatever
its environment holds, and the tool result is stored in the session and its exports. So the
children of tools never get: a provider's key (the built-in providers' `*_API_KEY`, every
configured provider's `api_key_env`, any variable ending in `_API_KEY`, and the well-known keys
below), treechat's database URL (`TREECHAT_DATABASE_URL`) and `PGPASSWORD`, well-known
credentials (`GITHUB_TOKEN`, AWS's secret keys, …), nor any variable whose value holds one of
those secrets, a key written in config.toml or the database URL's password. config.toml's
`tool_env = ["NAME", …]` passes the named ones back (a test that needs GITHUB_TOKEN).

MCP servers have their own, smaller environment (app/mcp/server.py): only what their settings name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Keys of providers treechat does not ship, and credentials a shell commonly holds.
WELL_KNOWN = frozenset({
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENROUTER_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY", "CEREBRAS_API_KEY", "PERPLEXITY_API_KEY", "COHERE_API_KEY", "AZURE_OPENAI_API_KEY",
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "NPM_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
})
TREECHAT_SECRETS = frozenset({"TREECHAT_DATABASE_URL", "PGPASSWORD"})
MIN_SECRET = 8  # a value this long or longer is looked for in other variables (a short one would match by chance)


def is_secret(name: str, settings: object = None) -> bool:
    """Is `name` a variable treechat withholds from tools by its name (a provider's key, the
    database URL, a well-known credential)?"""
    return name in withheld({name: ""}, settings)


def withheld(env: Mapping[str, str], settings: object = None) -> set[str]:
    """The names in `env` a tool's child does not get (before `tool_env` passes some back)."""
    from treechat.llm.catalog import builtin_providers

    names = set(WELL_KNOWN | TREECHAT_SECRETS)
    names |= {p.api_key_env for p in builtin_providers().values() if p.api_key_env}
    providers = getattr(settings, "providers", None) or {}
    names |= {p.api_key_env for p in providers.values() if getattr(p, "api_key_env", None)}
    names |= {name for name in env if name.upper().endswith("_API_KEY")}
    secrets = [env[name] for name in names if len(env.get(name) or "") >= MIN_SECRET]
    secrets += [value for value in _config_secrets(env, settings) if len(value) >= MIN_SECRET]
    if secrets:  # the same secret under another name (`DB=$TREECHAT_DATABASE_URL`, a copied key)
        names |= {name for name, value in env.items() if any(secret in value for secret in secrets)}
    return {name for name in names if name in env}


def _config_secrets(env: Mapping[str, str], settings: object) -> list[str]:
    """Keys written in config.toml, the database URL and its password."""
    from treechat.storage.postgres.url import database_url, password_of

    found = [p.api_key for p in (getattr(settings, "providers", None) or {}).values() if getattr(p, "api_key", None)]
    url = database_url(getattr(settings, "database_url", None), env)
    if url:
        found.append(url)
        password = password_of(url)
        if password:
            found.append(password)
    return found


def tool_environment(settings: object = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a tool's child process runs with: `env` (this process's environment) without the
    secrets `withheld` names, except those config.toml's `tool_env` passes back. `settings`
    (config.toml) adds its providers' `api_key_env` and keys; without it the built-in rules apply."""
    env = os.environ if env is None else env
    passed = set(getattr(settings, "tool_env", None) or ())
    out = withheld(env, settings) - passed
    return {name: value for name, value in env.items() if name not in out}
