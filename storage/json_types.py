"""JSON values as types: the payloads entries carry (tool arguments, details, custom data) and
the rows a store reads. Defined here, at the bottom of the layers, so that storage and the agent
core (`treechat.agent.types` re-exports them) name one type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Read-only containers, so a `dict[str, list[str]]` is one; `JsonObject` is the mutable object a
# caller builds (and what json.loads of an object gives).
Json: TypeAlias = None | bool | int | float | str | Sequence["Json"] | Mapping[str, "Json"]
JsonObject: TypeAlias = dict[str, Json]

__all__ = ["Json", "JsonObject"]
