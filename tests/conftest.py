"""Shared fixtures. `catalog`: every storage backend, so storage and session tests run against all."""

from __future__ import annotations

import importlib

import pytest

from treechat.storage import BACKENDS, open_catalog


def _available(kind: str) -> bool:
    try:
        module = importlib.import_module(f"treechat.storage.{kind}")
    except ImportError:
        return False
    return getattr(module, "__file__", None) is not None  # not a half-written namespace package


@pytest.fixture(params=[k for k in BACKENDS if _available(k)])
async def catalog(request, tmp_path):
    cat = await open_catalog(request.param, tmp_path)
    cat.kind = request.param  # type: ignore[attr-defined]
    yield cat
    await cat.close()


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real home folder: skills and prompt templates are looked for in
    ~/.pi, ~/.claude and ~/.agents, which would make a machine's own files part of a test."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("user-home")))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
