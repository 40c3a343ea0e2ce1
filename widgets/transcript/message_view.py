"""How one settled transcript item looks: a ``MessageView`` per message, cards for summaries.

Settled text is one ``Static`` holding a Rich renderable (Markdown with highlighted code for assistants, plain text
otherwise): a Textual ``Markdown`` is ~14 widgets per reply, slow in long transcripts. Every
string from a model, tool or file passes through ``sanitize``; plain text goes in as ``Content``/``Text``, not markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from treechat.text.expanded import Expanded
from treechat.text.model_names import shown_model_id
from treechat.text.sanitize import sanitize, sanitize_line

from .attachment_chips import user_parts
from .diff_view import render_diff, result_change
from .items import ItemMessage, TranscriptItem
from .long_text import shown_text
from .markdown_body import MarkdownBody, is_dark, markdown
from .originals import OriginalLines

_EXPANDED_LINES = 400  # longer tool output is cut when expanded; the rest is summarised


def plain(text: str) -> Text:
    return Text(sanitize(text))


def _first_line(text: str, limit: int = 100) -> str:
    return sanitize_line(text.strip().split("\n", 1)[0], limit) if text.strip() else ""


class Foldable(Static):
    """A one-line summary that shows its full body when clicked (tool calls, results, thinking)."""

    def __init__(self, summary: str, body: str | RenderableType | None, *, expanded: bool = False,
                 classes: str = "") -> None:
        super().__init__(classes=classes)
        self.summary, self.body = summary, body
        self.expanded = expanded

    def on_mount(self) -> None:
        self._draw()

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self._draw()

    def _draw(self) -> None:
        head = ("▾ " if self.expanded else "▸ ") + self.summary
        if not self.expanded or self.body is None:
            self.update(Content(head))
        elif isinstance(self.body, str):
            self.update(Content.assemble((head, "bold"), "\n", self.body))
        else:  # a Rich renderable (Markdown summary)
            self.update(Group(Text(head, style="bold"), self.body))

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.set_expanded(not self.expanded)


class ToolLine(Foldable):
    """A tool call or tool output; Ctrl+O expands all of them."""


class DiffLine(ToolLine):
    """An edit or write that changed a file: `notes.txt +3 −1`, the coloured diff when expanded."""


class ExpansionLine(ToolLine):
    """A skill or prompt template a user message used: `skill pdf loaded`, its text when expanded
    (Enter on the message, a click, or Ctrl+O with the tools)."""


def expansion_line(used: Expanded, *, expanded: bool = False) -> ExpansionLine:
    name = sanitize_line(used.name, 40)
    summary = f"skill {name} loaded" if used.kind == "skill" else f"template {name}"
    lines = used.body.count("\n") + 1 if used.body.strip() else 0
    summary += f" ({lines} lines)" if lines > 1 else ""
    return ExpansionLine(summary, _cut(used.body), expanded=expanded, classes="tool expansion")


class ThinkingBlock(Foldable):
    """Model reasoning; hidden behind one line unless expanded (Ctrl+T toggles all)."""


def _cut(text: str) -> str:
    lines = sanitize(text).split("\n")
    if len(lines) <= _EXPANDED_LINES:
        return "\n".join(lines)
    return "\n".join(lines[:_EXPANDED_LINES]) + f"\n… {len(lines) - _EXPANDED_LINES} more lines"


class MessageHeader(Static):
    """``role · model  [label]  ‹ n/m ›``; clicking ‹ or › asks for the sibling."""

    @dataclass
    class Clicked(Message):
        """‹ or › was clicked."""

        header: MessageHeader
        """The header clicked."""

        delta: int
        """-1: the previous sibling, 1: the next."""

    def __init__(self, role: str, detail: str = "", label: str | None = None) -> None:
        super().__init__(classes="message-header")
        self.role, self.detail, self.label = role, detail, label
        self.sibling_position: tuple[int, int] | None = None
        self._arrows: tuple[int, int] = (-1, -1)

    def on_mount(self) -> None:
        self.draw()

    def draw(self) -> None:
        parts: list[tuple[str, str] | str] = [(self.role, "bold")]
        if self.detail:
            parts.append((f" · {sanitize_line(self.detail, 60)}", "dim"))
        if self.label:
            parts.append((f"  [{sanitize_line(self.label, 40)}]", "italic"))
        text = Content.assemble(*parts)
        if self.sibling_position and self.sibling_position[1] > 1:
            left = len(text.plain) + 2
            switcher = f"‹ {self.sibling_position[0]}/{self.sibling_position[1]} ›"
            self._arrows = (left, left + len(switcher) - 1)
            text = Content.assemble(text, "  ", (switcher, "bold reverse"))
        else:
            self._arrows = (-1, -1)
        self.update(text)

    def on_click(self, event: events.Click) -> None:
        left, right = self._arrows
        if left < 0:
            return
        if abs(event.x - left) <= 1:
            self.post_message(self.Clicked(self, -1))
        elif abs(event.x - right) <= 1:
            self.post_message(self.Clicked(self, 1))


class MessageView(Vertical):
    """One transcript item. ``entry_id`` ties it to the tree; the App never builds these."""

    DEFAULT_CSS = """
    MessageView { height: auto; padding: 0 1; margin-bottom: 1; }
    MessageView > .message-header { color: $text-muted; }
    MessageView.-role-user > .message-header { color: $primary; }
    MessageView.-outside { opacity: 60%; }
    MessageView.-highlight { background: $accent 15%; border-left: thick $accent; }
    MessageView.-selected { background: $primary 12%; outline-left: thick $primary; }
    MessageView.-error { border-left: thick $error; }
    MessageView.-aborted { border-left: thick $warning; }
    MessageView .error-line { color: $error; text-style: bold; }
    MessageView .aborted-line { color: $warning; }
    MessageView .thinking { color: $text-muted; text-style: italic; }
    MessageView .attachments { color: $text-muted; }
    MessageView .tool { color: $text-muted; }
    MessageView .tool.-error { color: $error; }
    """

    def __init__(self, item: TranscriptItem, *, tools_expanded: bool = False, thinking_expanded: bool = False) -> None:
        self.item = item
        role = getattr(item.message, "role", None) or getattr(item.message, "type", "message")
        classes = f"message -role-{role}"
        if item.outside_context:
            classes += " -outside"
        stop = getattr(item.message, "stop_reason", None)
        if stop in ("error", "aborted"):
            classes += f" -{stop}"
        super().__init__(classes=classes)
        self.tools_expanded, self.thinking_expanded = tools_expanded, thinking_expanded
        self.header: MessageHeader | None = None

    @property
    def entry_id(self) -> str:
        return self.item.entry_id

    def compose(self) -> ComposeResult:
        item, msg = self.item, self.item.message
        if isinstance(msg, (CompactionEntry, CompactionSummaryMessage)):
            yield CompactionCard(item, msg)
            return
        if isinstance(msg, (BranchSummaryEntry, BranchSummaryMessage)):
            yield Foldable("↪ branch summary · " + _first_line(msg.summary), markdown(msg.summary, dark=is_dark(self)),
                           classes="card branch-summary")
            return
        self.header = MessageHeader(*self._role_and_detail(msg), label=item.label)
        yield self.header
        if isinstance(msg, UserMessage):
            yield from user_parts(msg, lambda used: expansion_line(used, expanded=self.tools_expanded))
        elif isinstance(msg, AssistantMessage):
            yield from self._assistant_parts(msg)
        elif isinstance(msg, ToolResultMessage) and (change := result_change(msg.tool_name, msg.details, msg.is_error)):
            body = render_diff(change[1], max_lines=_EXPANDED_LINES)
            yield DiffLine(f"✓ {msg.tool_name} {change[0]}", body, expanded=self.tools_expanded, classes="tool diff")
        elif isinstance(msg, ToolResultMessage):
            text = message_text(msg)
            mark = "✖" if msg.is_error else "✓"
            summary = f"{mark} {sanitize_line(msg.tool_name, 40)} → {_first_line(text, 80)}"
            if item.subagent is not None:  # what a sub-agent did: its session holds the whole of it
                summary = (f"{mark} sub-agent '{sanitize_line(item.subagent, 60)}' (Enter or o opens its session)"
                           f" → {_first_line(text, 80)}")
            lines = text.count("\n") + 1 if text else 0
            summary += f" ({lines} lines)" if lines > 1 else ""
            yield ToolLine(summary, _cut(text), expanded=self.tools_expanded, classes="tool -error" if msg.is_error else "tool")
        elif isinstance(msg, BashExecutionMessage):
            status = "cancelled" if msg.cancelled else f"exit {msg.exit_code}" if msg.exit_code is not None else ""
            yield ToolLine(f"$ {sanitize_line(msg.command, 80)}  {status}", _cut(msg.output), expanded=self.tools_expanded, classes="tool")
        elif isinstance(msg, CustomMessage):
            yield Static(plain(message_text(msg) or json.dumps(msg.details, default=str)[:500]), classes="body")
        else:
            yield Static(plain(message_text(msg)), classes="body")

    @staticmethod
    def _role_and_detail(msg: ItemMessage) -> tuple[str, str]:
        if isinstance(msg, UserMessage):
            return "you", ""
        if isinstance(msg, AssistantMessage):
            return "assistant", shown_model_id(msg.model)
        if isinstance(msg, ToolResultMessage):
            return "tool", msg.tool_name
        if isinstance(msg, BashExecutionMessage):
            return "bash", ""
        if isinstance(msg, CustomMessage):
            return msg.custom_type, ""
        return str(getattr(msg, "role", "message")), ""

    def _assistant_parts(self, msg: AssistantMessage) -> Iterator[Widget]:
        text_run: list[str] = []

        def flush() -> Iterator[Widget]:
            if text_run:
                text, cut = shown_text("\n\n".join(text_run))
                yield MarkdownBody(text, dark=is_dark(self))
                if cut:
                    yield Static(plain(cut), classes="cut-note")
                text_run.clear()

        for block in msg.content:
            if isinstance(block, TextContent):
                text_run.append(block.text)
                continue
            yield from flush()
            if isinstance(block, ThinkingContent):
                if not block.thinking.strip():
                    continue  # (a block kept only for its signature: the Responses API's encrypted reasoning)
                yield ThinkingBlock(
                    f"thinking ({len(block.thinking)} chars)", _cut(block.thinking),
                    expanded=self.thinking_expanded, classes="thinking",
                )
            elif isinstance(block, ToolCall):
                yield ToolLine(tool_call_summary(block), _cut(json.dumps(block.arguments, indent=2, default=str)),
                               expanded=self.tools_expanded, classes="tool")
        yield from flush()
        if msg.stop_reason == "error":
            yield Static(plain(f"✖ error: {msg.error_message or 'the request failed'}"), classes="error-line")
        elif msg.stop_reason == "aborted":
            yield Static(plain("⏸ stopped by you" + (f" — {msg.error_message}" if msg.error_message else "")), classes="aborted-line")

    def set_siblings(self, index: int, count: int) -> None:
        if self.header is not None:
            self.header.sibling_position = (index, count)
            self.header.draw()

    def set_label(self, label: str | None) -> None:
        self.item.label = label
        if self.header is not None:
            self.header.label = label
            self.header.draw()

    def set_tools_expanded(self, expanded: bool) -> None:
        self.tools_expanded = expanded
        for line in self.query(ToolLine):
            line.set_expanded(expanded)

    @property
    def has_fold(self) -> bool:
        """An edit's diff or a skill's text, which Enter on the selected message opens."""
        return bool(self.query(DiffLine)) or bool(self.query(ExpansionLine))

    def toggle_folds(self) -> None:  # Enter on a selected edit or skill: show or hide its diff or text
        for line in [*self.query(DiffLine), *self.query(ExpansionLine)]:
            line.set_expanded(not line.expanded)

    def set_thinking_expanded(self, expanded: bool) -> None:
        self.thinking_expanded = expanded
        for block in self.query(ThinkingBlock):
            block.set_expanded(expanded)


def tool_call_summary(call: ToolCall) -> str:
    args = call.arguments or {}
    if call.name in ("edit", "write") and isinstance(args.get("path"), str):
        return f"⚙ {call.name} {sanitize_line(args['path'], 100)}"  # its diff is in the result below
    first = next(iter(args.values()), "") if len(args) == 1 else json.dumps(args, default=str)
    return f"⚙ {sanitize_line(call.name, 40)} {sanitize_line(first, 100)}"


class CompactionCard(Vertical):
    DEFAULT_CSS = """
    CompactionCard { height: auto; border: round $warning 50%; padding: 0 1; }
    CompactionCard > .card-head { color: $warning; }
    CompactionCard > .card-body, CompactionCard > .originals { display: none; height: auto; }
    CompactionCard.-expanded > .card-body, CompactionCard.-expanded > .originals { display: block; }
    CompactionCard .outside-note { color: $text-muted; text-style: italic; }
    """

    """``⟪ compacted · trigger · before → after tokens ⟫``; click shows the summary and asks the
    App (``Transcript.ExpandCompaction``) for the originals, which arrive via ``show_originals``."""

    @dataclass
    class Expanded(Message):
        """The card was opened: its originals are wanted."""

        entry_id: str
        """The compaction entry."""

    def __init__(self, item: TranscriptItem, summary: CompactionEntry | CompactionSummaryMessage) -> None:
        super().__init__(classes="card compaction")
        self.item, self.summary = item, summary  # (the item's message)
        self.expanded = False
        self.originals: list[TranscriptItem] = []
        self.opened: set[int] = set()  # originals shown in full
        self.selected_original: int | None = None

    def compose(self) -> ComposeResult:
        msg = self.summary
        before = msg.tokens_before
        after = msg.tokens_after if isinstance(msg, CompactionEntry) else self.item.tokens_after
        trigger = (msg.trigger if isinstance(msg, CompactionEntry) else None) or self.item.trigger
        parts = ["compacted"]
        if trigger:
            parts.append(sanitize_line(trigger, 20))
        parts.append(f"{before:,} → {after:,} tokens" if after is not None else f"{before:,} tokens before")
        self._head = f"⟪ {' · '.join(parts)} ⟫"
        yield Static(Content(f"{self._head}  ▸ summary"), classes="card-head")
        yield Static(markdown(msg.summary, dark=is_dark(self)), classes="card-body")
        yield Vertical(classes="originals")

    def on_click(self, event: events.Click) -> None:
        box = self.query_one(".originals", Vertical)
        if event.widget is not None and (event.widget is box or box in event.widget.ancestors):
            return  # a click among the originals is theirs (a row opens, a message is selected)
        event.stop()
        self.toggle()

    def toggle(self) -> None:
        """Show or hide the summary and the originals (the App is asked for them on opening)."""
        self.expanded = not self.expanded
        self.set_class(self.expanded, "-expanded")
        self.query_one(".card-head", Static).update(Content(f"{self._head}  {'▾' if self.expanded else '▸'} summary"))
        if self.expanded:
            self.post_message(self.Expanded(self.item.entry_id))

    # ------------------------------------------------------------ the originals

    async def show_originals(self, items: list[TranscriptItem], make_view: Callable[[TranscriptItem], MessageView]) -> None:
        """The messages this compaction replaced: a row each; ``make_view`` draws an opened one."""
        self.originals, self.opened, self.selected_original = items, set(), None
        await self._build(make_view)

    async def open_original(self, index: int, make_view: Callable[[TranscriptItem], MessageView]) -> None:
        """Open original ``index`` in full below its row, or close it again."""
        if not 0 <= index < len(self.originals):
            return
        self.opened ^= {index}
        await self._build(make_view)

    async def _build(self, make_view: Callable[[TranscriptItem], MessageView]) -> None:
        box = self.query_one(".originals", Vertical)
        widgets: list[Widget] = []
        if self.originals:
            widgets.append(Static(Content("not in model context — replaced by the summary above"), classes="outside-note"))
        first, total = 0, len(self.originals)
        for index in sorted(self.opened):  # the rows up to an opened one (its own row included), then it
            widgets.append(OriginalLines(self.originals, first, index + 1 - first, self.opened))
            widgets.append(make_view(self.originals[index]))
            first = index + 1
        if first < total:
            widgets.append(OriginalLines(self.originals, first, total - first, self.opened))
        with self.app.batch_update():
            await box.remove_children()
            if widgets:
                await box.mount_all(widgets)
        self.select_original(self.selected_original)

    def select_original(self, index: int | None) -> OriginalLines | None:
        """Mark original ``index`` (None: none); returns the run that shows its row."""
        self.selected_original = index
        shown = None
        for lines in self.query(OriginalLines):
            lines.select(index)
            if index is not None and lines.holds(index):
                shown = lines
        return shown
