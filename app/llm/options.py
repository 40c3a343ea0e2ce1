"""From config.toml's settings to the stream options every provider request of a run uses."""

from __future__ import annotations

from typing import Any

from .types import CONNECT_TIMEOUT, FIRST_BYTE_TIMEOUT, IDLE_TIMEOUT, MAX_REPLY_MB, REPLY_TIMEOUT, StreamOptionFields


def stream_options_from_settings(settings: Any) -> StreamOptionFields:
    """The `stream_options` dict for `AgentSession.create(..., stream_options=...)` / `Agent(...)`.

    Carries the bounded waits (`connect_timeout`, `first_byte_timeout`, `idle_timeout`,
    `reply_timeout`) and the bound on a reply's size (`max_reply_mb`); a settings object without
    them (or None) gives the defaults."""
    return {
        "connect_timeout": float(getattr(settings, "connect_timeout", None) or CONNECT_TIMEOUT),
        "first_byte_timeout": float(getattr(settings, "first_byte_timeout", None) or FIRST_BYTE_TIMEOUT),
        "idle_timeout": float(getattr(settings, "idle_timeout", None) or IDLE_TIMEOUT),
        "reply_timeout": float(getattr(settings, "reply_timeout", None) or REPLY_TIMEOUT),
        "max_reply_bytes": int(float(getattr(settings, "max_reply_mb", None) or MAX_REPLY_MB) * 1e6),
    }
