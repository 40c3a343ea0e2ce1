"""`treechat -p PROMPT`: one prompt, the reply streamed to stdout, the exchange persisted.

Exit status: 0 on a complete reply, 1 when the provider failed (one line on stderr), 2 when
nothing could be sent (no model, no key: nothing is written), 130 when the user interrupted (the
partial reply is stored as aborted). When the conversation no longer fits, it is compacted and
the prompt retried once; stderr says so in one line. The rules are the controller's (`Chat`),
the same as the app's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TextIO

from treechat.agent.tools.bash import NO_CONFIRM
from treechat.agent.tools.changes import NO_APPROVAL
from treechat.chat import Chat, ChatError
from treechat.chat.events import (
    ChatDelta,
    ChatEvent,
    CompactionEnded,
    EntryAppended,
    Failed,
    Notice,
    ReplyStreaming,
    Waiting,
)
from treechat.cli.interrupt import stop_on_ctrl_c
from treechat.cli.wait_notes import WaitNotes
from treechat.storage.model import AssistantMessage, MessageEntry, ToolResultMessage, message_text
from treechat.storage.well_formed import well_formed_text
from treechat.text.sanitize import visible, visible_line


async def run_print(chat: Chat, prompt: str, *, out: TextIO, err: TextIO, attach: Sequence[str] = (),
                    raw: bool = False) -> int:
    """Send `prompt` (and the `attach` files, `-a`) in the chat's open session and stream the
    answer to `out`. The answer's control characters are shown as placeholders unless `raw`
    (`--raw`); stderr lines always are."""
    printer = Printer(out, raw=raw)
    notes = Notes(err)
    waits = WaitNotes(err)
    listen = _Listen(printer, notes, waits)
    unsubscribe = chat.subscribe(listen)
    try:
        with stop_on_ctrl_c(chat.abort) as interrupted:
            last = await chat.prompt(prompt, attach=attach)
    except ChatError as error:  # nothing was sent and nothing written
        notes.line(str(error))
        return 2
    finally:
        unsubscribe()
        waits.close()
    printer.finish()
    return _exit_code(last, listen, notes, interrupted=interrupted.happened)


class _Listen:
    """What the run tells, as it happens: the answer to stdout, the rest a line on stderr;
    the failures and whether an overflow's failed recovery said why, kept for the exit code."""

    def __init__(self, printer: Printer, notes: Notes, waits: WaitNotes) -> None:
        self.printer, self.notes, self.waits = printer, notes, waits
        self.failures: list[str] = []
        self.overflow_explained = False  # the failed overflow recovery said why: the raw error adds nothing
        self.refusal_told = False  # a command or an edit refused for want of --yes: said once

    def __call__(self, event: ChatEvent) -> None:
        printer = self.printer
        if isinstance(event, CompactionEnded) and event.reason == "overflow" and event.error:
            self.overflow_explained = True
        if isinstance(event, Failed):
            self.failures.append(event.text)  # e.g. the reply could not be saved: where it was kept
            return
        if isinstance(event, Waiting) and event.detail is not None:
            self.waits(event.detail)  # a countdown on a terminal, one line otherwise
            return
        if isinstance(event, ChatDelta):
            if event.running is False:
                self.waits.end("")
            for appended in event.appended:
                refused = refused_tool(appended)
                if refused is not None:
                    if not self.refusal_told:
                        self.refusal_told = True
                        printer.finish()
                        self.notes.line(refusal_line(refused))
                    continue
                changed = file_change_line(appended)
                if changed:
                    printer.finish()
                    self.notes.line(changed)
            return
        if isinstance(event, ReplyStreaming):
            self.waits.end(event.delta)
            if event.started:
                printer.finish()  # a reply after a tool call starts on its own line
            elif event.delta:
                printer.write(event.delta)
        else:
            self.notes(event)


def _exit_code(last: AssistantMessage | None, listen: _Listen, notes: Notes, *, interrupted: bool) -> int:
    """0 for an answer, 1 for a failure (said on stderr), 130 for an interrupted one."""
    if listen.failures:
        notes.line(listen.failures[-1])
        return 1
    if last is None:
        notes.line("the model returned nothing.")
        return 1
    if last.stop_reason == "aborted" or interrupted:
        notes.line("interrupted; the partial reply was saved.")
        return 130
    if last.stop_reason == "error":
        if not listen.overflow_explained:  # ("…too long; compact it" after compacting failed would contradict it)
            notes.line(last.error_message or "the provider failed")
        return 1
    if not message_text(last).strip():  # (a small local model may stop at once: nothing on stdout, say why)
        notes.line("the model's reply was empty.")
    return 0


_UNAPPROVED = NO_APPROVAL.partition("{what}")[2]  # what follows the change's name


def refused_tool(event: EntryAppended) -> str | None:
    """The tool (bash, edit, write) whose call was refused because `-p` cannot ask and `--yes`
    was not given (the model is told so in the result); None for anything else."""
    entry = event.entry
    if not isinstance(entry, MessageEntry) or not isinstance(entry.message, ToolResultMessage):
        return None
    msg = entry.message
    if not msg.is_error:
        return None
    text = message_text(msg)
    if msg.tool_name == "bash" and text == NO_CONFIRM:
        return "bash"
    if msg.tool_name in ("edit", "write") and text.startswith("Not changed: ") and text.endswith(_UNAPPROVED):
        return msg.tool_name
    return None


def refusal_line(tool: str) -> str:
    """Said once a run: the tools are on (config.toml's default), -p asks nothing, so a command
    or an edit needs --yes; or the tools go off."""
    what = "shell command" if tool == "bash" else "edit" if tool == "edit" else "file write"
    return (f"refused the model's {what}: -p asks no questions; --yes allows commands and edits in the working "
            "folder, --tools '' (or tools = [] in config.toml) turns the tools off")


def file_change_line(event: EntryAppended) -> str | None:
    """One stderr line for each file edit or write changed (or did not): stdout is the answer,
    but a person running `-p --yes` must see what was done to their files."""
    entry = event.entry
    if not isinstance(entry, MessageEntry) or not isinstance(entry.message, ToolResultMessage):
        return None
    msg = entry.message
    if msg.tool_name not in ("edit", "write"):
        return None
    details = msg.details if isinstance(msg.details, dict) else {}
    if msg.is_error:
        return f"{msg.tool_name}: {message_text(msg).strip().splitlines()[0] if message_text(msg).strip() else 'failed'}"
    path = details.get("path") or "?"
    verb = "created" if details.get("created") else "edited" if msg.tool_name == "edit" else "wrote"
    return f"{verb} {path} (+{details.get('added', 0)} \u2212{details.get('removed', 0)})"


class Notes:
    """One stderr line per compaction or visible wait, so a person knows what happened."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, event: ChatEvent) -> None:
        if isinstance(event, CompactionEnded):
            if event.error:
                self.line(event.error)
            else:
                self.line(f"compacted the conversation ({event.reason}): "
                          f"{event.tokens_before} → {event.tokens_after} tokens")
        elif isinstance(event, Notice) and event.severity == "warning":
            self.line(event.text)  # e.g. images sent as a note to a text-only model

    def line(self, text: str) -> None:
        # provider errors and notices carry server and model text: one line, controls made visible
        self.err.write(f"treechat: {visible_line(text)}\n")
        self.err.flush()


class Printer:
    """Writes the answer as it streams; tool activity goes nowhere (stdout is the answer).

    If the reader goes away (`| head`), writing stops quietly; the reply is still stored. Unless
    `raw`, the model's control characters are written as visible placeholders (an OSC 52 clipboard
    write or a clear-screen in a reply must not reach the terminal)."""

    def __init__(self, out: TextIO, *, raw: bool = False) -> None:
        self.out = out
        self.raw = raw
        self.wrote = False
        self.at_line_start = True
        self.closed = False
        # A delta that ends in "\r" or in the first half of a surrogate pair is held back: the next
        # delta says whether it was "\r\n" (one line break) or a whole character.
        self.held = ""

    def write(self, text: str) -> None:
        text = self._exact(text) if self.raw else self._visible(text)
        if not text:
            return
        self._write(text)
        self.wrote, self.at_line_start = True, text.endswith("\n")

    def _visible(self, text: str) -> str:
        text, self.held = self.held + text, ""
        if text and (text[-1] == "\r" or "\ud800" <= text[-1] <= "\udbff"):
            text, self.held = text[:-1], text[-1]
        return visible(text)

    def _exact(self, text: str) -> str:
        """--raw: the text as it came, except that UTF-8 cannot carry UTF-16 halves: a pair split
        over two deltas is written as its character, half a pair as U+FFFD (as it is stored)."""
        text, self.held = self.held + text, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self.held = text[:-1], text[-1]
        return well_formed_text(text)

    def finish(self) -> None:
        if self.held:
            held, self.held = (well_formed_text if self.raw else visible)(self.held), ""
            self._write(held)  # a lone "\r" shows as a line break
            self.wrote, self.at_line_start = True, held.endswith("\n")
        if self.wrote and not self.at_line_start:
            self._write("\n")
            self.at_line_start = True

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            try:  # keep the interpreter's final flush of stdout from failing too
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())
            except (OSError, ValueError, AttributeError):
                pass
