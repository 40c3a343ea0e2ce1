"""`treechat -p PROMPT --model A --model B …`: one prompt to several models at once (issue 39).

A run per model starts on a sibling branch from the session's leaf (the controller's
`Chat.compare`: the leaf stays there; `treechat` shows the branches, and moving to one picks it).
stdout has each reply whole under a header naming its model, in the order the models were given,
each printed as soon as it and those before it are done (replies never interleave); stderr says
which failed and why. Exit status: 0 when every model answered, 1 when any failed, 2 when nothing
was sent (two models or more, each known and with a key, and room under `max_runs`: checked before
anything is written), 130 when interrupted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from treechat.chat import Chat, ChatError
from treechat.chat.compare import ComparedReply
from treechat.chat.events import ChatEvent, Failed, ReplyStreaming, Waiting
from treechat.cli.interrupt import stop_on_ctrl_c
from treechat.cli.print_mode import Notes, Printer


async def run_compare(chat: Chat, prompt: str, models: Sequence[str], *, out: TextIO, err: TextIO,
                      attach: Sequence[str] = (), raw: bool = False) -> int:
    notes = Notes(err)
    listen = _Collect(notes)
    unsubscribe = chat.subscribe(listen)
    interrupted = False
    try:
        with stop_on_ctrl_c(chat.abort) as seen:
            try:
                comparison = await chat.compare(prompt, models, attach=attach, expand=True, wait_mcp=True)
            except ChatError as error:  # nothing was sent and nothing written
                notes.line(str(error))
                return 2
            labels = headers([c.model for c in comparison.runs])
            replies: list[ComparedReply] = []
            for label, compared in zip(labels, comparison.runs, strict=True):
                reply = await compared.reply
                replies.append(reply)
                _print_one(out, label, listen.texts.get(reply.run, []), reply, first=len(replies) == 1, raw=raw)
                if reply.error is not None:
                    notes.line(f"{label}: {reply.error}")
        interrupted = seen.happened
    finally:
        unsubscribe()
    for failure in listen.failures:
        notes.line(failure)
    if interrupted:
        notes.line("interrupted; the partial replies were saved.")
        return 130
    failed = [label for label, r in zip(labels, replies, strict=True) if r.error is not None]
    if failed:
        notes.line(f"{len(failed)} of {len(replies)} models failed: {', '.join(failed)}")
        return 1
    return 1 if listen.failures else 0


def headers(models: Sequence[str]) -> list[str]:
    """Each model's header; the same model asked twice is numbered (two attempts)."""
    seen: dict[str, int] = {}
    out = []
    for model in models:
        seen[model] = seen.get(model, 0) + 1
        repeated = models.count(model) > 1
        out.append(f"{model} #{seen[model]}" if repeated else model)
    return out


def _print_one(out: TextIO, label: str, pieces: Sequence[str], reply: ComparedReply, *, first: bool,
               raw: bool) -> None:
    printer = Printer(out, raw=raw)
    printer.write(("" if first else "\n") + f"## {label}\n\n")
    for piece in pieces:
        printer.write(piece)
    if reply.error is not None and not any(p.strip() for p in pieces):
        printer.write("(no reply: see stderr)")
    printer.finish()


class _Collect:
    """Each run's answer text as it streams (printed whole when its turn comes), and failures."""

    def __init__(self, notes: Notes) -> None:
        self.notes = notes
        self.texts: dict[str, list[str]] = {}
        self.failures: list[str] = []

    def __call__(self, event: ChatEvent) -> None:
        if isinstance(event, ReplyStreaming) and event.run is not None:
            pieces = self.texts.setdefault(event.run, [])
            if event.started and pieces and not pieces[-1].endswith("\n"):
                pieces.append("\n")  # a reply after a tool call starts on its own line
            elif event.delta:
                pieces.append(event.delta)
        elif isinstance(event, Failed):
            self.failures.append(event.text)
        elif isinstance(event, Waiting):
            return  # several runs wait at once: a countdown per run would garble stderr
        else:
            self.notes(event)
