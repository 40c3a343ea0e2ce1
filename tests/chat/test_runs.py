"""Branches that run at once (issue 39), through `Chat` on every backend with the loopback fake:
runs on sibling and distant branches stream at once and both complete; the leaf is the person's
(it follows a run only while the person is at its tip; a move while a run goes is a real move);
Esc stops the run of the branch on screen and only it; steer and follow-up reach that run; nothing
is interleaved or lost; past `max_runs` a send is refused with one line and writes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, openai_chunks, sse_frame
from treechat.chat import Chat, ChatError
from treechat.chat.events import ChatDelta, EntryAppended, ReplyStreaming, RunTip
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.storage.base import SessionCatalog
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent, UserMessage, message_text

from .test_chat import Recorder, wait_until


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


class Replies:
    """The fake's answer to each request by its last prompt: `hold(word)` keeps that prompt's reply
    at its first piece until `release(word)` (a reply streaming while the test acts)."""

    def __init__(self, fake: FakeProvider) -> None:
        self.fake, self.gates = fake, dict[str, asyncio.Event]()
        self.asked: list[str] = []
        fake.responder = self._answer

    def hold(self, *words: str) -> None:
        for word in words:
            self.gates[word] = asyncio.Event()

    def release(self, *words: str) -> None:
        for word in words:
            self.gates[word].set()

    def _answer(self, request: Any) -> list[Any] | None:
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        if not messages:
            return None
        users = [m for m in messages if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        self.asked.append(text)
        word = text.split()[0] if text.split() else ""
        frames = [sse_frame(c) for c in openai_chunks([f"re {word}", f" ({len(users)} prompts)"])]
        return self.fake.sse_steps(frames, gate=self.gates.get(word), gate_after=1)


async def make_chat(catalog: SessionCatalog, fake: FakeProvider, tmp_path: Any, *, max_runs: int | None = None,
                    session_id: str | None = None) -> tuple[Chat, Recorder]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if max_runs is not None:
        (home / "config.toml").write_text(f"max_runs = {max_runs}\n")
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(home, env=env)
    # tools that change no file: outside git a second run that could is refused (test_worktrees.py)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/fake-model", tools=["read", "ls", "grep", "task"], cwd=str(tmp_path),
                local_servers=())
    recorder = Recorder(chat)
    await chat.open(await catalog.create(cwd=str(tmp_path), session_id=session_id))
    return chat, recorder


async def seed(chat: Chat) -> tuple[str, str]:
    """q1 → a1 (the person's leaf at a1)."""
    q = await chat.session.append_message(UserMessage(content="q1"))
    a = await chat.session.append_message(AssistantMessage(content=[TextContent(text="a1")], provider="openai",
                                                           model="fake-model"))
    return q, a


def conversation(branch: list[Any]) -> list[str]:
    return [message_text(e.message) for e in branch if isinstance(e, MessageEntry)]


async def streaming(chat: Chat, rec: Recorder, run: str) -> None:
    await wait_until(lambda: any(isinstance(e, ReplyStreaming) and e.run == run for e in rec.raw),
                     f"{run}'s reply to stream")


async def test_two_runs_on_sibling_branches_stream_at_once_and_both_complete(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("left", "right")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    assert await chat.send("left branch") == "sent"
    await streaming(chat, rec, "r1")
    left_prompt = chat.leaf_id  # the person stayed with the run: the leaf is its prompt
    assert chat.is_running_here and chat.runs == (RunTip("r1", left_prompt),)
    await chat.move_to(a1)  # a real move while the run goes
    assert chat.leaf_id == a1 and not chat.is_running_here and chat.is_running
    assert await chat.send("right branch") == "sent"  # elsewhere: a second run, not a steer
    await streaming(chat, rec, "r2")
    assert fake.requests[0].arrived_at < fake.requests[1].arrived_at  # both out before either is answered
    assert {t.run for t in chat.runs} == {"r1", "r2"}
    chat.bus.flush()
    told = [d.runs for d in rec.raw if isinstance(d, ChatDelta) and d.runs is not None]
    assert len(told[-1]) == 2  # the tree's markers: both tips
    assert all(e.on_screen for e in rec.raw if isinstance(e, ReplyStreaming) and e.run == "r1")  # before the move
    told_before = len(rec.raw)
    replies.release("left", "right")
    await chat.wait_idle()
    later = [e for e in rec.raw[told_before:] if isinstance(e, ReplyStreaming)]
    assert {e.run for e in later} == {"r1", "r2"}
    assert all(e.on_screen == (e.run == "r2") for e in later)  # r1's branch is not the one shown now
    assert not chat.is_running and chat.runs == ()
    right = await chat.session.get_branch()
    assert conversation(right) == ["q1", "a1", "right branch", "re right (2 prompts)"]
    left_reply = next(e for e in await chat.session.get_children(left_prompt))
    assert conversation(await chat.session.get_branch(left_reply.id)) == ["q1", "a1", "left branch",
                                                                          "re left (2 prompts)"]
    assert [e.id for e in await chat.session.get_children(a1)] == [left_prompt, right[2].id]
    # what the left run wrote joined the tree without being shown on the right
    appended = {e.entry.id: e for e in rec.of(EntryAppended)}
    assert appended[left_reply.id].run == "r1" and not appended[left_reply.id].shown
    assert appended[right[-1].id].shown and appended[right[-1].id].leaf_id == right[-1].id


async def test_runs_on_distant_branches_each_see_only_their_own_path(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("deep", "root")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await seed(chat)
    await chat.send("deep question")
    await streaming(chat, rec, "r1")
    await chat.move_to(None)  # before the first entry: a new root
    await chat.send("root question")
    await streaming(chat, rec, "r2")
    replies.release("deep", "root")
    await chat.wait_idle()
    asked = {text.split()[0]: n for text, n in zip(replies.asked, (len(r.body["messages"]) for r in fake.requests))}
    # (the system prompt, then the path: the deep run saw q1, a1 and its prompt; the root run its prompt alone)
    assert asked["deep"] == 4 and asked["root"] == 2
    assert conversation(await chat.session.get_branch()) == ["root question", "re root (1 prompts)"]


async def test_stopping_the_run_on_screen_leaves_the_other_running(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("stay", "stop")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    await chat.send("stay running")
    await streaming(chat, rec, "r1")
    await chat.move_to(a1)
    await chat.send("stop me")
    await streaming(chat, rec, "r2")
    await chat.stop()  # Esc: the run of the branch on screen
    assert [t.run for t in chat.runs] == ["r1"] and chat.is_running
    stopped = await chat.session.get_branch()
    assert isinstance(stopped[-1], MessageEntry) and isinstance(stopped[-1].message, AssistantMessage)
    assert stopped[-1].message.stop_reason == "aborted"
    replies.release("stay", "stop")
    await chat.wait_idle()
    tips = [e for e in await chat.session.get_children(a1)]
    reply = (await chat.session.get_children(tips[0].id))[0]
    assert isinstance(reply, MessageEntry) and message_text(reply.message) == "re stay (2 prompts)"
    assert chat.leaf_id == stopped[-1].id  # the person stayed where they were


async def test_a_steer_goes_to_the_run_of_the_branch_on_screen(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("one", "two")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    await chat.send("one")
    await streaming(chat, rec, "r1")
    await chat.move_to(a1)
    await chat.send("two")
    await streaming(chat, rec, "r2")
    assert await chat.send("steer two", "steer") == "queued"  # the branch on screen is r2's
    assert await chat.send("after two", "follow_up") == "queued"
    assert chat.queue.steering == ("steer two",) and chat.queue.follow_up == ("after two",)
    replies.release("one", "two")
    await chat.wait_idle()
    await wait_until(lambda: not chat.is_busy, "the queue to drain")
    assert conversation(await chat.session.get_branch()) == [
        "q1", "a1", "two", "re two (2 prompts)", "steer two", "re steer (3 prompts)", "after two",
        "re after (4 prompts)"]
    one = (await chat.session.get_children(a1))[0]
    tail = await chat.session.get_children(one.id)
    assert conversation(await chat.session.get_branch(tail[0].id)) == ["q1", "a1", "one", "re one (2 prompts)"]
    assert not await chat.session.get_children(tail[0].id)  # nothing of r2's queue reached r1


async def test_back_on_a_running_branch_its_reply_is_there_as_far_as_it_came(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("slow")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    await chat.send("slow one")
    await streaming(chat, rec, "r1")
    tip = chat.leaf_id
    await chat.move_to(a1)
    rec.raw.clear()
    await chat.move_to(tip)  # onto the run's tip: the person is at its live end again
    caught = [e for e in rec.raw if isinstance(e, ReplyStreaming)]
    assert caught and caught[0].started and caught[0].on_screen and caught[0].run == "r1"
    assert message_text(caught[0].message) == "re slow"
    assert chat.is_running_here
    replies.release("slow")
    await chat.wait_idle()
    assert conversation(await chat.session.get_branch()) == ["q1", "a1", "slow one", "re slow (2 prompts)"]


async def test_past_max_runs_a_send_elsewhere_is_refused_and_writes_nothing(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("first", "second")
    chat, rec = await make_chat(catalog, fake, tmp_path, max_runs=2)
    q1, a1 = await seed(chat)
    await chat.send("first")
    await streaming(chat, rec, "r1")
    await chat.move_to(a1)
    await chat.send("second")
    await streaming(chat, rec, "r2")
    await chat.move_to(q1)
    before = (await chat.session.storage.get_session_stats()).entry_count
    with pytest.raises(ChatError, match="max_runs"):
        await chat.send("third")
    assert (await chat.session.storage.get_session_stats()).entry_count == before and len(fake.requests) == 2
    replies.release("first", "second")
    await chat.wait_idle()
    assert await chat.send("third") == "sent"  # room again
    await chat.wait_idle()


async def test_reopened_after_runs_wrote_elsewhere_the_leaf_is_the_persons(catalog, fake, tmp_path) -> None:
    replies = Replies(fake)
    replies.hold("away")
    chat, rec = await make_chat(catalog, fake, tmp_path, session_id="kept")
    _, a1 = await seed(chat)
    await chat.send("away run")
    await streaming(chat, rec, "r1")
    await chat.move_to(a1)
    replies.release("away")
    await chat.wait_idle()  # the run wrote its reply on a branch the person is not on
    assert chat.leaf_id == a1
    if catalog.kind == "memory":
        assert await chat.session.storage.get_leaf_id() == a1
        return
    await chat.close()
    await catalog.close()
    again = await open_catalog(catalog.kind, tmp_path)
    try:
        assert await (await again.open("kept")).get_leaf_id() == a1
    finally:
        await again.close()


async def test_many_runs_interleave_nothing(catalog, fake, tmp_path) -> None:
    """Four runs at once under one prompt, each with a reply that streams in pieces: every branch
    holds its own prompt and its own reply, in order, each once."""
    words = ["alpha", "beta", "gamma", "delta"]
    replies = Replies(fake)
    replies.hold(*words)
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    for n, word in enumerate(words, 1):
        await chat.move_to(a1)
        await chat.send(f"{word} question")
        await streaming(chat, rec, f"r{n}")
    assert len(chat.runs) == 4
    replies.release(*words)
    await chat.wait_idle()
    prompts = await chat.session.get_children(a1)
    assert len(prompts) == 4
    for prompt in prompts:
        reply = await chat.session.get_children(prompt.id)
        assert len(reply) == 1
        said = conversation(await chat.session.get_branch(reply[0].id))
        word = said[2].split()[0]
        assert said == ["q1", "a1", f"{word} question", f"re {word} (2 prompts)"]


@pytest.mark.parametrize("text,words", [
    ("max_runs = 0\n", "max_runs should be greater than or equal to 1"),
    ("max_runs = 65\n", "max_runs should be less than or equal to 64"),
    ('max_runs = "4"\n', "max_runs should be a valid integer"),
    ("max_runs = true\n", "max_runs should be a valid integer"),
    ("max_run = 2\n", "unknown key 'max_run' (did you mean 'max_runs'?)"),
])
def test_max_runs_is_checked_strictly_in_one_line(tmp_path, text, words) -> None:
    from treechat.config.settings import ConfigError

    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert "config.toml, line 1:" in str(err.value) and words in str(err.value) and "\n" not in str(err.value)


def test_max_runs_is_four_unless_config_says(tmp_path) -> None:
    assert load_settings(tmp_path, env={}).max_runs == 4
    (tmp_path / "config.toml").write_text("max_runs = 8\n")
    assert load_settings(tmp_path, env={}).max_runs == 8


async def test_leaving_the_session_stops_its_runs_says_so_and_keeps_their_replies(catalog, fake, tmp_path) -> None:
    from treechat.chat.events import Notice

    replies = Replies(fake)
    replies.hold("a", "b")
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    await chat.send("a run")
    await streaming(chat, rec, "r1")
    await chat.move_to(a1)
    await chat.send("b run")
    await streaming(chat, rec, "r2")
    left = chat.session
    await chat.new_session()
    assert not chat.is_running and chat.runs == ()
    assert any("2 runs of the session left stopped" in n.text for n in rec.of(Notice))
    stopped = [e.message for e in await left.storage.get_entries() if isinstance(e, MessageEntry)
               and isinstance(e.message, AssistantMessage)]
    assert sorted(message_text(m) for m in stopped if m.stop_reason == "aborted") == ["re a", "re b"]
    replies.release("a", "b")
