"""README sections generated from the code, so the docs cannot drift: `python -m treechat.docs` rewrites
them; tests/test_docs.py fails when README.md is out of date. The keys come from the keymap, the
slash commands from the App's registry (`treechat.tui.registry`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from treechat.tui.app import TreechatApp
from treechat.widgets.keymap import readme_section

README = Path(__file__).resolve().parent.parent / "README.md"


def _cell(text: str) -> str:
    """A Markdown table cell: a bare | would end it (also inside a code span)."""
    return text.replace("|", "\\|")


def commands_section() -> str:
    rows = ["## Slash commands", "", "Type them in the composer; Tab completes a command's name, then its arguments (`/fork b` → "
            "`/fork before`; the models of `/model`, the levels of `/thinking`, the skills of `/skill`, the servers "
            "of `/mcp restart`). Every one is also in the command palette (Ctrl+P).", "",
            "| Command | What it does |", "|---|---|"]
    for c in TreechatApp.command_table():
        key = f" ({c.key})" if c.key else ""
        rows.append(f"| `{_cell(c.usage)}` | {_cell(c.title)}: {_cell(c.help)}{key} |")
    return "\n".join(rows)


def keys_section() -> str:
    return readme_section(TreechatApp.command_table())


SECTIONS = {"keys": keys_section, "commands": commands_section}


def _replacement(body: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return match.group(1) + body + "\n" + match.group(2)

    return replace


def render(text: str) -> str:
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.S)
        text = pattern.sub(_replacement(make().strip()), text)
    return text


def main() -> int:
    old = README.read_text(encoding="utf-8")
    new = render(old)
    if new != old:
        README.write_text(new, encoding="utf-8")
        print("README.md updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
