"""`treechat`'s arguments: the options, and a parser per subcommand (the handlers are in cli.py)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from treechat.storage import BACKENDS

if TYPE_CHECKING:  # what add_subparsers gives (argparse's class of it is private and not generic at run time)
    Subcommands: TypeAlias = "argparse._SubParsersAction[_Parser]"


def _version_line() -> str:
    from .. import __version__

    return f"treechat {__version__}"


class _Parser(argparse.ArgumentParser):
    """No abbreviations of long options (`--mode json` was read as `--model json`); the
    subcommands' parsers are of this class too (add_subparsers makes them of the parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # (ArgumentParser's own, forwarded)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


class _Models(argparse.Action):
    """`--model` once is the model (`model`); more than once, `models` lists them all in order
    (one prompt to several models, `-p`) and `model` is the first."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        given = [*(getattr(namespace, "models", None) or []), str(values)]
        namespace.models = given
        namespace.model = given[0]


def build_parser() -> argparse.ArgumentParser:
    """Every option and subcommand of `treechat`."""
    class _Version(argparse.Action):
        """`--version` after other options (alone it never gets here: see main)."""

        def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:  # (Action's)
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

        def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
            print(_version_line())
            parser.exit()

    # Shared options are accepted before or after the subcommand; SUPPRESS keeps a subparser
    # from overwriting a value given before it.
    def common(parser: argparse.ArgumentParser, default: str | None) -> None:
        parser.add_argument("--home", default=default, help="folder for the database, session files and config (env: TREECHAT_HOME)")
        parser.add_argument("--storage", choices=BACKENDS, default=default,
                            help="storage backend (default: config.toml's storage, else sqlite; postgres: the server "
                                 "in TREECHAT_DATABASE_URL or database_url)")
        parser.add_argument("--raw", action="store_true", default=False if default is None else default,
                            help="write replies, listings and exports byte for byte (by default control "
                                 "characters from models and files are shown as placeholders such as ␛)")

    p = _Parser(prog="treechat", description="A terminal chat for LLM agents whose history is a tree.")
    p.add_argument("--version", action=_Version, help="show the version and exit")
    common(p, None)
    p.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", nargs="?", const="",
                   help="send one prompt, stream the answer to stdout, persist it (no PROMPT, or -: the piped text)")
    p.add_argument("--session", metavar="ID|PREFIX", help="open (or continue) this session")
    p.add_argument("-c", "--continue", dest="continue_latest", action="store_true", help="resume the most recent session")
    p.add_argument("--model", metavar="PROVIDER/ID", action=_Models, default=None,
                   help="model to use, e.g. openai/gpt-4o-mini or anthropic/claude-sonnet-4-5; with -p, given more "
                        "than once: the prompt goes to each model at once, on sibling branches, and each reply is "
                        "printed under a header naming its model")
    p.add_argument("--tools", metavar="LIST", help="enable built-in tools: read,ls,grep,bash,edit,write")
    p.add_argument("--yes", action="store_true", help="print mode and --mode rpc: allow what the app would ask about "
                   "(bash commands, MCP calls, read/ls/grep outside the working folder, and edit/write inside it)")
    p.add_argument("--system", metavar="TEXT", help="instructions added to the system prompt (also config system_prompt)")
    p.add_argument("-a", "--attach", metavar="FILE", action="append",
                   help="print mode: attach a file (an image, or a text file); repeatable. In a prompt, @path does the same")
    p.add_argument("--ephemeral", "--no-session", action="store_true",
                   help="keep nothing: same as --storage memory (--no-session: Pi's spelling)")
    p.add_argument("--provider", metavar="NAME", help="with --model ID: the same as --model NAME/ID (Pi's spelling)")
    p.add_argument("--mode", choices=("text", "json", "rpc"),
                   help="text: -p's answer as text (the default); json: with -p, every event of the run as a JSON "
                        "line (Pi's --mode json); rpc: Pi's RPC protocol, JSON lines over stdin/stdout (docs/protocols.md)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("sessions", help="list sessions, newest first")
    common(s, argparse.SUPPRESS)
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("import", help="import Pi session files and folders (v1-v3); prints the session ids")
    common(s, argparse.SUPPRESS)
    s.add_argument("files", nargs="*", metavar="PATH", help="session files, or folders searched for *.jsonl")
    s.add_argument("--from-pi", action="store_true", help="import Pi's sessions folder (~/.pi/agent/sessions)")
    s.add_argument("--force", action="store_true", help="replace sessions that were imported before (same id)")

    s = sub.add_parser("copy", help="copy sessions between stores, e.g. --from sqlite --to postgres (by id: again skips)")
    common(s, argparse.SUPPRESS)
    s.add_argument("sessions", nargs="*", metavar="SESSION", help="the sessions to copy (default: all)")
    s.add_argument("--from", dest="source", choices=BACKENDS, required=True, help="the store to copy from")
    s.add_argument("--to", dest="target", choices=BACKENDS, required=True, help="the store to copy to")
    s.add_argument("--force", action="store_true", help="replace sessions the target has already (same id)")

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

    from .mcp import add_mcp_arguments
    add_mcp_arguments(p, sub, lambda s: common(s, argparse.SUPPRESS))

    s = sub.add_parser("acp", help="serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, "
                       "Toad): --model, --tools and --system apply to every session",
                       description="Run treechat as an ACP agent: an editor starts it and talks JSON-RPC over "
                                   "stdin/stdout. Sessions are treechat's (session/load replays any of them); "
                                   "questions go to the editor, which serves files and a terminal when it can.")
    common(s, argparse.SUPPRESS)
    for flag, meta, text in (("--model", "PROVIDER/ID", "the model every session starts with"),
                             ("--tools", "LIST", "enable built-in tools: read,ls,grep,bash,edit,write"),
                             ("--system", "TEXT", "instructions added to the system prompt")):
        s.add_argument(flag, metavar=meta, default=argparse.SUPPRESS, help=text)

    s = sub.add_parser("doctor", help="check the set-up: config, storage, keys, local servers, terminal")
    common(s, argparse.SUPPRESS)
    s.add_argument("--json", action="store_true", help="the report as JSON")
    from .files import add_file_commands  # files, restore
    add_file_commands(sub, common)
    return p
