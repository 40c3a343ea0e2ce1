"""The controller's file rules without any UI: the offer to restore after a move (and not when
nothing differs, and not for a place the leaf already left), a fork's offer, what cannot be
restored, a damaged journal, and the diff text itself."""

from __future__ import annotations

import json
import os
import random
import re

import pytest

from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.chat.events import Notice, RestoreOffered
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import MessageEntry, UserMessage
from treechat.workspace.diff_text import unified_diff
from treechat.workspace.journal import Journal


def call(call_id: str, name: str, **args) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


async def allow(change) -> bool:
    return True


@pytest.fixture
async def chat(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    async with FakeProvider() as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
        settings = load_settings(tmp_path / "home", env=env)
        chat = Chat(catalog=MemoryCatalog(), settings=settings, registry=ModelRegistry(settings, env=env),
                    model_ref="openai/fake-model", tools=["write"], cwd=str(work), local_servers=())
        chat.approve_change = allow
        chat.events = []  # type: ignore[attr-defined]
        chat.subscribe(chat.events.append)  # type: ignore[attr-defined]
        await chat.open(await chat.catalog.create(cwd=str(work)))
        chat.fake, chat.work = fake, work  # type: ignore[attr-defined]
        yield chat
        await chat.close()


async def wrote(chat, content: str = "one\n") -> str:
    """A prompt whose reply writes notes.txt; returns the prompt's entry id."""
    chat.fake.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content=content)])
    chat.fake.script_openai(["done"])
    await chat.prompt("write it")
    prompt = [e for e in await chat.session.get_branch()
              if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)][-1]
    return prompt.id


async def offered(chat) -> list[RestoreOffered]:
    if chat._workspace._offer_task is not None:
        await asyncio_wait(chat._workspace._offer_task)
    return [e for e in chat.events if isinstance(e, RestoreOffered)]


async def asyncio_wait(task) -> None:
    import asyncio

    await asyncio.gather(task, return_exceptions=True)


async def test_a_move_offers_the_files_there_and_going_back_offers_them_again(chat) -> None:
    prompt = await wrote(chat)
    leaf = chat.session.leaf_id
    assert (chat.work / "notes.txt").read_text() == "one\n"
    await chat.choose(prompt)  # edit and resend: the leaf goes before the prompt
    [offer] = await offered(chat)
    assert [(s.shown, s.removes) for s in offer.plan.ready] == [("notes.txt", True)]
    assert (chat.work / "notes.txt").exists()  # an offer changes nothing
    await chat.restore(offer.plan)
    assert not (chat.work / "notes.txt").exists()
    await chat.move_to(leaf)
    assert len(await offered(chat)) == 2
    await chat.restore((await offered(chat))[-1].plan)
    assert (chat.work / "notes.txt").read_text() == "one\n"
    result = next(e.id for e in await chat.session.get_branch()
                  if isinstance(e, MessageEntry) and e.message.role == "toolResult")
    await chat.move_to(result)  # just after the write: the file is as it was there, nothing to offer
    assert len(await offered(chat)) == 2


async def test_an_offer_for_a_place_the_leaf_left_is_dropped(chat) -> None:
    prompt = await wrote(chat)
    leaf = chat.session.leaf_id
    await chat.move_to(prompt)
    await chat.move_to(leaf)  # before the first offer was worked out
    plans = [e.plan for e in await offered(chat)]
    assert all(p.target_id == chat.session.leaf_id for p in plans)


async def test_only_a_changed_file_differs_the_move_says_so_in_a_notice(chat) -> None:
    prompt = await wrote(chat)
    (chat.work / "notes.txt").write_text("mine\n")
    await chat.move_to(prompt)
    assert await offered(chat) == []
    notes = [e.text for e in chat.events if isinstance(e, Notice) and "changed on disk" in e.text]
    assert notes and "notes.txt differs from this point" in notes[-1] and "/restore --force" in notes[-1]


async def test_a_fork_offers_the_files_of_its_point(chat) -> None:
    await wrote(chat, "one\n")
    second = await wrote(chat, "two\n")
    await chat.fork(second, "before")  # a new session whose path holds the first write only
    [offer] = await offered(chat)
    assert offer.plan.session_id == chat.session_id and [s.shown for s in offer.plan.ready] == ["notes.txt"]
    await chat.restore(offer.plan)
    assert (chat.work / "notes.txt").read_text() == "one\n"


async def test_a_path_that_is_no_longer_a_file_is_never_touched(chat) -> None:
    prompt = await wrote(chat)
    os.unlink(chat.work / "notes.txt")
    os.mkfifo(chat.work / "notes.txt")
    plan = await chat.restore_plan(prompt)
    [step] = plan.steps
    assert step.unavailable == "it is a FIFO now; left as it is"
    outcome = await chat.restore(plan, force=True)
    assert outcome.changed == 0 and (chat.work / "notes.txt").is_fifo()


async def test_a_damaged_journal_reads_as_empty(chat, tmp_path) -> None:
    journal = Journal(tmp_path / "home", "s1")
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    journal.path.write_text("{not json")
    assert Journal(tmp_path / "home", "s1").undo == []


def apply(lines: list[str], diff: str) -> list[str]:
    """Apply a unified diff's hunks to `lines` (asserting its context and removed lines match)."""
    out, at, body = [], 0, diff.split("\n")[2:]
    i = 0
    while i < len(body):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", body[i])
        assert m, body[i]
        start = int(m.group(1)) - (1 if int(m.group(2) or 1) else 0)
        out.extend(lines[at:start])
        at, i = start, i + 1
        while i < len(body) and not body[i].startswith("@@"):
            mark, text = body[i][0], body[i][1:]
            if mark in " -":
                assert lines[at] == text
                at += 1
            if mark in " +":
                out.append(text)
            i += 1
    return out + lines[at:]


def test_the_diff_text_is_a_valid_unified_diff() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 25))]
        b = list(a)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.3 and b:
                b.pop(rng.randrange(len(b)))
            elif op < 0.6:
                b.insert(rng.randint(0, len(b)), rng.choice("abxyz"))
            elif b:
                b[rng.randrange(len(b))] = rng.choice("xyz")
        diff = unified_diff("".join(x + "\n" for x in a), "".join(x + "\n" for x in b), "f")
        if a == b:
            assert diff.text == ""
            continue
        assert apply(a, diff.text) == b
        assert diff.added - diff.removed == len(b) - len(a)
