"""Model metadata from the bundled `models.json`: context window, max output, prices, reasoning,
and the wire protocol (a provider's `api`, which one of its models may override: OpenAI serves its
codex models through the Responses API only).

Unknown model ids are allowed: they get the file's defaults (and cost 0), marked `known=False`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import TypedDict, get_args

from treechat.storage.json_types import JsonObject
from treechat.storage.model import Cost, Usage

from .apis import Api, api_of
from .local import UNKNOWN_LOCAL_WINDOW, is_local_url
from .types import Compat, MaxTokensField, ModelCost, ModelInfo


class CompatSaid(TypedDict, total=False):
    """What one `compat` table says: the `Compat` fields it names (mypy holds the names to them)."""

    max_tokens_field: MaxTokensField
    supports_usage_in_streaming: bool
    supports_reasoning_effort: bool
    supports_minimal: bool
    supports_xhigh: bool
    adaptive_thinking: bool


class ModelSpec(TypedDict, total=False):
    """What someone wrote down about a model (models.json, config.toml's models); the rest comes
    from the provider's `model_defaults`, then the catalog's defaults."""

    name: str
    api: Api  # its wire protocol, when not its provider's
    context_window: int
    max_tokens: int
    send_max_tokens: bool  # max_tokens is a limit someone set: requests carry it
    reasoning: bool
    input: list[str]
    cost: dict[str, float]  # USD per million tokens: input, output, cache_read, cache_write
    compat: CompatSaid


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    api: Api  # the protocol of its models, unless a model names its own
    base_url: str
    api_key_env: str | None = None
    local: bool = False
    compat: Compat = Compat()
    models: dict[str, ModelSpec] = field(default_factory=dict)
    # what an id the catalog does not list gets (e.g. every Claude model takes images)
    model_defaults: ModelSpec = field(default_factory=lambda: ModelSpec())
    # what its server lists, for a server named by its URL (empty until it answers); None: the
    # models above are the list. `models` stays what is known about an id either way.
    served: tuple[str, ...] | None = None

    @property
    def listed(self) -> tuple[str, ...]:
        """The model ids a picker offers."""
        return self.served if self.served is not None else tuple(self.models)


def catalog_file() -> str:
    """Where the bundled catalog is (models.json, beside this module)."""
    return str(resources.files(__package__).joinpath("models.json"))


@lru_cache(maxsize=1)
def _data() -> JsonObject:
    data: JsonObject = json.loads(resources.files(__package__).joinpath("models.json").read_text("utf-8"))
    return data


@lru_cache(maxsize=1)
def _defaults() -> ModelSpec:
    return model_spec(_data()["defaults"], "models.json, defaults")


def builtin_providers() -> dict[str, ProviderInfo]:
    out = {}
    for name, p in _table(_data()["providers"], "models.json, providers").items():
        where = f"models.json, provider {name}"
        p = _table(p, where)
        out[name] = ProviderInfo(
            name=name,
            api=api_of(p["api"], where),
            base_url=_str(p["base_url"], where, "base_url"),
            api_key_env=_str(p["api_key_env"], where, "api_key_env") if "api_key_env" in p else None,
            local=_bool(p.get("local", False), where, "local"),
            compat=replace(Compat(), **compat_said(p.get("compat", {}), where)),
            models={m: model_spec(spec, f"{where}, model {m}") for m, spec in _table(p.get("models", {}), where).items()},
            model_defaults=model_spec(p.get("model_defaults", {}), f"{where}, model_defaults"),
        )
    return out


def model_spec(raw: object, where: str) -> ModelSpec:
    """A model's table as a `ModelSpec`; a key it does not know or a value of the wrong kind is a
    ValueError naming `where`."""
    spec = ModelSpec()
    for key, value in _table(raw, where).items():
        match key:
            case "name":
                spec["name"] = _str(value, where, key)
            case "api":
                spec["api"] = api_of(value, where)
            case "context_window":
                spec["context_window"] = _int(value, where, key)
            case "max_tokens":
                spec["max_tokens"] = _int(value, where, key)
            case "send_max_tokens":
                spec["send_max_tokens"] = _bool(value, where, key)
            case "reasoning":
                spec["reasoning"] = _bool(value, where, key)
            case "input":
                spec["input"] = [_str(v, where, key) for v in _list(value, where, key)]
            case "cost":
                spec["cost"] = {k: _number(v, where, f"cost.{k}") for k, v in _table(value, f"{where}, cost").items()
                                if k in ("input", "output", "cache_read", "cache_write") or _unknown(k, where)}
            case "compat":
                spec["compat"] = compat_said(value, where)
            case _:
                _unknown(key, where)
    return spec


def compat_said(raw: object, where: str) -> CompatSaid:
    """A `compat` table, checked: the `Compat` fields by name, each with a value of its kind."""
    said = CompatSaid()
    for key, value in _table(raw, f"{where}, compat").items():
        match key:
            case "max_tokens_field":
                if value not in get_args(MaxTokensField):
                    raise ValueError(f"{where}: compat.max_tokens_field {value!r} is not one of "
                                     f"{', '.join(get_args(MaxTokensField))}")
                said["max_tokens_field"] = "max_completion_tokens" if value == "max_completion_tokens" else "max_tokens"
            case "supports_usage_in_streaming":
                said["supports_usage_in_streaming"] = _bool(value, where, f"compat.{key}")
            case "supports_reasoning_effort":
                said["supports_reasoning_effort"] = _bool(value, where, f"compat.{key}")
            case "supports_minimal":
                said["supports_minimal"] = _bool(value, where, f"compat.{key}")
            case "supports_xhigh":
                said["supports_xhigh"] = _bool(value, where, f"compat.{key}")
            case "adaptive_thinking":
                said["adaptive_thinking"] = _bool(value, where, f"compat.{key}")
            case _:
                _unknown(f"compat.{key}", where)
    return said


def model_info(provider: ProviderInfo, model_id: str) -> ModelInfo:
    """Metadata for `provider/model_id`; defaults for ids the catalog does not know."""
    defaults = _defaults()
    entry = provider.models.get(model_id)
    said: ModelSpec = {**provider.model_defaults, **(entry or {})}  # what someone wrote down
    spec: ModelSpec = {**defaults, **said}
    cost = spec.get("cost") or {}
    # A server on this machine runs a model with the window it was started with, which no catalog
    # knows: until someone says, plan for a small one and show it as unknown.
    unknown_local = "context_window" not in said and (provider.local or is_local_url(provider.base_url))
    window = UNKNOWN_LOCAL_WINDOW if unknown_local else spec.get("context_window", 128_000)
    return ModelInfo(
        id=model_id,
        provider=provider.name,
        api=spec.get("api", provider.api),
        base_url=provider.base_url,
        name=spec.get("name") or model_id,
        reasoning=spec.get("reasoning", False),
        context_window=window,
        max_tokens=spec.get("max_tokens", 16_384),
        cost=ModelCost(**{k: float(cost.get(k, 0)) for k in ("input", "output", "cache_read", "cache_write")}),
        input=tuple(spec.get("input", ["text"])),
        known=entry is not None,
        compat=replace(provider.compat, **spec.get("compat", {})),
        window_known=not unknown_local,
        send_max_tokens=said.get("send_max_tokens", False),
    )


# ------------------------------------------------------------ the checks of a table's values


def _table(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: must be a table")
    return value


def _list(value: object, where: str, key: str) -> list[object]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: {key} must be a list")
    return value


def _str(value: object, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string")
    return value


def _bool(value: object, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {key} must be true or false")
    return value


def _int(value: object, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{where}: {key} must be a whole number over 0")
    return value


def _number(value: object, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{where}: {key} must be a number, 0 or more")
    return float(value)


def _unknown(key: str, where: str) -> bool:
    raise ValueError(f"{where}: unknown key {key!r}")


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
