"""The Textual App: composes the widgets, owns the session state, routes widget messages.

Data flows down (the App hands rows/items/status to widgets), requests flow up (widgets post
Messages). Agent events arrive through one listener that only posts `AgentEvent` messages, so
every screen update happens in the App's message loop, in order.
"""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Footer

from storage.aggregates import tree_row
from storage.base import SessionCatalog, SessionStorage
from storage.model import message_text
from widgets.banner import Banner
from widgets.composer import Composer
from widgets.keymap import bindings_for
from widgets.queue_tray import QueueTray
from widgets.screens import ConfirmDialog, LabelDialog
from widgets.session_header import SessionHeader
from widgets.status_bar import StatusBar
from widgets.transcript import Transcript
from widgets.tree_view import TreeView

from .session.session import Session
from .tui_actions import ActionsMixin
from .tui_view import TreeIndex, item_for, originals_of, transcript_items


GC_YOUNG = 20_000  # allocations between young collections (CPython's default is 700)


class AgentEvent(Message):
    """An agent/session event, with the entry it was persisted as (for message_end)."""

    def __init__(self, event: Any, entry: Any = None) -> None:
        self.event, self.entry = event, entry
        super().__init__()


class SendError(Exception):
    """A message that cannot go out (no model, no key); shown inline, the text stays."""


class TreechatApp(ActionsMixin, App):
    CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles.tcss")
    TITLE = "treechat"
    BINDINGS = bindings_for("global")

    def __init__(self, *, catalog: SessionCatalog, storage: SessionStorage, settings: Any, registry: Any,
                 model_ref: str | None = None, tools: list[str] | None = None, stream_fn: Any = None,
                 detect_servers: bool = True, cwd: str | None = None) -> None:
        super().__init__()
        self.catalog, self.settings, self.registry = catalog, settings, registry
        self.first_storage = storage
        self.session: Session | None = None
        self.asession: Any = None
        self.model_ref = model_ref or getattr(settings, "default_model", None)
        self.tool_names = list(tools if tools is not None else getattr(settings, "tools", []) or [])
        self.stream_fn, self.detect_servers, self.cwd = stream_fn, detect_servers, cwd or os.getcwd()
        self.index = TreeIndex()
        self.index_session: str | None = None
        self.labels: dict[str, str] = {}
        self.items: list[Any] = []
        self.preview_id: str | None = None
        self.leaf_history: list[str | None] = []
        self.abandoned_leaf: str | None = None
        self.detected: list[Any] = []
        self._unsubscribe: Any = None

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                yield SessionHeader()
                yield Banner(id="banner")
                yield Transcript()
                yield QueueTray()
                yield Composer()
            yield TreeView(id="tree")
        yield StatusBar()
        yield Footer()

    async def on_mount(self) -> None:
        self.ui("#banner", Banner).hide()
        self.ui(TreeView).border_title = "tree"
        await self.open_session(self.first_storage)
        self.ui(Composer).focus()
        if self.detect_servers:
            self.run_worker(self.detect_local(), group="detect")
        self.check_model_banner()

    def ui(self, selector: Any, expect_type: Any = None) -> Any:
        """A widget of the main screen, even while a dialog is on top (agent events keep coming)."""
        if not self.screen_stack:
            raise NoMatches("the app has no screen (shutting down)")
        return self.screen_stack[0].query_one(selector, expect_type)

    # ------------------------------------------------------------ session lifecycle

    async def open_session(self, storage: SessionStorage, *, editor_text: str | None = None) -> None:
        """Make `storage` the current session (the previous one is left as it is)."""
        if self.asession is not None:
            if self.asession.is_streaming:
                await self.asession.abort()
            if self._unsubscribe:
                self._unsubscribe()
        previous = self.session
        self.session = await Session.open(storage)
        self.asession = None
        self.preview_id, self.leaf_history, self.abandoned_leaf = None, [], None
        if previous is not None and previous.session_id != storage.session_id:
            await self.drop_if_empty(previous)
        self.ui(QueueTray).set_items([])
        self.ui(Composer).running = False
        await self.reload_view()
        # Up on an empty composer walks back through this branch's prompts, even after a restart.
        prompts = [message_text(i.message) for i in self.items if getattr(i.message, "role", None) == "user"]
        self.ui(Composer).set_history(prompts[-200:])
        if editor_text is not None:
            self.ui(Composer).set_text(editor_text)
        self.call_after_refresh(self.settle_memory)

    async def drop_if_empty(self, session: Session) -> None:
        # A session the user opened and never wrote to is not worth a row in the list.
        try:
            if (await session.storage.get_session_stats()).entry_count == 0:
                await self.catalog.delete(session.session_id)
        except Exception:  # best effort: never block switching on cleanup
            pass

    def resolve_model(self) -> Any:
        ref = self.model_ref or self.path_model_ref
        if not ref and self.detected:
            server = self.detected[0]
            ref = f"{server.provider}/{server.models[0]}" if server.models else None
        if not ref:
            raise SendError("No model chosen: press Ctrl+L to pick one, pass --model PROVIDER/ID, "
                            "or set default_model in config.toml.")
        try:
            return self.registry.resolve(ref)
        except ValueError as err:
            raise SendError(str(err)) from None

    def model_or_none(self) -> Any:
        try:
            return self.resolve_model()
        except SendError:
            return None

    async def ensure_agent(self) -> Any:
        """The AgentSession, created on first need (browsing never writes settings entries)."""
        if self.asession is not None:
            return self.asession
        from app.agent.tools import make_tools
        from app.session.agent_session import AgentSession

        model = self.resolve_model()
        try:
            tools = make_tools(self.tool_names, cwd=self.cwd, confirm=self.confirm_command)
            self.asession = await AgentSession.create(
                self.session, model=model, registry=self.registry, tools=tools,
                thinking_level=getattr(self.settings, "thinking_level", None), stream_fn=self.stream_fn)
        except ValueError as err:
            raise SendError(str(err)) from None
        self._unsubscribe = self.asession.subscribe(self.on_agent_listener)
        await self.reload_view()
        return self.asession

    async def on_agent_listener(self, event: Any, signal: Any) -> None:
        # Runs inside the agent's task: capture the persisted entry now, render later.
        entry = None
        if event.type == "message_end" and self.session is not None and self.session.leaf_id:
            entry = await self.session.get_entry(self.session.leaf_id)
        self.post_message(AgentEvent(event, entry))

    async def confirm_command(self, command: str) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.push_screen(ConfirmDialog("Run this shell command?", command, yes="Run", no="Refuse"),
                         callback=lambda ok: future.done() or future.set_result(bool(ok)))
        return await future

    async def detect_local(self) -> None:
        from app.llm.catalog import ProviderInfo
        from app.llm.detect import detect_local_servers

        found = await detect_local_servers()
        for server in found:
            if server.provider not in self.registry.provider_names:
                self.registry.add_provider(ProviderInfo(name=server.provider, api="openai", base_url=server.base_url,
                                                        local=True, models={m: {} for m in server.models}))
        self.detected = found
        self.check_model_banner()

    # ------------------------------------------------------------ the view

    @property
    def path_model_ref(self) -> str | None:
        model = getattr(self, "_path_model", None)
        return f"{model['provider']}/{model['modelId']}" if model else None

    async def reload_view(self) -> None:
        """Rebuild tree, transcript, header and status from storage (after a move or a switch)."""
        # A 100k-entry tree makes ~10^5 objects at once; a cyclic collection in the middle would
        # walk all of them (hundreds of ms). Collect later, when nothing is being drawn.
        gc.disable()
        try:
            await self._reload_view()
        finally:
            gc.enable()

    def settle_memory(self) -> None:
        """After a session is loaded: free what the previous one left, then freeze what is live
        so later collections (e.g. while a reply streams) do not walk a big session's objects.
        Streaming allocates briskly; fewer, larger young collections keep typing smooth."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        gc.set_threshold(GC_YOUNG, 20, 20)

    async def _reload_view(self) -> None:
        assert self.session is not None
        storage = self.session.storage
        # A pure leaf move adds no row (leaf markers are not rows): keep the tree, move its marks.
        stats = await storage.get_session_stats()
        rows_changed = self.index_session != self.session.session_id or stats.entry_count != len(self.index.rows)
        if rows_changed:
            self.index = TreeIndex.build(await storage.get_tree_rows())
            self.index_session = self.session.session_id
            self.labels = await storage.get_labels()
        shown = self.preview_id or self.session.leaf_id
        path = await storage.get_path_to_root_or_compaction(shown) if shown else []
        items = transcript_items(path, self.labels)
        self.items = items
        transcript = self.ui(Transcript)
        await transcript.set_messages(items)
        self.show_siblings([item.entry_id for item in items])
        active = set(self.index.path_ids(self.session.leaf_id))
        if rows_changed:
            self.ui(TreeView).set_rows(self.index.rows, self.session.leaf_id, active)
        else:
            self.ui(TreeView).set_leaf(self.session.leaf_id, active)
        await self.refresh_status()

    async def refresh_status(self) -> None:
        assert self.session is not None
        state = await self.session.path_state()
        self._path_model = state.model
        model = self.asession.state.model if self.asession else self.model_or_none()
        ref = model.ref if model else "no model"
        thinking = self.asession.state.thinking_level if self.asession else state.thinking_level
        percent, estimated = None, False
        usage = getattr(self.asession, "context_usage", None) if self.asession else None
        if usage is not None:
            u = usage()
            percent, estimated = u.percent, u.estimated
        elif model is not None and model.context_window:
            percent = 100.0 * state.context_tokens / model.context_window
        queue = self.asession.queue_update() if self.asession else None
        warning = None
        if model is not None:
            warning = self.registry.key_problem(model)
        self.ui(StatusBar).update_status(
            model=ref, thinking=thinking, tokens_in=state.input_tokens + state.cache_read_tokens,
            tokens_out=state.output_tokens, cost=state.cost_total, context_percent=percent,
            context_estimated=estimated, model_warning=bool(warning),
            queued_steer=len(queue.steering) if queue else 0, queued_follow_up=len(queue.follow_up) if queue else 0)
        name = await self.session.get_session_name()
        depth = len(self.index.path_ids(self.session.leaf_id))
        position = f"{depth} entries on this branch · {self.index.branch_count()} branches"
        viewing = None
        if self.preview_id:
            row = self.index.by_id.get(self.preview_id)
            viewing = f"“{row.preview[:40]}”" if row else self.preview_id
        self.ui(SessionHeader).set_session(name or f"session {self.session.session_id[:8]}", position, viewing)

    def check_model_banner(self) -> None:
        banner = self.ui("#banner", Banner)
        try:
            model = self.resolve_model()
        except SendError as err:
            servers = ", ".join(s.provider for s in self.detected)
            extra = f" Detected local servers: {servers} (Ctrl+L)." if servers else ""
            banner.show(f"{err}{extra} Browsing, the tree, search and sessions work without one.", "warning")
            return
        problem = self.registry.key_problem(model)
        if problem:
            banner.show(problem + " Browsing, the tree, search and sessions still work.", "warning")
        elif banner.display and getattr(banner, "severity", "") != "error":
            banner.hide()

    def show_error(self, text: str) -> None:
        self.ui("#banner", Banner).show(text, "error")

    # ------------------------------------------------------------ agent events

    async def on_agent_event(self, message: AgentEvent) -> None:
        try:
            await self.render_agent_event(message)
        except NoMatches:
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

    # ------------------------------------------------------------ tree and transcript requests

    async def on_tree_view_node_chosen(self, message: TreeView.NodeChosen) -> None:
        await self.choose_entry(message.entry_id)

    async def on_tree_view_preview_requested(self, message: TreeView.PreviewRequested) -> None:
        await self.preview(message.entry_id)

    async def on_tree_view_label_requested(self, message: TreeView.LabelRequested) -> None:
        await self.ask_label(message.entry_id)

    async def on_tree_view_fork_requested(self, message: TreeView.ForkRequested) -> None:
        await self.fork_at(message.entry_id, position="auto")

    async def on_tree_view_back_requested(self, message: TreeView.BackRequested) -> None:
        await self.action_back()

    async def on_transcript_sibling_requested(self, message: Transcript.SiblingRequested) -> None:
        sibs = self.index.siblings(message.entry_id)
        if len(sibs) < 2:
            return
        target = sibs[(sibs.index(message.entry_id) + message.delta) % len(sibs)]
        await self.move_leaf(self.index.newest_leaf_under(target))

    async def on_transcript_expand_compaction(self, message: Transcript.ExpandCompaction) -> None:
        assert self.session is not None
        entry = await self.session.get_entry(message.entry_id)
        if entry is None or entry.type != "compaction":
            return
        full = await self.session.get_branch(entry.id)
        await self.ui(Transcript).show_originals(entry.id, originals_of(full, entry))

    async def on_banner_dismissed(self, message: Banner.Dismissed) -> None:
        self.ui(Composer).focus()

    # ------------------------------------------------------------ moving the leaf

    async def choose_entry(self, entry_id: str) -> None:
        """DESIGN §6: a user message puts its text in the composer and moves the leaf to its
        parent (the next send is a new sibling); anything else moves the leaf to it."""
        assert self.session is not None
        if self.asession is not None and self.asession.is_streaming:
            self.notify("The agent is still running: showing that branch only. Esc stops the run.", timeout=4)
            await self.preview(entry_id)
            return
        entry = await self.session.get_entry(entry_id)
        if entry is None:
            self.show_error(f"Entry {entry_id} not found")
            return
        if entry.type == "message" and getattr(entry.message, "role", None) == "user":
            await self.move_leaf(entry.parent_id)
            self.ui(Composer).set_text(message_text(entry.message))
            self.ui(Composer).focus()
        else:
            await self.move_leaf(entry_id)

    async def move_leaf(self, target: str | None, *, remember: bool = True) -> None:
        assert self.session is not None
        old = self.session.leaf_id
        self.preview_id = None
        if target != old:
            if remember:
                self.leaf_history.append(old)
            if self.asession is not None:
                await self.asession.move_to(target)  # emits session_reloaded, which redraws
            else:
                await self.session.move_to(target)
            if old is not None and old not in set(self.index.path_ids(target)):
                self.abandoned_leaf = old
                row = self.index.by_id.get(old)
                where = f"“{row.preview[:40]}”" if row else old
                self.notify(f"Left the branch at {where}. /summarize adds a summary of it to the context; "
                            "Backspace in the tree goes back.", timeout=6)
        if self.asession is None or target == old:
            await self.reload_view()

    async def preview(self, entry_id: str) -> None:
        self.preview_id = entry_id if entry_id != (self.session.leaf_id if self.session else None) else None
        await self.reload_view()

    async def ask_label(self, entry_id: str) -> None:
        assert self.session is not None
        current = self.labels.get(entry_id)
        row = self.index.by_id.get(entry_id)

        async def done(label: str | None) -> None:
            if label is None:
                return
            await self.session.append_label(entry_id, label or None)
            await self.reload_view()

        self.push_screen(LabelDialog(current, row.preview if row else entry_id), callback=done)

    async def fork_at(self, entry_id: str, *, position: str) -> None:
        """A new session holding the path to `entry_id`; "auto" forks before a user message (its
        text goes to the composer) and at anything else. The original session is not changed."""
        from .session.branching import ForkError, fork_session
        from storage.base import StorageError

        assert self.session is not None
        if position == "auto":
            row = self.index.by_id.get(entry_id)
            position = "before" if row is not None and row.role == "user" else "at"
        try:
            storage, text = await fork_session(self.catalog, self.session, entry_id, position)
        except (ForkError, StorageError) as err:
            self.show_error(str(err))
            return
        await self.open_session(storage, editor_text=text)
        self.notify(f"Forked into a new session {storage.session_id[:8]}; Ctrl+R goes back to the original.")


async def run_tui(args: Any) -> int:
    """`treechat` with no subcommand: open the app on the chosen store and session."""
    import sys

    from storage import open_catalog

    from .cli import default_backend, latest_with_content
    from .config import ConfigError, load_settings
    from .llm.registry import ModelRegistry

    try:
        settings = load_settings(args.home)
        registry = ModelRegistry(settings)
    except (ConfigError, ValueError) as err:
        print(f"treechat: {err}", file=sys.stderr)
        return 1
    kind = "memory" if getattr(args, "ephemeral", False) else (args.storage or default_backend())
    catalog = await open_catalog(kind, settings.home)
    try:
        if args.session:
            storage = await catalog.open(args.session)
        elif args.continue_latest:
            storage = await latest_with_content(catalog) or await catalog.create(cwd=os.getcwd())
        else:
            # An empty session left by an earlier run (killed before it could tidy up) is reused
            # rather than adding another empty row to the list.
            latest = await catalog.latest()
            if latest is not None and (await latest.get_session_stats()).entry_count == 0:
                storage = latest
            else:
                storage = await catalog.create(cwd=os.getcwd())
        tools = args.tools.split(",") if args.tools else None
        app = TreechatApp(catalog=catalog, storage=storage, settings=settings, registry=registry,
                          model_ref=args.model, tools=tools)
        await app.run_async()
        if app.session is not None:
            await app.drop_if_empty(app.session)
    finally:
        await catalog.close()
    return app.return_code or 0
