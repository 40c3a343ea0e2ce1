"""Resolve "provider/model-id" to model metadata, a base URL and a key; dispatch streams by API.

Precedence for a provider: built-in catalog < environment (OPENAI_BASE_URL, …) < config.toml.
Keys come from the environment or config and live only in memory here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, assert_never

from ..config.settings import base_url_problem
from .abort import AbortSignal
from .apis import Api
from .catalog import ProviderInfo, builtin_providers, model_info
from .local import is_local_url
from .types import LlmContext, ModelInfo, StreamEvent, StreamFn, StreamOptions

if TYPE_CHECKING:
    from .detect import UrlServer

_ENV = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


class ModelRefError(ValueError):
    """A model reference we cannot resolve; the message says what to type instead."""


def base_url_env_problems(env: Mapping[str, str], settings: Any = None) -> dict[str, str]:
    """The base-URL variables (OPENAI_BASE_URL, …) set to something no request could use, each
    with why (words that follow its name); one that config.toml overrides does not count."""
    overridden = {name for name, cfg in (getattr(settings, "providers", None) or {}).items() if cfg.base_url}
    out: dict[str, str] = {}
    for name, (_, url_env) in _ENV.items():
        problem = base_url_problem(env[url_env]) if env.get(url_env) and name not in overridden else None
        if problem:
            out[url_env] = problem
    return out


class ModelRegistry:
    def __init__(self, settings: Any = None, env: Mapping[str, str] | None = None) -> None:
        import os

        self.env = env if env is not None else (getattr(settings, "env", None) or os.environ)
        self.settings = settings
        if problems := base_url_env_problems(self.env, settings):
            raise ModelRefError(" ".join(f"{var} (in the environment) {why}; fix it or unset it."
                                         for var, why in problems.items()))
        self._providers = builtin_providers()
        catalog_urls = {name: p.base_url for name, p in self._providers.items()}
        self._keys: dict[str, str | None] = {}
        self._url_source: dict[str, str] = {}  # providers whose base URL the person set: where
        self._declared: dict[str, tuple[str, ...]] = {}  # the models config.toml lists for a provider
        for name, (key_env, url_env) in _ENV.items():
            p = self._providers[name]
            if self.env.get(url_env):
                self._providers[name] = dataclasses.replace(p, base_url=self.env[url_env])
                self._url_source[name] = url_env
            self._keys[name] = self.env.get(key_env) or None
        for name, p in self._providers.items():
            if p.api_key_env and name not in self._keys:
                self._keys[name] = self.env.get(p.api_key_env) or None
        for name, cfg in (getattr(settings, "providers", None) or {}).items():
            self._add_configured(name, cfg)
        # A Chat Completions server named by its URL serves what it lists, not the catalog of the
        # provider it stands in for (OPENAI_BASE_URL at a llama.cpp server), nor that provider's
        # quirks and defaults (OpenAI's `max_completion_tokens`, its models' image input);
        # config.toml's `models` for it, when given, are the list instead (and it is not asked).
        for name, p in list(self._providers.items()):
            if (p.api == "openai" and not p.local and name in self._url_source
                    and p.base_url.rstrip("/") != catalog_urls.get(name, "").rstrip("/")):
                self._providers[name] = dataclasses.replace(p, served=self._declared.get(name, ()), compat={},
                                                            model_defaults={})

    def _add_configured(self, name: str, cfg: Any) -> None:
        base = self._providers.get(name)
        if base is None and not cfg.base_url:
            raise ModelRefError(f"[providers.{name}] in config.toml needs a base_url.")
        if cfg.base_url:
            self._url_source[name] = "config.toml"
        # a max_tokens written in config.toml goes out with every request (the catalog's is a ceiling)
        declared = {m: {**spec, "send_max_tokens": True} if "max_tokens" in spec else spec for m, spec in cfg.models.items()}
        merged_models = {**(base.models if base else {}), **declared}
        self._providers[name] = ProviderInfo(
            name=name,
            api=cfg.api or (base.api if base else "openai"),
            base_url=cfg.base_url or base.base_url,  # type: ignore[union-attr]
            api_key_env=cfg.api_key_env or (base.api_key_env if base else None),
            local=base.local if base else False,
            compat=dict(base.compat) if base else {},
            models=merged_models,
            model_defaults=dict(base.model_defaults) if base else {},
        )
        self._declared[name] = tuple(declared)
        if cfg.api_key:
            self._keys[name] = cfg.api_key
        elif cfg.api_key_env:
            self._keys[name] = self.env.get(cfg.api_key_env) or None

    @property
    def provider_names(self) -> list[str]:
        return sorted(self._providers)

    def provider(self, name: str) -> ProviderInfo | None:
        return self._providers.get(name)

    def add_provider(self, info: ProviderInfo, api_key: str | None = None) -> None:
        """Register a provider found at run time (e.g. a detected local server)."""
        self._providers[info.name] = info
        if api_key is not None:
            self._keys[info.name] = api_key

    def api_key(self, provider: str) -> str | None:
        return self._keys.get(provider)

    def url_servers(self) -> list[UrlServer]:
        """The servers named by their URL whose models are what they list (asked by
        `treechat.llm.detect.ask_url_servers`), each with where its URL was set and its key."""
        from .detect import UrlServer

        return [UrlServer(name, p.base_url, self._url_source[name], self._keys.get(name))
                for name, p in sorted(self._providers.items()) if p.served == () and name in self._url_source]

    def url_source(self, provider: str) -> str | None:
        """Where a provider's base URL was set ("OPENAI_BASE_URL", "config.toml"); None: the catalog's."""
        return self._url_source.get(provider)

    def serve(self, provider: str, models: tuple[str, ...]) -> None:
        """What a server named by its URL said it serves: the list its provider offers from now on
        (a server on this machine or the local network is local: no key needed, no proxy)."""
        info = self._providers[provider]
        self._providers[provider] = dataclasses.replace(info, served=models,
                                                        local=info.local or is_local_url(info.base_url))

    def providers_with_keys(self) -> list[str]:
        """The providers a key was found for (environment or config.toml), by name."""
        return sorted(name for name, key in self._keys.items() if key)

    def key_problem(self, model: ModelInfo) -> str | None:
        """Why a request to `model` cannot go out for lack of a key (None: it can).

        Servers on this machine or the local network (a local kind, or a base URL there) and
        providers that name no key variable need none."""
        info = self._providers.get(model.provider)
        if info is None or info.local or is_local_url(info.base_url) or self._keys.get(model.provider):
            return None
        if not info.api_key_env and model.provider not in _ENV:
            return None
        var = _ENV[model.provider][0] if model.provider in _ENV else info.api_key_env
        return (f"No API key for {model.provider}: set {var}, or add api_key to [providers.{model.provider}] "
                f"in config.toml, or pick a local model (Ctrl+L).")

    def resolve(self, ref: str) -> ModelInfo:
        provider, sep, model_id = ref.partition("/")
        if not sep or not provider or not model_id:
            raise ModelRefError(f"Give the model as PROVIDER/MODEL-ID (e.g. openai/gpt-4.1-mini), not {ref!r}.")
        info = self._providers.get(provider)
        if info is None:
            raise ModelRefError(
                f"Unknown provider {provider!r} in {ref!r}; use one of {', '.join(self.provider_names)} "
                f"or add [providers.{provider}] to config.toml."
            )
        return _with_route(info, model_info(info, model_id))

    def apis(self, name: str) -> tuple[Api, dict[str, Api]]:
        """The protocol a provider speaks, and its models (by id) that speak another one."""
        info = self._providers[name]
        others = {m: model.api for m in info.models
                  if (model := model_info(info, m)).api != info.api and model.api != "unknown"}
        return info.api, others

    def models(self) -> list[ModelInfo]:
        """Every model the catalog or config names, for pickers."""
        return [_with_route(p, model_info(p, m)) for p in self._providers.values() for m in p.listed]


def _with_route(provider: ProviderInfo, model: ModelInfo) -> ModelInfo:
    """Carry the provider's `local` mark on the model: requests to local providers skip proxies."""
    return dataclasses.replace(model, local=True) if provider.local and not model.local else model


def adapter(api: Api) -> StreamFn:
    """The stream function of a wire protocol: the one table from Api to adapter (each imported on
    first use, so a command that sends nothing loads no HTTP stack)."""
    match api:
        case "openai":
            from .openai import stream_openai

            return stream_openai
        case "anthropic":
            from .anthropic import stream_anthropic

            return stream_anthropic
        case "openai-responses":
            from .responses import stream_responses

            return stream_responses
        case _:
            assert_never(api)


def stream_model(
    model: ModelInfo, context: LlmContext, options: StreamOptions, signal: AbortSignal | None = None
) -> AsyncIterator[StreamEvent]:
    """The real stream function: picks the adapter for the model's wire protocol."""
    if model.api == "unknown":
        return _unsupported(model)
    return adapter(model.api)(model, context, options, signal)


async def _unsupported(model: ModelInfo) -> AsyncIterator[StreamEvent]:
    from treechat.storage.model import AssistantMessage

    msg = AssistantMessage(api=model.api, provider=model.provider, model=model.id, stop_reason="error",
                           error_message=f"No model is chosen ({model.ref}); pick one with Ctrl+L or --model.")
    yield StreamEvent("error", msg)
