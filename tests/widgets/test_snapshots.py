"""Snapshots of the main layouts (transcript, tree panel, status, footer) with a host App that composes the real widgets.

Regenerate after an intended visual change: ``pytest tests/widgets/test_snapshots.py --snapshot-update``.
"""

from datetime import UTC, datetime

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical

from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.fitted_footer import FittedFooter
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.keymap import bindings_for
from treechat.widgets.screens import SessionsScreen
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .helpers import row
from .test_screens import SESSIONS

SIZE = (120, 36)

ROWS = [
    row("u1", None, preview="Let's refactor the auth module"),
    row("a1", "u1", "assistant", preview="Sure. Two approaches: A or B"),
    row("u2", "a1", preview="try approach A"),
    row("a2", "u2", "assistant", preview="Approach A done", label="A-done"),
    row("u3", "a1", preview="try approach B"),
    row("a3", "u3", "assistant", preview="Running the tests"),
    row("t3", "a3", "toolResult", preview="[bash: pytest -q] 12 passed"),
    row("a4", "t3", "assistant", preview="All green."),
]
PATH = {"u1", "a1", "u3", "a3", "t3", "a4"}
MESSAGES = [
    ("u1", UserMessage(content="Let's refactor the auth module")),
    ("a1", AssistantMessage(model="gpt-4o", content=[TextContent(text="Sure. Two approaches:\n\n1. **A**: split the module\n2. **B**: keep it, add tests\n\n```python\ndef login(user):\n    return token(user)\n```")])),
    ("u3", UserMessage(content="try approach B")),
    ("a3", AssistantMessage(model="gpt-4o", content=[TextContent(text="Running the tests."), ToolCall(id="c1", name="bash", arguments={"command": "pytest -q"})])),
    ("t3", ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="............\n12 passed in 0.4s")])),
    ("a4", AssistantMessage(model="gpt-4o", content=[TextContent(text="All green.")])),
]


class MainLayout(App):
    CSS_PATH = "../../styles.tcss"
    BINDINGS = bindings_for("global")

    def __init__(self, running: bool = False, queue=(), banner: str = "", compacted: bool = False) -> None:
        super().__init__()
        self.running, self.queue, self.banner, self.compacted = running, list(queue), banner, compacted

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                yield SessionHeader()
                yield Banner(self.banner)
                yield Transcript()
                yield QueueTray()
                yield Composer()
            yield TreeView(id="tree")
        yield StatusBar()
        yield FittedFooter()

    async def on_mount(self) -> None:
        self.query_one(SessionHeader).set_session("refactor-auth", "branch 2/2 at “try approach B”")
        tree = self.query_one(TreeView)
        tree.set_rows(ROWS, "a4", PATH)
        transcript = self.query_one(Transcript)
        items = list(MESSAGES)
        if self.compacted:
            items.insert(0, ("k1", CompactionEntry(id="k1", parent_id=None, summary="Goal: refactor auth", tokens_before=143210, tokens_after=18450, trigger="auto")))
        await transcript.set_messages(items)
        transcript.set_siblings("u3", 2, 2)
        self.query_one(QueueTray).set_items(self.queue)
        composer = self.query_one(Composer)
        composer.cursor_blink = False
        composer.running = self.running
        composer.focus()
        self.query_one(StatusBar).update_status(
            model="openai/gpt-4o", thinking="medium", tokens_in=84_000, tokens_out=12_000, cost=0.41,
            context_percent=42, context_estimated=self.compacted,
            queued_steer=sum(k == "steer" for k, _ in self.queue), queued_follow_up=sum(k == "follow_up" for k, _ in self.queue),
            tools=("read", "ls", "grep", "bash", "edit", "write"),
        )


def test_main_layout_idle(snap_compare):
    assert snap_compare(MainLayout(banner="No API key: set OPENAI_API_KEY, add [providers.x] to config.toml, or start Ollama"), terminal_size=SIZE)


def test_main_layout_running_with_queue(snap_compare):
    app = MainLayout(running=True, queue=[("steer", "fix the failing test first"), ("follow_up", "then update the changelog")], compacted=True)
    assert snap_compare(app, terminal_size=SIZE)


def test_tree_focused_with_all_filter(snap_compare):
    async def focus_tree(pilot):
        pilot.app.query_one(TreeView).focus()
        await pilot.press("5", "up", "up")  # filter "all", cursor two rows above the leaf

    assert snap_compare(MainLayout(), terminal_size=SIZE, run_before=focus_tree)


def test_sessions_screen(snap_compare):
    async def open_sessions(pilot):
        # awaited: mounted (and filled) before the picture, however slow the machine
        await pilot.app.push_screen(SessionsScreen(SESSIONS, current_id="s1", now=datetime(2026, 3, 1, 12, 0, tzinfo=UTC)))
        await pilot.pause()

    assert snap_compare(MainLayout(), terminal_size=SIZE, run_before=open_sessions)
