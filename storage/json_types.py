"""JSON values as types: the payloads entries carry (tool arguments, details, custom data) and
the rows a store reads. Defined here, at the bottom of the layers, so that storage and the agent
core (`treechat.agent.types` re-exports them) name one type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

# Read-only containers, so a `dict[str, list[str]]` is one; `JsonObject` is the mutable object a
# caller builds (and what json.loads of an object gives).
Json: TypeAlias = None | bool | int | float | str | Sequence["Json"] | Mapping[str, "Json"]
JsonObject: TypeAlias = dict[str, Json]


# A session file's first line as read: `id` is a string (checked where the file is read,
# `session_file._is_header`), Pi's other keys (`timestamp`, `cwd`, `parentSession`, …) are
# strings by the format's rule, and whatever a newer writer added is kept as it came. The one
# untyped shape storage hands on (a TypedDict would refuse those extra keys).
SessionHeader: TypeAlias = dict[str, Any]

# What a database row holds, column by column (SQLite's and PostgreSQL's plain values), and a
# row written or read positionally. A read whose columns are known says so with its own tuple.
SqlValue: TypeAlias = str | int | float | bytes | None
Row: TypeAlias = tuple[SqlValue, ...]

__all__ = ["Json", "JsonObject", "Row", "SessionHeader", "SqlValue"]
