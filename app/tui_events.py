"""The App's side of agent events and of the composer: what a running agent shows, and sending.

Agent events arrive through one listener that only posts `AgentEvent` messages, so every screen
update happens in the App's message loop, in order (mixed into TreechatApp).
"""

from __future__ import annotations

from typing import Any

from textual.css.query import NoMatches
from textual.message import Message
from textual.widget import MountError

from treechat.storage.aggregates import tree_row
from treechat.widgets.banner import Banner
from treechat.widgets.composer import Composer
from treechat.widgets.queue_tray import QueueTray
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView

from .tui_view import item_for


class AgentEvent(Message):
    """An agent/session event, with the entry it was persisted as (for message_end)."""

    def __init__(self, event: Any, entry: Any = None) -> None:
        self.event, self.entry = event, entry
        super().__init__()


class SendError(Exception):
    """A message that cannot go out (no model, no key); shown inline, the text stays."""


class EventsMixin:
    async def on_agent_listener(self, event: Any, signal: Any) -> None:
        # Runs inside the agent's task: capture the persisted entry now, render later.
        entry = None
        if event.type == "message_end" and self.session is not None and self.session.leaf_id:
            entry = await self.session.get_entry(self.session.leaf_id)
        self.post_message(AgentEvent(event, entry))

    # ------------------------------------------------------------ agent events

    async def on_agent_event(self, message: AgentEvent) -> None:
        try:
            await self.render_agent_event(message)
        except (NoMatches, MountError):
            pass  # shutting down: the events are persisted already, nothing is left to draw

    async def render_agent_event(self, message: AgentEvent) -> None:
        event, kind = message.event, message.event.type
        transcript = self.ui(Transcript)
        if kind == "agent_start":
            self.ui(Composer).running = True
        elif kind == "message_start" and getattr(event.message, "role", None) == "assistant":
            if not self.preview_id:
                await transcript.set_streaming(event.message)
        elif kind == "message_update":
            if not self.preview_id:
                transcript.update_streaming(event.message)
        elif kind == "message_end":
            await self.on_message_persisted(event.message, message.entry)
        elif kind == "agent_end":
            self.ui(Composer).running = False
            await transcript.set_streaming(None)
            await self.refresh_status()
        elif kind == "queue_update":
            items = [("steer", t) for t in event.steering] + [("follow_up", t) for t in event.follow_up]
            self.ui(QueueTray).set_items(items)
            await self.refresh_status()
        elif kind in ("session_reloaded", "compaction_end", "model_changed", "thinking_level_changed",
                      "active_tools_changed"):
            await self.reload_view()
            if kind == "compaction_end":
                self.report_compaction(event)
        elif kind == "compaction_start":
            self.notify(f"Compacting the conversation ({getattr(event, 'reason', '')})…", timeout=3)

    async def on_message_persisted(self, msg: Any, entry: Any) -> None:
        transcript = self.ui(Transcript)
        if getattr(msg, "role", None) == "assistant":
            await transcript.set_streaming(None)
        if entry is None or self.session is None:
            return
        row = tree_row(entry)
        if row.id not in self.index.by_id:
            self.index.add(row)
            tree = self.ui(TreeView)
            tree.add_row(row)
            tree.set_leaf(self.session.leaf_id, set(self.index.path_ids(self.session.leaf_id)))
        if not self.preview_id:
            item = item_for(entry, self.labels.get(entry.id))
            if item is not None:
                self.items.append(item)  # the header names an unnamed session by its first prompt
                await transcript.append_message(item)
                self.show_siblings([entry.id])
        await self.refresh_status()

    def show_siblings(self, entry_ids: list[str]) -> None:
        """‹ n/m › on every shown message that has alternatives at its point of the tree."""
        transcript = self.ui(Transcript)
        for entry_id in entry_ids:
            sibs = self.index.siblings(entry_id)
            if len(sibs) > 1:
                transcript.set_siblings(entry_id, sibs.index(entry_id) + 1, len(sibs))

    def report_compaction(self, event: Any) -> None:
        if getattr(event, "error", None):
            self.show_error(str(event.error))
        elif getattr(event, "result", None) is not None:
            r = event.result
            self.notify(f"Compacted ({r.trigger}): {r.tokens_before:,} → {r.tokens_after or 0:,} tokens. "
                        "Every original entry is still in the tree.", timeout=6)

    # ------------------------------------------------------------ composer

    async def on_composer_submitted(self, message: Composer.Submitted) -> None:
        text = message.text.strip()
        if not text:
            return
        composer = self.ui(Composer)
        try:
            asession = await self.ensure_agent()
        except SendError as err:
            self.show_error(str(err))
            return
        problem = self.registry.key_problem(asession.state.model)
        if problem:
            self.show_error(problem)
            return
        if asession.is_streaming and message.kind in ("steer", "follow_up", "send"):
            kind = "follow_up" if message.kind == "follow_up" else "steer"
            await (asession.follow_up(text) if kind == "follow_up" else asession.steer(text))
            composer.clear()
            return
        if self.preview_id:
            self.preview_id = None
            await self.reload_view()
        self.ui("#banner", Banner).hide()
        composer.clear()
        self.abandoned_leaf = None
        self.run_worker(self.run_prompt(text), group="agent")

    async def run_prompt(self, text: str | list[Any]) -> None:
        try:
            await self.asession.prompt(text)  # a list of queued messages goes out as one batch
        except Exception as err:  # the agent turns provider failures into messages; this is the rest
            self.show_error(f"Could not send: {err}")

    async def on_composer_command(self, message: Composer.Command) -> None:
        await self.run_slash(message.name, message.args.strip())

    async def on_queue_tray_dropped(self, message: QueueTray.Dropped) -> None:
        if self.asession is None:
            return
        queue = self.asession.queue_update()
        if message.index < len(queue.steering):
            await self.asession.remove_queued("steer", message.index)
        else:
            await self.asession.remove_queued("follow_up", message.index - len(queue.steering))

    async def on_queue_tray_pull_last(self, message: QueueTray.PullLast) -> None:
        await self.action_pull_queued()
