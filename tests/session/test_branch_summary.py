"""Branch summaries through AgentSession: what is summarised (back to the common ancestor,
stopping at a compaction), where the entry goes, and the errors."""

from __future__ import annotations

import json

import pytest

from tests.narrow import of
from treechat.session.agent_session import NothingToSummarize
from treechat.session.summarize import BRANCH_SUMMARY_PREAMBLE, SummaryError
from treechat.storage.base import EntryNotFoundError
from treechat.storage.model import (
    AssistantMessage,
    BranchSummaryEntry,
    ContentBlock,
    TextContent,
    ToolCall,
    UserMessage,
)

from .test_agent_compaction import make, sent_text


def said(text: str, calls=()) -> AssistantMessage:
    content: list[ContentBlock] = [TextContent(text=text), *(ToolCall(id=f"t{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls))]
    return AssistantMessage(content=content, provider="openai", model="fake-model")


async def shared_then_branch(s) -> tuple[str, str]:
    """shared exchange → approach A (reads a file); returns (fork point, abandoned leaf)."""
    await s.session.append_message(UserMessage(content="shared question"))
    fork_point = await s.session.append_message(said("shared answer"))
    await s.session.append_message(UserMessage(content="try approach A"))
    leaf = await s.session.append_message(said("approach A failed", calls=[("read", {"path": "src/a.py"})]))
    return fork_point, leaf


async def test_summary_of_the_abandoned_branch_becomes_a_child_of_the_leaf(fake) -> None:
    s = await make(fake)
    fork_point, old_leaf = await shared_then_branch(s)
    await s.move_to(fork_point)
    fake.script_openai(["## Goal\nApproach A"])
    entry_id = await s.summarize_branch(old_leaf, "mention the failure")
    body = sent_text(fake.requests[-1])
    assert "try approach A" in body and "approach A failed" in body and "shared question" not in body
    assert "Additional focus: mention the failure" in body
    entry = await s.session.get_entry(entry_id)
    assert isinstance(entry, BranchSummaryEntry)
    assert (entry.parent_id, entry.from_id, s.session.leaf_id) == (fork_point, fork_point, entry_id)
    assert entry.summary.startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal\nApproach A")
    assert "<read-files>\nsrc/a.py\n</read-files>" in entry.summary
    assert entry.details == {"readFiles": ["src/a.py"], "modifiedFiles": []}
    assert [m.role for m in s.state.messages][-1] == "branchSummary"  # reloaded: the model sees it next

    fake.script_openai(["B"])
    await s.prompt("try approach B")
    sent = json.dumps(fake.requests[-1].body["messages"])
    assert "Approach A" in sent and "try approach B" in sent and "try approach A" not in sent


async def test_the_summary_stops_at_a_compaction_on_the_abandoned_path(fake) -> None:
    s = await make(fake)
    fork_point, _ = await shared_then_branch(s)
    kept = await s.session.append_message(UserMessage(content="kept part"))
    await s.session.append_compaction("OLD-SUMMARY", kept, 1000)
    await s.session.append_message(UserMessage(content="after the compaction"))
    old_leaf = await s.session.append_message(said("late answer"))
    await s.move_to(fork_point)
    fake.script_openai(["summary"])
    await s.summarize_branch(old_leaf)
    body = sent_text(fake.requests[-1])
    assert "OLD-SUMMARY" in body and "after the compaction" in body and "late answer" in body
    assert "try approach A" not in body and "kept part" not in body


async def test_nothing_to_summarise_and_unknown_ids_are_typed_errors(fake) -> None:
    s = await make(fake)
    fork_point, old_leaf = await shared_then_branch(s)
    with pytest.raises(NothingToSummarize, match="Nothing to summarise"):
        await s.summarize_branch(of(str, s.session.leaf_id))  # the leaf did not move: nothing was left behind
    with pytest.raises(EntryNotFoundError, match="nope1234"):
        await s.summarize_branch("nope1234")
    await s.move_to(fork_point)
    fake.script_status(401, {"error": {"message": "bad key"}})
    with pytest.raises(SummaryError, match="^Branch summary failed: .*API key"):
        await s.summarize_branch(old_leaf)
    assert s.session.leaf_id == fork_point  # nothing written
    assert len(fake.requests) == 1  # the failed call only; the errors above never reached the model
