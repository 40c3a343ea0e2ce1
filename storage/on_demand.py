"""storage.model's functions for the modules that start without pydantic: each imports the models
at its first call. A streamed `treechat import` of a valid file calls none of them (imports/wire_check.py
proves its lines); a line the proof refuses, a deep line or a lax value does, and so loads pydantic
then. Loops over many lines that all become models call storage.model's own functions instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .json_types import JsonObject
    from .model import Entry
    from .views import EntryView


def parse_entry(data: JsonObject | str | bytes) -> Entry:
    """storage.model.parse_entry: one entry validated (InvalidEntryError names the field)."""
    from .model import parse_entry as parse

    return parse(data)


def parse_entries_json(data: str | bytes, first_index: int = 0) -> list[Entry]:
    """storage.model.parse_entries_json: a JSON array of entries validated in one call."""
    from .model import parse_entries_json as parse

    return parse(data, first_index)


def view_of_entry(entry: Entry) -> EntryView:
    """The view of a validated entry (same fields a decoded line would give): model_views.py's."""
    from .model_views import view_of_model

    return view_of_model(entry)
