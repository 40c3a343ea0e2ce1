"""`--mode rpc` against Pi 0.73.1's own transcripts of the same plans (tests/fixtures/pi_protocol/
rpc_*.jsonl, recorded by record_pi.py): the same responses and events, in the same order, of the
same shapes; the in-process server for every plan, the real `treechat --mode rpc` for one."""

from __future__ import annotations

import json

import pytest

from tests.fake_provider import FakeProvider
from treechat.storage.memory import MemoryCatalog

from .conversations import RPC_PLANS, kinds, load_fixture, same_shape, shape
from .helpers import Place, child, in_process


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.mark.parametrize("name", sorted(RPC_PLANS))
async def test_the_same_responses_and_events_as_pi(fake, tmp_path, name) -> None:
    place = Place.make(tmp_path, fake)
    driver, _ = await in_process(place, MemoryCatalog())
    try:
        await RPC_PLANS[name](driver, fake)
    finally:
        await driver.close()
    pi = load_fixture(f"rpc_{name}")
    assert kinds(driver.records) == kinds(pi)
    for ours, theirs in zip(driver.records, pi):
        assert same_shape(ours, theirs), (ours.get("type"), ours.get("command"), shape(ours) ^ shape(theirs))


@pytest.mark.slow  # the real treechat process
async def test_the_real_process_answers_as_pi_does(fake, tmp_path) -> None:
    place = Place.make(tmp_path, fake)
    driver, channel = await child(place)
    try:
        await RPC_PLANS["steer"](driver, fake)
    finally:
        await driver.close()
    assert kinds(driver.records) == kinds(load_fixture("rpc_steer"))
    assert channel.proc.returncode == 0, channel.stderr
    messages = driver.records[-1]["data"]["messages"]
    assert [(m["role"], m["content"][0]["text"]) for m in messages] == [
        ("user", "one"), ("assistant", "first reply"), ("user", "steer me"), ("assistant", "after steer"),
        ("user", "follow me"), ("assistant", "after follow")]
    assert all(json.loads(line) for line in driver.raw)  # stdout: protocol lines only
