"""`treechat doctor`: what the terminal can do that matters to the app (colours, keys, clipboard).

Everything here is read from the environment (and, inside tmux, two `tmux show` questions): a
terminal cannot be asked without taking over the screen, so the answers are "known", "likely"
or "unknown", each with what to do about it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from treechat.storage.json_types import JsonObject
from treechat.widgets.keymap import KEYMAP, display_key

from .report import Check, Status

TmuxAsk = Callable[[str], "str | None"]  # an option name → `tmux show -gv NAME`, None when tmux did not answer


@dataclass(frozen=True)
class Terminal:
    """The terminal emulator we think we run in, and what it is known to support."""

    name: str
    kitty_keys: bool | None  # the kitty keyboard protocol (Shift+Enter apart from Enter); None: unknown
    osc52: bool | None  # apps may set the system clipboard with OSC 52; None: unknown
    note: str = ""  # a setting the person may have to turn on


def identify(env: Mapping[str, str]) -> Terminal:
    """The emulator, from the variables each one sets (tmux hides the outer one's TERM)."""
    term = env.get("TERM", "")
    program = env.get("TERM_PROGRAM", "")
    if term == "xterm-kitty" or env.get("KITTY_WINDOW_ID"):
        return Terminal("kitty", True, True)
    if program == "WezTerm" or env.get("WEZTERM_PANE"):
        return Terminal("WezTerm", True, True)
    if program == "ghostty" or term == "xterm-ghostty" or env.get("GHOSTTY_RESOURCES_DIR"):
        return Terminal("Ghostty", True, True)
    if term.startswith("foot"):
        return Terminal("foot", True, True)
    if program == "iTerm.app":
        return Terminal("iTerm2", True, True, note="turn on Settings → Profiles → Keys → “Report keys using CSI u”, "
                                                   "and General → Selection → “Applications in terminal may access clipboard”")
    if term == "alacritty" or env.get("ALACRITTY_WINDOW_ID"):
        return Terminal("Alacritty", True, True)
    if program == "vscode":
        return Terminal("VS Code", False, True)
    if env.get("WT_SESSION"):
        return Terminal("Windows Terminal", False, True)
    if program == "Apple_Terminal":
        return Terminal("Terminal.app", False, False)
    if env.get("KONSOLE_VERSION"):
        return Terminal("Konsole", False, None)
    if env.get("VTE_VERSION"):
        return Terminal("a VTE terminal (GNOME Terminal, Tilix, …)", False, False)
    return Terminal(program or term or "unknown", None, None)


def ask_tmux(option: str) -> str | None:
    """`tmux show -gv OPTION` (the global value), bounded; None when tmux cannot be asked."""
    try:
        done = subprocess.run(["tmux", "show", "-gv", option], capture_output=True, text=True, timeout=2, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _key(action: str, context: str = "composer") -> str:
    """How the keymap writes the key for `action` (the doctor never spells keys itself)."""
    found = next((k for k in KEYMAP if k.action == action and k.context == context), None)
    return display_key(found.key) if found else action


def colour_check(env: Mapping[str, str]) -> Check:
    term, colorterm = env.get("TERM", ""), env.get("COLORTERM", "").lower()
    if "NO_COLOR" in env:
        return Check("terminal.colours", "colours", "warn", "NO_COLOR is set: the app draws without colour",
                     "unset NO_COLOR to see the theme", {"depth": "none"})
    if not term or term == "dumb":
        return Check("terminal.colours", "colours", "fail", f"TERM is {term or 'not set'}: not a terminal the app can draw on",
                     "run treechat in a terminal emulator (TERM=xterm-256color or better)", {"depth": "none"})
    if colorterm in ("truecolor", "24bit"):
        return Check("terminal.colours", "colours", "ok", f"24-bit colour (COLORTERM={colorterm})", data={"depth": "truecolor"})
    if "256color" in term or term.startswith(("xterm-kitty", "xterm-ghostty", "foot", "alacritty")):
        return Check("terminal.colours", "colours", "warn", f"256 colours (TERM={term}): theme colours are approximated",
                     "if the terminal does 24-bit colour, export COLORTERM=truecolor", {"depth": "256"})
    return Check("terminal.colours", "colours", "warn", f"16 colours (TERM={term})",
                 "use a terminal with 256 or 24-bit colour (export TERM=xterm-256color if it has them)", {"depth": "16"})


def keyboard_check(env: Mapping[str, str], terminal: Terminal, tmux_keys: str | None) -> Check:
    newline, queue = _key("newline"), _key("follow_up")
    fallback = f"if Shift+Enter sends instead of starting a new line, use {newline.split(' / ')[-1]}"
    data: JsonObject = {"terminal": terminal.name, "kitty_protocol": terminal.kitty_keys}
    if env.get("TMUX"):
        data["tmux_extended_keys"] = tmux_keys
        if tmux_keys not in ("on", "always"):
            how = "could not ask tmux" if tmux_keys is None else f"tmux extended-keys is {tmux_keys}"
            return Check("terminal.keys", "keys", "warn", f"{how}: Shift+Enter and {queue} may arrive as plain keys",
                         "tmux set -g extended-keys on; tmux set -as terminal-features 'xterm*:extkeys' "
                         f"(add both to ~/.tmux.conf); meanwhile {fallback}", data)
        return Check("terminal.keys", "keys", "ok", f"tmux extended-keys {tmux_keys}: modified keys reach the app", data=data)
    if terminal.kitty_keys:
        status: Status = "warn" if terminal.note else "ok"
        detail = f"{terminal.name}: the kitty keyboard protocol (Shift+Enter, {queue} arrive as themselves)"
        return Check("terminal.keys", "keys", status, detail, terminal.note or None, data)
    if terminal.kitty_keys is False:
        return Check("terminal.keys", "keys", "warn", f"{terminal.name} has no kitty keyboard protocol",
                     f"{fallback}; {queue} queues a follow-up", data)
    return Check("terminal.keys", "keys", "warn", f"terminal {terminal.name}: keyboard protocol unknown", fallback, data)


def clipboard_check(env: Mapping[str, str], terminal: Terminal, tmux_clipboard: str | None) -> Check:
    data: JsonObject = {"terminal": terminal.name, "osc52": terminal.osc52}
    select = "hold Shift (Option on macOS) while selecting with the mouse to use the terminal's own copy"
    if env.get("TMUX"):
        data["tmux_set_clipboard"] = tmux_clipboard
        if tmux_clipboard != "on":
            how = "could not ask tmux" if tmux_clipboard is None else f"tmux set-clipboard is {tmux_clipboard}"
            return Check("terminal.clipboard", "clipboard", "warn", f"{how}: copying may not reach the system clipboard",
                         "tmux set -g set-clipboard on (and add it to ~/.tmux.conf)", data)
        return Check("terminal.clipboard", "clipboard", "ok", "tmux set-clipboard on: OSC 52 copies pass through", data=data)
    if terminal.osc52:
        return Check("terminal.clipboard", "clipboard", "ok", f"OSC 52 copy likely works ({terminal.name})", data=data)
    if terminal.osc52 is False:
        return Check("terminal.clipboard", "clipboard", "warn", f"{terminal.name} ignores OSC 52: copying in the app "
                     "does not reach the system clipboard", select, data)
    return Check("terminal.clipboard", "clipboard", "info", "OSC 52 copy: unknown for this terminal",
                 f"if copying does nothing, {select}", data)


def encoding_check(encoding: str) -> Check:
    name = encoding.lower().replace("-", "").replace("_", "")
    if name in ("utf8", "cp65001"):
        return Check("terminal.encoding", "encoding", "ok", "UTF-8", data={"encoding": encoding})
    return Check("terminal.encoding", "encoding", "warn", f"{encoding}: tree lines and marks may show as ?",
                 "export LANG=C.UTF-8 (or your language's .UTF-8 locale)", {"encoding": encoding})


def terminal_checks(env: Mapping[str, str], *, encoding: str, tmux: TmuxAsk = ask_tmux) -> list[Check]:
    terminal = identify(env)
    in_tmux = bool(env.get("TMUX"))
    checks = [Check("terminal.emulator", "terminal", "info",
                    f"{terminal.name}" + (" inside tmux" if in_tmux else "") + f" (TERM={env.get('TERM', '')})",
                    data={"name": terminal.name, "tmux": in_tmux, "term": env.get("TERM"),
                          "term_program": env.get("TERM_PROGRAM")}),
              colour_check(env)]
    checks.append(keyboard_check(env, terminal, tmux("extended-keys") if in_tmux else None))
    checks.append(clipboard_check(env, terminal, tmux("set-clipboard") if in_tmux else None))
    checks.append(encoding_check(encoding))
    return checks
