"""Pi 0.73.1's session-manager/build-context tests (buildSessionContext), run through Session on every backend."""

from __future__ import annotations

import pytest

from treechat.session.session import Session
from treechat.storage.base import EntryNotFoundError

from .helpers import assistant, entry, msg_entry, texts, user


async def load(catalog, entries, leaf=None):
    storage, _ = await catalog.import_session({"cwd": "/tmp"}, entries, leaf or (entries[-1].id if entries else None))
    return await Session.open(storage)


async def test_empty_session(catalog):
    s = await load(catalog, [])
    ctx = await s.build_session_context()
    assert ctx.messages == [] and ctx.thinking_level == "off" and ctx.model is None


async def test_single_user_message(catalog):
    s = await load(catalog, [msg_entry("1", None, user("hi"))])
    ctx = await s.build_session_context()
    assert [m.role for m in ctx.messages] == ["user"]


async def test_chain_in_order(catalog):
    s = await load(catalog, [msg_entry("1", None, user("q1")), msg_entry("2", "1", assistant("r1")),
                             msg_entry("3", "2", user("q2")), msg_entry("4", "3", assistant("r2"))])
    assert texts(await s.build_session_context()) == ["q1", "r1", "q2", "r2"]


async def test_thinking_level_is_tracked(catalog):
    s = await load(catalog, [msg_entry("1", None, user("q")), entry("thinking_level_change", "2", "1", thinkingLevel="high"),
                             msg_entry("3", "2", assistant("r"))])
    ctx = await s.build_session_context()
    assert ctx.thinking_level == "high" and len(ctx.messages) == 2


async def test_model_from_assistant(catalog):
    s = await load(catalog, [msg_entry("1", None, user("q")), msg_entry("2", "1", assistant("r"))])
    assert (await s.build_session_context()).model == {"provider": "anthropic", "modelId": "claude-test"}


async def test_later_assistant_beats_model_change(catalog):
    s = await load(catalog, [msg_entry("1", None, user("q")), entry("model_change", "2", "1", provider="openai", modelId="gpt-4"),
                             msg_entry("3", "2", assistant("r"))])
    assert (await s.build_session_context()).model == {"provider": "anthropic", "modelId": "claude-test"}


async def test_compaction_with_kept_range(catalog):
    s = await load(catalog, [
        msg_entry("1", None, user("first")), msg_entry("2", "1", assistant("response1")),
        msg_entry("3", "2", user("second")), msg_entry("4", "3", assistant("response2")),
        entry("compaction", "5", "4", summary="Summary", firstKeptEntryId="3", tokensBefore=1000),
        msg_entry("6", "5", user("third")), msg_entry("7", "6", assistant("response3"))])
    ctx = await s.build_session_context()
    assert texts(ctx) == ["Summary", "second", "response2", "third", "response3"]
    assert ctx.messages[0].role == "compactionSummary"


async def test_compaction_keeping_from_first_entry(catalog):
    s = await load(catalog, [msg_entry("1", None, user("a")), msg_entry("2", "1", assistant("b")),
                             entry("compaction", "3", "2", summary="S", firstKeptEntryId="1", tokensBefore=10),
                             msg_entry("4", "3", user("c"))])
    ctx = await s.build_session_context()
    assert len(ctx.messages) == 4 and ctx.messages[0].role == "compactionSummary"


async def test_two_compactions_latest_wins(catalog):
    s = await load(catalog, [
        msg_entry("1", None, user("1")), msg_entry("2", "1", assistant("2")),
        entry("compaction", "3", "2", summary="First summary", firstKeptEntryId="1", tokensBefore=10),
        msg_entry("4", "3", user("4")), msg_entry("5", "4", assistant("5")),
        entry("compaction", "6", "5", summary="Second summary", firstKeptEntryId="4", tokensBefore=20),
        msg_entry("7", "6", user("7"))])
    assert texts(await s.build_session_context()) == ["Second summary", "4", "5", "7"]


async def test_retained_tail_keeps_only_what_follows(catalog):
    s = await load(catalog, [
        msg_entry("1", None, user("old")), msg_entry("2", "1", assistant("old reply")),
        entry("compaction", "3", "2", summary="S", firstKeptEntryId="1", tokensBefore=10, retainedTail=True),
        msg_entry("4", "3", user("new"))])
    assert texts(await s.build_session_context()) == ["S", "new"]


async def test_branches(catalog):
    entries = [msg_entry("1", None, user("start")), msg_entry("2", "1", assistant("r")),
               msg_entry("3", "2", user("branch A")), msg_entry("4", "2", user("branch B"))]
    s = await load(catalog, entries)
    assert texts(await s.build_session_context("3"))[-1] == "branch A"
    assert texts(await s.build_session_context("4"))[-1] == "branch B"


async def test_branch_summary(catalog):
    s = await load(catalog, [msg_entry("1", None, user("start")), msg_entry("2", "1", assistant("response")),
                             msg_entry("3", "2", user("abandoned")),
                             entry("branch_summary", "4", "2", fromId="2", summary="Summary of abandoned work"),
                             msg_entry("5", "4", user("new direction"))])
    ctx = await s.build_session_context("5")
    assert texts(ctx) == ["start", "response", "Summary of abandoned work", "new direction"]
    assert ctx.messages[2].role == "branchSummary"


async def test_complex_tree(catalog):
    s = await load(catalog, [
        msg_entry("1", None, user("start")), msg_entry("2", "1", assistant("r1")),
        msg_entry("3", "2", user("q2")), msg_entry("4", "3", assistant("r2")),
        entry("compaction", "5", "4", summary="Compacted", firstKeptEntryId="3", tokensBefore=100),
        msg_entry("6", "5", user("q3")), msg_entry("7", "6", assistant("r3")),
        msg_entry("8", "3", assistant("wrong")), msg_entry("9", "8", user("abandon")),
        entry("branch_summary", "10", "3", fromId="3", summary="Tried wrong approach"),
        msg_entry("11", "10", user("better approach"))])
    assert texts(await s.build_session_context("7")) == ["Compacted", "q2", "r2", "q3", "r3"]
    assert texts(await s.build_session_context("11")) == ["start", "r1", "q2", "Tried wrong approach", "better approach"]


async def test_unknown_leaf_is_an_error_naming_the_id(catalog):
    # Deliberate difference from Pi (which silently falls back to the last entry): an unknown id is an error.
    s = await load(catalog, [msg_entry("1", None, user("q")), msg_entry("2", "1", assistant("r"))])
    with pytest.raises(EntryNotFoundError, match="nonexistent"):
        await s.build_session_context("nonexistent")


async def test_orphan_leaf_builds_from_itself(catalog):
    s = await load(catalog, [msg_entry("1", None, user("q")), msg_entry("2", "missing", assistant("r"))])
    assert len((await s.build_session_context("2")).messages) == 1
