"""THE slash-command table: every `/command`, its argument hint and what it does, once.

The composer recognises commands with `parse_slash`, the app dispatches them by name (a test
checks that every name has a handler), the command palette lists them with their hints, and
F1 help and README.md are generated from this table, so none of them can drift.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str  # typed after "/"
    title: str  # what the palette shows
    args: str  # the argument hint ("" when it takes none)
    help: str  # one line: what it does
    key: str = ""  # the key that does the same, as people write it

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("tree", "Show or focus the tree", "", "the session tree panel", "Ctrl+B"),
    SlashCommand("back", "Back to the previous leaf", "", "undo the last leaf move"),
    SlashCommand("fork", "Fork to a new session", "[here|before]",
                 "a new session with this path (before: edit the last prompt there)"),
    SlashCommand("resume", "Sessions", "", "list, resume, rename, delete sessions", "Ctrl+R"),
    SlashCommand("new", "New session", "", "start an empty session", "Ctrl+N"),
    SlashCommand("name", "Name this session", "TEXT", "the name shown in the header and the session list"),
    SlashCommand("label", "Label the current entry", "[TEXT]", "a label on the leaf (empty clears)"),
    SlashCommand("compact", "Compact the conversation", "[instructions]",
                 "summarise older messages into one entry (nothing is deleted)"),
    SlashCommand("summarize", "Summarize the branch you left", "[instructions]",
                 "add a summary of the abandoned branch to the context"),
    SlashCommand("model", "Choose the model", "[PROVIDER/ID]", "pick or type the model", "Ctrl+L"),
    SlashCommand("thinking", "Thinking level", "[off|minimal|low|medium|high|xhigh]",
                 "how hard the model thinks", "Alt+T"),
    SlashCommand("search", "Search all sessions", "[QUERY]", "anything ever said, on any branch", "Ctrl+F"),
    SlashCommand("copy", "Copy a message", "[N]",
                 "the last reply to the clipboard, or the N-th message from the end (OSC 52 and the system's)"),
    SlashCommand("retry", "Retry the last prompt", "",
                 "ask again; the new reply is a sibling of the old one (‹ n/m › switches)"),
    SlashCommand("system", "System prompt", "[TEXT|off]",
                 "your own instructions, kept with the session (empty: show the whole prompt; off: remove them)"),
    SlashCommand("export", "Export this session", "[PATH]",
                 ".jsonl opens in Pi, .md for reading, .html to look at and share (every branch)"),
    SlashCommand("restore", "Restore files", "[ENTRY] [--force] | --undo",
                 "put the files edit/write changed back as they were here (--undo: what the last restore replaced)"),
    SlashCommand("session", "Session info", "", "id, file, counts, tokens and cost"),
    SlashCommand("skill", "Use a skill", "[NAME] [text]",
                 "a skill's instructions go into your message (no name: list skills and prompt templates)"),
    SlashCommand("mcp", "MCP servers", "[restart NAME]", "each server: its state, its tools, its last error"),
    SlashCommand("help", "Help: keys and commands", "", "every key binding", "F1"),
)
BY_NAME: dict[str, SlashCommand] = {c.name: c for c in SLASH_COMMANDS}
NAMES: tuple[str, ...] = tuple(BY_NAME)

# "/word" at the start, then a space or the end: "/usr/bin/env …" and "/ path" are plain text.
_SLASH = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.S)
_PI_SKILL = re.compile(r"^/skill:([\w.-]+)(?:\s+(.*))?$", re.S | re.I)  # Pi's `/skill:name text`


def parse_slash(text: str) -> tuple[str, str] | None:
    """`/name args` → ("name", "args") for any command word, known or not (the app says when it
    does not know one); None for text that is not a command, and for `//…` (a literal slash)."""
    stripped = text.strip()
    pi = _PI_SKILL.match(stripped)
    if pi is not None:  # the same as `/skill name text`
        return "skill", f"{pi.group(1)} {pi.group(2) or ''}".strip()
    match = _SLASH.match(stripped)
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def closest(name: str) -> str | None:
    """The known command nearest to a mistyped one ("/modle" → "model"), if any is close."""
    found = difflib.get_close_matches(name.lower(), NAMES, n=1, cutoff=0.6)
    if found:
        return found[0]
    prefixed = [n for n in NAMES if n.startswith(name.lower())]
    return prefixed[0] if len(prefixed) == 1 else None
