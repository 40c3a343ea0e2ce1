"""One send, told as one delta per visible change (chat/bus.py): the parts of a turn coalesced,
snapshots that later changes leave alone. (Before: 21 events for one send, 7 of them statuses.)"""

from __future__ import annotations

import dataclasses

import pytest

from treechat.chat.events import ChatDelta, ReplyPending, ReplyStreaming, SessionOpened, Succeeded
from treechat.storage.model import MessageEntry

from .test_chat import fake, make_chat  # noqa: F401 - the loopback provider fixture


async def test_one_send_is_one_delta_per_visible_change(catalog, fake, tmp_path) -> None:  # noqa: F811
    fake.script_openai(["Hel", "lo"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    rec.raw.clear()
    assert await chat.send("hi") == "sent"
    await chat.wait_idle()
    deltas = [e for e in rec.raw if isinstance(e, ChatDelta)]
    others = [e for e in rec.raw if not isinstance(e, (ChatDelta, ReplyStreaming, ReplyPending))]
    entries = [a.entry for d in deltas for a in d.appended]
    # the model, thinking and tool settings (written before the first message), the prompt, the reply
    assert [e.type for e in entries] == ["model_change", "thinking_level_change", "active_tools_change", "message",
                                         "message"]
    assert others == [Succeeded()]
    # the request is shown as pending before its reply streams (issue 37: a wait is never invisible)
    pending = [i for i, e in enumerate(rec.raw) if isinstance(e, ReplyPending)]
    assert len(pending) == 1 and pending[0] < [type(e) for e in rec.raw].index(ReplyStreaming)
    # each delta shows something, and nothing twice: at most one per entry, plus the run starting
    assert all(d != ChatDelta() for d in deltas)
    assert len(deltas) <= len(entries) + 1, [(len(d.appended), d.header, d.status, d.queue, d.running) for d in deltas]
    headers = [d.header for d in deltas if d.header is not None]
    assert all(a != b for a, b in zip(headers, headers[1:]))  # an unchanged header is not told again
    assert [d.running for d in deltas if d.running is not None] == [True, False]
    assert deltas[-1].running is False and deltas[-1].appended[-1].entry.type == "message"
    # the reply streamed in between: after the run began, before the delta that ends it
    kinds = [type(e) for e in rec.raw]
    first_stream = kinds.index(ReplyStreaming)
    assert any(isinstance(e, ChatDelta) and e.running for e in rec.raw[:first_stream])
    assert rec.raw.index(deltas[-1]) > first_stream


async def test_a_snapshot_is_not_changed_by_a_later_append(catalog, fake, tmp_path) -> None:  # noqa: F811
    fake.script_openai(["one"])
    fake.script_openai(["two"])
    chat, rec = await make_chat(catalog, fake, tmp_path)
    opened = next(e for e in rec.raw if isinstance(e, SessionOpened))
    await chat.send("first")
    await chat.wait_idle()
    prompt = next(e for e in await chat.session.get_branch() if isinstance(e, MessageEntry))
    await chat.preview(prompt.id)
    chat.bus.flush()
    shown = [e for e in rec.raw if isinstance(e, ChatDelta) and e.path is not None][-1]
    assert shown.path is not None
    ids, tail, header = shown.path.path.ids, list(shown.path.path), shown.header
    assert header is not None and header.viewing
    await chat.preview(None)
    await chat.send("second")
    await chat.wait_idle()
    assert len(chat.tree.path_ids(chat.leaf_id)) > len(ids)  # the chat went on...
    assert shown.path.path.ids == ids and list(shown.path.path) == tail and shown.header == header  # ...the snapshot did not
    assert opened.path == () and opened.history == ()  # (the session was empty when it opened)
    with pytest.raises(dataclasses.FrozenInstanceError):
        shown.header = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        shown.path.path.ids = ()
