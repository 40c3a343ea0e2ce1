"""The controller without any UI: every rule a front end relies on, through `Chat`'s methods and
its typed events, against the loopback fake provider."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fake_provider import FakeProvider
from tests.narrow import of
from treechat.chat import Chat, ChatError
from treechat.chat.events import (
    ChatDelta,
    ChatEvent,
    CompactionEnded,
    EntryAppended,
    PathChanged,
    QueueChanged,
    ReplyStreaming,
    RunEnded,
    RunStarted,
    SessionOpened,
)
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage.base import SessionCatalog
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent, Usage, UserMessage, message_text


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


class Recorder:
    """What a chat told, as told (`raw`), and with each delta's parts in its place (`events`)."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.raw: list[ChatEvent] = []
        chat.subscribe(self.raw.append)

    @property
    def events(self) -> list[Any]:
        self.chat.bus.flush()  # what the current turn changed, as its end would tell it
        out: list[Any] = []
        for event in self.raw:
            if isinstance(event, ChatDelta):
                out.extend(event.parts())
                if event.running is not None:
                    out.append(RunStarted() if event.running else RunEnded())
            else:
                out.append(event)
        return out

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


async def make_chat(catalog: SessionCatalog, fake: FakeProvider, tmp_path: Any, *, key: str | None = "k",
                    model: str | None = "openai/fake-model", remote: bool = False) -> tuple[Chat, Recorder]:
    # remote: OpenAI itself (no OPENAI_BASE_URL), which is never sent to
    env = {**({} if remote else {"OPENAI_BASE_URL": fake.base_url}), **({"OPENAI_API_KEY": key} if key else {})}
    settings = load_settings(tmp_path / "home", env=env)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=model,
                cwd=str(tmp_path), local_servers=())  # (no real port is asked)
    recorder = Recorder(chat)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    return chat, recorder


async def texts(chat: Chat) -> list[tuple[str, str]]:
    return [(e.message.role, message_text(e.message)) for e in await chat.session.get_branch()
            if isinstance(e, MessageEntry)]


async def wait_until(predicate: Any, what: str) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_send_streams_persists_and_reports_every_entry_once(catalog, fake, tmp_path) -> None:
    fake.script_openai(["Hel", "lo"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    assert isinstance(rec.events[0], SessionOpened)
    assert await chat.send("hi") == "sent"
    await chat.wait_idle()
    assert await texts(chat) == [("user", "hi"), ("assistant", "Hello")]
    appended = rec.of(EntryAppended)
    branch = await chat.session.get_branch()
    assert [e.entry.id for e in appended] == [e.id for e in branch]  # settings entries too, each once
    assert all(e.row.id == e.entry.id for e in appended)
    assert appended[-1].leaf_id == chat.leaf_id and appended[-1].shown
    kinds = [type(e) for e in rec.events if isinstance(e, (RunStarted, RunEnded, ReplyStreaming))]
    assert kinds[0] is RunStarted and kinds[-1] is RunEnded and ReplyStreaming in kinds
    assert "".join(e.delta for e in rec.of(ReplyStreaming)) == "Hello"
    assert chat.header().title == "hi" and chat.header().branches == 1


async def test_steer_and_follow_up_are_queued_and_answered_in_order(catalog, fake, tmp_path) -> None:
    gate = asyncio.Event()
    fake.script_openai(["first"], gate=gate)
    fake.script_openai(["to the steer"])
    fake.script_openai(["to the follow-up"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await chat.send("start")
    await wait_until(lambda: chat.is_running and len(fake.requests) == 1, "the first request")
    assert await chat.send("steer this", "steer") == "queued"
    assert await chat.send("and then this", "follow_up") == "queued"
    assert rec.of(QueueChanged)[-1] == QueueChanged(("steer this",), ("and then this",))
    assert chat.is_busy
    gate.set()
    await chat.wait_idle()
    await wait_until(lambda: not chat.is_busy, "the queue to drain")
    assert [t for _, t in await texts(chat)] == ["start", "first", "steer this", "to the steer", "and then this",
                                                 "to the follow-up"]


async def test_leaving_a_branch_names_it_by_whole_words(catalog, fake, tmp_path) -> None:
    """The notice names the branch left by its first words, never half a word (an error reply's
    text was cut mid-word)."""
    from treechat.chat.events import Notice

    chat, rec = await make_chat(catalog, fake, tmp_path)
    first = await chat.session.append_message(UserMessage(content="q1"))
    await chat.session.append_message(UserMessage(content="q2"))
    await chat.session.append_message(AssistantMessage(
        content=[], provider="openai", model="fake-model", stop_reason="error",
        error_message="The reply from openai ended without its end marker (stream ended without completion)"))
    await chat.move_to(first)
    notice = next(e.text for e in rec.of(Notice) if e.text.startswith("Left the branch"))
    quoted = notice.split("“", 1)[1].split("”", 1)[0]
    assert quoted.endswith("…") and len(quoted) <= 40, quoted
    assert "The reply from openai ended without its end marker".startswith(quoted[:-1]), quoted
    assert quoted[:-1] in ("The reply from openai ended without its", "The reply from openai ended without"), quoted


async def test_stop_keeps_the_partial_reply_and_sends_the_steering_next(catalog, fake, tmp_path) -> None:
    gate = asyncio.Event()
    fake.script_openai(["partial"], gate=gate, gate_after=0)
    fake.script_openai(["steered"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("go")
    await wait_until(lambda: chat.is_running and len(fake.requests) == 1, "streaming")
    await chat.send("do this instead", "steer")
    await chat.stop()
    await chat.wait_idle()
    got = await texts(chat)
    assert got[-2:] == [("user", "do this instead"), ("assistant", "steered")]
    aborted = [e for e in await chat.session.get_branch() if isinstance(e, MessageEntry)
               and isinstance(e.message, AssistantMessage) and e.message.stop_reason == "aborted"]
    assert len(aborted) == 1
    gate.set()


async def test_stop_sends_a_steer_queued_first_before_a_follow_up(catalog, fake, tmp_path) -> None:
    """Esc with both queued: the steer goes out next and the follow-up after its reply (it went
    out first: ⊘ asst → FOLLOW-D → STEER-C)."""
    gate = asyncio.Event()
    fake.script_openai(["partial"], gate=gate, gate_after=0)
    fake.script_openai(["to the steer"])
    fake.script_openai(["to the follow-up"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await chat.send("go")
    await wait_until(lambda: chat.is_running and len(fake.requests) == 1, "streaming")
    await chat.send("STEER-C", "steer")
    await chat.send("FOLLOW-D", "follow_up")
    await chat.stop()
    await chat.wait_idle()
    assert [t for _, t in await texts(chat)][2:] == ["STEER-C", "to the steer", "FOLLOW-D", "to the follow-up"]
    assert rec.of(QueueChanged)[-1] == QueueChanged((), ())
    gate.set()


async def test_no_model_or_no_key_is_a_chat_error_and_writes_nothing(catalog, fake, tmp_path) -> None:
    chat, _ = await make_chat(catalog, fake, tmp_path, key=None, remote=True)  # OpenAI itself needs its key
    with pytest.raises(ChatError, match="OPENAI_API_KEY"):
        await chat.send("hi")
    assert (await chat.session.storage.get_session_stats()).entry_count == 0 and fake.requests == []
    chat.model_ref = None
    with pytest.raises(ChatError, match="No model chosen"):
        await chat.send("hi")


async def seeded(chat: Chat) -> list[str]:
    ids = []
    for q, a in (("q1", "a1"), ("q2", "a2")):
        ids.append(await chat.session.append_message(UserMessage(content=q)))
        ids.append(await chat.session.append_message(AssistantMessage(content=[TextContent(text=a)],
                                                                      provider="openai", model="fake-model")))
    return ids


async def test_choose_a_prompt_moves_before_it_and_returns_its_text_then_back(catalog, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    assert await chat.choose(ids[2]) == "q2"
    assert chat.leaf_id == ids[1]
    moved = rec.of(PathChanged)[-1]
    assert moved.cause == "move" and [e.id for e in moved.path] == ids[:2]
    assert chat.abandoned_leaf == ids[3]
    assert await chat.choose(ids[1]) is None  # a reply: the leaf moves to it (already there)
    await chat.back()
    assert chat.leaf_id == ids[3]
    with pytest.raises(ChatError, match="No earlier leaf"):
        await chat.back()


async def test_siblings_switch_to_the_newest_tip_of_the_other_branch(catalog, fake, tmp_path) -> None:
    fake.script_openai(["a2, again"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    await chat.choose(ids[2])
    await chat.send("q2, edited")
    await chat.wait_idle()
    new_prompt = (await chat.session.get_branch())[-2].id
    assert chat.tree.siblings(new_prompt) == [ids[2], new_prompt]
    await chat.switch_sibling(new_prompt, -1)
    assert chat.leaf_id == ids[3]
    assert chat.header().branches == 2


async def test_fork_opens_a_new_session_and_leaves_the_original_alone(catalog, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    original = chat.session_id
    new_id = await chat.fork(ids[2], "auto", composer_text="half typed")
    assert chat.session_id == new_id != original
    opened = rec.of(SessionOpened)[-1]
    assert opened.composer_text == "q2" and [e.id for e in opened.path] == ids[:2]
    assert len(await (await catalog.open(original)).get_entries()) == 4
    await chat.resume(original)
    assert rec.of(SessionOpened)[-1].composer_text == "half typed"  # the draft came back


async def test_fork_here_after_label_and_name_keeps_the_conversation(catalog, fake, tmp_path) -> None:
    """/label, /name, then /fork here: the new session shows the conversation (its name entry
    used to point at the label entry the fork did not copy: "Start a conversation", 0 messages)."""
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await seeded(chat)
    await chat.label(None, "keep")
    await chat.rename("Named")
    await chat.fork(None, "at")
    opened = rec.of(SessionOpened)[-1]
    assert [message_text(e.message) for e in opened.path if isinstance(e, MessageEntry)] == ["q1", "a1", "q2", "a2"]
    context = await chat.session.build_session_context()
    assert [message_text(m) for m in context.messages] == ["q1", "a1", "q2", "a2"]
    assert chat.title() == "Named"
    from treechat.chat.events import Notice

    told = next(e.text for e in rec.of(Notice) if e.text.startswith("Forked"))
    new, old = told.removeprefix("Forked into a new session ").split("; Ctrl+R goes back to ")
    assert new != old.rstrip(".")  # (both were "01a23273": ids of one minute share their start)


async def test_compact_replaces_the_path_shown_and_keeps_every_entry(catalog, fake, tmp_path) -> None:
    fake.responder = lambda request: fake.openai_reply(["## Goal\nsummarised"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    for i in range(8):
        await chat.session.append_message(UserMessage(content=f"question {i} " + "words " * 2000))
        await chat.session.append_message(AssistantMessage(content=[TextContent(text=f"answer {i}")],
                                                           provider="openai", model="fake-model"))
    result = await chat.compact("keep the goal")
    assert result is not None and result.tokens_after < result.tokens_before
    ended = rec.of(CompactionEnded)[-1]
    assert ended.error is None and ended.tokens_before == result.tokens_before
    shown = [e for e in rec.of(PathChanged) if e.cause == "compaction"][-1]
    assert any(e.type == "compaction" for e in shown.path) and len(shown.path) < 16
    assert len(await chat.session.storage.find_entries("message")) == 16


async def test_metadata_never_forks_the_conversation(catalog, fake, tmp_path) -> None:
    """Every command that appends something other than a message keeps the chat one line."""
    fake.script_openai(["one"])
    fake.script_openai(["two"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("first")
    await chat.wait_idle()
    await chat.rename("My project")
    await chat.label(None, "milestone")
    await chat.set_model("openai/other-model")
    await chat.set_thinking("high")
    await chat.set_model("openai/fake-model")
    await chat.send("second")
    await chat.wait_idle()
    entries = await chat.session.storage.get_entries()
    kids: dict[str | None, int] = {}
    for e in entries:
        if e.type != "leaf":
            kids[e.parent_id] = kids.get(e.parent_id, 0) + 1
    assert max(kids.values()) == 1, "an entry has two children: the chat forked"
    assert chat.header().branches == 1
    assert chat.tree.path_ids(chat.leaf_id)[-1] == chat.leaf_id == (await chat.session.storage.get_leaf_id())
    assert [t for _, t in await texts(chat)] == ["first", "one", "second", "two"]
    assert await chat.session.get_session_name() == "My project"


async def test_a_reply_that_cannot_be_written_is_kept_in_a_recovery_file(catalog, fake, tmp_path) -> None:
    """A full disk mid-run: the streamed reply is not lost, the person is told where it is."""
    import errno
    import json as _json

    from treechat.chat.events import Failed, Unsaved

    fake.script_openai(["the whole ", "answer"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await chat.ensure_agent()
    storage = chat.session.storage
    real_append = storage.append_entry

    async def full_disk(entry, *, move_leaf=True):
        if entry.type == "message" and entry.message.role == "assistant":
            raise OSError(errno.ENOSPC, "No space left on device")
        return await real_append(entry, move_leaf=move_leaf)

    storage.append_entry = full_disk  # type: ignore[method-assign]  # this store's disk fills up
    await chat.send("question")
    await chat.wait_idle()
    (unsaved,) = [e for e in rec.of(Unsaved) if e.message.role == "assistant"][:1]
    assert unsaved.reason == "No space left on device" and unsaved.recovery_path
    kept = [_json.loads(line) for line in open(unsaved.recovery_path)]  # noqa: ASYNC230  a small local temp file
    assert any("the whole answer" in _json.dumps(k["message"]) for k in kept)
    assert "the whole answer" == message_text(unsaved.message)
    assert any("reply could not be saved" in f.text and unsaved.recovery_path in f.text for f in rec.of(Failed))
    assert oct(os.stat(unsaved.recovery_path).st_mode & 0o777) == "0o600"
    assert len(fake.requests) == 1  # nothing more went out


async def test_a_read_only_store_browses_but_does_not_send_or_move(fake, tmp_path, monkeypatch) -> None:
    from treechat.storage.memory import MemoryCatalog

    catalog = MemoryCatalog()
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    monkeypatch.setattr(MemoryCatalog, "read_only", property(lambda self: "the home folder is not writable"),
                        raising=False)
    assert "Read-only" in (chat.readiness().problem or "")
    with pytest.raises(ChatError, match="read-only here"):
        await chat.send("hi")
    await chat.move_to(ids[1])  # shown, not moved
    assert chat.leaf_id == ids[3] and chat.preview_id == ids[1]
    assert fake.requests == []


async def test_a_reply_with_a_split_or_half_surrogate_pair_is_stored_and_the_next_request_goes_out(
        catalog, fake, tmp_path) -> None:
    """JSON escapes UTF-16 halves: a server can split an emoji over two deltas or send half of one.
    The reply is stored (pair joined, half replaced) and the conversation goes on."""
    fake.script_openai(["smile \ud83d", "\ude00 half \udc00 end"])
    fake.script_openai(["fine"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    await chat.send("hi")
    await chat.wait_idle()
    await chat.send("again")
    await chat.wait_idle()
    assert await texts(chat) == [("user", "hi"), ("assistant", "smile \U0001f600 half \ufffd end"),
                                 ("user", "again"), ("assistant", "fine")]
    sent = fake.requests[-1].body["messages"]
    assert any("smile \U0001f600 half \ufffd end" in str(m.get("content")) for m in sent)


async def test_a_label_after_a_name_lands_on_the_newest_message(catalog, fake, tmp_path) -> None:
    """/name appends a session_info entry after the reply; /label must not label that (the tree
    does not show it, and the labeled filter would miss it)."""
    fake.script_openai(["an answer"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("a question")
    await chat.wait_idle()
    reply = chat.session.leaf_id
    await chat.rename("My chat")
    assert chat.session.leaf_id != reply  # the name is an entry after the reply
    await chat.label(None, "keep")
    assert chat.label_of(of(str, reply)) == "keep"


async def test_export_onto_a_folder_is_one_sentence_naming_it(catalog, fake, tmp_path) -> None:
    fake.script_openai(["an answer"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("a question")
    await chat.wait_idle()
    for name in ("out.html", "out.md", "out.jsonl"):
        folder = tmp_path / name
        folder.mkdir()
        with pytest.raises(ChatError) as caught:
            await chat.export(folder)
        assert str(caught.value) == f"Could not export: Cannot write {folder}: it is a directory"


async def test_instructions_set_with_system_are_kept_with_the_session(catalog, fake, tmp_path) -> None:
    """/system TEXT is an entry on the path: a restart, another process and `context --json` see it;
    --system on the command line wins for its run; /system off removes it."""

    fake.script_openai(["ok"])
    chat, _ = await make_chat(catalog, fake, tmp_path)
    await chat.send("hello")
    await chat.wait_idle()
    assert "Answer in French." in await chat.set_instructions("Answer in French.")
    sid, leaf = chat.session_id, chat.session.leaf_id
    assert [e.type for e in await chat.session.get_branch()][-1] == "custom"  # one line: no fork

    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(tmp_path / "home", env=env)
    again = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                 model_ref="openai/fake-model", cwd=str(tmp_path))
    await again.open(await catalog.open(sid))
    assert "Answer in French." in again.system_prompt()
    flag = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/fake-model", cwd=str(tmp_path), system="Answer in Dutch.")
    await flag.open(await catalog.open(sid))
    assert "Answer in Dutch." in flag.system_prompt() and "French" not in flag.system_prompt()
    await again.set_instructions(None)
    assert "French" not in again.system_prompt()
    await again.open(await catalog.open(sid))
    assert "French" not in again.system_prompt()
    assert leaf in [e.id for e in await again.session.get_branch()]


async def test_no_model_says_which_keys_were_found_or_that_none_were(catalog, fake, tmp_path) -> None:
    chat, _ = await make_chat(catalog, fake, tmp_path, model=None)
    problem = chat.readiness().problem or ""
    assert problem.startswith("No model chosen") and "Keys were found for openai." in problem
    bare, _ = await make_chat(catalog, fake, tmp_path, model=None, key=None)
    assert "No API key was found" in (bare.readiness().problem or "")


KNOWN = "openai/gpt-4.1-mini"  # a model whose window the catalog knows


async def test_a_path_whose_server_counted_no_tokens_shows_no_context_figure_until_estimated(catalog, fake,
                                                                                            tmp_path) -> None:
    """llama-cpp-python streams no usage: a reopened session of such replies said "ctx 0%" (its
    window known) until the next send, whatever the context held."""
    chat, _ = await make_chat(catalog, fake, tmp_path, model=KNOWN)
    await chat.session.append_message(UserMessage(content="tell a long story " * 200))
    await chat.session.append_message(AssistantMessage(content=[TextContent(text="once upon a time " * 300)],
                                                       provider="openai", model="gpt-4.1-mini"))
    await chat.open(chat.session.storage)
    model = chat.current_model()
    assert model is not None and model.window_known  # (the catalog says its window)
    assert chat.s.agent is None and chat.status().context_percent is None
    await chat.session.append_message(UserMessage(content="and then?"))
    await chat.session.append_message(AssistantMessage(content=[TextContent(text="the end")], provider="openai",
                                                       model="gpt-4.1-mini", usage=Usage(input=9_000, output=600)))
    await chat.open(chat.session.storage)
    assert (chat.status().context_percent or 0) > 0
    fresh, _ = await make_chat(catalog, fake, tmp_path, model=KNOWN)
    assert fresh.status().context_percent == 0  # nothing on the path: nothing in the context


async def test_a_reply_saved_with_no_model_is_not_read_as_the_model_slash(catalog, fake, tmp_path) -> None:
    """A reply written while no model was chosen names provider "" and model "" (a session made
    so, reopened: it greeted the user with "Give the model as PROVIDER/MODEL-ID …, not '/'")."""
    chat, _ = await make_chat(catalog, fake, tmp_path, model=None)
    await chat.session.append_message(UserMessage(content="make notes"))
    await chat.session.append_message(AssistantMessage(content=[TextContent(text="done")], provider="", model=""))
    await chat.open(chat.session.storage)
    assert chat.s.path_state.model == {"provider": "", "modelId": ""}  # kept as Pi builds it
    assert (chat.readiness().problem or "").startswith("No model chosen")
    chat.model_ref = "openai/fake-model"
    await chat.send("and now?")
    await chat.wait_idle()
    assert len(fake.requests) == 1 and (await texts(chat))[-1][0] == "assistant"


async def test_after_a_rewind_to_the_root_the_header_names_the_session_and_says_at_the_start(catalog, fake,
                                                                                                  tmp_path) -> None:
    chat, _ = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    assert await chat.choose(ids[0]) == "q1"  # the first prompt: the leaf goes before it
    assert chat.leaf_id is None
    header = chat.header()
    assert header.title == "q1" and header.at_start and header.position == "at the start · 1 branch"
    await chat.back()
    assert chat.header().position == "4 entries on this branch · 1 branch" and not chat.header().at_start
    await chat.rename("Fruit")
    await chat.choose(ids[0])
    assert (chat.header().title, chat.header().position) == ("Fruit", "at the start · 1 branch")
