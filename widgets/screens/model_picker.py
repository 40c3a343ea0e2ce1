"""ModelPicker (Ctrl+L): filter and choose a model, or type any ``provider/model-id``.

``ModelPicker(groups, current=None, choose=None)``:

- ``groups``: ``ModelGroup``s in the order shown (e.g. "Recent", then one per provider). A group
  with a ``problem`` (e.g. "no key: set OPENAI_API_KEY") says it once, on its header, and its
  rows are listed but cannot be chosen. A ``note`` (e.g. "did not list its models") is said on
  the header too, shown even with no rows, and blocks nothing. ``provider`` is the provider a
  group lists when its title says more ("openai · http://127.0.0.1:8080/v1").
- ``current``: the ref in use, marked ``●``.
- ``set_groups(groups)``: new rows while open (the filter stays).
- ``choose``: an async callable ``ref -> error or None``. The dialog calls it on Enter and stays
  open showing the error, or closes with the ref. Without it the dialog closes with the ref.
- ``compare``: an async callable ``refs -> error or None``: with it, Space marks (and unmarks) the
  highlighted model (``✓``), and Enter with models marked calls it with them (in the order marked)
  instead of ``choose``: one prompt to each (the hint line says so); it closes with None or stays
  open showing the error. Space is not typed into the filter then (model refs have no spaces).

Text typed in the filter that is a whole ``provider/model-id`` not in the list is offered as its
own row ("use …"), so a model the catalog does not know can be chosen too. Every row is one line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from treechat.text.sanitize import sanitize_line

from .base import Dialog

Choose = Callable[[str], Awaitable["str | None"]]
Compare = Callable[[list[str]], Awaitable["str | None"]]
_HINT = "Enter chooses · Esc closes"
_HINT_MARKS = "Enter chooses · Space marks models to send one prompt to each · Esc closes"


@dataclass(frozen=True)
class ModelChoice:
    ref: str  # "provider/model-id"
    detail: str = ""  # shown dim after the ref: "1M ctx · thinks · images"
    disabled: bool = False  # listed, cannot be chosen (e.g. a recent model whose provider lost its key)
    label: str = ""  # shown instead of the ref (a model named by a file path shows its file name)

    @property
    def shown(self) -> str:
        return self.label or self.ref


@dataclass(frozen=True)
class ModelGroup:
    title: str  # a provider's name, or "Recent"
    models: tuple[ModelChoice, ...]
    problem: str | None = None  # why none of these can be chosen now, said once on the header
    note: str | None = None  # said on the header (even with no rows); blocks nothing
    provider: str | None = None  # the provider listed, when the title is not just its name


def looks_like_ref(text: str) -> bool:
    provider, sep, model = text.strip().partition("/")
    return bool(sep and provider and model) and not any(c.isspace() for c in text.strip())


class _Filter(Input):
    """The filter box leaves Space to the picker's binding (it marks models)."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key != "space" and super().check_consume_key(key, character)


class ModelPicker(Dialog[str]):
    DEFAULT_CSS = """
    ModelPicker OptionList { text-wrap: nowrap; text-overflow: ellipsis; }
    ModelPicker #error { color: $error; display: none; margin-top: 1; }
    ModelPicker #error.-shown { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("space", "mark", "Mark", show=False, priority=True)]

    def __init__(self, groups: list[ModelGroup], current: str | None = None, choose: Choose | None = None,
                 compare: Compare | None = None) -> None:
        super().__init__()
        self.groups, self.current, self.choose, self.compare = list(groups), current, choose, compare
        self.marked: list[str] = []  # Space: the models one prompt goes to (in the order marked)
        self._refs: list[str | None] = []  # the ref of each row (None: a group header)
        self._rows: dict[int, tuple[ModelChoice, int]] = {}  # a model's row: what it shows, the column width
        self._typed_row = False  # row 0 is "use <typed ref>"
        self._busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Model", id="title")
            yield (_Filter if self.compare is not None else Input)(
                placeholder="type to filter, or a PROVIDER/MODEL-ID to use any model", id="filter")
            yield OptionList(id="models")
            yield Static("", id="error")
            yield Static(_HINT_MARKS if self.compare is not None else _HINT, id="hint", classes="hint")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#filter", Input).focus()
        self._fit(self.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """The list leaves room for the hint line below it (a terminal of 24 rows cut it off)."""
        if height:
            self.query_one("#models", OptionList).styles.max_height = max(3, min(24, int(height * 0.85) - 11))

    # ------------------------------------------------------------ the list

    def _fill(self, text: str) -> None:
        words = text.lower().split()
        typed = text.strip()
        options = self.query_one("#models", OptionList)
        options.clear_options()
        self._refs = []
        self._rows = {}
        listed = {m.ref for g in self.groups for m in g.models}
        self._typed_row = looks_like_ref(typed) and typed not in listed
        if self._typed_row:
            self._add(options, self._typed_label(typed), typed)
        shown = [(g, [m for m in g.models if all(w in f"{m.shown} {m.ref}".lower() for w in words)])
                 for g in self.groups]
        width = min(max((len(m.shown) for _, rows in shown for m in rows), default=0), 48) + 2
        for group, rows in shown:
            if not rows and (words or not group.note):
                continue
            said = group.problem or group.note
            head = Content.assemble((sanitize_line(group.title, 60), "bold"),
                                    (f" · {sanitize_line(said, 90)}", "italic") if said else "")
            self._add(options, head, None)
            for model in rows:
                self._rows[len(self._refs)] = (model, width)
                self._add(options, self._label(model, width), model.ref, disabled=bool(group.problem) or model.disabled)
        options.highlighted = self._best(typed)

    def _typed_label(self, typed: str) -> Content:
        mark = "✓ " if typed in self.marked else ""
        return Content.assemble(mark, ("↵ use ", "bold"), sanitize_line(typed, 80), (" (not in the list)", "dim"))

    def _label(self, model: ModelChoice, width: int) -> Content:
        mark = "✓ " if model.ref in self.marked else "● " if model.ref == self.current else "  "
        ref = sanitize_line(model.shown, 80)
        return Content.assemble(f"  {mark}", (ref, "bold") if model.ref == self.current else ref,
                                " " * max(width - len(ref), 2), (sanitize_line(model.detail, 40), "dim"))

    def set_groups(self, groups: list[ModelGroup]) -> None:
        """New rows (a local server started since the dialog opened), the filter kept."""
        self.groups = list(groups)
        if self.is_mounted:
            self._refill()

    def _refill(self) -> None:
        """The rows again, the filter kept and the highlight on the same model."""
        options = self.query_one("#models", OptionList)
        index = options.highlighted
        held = self._refs[index] if index is not None and index < len(self._refs) else None
        self._fill(self.query_one("#filter", Input).value)
        if held is not None and held in self._refs:
            options.highlighted = self._refs.index(held)

    def _add(self, options: OptionList, prompt: Content, ref: str | None, *, disabled: bool = False) -> None:
        options.add_option(Option(prompt, id=str(len(self._refs)), disabled=disabled or ref is None))
        self._refs.append(ref)

    def _best(self, typed: str) -> int | None:
        """The row Enter takes: the exact ref typed, else the current model (nothing typed), else
        the first model listed, else the typed ref's own row."""
        options = self.query_one("#models", OptionList)
        enabled = [i for i, ref in enumerate(self._refs) if ref is not None and not options.get_option_at_index(i).disabled]
        listed = [i for i in enabled if not (i == 0 and self._typed_row)]
        for wanted in (typed, None if typed else self.current):
            hit = next((i for i in listed if wanted and self._refs[i] == wanted), None)
            if hit is not None:
                return hit
        found = listed or enabled
        return found[0] if found else None

    # ------------------------------------------------------------ choosing

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show_error(None)
        self._fill(event.value)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.marked:
            await self._take(None)  # to each model marked
            return
        problem = self._provider_problem(event.value.strip())
        if problem:  # a listed model of that provider is greyed out; a typed one would fail the same way
            self._show_error(problem)
            return
        options = self.query_one("#models", OptionList)
        if options.highlighted is not None and not options.get_option_at_index(options.highlighted).disabled:
            await self._take(self._refs[options.highlighted])
        elif event.value.strip():
            self._show_error(f"No model matches {event.value.strip()!r}; type PROVIDER/MODEL-ID to use any model.")

    def _provider_problem(self, typed: str) -> str | None:
        """Why a typed PROVIDER/MODEL-ID cannot be used now (its provider has no key…), said as
        the provider's header says it; None when nothing is known against it."""
        if not looks_like_ref(typed):
            return None
        provider = typed.partition("/")[0]
        group = next((g for g in self.groups if (g.provider or g.title) == provider and g.problem), None)
        return f"{provider}: {group.problem}" if group is not None else None

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        await self._take(self._refs[event.option_index])

    def action_mark(self) -> None:
        """Space: mark the highlighted model (or unmark it); without `compare` a space is typed."""
        if self.compare is None:
            self.query_one("#filter", Input).insert_text_at_cursor(" ")
            return
        options = self.query_one("#models", OptionList)
        index = options.highlighted
        if index is None or options.get_option_at_index(index).disabled or self._refs[index] is None:
            return
        ref = self._refs[index]
        assert ref is not None
        if ref in self.marked:
            self.marked.remove(ref)
        else:
            self.marked.append(ref)
        if index in self._rows:  # (its row redrawn in place: the list stays as it is under fast keys)
            options.replace_option_prompt_at_index(index, self._label(*self._rows[index]))
        elif index == 0 and self._typed_row:
            options.replace_option_prompt_at_index(index, self._typed_label(ref))
        count = len(self.marked)
        self.query_one("#hint", Static).update(
            f"{count} marked · Enter sends the message typed (or the next one) to each · Space unmarks · Esc closes"
            if count else _HINT_MARKS)

    async def _take(self, ref: str | None) -> None:
        if self.marked and self.compare is not None and not self._busy:
            self._busy = True
            try:
                error = await self.compare(list(self.marked))
            finally:
                self._busy = False
            if error:
                self._show_error(error)
            else:
                self.dismiss(None)
            return
        if ref is None or self._busy:
            return
        if self.choose is None:
            self.dismiss(ref)
            return
        self._busy = True  # a second Enter while the first is being checked chooses nothing twice
        try:
            error = await self.choose(ref)
        finally:
            self._busy = False
        if error:
            self._show_error(error)
        else:
            self.dismiss(ref)

    def _show_error(self, text: str | None) -> None:
        box = self.query_one("#error", Static)
        box.update(Content(sanitize_line(text or "", 300)))
        box.set_class(bool(text), "-shown")

    def on_key(self, event: events.Key) -> None:
        self.steer_list_from_input(event, self.query_one("#models", OptionList))
