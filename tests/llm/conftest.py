from __future__ import annotations

import pytest

from tests.fake_provider import FakeProvider
from treechat.llm.types import Api, ModelCost, ModelInfo


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def model_for(fp: FakeProvider, api: Api, **kw) -> ModelInfo:
    return ModelInfo(
        id=kw.pop("id", "fake-model"),
        provider=kw.pop("provider", api),
        api=api,
        base_url=fp.base_url,
        cost=kw.pop("cost", ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0)),
        **kw,
    )
