"""Shared by the doctor tests: local-server probe targets that answer nothing."""

from __future__ import annotations

import socket

import pytest


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def quiet_servers() -> tuple[tuple[str, str], ...]:
    return tuple((name, f"http://127.0.0.1:{closed_port()}") for name in ("ollama", "lmstudio", "llamacpp", "vllm"))
