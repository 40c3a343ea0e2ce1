"""The tree over RPC (treechat's own commands): get_tree, move_to (a branch made by prompting
from an earlier point, summaries of the branch left), label."""

from __future__ import annotations

import pytest

from tests.fake_provider import FakeProvider
from treechat.storage.memory import MemoryCatalog

from .conversations import USAGE
from .helpers import Place, in_process
from .test_rpc_commands import ask, data


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
async def rpc(fake, tmp_path):
    driver, server = await in_process(Place.make(tmp_path, fake), MemoryCatalog())
    yield driver
    await driver.close()


def conversation(tree: dict) -> list[dict]:
    return [e for e in tree["entries"] if e["type"] == "message"]


async def test_move_to_makes_a_branch_that_get_tree_shows(rpc, fake) -> None:
    await ask(rpc, "q1", "a1", fake)
    await ask(rpc, "q2", "a2", fake)
    tree = data(await rpc.call({"type": "get_tree"}))
    assert isinstance(tree, dict)
    messages = conversation(tree)
    assert [(m["role"], m["preview"]) for m in messages] == [("user", "q1"), ("assistant", "a1"), ("user", "q2"),
                                                             ("assistant", "a2")]
    a1, a2 = messages[1]["id"], messages[3]["id"]
    assert tree["leafId"] == a2 and messages[2]["parentId"] == a1
    assert all({"id", "parentId", "type", "preview", "label", "timestamp"} <= set(e) for e in tree["entries"])

    assert data(await rpc.call({"type": "move_to", "entryId": a1})) == {"leafId": a1}
    assert [m["content"][0]["text"] for m in data(await rpc.call({"type": "get_messages"}))["messages"]] == [  # type: ignore[index]
        "q1", "a1"]
    await ask(rpc, "q2 again", "other", fake)
    sent = fake.requests[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == ["q1", "a1", "q2 again"]  # not the old branch

    tree = data(await rpc.call({"type": "get_tree"}))
    children = [e for e in conversation(tree) if e["parentId"] == a1]  # type: ignore[arg-type]
    assert [c["preview"] for c in children] == ["q2", "q2 again"]  # a fork at a1
    assert tree["leafId"] != a2  # type: ignore[index]

    assert data(await rpc.call({"type": "move_to", "entryId": a2})) == {"leafId": a2}  # and back
    assert data(await rpc.call({"type": "get_last_assistant_text"})) == {"text": "a2"}


async def test_move_to_with_a_summary_of_the_branch_left(rpc, fake) -> None:
    await ask(rpc, "q1", "a1", fake)
    await ask(rpc, "q2", "a2", fake)
    a1 = conversation(data(await rpc.call({"type": "get_tree"})))[1]["id"]  # type: ignore[arg-type]
    given = data(await rpc.call({"type": "move_to", "entryId": a1, "summary": "we tried q2"}))
    assert isinstance(given, dict) and given["summaryEntryId"] == given["leafId"] != a1
    roles = [m["role"] for m in data(await rpc.call({"type": "get_messages"}))["messages"]]  # type: ignore[index]
    assert roles == ["user", "assistant", "branchSummary"]

    fake.script_openai(["the model's summary"], usage=USAGE)
    a2 = conversation(data(await rpc.call({"type": "get_tree"})))[3]["id"]  # type: ignore[arg-type]
    await rpc.call({"type": "move_to", "entryId": a2})
    written = data(await rpc.call({"type": "move_to", "entryId": a1, "summarize": True,
                                   "customInstructions": "short"}))
    assert isinstance(written, dict) and "summaryEntryId" in written
    last = data(await rpc.call({"type": "get_messages"}))["messages"][-1]  # type: ignore[index]
    assert last["role"] == "branchSummary" and "the model's summary" in last["summary"]


async def test_move_to_refusals(rpc, fake) -> None:
    assert not (await rpc.call({"type": "move_to", "entryId": "nope"}))["success"]
    missing = await rpc.call({"type": "move_to"})
    assert not missing["success"] and "entryId" in missing["error"]
    await ask(rpc, "q1", "a1", fake)
    assert data(await rpc.call({"type": "move_to", "entryId": None})) == {"leafId": None}
    assert data(await rpc.call({"type": "get_messages"})) == {"messages": []}


async def test_label(rpc, fake) -> None:
    await ask(rpc, "q1", "a1", fake)
    a1 = conversation(data(await rpc.call({"type": "get_tree"})))[1]["id"]  # type: ignore[arg-type]
    assert data(await rpc.call({"type": "label", "entryId": a1, "label": "good one"})) is None
    labelled = {e["id"]: e["label"] for e in data(await rpc.call({"type": "get_tree"}))["entries"]}  # type: ignore[index]
    assert labelled[a1] == "good one"
    assert data(await rpc.call({"type": "label", "entryId": a1, "label": None})) is None
    labelled = {e["id"]: e["label"] for e in data(await rpc.call({"type": "get_tree"}))["entries"]}  # type: ignore[index]
    assert labelled[a1] is None
    assert not (await rpc.call({"type": "label", "entryId": "nope", "label": "x"}))["success"]
