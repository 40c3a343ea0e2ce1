"""Compaction planning and summaries without a model: cut points, plan, prompts (Pi 0.73.1's compaction and branch-summarization rules)."""

from __future__ import annotations

import pytest

from tests.narrow import of
from treechat.agent.types import AgentMessage
from treechat.session.branching import abandoned_entries, prepare_branch_messages
from treechat.session.compaction import (
    CompactionSettings,
    NothingToCompact,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    prepare_compaction,
    should_compact,
)
from treechat.session.summarize import SummaryError, serialize_conversation, summarize_branch, summarize_for_compaction
from treechat.storage.model import AssistantMessage, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage

from .helpers import assistant, entry, msg_entry, user


def tool_turn(prefix: str, parent: str, n: int = 1) -> list:
    """assistant(toolCall) → toolResult pairs, chained under `parent`."""
    out = []
    for i in range(n):
        a = AssistantMessage(content=[ToolCall(id=f"c{i}", name="read", arguments={"path": f"/src/{prefix}{i}.py"})],
                             provider="p", model="m", stop_reason="toolUse")
        r = ToolResultMessage(tool_call_id=f"c{i}", tool_name="read", content=[TextContent(text="x" * 400)])
        a_id, r_id = f"{prefix}a{i}", f"{prefix}r{i}"
        out += [msg_entry(a_id, parent, a), msg_entry(r_id, a_id, r)]
        parent = r_id
    return out


def test_estimate_tokens_counts_what_each_role_sends():
    assert estimate_tokens(user("abcd")) == 1
    assert estimate_tokens(user("abcde")) == 2
    call = AssistantMessage(content=[ToolCall(id="1", name="read", arguments={"path": "a"})])
    assert estimate_tokens(call) == -(-(4 + len('{"path":"a"}')) // 4)


def test_context_estimate_uses_the_last_real_usage_plus_trailing():
    a = assistant("r")
    a.usage = Usage(input=1000, output=10, total_tokens=1010)
    tokens, idx = estimate_context_tokens([user("q"), a, user("abcdefgh")])
    assert (tokens, idx) == (1012, 1)
    failed = AssistantMessage(content=[], stop_reason="error", usage=Usage(input=99999))
    assert estimate_context_tokens([user("abcd"), failed])[1] is None


def test_should_compact_is_strict():
    s = CompactionSettings(reserve_tokens=100)
    assert not should_compact(900, 1000, s) and should_compact(901, 1000, s)
    assert not should_compact(10**6, 1000, CompactionSettings(enabled=False))


def test_cut_never_separates_a_tool_call_from_its_result():
    entries = [msg_entry("u", None, user("go")), *tool_turn("t", "u", 6)]
    for budget in range(1, 1200, 37):
        cut = find_cut_point(entries, 0, len(entries), budget)
        kept_first = entries[cut.first_kept_index]
        assert not isinstance(kept_first.message, ToolResultMessage)
        if cut.first_kept_index > 0:
            assert cut.is_split_turn and cut.turn_start_index == 0


def test_cut_pulls_preceding_settings_into_the_kept_part():
    entries = [msg_entry("1", None, user("a" * 400)), msg_entry("2", "1", assistant("b" * 400)),
               entry("thinking_level_change", "3", "2", thinkingLevel="high"),
               msg_entry("4", "3", user("c" * 40)), msg_entry("5", "4", assistant("d" * 40))]
    cut = find_cut_point(entries, 0, len(entries), 20)
    assert entries[cut.first_kept_index].id == "3"


def _long_path():
    entries, parent = [], None
    for i in range(10):
        u, a = f"u{i}", f"a{i}"
        entries += [msg_entry(u, parent, user(f"question {i} " + "q" * 2000)), msg_entry(a, u, assistant(f"answer {i} " + "a" * 2000))]
        parent = a
    return entries


def test_plan_keeps_recent_and_summarises_the_rest():
    path = _long_path()
    plan = prepare_compaction(path, [e.message for e in path], CompactionSettings(keep_recent_tokens=1000))
    assert plan.first_kept_entry_id == "u9"
    assert len(plan.messages_to_summarize) == 18 and not plan.is_split_turn
    assert plan.covered_from_id == "u0" and plan.covered_to_id == "a8"
    assert plan.tokens_before > 0 and plan.previous_summary is None


def test_plan_splits_a_turn_when_the_budget_ends_mid_turn():
    path = _long_path()
    plan = prepare_compaction(path, [], CompactionSettings(keep_recent_tokens=1500))
    assert plan.first_kept_entry_id == "a8" and plan.is_split_turn
    assert of(str, of(UserMessage, plan.turn_prefix_messages[0]).content).startswith("question 8")


def test_plan_after_an_earlier_compaction_updates_its_summary():
    path = _long_path()
    comp = entry("compaction", "c1", "a9", summary="OLD SUMMARY", firstKeptEntryId="u6", tokensBefore=5,
                 details={"readFiles": ["/a.py"], "modifiedFiles": []})
    path = [*path, comp, msg_entry("u10", "c1", user("more " * 800)), msg_entry("a10", "u10", assistant("ok " * 800))]
    plan = prepare_compaction(path, [], CompactionSettings(keep_recent_tokens=1000))
    assert plan.previous_summary == "OLD SUMMARY"
    assert of(str, of(UserMessage, plan.messages_to_summarize[0]).content).startswith("question 6")
    assert "/a.py" in plan.file_ops.details()["readFiles"]


def test_nothing_to_compact():
    with pytest.raises(NothingToCompact, match="too small"):
        prepare_compaction([msg_entry("1", None, user("hi"))], [], CompactionSettings())
    path = [msg_entry("1", None, user("hi")), entry("compaction", "2", "1", summary="s", firstKeptEntryId="1", tokensBefore=1)]
    with pytest.raises(NothingToCompact, match="Already compacted"):
        prepare_compaction(path, [], CompactionSettings())


def test_serialization_labels_and_truncates_tool_output():
    msgs: list[AgentMessage] = [user("hi"), AssistantMessage(content=[TextContent(text="let me look"), ToolCall(id="1", name="read", arguments={"path": "a.py"})]),
            ToolResultMessage(tool_call_id="1", tool_name="read", content=[TextContent(text="z" * 2500)])]
    text = serialize_conversation(msgs)
    assert "[User]: hi" in text and "[Assistant]: let me look" in text
    assert '[Assistant tool calls]: read(path="a.py")' in text
    assert "[... 500 more characters truncated]" in text


async def test_summary_uses_update_prompt_and_appends_file_lists():
    path = _long_path()
    comp = entry("compaction", "c1", "a9", summary="OLD", firstKeptEntryId="u6", tokensBefore=5)
    path = [*path, comp, *tool_turn("z", "c1", 3), msg_entry("u11", "zr2", user("again " * 900))]
    plan = prepare_compaction(path, [], CompactionSettings(keep_recent_tokens=500))
    prompts = []

    async def complete(system, prompt, max_tokens):
        prompts.append((system, prompt, max_tokens))
        return "## Goal\nthe goal"

    summary, details = await summarize_for_compaction(plan, complete, reserve_tokens=1000, custom_instructions="focus on tests")
    assert "<previous-summary>\nOLD" in prompts[0][1] and "PRESERVE" in prompts[0][1]
    assert "Additional focus: focus on tests" in prompts[0][1]
    assert prompts[0][2] == 800
    assert summary.startswith("## Goal") and "<read-files>" in summary and "/src/z0.py" in details["readFiles"]


async def test_failed_summary_raises_with_the_reason():
    plan = prepare_compaction(_long_path(), [], CompactionSettings(keep_recent_tokens=1500))

    async def broken(*_):
        raise RuntimeError("HTTP 500 from provider")

    with pytest.raises(SummaryError, match="Summarization failed: HTTP 500"):
        await summarize_for_compaction(plan, broken, reserve_tokens=1000)


async def test_branch_summary_covers_the_abandoned_path_only():
    shared = [msg_entry("1", None, user("start")), msg_entry("2", "1", assistant("ok"))]
    old = [*shared, msg_entry("3", "2", user("approach A")), msg_entry("4", "3", assistant("A failed"))]
    target = [*shared, msg_entry("5", "2", user("approach B"))]
    abandoned = abandoned_entries(old, target)
    assert [e.id for e in abandoned] == ["3", "4"]
    msgs, ops = prepare_branch_messages(abandoned)
    seen = []

    async def complete(system, prompt, max_tokens):
        seen.append(prompt)
        return "tried A"

    summary, _ = await summarize_branch(msgs, ops, complete)
    assert "approach A" in seen[0] and "approach B" not in seen[0] and "start" not in seen[0]
    assert summary.startswith("The user explored a different conversation branch") and summary.endswith("tried A")


def test_abandoned_path_stops_at_a_compaction():
    old = [msg_entry("1", None, user("a")), msg_entry("2", "1", assistant("b")),
           entry("compaction", "3", "2", summary="S", firstKeptEntryId="2", tokensBefore=1),
           msg_entry("4", "3", user("c"))]
    assert [e.id for e in abandoned_entries(old, [old[0]])] == ["3", "4"]
