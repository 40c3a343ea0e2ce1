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
