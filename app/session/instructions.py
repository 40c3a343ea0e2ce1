"""The user's own instructions set with `/system TEXT`, kept with the session.

They are a `custom` entry (Pi's kind for extension state: never sent to the model as a message)
appended like any setting, so they survive a restart, follow the branch they were set on and are
what `treechat context --json` shows. `--system TEXT` on the command line wins over them for that
run; `/system off` clears them (an entry with `{"text": null}`).
"""

from __future__ import annotations

from typing import Iterable

from treechat.storage.base import SessionStorage
from treechat.storage.model import CustomEntry

CUSTOM_TYPE = "treechat.instructions"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()  # nothing stored on this path: keep whatever config or the command line gave


async def stored_instructions(storage: SessionStorage, path_ids: Iterable[str]) -> str | None | _Unset:
    """The newest stored instructions on the path (ids root → leaf): the text, None when they
    were cleared there, UNSET when none were ever set on it."""
    on_path = {entry_id: i for i, entry_id in enumerate(path_ids)}
    newest: CustomEntry | None = None
    for entry in await storage.find_entries("custom"):
        if isinstance(entry, CustomEntry) and entry.custom_type == CUSTOM_TYPE and entry.id in on_path:
            if newest is None or on_path[entry.id] > on_path[newest.id]:
                newest = entry
    if newest is None:
        return UNSET
    text = newest.data.get("text") if isinstance(newest.data, dict) else None
    return text.strip() or None if isinstance(text, str) else None
