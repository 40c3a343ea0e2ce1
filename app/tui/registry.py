"""The slash-command registry: `@command(...)` on a feature's method makes it a command.

The decorator says everything about a command once, beside the code that does it: its name,
what the palette shows, its argument hint, its help line, the key that does the same, and how
its arguments complete on Tab. The App's class lists its features (`command_sources()`, in the
order F1, `/help` and README list them) and `slash_commands` collects their commands, after the
App class's own (a test's App adds one), so the composer's `/` completion, the palette, F1,
`/help`'s list and README's table (`python -m treechat.docs`) all read the same rows, and a
command is dispatched by its registration, never by a method name made up at run time.

    class Labels:  # a feature of the App (app/tui/labels/)
        @command("label", title="Label the current entry", args="[TEXT]", help="a label on the leaf")
        async def cmd_label(self, args: str) -> None: ...

The table is read from the classes, with no App made (README's generation, tests); the features'
modules load when it is first read (after the first frame: app/tui/startup/). Textual-free: the
rows are the widgets' `SlashCommand`, handed to them as data; what Tab offers for arguments is
asked of the controller.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, overload

from treechat.widgets.commands import SlashCommand

if TYPE_CHECKING:  # (the App's modules load before the controller: app/tui/startup/)
    from treechat.chat import Chat

F = TypeVar("F")
_MARK = "__treechat_command__"
_order = itertools.count()  # definition order, within a feature: the order help and README list them in

# What Tab offers for a command's arguments, asked of the controller when Tab is pressed (servers,
# skills and levels change while the app runs): whole argument texts ("here", "restart fs"), of
# which those starting with what is typed after "/name " are offered.
ArgumentChoices = Callable[["Chat"], Iterable[str]]
Handler = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class _Registration:
    row: SlashCommand
    complete: ArgumentChoices | None
    order: int


@dataclass(frozen=True)
class Command:
    """A registered command: its row, the class whose method runs it, and what Tab offers."""

    row: SlashCommand
    owner: type  # the feature (or the App class) that registered it
    method: str  # the name of its method there
    complete: ArgumentChoices | None

    @property
    def name(self) -> str:
        return self.row.name

    def bound(self, target: object) -> Handler:
        """The handler on `target` (an instance of `owner`)."""
        if not isinstance(target, self.owner):
            raise TypeError(f"/{self.name} is {self.owner.__name__}'s, not {type(target).__name__}'s")
        handler: Handler = getattr(target, self.method)
        return handler


def command(name: str, *, title: str, help: str, args: str = "", key: str = "",
            complete: ArgumentChoices | None = None) -> Callable[[F], F]:
    """Make the decorated `async def handler(self, args: str)` the command `/name`. `complete`
    answers the whole argument texts Tab offers after `/name ` (those that start with what is
    typed); without it Tab completes the name only."""
    registration = _Registration(SlashCommand(name, title, args, help, key), complete, next(_order))

    def register(handler: F) -> F:
        setattr(handler, _MARK, registration)
        return handler

    return register


def registered(classes: Iterable[type]) -> dict[str, Command]:
    """The commands registered on `classes`, by name, listed class by class in the order given,
    each class's in the order it defines them; of two of the same name the first stays (a
    subclass's, given before its base, replaces the base's)."""
    found: dict[str, Command] = {}
    for klass in classes:
        own: list[tuple[int, Command]] = []
        for attr, value in vars(klass).items():
            mark = getattr(value, _MARK, None)
            if isinstance(mark, _Registration):
                own.append((mark.order, Command(mark.row, klass, attr, mark.complete)))
        for _, cmd in sorted(own, key=lambda pair: pair[0]):
            found.setdefault(cmd.name, cmd)
    return found


class CommandSources(Protocol):
    @classmethod
    def command_sources(cls) -> Sequence[type]:
        """The feature classes whose commands the App has, in the order they are listed."""
        ...


class SlashCommands:
    """`App.slash_commands` (on the class or an App): every command the App class and its
    subclasses define (a test's App), then every command of its features, collected on first read."""

    def __init__(self) -> None:
        self._tables: dict[type, dict[str, Command]] = {}

    @overload
    def __get__(self, app: None, owner: type[CommandSources]) -> dict[str, Command]: ...
    @overload
    def __get__(self, app: CommandSources, owner: type[CommandSources]) -> dict[str, Command]: ...

    def __get__(self, app: CommandSources | None, owner: type[CommandSources]) -> dict[str, Command]:
        table = self._tables.get(owner)
        if table is None:
            mro = owner.__mro__
            base = next(k for k in mro if "command_sources" in vars(k))  # the App class that lists them
            apps = mro[: mro.index(base) + 1]  # `owner`, then each base up to the App class
            table = self._tables[owner] = registered([*apps, *owner.command_sources()])
        return table
