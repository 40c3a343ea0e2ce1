"""Welcome: what an empty session shows where the transcript will be.

How to send, steer and queue, the keys that open the tree, search, sessions, the palette and
help (their names come from ``keymap``, never written here), and which model answers — or, with
none, why and how to choose one.

Data in (from the App): ``set_model(model, problem=None, servers=())`` — ``model`` is the
"provider/id" in use or None; ``problem`` the sentence saying why nothing can be sent yet;
``servers`` the local servers found. The App shows the widget while the transcript is empty.
Until the first ``set_model`` (the first frame, drawn before the session opens) the model line
is left out rather than guessed.
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

    def set_model(self, model: str | None, problem: str | None = None, servers: tuple[str, ...] = ()) -> None:
        if not self.known or (model, problem, tuple(servers)) != (self.model, self.problem, self.servers):
            self.known = True
            self.model, self.problem, self.servers = model, problem, tuple(servers)
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
        for key, what in keys:
            parts += [("  " + key.ljust(width), "bold"), (what + "\n", muted)]
        parts.append("\n")
        parts += self._model_lines()
        return Content.assemble(*parts)

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
