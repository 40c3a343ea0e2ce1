"""Compaction that fits any window, against a loopback server that enforces an 8,192-token
window on every request (chat and summary alike) and says so the way OpenAI-compatible servers
do: the imported 914-message Pi session continues after one overflow; a threshold compaction
made for a large window is re-planned when the server turns out to be small; manual /compact on
a short session keeps the last turn; a message larger than the window is one clear error."""

from __future__ import annotations

import json
import math

import pytest

from tests.fake_provider import FakeProvider, Recorded, Send, Status
from tests.fixtures import PI_FIXTURES
from tests.narrow import assistant_of, of
from treechat.llm.types import ModelInfo
from treechat.session.agent_session import AgentSession, CompactionSettings, NothingToCompact
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import CompactionEntry, MessageEntry, TextContent, UserMessage, message_text
from treechat.storage.session_file import read_session_file

FIXTURES = PI_FIXTURES
SUMMARY_MARK = "context summarization assistant"
SYSTEM = "You are a helpful coding assistant. " * 40  # a realistic system prompt goes out every time


class WindowServer:
    """Answers like a server started with an 8k window: a request over it gets OpenAI's 400 with
    both numbers; a summary request gets a summary; any other request a reply with real usage."""

    def __init__(self, fake: FakeProvider, window: int = 8192) -> None:
        self.fake, self.window = fake, window
        self.strict = True
        self.overflows: list[int] = []
        self.accepted: list[int] = []
        self.replies = 0
        fake.responder = self.answer

    @staticmethod
    def tokens(body: dict) -> int:
        # what a tokenizer would count: every character sent (JSON included), about 4 to a token,
        # plus the room asked for the reply
        sent = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("tools", []))
        return math.ceil(len(sent) / 4) + int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)

    def answer(self, request: Recorded) -> list | None:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return None  # e.g. the server's /props: scripted by the test
        count = self.tokens(request.body)
        if self.strict and count > self.window:
            self.overflows.append(count)
            message = (f"This model's maximum context length is {self.window} tokens. However, your messages "
                       f"resulted in {count} tokens. Please reduce the length of the messages.")
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                         "code": "context_length_exceeded"}}).encode()
            return [Status(400, {"Content-Type": "application/json"}, "close"), Send(body)]
        self.accepted.append(count)
        if SUMMARY_MARK in json.dumps(request.body):
            return self.fake.openai_reply(["## Goal\nKeep the TUI package working.\n\n## Progress\n- [x] API checked"])
        self.replies += 1
        return self.fake.openai_reply([f"reply {self.replies}"],
                                      usage={"prompt_tokens": count, "completion_tokens": 3, "total_tokens": count + 3})


async def imported_session() -> Session:
    header, entries, leaf, _ = read_session_file(FIXTURES / "large-session.v3.jsonl")
    storage, _ = await MemoryCatalog().import_session({**header, "id": "imported-914"}, entries, leaf)
    return await Session.open(storage)


async def agent(fake: FakeProvider, session: Session, *, window: int, **settings) -> AgentSession:
    model = ModelInfo(id="local-8k", provider="openai", api="openai", base_url=fake.base_url, context_window=window)
    return await AgentSession.create(session, model=model, get_api_key=lambda p: "k", system_prompt=SYSTEM,
                                     compaction_settings=CompactionSettings(**settings))


def events_of(s: AgentSession) -> list:
    seen: list = []
    s.subscribe(lambda event: seen.append(event))
    return seen


async def test_the_914_message_session_continues_against_an_8k_server_after_one_overflow(fake) -> None:
    server = WindowServer(fake)
    session = await imported_session()
    assert len((await session.build_session_context()).messages) == 914
    s = await agent(fake, session, window=10_000_000)  # the window is not known: only the server knows
    seen = events_of(s)
    await s.prompt("and now?")

    assert len(server.overflows) == 1  # the first request, and nothing after it
    assert all(n <= 8192 for n in server.accepted)
    assert message_text(s.state.messages[-1]) == "reply 1"
    ends = [e for e in seen if e.type == "compaction_end"]
    assert [(e.reason, e.error is None, e.will_retry) for e in ends] == [("overflow", True, True)]
    comps = [e for e in await session.get_branch() if isinstance(e, CompactionEntry)]
    assert [c.trigger for c in comps] == ["overflow"]
    # the retry carried the question, and the summary in place of the old messages
    retry = fake.requests[-1].body["messages"]
    assert "and now?" in json.dumps(retry[-1]) and "Keep the TUI package working" in json.dumps(retry)
    assert s.compactor.window == 8192 and s.context_usage().window == 8192

    # the session goes on under the learned budget: the next prompt needs no overflow at all
    await s.prompt("and then?")
    assert len(server.overflows) == 1 and message_text(s.state.messages[-1]) == "reply 2"


async def test_an_overflow_after_a_threshold_compaction_replans_a_tail_that_fits(fake) -> None:
    server = WindowServer(fake)
    session = await imported_session()
    s = await agent(fake, session, window=128_000)
    # first on a server as large as the model claims: the last usage (178k) is over the threshold,
    # so the prompt is preceded by a compaction that keeps the usual 20k-token tail
    server.strict = False
    await s.prompt("first question")
    comps = [e for e in await session.get_branch() if isinstance(e, CompactionEntry)]
    assert [c.trigger for c in comps] == ["threshold"] and of(int, comps[0].tokens_after) > 15_000
    assert server.accepted[-1] > 8192  # that request would not fit the small server

    # then the server turns out to have an 8k window
    server.strict = True
    seen = events_of(s)
    before = len(fake.requests)
    await s.prompt("second question")
    assert len(server.overflows) == 1
    assert message_text(s.state.messages[-1]) == "reply 2"
    comps = [e for e in await session.get_branch() if isinstance(e, CompactionEntry)]
    assert [c.trigger for c in comps] == ["threshold", "overflow"]
    assert of(int, comps[1].tokens_after) < 8192 < of(int, comps[0].tokens_after)
    summaries = [json.dumps(r.body) for r in fake.requests[before:] if SUMMARY_MARK in json.dumps(r.body)]
    assert any("<previous-summary>" in body for body in summaries)  # the earlier summary is updated
    assert [e.error for e in seen if e.type == "compaction_end"] == [None]


async def test_a_threshold_compaction_whose_summary_request_is_too_long_is_replanned(fake) -> None:
    server = WindowServer(fake)
    session = await imported_session()
    s = await agent(fake, session, window=128_000)
    seen = events_of(s)
    await s.prompt("first question")  # threshold first; its summary request overflows the server
    assert message_text(s.state.messages[-1]) == "reply 1"
    assert len(server.overflows) == 1 and all(n <= 8192 for n in server.accepted)
    ends = [e for e in seen if e.type == "compaction_end"]
    assert [(e.reason, e.error) for e in ends] == [("threshold", None)]
    assert [e.type for e in seen].count("compaction_start") == 1


async def test_manual_compact_on_a_short_session_keeps_the_last_turn(fake) -> None:
    server = WindowServer(fake, window=1_000_000)
    session = await Session.open(await MemoryCatalog().create())
    s = await agent(fake, session, window=128_000)
    for i in range(17):  # 34 messages, far below the 20k-token tail
        await s.prompt(f"question {i}")
    assert len(s.state.messages) == 34
    result = await s.compact()
    kept = [m.role for m in s.state.messages]
    assert kept == ["compactionSummary", "user", "assistant"]
    assert message_text(s.state.messages[1]) == "question 16"
    assert result.first_kept_entry_id == next(e.id for e in reversed(await session.get_branch())
                                               if isinstance(e, MessageEntry) and e.message.role == "user")
    assert server.replies == 17

    with pytest.raises(NothingToCompact, match="^Already compacted$"):
        await s.compact()
    await s.prompt("question 17")
    again = await s.compact()  # the previous summary and question 16 are folded into a new summary
    assert [m.role for m in s.state.messages] == ["compactionSummary", "user", "assistant"]
    assert again.first_kept_entry_id != result.first_kept_entry_id

    single = await agent(fake, await Session.open(await MemoryCatalog().create()), window=128_000)
    await single.prompt("the only question")
    with pytest.raises(NothingToCompact, match=r"^Nothing to compact \(session too small\)$"):
        await single.compact()  # nothing before the last turn


async def test_a_message_larger_than_the_window_says_so_and_what_to_do(fake) -> None:
    server = WindowServer(fake)
    session = await Session.open(await MemoryCatalog().create())
    s = await agent(fake, session, window=10_000_000)
    seen = events_of(s)
    await s.prompt("hello")
    await s.prompt("please look at this: " + "word " * 12_000)  # ~15k tokens in one message
    last = s.state.messages[-1]
    assert last.role == "assistant" and assistant_of(last).stop_reason == "error"
    ends = [e for e in seen if e.type == "compaction_end"]
    assert len(ends) == 1 and ends[0].result is None
    error = ends[0].error
    assert error.startswith("Nothing to compact: the newest message alone is about 15,0")
    assert "8,192-token context window" in error and "shorten it" in error and "larger window" in error
    assert "\n" not in error
    assert len(server.overflows) == 1  # no blind retry


def test_images_in_user_messages_count_towards_the_estimate() -> None:
    from treechat.session.compaction import estimate_tokens
    from treechat.storage.model import ImageContent

    with_image = UserMessage(content=[TextContent(text="abcd"), ImageContent(data="AAAA", mime_type="image/png")])
    assert estimate_tokens(with_image) == math.ceil((4 + 4800) / 4)


def test_the_budget_fits_small_windows_and_leaves_large_ones_as_they_were() -> None:
    from treechat.session.compaction import compaction_budget

    defaults = CompactionSettings()
    big = compaction_budget(200_000, defaults)
    assert (big.reply, big.summary) == (16384, 13107) and big.keep_tail > defaults.keep_recent_tokens
    small = compaction_budget(8192, defaults, overhead=500)
    assert small.reply == 2048 and small.summary == 1024
    assert small.summary * 3 // 2 + small.reply + small.overhead + small.keep_tail < 8192
    assert 0 < small.summary_input * 4 < 8192 * 4
    calibrated = compaction_budget(8192, defaults, overhead=500, ratio=1.5)
    assert calibrated.keep_tail < small.keep_tail


async def test_summary_input_is_fitted_and_keeps_the_first_request() -> None:
    from treechat.session.summarize import serialize_within

    messages = [UserMessage(content=[TextContent(text="GOAL: port the parser")])]
    messages += [UserMessage(content=[TextContent(text=f"step {i} " + "x" * 500)]) for i in range(200)]
    text = serialize_within(messages, 8000)
    assert len(text) <= 8400
    assert text.startswith("[User]: GOAL: port the parser") and "step 199" in text and "step 3 " not in text
    assert "left out here" in text
    assert serialize_within(messages[:3], 100_000).count("[User]:") == 3


@pytest.mark.parametrize("provider", ["llamacpp", "mybox"])  # mybox: any provider on a local address
async def test_print_mode_reads_a_llamacpp_window_and_compacts_before_sending(fake, tmp_path, provider) -> None:
    from tests.print_helper import print_run
    from treechat.config.settings import load_settings
    from treechat.llm.registry import ModelRegistry
    from treechat.storage.model import AssistantMessage, Usage

    server = WindowServer(fake)
    fake.script_json({"default_generation_settings": {"n_ctx": 8192}}, path="/props")
    (tmp_path / "config.toml").write_text(f'[providers.{provider}]\napi = "openai"\nbase_url = "{fake.base_url}/v1"\n')
    settings = load_settings(tmp_path, env={})
    session = await Session.open(await MemoryCatalog().create())
    for i in range(6):  # an earlier conversation of ~12k tokens, the last reply measured by the server
        await session.append_message(UserMessage(content=f"question {i} " + "words " * 1200))
        await session.append_message(AssistantMessage(content=[TextContent(text=f"answer {i} " + "more " * 800)],
                                                      provider="llamacpp", model="qwen", usage=Usage(
                                                          input=12_000, total_tokens=12_000)))
    code, out, err, _ = await print_run("and now?", session, model_ref=f"{provider}/qwen",
                                        registry=ModelRegistry(settings), settings=settings)
    assert (code, out) == (0, "reply 1\n"), err
    assert [r.path for r in fake.probes][:1] == ["/props"]
    assert server.overflows == [] and all(n <= 8192 for n in server.accepted)
    assert "compacted the conversation (threshold)" in err


def test_when_the_system_prompt_is_what_does_not_fit_the_error_says_so() -> None:
    from treechat.session.compaction import TooLargeToCompact, compaction_budget
    from treechat.session.compactor import too_large_text

    err = TooLargeToCompact("x", tokens=900, role="user")
    small = too_large_text(err, "ollama/qwen", compaction_budget(8192, CompactionSettings(), overhead=300))
    assert "system prompt" not in small and "about 900 tokens" in small
    heavy = too_large_text(err, "ollama/qwen", compaction_budget(8192, CompactionSettings(), overhead=5000))
    assert "the system prompt and tool definitions alone take about 5,000 tokens" in heavy
    tiny = too_large_text(TooLargeToCompact("x", tokens=8, role="assistant"), "ollama/qwen",
                          compaction_budget(8192, CompactionSettings(), overhead=5800))
    assert tiny.startswith("Nothing to compact: the system prompt and tool definitions alone take about 5,800")
    assert "8 tokens" not in tiny and "AGENTS.md" in tiny  # not blamed on an 8-token message (user audit)
    tool = too_large_text(TooLargeToCompact("x", tokens=9000, role="toolResult"), "m/x",
                          compaction_budget(8192, CompactionSettings()))
    assert "newest tool result alone" in tool and "offset and limit" in tool


async def test_print_mode_says_once_why_an_overflow_could_not_be_recovered(fake, tmp_path) -> None:
    """A prompt larger than the window: one line says why and what to do; the provider's own
    "…too long; compact it" would contradict it (compacting is what just failed)."""
    from tests.print_helper import print_run
    from treechat.config.settings import load_settings
    from treechat.llm.registry import ModelRegistry

    WindowServer(fake, window=2000)
    (tmp_path / "config.toml").write_text(f'[providers.mybox]\napi = "openai"\nbase_url = "{fake.base_url}/v1"\n')
    settings = load_settings(tmp_path, env={})
    session = await Session.open(await MemoryCatalog().create())
    code, out, err, _ = await print_run("read this: " + "word " * 12_000, session, model_ref="mybox/qwen",
                                        registry=ModelRegistry(settings), settings=settings, tools="")
    assert (code, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith("treechat: Nothing to compact: the newest message alone is about")
    assert "compact it" not in line and "Ctrl+L" not in line
