"""`treechat` command line: the app, `-p` and every subcommand. Every expected failure is one line on stderr and exit 1."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TextIO, cast

# Start-up in proportion: each subcommand imports what it needs inside its own function, so
# `--version` loads no pydantic, and `sessions`, `search`, `context`, `tree`, `import` no httpx,
# Textual or agent (tests/cli/test_cli_imports.py checks the lists).
from ..progress import reading_progress

if TYPE_CHECKING:
    import argparse

    from treechat.chat import Chat
    from treechat.storage.base import SearchHit, SessionCatalog, SessionStorage
    from treechat.storage.json_types import Json


def visible_line(text: object, limit: int | None = None) -> str:
    from treechat.text.sanitize import visible_line as line

    return line(text, limit)


def json_for_terminal(text: str) -> str:
    from treechat.text.sanitize import json_for_terminal as escape

    return escape(text)


class CliError(Exception):
    """An expected failure; its message is the one line the user sees."""


# The names of treechat.llm.apis (a test keeps them equal), written out: the app builds this parser
# before its first frame, which loads nothing of treechat.llm.
APIS_HELP = ("Providers speak one of these APIs: openai (OpenAI Chat Completions), anthropic (Anthropic Messages), "
             "openai-responses (OpenAI Responses); a provider's api in config.toml says which, and the built-in "
             "openai provider uses openai-responses for OpenAI's codex models. `treechat doctor` shows the API of "
             "each provider and of the chosen model.")


def build_parser() -> argparse.ArgumentParser:
    from .parser import build_parser as build

    parser = build()
    parser.epilog = f"{parser.epilog} {APIS_HELP}" if parser.epilog else APIS_HELP
    return parser


@asynccontextmanager
async def catalog_for(args: argparse.Namespace, kind: str | None = None) -> AsyncIterator[SessionCatalog]:
    """The store a command works on: `kind`, else --storage, else config.toml's `storage`."""
    from ..bootstrap import apply_lock_timeout, open_store, storage_kind, storage_settings
    from ..config.paths import resolve_home

    chosen = kind or args.storage
    # config.toml is read only when it can matter (a store it may choose, a server URL in it)
    settings = storage_settings(args.home) if chosen in (None, "postgres") else None
    kind = storage_kind(chosen, ephemeral=getattr(args, "ephemeral", False) and kind is None, settings=settings)
    apply_lock_timeout(args.home, settings)
    catalog = await open_store(kind, resolve_home(args.home), settings=settings)
    try:
        yield catalog
    finally:
        await catalog.close()


class _TerminalSafe(io.TextIOBase):
    """stdout for streamed JSON: C1 controls and bidi overrides written as \\uXXXX escapes (the
    same JSON value), as `emit` does for whole documents; `--raw` skips it."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(json_for_terminal(text))

    def flush(self) -> None:
        self.out.flush()


def emit(data: Json) -> None:
    import json

    # JSON already escapes C0 controls; C1 controls and bidi overrides are escaped too (same value)
    sys.stdout.write(json_for_terminal(json.dumps(data, ensure_ascii=False, indent=2)) + "\n")


def shown(args: argparse.Namespace, text: str, limit: int | None = None) -> str:
    """A field of a listing line from stored text (a session name, a snippet): one line with its
    control characters shown as placeholders, or, with --raw, the text as it is."""
    if getattr(args, "raw", False):
        return text if limit is None else text[:limit]
    return visible_line(text, limit)


# ---------------------------------------------------------------- commands


async def cmd_sessions(args: argparse.Namespace) -> int:
    async with catalog_for(args) as catalog:
        # a session nobody wrote to (an app opened and closed, a killed start) is not listed
        with reading_progress(catalog, "Reading sessions"):
            rows = [r for r in await catalog.list() if r.entry_count > 0]
        _warn_unreadable(catalog)
    if args.json:
        emit([r.to_json() for r in rows])
        return 0
    if not rows:
        print("No sessions yet. Start one with `treechat`, or import Pi files with `treechat import`.")
    from treechat.storage.base import threaded

    for r, depth in threaded(rows):  # a fork or a sub-agent's session under the session it came from
        title = r.name or r.first_message or "(empty)"
        under = "  " * (depth - 1) + "⑂ " if depth else ""
        print(f"{shown(args, r.id[:13])}  {r.modified_at[:16].replace('T', ' ')}  {r.message_count:>5} msgs  ${r.cost_total:,.4f}  {under}{shown(args, title, 60)}")
    return 0


async def cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .storage import from_pi_folder, run_import

    paths = [Path(p).expanduser() for p in args.files]  # noqa: ASYNC240  $HOME, no I/O
    if args.from_pi:
        paths.append(from_pi_folder())
    if not paths:
        raise CliError("give session files or folders to import, or --from-pi for Pi's sessions folder")
    async with catalog_for(args) as catalog:
        return await run_import(catalog, paths, force=args.force, stdout=sys.stdout)


async def cmd_copy(args: argparse.Namespace) -> int:
    from .copy import run_copy

    if args.source == args.target:
        raise CliError(f"--from and --to are both {args.source}: name two different stores")
    if "memory" in (args.source, args.target):
        raise CliError("the memory store keeps nothing between runs: copy between sqlite, jsonl and postgres")
    async with catalog_for(args, args.source) as source, catalog_for(args, args.target) as target:
        return await run_copy(source, target, args.sessions, force=args.force, names=(args.source, args.target),
                              stdout=sys.stdout)


async def open_session(catalog: SessionCatalog, ref: str) -> SessionStorage:
    """A session for a command, with a warning line for what its file had to set aside."""
    from ..load_warning import load_warning

    storage = await catalog.open(ref)
    warning = load_warning(storage)
    if warning:
        print(f"treechat: warning: {visible_line(warning)}", file=sys.stderr)
    return storage


def _warn_unreadable(catalog: SessionCatalog) -> None:
    """One line for session files a listing had to pass over (JSONL: a damaged file)."""
    problems = getattr(catalog, "problems", None)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        print(f"treechat: warning: skipped an unreadable session file: {visible_line(problems[0])}{more}",
              file=sys.stderr)


async def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..export.markdown import render_markdown
    from ..export.target import write_text_file
    from ..session.session import Session

    async with catalog_for(args) as catalog:
        storage = await open_session(catalog, args.session)
        session = await Session.open(storage)
        if args.format == "html":
            from ..export.html import export_html
            from ..progress import progress

            # every branch, one file; stdout gets the UTF-8 bytes whatever its encoding
            total = (await storage.get_session_stats()).entry_count
            sys.stdout.flush()
            with progress("Exporting", total=total, unit="entries") as bar:
                await export_html(storage, args.output or sys.stdout.buffer, progress=bar)
            sys.stdout.flush()
            return 0
        if args.format == "md":
            ctx = await session.build_session_context()
            title = await session.get_session_name() or f"treechat session {storage.session_id}"
            text = render_markdown(title, ctx.messages, raw=args.raw)
            if args.output:
                await write_text_file(Path(args.output), text)
            else:
                sys.stdout.write(text)
            return 0
        from .storage import stream_export

        await stream_export(storage, args.output, sys.stdout if args.raw or args.output else cast(TextIO, _TerminalSafe(sys.stdout)),
                            raw=args.raw)
    return 0


async def cmd_context(args: argparse.Namespace) -> int:
    import asyncio

    from ..config.settings import ConfigError
    from ..session.instructions import stored_instructions_at
    from ..session.session import Session
    from .context import context_json, context_system_prompt

    async with catalog_for(args) as catalog:
        storage = await open_session(catalog, args.session)
        session = await Session.open(storage)
        if args.leaf is None:
            ctx = await session.build_session_context()
        else:
            ctx = await session.build_session_context(None if args.leaf == "null" else args.leaf)
        cwd = (await storage.get_metadata()).cwd
        leaf = session.leaf_id if args.leaf is None else (None if args.leaf == "null" else args.leaf)
        stored = await stored_instructions_at(storage, leaf)
    here: bool = await asyncio.to_thread(os.path.isdir, cwd) if cwd else False
    folder = cwd if cwd and here else os.getcwd()
    given = getattr(args, "system", None)  # --system wins over what /system stored, as in the app
    instructions = given if given is not None else stored if isinstance(stored, str) else None
    try:
        prompt = context_system_prompt(args.home, args.tools, ctx.active_tool_names, folder, instructions)
    except (ConfigError, ValueError) as err:
        raise CliError(str(err)) from None
    text = context_json(ctx, prompt)
    sys.stdout.write(text if args.raw else json_for_terminal(text))
    return 0


async def cmd_tree(args: argparse.Namespace) -> int:
    from .storage import stream_tree

    async with catalog_for(args) as catalog:
        await stream_tree(await open_session(catalog, args.session), sys.stdout if args.raw else cast(TextIO, _TerminalSafe(sys.stdout)))
    return 0


async def cmd_search(args: argparse.Namespace) -> int:
    from treechat.storage.base import MAX_QUERY_CHARS

    if len(args.query) > MAX_QUERY_CHARS:
        args.query = args.query[:MAX_QUERY_CHARS]
        print(f"treechat: only the first {MAX_QUERY_CHARS:,} characters of the query are searched", file=sys.stderr)
    async with catalog_for(args) as catalog:
        # SessionCatalog's method named `list` shadows the builtin in its annotations; say what it is
        with reading_progress(catalog, "Searching"):
            hits = cast("Sequence[SearchHit]", await catalog.search(args.query, limit=args.limit))
        _warn_unreadable(catalog)
    from treechat.storage.base import hit_labels, searched_only

    from .snippets import snippet_line

    if (searched := searched_only(hits)) is not None:
        print(f"treechat: a query of words under 3 characters looks at the newest {searched:,} entries only; "
              "add a word of 3 or more characters to search everything", file=sys.stderr)
    if args.json:
        emit([{"sessionId": h.session_id, "entryId": h.entry_id, "type": h.type, "role": h.role,
               "snippet": h.snippet, "rank": h.rank, "sessionName": h.session_name, "sessionTitle": h.session_title,
               "timestamp": h.timestamp}
              for h in hits])
        return 0
    if not hits:
        print(f"No matches for {shown(args, repr(args.query), 80)}.")
    for h, where in zip(hits, hit_labels(hits)):  # the session's name or first message; its id where two share one
        snippet = snippet_line(h.snippet, 100, raw=getattr(args, "raw", False))
        print(f"{shown(args, where)}  {shown(args, h.entry_id)}  {shown(args, h.role or h.type)}: {snippet}")
    return 0


async def cmd_reindex(args: argparse.Namespace) -> int:
    from .storage import run_reindex

    async with catalog_for(args) as catalog:
        print(await run_reindex(catalog))
    return 0


async def cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor.checks import run_doctor

    return await run_doctor(args.home, model=args.model, as_json=args.json)


async def cmd_print(args: argparse.Namespace) -> int:
    from ..agent.tools import approve_inside, parse_tool_names
    from ..bootstrap import load_environment, pick_session, storage_kind
    from ..chat import Chat
    from .mcp import start_for_print
    from .print_mode import run_print

    env = load_environment(args.home)
    prompt = read_prompt(args.prompt, sys.stdin, int(env.settings.max_input_mb * 1e6))
    tools = parse_tool_names(args.tools) if args.tools is not None else None
    async with catalog_for(args) as catalog:
        storage = await pick_session(catalog, session_ref=args.session, continue_latest=args.continue_latest)
        chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry, model_ref=args.model,
                    tools=tools, confirm=_allow if args.yes else None, system=args.system,
                    confirm_read=_allow_read if args.yes else _refuse_read)
        chat.approve_change = approve_inside() if args.yes else None  # never outside the working folder
        await chat.open(storage)
        start_for_print(chat, args, sys.stderr)  # MCP servers, before the prompt (cli_mcp.py)
        try:
            if args.mode == "json":
                code = await _print_json(chat, prompt, args)
            elif len(getattr(args, "models", None) or []) > 1:
                from .print_compare import run_compare
                code = await run_compare(chat, prompt, args.models, out=sys.stdout, err=sys.stderr,
                                         attach=args.attach or (), raw=args.raw)
            else:
                code = await run_print(chat, prompt, out=sys.stdout, err=sys.stderr, attach=args.attach or (),
                                       raw=args.raw)
        finally:
            await chat.close()  # a session the run never wrote to is not kept
        if code != 2 and not args.session:
            # stdout is only the answer: say on stderr where the exchange went, to continue it
            kept = storage_kind(args.storage, ephemeral=args.ephemeral, settings=env.settings) != "memory"
            print(f"treechat: session {visible_line(storage.session_id)} (continue with -c or --session)" if kept
                  else "treechat: nothing was kept (--ephemeral, or storage memory): this session cannot be continued",
                  file=sys.stderr)
        return code


async def _print_json(chat: Chat, prompt: str, args: argparse.Namespace) -> int:
    """`-p --mode json`: the run's events on stdout, which carries nothing else (see protocol_stdout)."""
    from ..protocols.framing import FdLines
    from ..protocols.json_mode import run_json

    out = FdLines(protocol_stdout())
    try:
        return await run_json(chat, prompt, out=out, err=sys.stderr, attach=args.attach or ())
    finally:
        await out.close()


def protocol_stdout() -> int:
    """stdout for protocol lines only: a descriptor of its own, and fd 1 (what a stray print, a
    library or a child process writes to) pointed at stderr from now on."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    return fd


async def cmd_rpc(args: argparse.Namespace) -> int:
    """`--mode rpc`: Pi's RPC protocol on stdin/stdout until stdin ends (app/protocols/rpc/)."""
    from ..agent.tools import parse_tool_names
    from ..bootstrap import load_environment, pick_session
    from ..chat import Chat
    from ..protocols.framing import FdLines, read_fd
    from ..protocols.rpc.server import RpcServer, approvals_for

    env = load_environment(args.home)
    tools = parse_tool_names(args.tools) if args.tools is not None else None
    async with catalog_for(args) as catalog:
        storage = await pick_session(catalog, session_ref=args.session, continue_latest=args.continue_latest)
        chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry, model_ref=args.model,
                    tools=tools, system=args.system)
        server = RpcServer(chat)
        out = FdLines(protocol_stdout(), on_broken=server.stop)
        server.out = out
        approvals_for(chat, server, yes=args.yes)
        await chat.open(storage)
        start_for_rpc(chat, args)
        try:
            await server.serve(read_fd(0))  # (fd 0 even when Python has no sys.stdin: a closed one is an end)
        finally:
            await chat.close()  # stops a run still going; a session nobody wrote to is not kept
            await out.close()
        return 0


def start_for_rpc(chat: Chat, args: argparse.Namespace) -> None:
    """MCP servers start in the background, as in the app: their calls are asked about like bash."""
    from .mcp import start_for_print

    confirm = chat.confirm_tool
    start_for_print(chat, args, sys.stderr)
    chat.confirm_tool = confirm  # (start_for_print sets print mode's rule; RPC asks its client)


async def _allow(command: str) -> bool:
    return True  # --yes: the bash tool runs without asking


async def _allow_read(tool: str, path: str, folder: str) -> bool:
    return True  # --yes: read, ls and grep look outside the working folder too


async def _refuse_read(tool: str, path: str, folder: str) -> bool:
    """Print mode cannot ask: say on stderr what was refused and what allows it."""
    print(f"treechat: {visible_line(f'refused {tool} of {path}: it is outside the working folder {folder}')} "
          "(--yes, or allow_reads_outside = true in config.toml, allows it)", file=sys.stderr, flush=True)
    return False


def read_prompt(prompt: str, stdin: TextIO, limit: int = 1_000_000) -> str:
    """The prompt for `-p`, with what was piped in (see piped_input.prompt_with_pipe)."""
    from .piped_input import PipedInputError, prompt_with_pipe

    try:
        return prompt_with_pipe(prompt, stdin, limit)
    except PipedInputError as err:
        raise CliError(str(err)) from None


async def cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp import run_mcp
    return await run_mcp(args)


async def cmd_acp(args: argparse.Namespace) -> int:
    from ..acp.run import run_acp

    return await run_acp(args, catalog_for)


async def cmd_tui(args: argparse.Namespace) -> int:
    from ..tui import run_tui

    return await run_tui(args)


Handler = Callable[["argparse.Namespace"], Coroutine[object, object, int]]
COMMANDS: dict[str, Handler] = {
    "sessions": cmd_sessions,
    "import": cmd_import,
    "copy": cmd_copy,
    "export": cmd_export,
    "context": cmd_context,
    "tree": cmd_tree,
    "search": cmd_search,
    "reindex": cmd_reindex,
    "doctor": cmd_doctor,
    "mcp": cmd_mcp,
    "acp": cmd_acp,
}


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        from .. import __version__

        print(f"treechat {__version__}")  # the one answer that needs no parser: nothing else is imported
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    _modes_and_models(parser, args)
    handler: Handler
    if args.command:
        found: Handler | None = COMMANDS.get(args.command) or getattr(args, "run", None)  # (cli/files.py sets run)
        assert found is not None, args.command  # the parser knows no other subcommand
        handler = found
    elif args.mode == "rpc":
        handler = cmd_rpc
    elif args.prompt is not None:
        handler = cmd_print
    else:
        handler = cmd_tui
    if getattr(args, "raw", False) and isinstance(sys.stdout, io.TextIOWrapper):
        # exact output, but never a UnicodeEncodeError: stored text holds no UTF-16 halves (they are
        # repaired before storing) and streamed replies are repaired as they are written; anything
        # else unencodable is written as "?" rather than stopping the output half-way
        sys.stdout.reconfigure(errors="replace")
    import asyncio

    from treechat.storage.lock_notices import listen  # (not locks.py: it loads the storage vocabulary)

    try:
        with listen(_lock_wait_line):
            return asyncio.run(handler(args))
    except KeyboardInterrupt:
        print("treechat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        print(f"treechat: {visible_line(f'{err.strerror or err}{where}')}", file=sys.stderr)
        return 1
    except Exception as err:
        if not _expected(err):
            raise
        # error text can carry a file's, a server's or a model's words: one line, controls made visible
        print(f"treechat: {visible_line(err)}", file=sys.stderr)
        return 1


def _modes_and_models(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--mode with what it needs; Pi's --provider NAME --model ID (as a client written for Pi passes
    them) as --model NAME/ID. A combination that makes no sense is argparse's one line (status 2)."""
    if args.mode is not None and args.command:
        parser.error(f"--mode is for the app, -p and rpc, not for the {args.command} command")
    if args.mode == "rpc" and args.prompt is not None:
        parser.error("--mode rpc reads its prompts from stdin: leave out -p")
    if args.mode in ("json", "text") and args.prompt is None:
        parser.error(f"--mode {args.mode} needs -p PROMPT (or -p with piped text)")
    if args.provider is not None:
        if not args.model:
            parser.error("--provider needs --model ID (or give --model PROVIDER/ID alone)")
        if "/" not in args.model:
            args.model = f"{args.provider}/{args.model}"
        args.models = [m if "/" in m else f"{args.provider}/{m}" for m in getattr(args, "models", None) or []]
    if len(getattr(args, "models", None) or []) > 1:
        if args.prompt is None or args.command:
            parser.error("--model more than once is for -p (one prompt to several models); in the app: /compare")
        if args.mode in ("json", "rpc"):
            parser.error(f"--mode {args.mode} speaks for one model: give one --model (several print as text)")


# The errors that are one line, not a traceback. Named by module: a command that never imported
# a module cannot have raised its error, and naming them here imports nothing.
_EXPECTED = (("treechat.storage.base", "StorageError"), ("treechat.storage.model_lite", "InvalidEntryError"),
             ("treechat.config.settings", "ConfigError"), ("treechat.llm.registry", "ModelRefError"),
             ("treechat.chat.errors", "ChatError"), ("treechat.agent.tools", "UnknownToolError"),
             ("treechat.cli.files", "FilesError"))


def _expected(err: Exception) -> bool:
    if isinstance(err, CliError):
        return True
    for module, name in _EXPECTED:
        found = sys.modules.get(module)
        kind = getattr(found, name, None) if found is not None else None
        if isinstance(kind, type) and isinstance(err, kind):
            return True
    return False


def _lock_wait_line(text: str) -> None:
    """A wait for another process's lock, said at once (the app says it in its own window)."""
    print(f"treechat: {visible_line(text)}", file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
