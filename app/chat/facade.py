"""The controller: the one thing a front end talks to, and the one owner of a chat's state.

`Chat` holds the current `Session` (the tree and its leaf) and, once something needs a model,
its `AgentSession`. Front ends call its methods (send, steer, stop, move, fork, compact, …) and
subscribe to what it tells (`treechat.chat.events`: one `ChatDelta` per turn of the event loop,
and the discrete events); they never reach into the agent or the storage themselves. It imports
no Textual, so the TUI and print mode share every rule.

`Chat` is a façade: the work is done by role objects with one job each, which share one
`ChatState` (state.py) and its bus, and call each other's public methods only. Every method a
front end calls is a real method here, documented here, one line into its role (so a reader and
an IDE reach its contract in one step, and the roles stay the controller's own business):

| role | module | its job |
|---|---|---|
| `SessionSwitch` | session_switch.py | open, new, resume, close, delete, list (drafts of what was typed and queued) |
| `Live` | live.py | other writers: the store's change feed, their entries folded in |
| `ChatTree` | tree.py | the tree index; a big session's whole tree read after the first frame |
| `Shown` | shown.py | the path shown (or previewed), its marks and labels, the header, the status |
| `Observer` | observe.py | the session's appends and the agent's events, as state and changes |
| `Navigation` | navigation.py | choose, move (back-history), switch siblings, jump to a search hit, entries by id |
| `Lineage` | subagents.py | a `task` result opens its sub-agent's session; back from its start returns |
| `Runs` | runs.py | the runs (several at once, each on its branch) and the agent at rest; send, steer, follow-up, stop, the queue |
| `Subagents` | subagents.py | a `task` call's child agent: its linked session, its run, its answer |
| `ModelChoice` | model_choice.py | which model the next message goes to, readiness, local servers |
| `ModelSettings` | model_settings.py | set the model, the thinking level, the tools, the instructions |
| `Commands` | commands.py | fork, rename, label, compact, summarize, retry, export, copy, info |
| `Workspace` | workspace.py | file history, restores, the offer after a move |
| `Extras` | extras.py | MCP servers, skills, prompt templates |

Errors a person can act on are `ChatError`s with one sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from treechat.chat.commands import Commands
from treechat.chat.compare import Compare
from treechat.chat.errors import ChatError
from treechat.chat.extras import Extras
from treechat.chat.live import Live
from treechat.chat.model_choice import ModelChoice
from treechat.chat.model_settings import ModelSettings
from treechat.chat.navigation import Navigation
from treechat.chat.observe import Observer
from treechat.chat.runs import Runs
from treechat.chat.session_switch import SessionSwitch
from treechat.chat.shown import Shown
from treechat.chat.state import ChatState, Confirm, SendKind
from treechat.chat.subagents import Lineage, Subagents
from treechat.chat.tree import ChatTree
from treechat.chat.workspace import LEAF, Where, Workspace

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from treechat.agent.tools import ApproveChange, CommandHost, FileHost, ReadConfirm
    from treechat.chat.bus import ChatBus, Listener
    from treechat.chat.compare import Comparison
    from treechat.chat.drafts import Drafts
    from treechat.chat.events import Header, QueueChanged, Readiness, RunTip, Status
    from treechat.chat.extras import ProjectTrust
    from treechat.chat.subagents import ChildLink, ParentLink
    from treechat.chat.tool_set import ToolState
    from treechat.config.settings import Settings
    from treechat.llm.detect import DetectedServer
    from treechat.llm.registry import ModelRegistry
    from treechat.llm.types import ModelInfo, StreamFn, StreamOptionFields
    from treechat.local_models import LocalModels
    from treechat.mcp.config import ProjectServers
    from treechat.mcp.manager import McpManager
    from treechat.mcp.tools import ConfirmCall
    from treechat.mcp.trust import TrustAnswer
    from treechat.prompts.extensions import Extensions
    from treechat.session.agent_session import AgentSession, CompactionResult
    from treechat.session.session import Session
    from treechat.session.system_prompt import SystemPromptBuilder
    from treechat.storage.base import SearchHit, SessionCatalog, SessionStorage, SessionSummary
    from treechat.storage.model import AssistantMessage, Entry, ImageContent
    from treechat.storage.tree.index import TreeIndex
    from treechat.widgets.commands import SlashCommand
    from treechat.workspace.history import FileHistory
    from treechat.workspace.restore import Outcome, RestorePlan, UndoOutcome

__all__ = ["Chat", "ChatError"]


class Chat:
    """The controller: a front end's one way in. Each method is one line into the role that
    does the work (the roles table above); the properties read the shared state."""

    def __init__(self, *, catalog: SessionCatalog, settings: Settings, registry: ModelRegistry,
                 model_ref: str | None = None, tools: Sequence[str] | None = None, cwd: str | None = None,
                 stream_fn: StreamFn | None = None, stream_options: StreamOptionFields | None = None,
                 confirm: Confirm | None = None, system: str | None = None,
                 local_servers: Sequence[tuple[str, str]] | None = None,
                 confirm_read: ReadConfirm | None = None) -> None:
        s = self.s = ChatState(catalog=catalog, settings=settings, registry=registry, model_ref=model_ref, tools=tools,
                               cwd=cwd, stream_fn=stream_fn, stream_options=stream_options, confirm=confirm,
                               system=system, confirm_read=confirm_read, status=lambda: shown.status(),
                               header=lambda: shown.header())
        # the roles, each handed the state and the roles it calls (none calls one made after it)
        model_choice = self._model_choice = ModelChoice(s, local_servers=local_servers)
        extras = self._extras = Extras(s)
        trees = self._trees = ChatTree(s)
        workspace = self._workspace = Workspace(s)
        shown = self._shown = Shown(s, model_choice=model_choice, extras=extras)
        observer = Observer(s, shown=shown, trees=trees)
        subagents = Subagents(s, workspace)
        runs = self._runs = Runs(s, model_choice=model_choice, extras=extras, observer=observer, shown=shown,
                                 workspace=workspace, subagents=subagents)
        self._compare = Compare(s, model_choice=model_choice, extras=extras, shown=shown, runs=runs)
        session_switch = self._session_switch = SessionSwitch(
            s, model_choice=model_choice, extras=extras, observer=observer, runs=runs, shown=shown, trees=trees,
            workspace=workspace)
        self._live = Live(s, shown=shown, trees=trees)
        navigation = self._navigation = Navigation(s, observer=observer, session_switch=session_switch, shown=shown,
                                                   trees=trees, workspace=workspace)
        self._lineage = Lineage(s, session_switch=session_switch, navigation=navigation)
        self._model_settings = ModelSettings(s, extras=extras, model_choice=model_choice, shown=shown, runs=runs)
        self._commands = Commands(s, navigation=navigation, runs=runs, session_switch=session_switch, shown=shown,
                                  workspace=workspace)

    # ------------------------------------------------------------ SessionSwitch (session_switch.py)

    async def open(self, storage: SessionStorage, *, composer_text: str | None = None,
                   editor_text: str | None = None) -> None:
        """Make `storage` the current session. What was typed in the composer (`composer_text`)
        and anything still queued become the previous session's draft; `editor_text` (e.g. a
        prompt to edit after `fork before`) goes to the composer after this session's own draft."""
        await self._session_switch.open(storage, composer_text=composer_text, editor_text=editor_text)

    async def new_session(self, *, composer_text: str | None = None) -> None:
        await self._session_switch.new_session(composer_text=composer_text)

    async def resume(self, session_ref: str, *, composer_text: str | None = None) -> None:
        await self._session_switch.resume(session_ref, composer_text=composer_text)

    async def close(self, *, composer_text: str | None = None) -> None:
        """Quit: a running reply is stopped (and saved); typed and queued text becomes the draft."""
        await self._session_switch.close(composer_text=composer_text)

    async def delete_session(self, session_id: str) -> None:
        await self._session_switch.delete_session(session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        """Every session with something in it (and the current one), newest first."""
        return await self._session_switch.list_sessions()

    # ------------------------------------------------------------ Live (live.py)

    async def follow_store(self) -> None:
        """Until cancelled: apply what other writers change in the store."""
        await self._live.follow_store()

    async def poll_others(self) -> int:
        """Fold in the entries another writer appended to this session since the last look
        (see the module's doc for when the leaf follows). Returns how many entries."""
        return await self._live.poll_others()

    # ------------------------------------------------------------ ChatTree (tree.py)

    def load_tree(self) -> None:
        """Start reading a big session's whole tree (the front end calls this after its first frame)."""
        self._trees.load_tree()

    async def whole_tree(self) -> None:
        """Wait until the whole tree is in (at once unless a big session's is still being read)."""
        await self._trees.whole_tree()

    # ------------------------------------------------------------ Shown (shown.py)

    async def preview(self, entry_id: str | None) -> None:
        """Show another branch in the transcript without moving the leaf (None: back to the leaf)."""
        await self._shown.preview(entry_id)

    def header(self) -> Header:
        return self._shown.header()

    def title(self) -> str:
        """The session's name, else its first prompt, else its id."""
        return self._shown.title()

    def status(self) -> Status:
        return self._shown.status()

    # ------------------------------------------------------------ Navigation (navigation.py)

    async def choose(self, entry_id: str) -> str | None:
        """The tree's Enter/click: a user message moves the leaf to its parent and its
        text comes back to edit and resend (a new sibling); anything else moves the leaf to it, and
        so does a run's tip (the person joins it at its live end). A run on the branch left goes on
        (issue 39: the leaf is the person's, the run has its tip)."""
        return await self._navigation.choose(entry_id)

    async def move_to(self, target: str | None, *, remember: bool = True, announce: bool = True) -> None:
        """Move the leaf; leaving a branch is announced (with `/summarize` offered) unless the
        caller is about to grow an alternative there (retry). A read-only store cannot keep a
        move: the branch is shown instead. Runs go on, each on its branch; the leaf follows a run
        only while it is at that run's tip."""
        await self._navigation.move_to(target, remember=remember, announce=announce)

    async def back(self, *, composer_text: str | None = None) -> None:
        """Back to where the leaf was before the last move; at the start of a sub-agent's session
        (nothing to go back to in it), to the session whose `task` call made it. Raises ChatError
        when there is nowhere to go back to."""
        await self._lineage.back(composer_text=composer_text)

    async def switch_sibling(self, entry_id: str, delta: int) -> None:
        """`‹ n/m ›`: go to the newest tip under the previous/next alternative of `entry_id`."""
        await self._navigation.switch_sibling(entry_id, delta)

    async def jump_to(self, hit: SearchHit) -> str:
        """A search hit: open its session and show its entry (on the active path as it is; on
        another branch, that branch previewed). Returns the entry to highlight."""
        return await self._navigation.jump_to(hit)

    async def entries(self, entry_ids: Sequence[str]) -> list[Entry]:
        """Entries of this session by id, in that order (a window of a long path, for the view)."""
        return await self._navigation.entries(entry_ids)

    async def compacted_away(self, compaction_id: str) -> list[Entry]:
        """The entries a compaction took out of the context (the card shows them, dimmed)."""
        return await self._navigation.compacted_away(compaction_id)

    async def entry_details(self, entry_id: str) -> str | None:
        """What the tree's tooltip adds about an entry: the model and tokens of a reply, the
        tokens a compaction saved, the size of a prompt."""
        return await self._navigation.entry_details(entry_id)

    # ------------------------------------------------------------ Runs (runs.py)

    async def ensure_agent(self) -> AgentSession:
        """The agent of the branch on screen: its run's, else the one at rest at the leaf, made on
        first need (browsing never writes settings entries). Fails before anything is written
        when there is no model or no key."""
        return await self._runs.ensure_agent()

    async def send(self, text: str, kind: SendKind = "send", *, attach: Sequence[str] = (),
                   expand: bool = False, images: Sequence[ImageContent] = (),
                   queue_when_idle: bool = False) -> Literal["sent", "queued"]:
        """Send a prompt (`@path` tokens and `attach` files go into the message, and `images`,
        already checked, after them); while a run goes on the branch on screen (its tip is the
        leaf), queue it for that run as a steer (Enter) or follow-up; anywhere else it starts a
        new run at the leaf, beside any going elsewhere (at most `max_runs`: ChatError past that).
        `expand`: a prompt template or `/skill` command becomes what it stands for.
        `queue_when_idle`: a steer or follow-up is queued even with no run going (Pi's RPC: it
        goes out with the next prompt). Raises ChatError (no model, no key, a file that cannot
        be attached) before anything is written: the caller keeps the text."""
        return await self._runs.send(text, kind, attach=attach, expand=expand, images=images,
                                     queue_when_idle=queue_when_idle)

    def asks_before_sending(self, text: str, *, attach: Sequence[str] = (), expand: bool = False) -> bool:
        """Would `send(text, …)` ask a question first (a file outside the working folder not asked
        about yet)? A front end whose event loop must not wait on its own dialog sends such a
        message from a task of its own. Nothing is asked or sent here."""
        return self._runs.asks_before_sending(text, attach=attach, expand=expand)

    async def prompt(self, text: str, *, attach: Sequence[str] = ()) -> AssistantMessage | None:
        """Send and wait for the whole run (print mode); returns the run's last assistant message.
        Templates and `/skill` are expanded; MCP servers still starting are waited for, all at
        once, for `mcp_startup_wait` seconds at most, so their tools are in the first request; one
        slower than that joins the run when it is ready (said once)."""
        return await self._runs.prompt(text, attach=attach)

    # ------------------------------------------------------------ Compare (compare.py)

    async def compare(self, text: str, models: Sequence[str], *, attach: Sequence[str] = (),
                      expand: bool = False, wait_mcp: bool = False) -> Comparison:
        """One prompt to several models (issue 39): a run per model ("provider/id", in the order
        given; the same one twice is two attempts), started at once on sibling branches from the
        leaf, which stays where it is (`move_to` a reply's tip picks it). Returns the runs started,
        each with its reply to come (`Comparison.replies()` awaits them all). Raises ChatError
        before anything is written: fewer than two models, one unknown or without a key, more runs
        than `max_runs` allows, a run going on the branch on screen, nothing to send, a file that
        cannot be attached. `wait_mcp`: MCP servers still starting are waited for first (print mode,
        as `prompt` does)."""
        return await self._compare.compare(text, models, attach=attach, expand=expand, wait_mcp=wait_mcp)

    def check_compare(self, models: Sequence[str]) -> None:
        """Would `compare` take these models (two or more, known, with keys, room under
        `max_runs`)? ChatError with one line if not; nothing is sent or written."""
        self._compare.models(models)

    async def wait_idle(self) -> None:
        """Until no run is under way, on any branch; what they changed has been told (the pending
        delta is flushed)."""
        await self._runs.wait_idle()

    async def stop(self) -> None:
        """Esc: end a preview; else stop the run of the branch on screen (runs elsewhere go on), and
        what it had queued goes out next, on its branch, in the order it would have: the steering
        first, the follow-ups when that run would stop."""
        await self._runs.stop()

    async def stop_run(self) -> None:
        """Ctrl+C: stop the run at the leaf, whatever is previewed; what it had queued goes out next, as for Esc."""
        await self._runs.stop_run()

    def abort(self) -> None:
        """Stop every run now, from a signal handler (Ctrl+C in print mode); nothing is queued next."""
        self._runs.abort()

    async def halt(self) -> None:
        """Stop every run and leave what each had queued in its queue: it goes out with the next
        prompt (the steers at its start, the follow-ups when it would stop). Pi's RPC `abort` (it
        drives one run); the app's Esc is `stop`, after which the queue goes out at once."""
        await self._runs.halt()

    def watch_agents(self, watcher: Callable[[AgentSession], None]) -> Callable[[], None]:
        """`watcher(agent)` for every AgentSession this chat makes from now on (the first send, a
        setting, after a session switch), before it is used: a protocol front end subscribes to
        the agent's own events there. Returns the unsubscribe."""
        return self._runs.watch_agents(watcher)

    async def pull_last_queued(self) -> str | None:
        return await self._runs.pull_last_queued()

    async def drop_queued(self, index: int) -> None:
        await self._runs.drop_queued(index)

    # ------------------------------------------------------------ Lineage (subagents.py)

    async def child_session(self, entry_id: str) -> ChildLink | None:
        """The sub-agent's session a `task` call's result names (None: the entry is no such result)."""
        return await self._lineage.child(entry_id)

    async def parent_session(self) -> ParentLink | None:
        """The session whose `task` call made the open one (None: it is no sub-agent's)."""
        return await self._lineage.parent()

    async def open_child(self, entry_id: str, *, composer_text: str | None = None) -> ChildLink:
        """Open the sub-agent's session a `task` result names (what was typed becomes this
        session's draft); `back` at its start comes back here. Raises ChatError when the entry
        names none, while a reply runs, or when that session cannot be opened."""
        return await self._lineage.open_child(entry_id, composer_text=composer_text)

    # ------------------------------------------------------------ ModelChoice (model_choice.py)

    def current_model(self) -> ModelInfo | None:
        """The model the next message goes to (None: none chosen, or it cannot be resolved)."""
        return self._model_choice.current_model()

    def readiness(self) -> Readiness:
        return self._model_choice.readiness()

    def add_local_servers(self, found: Sequence[DetectedServer]) -> None:
        """Local servers found (at start-up, when the picker opens, or for `-p`): offered as
        models, used when nothing else is chosen."""
        self._model_choice.add_local_servers(found)

    def busy_server(self) -> str | None:
        """The root URL of the local server a reply is coming from now (not to be asked meanwhile)."""
        return self._model_choice.busy_server()

    # ------------------------------------------------------------ ModelSettings (model_settings.py)

    async def set_model(self, ref: str) -> None:
        await self._model_settings.set_model(ref)

    async def set_thinking(self, level: str) -> str:
        """The level in use afterwards (clamped to what the model supports; a notice says so)."""
        return await self._model_settings.set_thinking(level)

    async def set_instructions(self, text: str | None) -> str:
        """`/system TEXT`: the user's own instructions (None or "" removes them), kept with the
        session (an entry on the path: a restart and `context --json` see them); the new prompt."""
        return await self._model_settings.set_instructions(text)

    def system_prompt(self) -> str:
        """The system prompt the next request carries."""
        return self._model_settings.system_prompt()

    def tools(self) -> list[ToolState]:
        """`/tools`: every tool there is (the six built-in ones, then the MCP servers' running
        now), each with whether the next request carries it."""
        return self._model_settings.tools()

    async def set_tool(self, name: str, on: bool) -> list[str]:
        """`/tools NAME on|off` (`all`: every tool); the tools on afterwards."""
        return await self._model_settings.set_tool(name, on)

    async def set_tools(self, names: Iterable[str]) -> list[str]:
        """Exactly `names` on (the `/tools` dialog): each tool whose state changes is turned on or
        off for as long as the session is open, and the path records the new set (at once when
        nothing runs; else just before the next request). The tools on afterwards."""
        return await self._model_settings.set_tools(names)

    # ------------------------------------------------------------ Commands (commands.py)

    async def rename(self, name: str, session_id: str | None = None) -> None:
        """Name a session; the current one gets the entry at its leaf (never a fork)."""
        await self._commands.rename(name, session_id)

    async def label(self, entry_id: str | None, text: str | None) -> None:
        """Label an entry (empty clears); `None` labels the newest conversation entry on the path
        (a message, a compaction, a summary): a `/label` typed right after `/name` or a model change
        would otherwise land on that setting's entry, which the tree does not show."""
        await self._commands.label(entry_id, text)

    def label_of(self, entry_id: str) -> str | None:
        return self._commands.label_of(entry_id)

    async def fork(self, entry_id: str | None, position: Literal["auto", "at", "before"] = "auto",
                   *, composer_text: str | None = None) -> str:
        """A new session holding the path to `entry_id` (default: the leaf), which becomes the
        current one. "before" a user message (or "auto" on one) forks at its parent and its text
        comes back in the composer. The original session is not changed. Returns the new id."""
        return await self._commands.fork(entry_id, position, composer_text=composer_text)

    async def copy_text(self, n: int | None = None) -> str:
        """What `/copy` copies: the last reply (None), or the N-th message from the end of the
        path (1 = the last). The text as a person would paste it: a reply without its thinking."""
        return await self._commands.copy_text(n)

    async def retry(self, reply_id: str | None = None) -> None:
        """Ask again: the prompt a reply answered (default: the last prompt) gets a new reply, a
        sibling of the old one (`‹ n/m ›` switches between them); nothing is deleted."""
        await self._commands.retry(reply_id)

    async def compact(self, instructions: str | None = None) -> CompactionResult | None:
        """`/compact`: summarise the older part of the path. The outcome arrives as events
        (CompactionStarted/Ended, PathChanged); None when nothing was compacted (the event says why)."""
        return await self._commands.compact(instructions)

    async def summarize(self, instructions: str | None = None) -> None:
        """Add a summary of the branch the leaf left to the context (after a move)."""
        await self._commands.summarize(instructions)

    async def export(self, path: str | Path | None = None) -> Path:
        """Write this session to `path` (.jsonl opens in Pi, .md for reading, .html to look at);
        default: `<home>/exports/<id>.jsonl`."""
        return await self._commands.export(path)

    async def info(self) -> str:
        return await self._commands.info()

    # ------------------------------------------------------------ Workspace (workspace.py)

    async def file_history(self) -> FileHistory:
        """Every checkpoint of the current session (read once, then kept up to date)."""
        return await self._workspace.file_history()

    async def restore_plan(self, entry_id: str | None | Literal[Where.LEAF] = LEAF) -> RestorePlan:
        """What restoring the tracked files to `entry_id` (default: the leaf; None: before the
        first entry) would change."""
        return await self._workspace.restore_plan(entry_id)

    async def restore(self, plan: RestorePlan, *, force: bool = False) -> Outcome:
        """Restore what `plan` says (the blocked files too with `force`); a notice says what happened."""
        return await self._workspace.restore(plan, force=force)

    async def undo_restore(self, *, force: bool = False) -> UndoOutcome:
        return await self._workspace.undo_restore(force=force)

    # ------------------------------------------------------------ Extras (extras.py)

    def project_mcp(self) -> tuple[ProjectServers | None, ProjectTrust]:
        """The project's `.mcp.json` (nearest, up to the repository root) and whether its servers
        may start: trusted or refused before for exactly this content (its servers as written, the
        repository's scripts they run, this repository), or to be asked."""
        return self._extras.project_mcp()

    def trust_project(self, answer: TrustAnswer) -> None:
        """The person's answer to "start this project's servers?", kept in state.json (until the
        servers, their scripts or the repository change)."""
        self._extras.trust_project(answer)

    def describe_project_mcp(self) -> str:
        """What the question about the project's servers shows: each server whole, the variables
        it reads from your environment, the repository's files it runs ("" when there are none)."""
        return self._extras.describe_project_mcp()

    def start_mcp(self, *, project: bool | None = None) -> None:
        """Start the servers in the background. `project`: use the project's `.mcp.json` servers
        (None: if they were trusted before); those left out are listed as not trusted."""
        self._extras.start_mcp(project=project)

    def allow_project_mcp(self) -> None:
        """Start the project's servers `start_mcp` left out (the person said yes)."""
        self._extras.allow_project_mcp()

    async def restart_mcp(self, name: str) -> str:
        return await self._extras.restart_mcp(name)

    def mcp_text(self) -> str:
        return self._extras.mcp_text()

    def load_extensions(self) -> None:
        """Find the skills and templates now (the system prompt lists the skills)."""
        self._extras.load_extensions()

    def command_rows(self) -> list[SlashCommand]:
        """The templates as slash-command rows (`widgets.commands.SlashCommand`), for completion,
        the palette and F1: commands made at run time from the files found."""
        return self._extras.command_rows()

    def extensions_text(self) -> str:
        return self._extras.extensions_text()

    # ------------------------------------------------------------ what a front end hears

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.s.bus.subscribe(listener)

    # ------------------------------------------------------------ what is current (read from the state)

    @property
    def bus(self) -> ChatBus:
        return self.s.bus

    @property
    def session(self) -> Session:
        return self.s.session

    @property
    def session_id(self) -> str:
        return self.s.session.session_id

    @property
    def leaf_id(self) -> str | None:
        return self.s.session.leaf_id

    @property
    def agent(self) -> AgentSession | None:
        """The agent bound to this session, once a message or a setting needed one."""
        return self.s.agent

    @property
    def is_running(self) -> bool:
        """A run goes, on any branch."""
        return self.s.is_running

    @property
    def is_running_here(self) -> bool:
        """A run goes on the branch on screen (its tip is the leaf): Enter steers it, Esc stops it."""
        return self.s.is_running_here

    @property
    def runs(self) -> tuple[RunTip, ...]:
        """The runs going, each with its tip (the entry it appends under)."""
        return self.s.runs_told()[0]

    @property
    def is_busy(self) -> bool:
        """A reply is running (on any branch) or messages wait in a queue (quitting should ask first)."""
        return self.s.is_running or any(r.agent.has_queued_messages for r in self.s.every_run())

    @property
    def queue(self) -> QueueChanged:
        return self.s.queue

    @property
    def read_only(self) -> str | None:
        return self.s.read_only

    @property
    def tree(self) -> TreeIndex:
        return self.s.tree

    @property
    def preview_id(self) -> str | None:
        return self.s.preview_id

    @property
    def leaf_history(self) -> list[str | None]:
        return self.s.leaf_history

    @property
    def abandoned_leaf(self) -> str | None:
        return self.s.abandoned_leaf

    @property
    def catalog(self) -> SessionCatalog:
        return self.s.catalog

    @property
    def settings(self) -> Settings:
        return self.s.settings

    @property
    def registry(self) -> ModelRegistry:
        return self.s.registry

    @property
    def cwd(self) -> str:
        return self.s.cwd

    @property
    def drafts(self) -> Drafts:
        return self.s.drafts

    @property
    def prompt_builder(self) -> SystemPromptBuilder:
        return self.s.prompt_builder

    @property
    def local(self) -> LocalModels:
        return self._model_choice.local

    @property
    def detected(self) -> list[DetectedServer]:
        return self._model_choice.detected

    @property
    def mcp(self) -> McpManager:
        return self._extras.mcp

    @property
    def project(self) -> ProjectServers | None:
        return self._extras.project

    @property
    def extensions(self) -> Extensions:
        """The skills and templates, found on first need (their problems are one warning)."""
        return self._extras.extensions

    @property
    def extensions_loaded(self) -> bool:
        """The skills and templates were looked for (the composer's Tab completion lists them from then)."""
        return self._extras.loaded

    @property
    def folder(self) -> str:
        return self._workspace.folder

    # ------------------------------------------------------------ what a front end sets

    @property
    def model_ref(self) -> str | None:
        return self.s.model_ref

    @model_ref.setter
    def model_ref(self, ref: str | None) -> None:
        self.s.model_ref = ref

    @property
    def confirm(self) -> Confirm | None:
        """Asks before the bash tool runs a command (None: refuse)."""
        return self.s.confirm

    @confirm.setter
    def confirm(self, ask: Confirm | None) -> None:
        self.s.confirm = ask

    @property
    def confirm_read(self) -> ReadConfirm | None:
        """Asks before read, ls, grep look outside the working folder."""
        return self.s.confirm_read

    @confirm_read.setter
    def confirm_read(self, ask: ReadConfirm | None) -> None:
        self.s.confirm_read = ask

    @property
    def approve_change(self) -> ApproveChange | None:
        """Asks before edit/write change a file (None: refuse)."""
        return self.s.approve_change

    @approve_change.setter
    def approve_change(self, ask: ApproveChange | None) -> None:
        self.s.approve_change = ask

    @property
    def confirm_tool(self) -> ConfirmCall | None:
        """Asks before an MCP tool runs (None: refuse untrusted calls)."""
        return self._extras.confirm_tool

    @confirm_tool.setter
    def confirm_tool(self, ask: ConfirmCall | None) -> None:
        self._extras.confirm_tool = ask

    @property
    def file_host(self) -> FileHost | None:
        """An editor that serves the files read, edit and write use (None: this machine's)."""
        return self.s.file_host

    @file_host.setter
    def file_host(self, host: FileHost | None) -> None:
        self.s.file_host = host

    @property
    def command_host(self) -> CommandHost | None:
        """An editor whose terminal runs bash's commands (None: here, in a child process)."""
        return self.s.command_host

    @command_host.setter
    def command_host(self, host: CommandHost | None) -> None:
        self.s.command_host = host

    @property
    def builtin_commands(self) -> frozenset[str]:
        """The front end's own slash commands: no prompt template is found under their names."""
        return self._extras.builtin_commands

    @builtin_commands.setter
    def builtin_commands(self, names: frozenset[str]) -> None:
        self._extras.builtin_commands = names
