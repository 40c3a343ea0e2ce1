"""The App's actions: key bindings, slash commands and the command palette share these.

One table (`COMMANDS`) names every action once; the palette provider and `/help` are built
from it, the slash dispatcher looks names up in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from treechat.widgets.composer import Composer
from treechat.widgets.queue_tray import QueueTray
from treechat.widgets.screens import (
    ConfirmDialog,
    HelpScreen,
    ModelPicker,
    SearchScreen,
    SessionsScreen,
    ThinkingPicker,
)
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView


@dataclass(frozen=True)
class Command:
    name: str  # the slash command (without "/")
    title: str  # palette text
    help: str
    method: str  # ActionsMixin coroutine taking the argument string


COMMANDS: tuple[Command, ...] = (
    Command("tree", "Show or focus the tree", "the session tree panel (Ctrl+B)", "cmd_tree"),
    Command("back", "Back to the previous leaf", "undo the last leaf move", "cmd_back"),
    Command("fork", "Fork to a new session", "/fork [here|before]: a new session with this path", "cmd_fork"),
    Command("resume", "Sessions", "list, resume, rename, delete sessions (Ctrl+R)", "cmd_resume"),
    Command("new", "New session", "start an empty session (Ctrl+N)", "cmd_new"),
    Command("name", "Name this session", "/name TEXT", "cmd_name"),
    Command("label", "Label the current entry", "/label TEXT (empty clears)", "cmd_label"),
    Command("compact", "Compact the conversation", "/compact [instructions]: summarise older messages", "cmd_compact"),
    Command("summarize", "Summarize the branch you left", "add a summary of the abandoned branch to the context", "cmd_summarize"),
    Command("model", "Choose the model", "/model [PROVIDER/ID] (Ctrl+L)", "cmd_model"),
    Command("thinking", "Thinking level", "/thinking [off|minimal|low|medium|high|xhigh] (Alt+T)", "cmd_thinking"),
    Command("search", "Search all sessions", "/search [QUERY] (Ctrl+F)", "cmd_search"),
    Command("export", "Export this session", "/export [PATH] (.jsonl opens in Pi, .md for reading)", "cmd_export"),
    Command("session", "Session info", "id, file, counts, tokens and cost", "cmd_session"),
    Command("help", "Help: keys and commands", "every key binding (F1)", "cmd_help"),
)
BY_NAME = {c.name: c for c in COMMANDS}


class TreechatCommands(Provider):
    """Command palette: every command of COMMANDS (Ctrl+P)."""

    def _run(self, command: Command) -> Callable[[], Any]:
        app: Any = self.app

        def run() -> None:  # the coroutine is made only when the command is chosen
            app.run_worker(getattr(app, command.method)(""), group="command")

        return run

    async def discover(self) -> Hits:
        for command in COMMANDS:
            yield DiscoveryHit(command.title, self._run(command), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in COMMANDS:
            score = max(matcher.match(command.title), matcher.match("/" + command.name))
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), self._run(command), help=command.help)


class ActionsMixin:
    """Mixed into TreechatApp; relies on its attributes (session, asession, catalog, …)."""

    COMMANDS = {TreechatCommands}  # type: ignore[assignment]  (replaces Textual's defaults: ours cover them)

    async def run_slash(self: Any, name: str, args: str) -> None:
        command = BY_NAME.get(name)
        if command is None:
            self.show_error(f"Unknown command /{name}; /help lists them.")
            return
        self.ui(Composer).clear()
        await getattr(self, command.method)(args)

    # ------------------------------------------------------------ key actions (widgets.keymap "global")

    async def action_toggle_tree(self: Any) -> None:
        tree = self.ui(TreeView)
        hidden = self.has_class("-tree-hidden")
        if hidden:
            self.remove_class("-tree-hidden")
            tree.focus()
        elif not tree.has_focus:
            tree.focus()
        else:
            self.add_class("-tree-hidden")
            self.ui(Composer).focus()

    async def action_sessions(self: Any) -> None:
        await self.cmd_resume("")

    async def action_search(self: Any) -> None:
        await self.cmd_search("")

    async def action_model(self: Any) -> None:
        await self.cmd_model("")

    async def action_thinking(self: Any) -> None:
        await self.cmd_thinking("")

    async def action_new_session(self: Any) -> None:
        await self.cmd_new("")

    async def action_help(self: Any) -> None:
        await self.cmd_help("")

    def action_toggle_tool_output(self: Any) -> None:
        self.ui(Transcript).toggle_tools()

    def action_toggle_thinking_blocks(self: Any) -> None:
        self.ui(Transcript).toggle_thinking()

    async def action_stop(self: Any) -> None:
        """Esc: stop the run; queued steering goes out next (follow-ups keep waiting their turn)."""
        if self.preview_id:
            self.preview_id = None
            await self.reload_view()
            return
        if self.asession is None or not self.asession.is_streaming:
            return
        steering = list(self.asession.agent.steering_queue.items)
        self.asession.agent.clear_steering_queue()
        await self.asession.abort()
        await self.refresh_status()
        if steering:
            self.run_worker(self.run_prompt(steering), group="agent")
        elif self.asession.agent.has_queued_messages():
            follow = list(self.asession.agent.follow_up_queue.items)
            self.asession.agent.clear_follow_up_queue()
            self.run_worker(self.run_prompt(follow), group="agent")
        self.ui(QueueTray).set_items([])

    async def action_pull_queued(self: Any) -> None:
        if self.asession is None:
            return
        text = await self.asession.pop_last_queued()
        if text is not None:
            composer = self.ui(Composer)
            current = composer.text.strip()
            composer.set_text(f"{text}\n{current}" if current else text)
            composer.focus()

    async def action_back(self: Any) -> None:
        await self.cmd_back("")

    async def action_quit(self: Any) -> None:
        """Ctrl+Q: asks first while a reply is running or messages wait in the queue; whatever
        was typed or queued is kept as the session's draft for next time."""
        busy = self.asession is not None and (self.asession.is_streaming or self.asession.agent.has_queued_messages())
        if not busy:
            await self.quit_keeping_draft()
            return

        async def done(ok: bool | None) -> None:
            if ok:
                await self.quit_keeping_draft()

        self.push_screen(ConfirmDialog("Stop the running reply and quit?",
                                       "The partial reply is saved; queued messages come back as a draft.",
                                       yes="Quit", no="Stay"), callback=done)

    async def quit_keeping_draft(self: Any) -> None:
        texts = []
        if self.asession is not None:
            queue = self.asession.queue_update()
            texts = [*queue.steering, *queue.follow_up]
            if self.asession.is_streaming:
                self.asession.agent.clear_all_queues()
                await self.asession.abort()
        draft = self.ui(Composer).text.strip()
        self.save_draft("\n\n".join([*texts, draft] if draft else texts))
        self.exit()

    # ------------------------------------------------------------ commands

    async def cmd_tree(self: Any, args: str) -> None:
        self.remove_class("-tree-hidden")
        self.ui(TreeView).focus()

    async def cmd_back(self: Any, args: str) -> None:
        if not self.leaf_history:
            self.notify("No earlier leaf position in this session.", timeout=3)
            return
        await self.move_leaf(self.leaf_history.pop(), remember=False)

    async def cmd_fork(self: Any, args: str) -> None:
        where = args or "here"
        if where not in ("here", "before"):
            self.show_error("Use /fork here (with the current reply) or /fork before (edit the last prompt).")
            return
        if self.session.leaf_id is None:
            self.show_error("Nothing to fork yet: the session is empty.")
            return
        if where == "here":
            await self.fork_at(self.session.leaf_id, position="at")
            return
        path = await self.session.get_branch()
        last_user = next((e for e in reversed(path) if e.type == "message" and e.message.role == "user"), None)
        if last_user is None:
            self.show_error("No prompt on this branch to fork before.")
            return
        await self.fork_at(last_user.id, position="before")

    async def cmd_resume(self: Any, args: str) -> None:
        rows = await self.catalog.list()

        async def done(choice: Any) -> None:
            if isinstance(choice, SessionsScreen.Resume):
                await self.open_session(await self.catalog.open(choice.session_id))
            elif isinstance(choice, SessionsScreen.New):
                await self.cmd_new("")

        self.push_screen(SessionsScreen(rows, current_id=self.session.session_id), callback=done)

    async def on_sessions_screen_rename(self: Any, message: SessionsScreen.Rename) -> None:
        await self.catalog.rename(message.session_id, message.name)
        if message.session_id == self.session.session_id:
            await self.reload_view()

    async def on_sessions_screen_delete(self: Any, message: SessionsScreen.Delete) -> None:
        if message.session_id == self.session.session_id:
            await self.cmd_new("")
        await self.catalog.delete(message.session_id)

    async def cmd_new(self: Any, args: str) -> None:
        await self.open_session(await self.catalog.create(cwd=self.cwd))
        self.ui(Composer).focus()

    async def cmd_name(self: Any, args: str) -> None:
        await self.catalog.rename(self.session.session_id, args)
        await self.reload_view()

    async def cmd_label(self: Any, args: str) -> None:
        if self.session.leaf_id is None:
            self.show_error("Nothing to label yet: the session is empty.")
            return
        await self.session.append_label(self.session.leaf_id, args or None)
        await self.reload_view()

    async def cmd_compact(self: Any, args: str) -> None:
        try:
            asession = await self.ensure_agent()
        except Exception as err:
            self.show_error(str(err))
            return
        self.run_worker(self._compact(asession, args or None), group="agent")

    async def _compact(self: Any, asession: Any, instructions: str | None) -> None:
        try:
            await asession.compact(instructions)
        except Exception as err:
            self.show_error(str(err))
        await self.reload_view()

    async def cmd_summarize(self: Any, args: str) -> None:
        if not self.abandoned_leaf:
            self.show_error("No branch to summarize: move the leaf to another branch first (tree: Enter).")
            return
        try:
            asession = await self.ensure_agent()
        except Exception as err:
            self.show_error(str(err))
            return
        leaf, self.abandoned_leaf = self.abandoned_leaf, None

        async def work() -> None:
            try:
                await asession.summarize_branch(leaf, args or None)
                self.notify("Added a summary of the branch you left.", timeout=4)
            except Exception as err:
                self.show_error(str(err))
            await self.reload_view()

        self.run_worker(work(), group="agent")

    async def cmd_model(self: Any, args: str) -> None:
        if args:
            await self.choose_model(args)
            return
        models = []
        for m in self.registry.models():
            problem = self.registry.key_problem(m)
            models.append((m.ref, problem) if problem else m.ref)
        current = self.asession.state.model.ref if self.asession else (self.model_ref or self.path_model_ref)

        async def done(ref: str | None) -> None:
            if ref:
                await self.choose_model(ref)

        self.push_screen(ModelPicker(models, current=current), callback=done)

    async def choose_model(self: Any, ref: str) -> None:
        try:
            self.registry.resolve(ref)
        except ValueError as err:
            self.show_error(str(err))
            return
        self.model_ref = ref
        if self.asession is None:
            try:
                await self.ensure_agent()
            except Exception as err:
                self.show_error(str(err))
                return
        else:
            await self.asession.set_model(ref)
        self.check_model_banner()
        await self.reload_view()

    async def cmd_thinking(self: Any, args: str) -> None:
        async def done(level: str | None) -> None:
            if not level:
                return
            try:
                asession = await self.ensure_agent()
                got = await asession.set_thinking_level(level)
            except Exception as err:
                self.show_error(str(err))
                return
            if got != level:
                self.notify(f"{asession.state.model.ref} supports thinking up to {got!r}.", timeout=4)
            await self.reload_view()

        if args:
            await done(args)
            return
        current = self.asession.state.thinking_level if self.asession else "off"
        self.push_screen(ThinkingPicker(current), callback=done)

    async def cmd_search(self: Any, args: str) -> None:
        async def search(query: str) -> list[Any]:
            return await self.catalog.search(query, limit=50)

        async def done(choice: Any) -> None:
            if isinstance(choice, SearchScreen.Chosen):
                await self.jump_to_hit(choice.hit)

        self.push_screen(SearchScreen(search, query=args), callback=done)

    async def jump_to_hit(self: Any, hit: Any) -> None:
        """Open the hit's session and show its entry: on the active path, highlighted; on
        another branch, that branch previewed (the leaf stays where it is)."""
        if hit.session_id != self.session.session_id:
            await self.open_session(await self.catalog.open(hit.session_id))
        entry_id = hit.entry_id
        row = self.index.by_id.get(entry_id)
        target = entry_id
        if row is not None and row.type in ("label", "session_info"):
            target = row.parent_id or entry_id
        if target not in set(self.index.path_ids(self.session.leaf_id)):
            await self.preview(target)
        await self.ui(Transcript).highlight(target)
        self.remove_class("-tree-hidden")
        self.ui(TreeView).move_cursor_to(target)

    async def cmd_export(self: Any, args: str) -> None:
        from treechat.export_md import render_markdown
        from treechat.storage.jsonl import write_session_file

        path = Path(args).expanduser() if args else self.settings.home / "exports" / f"{self.session.session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.suffix == ".md":
                ctx = await self.session.build_session_context()
                name = await self.session.get_session_name() or f"treechat session {self.session.session_id}"
                path.write_text(render_markdown(name, ctx.messages), encoding="utf-8")
            else:
                meta = await self.session.storage.get_metadata()
                header = {"type": "session", "version": 3, "id": meta.id, "timestamp": meta.created_at, "cwd": meta.cwd}
                write_session_file(path, header, await self.session.storage.get_entries(), self.session.leaf_id)
        except OSError as err:
            self.show_error(f"Could not export to {path}: {err.strerror or err}")
            return
        self.notify(f"Exported to {path}", timeout=6)

    async def cmd_session(self: Any, args: str) -> None:
        stats = await self.session.storage.get_session_stats()
        meta = await self.session.storage.get_metadata()
        where = f" · {meta.path}" if meta.path else ""
        self.notify(
            f"Session {self.session.session_id}{where}\n{stats.entry_count} entries · {stats.message_count} messages · "
            f"{stats.total_tokens:,} tokens · ${stats.cost_total:.4f} (all branches)",
            timeout=10,
        )

    async def cmd_help(self: Any, args: str) -> None:
        self.push_screen(HelpScreen())
