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
from textual.widgets import Footer

from treechat.storage.base import SessionCatalog, SessionStorage
from treechat.storage.model import message_text
from treechat.widgets.banner import Banner
from treechat.widgets.composer import Composer
from treechat.widgets.keymap import bindings_for
from treechat.widgets.queue_tray import QueueTray
from treechat.widgets.screens import ConfirmDialog
from treechat.widgets.session_header import SessionHeader
from treechat.widgets.status_bar import StatusBar
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView

from .session.session import Session
from .tui_actions import ActionsMixin
from .tui_events import EventsMixin, SendError
from .tui_navigation import NavigationMixin
from .tui_view import TreeIndex, first_line, transcript_items

GC_YOUNG = 20_000  # allocations between young collections (CPython's default is 700)


class TreechatApp(EventsMixin, NavigationMixin, ActionsMixin, App):
    CSS_PATH = str(Path(__file__).resolve().parent / "styles.tcss")
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
        self.model_ref = model_ref or getattr(settings, "model", None)
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
        if previous is not None and previous.session_id != storage.session_id:
            self.save_draft(self.ui(Composer).text)
            self.ui(Composer).load_text("")
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
        draft = self.take_draft(storage.session_id)
        if editor_text is not None or draft is not None:
            self.ui(Composer).set_text("\n\n".join(t for t in (draft, editor_text) if t))
        self.call_after_refresh(self.settle_memory)

    def draft_path(self, session_id: str) -> Path:
        return Path(self.settings.home) / "drafts" / f"{session_id}.txt"

    def save_draft(self, text: str) -> None:
        """What was typed (or queued) but not sent, kept per session until it is opened again."""
        if self.session is None or not text.strip():
            return
        path = self.draft_path(self.session.session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def take_draft(self, session_id: str) -> str | None:
        path = self.draft_path(session_id)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        path.unlink(missing_ok=True)
        return text

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
                            'or set model = "PROVIDER/ID" in config.toml.')
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
        from treechat.agent.tools import make_tools
        from treechat.session.agent_session import AgentSession

        model = self.resolve_model()
        try:
            tools = make_tools(self.tool_names, cwd=self.cwd, confirm=self.confirm_command)
            self.asession = await AgentSession.create(
                self.session, model=model, registry=self.registry, tools=tools,
                thinking_level=getattr(self.settings, "thinking", None), stream_fn=self.stream_fn)
        except ValueError as err:
            raise SendError(str(err)) from None
        self._unsubscribe = self.asession.subscribe(self.on_agent_listener)
        await self.reload_view()
        return self.asession

    async def confirm_command(self, command: str) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.push_screen(ConfirmDialog("Run this shell command?", command, yes="Run", no="Refuse"),
                         callback=lambda ok: future.done() or future.set_result(bool(ok)))
        return await future

    async def detect_local(self) -> None:
        from treechat.llm.catalog import ProviderInfo
        from treechat.llm.detect import detect_local_servers

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
            # What the reload built stays alive: freezing it spares the next collection (and the
            # next keypress) a walk over 10^5 fresh objects; settle_memory unfreezes on a switch.
            gc.freeze()
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
            self.ui(TreeView).set_rows(self.index.rows, self.session.leaf_id, active, index=self.index)
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
        if not name:  # unnamed: the first prompt on this branch says what it is about (/name sets one)
            first = next((i.message for i in self.items if getattr(i.message, "role", None) == "user"), None)
            name = first_line(first, 50) if first is not None else f"new session {self.session.session_id[:8]}"
        self.ui(SessionHeader).set_session(name, position, viewing)

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

async def run_tui(args: Any) -> int:
    """`treechat` with no subcommand: open the app on the chosen store and session."""
    import sys

    from treechat.storage import open_catalog

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
