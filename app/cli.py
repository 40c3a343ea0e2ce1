"""`treechat` command line (DESIGN §9). Every expected failure is one line on stderr and exit 1."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from treechat.storage import BACKENDS, open_catalog
from treechat.storage.base import SessionCatalog, StorageError
from treechat.storage.model import InvalidEntryError

from . import __version__
from .paths import resolve_home


class CliError(Exception):
    """An expected failure; its message is the one line the user sees."""


def default_backend() -> str:
    try:
        import treechat.storage.sqlite  # noqa: F401
    except ImportError:  # pragma: no cover - only before the SQLite backend existed
        return "jsonl"
    return "sqlite"


async def latest_with_content(catalog: SessionCatalog) -> Any:
    """`-c`: the newest session that holds something (an empty one left by a killed run is not
    "the last conversation"), or None."""
    rows = [r for r in await catalog.list() if r.entry_count > 0]
    return await catalog.open(rows[0].id) if rows else None


def build_parser() -> argparse.ArgumentParser:
    # Shared options are accepted before or after the subcommand; SUPPRESS keeps a subparser
    # from overwriting a value given before it.
    def common(parser: argparse.ArgumentParser, default: Any) -> None:
        parser.add_argument("--home", default=default, help="folder for the database, session files and config (env: TREECHAT_HOME)")
        parser.add_argument("--storage", choices=BACKENDS, default=default, help="storage backend (default: sqlite)")

    p = argparse.ArgumentParser(prog="treechat", description="A terminal chat for LLM agents whose history is a tree.")
    p.add_argument("--version", action="version", version=f"treechat {__version__}")
    common(p, None)
    p.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", help="send one prompt, stream the answer to stdout, persist it")
    p.add_argument("--session", metavar="ID|PREFIX", help="open (or continue) this session")
    p.add_argument("-c", "--continue", dest="continue_latest", action="store_true", help="resume the most recent session")
    p.add_argument("--model", metavar="PROVIDER/ID", help="model to use, e.g. openai/gpt-4o-mini or anthropic/claude-sonnet-4-5")
    p.add_argument("--tools", metavar="LIST", help="enable built-in tools: read,ls,grep,bash")
    p.add_argument("--yes", action="store_true", help="print mode: allow the bash tool without asking")
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
    s.add_argument("--format", choices=("jsonl", "md"), default="jsonl")
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
    return p


@asynccontextmanager
async def catalog_for(args: argparse.Namespace) -> AsyncIterator[SessionCatalog]:
    kind = "memory" if getattr(args, "ephemeral", False) else (args.storage or default_backend())
    catalog = await open_catalog(kind, resolve_home(args.home))
    try:
        yield catalog
    finally:
        await catalog.close()


def emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# ---------------------------------------------------------------- commands


async def cmd_sessions(args: argparse.Namespace) -> int:
    async with catalog_for(args) as catalog:
        rows = await catalog.list()
        _warn_unreadable(catalog)
    if args.json:
        emit([r.to_json() for r in rows])
        return 0
    if not rows:
        print("No sessions yet. Start one with `treechat`, or import Pi files with `treechat import`.")
    for r in rows:
        title = r.name or r.first_message or "(empty)"
        print(f"{r.id[:13]}  {r.modified_at[:16].replace('T', ' ')}  {r.message_count:>5} msgs  ${r.cost_total:,.4f}  {title[:60]}")
    return 0


async def cmd_import(args: argparse.Namespace) -> int:
    from .cli_storage import from_pi_folder, run_import

    paths = [Path(p).expanduser() for p in args.files]
    if args.from_pi:
        paths.append(from_pi_folder())
    if not paths:
        raise CliError("give session files or folders to import, or --from-pi for Pi's sessions folder")
    async with catalog_for(args) as catalog:
        return await run_import(catalog, paths, force=args.force, stdout=sys.stdout)


def _warn_unreadable(catalog: SessionCatalog) -> None:
    """One line for session files a listing had to pass over (JSONL: a damaged file)."""
    problems = getattr(catalog, "problems", None)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        print(f"treechat: warning: skipped an unreadable session file: {problems[0]}{more}", file=sys.stderr)


async def cmd_export(args: argparse.Namespace) -> int:
    from .export_md import render_markdown
    from .session.session import Session

    async with catalog_for(args) as catalog:
        storage = await catalog.open(args.session)
        session = await Session.open(storage)
        if args.format == "md":
            ctx = await session.build_session_context()
            title = await session.get_session_name() or f"treechat session {storage.session_id}"
            text = render_markdown(title, ctx.messages)
            if args.output:
                Path(args.output).write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text)
            return 0
        from .cli_storage import stream_export

        await stream_export(storage, args.output, sys.stdout)
    return 0


async def cmd_context(args: argparse.Namespace) -> int:
    from .session.session import Session

    async with catalog_for(args) as catalog:
        session = await Session.open(await catalog.open(args.session))
        if args.leaf is None:
            ctx = await session.build_session_context()
        else:
            ctx = await session.build_session_context(None if args.leaf == "null" else args.leaf)
    emit(ctx.to_json())
    return 0


async def cmd_tree(args: argparse.Namespace) -> int:
    from .cli_storage import stream_tree

    async with catalog_for(args) as catalog:
        await stream_tree(await catalog.open(args.session), sys.stdout)
    return 0


async def cmd_search(args: argparse.Namespace) -> int:
    async with catalog_for(args) as catalog:
        hits = await catalog.search(args.query, limit=args.limit)
        _warn_unreadable(catalog)
    if args.json:
        emit([{"sessionId": h.session_id, "entryId": h.entry_id, "type": h.type, "role": h.role,
               "snippet": h.snippet, "rank": h.rank, "sessionName": h.session_name, "timestamp": h.timestamp}
              for h in hits])
        return 0
    if not hits:
        print(f"No matches for {args.query!r}.")
    for h in hits:
        where = h.session_name or h.session_id[:13]
        print(f"{where}  {h.entry_id}  {h.role or h.type}: {' '.join(h.snippet.split())[:100]}")
    return 0


async def cmd_print(args: argparse.Namespace) -> int:
    from .print_mode import run_print

    async with catalog_for(args) as catalog:
        return await run_print(args, catalog)


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
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command:
        handler = COMMANDS[args.command]
    elif args.prompt is not None:
        handler = cmd_print
    else:
        handler = cmd_tui
    try:
        return asyncio.run(handler(args))
    except KeyboardInterrupt:
        print("treechat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CliError, StorageError, InvalidEntryError) as err:
        print(f"treechat: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        print(f"treechat: {err.strerror or err}{where}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
