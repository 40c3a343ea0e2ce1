"""Welcome: what an empty session shows where the transcript will be.

How to send, steer and queue, which tools the model has (and that they ask first, how to change
them), the keys that open the tree, search, sessions, the palette and help (their names come from
``keymap``, never written here), and which model answers — or, with none, why and how to choose one.

Data in (from the App): ``set_model(model, problem=None, servers=())`` — ``model`` is the
"provider/id" in use or None; ``problem`` the sentence saying why nothing can be sent yet;
``servers`` the local servers found; ``set_tools(builtin, others)`` — the built-in tools the next
request carries, by name, and how many others (MCP servers') it does.
The App shows the widget while the transcript is empty. Until the first ``set_model`` /
``set_tools`` (the first frame, drawn before the session opens) their lines are left out rather
than guessed.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from treechat.text.sanitize import sanitize_line

from ..keymap import KEYMAP, display_key


def key_name(action: str, context: str = "global") -> str:
    """The first key bound to `action` in `context`, as people write it ("Ctrl+B")."""
    for key in KEYMAP:
        if key.action == action and key.context == context:
            return display_key(key.key.split(",")[0])
    raise KeyError(f"no key for {context}.{action}")


class Welcome(Widget):
    DEFAULT_CSS = """
    Welcome { display: none; height: 1fr; padding: 1 2; overflow-y: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.model: str | None = None
        self.problem: str | None = None
        self.servers: tuple[str, ...] = ()
        self.known = False  # set_model was called
        self.tools: tuple[str, ...] | None = None  # the built-in tools on (None: not told yet)
        self.other_tools = 0

    def set_model(self, model: str | None, problem: str | None = None, servers: tuple[str, ...] = ()) -> None:
        if not self.known or (model, problem, tuple(servers)) != (self.model, self.problem, self.servers):
            self.known = True
            self.model, self.problem, self.servers = model, problem, tuple(servers)
            self.refresh(layout=True)

    def set_tools(self, builtin: tuple[str, ...], others: int = 0) -> None:
        if (tuple(builtin), others) != (self.tools, self.other_tools):
            self.tools, self.other_tools = tuple(builtin), others
            self.refresh(layout=True)

    def render(self) -> Content:
        accent, muted = "bold $accent", "dim"
        send, follow, tab = key_name("submit", "composer"), key_name("follow_up", "composer"), key_name("tab_follow_up", "composer")
        stop = key_name("stop")
        keys = [
            (key_name("toggle_tree"), "the tree: every branch, go back anywhere"),
            (key_name("search"), "search everything ever said"),
            (key_name("sessions"), "sessions: resume, rename, fork"),
            (key_name("command_palette"), "every command (or type / here)"),
            (key_name("help"), "all keys"),
        ]
        width = max(len(k) for k, _ in keys) + 2
        parts: list[str | tuple[str, str] | Content] = [
            ("Start a conversation", accent), "\n\n",
            "Type below and press ", (send, "bold"), " to send. While a reply runs, ", (send, "bold"),
            " steers it, ", (tab, "bold"), " or ", (follow, "bold"), " queues a follow-up and ", (stop, "bold"),
            " stops it.\n\n",
        ]
        # what to know before the first message (which model; what it can do) before the keys:
        # at 80x24 the list of keys is what scrolls out of view
        model = self._model_lines()
        parts += [*model, "\n\n"] if model else []
        parts += self._tool_lines()
        for key, what in keys:
            parts += [("  " + key.ljust(width), "bold"), (what + "\n", muted)]
        return Content.assemble(*parts)

    def _tool_lines(self) -> list[str | tuple[str, str] | Content]:
        if self.tools is None:
            return []
        others = self.other_tools
        if not self.tools and not others:
            return [("No tools: ", "bold $warning"), "the model cannot look at files or run commands. ",
                    ("/tools", "bold"), " turns them on (or ", ("tools", "bold"), " in config.toml).\n\n"]
        mcp = f"{others} MCP tool{'s' if others != 1 else ''}" if others else ""
        listed = ", ".join(x for x in (", ".join(self.tools), mcp) if x)
        return ["Tools on: ", (sanitize_line(listed, 200), "bold"), "; commands and edits ask first.\n",
                ("/tools to change them · tools = [] in config.toml turns them off\n\n", "dim")]

    def _model_lines(self) -> list[str | tuple[str, str] | Content]:
        if not self.known:
            return []
        pick, thinking = key_name("model"), key_name("thinking")
        if self.problem or not self.model:
            problem = self.problem or f"No model chosen: press {pick} to pick one."
            lines: list[str | tuple[str, str] | Content] = [("⚠ ", "bold $warning"), Content(sanitize_line(problem, 400))]
            if self.servers:
                found = ", ".join(sanitize_line(s, 40) for s in self.servers)
                lines += ["\nFound on this machine: ", (found, "bold"), f" ({pick} lists its models)."]
            return lines
        return ["Model: ", (sanitize_line(self.model, 80), "bold"), (f" · {pick} to change · {thinking} thinking", "dim")]
