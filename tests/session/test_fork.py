"""Fork to a new session through AgentSession, on every storage backend: "at" an entry (with the
reply), "before" a prompt (its text comes back for the composer), parent links, errors."""

from __future__ import annotations

from typing import Any, cast

import pytest

from treechat.agent import Agent
from treechat.agent.state import AgentState
from treechat.llm.types import ModelInfo
from treechat.session.agent_session import AgentSession
from treechat.session.branching import ForkError
from treechat.session.session import Session
from treechat.storage.base import EntryNotFoundError
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent, UserMessage, message_text

MODEL = ModelInfo(id="fake-model", provider="openai", api="openai")


async def conversation(catalog):
    """u1 → a1 → u2 → a2 with a label on a1; the first prompt is a root, as in imported sessions."""
    session = await Session.open(await catalog.create(cwd="/work/project"))
    ids = {}
    for name, msg in (("u1", UserMessage(content="first prompt")),
                      ("a1", AssistantMessage(content=[TextContent(text="first reply")])),
                      ("u2", UserMessage(content=[TextContent(text="second prompt")])),
                      ("a2", AssistantMessage(content=[TextContent(text="second reply")]))):
        ids[name] = await session.append_message(msg)
    await session.append_label(ids["a1"], "good point")
    return AgentSession(session, Agent(state=AgentState(model=MODEL))), ids


async def texts_of(catalog, storage) -> list[str]:
    fork = await Session.open(storage)
    return [message_text(e.message) for e in await fork.get_branch() if isinstance(e, MessageEntry)]


async def summary_of(catalog, session_id):
    return next(s for s in await catalog.list() if s.id == session_id)


async def test_fork_at_an_entry_keeps_the_path_its_labels_and_links_to_the_parent(catalog) -> None:
    s, ids = await conversation(catalog)
    leaf_before = s.session.leaf_id
    storage, editor_text = await s.fork(catalog, ids["a1"], position="at")
    assert editor_text is None
    assert await texts_of(catalog, storage) == ["first prompt", "first reply"]
    assert await storage.get_label(ids["a1"]) == "good point"
    info = await summary_of(catalog, storage.session_id)
    assert (info.parent_session_id, info.parent_entry_id) == (s.session.session_id, ids["a1"])
    assert info.cwd == "/work/project"
    assert s.session.leaf_id == leaf_before  # the original is untouched
    assert len(await s.session.get_branch()) == 5


async def test_fork_before_a_prompt_ends_at_its_parent_and_returns_its_text(catalog) -> None:
    s, ids = await conversation(catalog)
    storage, editor_text = await s.fork(catalog, ids["u2"], position="before")
    assert editor_text == "second prompt"
    assert await texts_of(catalog, storage) == ["first prompt", "first reply"]
    info = await summary_of(catalog, storage.session_id)
    assert (info.parent_session_id, info.parent_entry_id) == (s.session.session_id, ids["a1"])


async def test_fork_before_the_first_prompt_gives_an_empty_linked_session(catalog) -> None:
    s, ids = await conversation(catalog)
    storage, editor_text = await s.fork(catalog, ids["u1"], position="before")
    assert editor_text == "first prompt"
    assert await storage.get_leaf_id() is None and await texts_of(catalog, storage) == []
    info = await summary_of(catalog, storage.session_id)
    assert info.parent_session_id == s.session.session_id and info.cwd == "/work/project"


async def test_fork_errors_name_the_problem(catalog) -> None:
    s, ids = await conversation(catalog)
    count = len(await catalog.list())
    with pytest.raises(ForkError, match="user message"):
        await s.fork(catalog, ids["a1"], position="before")
    with pytest.raises(EntryNotFoundError, match="deadbeef"):
        await s.fork(catalog, "deadbeef", position="at")
    with pytest.raises(ForkError, match="'at' or 'before'"):
        await s.fork(catalog, ids["u2"], position=cast(Any, "after"))  # not a position the type allows: refused at run time too
    assert len(await catalog.list()) == count
