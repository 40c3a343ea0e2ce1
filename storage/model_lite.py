"""What the vocabulary offers that needs no pydantic: ids, timestamps, the invalid-entry error
(storage.model re-exports these) and an entry's stored line; storage/on_demand.py has the
functions that do need pydantic.

A streamed `treechat import` of a valid file never builds a model (imports/wire_check.py proves
its lines valid), so the modules on its path import these rather than storage.model and start
without pydantic (~0.1 s of CPU).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Entry


class InvalidEntryError(ValueError):
    """Input that is not a valid entry or message; the message names the field."""


def now_iso() -> str:
    """Current time as Pi writes it: ISO-8601 UTC with milliseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def iso_to_ms(iso: str) -> float | int:
    """Epoch milliseconds of an ISO timestamp, like JavaScript's Date.parse (NaN if invalid)."""
    try:
        dt = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return float("nan")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(round(dt.timestamp() * 1000))


def ms_to_iso(ms: float) -> str:
    """Epoch milliseconds → ISO-8601 UTC with milliseconds and a Z (Pi's Date.toISOString);
    "" for a value no date can hold (a corrupt timestamp must not break a list or an import)."""
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return ""
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry_json(entry: Entry) -> str:
    """An entry's stored line (no newline): compact like Pi's JSON.stringify, only the keys that
    are set (model_base.py says which)."""
    return entry.model_dump_json(by_alias=True, exclude_unset=True)


def new_entry_id(taken: set[str] | None = None) -> str:
    """8 lowercase hex digits, redrawn on collision (Pi: first 8 chars of a UUIDv4)."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if not taken or candidate not in taken:
            return candidate
    return secrets.token_hex(16)


def new_session_id() -> str:
    """A UUIDv7 (time-ordered, like Pi's session ids): 48-bit ms timestamp, version, random."""
    ms = now_ms() & ((1 << 48) - 1)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
