"""Text every backend can store: no UTF-16 surrogates.

JSON escapes UTF-16 code units, so a server can send an emoji's pair split over two stream events
("\\ud83d" then "\\ude00") or half a pair on its own; Python keeps them as surrogate characters,
which UTF-8 (every file and database we write) cannot encode. Before an entry is stored, a split
pair is joined into its character and a lone half becomes U+FFFD, the replacement character.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # (the CLI's sanitizer needs well_formed_text without pydantic)
    from pydantic import BaseModel

_SURROGATE = re.compile(r"[\ud800-\udfff]")
M = TypeVar("M", bound="BaseModel")


def well_formed_text(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    # UTF-16 round trip: a pair in two halves decodes as its character, a lone half as U+FFFD
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _repair(value: object) -> object:
    if isinstance(value, str):
        return well_formed_text(value)
    if isinstance(value, dict):
        return {well_formed_text(k) if isinstance(k, str) else k: _repair(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repair(v) for v in value]
    return value


def well_formed(model: M) -> M:
    """`model` itself when it serializes as UTF-8 (the common case: one dump, no copy), else a copy
    with every string repaired."""
    from pydantic_core import PydanticSerializationError

    try:
        model.model_dump_json()
    except PydanticSerializationError:
        data = _repair(model.model_dump(by_alias=True, exclude_unset=True))
        return type(model).model_validate(data)
    return model
