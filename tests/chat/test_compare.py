"""One prompt, several models (issue 39), through `Chat.compare` on every backend with the loopback
fake: a run per model on sibling branches from the leaf, their requests overlapping (the fake holds
every reply until all the requests are in: a compare that sent one after another would never get
there), the leaf left where it was, each reply in the models' order, one model failing without the
others; what is refused is refused before anything is written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, Send, Status, openai_chunks, sse_frame
from treechat.chat import Chat, ChatError
from treechat.chat.events import ReplyPending, ReplyStreaming
from treechat.storage.model import MessageEntry, UserMessage, message_text

from .test_chat import wait_until
from .test_runs import conversation, make_chat, seed


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


class Models:
    """The fake answers each request as the model it names ("re MODEL"), every reply held at its
    first piece until `together` requests are in; a model named `bad` gets a 400 (not retried)."""

    def __init__(self, fake: FakeProvider, together: int) -> None:
        self.fake, self.together = fake, together
        self.all_in = asyncio.Event()
        fake.responder = self._answer

    def _answer(self, request: Any) -> list[Any] | None:
        if not isinstance(request.body, dict) or "messages" not in request.body:
            return None
        if len(self.fake.requests) >= self.together:
            self.all_in.set()
        model = request.body["model"]
        if model == "bad":
            return [Status(400, {"Content-Type": "application/json"}, "close"),
                    Send(b'{"error":{"message":"the bad model is down","type":"invalid_request_error"}}')]
        frames = [sse_frame(c) for c in openai_chunks([f"re {model}", " done"])]
        return self.fake.sse_steps(frames, gate=self.all_in, gate_after=1)


async def replies_of(chat: Chat, refs: list[str], text: str) -> Any:
    comparison = await chat.compare(text, refs)
    async with asyncio.timeout(30):  # a compare that did not overlap its requests never gets past the gate
        return comparison, await comparison.replies()


async def test_three_models_overlap_and_leave_three_sibling_replies(catalog, fake, tmp_path) -> None:
    Models(fake, together=3)
    chat, rec = await make_chat(catalog, fake, tmp_path)
    _, a1 = await seed(chat)
    comparison, replies = await replies_of(chat, ["openai/m1", "openai/m2", "openai/m3"], "which?")
    assert [r.model for r in replies] == ["openai/m1", "openai/m2", "openai/m3"]
    assert all(r.error is None for r in replies)
    # every request was in before any reply went on: they overlapped in time
    assert len(fake.requests) == 3 and {r.body["model"] for r in fake.requests} == {"m1", "m2", "m3"}
    assert comparison.fork == a1 and chat.leaf_id == a1  # the leaf stayed where the person was
    assert await (await catalog.open(chat.session.session_id)).get_leaf_id() == a1  # and so it is stored (JSONL too)
    branches = [await chat.session.get_branch(r.tip) for r in replies]
    for reply, branch in zip(replies, branches, strict=True):
        assert conversation(branch) == ["q1", "a1", "which?", f"re {reply.model.split('/')[1]} done"]
        assert reply.reply is not None and reply.reply.model == reply.model.split("/")[1]
        assert branch[-1].id == reply.tip
    # the three branches part at a1: siblings, each with its own prompt
    first_after = {b[[e.id for e in b].index(a1) + 1].id for b in branches}
    assert len(first_after) == 3
    assert {e.id for e in await chat.session.get_children(a1)} == first_after
    prompts = [next(e for e in b if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
                    and message_text(e.message) == "which?") for b in branches]
    assert len({p.id for p in prompts}) == 3
    # told for every run, none on screen (the leaf is before them)
    streamed = [e for e in rec.raw if isinstance(e, ReplyStreaming)]
    assert {e.run for e in streamed} == {c.run for c in comparison.runs} and not any(e.on_screen for e in streamed)
    pending = [e for e in rec.raw if isinstance(e, ReplyPending)]  # (told as a turn starts, before the prompt is written)
    assert len(pending) == 3 and not any(e.on_screen for e in pending)
    assert not chat.is_running and chat.runs == ()
    # the person picks one: the leaf moves to its branch
    await chat.move_to(replies[1].tip)
    assert chat.leaf_id == replies[1].tip


async def test_one_model_failing_leaves_the_others_answered(catalog, fake, tmp_path) -> None:
    Models(fake, together=3)
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await seed(chat)
    _, replies = await replies_of(chat, ["openai/m1", "openai/bad", "openai/m3"], "go")
    assert [r.error is None for r in replies] == [True, False, True]
    assert "bad model is down" in (replies[1].error or "")


async def test_choosing_a_reply_while_it_streams_follows_its_run(catalog, fake, tmp_path) -> None:
    models = Models(fake, together=99)  # held until released
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await seed(chat)
    comparison = await chat.compare("go", ["openai/m1", "openai/m2"])
    await fake.until_requests(2)
    runs = [c.run for c in comparison.runs]
    await wait_until(lambda: {e.run for e in rec.raw if isinstance(e, ReplyStreaming)} >= set(runs),
                     "both replies to stream")
    tip = next(t.tip for t in chat.runs if t.run == runs[0])
    await chat.move_to(tip)
    assert chat.is_running_here  # the person is at that run's live end now
    models.all_in.set()
    replies = await comparison.replies()
    assert chat.leaf_id == replies[0].tip  # the leaf followed the chosen run to its reply
    assert conversation(await chat.session.get_branch())[-1] == "re m1 done"


@pytest.mark.parametrize("refs,words", [
    (["openai/m1"], "two models or more"),
    (["openai/m1", "nowhere"], "Unknown model 'nowhere'"),
    (["openai/m1", "nosuch/m2"], "nosuch"),
    (["openai/m1", "openai/m2", "openai/m3"], "max_runs = 2"),
])
async def test_refused_before_anything_is_written(catalog, fake, tmp_path, refs, words) -> None:
    chat, _ = await make_chat(catalog, fake, tmp_path, max_runs=2)
    _, a1 = await seed(chat)
    with pytest.raises(ChatError) as refused:
        await chat.compare("go", refs)
    assert words in str(refused.value) and "\n" not in str(refused.value)
    assert await chat.session.get_children(a1) == [] and chat.leaf_id == a1 and fake.requests == []


async def test_a_run_of_the_paths_own_model_is_not_on_screen_before_its_prompt(catalog, fake, tmp_path) -> None:
    """The model the path has already writes no settings entry: its run's tip is the leaf until its
    prompt is written, and a turn starting there is still not the branch on screen."""
    Models(fake, together=1)
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await chat.send("first")
    await chat.wait_idle()
    leaf = chat.leaf_id
    models = Models(fake, together=3)
    comparison = await chat.compare("go", ["openai/fake-model", "openai/m2"])
    models.all_in.set()
    await comparison.replies()
    told = [e for e in rec.raw if isinstance(e, ReplyPending | ReplyStreaming) and e.run in
            {c.run for c in comparison.runs}]
    assert told and not any(e.on_screen for e in told)
    assert chat.leaf_id == leaf and not chat.is_running_here


async def test_refused_on_a_running_branch(catalog, fake, tmp_path) -> None:
    held = Models(fake, together=99)
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("first")
    await fake.until_requests(1)
    leaf = chat.leaf_id
    with pytest.raises(ChatError, match="A run goes on this branch"):
        await chat.compare("go", ["openai/m1", "openai/m2"])
    assert len(fake.requests) == 1 and chat.leaf_id == leaf
    held.all_in.set()
    await chat.wait_idle()
