"""Documentation sections generated from the code, so the docs cannot drift: `python -m treechat.docs`
rewrites them; tests/test_docs.py fails when a page is out of date. The keys come from the keymap,
the slash commands from the App's registry (`treechat.tui.registry`).

A section sits between `<!-- NAME:start -->` and `<!-- NAME:end -->` in the pages of `PAGES`:
README.md holds the ten keys people need first, docs/keys.md every key and every command."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from treechat.tui.app import TreechatApp
from treechat.widgets.keymap import CONTEXTS, KEYMAP, display_key, readme_section

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KEYS_PAGE = ROOT / "docs" / "keys.md"

# The README's first keys: (context, the keymap actions shown in one row, where it applies).
ESSENTIALS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("composer", ("submit",), "composer"),
    ("global", ("stop",), ""),
    ("global", ("toggle_tree",), ""),
    ("tree", ("choose",), "tree"),
    ("tree", ("sibling(-1)", "sibling(1)"), "tree"),
    ("tree", ("back",), "tree"),
    ("global", ("model",), ""),
    ("global", ("sessions",), ""),
    ("global", ("search",), ""),
    ("global", ("quit",), ""),
)


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


def essentials_section() -> str:
    """The ten keys a first session needs, with the keymap's own words."""
    rows = ["| Key | Where | Action |", "|---|---|---|"]
    for context, actions, where in ESSENTIALS:
        keys = []
        for action in actions:
            found = [k for k in KEYMAP if k.context == context and k.action == action]
            if not found:
                raise LookupError(f"app/docs.py ESSENTIALS: no key {action!r} in the keymap's {context!r} keys")
            keys.append(found[0])
        shown = " / ".join(display_key(k.key).replace("|", "¦") for k in keys)
        said = " / ".join(k.description for k in keys)
        rows.append(f"| {shown} | {CONTEXTS[where] if where else 'anywhere'} | {_cell(said)} |")
    return "\n".join(rows)


SECTIONS: dict[str, Callable[[], str]] = {"essentials": essentials_section, "keys": keys_section,
                                          "commands": commands_section}
PAGES: dict[Path, tuple[str, ...]] = {README: ("essentials",), KEYS_PAGE: ("keys", "commands")}


def _replacement(body: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return match.group(1) + body + "\n" + match.group(2)

    return replace


def render(text: str) -> str:
    """`text` with every generated section it holds written afresh."""
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.S)
        if pattern.search(text):
            text = pattern.sub(_replacement(make().strip()), text)
    return text


def main() -> int:
    for page in PAGES:
        old = page.read_text(encoding="utf-8")
        new = render(old)
        if new != old:
            page.write_text(new, encoding="utf-8")
            print(f"{page.relative_to(ROOT)} updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
