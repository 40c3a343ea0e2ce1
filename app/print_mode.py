"""`treechat -p PROMPT`: one prompt, the reply streamed to stdout, the exchange persisted.

Exit status: 0 on a complete reply, 1 when the provider failed (one line on stderr), 130 when
the user interrupted (the partial reply is stored as aborted). When the conversation no longer
fits, it is compacted and the prompt retried once; stderr says so in one line.
"""

from __future__ import annotations

import asyncio
import os
import signal as signals
import sys
from typing import Any, Iterable, TextIO

from treechat.agent.tools import make_tools, parse_tool_names
from treechat.llm.detect import LOCAL_SERVER_KINDS, with_server_facts
from treechat.llm.registry import ModelRegistry
from treechat.prompt_context import images_replaced_note, prepare_prompt
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.system_prompt import bind_system_prompt


async def run_print(
    prompt: Any,
    session: Any = None,
    *,
    model_ref: str | None = None,
    tools: str | Iterable[str] | None = None,
    yes: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    registry: ModelRegistry | None = None,
    settings: Any = None,
    stream_options: dict[str, Any] | None = None,
    cwd: str | None = None,
    compaction_settings: CompactionSettings | None = None,
    system: str | None = None,
    attach: Iterable[str] = (),
) -> int:
    """Run one prompt against `session` (a treechat.session.session.Session). `@path` tokens in
    the prompt and `attach` files (`-a`) go into the message; `system` (`--system`) adds to the
    system prompt."""
    if not isinstance(prompt, str):
        # the CLI passes (argparse args, catalog); open the session and come back here
        return await run_print_args(prompt, session)
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        if registry is None:
            if settings is None:
                from treechat.config import load_settings

                settings = load_settings()
            registry = ModelRegistry(settings)
        names = parse_tool_names(tools if tools is not None else getattr(settings, "tools", None))
        confirm = _always_yes if yes else None
        agent_tools = make_tools(names, cwd=cwd, confirm=confirm)
        model_ref = model_ref or getattr(settings, "model", None)
        request = prepare_prompt(prompt, settings=settings, tools=agent_tools, cwd=cwd, system=system,
                                 attach=list(attach))
        asession = await AgentSession.create(
            session, model=model_ref, registry=registry, tools=agent_tools,
            thinking_level=getattr(settings, "thinking", None), stream_options=stream_options,
            compaction_settings=compaction_settings or _compaction_from(settings),
        )
        bind_system_prompt(asession, request.builder)  # for the tools active on this path
        problem = registry.key_problem(asession.state.model)
        if problem:  # fail before any request: a missing key is not a network error
            raise ValueError(problem)
        if asession.state.model.provider in LOCAL_SERVER_KINDS:  # its real window, from the server
            asession.agent.state.model, _ = await with_server_facts(asession.state.model)
    except (ValueError, OSError) as error:
        err.write(f"treechat: {error}\n")
        return 2

    printer = _Printer(out)
    asession.subscribe(printer)
    asession.subscribe(_CompactionNotes(err))
    loop = asyncio.get_running_loop()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        asession.compactor.abort()  # a summary call in flight stops too
        asession.agent.abort()

    try:
        loop.add_signal_handler(signals.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        installed = False
    try:
        await asession.prompt(request.text, request.images)
    finally:
        if installed:
            loop.remove_signal_handler(signals.SIGINT)
    printer.finish()
    last = next((m for m in reversed(asession.state.messages) if getattr(m, "role", None) == "assistant"), None)
    if last is None:
        err.write("treechat: the model returned nothing.\n")
        return 1
    if last.stop_reason == "aborted" or interrupted:
        err.write("treechat: interrupted; the partial reply was saved.\n")
        return 130
    if last.stop_reason == "error":
        err.write(f"treechat: {last.error_message or 'the provider failed'}\n")
        return 1
    return 0


async def _always_yes(command: str) -> bool:
    return True


def _compaction_from(settings: Any) -> CompactionSettings | None:
    found = getattr(settings, "compaction", None)
    if found is None or isinstance(found, CompactionSettings):
        return found
    return CompactionSettings(enabled=found.enabled, reserve_tokens=found.reserve_tokens,
                              keep_recent_tokens=found.keep_recent_tokens)


class _CompactionNotes:
    """One stderr line per compaction, so a person knows the model saw a summary, not everything."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, event: Any, signal: Any) -> None:
        if event.type == "images_replaced":
            self.err.write(f"treechat: {images_replaced_note(event.model, event.count)}\n")
            self.err.flush()
            return
        if event.type != "compaction_end":
            return
        if event.result is not None:
            r = event.result
            self.err.write(f"treechat: compacted the conversation ({event.reason}): "
                           f"{r.tokens_before} → {r.tokens_after} tokens\n")
        elif event.error:
            self.err.write(f"treechat: {event.error}\n")
        self.err.flush()


class _Printer:
    """Writes assistant text as it streams; tool activity goes nowhere (stdout is the answer).

    If the reader goes away (`| head`), writing stops quietly; the reply is still stored."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.wrote = False
        self.at_line_start = True
        self.closed = False

    def __call__(self, event: Any, signal: Any) -> None:
        if event.type == "message_update":
            ev = event.assistant_event
            if ev is not None and ev.type == "text_delta" and ev.delta:
                self._write(ev.delta)
                self.wrote, self.at_line_start = True, ev.delta.endswith("\n")
        elif event.type == "message_end" and getattr(event.message, "role", None) == "assistant":
            self.finish()

    def finish(self) -> None:
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


async def run_print_args(args: Any, catalog: Any) -> int:
    """Adapter for the CLI: `args` has prompt, session, continue_latest, model, tools, yes, home."""
    from treechat.cli import latest_with_content
    from treechat.config import ConfigError, load_settings
    from treechat.session.session import Session
    from treechat.storage.base import StorageError

    try:
        settings = load_settings(getattr(args, "home", None))
        if getattr(args, "session", None):
            storage = await catalog.open(args.session)
        elif getattr(args, "continue_latest", False):
            storage = await latest_with_content(catalog) or await catalog.create(cwd=os.getcwd())
        else:
            storage = await catalog.create(cwd=os.getcwd())
            # Say where the exchange went, so it can be continued (stdout is only the answer).
            sys.stderr.write(f"treechat: new session {storage.session_id} (continue with -c or --session)\n")
    except (ConfigError, StorageError) as error:
        sys.stderr.write(f"treechat: {error}\n")
        return 2
    session = await Session.open(storage)
    return await run_print(args.prompt, session, model_ref=getattr(args, "model", None),
                           tools=getattr(args, "tools", None), yes=bool(getattr(args, "yes", False)),
                           settings=settings, system=getattr(args, "system", None),
                           attach=getattr(args, "attach", None) or ())
