"""THE keymap: one table of every key binding, grouped by where it applies.

Widgets take their ``BINDINGS`` from :func:`bindings_for`; the App does the same for the
"global" context. The footer (``FittedFooter`` shows the focused widget's bindings), the F1
help screen (:func:`help_markdown`) and the README section (:func:`readme_section`) are all
generated from this table, so they cannot drift apart.

Each row's ``action`` is the Textual action name on the widget (or App, for "global") that owns
the context: e.g. the App implements ``action_toggle_tree``; ``TreeView`` implements
``action_choose``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.binding import Binding, BindingType

from .commands import SlashCommand


@dataclass(frozen=True)
class Key:
    key: str  # Textual key name(s), comma separated for alternatives ("enter", "ctrl+j")
    action: str  # Textual action string, resolved on the context's owner
    description: str  # what a person reads in the footer and the help
    context: str  # "global" | "composer" | "tree" | "transcript" | "queue" | "sessions" | "search" | "compare"
    show: bool = True  # shown in the footer (help lists everything)
    priority: bool = False  # must beat TextArea's own readline keys (ctrl+b, ctrl+f, ...)


CONTEXTS: dict[str, str] = {
    "global": "Everywhere",
    "composer": "Composer",
    "tree": "Tree panel",
    "transcript": "Transcript",
    "queue": "Queue tray",
    "sessions": "Sessions screen",
    "search": "Search screen",
    "compare": "Compare view",
}

KEYMAP: tuple[Key, ...] = (
    # ---- global (App)
    # F2 first: Ctrl+B is tmux's prefix, so inside tmux it never reaches the app
    Key("f2,ctrl+b", "toggle_tree", "Tree", "global", priority=True),
    Key("ctrl+r", "sessions", "Sessions", "global", priority=True),
    Key("ctrl+f", "search", "Search", "global", priority=True),
    Key("ctrl+l", "model", "Model", "global", priority=True),
    Key("alt+t", "thinking", "Thinking level", "global", priority=True),
    Key("ctrl+o", "toggle_tool_output", "Expand tools", "global", priority=True),
    Key("ctrl+t", "toggle_thinking_blocks", "Show thinking", "global", show=False, priority=True),
    Key("ctrl+n", "new_session", "New session", "global", show=False, priority=True),
    Key("escape", "stop", "Stop run · end preview · close drawer", "global", show=False),
    Key("alt+up", "pull_queued", "Pull queued back", "global", show=False, priority=True),
    Key("ctrl+p", "command_palette", "Palette", "global", show=False),
    Key("ctrl+g", "edit_in_editor", "Edit in $EDITOR", "global", show=False),
    Key("f1", "help", "Help", "global"),
    Key("ctrl+c", "interrupt", "Stop the run · clear the draft · quit (twice)", "global", show=False,
        priority=True),
    Key("ctrl+q", "quit", "Quit", "global", show=False),
    # ---- composer
    # Enter, Alt+Enter, Tab and the newline keys are handled in the composer's own key handler, in
    # order with the characters typed before them (a priority binding would run ahead of them).
    Key("enter", "submit", "Send (running: steer)", "composer"),
    Key("alt+enter", "follow_up", "Queue follow-up", "composer"),
    Key("tab", "tab_follow_up", "Follow-up (while running)", "composer", show=False),
    Key("shift+enter,ctrl+j", "newline", "New line", "composer", show=False),
    Key("up", "history_previous", "History (empty composer)", "composer", show=False),
    Key("down", "history_next", "History forward", "composer", show=False),
    # ---- tree panel
    Key("up", "cursor_up", "Up", "tree", show=False),
    Key("down", "cursor_down", "Down", "tree", show=False),
    Key("pageup", "page_up", "Page up", "tree", show=False),
    Key("pagedown", "page_down", "Page down", "tree", show=False),
    Key("home", "first", "First", "tree", show=False),
    Key("end", "last", "Last", "tree", show=False),
    Key("enter", "choose", "Move leaf here", "tree"),
    Key("space", "preview", "Preview", "tree"),
    Key("o", "open_subagent", "Open sub-agent", "tree"),
    Key("left_square_bracket", "sibling(-1)", "Prev sibling", "tree", show=False),
    Key("right_square_bracket", "sibling(1)", "Next sibling", "tree", show=False),
    Key("left_curly_bracket", "fork_point(-1)", "Prev fork (where this branch split off)", "tree", show=False),
    Key("right_curly_bracket", "fork_point(1)", "Next fork down this branch (the active path if on it)", "tree",
        show=False),
    Key("g", "goto_leaf", "To leaf", "tree"),
    Key("L", "label", "Label", "tree"),
    Key("f", "fork", "Fork", "tree"),
    Key("slash", "start_filter", "Filter", "tree"),
    Key("n", "next_match(1)", "Next match", "tree", show=False),
    Key("N", "next_match(-1)", "Previous match", "tree", show=False),
    Key("escape", "clear_filter", "Clear filter", "tree", show=False),
    Key("backspace", "back", "Back", "tree"),
    Key("left", "fold", "Fold", "tree", show=False),
    Key("right", "unfold", "Unfold", "tree", show=False),
    Key("less_than_sign", "resize(4)", "Wider panel (or drag its left edge)", "tree", show=False),
    Key("greater_than_sign", "resize(-4)", "Narrower panel", "tree", show=False),
    Key("1", "filter_mode('default')", "Filter: default", "tree", show=False),
    Key("2", "filter_mode('no-tools')", "Filter: no tools", "tree", show=False),
    Key("3", "filter_mode('user-only')", "Filter: user only", "tree", show=False),
    Key("4", "filter_mode('labeled')", "Filter: labeled", "tree", show=False),
    Key("5", "filter_mode('all')", "Filter: all", "tree", show=False),
    # ---- transcript (letters act on a selected message only; without one they fall through)
    Key("up", "select(-1)", "Select previous message", "transcript", show=False),
    Key("down", "select(1)", "Select next message", "transcript", show=False),
    Key("home", "select_first", "First message of the branch", "transcript", show=False),
    Key("end", "select_last", "Last message of the branch", "transcript", show=False),
    Key("escape", "unselect", "Leave the selection", "transcript", show=False),
    Key("y", "copy", "Copy", "transcript"),
    Key("c", "copy_code", "Copy code (again: next block)", "transcript"),
    Key("e", "edit", "Edit & resend", "transcript"),
    Key("r", "retry", "Retry", "transcript"),
    Key("f", "fork", "Fork from here", "transcript"),
    Key("L", "label", "Label", "transcript"),
    Key("o", "open_subagent", "Open sub-agent", "transcript"),
    Key("enter", "open", "Open/close card, original, diff or skill", "transcript", show=False),
    Key("left_square_bracket", "sibling(-1)", "Prev sibling", "transcript", show=False),
    Key("right_square_bracket", "sibling(1)", "Next sibling", "transcript", show=False),
    Key("ctrl+o", "toggle_tools", "Expand tools", "transcript"),
    Key("ctrl+t", "toggle_thinking", "Show thinking", "transcript", show=False),
    # ---- queue tray
    Key("up", "cursor(-1)", "Up", "queue", show=False),
    Key("down", "cursor(1)", "Down", "queue", show=False),
    Key("x,delete", "drop", "Drop", "queue"),
    Key("alt+up", "pull_last", "Pull last back", "queue"),
    # ---- sessions screen
    Key("enter", "resume", "Resume", "sessions"),
    Key("ctrl+n,n", "new", "New", "sessions"),
    Key("f2,r", "rename", "Rename", "sessions"),
    Key("ctrl+d,d", "delete", "Delete", "sessions"),
    Key("escape", "close", "Close", "sessions"),
    # ---- search screen
    Key("enter", "choose", "Open hit", "search"),
    Key("escape", "close", "Close", "search"),
    # ---- compare view (one prompt, several models)
    Key("right,tab", "next", "Next reply", "compare", priority=True),
    Key("left,shift+tab", "previous", "Previous reply", "compare", priority=True),
    Key("enter", "choose", "Take this reply", "compare"),
    Key("escape", "close", "Close", "compare"),
)

_NAMES = {
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
    "slash": "/",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "escape": "Esc",
    "backspace": "Backspace",
    "delete": "Del",
    "enter": "Enter",
    "space": "Space",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "tab": "Tab",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "home": "Home",
    "end": "End",
}


def display_key(key: str) -> str:
    """A key name as people write it: ``ctrl+b,f2`` → ``Ctrl+B / F2``."""
    shown = []
    for one in key.split(","):
        parts = one.split("+")
        *mods, base = parts
        name = _NAMES.get(base, base.upper() if len(base) > 1 else base)
        if len(base) == 1 and mods:
            name = base.upper()
        shown.append("+".join([m.capitalize() for m in mods] + [name]))
    return " / ".join(shown)


def keys_for(context: str) -> list[Key]:
    return [k for k in KEYMAP if k.context == context]


def bindings_for(context: str) -> list[BindingType]:  # BINDINGS' own type, so a class can assign it
    """Textual ``Binding`` objects for a context; use as a widget's ``BINDINGS``."""
    return [
        Binding(
            k.key,
            k.action,
            k.description,
            show=k.show,
            priority=k.priority,
            key_display=display_key(k.key.split(",")[0]),
            id=f"{k.context}.{k.action}",
        )
        for k in keys_for(context)
    ]


def help_markdown(commands: Sequence[SlashCommand] = ()) -> str:
    """The whole keymap as Markdown tables, one per context, then the names of `commands` (the
    App's registered slash commands): the F1 screen and the README."""
    out = ["# Keys", ""]
    for context, title in CONTEXTS.items():
        rows = keys_for(context)
        if not rows:
            continue
        out += [f"## {title}", "", "| Key | Action |", "|---|---|"]
        out += [f"| {display_key(k.key).replace('|', '¦')} | {k.description} |" for k in rows]
        out.append("")
    if commands:
        out += [
            "## Slash commands",
            "",
            "Typed at the start of the composer: "
            + " ".join(f"`/{c.name}`" for c in commands)
            + ". Start a message with `//` to send a literal `/`.",
            "",
        ]
    return "\n".join(out)


def readme_section(commands: Sequence[SlashCommand] = ()) -> str:
    """The README's key section: the help text one heading level down."""
    return "\n".join("#" + line if line.startswith("#") else line for line in help_markdown(commands).splitlines())
