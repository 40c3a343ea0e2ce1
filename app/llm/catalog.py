"""Model metadata from the bundled `models.json`: context window, max output, prices, reasoning,
and the wire protocol (a provider's `api`, which one of its models may override: OpenAI serves its
codex models through the Responses API only).

Unknown model ids are allowed: they get the file's defaults (and cost 0), marked `known=False`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from treechat.storage.model import Cost, Usage

from .apis import Api, api_of
from .local import UNKNOWN_LOCAL_WINDOW, is_local_url
from .types import ModelCost, ModelInfo


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    api: Api  # the protocol of its models, unless a model names its own
    base_url: str
    api_key_env: str | None = None
    local: bool = False
    compat: dict[str, Any] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    # what an id the catalog does not list gets (e.g. every Claude model takes images)
    model_defaults: dict[str, Any] = field(default_factory=dict)
    # what its server lists, for a server named by its URL (empty until it answers); None: the
    # models above are the list. `models` stays what is known about an id either way.
    served: tuple[str, ...] | None = None

    @property
    def listed(self) -> tuple[str, ...]:
        """The model ids a picker offers."""
        return self.served if self.served is not None else tuple(self.models)


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("models.json").read_text("utf-8"))


def default_context_window() -> int:
    """The window an id gets when neither the catalog nor config.toml names one."""
    return int(_data()["defaults"]["context_window"])


def builtin_providers() -> dict[str, ProviderInfo]:
    out = {}
    for name, p in _data()["providers"].items():
        out[name] = ProviderInfo(
            name=name,
            api=api_of(p["api"], f"models.json, provider {name}"),
            base_url=p["base_url"],
            api_key_env=p.get("api_key_env"),
            local=bool(p.get("local")),
            compat=dict(p.get("compat", {})),
            models=dict(p.get("models", {})),
            model_defaults=dict(p.get("model_defaults", {})),
        )
    return out


def model_info(
    provider: ProviderInfo, model_id: str, overrides: dict[str, Any] | None = None
) -> ModelInfo:
    """Metadata for `provider/model_id`; defaults for ids the catalog does not know."""
    defaults = _data()["defaults"]
    entry = provider.models.get(model_id)
    said = {**provider.model_defaults, **(entry or {}), **(overrides or {})}  # what someone wrote down
    spec = {**defaults, **said}
    cost = spec.get("cost") or {}
    # A server on this machine runs a model with the window it was started with, which no catalog
    # knows: until someone says, plan for a small one and show it as unknown.
    unknown_local = "context_window" not in said and (provider.local or is_local_url(provider.base_url))
    window = UNKNOWN_LOCAL_WINDOW if unknown_local else int(spec.get("context_window", defaults["context_window"]))
    return ModelInfo(
        id=model_id,
        provider=provider.name,
        api=api_of(spec["api"], f"model {provider.name}/{model_id}") if "api" in spec else provider.api,
        base_url=provider.base_url,
        name=spec.get("name") or model_id,
        reasoning=bool(spec.get("reasoning")),
        context_window=window,
        max_tokens=int(spec.get("max_tokens", defaults["max_tokens"])),
        cost=ModelCost(**{k: float(cost.get(k, 0)) for k in ("input", "output", "cache_read", "cache_write")}),
        input=tuple(spec.get("input", ["text"])),
        known=entry is not None,
        compat={**provider.compat, **spec.get("compat", {})},
        window_known=not unknown_local,
        send_max_tokens=bool(said.get("send_max_tokens")),
    )


def with_cost(model: ModelInfo, usage: Usage) -> Usage:
    """Usage with its cost filled from the model's prices (USD per million tokens)."""
    c = model.cost
    parts = {
        "input": c.input * usage.input / 1e6,
        "output": c.output * usage.output / 1e6,
        "cache_read": c.cache_read * usage.cache_read / 1e6,
        "cache_write": c.cache_write * usage.cache_write / 1e6,
    }
    usage.cost = Cost(**parts, total=sum(parts.values()))
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return usage
