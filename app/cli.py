"""`treechat` command line (DESIGN §9). Every expected failure is one line on stderr and exit 1."""

from __future__ import annotations

import io
import os
import stat
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Sequence, TextIO, cast

# Start-up in proportion: each subcommand imports what it needs inside its own function, so
# `--version` loads no pydantic, and `sessions`, `search`, `context`, `tree`, `import` no httpx,
# Textual or agent (tests/cli/test_cli_imports.py checks the lists).
from treechat.storage import BACKENDS

from .progress import reading_progress

if TYPE_CHECKING:
    import argparse

    from treechat.storage.base import SearchHit, SessionCatalog, SessionStorage


def visible_line(text: object, limit: int | None = None) -> str:
    from treechat.widgets.sanitize import visible_line as line

    return line(text, limit)


def json_for_terminal(text: str) -> str:
    from treechat.widgets.sanitize import json_for_terminal as escape

    return escape(text)


def _version_line() -> str:
    from . import __version__

    return f"treechat {__version__}"


class CliError(Exception):
    """An expected failure; its message is the one line the user sees."""


def build_parser() -> argparse.ArgumentParser:
    import argparse

    class _Version(argparse.Action):
        """`--version` after other options (alone it never gets here: see main)."""

        def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

        def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
            print(_version_line())
            parser.exit()

    # Shared options are accepted before or after the subcommand; SUPPRESS keeps a subparser
    # from overwriting a value given before it.
    def common(parser: argparse.ArgumentParser, default: Any) -> None:
        parser.add_argument("--home", default=default, help="folder for the database, session files and config (env: TREECHAT_HOME)")
        parser.add_argument("--storage", choices=BACKENDS, default=default, help="storage backend (default: sqlite)")
        parser.add_argument("--raw", action="store_true", default=False if default is None else default,
                            help="write replies, listings and exports byte for byte (by default control "
                                 "characters from models and files are shown as placeholders such as ␛)")

    p = argparse.ArgumentParser(prog="treechat", description="A terminal chat for LLM agents whose history is a tree.")
    p.add_argument("--version", action=_Version, help="show the version and exit")
    common(p, None)
    p.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", nargs="?", const="",
                   help="send one prompt, stream the answer to stdout, persist it (no PROMPT, or -: the piped text)")
    p.add_argument("--session", metavar="ID|PREFIX", help="open (or continue) this session")
    p.add_argument("-c", "--continue", dest="continue_latest", action="store_true", help="resume the most recent session")
    p.add_argument("--model", metavar="PROVIDER/ID", help="model to use, e.g. openai/gpt-4o-mini or anthropic/claude-sonnet-4-5")
    p.add_argument("--tools", metavar="LIST", help="enable built-in tools: read,ls,grep,bash,edit,write")
    p.add_argument("--yes", action="store_true", help="print mode: run bash, edit and write (in the folder) unasked")
    p.add_argument("--system", metavar="TEXT", help="instructions added to the system prompt (also config system_prompt)")
    p.add_argument("-a", "--attach", metavar="FILE", action="append",
                   help="print mode: attach a file (an image, or a text file); repeatable. In a prompt, @path does the same")
    p.add_argument("--ephemeral", action="store_true", help="keep nothing: same as --storage memory")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("sessions", help="list sessions, newest first")
    common(s, argparse.SUPPRESS)
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("import", help="import Pi session files and folders (v1-v3); prints the session ids")
    common(s, argparse.SUPPRESS)
    s.add_argument("files", nargs="*", metavar="PATH", help="session files, or folders searched for *.jsonl")
    s.add_argument("--from-pi", action="store_true", help="import Pi's sessions folder (~/.pi/agent/sessions)")
    s.add_argument("--force", action="store_true", help="replace sessions that were imported before (same id)")

    s = sub.add_parser("export", help="write a session as Pi JSONL (opens in Pi) or Markdown")
    common(s, argparse.SUPPRESS)
    s.add_argument("session", metavar="SESSION")
    s.add_argument("--format", choices=("jsonl", "md", "html"), default="jsonl")
    s.add_argument("-o", "--output", metavar="PATH", help="file to write (default: stdout)")

    s = sub.add_parser("context", help="print the context built at the leaf (or --leaf)")
    common(s, argparse.SUPPRESS)
    s.add_argument("session", metavar="SESSION")
    s.add_argument("--leaf", metavar="ID|null", help="build at this entry instead of the leaf ('null': empty)")
    s.add_argument("--json", action="store_true", help="JSON output (the default and only format)")

    s = sub.add_parser("tree", help="print every entry with its label, and the leaf")
    common(s, argparse.SUPPRESS)
    s.add_argument("session", metavar="SESSION")
    s.add_argument("--json", action="store_true", help="JSON output (the default and only format)")

    s = sub.add_parser("search", help="full-text search across all sessions, best first")
    common(s, argparse.SUPPRESS)
    s.add_argument("query", metavar="QUERY")
    s.add_argument("--json", action="store_true")
    s.add_argument("--limit", type=int, default=20)

    s = sub.add_parser("reindex", help="rebuild the full-text search index from the stored entries")
    common(s, argparse.SUPPRESS)

    s = sub.add_parser("doctor", help="check the set-up: config, storage, keys, local servers, terminal")
    common(s, argparse.SUPPRESS)
    s.add_argument("--json", action="store_true", help="the report as JSON")
    from .cli_files import add_file_commands  # files, restore
    add_file_commands(sub, common)
    return p


@asynccontextmanager
async def catalog_for(args: argparse.Namespace) -> AsyncIterator[SessionCatalog]:
    from .bootstrap import open_store, storage_kind
    from .paths import resolve_home

    kind = storage_kind(args.storage, ephemeral=getattr(args, "ephemeral", False))
    catalog = await open_store(kind, resolve_home(args.home))
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


def emit(data: Any) -> None:
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
    for r in rows:
        title = r.name or r.first_message or "(empty)"
        print(f"{shown(args, r.id[:13])}  {r.modified_at[:16].replace('T', ' ')}  {r.message_count:>5} msgs  ${r.cost_total:,.4f}  {shown(args, title, 60)}")
    return 0


async def cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .cli_storage import from_pi_folder, run_import

    paths = [Path(p).expanduser() for p in args.files]
    if args.from_pi:
        paths.append(from_pi_folder())
    if not paths:
        raise CliError("give session files or folders to import, or --from-pi for Pi's sessions folder")
    async with catalog_for(args) as catalog:
        return await run_import(catalog, paths, force=args.force, stdout=sys.stdout)


async def open_session(catalog: SessionCatalog, ref: str) -> SessionStorage:
    """A session for a command, with a warning line for what its file had to set aside."""
    from .load_warning import load_warning

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

    from .export_md import render_markdown
    from .export_target import write_text_file
    from .session.session import Session

    async with catalog_for(args) as catalog:
        storage = await open_session(catalog, args.session)
        session = await Session.open(storage)
        if args.format == "html":
            from .html_export import export_html
            from .progress import progress

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
                write_text_file(Path(args.output), text)
            else:
                sys.stdout.write(text)
            return 0
        from .cli_storage import stream_export

        await stream_export(storage, args.output, sys.stdout if args.raw or args.output else cast(TextIO, _TerminalSafe(sys.stdout)))
    return 0


async def cmd_context(args: argparse.Namespace) -> int:
    import json

    from .session.instructions import stored_instructions_at
    from .session.session import Session

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
    folder = cwd if cwd and os.path.isdir(cwd) else os.getcwd()
    given = getattr(args, "system", None)  # --system wins over what /system stored, as in the app
    instructions = given if given is not None else stored if isinstance(stored, str) else None
    prompt = context_system_prompt(args, ctx.active_tool_names, folder, instructions)
    # One message per line, each serialized by pydantic in one call (a 20k-message context in a
    # fraction of a second; json.dumps with indent runs its pure-Python encoder over every value)
    out = [json.dumps(v, ensure_ascii=False) for v in (ctx.thinking_level, ctx.model, ctx.active_tool_names, prompt)]
    lines = ",\n    ".join(m.model_dump_json(by_alias=True, exclude_unset=True) for m in ctx.messages)
    text = ('{\n  "messages": [' + ("\n    " + lines + "\n  ]" if lines else "]") + ',\n  "thinkingLevel": '
            + out[0] + ',\n  "model": ' + out[1] + ',\n  "activeToolNames": ' + out[2]
            + ',\n  "systemPrompt": ' + out[3] + "\n}\n")
    sys.stdout.write(text if args.raw else json_for_terminal(text))
    return 0


def context_system_prompt(args: argparse.Namespace, active_tools: list[str] | None, cwd: str,
                          instructions: str | None) -> str:
    """The system prompt a request in this session would carry: its active tools (or the
    configured ones), its folder (`cwd`: where the session was started, when that folder still
    exists, not where this command runs), the AGENTS.md files seen from there, config
    `system_prompt`, and `instructions` (`--system`, else what `/system` stored on the path)."""
    from .agent.tools import BUILTIN_TOOLS, make_tools, parse_tool_names
    from .config import ConfigError, load_settings
    from .session.system_prompt import SystemPromptBuilder

    try:
        settings = load_settings(args.home)
        names = active_tools if active_tools is not None else parse_tool_names(args.tools or settings.tools)
    except (ConfigError, ValueError) as err:
        raise CliError(str(err)) from None
    tools = make_tools([n for n in names if n in BUILTIN_TOOLS], cwd=cwd)
    builder = SystemPromptBuilder.from_settings(settings, cwd=cwd, instructions=instructions)
    return builder.build(tools)


async def cmd_tree(args: argparse.Namespace) -> int:
    from .cli_storage import stream_tree

    async with catalog_for(args) as catalog:
        await stream_tree(await open_session(catalog, args.session), sys.stdout if args.raw else cast(TextIO, _TerminalSafe(sys.stdout)))
    return 0


async def cmd_search(args: argparse.Namespace) -> int:
    async with catalog_for(args) as catalog:
        # SessionCatalog's method named `list` shadows the builtin in its annotations; say what it is
        with reading_progress(catalog, "Searching"):
            hits = cast("Sequence[SearchHit]", await catalog.search(args.query, limit=args.limit))
        _warn_unreadable(catalog)
    from treechat.storage.base import searched_only

    if (searched := searched_only(hits)) is not None:
        print(f"treechat: a query of words under 3 characters looks at the newest {searched:,} entries only; "
              "add a word of 3 or more characters to search everything", file=sys.stderr)
    if args.json:
        emit([{"sessionId": h.session_id, "entryId": h.entry_id, "type": h.type, "role": h.role,
               "snippet": h.snippet, "rank": h.rank, "sessionName": h.session_name, "timestamp": h.timestamp}
              for h in hits])
        return 0
    if not hits:
        print(f"No matches for {args.query!r}.")
    for h in hits:
        where = h.session_name or h.session_id[:13]
        print(f"{shown(args, where)}  {shown(args, h.entry_id)}  {shown(args, h.role or h.type)}: {shown(args, ' '.join(h.snippet.split()), 100)}")
    return 0


async def cmd_reindex(args: argparse.Namespace) -> int:
    from .cli_storage import run_reindex

    async with catalog_for(args) as catalog:
        print(await run_reindex(catalog))
    return 0


async def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_doctor

    return await run_doctor(args.home, model=args.model, as_json=args.json)


async def cmd_print(args: argparse.Namespace) -> int:
    from .agent.tools import approve_inside, parse_tool_names
    from .bootstrap import load_environment, pick_session
    from .chat import Chat
    from .print_mode import run_print

    prompt = read_prompt(args.prompt, sys.stdin)
    env = load_environment(args.home)
    tools = parse_tool_names(args.tools) if args.tools is not None else None
    async with catalog_for(args) as catalog:
        storage = await pick_session(catalog, session_ref=args.session, continue_latest=args.continue_latest)
        chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry, model_ref=args.model,
                    tools=tools, confirm=_allow if args.yes else None, system=args.system)
        chat.approve_change = approve_inside() if args.yes else None  # never outside the working folder
        await chat.open(storage)
        try:
            code = await run_print(chat, prompt, out=sys.stdout, err=sys.stderr, attach=args.attach or (), raw=args.raw)
        finally:
            await chat.close()  # a session the run never wrote to is not kept
        if code != 2 and not args.session:
            # stdout is only the answer: say on stderr where the exchange went, to continue it
            print(f"treechat: session {visible_line(storage.session_id)} (continue with -c or --session)", file=sys.stderr)
        return code


async def _allow(command: str) -> bool:
    return True  # --yes: the bash tool runs without asking


def read_prompt(prompt: str, stdin: TextIO) -> str:
    """`-p -` reads the prompt from stdin; text piped in with `-p PROMPT` comes first, then the
    prompt (`git diff | treechat -p "review this"`). A terminal or no stdin is not read."""
    if prompt == "-":
        text = stdin.read()
        if not text.strip():
            raise CliError("-p - reads the prompt from stdin, but stdin was empty.")
        return text
    piped = _piped_text(stdin)
    if not prompt.strip() and not piped.strip():
        raise CliError("The prompt is empty: give the text after -p, or pipe it in (echo … | treechat -p).")
    if not prompt.strip():
        return piped  # `echo … | treechat -p`: the piped text is the prompt
    return f"{piped.rstrip()}\n\n{prompt}" if piped.strip() else prompt


def _piped_text(stdin: TextIO) -> str:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # closed, or not a real file (tests)
        return ""
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""  # a terminal, /dev/null, a socket: nothing was piped
    return stdin.read()


async def cmd_tui(args: argparse.Namespace) -> int:
    from .tui import run_tui

    return await run_tui(args)


COMMANDS = {
    "sessions": cmd_sessions,
    "import": cmd_import,
    "export": cmd_export,
    "context": cmd_context,
    "tree": cmd_tree,
    "search": cmd_search,
    "reindex": cmd_reindex,
    "doctor": cmd_doctor,
}


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(_version_line())  # the one answer that needs no parser: nothing else is imported
        return 0
    args = build_parser().parse_args(argv)
    if args.command:
        handler = COMMANDS.get(args.command) or args.run
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

    try:
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


# The errors that are one line, not a traceback. Named by module: a command that never imported
# a module cannot have raised its error, and naming them here imports nothing.
_EXPECTED = (("treechat.storage.base", "StorageError"), ("treechat.storage.model", "InvalidEntryError"),
             ("treechat.config", "ConfigError"), ("treechat.llm.registry", "ModelRefError"),
             ("treechat.chat_core", "ChatError"), ("treechat.agent.tools", "UnknownToolError"),
             ("treechat.cli_files", "FilesError"))


def _expected(err: Exception) -> bool:
    if isinstance(err, CliError):
        return True
    for module, name in _EXPECTED:
        found = sys.modules.get(module)
        kind = getattr(found, name, None) if found is not None else None
        if isinstance(kind, type) and isinstance(err, kind):
            return True
    return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
