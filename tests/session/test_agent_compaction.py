"""Compaction through AgentSession on the loopback fake provider: manual, threshold after a tool
turn, overflow with one retry, summary updates, the reversible view, queued messages, context
usage, and print mode recovering from an overflow."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from pydantic import BaseModel

from tests.fake_provider import FakeProvider
from tests.narrow import assistant_of, of
from treechat.agent import FunctionTool, text_result
from treechat.chat import Chat
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import ModelInfo
from treechat.session.agent_session import (
    AgentSession,
    CompactionError,
    CompactionFailed,
    CompactionSettings,
    NothingToCompact,
)
from treechat.session.compactor import OVERFLOW_RETRY_FAILED
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    MessageEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

OVERFLOW_BODY = {"error": {"message": "This model's maximum context length is 2000 tokens. However, your messages "
                                      "resulted in 2600 tokens.", "type": "invalid_request_error",
                           "code": "context_length_exceeded"}}
SUMMARY_MARK = "context summarization assistant"


def usage(prompt: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}


class Value(BaseModel):
    value: str


def echo(on_run=None) -> FunctionTool:
    async def run(args, signal, on_update):
        if on_run is not None:
            await on_run()
        return text_result(f"echo {args.value}")

    return FunctionTool("echo", "Echo the value", Value, run)


async def make(fp: FakeProvider, *, window: int = 128_000, reserve: int = 500, keep: int = 3, tools=(),
               session: Session | None = None) -> AgentSession:
    session = session or await Session.open(await MemoryCatalog().create())
    model = ModelInfo(id="fake-model", provider="openai", api="openai", base_url=fp.base_url, context_window=window)
    return await AgentSession.create(session, model=model, tools=list(tools), get_api_key=lambda p: "k",
                                     compaction_settings=CompactionSettings(reserve_tokens=reserve,
                                                                            keep_recent_tokens=keep))


def is_summary(req) -> bool:
    return SUMMARY_MARK in json.dumps(req.body)


def sent_text(req) -> str:
    return json.dumps(req.body["messages"], ensure_ascii=False)


class Events:
    def __init__(self, s: AgentSession) -> None:
        self.items: list = []
        s.subscribe(lambda event: self.items.append(event))

    def named(self, kind: str) -> list:
        return [e for e in self.items if e.type == kind]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.items if e.type != "message_update"]


async def two_exchanges(fp: FakeProvider, s: AgentSession) -> None:
    fp.script_openai(["one"], usage=usage(100))
    fp.script_openai(["two"], usage=usage(100))
    await s.prompt("first question")
    await s.prompt("second question")


def compactions(entries) -> list[CompactionEntry]:
    return [e for e in entries if isinstance(e, CompactionEntry)]


# ---------------------------------------------------------------- manual


async def test_manual_compact_summarises_and_the_session_goes_on(fake) -> None:
    s = await make(fake)
    events = Events(s)
    await two_exchanges(fake, s)
    fake.script_openai(["## Goal\nSUMMARY-1"])
    result = await s.compact("focus on the questions")
    req = fake.requests[-1]
    assert is_summary(req) and "first question" in sent_text(req) and "Additional focus: focus on the questions" in sent_text(req)
    assert req.body.get("reasoning_effort") is None  # thinking off for the summary
    assert result.trigger == "manual" and result.summary.startswith("## Goal\nSUMMARY-1")
    assert result.tokens_before > 0 and 0 < result.tokens_after
    assert s.state.messages[0].role == "compactionSummary"
    entry = compactions(await s.session.get_branch())[0]
    assert (entry.id, entry.trigger, entry.tokens_after) == (result.entry_id, "manual", result.tokens_after)
    assert entry.first_kept_entry_id == result.first_kept_entry_id
    assert set(of(dict, entry.details)) >= {"readFiles", "modifiedFiles", "coveredFromId", "coveredToId"}
    assert [e.reason for e in events.named("compaction_start")] == ["manual"]
    end = events.named("compaction_end")[0]
    assert (end.reason, end.result, end.error, end.will_retry) == ("manual", result, None, False)

    fake.script_openai(["three"], usage=usage(50))
    await s.prompt("third question")
    body = sent_text(fake.requests[-1])
    assert "SUMMARY-1" in body and "first question" not in body and "third question" in body
    assert message_text(s.state.messages[-1]) == "three"


async def test_manual_compact_errors_are_one_sentence_and_write_nothing(fake) -> None:
    s = await make(fake)
    fake.script_openai(["one"], usage=usage(100))
    await s.prompt("only question")
    with pytest.raises(NothingToCompact, match=r"^Nothing to compact \(session too small\)$"):
        await s.compact()

    fake.script_openai(["two"], usage=usage(100))
    await s.prompt("second question")
    fake.script_status(401, {"error": {"message": "bad key"}})
    before = await s.session.get_branch()
    with pytest.raises(CompactionFailed, match=r"^Compaction failed: .*API key"):
        await s.compact()
    assert await s.session.get_branch() == before

    fake.script_openai(["SUMMARY"])
    await s.compact()
    with pytest.raises(CompactionError, match=r"^Already compacted$"):
        await s.compact()


async def test_manual_compact_stops_a_running_reply_first(fake) -> None:
    s = await make(fake)
    await two_exchanges(fake, s)
    fake.script_hang()
    fake.script_openai(["SUMMARY-M"])
    running = asyncio.create_task(s.prompt("third question"))
    await fake.until_requests(3)  # the reply is streaming (the server holds it open)
    result = await s.compact()
    await running
    branch = await s.session.get_branch()
    aborted = branch[-2]
    assert assistant_of(aborted).stop_reason == "aborted"
    assert branch[-1].id == result.entry_id and not s.is_streaming and not s.is_compacting


async def test_a_second_compaction_updates_the_first_summary(fake) -> None:
    s = await make(fake)
    await two_exchanges(fake, s)
    fake.script_openai(["SUMMARY-1"])
    await s.compact()
    fake.script_openai(["three"], usage=usage(100))
    fake.script_openai(["four"], usage=usage(100))
    await s.prompt("third question")
    await s.prompt("fourth question")
    fake.script_openai(["SUMMARY-2"])
    second = await s.compact()
    body = sent_text(fake.requests[-1])
    assert "<previous-summary>\\nSUMMARY-1\\n</previous-summary>" in body and "PRESERVE" in body
    assert second.summary == "SUMMARY-2" and len(compactions(await s.session.get_branch())) == 2


async def test_the_tree_keeps_every_entry_and_the_entry_before_gives_the_full_history(fake) -> None:
    s = await make(fake)
    await two_exchanges(fake, s)
    full = [message_text(m) for m in s.state.messages]
    ids_before = {e.id for e in await s.session.storage.get_entries()}
    fake.script_openai(["SUMMARY-1"])
    result = await s.compact()
    ids_after = {e.id for e in await s.session.storage.get_entries()}
    assert ids_before < ids_after
    entry = of(CompactionEntry, await s.session.get_entry(result.entry_id))
    restored = await s.session.build_session_context(leaf_id=entry.parent_id)
    assert [message_text(m) for m in restored.messages] == full
    await s.move_to(entry.parent_id)  # "continue from before compaction"
    assert [message_text(m) for m in s.state.messages] == full


async def test_cut_points_keep_tool_calls_with_their_results(fake) -> None:
    for keep in (1, 8, 20, 40, 400):
        fake.requests.clear()
        s = await make(fake, keep=keep, tools=[echo()])
        fake.script_openai(["zero"], usage=usage(100))
        await s.prompt("warm up")
        for i in range(3):
            fake.script_openai(tool_calls=[{"id": f"c{i}", "name": "echo", "arguments": json.dumps({"value": "v" * 60})}],
                               usage=usage(100))
        fake.script_openai(["done"], usage=usage(100))
        await s.prompt("use the tool three times")
        fake.script_openai(["SUMMARY"])
        fake.script_openai(["PREFIX"])
        try:
            result = await s.compact()
        except NothingToCompact:
            continue
        first = await s.session.get_entry(result.first_kept_entry_id)
        assert not (isinstance(first, MessageEntry) and first.message.role == "toolResult")
        calls_seen: set[str] = set()
        for m in s.state.messages:
            if isinstance(m, AssistantMessage):
                calls_seen |= {b.id for b in m.content if isinstance(b, ToolCall)}
            if isinstance(m, ToolResultMessage):
                assert m.tool_call_id in calls_seen, f"keep={keep}: result {m.tool_call_id} lost its call"
        fake.script_openai(["after"], usage=usage(100))
        await s.prompt("next")
        sent = fake.requests[-1].body["messages"]
        ids = set()
        for msg in sent:
            ids |= {c["id"] for c in msg.get("tool_calls") or []}
            if msg["role"] == "tool":
                assert msg["tool_call_id"] in ids


# ---------------------------------------------------------------- threshold


async def test_threshold_compacts_after_a_tool_turn_and_the_run_goes_on(fake) -> None:
    s = await make(fake, window=2000, reserve=500, keep=50, tools=[echo()])
    events = Events(s)
    await two_exchanges(fake, s)
    fake.script_openai(tool_calls=[{"id": "c1", "name": "echo", "arguments": '{"value": "x"}'}], usage=usage(1800))
    fake.script_openai(["SUMMARY-T"])
    fake.script_openai(["done"], usage=usage(300))
    await s.prompt("third question " + "x" * 400)
    assert [is_summary(r) for r in fake.requests] == [False, False, False, True, False]
    final = sent_text(fake.requests[4])
    assert "SUMMARY-T" in final and "first question" not in final
    assert "third question" in final and "echo x" in final  # the turn in progress is kept whole
    types = events.types
    start = types.index("compaction_start")
    assert types.index("tool_execution_end") < start < types.index("compaction_end") < len(types) - 1 - types[::-1].index("message_end")
    assert types[-1] == "agent_end"
    end = events.named("compaction_end")[0]
    assert end.reason == "threshold" and end.result.trigger == "threshold" and not end.will_retry
    branch = await s.session.get_branch()
    kinds = [e.message.role if isinstance(e, MessageEntry) else e.type for e in branch]
    assert kinds[-3:] == ["toolResult", "compaction", "assistant"]
    comp = compactions(branch)[0]
    details = of(dict, comp.details)
    assert details["coveredFromId"] and details["coveredToId"]
    assert of(int, comp.tokens_after) < comp.tokens_before
    assert message_text(s.state.messages[-1]) == "done"
    assert len(compactions(branch)) == 1  # the agent_end check sees no new usage: no second compaction


async def test_the_same_range_is_never_compacted_twice_in_a_row(fake) -> None:
    s = await make(fake, window=2000, reserve=500, keep=50, tools=[echo()])
    await two_exchanges(fake, s)
    for i in (1, 2):  # both tool turns report a context over the threshold
        fake.script_openai(tool_calls=[{"id": f"c{i}", "name": "echo", "arguments": '{"value": "x"}'}],
                           usage=usage(1800))
        if i == 1:
            fake.script_openai(["SUMMARY-T"])
    fake.script_openai(["done"], usage=usage(1800))
    await s.prompt("third question " + "x" * 400)
    assert [is_summary(r) for r in fake.requests] == [False, False, False, True, False, False]
    assert len(compactions(await s.session.get_branch())) == 1
    assert message_text(s.state.messages[-1]) == "done"


def test_usage_from_before_the_latest_compaction_does_not_count() -> None:
    from treechat.session.compactor import context_tokens
    from treechat.storage.model import CompactionSummaryMessage, Usage

    stale = AssistantMessage(content=[TextContent(text="old")], usage=Usage(input=610_000, total_tokens=610_000),
                             timestamp=1_000)
    summary = CompactionSummaryMessage(summary="S" * 40, tokens_before=610_000, timestamp=2_000)
    assert context_tokens([summary, stale]) == (10 + 1, True)
    fresh = stale.model_copy(update={"timestamp": 3_000, "usage": Usage(input=500, total_tokens=500)})
    assert context_tokens([summary, stale, fresh, UserMessage(content="abcd")]) == (501, False)


async def test_a_follow_up_queued_during_a_tool_turn_is_delivered_after_the_compaction(fake) -> None:
    holder: list[AgentSession] = []

    async def queue():
        await holder[0].follow_up("and then this")

    s = await make(fake, window=2000, reserve=500, keep=50, tools=[echo(queue)])
    holder.append(s)
    await two_exchanges(fake, s)
    fake.script_openai(tool_calls=[{"id": "c1", "name": "echo", "arguments": '{"value": "x"}'}], usage=usage(1800))
    fake.script_openai(["SUMMARY-T"])
    fake.script_openai(["done"], usage=usage(300))
    fake.script_openai(["followed"], usage=usage(320))
    await s.prompt("third question " + "x" * 400)
    last = sent_text(fake.requests[-1])
    assert "and then this" in last and "SUMMARY-T" in last and "first question" not in last
    assert [message_text(m) for m in s.state.messages[-2:]] == ["and then this", "followed"]
    assert s.queue_update().follow_up == []


async def test_a_follow_up_queued_during_an_end_of_run_compaction_is_delivered_after_it(fake) -> None:
    s = await make(fake, window=2000, reserve=500)

    async def on_event(event):
        if event.type == "compaction_start":
            await s.follow_up("queued while compacting")

    s.subscribe(on_event)
    await two_exchanges(fake, s)
    fake.script_openai(["big"], usage=usage(1800))
    fake.script_openai(["SUMMARY-E"])
    fake.script_openai(["after compaction"], usage=usage(200))
    await s.prompt("third question")
    assert is_summary(fake.requests[3])
    last = sent_text(fake.requests[4])
    assert "queued while compacting" in last and "SUMMARY-E" in last
    assert message_text(s.state.messages[-1]) == "after compaction"
    assert compactions(await s.session.get_branch())[0].trigger == "threshold"


async def test_context_usage_is_an_estimate_after_compaction_then_real(fake) -> None:
    s = await make(fake)
    await two_exchanges(fake, s)
    real = s.context_usage()
    assert (real.tokens, real.window, real.estimated) == (105, 128_000, False)
    fake.script_openai(["SUMMARY-1"])
    result = await s.compact()
    after = s.context_usage()
    assert after.estimated and after.tokens == result.tokens_after
    assert after.percent == round(100 * after.tokens / 128_000, 1)
    fake.script_openai(["three"], usage=usage(321))
    await s.prompt("third")
    assert (s.context_usage().tokens, s.context_usage().estimated) == (326, False)


# ---------------------------------------------------------------- overflow


async def test_overflow_compacts_and_retries_once_and_the_reply_arrives(fake) -> None:
    s = await make(fake)
    events = Events(s)
    await two_exchanges(fake, s)
    fake.script_status(400, OVERFLOW_BODY)
    fake.script_openai(["SUMMARY-O"])
    fake.script_openai(["answer"], usage=usage(200))
    await s.prompt("third question")
    assert [is_summary(r) for r in fake.requests] == [False, False, False, True, False]
    retry = fake.requests[4].body["messages"]
    assert "SUMMARY-O" in json.dumps(retry) and retry[-1]["role"] == "user" and "third question" in json.dumps(retry[-1])
    assert [m.role for m in s.state.messages] == ["compactionSummary", "user", "assistant"]
    assert message_text(s.state.messages[-1]) == "answer"
    end = events.named("compaction_end")[0]
    assert (end.reason, end.will_retry, end.error) == ("overflow", True, None) and end.result.trigger == "overflow"
    branch = await s.session.get_branch()
    failed = [e for e in branch if isinstance(e, MessageEntry) and e.message.role == "assistant"
              and assistant_of(e).stop_reason == "error"]
    assert len(failed) == 1  # the failed reply stays in the tree
    assert [e.type for e in branch[-2:]] == ["compaction", "message"]


async def test_a_second_overflow_after_the_retry_stops_with_a_clear_error(fake) -> None:
    s = await make(fake)
    events = Events(s)
    await two_exchanges(fake, s)
    fake.script_status(400, OVERFLOW_BODY)
    fake.script_openai(["SUMMARY-O"])
    fake.script_status(400, OVERFLOW_BODY)
    await s.prompt("third question")
    assert len(fake.requests) == 5
    ends = events.named("compaction_end")
    assert [e.error for e in ends] == [None, OVERFLOW_RETRY_FAILED]
    assert ends[1].reason == "overflow" and ends[1].result is None and not ends[1].will_retry
    assert assistant_of(s.state.messages[-1]).stop_reason == "error"
    assert len(compactions(await s.session.get_branch())) == 1


async def test_an_overflow_from_another_model_is_not_recovered(fake) -> None:
    s = await make(fake)
    await two_exchanges(fake, s)
    failed = AssistantMessage(content=[TextContent(text="")], provider="anthropic", model="other",
                              stop_reason="error", error_message="prompt is too long")
    from treechat.session.compactor import is_overflow_error

    assert not is_overflow_error(failed, s.state.model)
    assert is_overflow_error(failed.model_copy(update={"provider": "openai", "model": "fake-model"}), s.state.model)


# ---------------------------------------------------------------- print mode


async def test_print_mode_compacts_on_overflow_retries_and_prints_the_reply(fake, tmp_path) -> None:
    catalog = MemoryCatalog()
    session = await Session.open(await catalog.create())
    for text in ("a" * 90_000, "b" * 90_000):  # an imported long conversation
        await session.append_message(UserMessage(content=text))
        await session.append_message(AssistantMessage(content=[TextContent(text="noted")], provider="openai",
                                                      model="fake-model"))
    fake.script_status(400, OVERFLOW_BODY)
    fake.script_openai(["SUMMARY-P"])
    fake.script_openai(["recovered"], usage=usage(23_000))
    out, err = io.StringIO(), io.StringIO()
    # (a server on this machine is small unless someone says otherwise: this one is said to be large)
    (tmp_path / "config.toml").write_text('[providers.openai]\nmodels = {"fake-model" = {context_window = 128000}}\n')
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(tmp_path, env=env)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/fake-model", local_servers=(), tools=[])
    await chat.open(session.storage)
    code = await run_print(chat, "next", out=out, err=err)
    assert (code, out.getvalue()) == (0, "recovered\n")
    line = err.getvalue().strip()
    assert line.startswith("treechat: compacted the conversation (overflow): ") and line.count("\n") == 0
    before, after = (int(n) for n in line.rsplit(": ", 1)[1].removesuffix(" tokens").split(" → "))
    assert before > after > 0
    assert "a" * 100 not in sent_text(fake.requests[2]) and "SUMMARY-P" in sent_text(fake.requests[2])
