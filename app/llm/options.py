"""From config.toml's settings to the stream options every provider request of a run uses."""

from __future__ import annotations

from typing import Any

from .types import CONNECT_TIMEOUT, FIRST_BYTE_TIMEOUT, IDLE_TIMEOUT


def stream_options_from_settings(settings: Any) -> dict[str, Any]:
    """The `stream_options` dict for `AgentSession.create(..., stream_options=...)` / `Agent(...)`.

    Carries the three bounded waits (`connect_timeout`, `first_byte_timeout`, `idle_timeout`);
    a settings object without them (or None) gives the defaults."""
    return {
        "connect_timeout": float(getattr(settings, "connect_timeout", None) or CONNECT_TIMEOUT),
        "first_byte_timeout": float(getattr(settings, "first_byte_timeout", None) or FIRST_BYTE_TIMEOUT),
        "idle_timeout": float(getattr(settings, "idle_timeout", None) or IDLE_TIMEOUT),
    }
