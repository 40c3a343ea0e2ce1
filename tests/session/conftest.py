"""Fixtures of the session tests: the loopback fake provider."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fake_provider import FakeProvider


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp
