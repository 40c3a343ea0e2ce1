"""The user's own instructions set with `/system TEXT`, kept with the session.

They are a `custom` entry (Pi's kind for extension state: never sent to the model as a message)
appended like any setting, so they survive a restart, follow the branch they were set on and are
what `treechat context --json` shows. `--system TEXT` on the command line wins over them for that
run; `/system off` clears them (an entry with `{"text": null}`).
"""

from __future__ import annotations

from collections.abc import Iterable

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
    return _newest_on_path(await _stored(storage), path_ids)


async def stored_instructions_at(storage: SessionStorage, leaf_id: str | None) -> str | None | _Unset:
    """The same for the path to `leaf_id`, read only when the session ever stored instructions
    (most never did: `treechat context` then reads the path once, for the context itself)."""
    candidates = await _stored(storage)
    if not candidates or leaf_id is None:
        return UNSET
    return _newest_on_path(candidates, [e.id for e in await storage.get_path_to_root(leaf_id)])


async def _stored(storage: SessionStorage) -> list[CustomEntry]:
    return [e for e in await storage.find_entries("custom")
            if isinstance(e, CustomEntry) and e.custom_type == CUSTOM_TYPE]


def _newest_on_path(candidates: list[CustomEntry], path_ids: Iterable[str]) -> str | None | _Unset:
    on_path = {entry_id: i for i, entry_id in enumerate(path_ids)}
    newest: CustomEntry | None = None
    for entry in candidates:
        if entry.id in on_path and (newest is None or on_path[entry.id] > on_path[newest.id]):
            newest = entry
    if newest is None:
        return UNSET
    text = newest.data.get("text") if isinstance(newest.data, dict) else None
    return text.strip() or None if isinstance(text, str) else None
