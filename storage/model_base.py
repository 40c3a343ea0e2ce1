"""The base of every persisted model, and where a model's "fields set" come from.

`dump` writes the fields a model has *set*. Objects built in Python (a constructor,
`model_validate` of a dict, `model_construct`) set every field that has a value — type tags,
timestamps, defaults — in the nested models made from dicts too; objects read from disk (the
`parse_*` functions of storage.model, with the WIRE context) set exactly the keys they were read
with, also when one is later put inside an object built in Python.

The mark is made after construction, not in `model_post_init`: pydantic calls that for every
nested model of every read (~16% of validating a path), where it has nothing to do.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# The validation context of reads from disk (storage.model's parse_* functions)
WIRE = {"wire": True}


class Model(BaseModel):
    """Base for every persisted object: camelCase on the wire, unknown fields kept (the module's
    doc says which fields count as set)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        serialize_by_alias=True,
    )

    def __init__(self, /, **data: Any) -> None:  # (Any: handed to pydantic as given)
        super().__init__(**data)
        _mark_built(self, data)

    # pydantic treats an overridden __init__ as a "custom init" and then calls it for every nested
    # model it validates, wire reads included; flagged as its base one, it runs for constructor
    # calls only (nested models are marked by _mark_built).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: object, *, context: object | None = None, **options: Any) -> Self:
        made = super().model_validate(obj, context=context, **options)
        if not _is_wire(context):
            _mark_built(made, obj)
        return made

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, *, context: object | None = None,
                            **options: Any) -> Self:
        made = super().model_validate_json(json_data, context=context, **options)
        if not _is_wire(context):
            _mark_built(made, None)
        return made

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        made = super().model_construct(_fields_set, **values)
        _mark_built(made, values)
        return made


def _is_wire(context: object) -> bool:
    return context is WIRE or (isinstance(context, dict) and bool(context.get("wire")))


def _mark_built(made: BaseModel, given: object) -> None:
    """Mark every field with a value as set, in `made` and the models validation made under it;
    models handed in (`given` holds them) keep their own marks, and so does what is under them."""
    handed: set[int] = set()
    _collect_models(given, handed)
    if id(made) not in handed:  # model_validate(instance) returns the instance itself
        _mark_tree(made, handed)


def _collect_models(value: object, into: set[int]) -> None:
    if isinstance(value, BaseModel):
        into.add(id(value))
    elif isinstance(value, dict):
        for item in value.values():
            _collect_models(item, into)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_models(item, into)


def _mark_tree(model: BaseModel, handed: set[int]) -> None:
    values = model.__dict__
    marked = model.__pydantic_fields_set__
    for name in type(model).__pydantic_fields__:
        value = values.get(name)
        if value is None:
            continue
        marked.add(name)
        # only fields typed as models or lists of them hold models validation made; an `object`
        # field (details, data) keeps what it was given
        if isinstance(value, BaseModel):
            if id(value) not in handed:
                _mark_tree(value, handed)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, BaseModel) and id(item) not in handed:
                    _mark_tree(item, handed)
