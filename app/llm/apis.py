"""The wire protocols treechat speaks, by the name config.toml and the catalog give them.

Imports nothing, so config.toml's checks (`treechat.config.settings`) can name them without
loading a provider; `treechat.llm.registry.adapter` maps each to its stream function.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

Api = Literal["openai", "anthropic", "openai-responses"]
APIS: tuple[Api, ...] = get_args(Api)

# What `treechat doctor` and the README call each
TITLES: dict[Api, str] = {
    "openai": "OpenAI Chat Completions",
    "anthropic": "Anthropic Messages",
    "openai-responses": "OpenAI Responses",
}


# What Pi calls each: the `api` of the assistant messages an adapter writes, and of a model in
# Pi's JSON (`treechat.protocols`)
PiApi = Literal["openai-completions", "anthropic-messages", "openai-responses"]
PI_NAMES: dict[Api, PiApi] = {
    "openai": "openai-completions",
    "anthropic": "anthropic-messages",
    "openai-responses": "openai-responses",
}


def is_api(value: object) -> TypeGuard[Api]:
    return value in APIS


def api_of(value: object, where: str) -> Api:
    """`value` as an Api, or a ValueError naming `where` and the names there are."""
    if is_api(value):
        return value
    raise ValueError(f"{where}: api {value!r} is not one of {', '.join(APIS)}")


def one_of() -> str:
    """The names as a sentence fragment: '"openai", "anthropic" or "openai-responses"'."""
    quoted = [f'"{name}"' for name in APIS]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]
