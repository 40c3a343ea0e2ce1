"""From config.toml's settings to the stream options every provider request of a run uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .types import CONNECT_TIMEOUT, FIRST_BYTE_TIMEOUT, IDLE_TIMEOUT, MAX_REPLY_MB, REPLY_TIMEOUT, StreamOptionFields

if TYPE_CHECKING:
    from treechat.config.settings import Settings


def stream_options_from_settings(settings: Settings | None) -> StreamOptionFields:
    """The `stream_options` dict for `AgentSession.create(..., stream_options=...)` / `Agent(...)`.

    Carries the bounded waits (`connect_timeout`, `first_byte_timeout`, `idle_timeout`,
    `reply_timeout`) and the bound on a reply's size (`max_reply_mb`); None gives the defaults."""
    if settings is None:
        return {"connect_timeout": CONNECT_TIMEOUT, "first_byte_timeout": FIRST_BYTE_TIMEOUT, "idle_timeout": IDLE_TIMEOUT,
                "reply_timeout": REPLY_TIMEOUT, "max_reply_bytes": int(MAX_REPLY_MB * 1e6)}
    return {
        "connect_timeout": settings.connect_timeout,
        "first_byte_timeout": settings.first_byte_timeout,
        "idle_timeout": settings.idle_timeout,
        "reply_timeout": settings.reply_timeout,
        "max_reply_bytes": int(settings.max_reply_mb * 1e6),
    }
