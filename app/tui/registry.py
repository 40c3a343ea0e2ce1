"""The slash-command registry: `@command(...)` on a handler makes it a command.

The decorator says everything about a command once, beside the code that does it: its name,
what the palette shows, its argument hint, its help line, the key that does the same, and how
its arguments complete on Tab. The App's class collects the commands of every feature it is
made of (`CommandHost.__init_subclass__`), so the composer's `/` completion, the palette, F1,
`/help`'s list and README's table (`python -m treechat.docs`) all read the same rows, and a
command is dispatched by its registration, never by a method name made up at run time.

    class Labels(TuiBase):  # (TuiBase is a CommandHost)
        @command("label", title="Label the current entry", args="[TEXT]", help="a label on the leaf")
        async def cmd_label(self, args: str) -> None: ...

A subclass sees its bases' commands and may add its own (a test's App does); a command
registered on one App class is not on another. Textual-free: the rows are the widgets'
`SlashCommand`, handed to them as data; what Tab offers for arguments is asked of the controller.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from treechat.widgets.commands import SlashCommand

if TYPE_CHECKING:  # (the App's modules load before the controller: app/tui/starting.py)
    from treechat.chat import Chat

H = TypeVar("H", bound="CommandHost")
_MARK = "__treechat_command__"
_order = itertools.count()  # definition order, within a feature: the order help and README list them in

# What Tab offers for a command's arguments, asked of the controller when Tab is pressed (servers,
# skills and levels change while the app runs): whole argument texts ("here", "restart fs"), of
# which those starting with what is typed after "/name " are offered.
ArgumentChoices = Callable[["Chat"], Iterable[str]]


@dataclass(frozen=True)
class Command:
    row: SlashCommand
    handler: Callable[..., Awaitable[None]]  # (the App it is a method of, args): typed at `command`
    complete: ArgumentChoices | None
    order: int

    @property
    def name(self) -> str:
        return self.row.name


class _Register:
    def __init__(self, row: SlashCommand, complete: ArgumentChoices | None) -> None:
        self.row, self.complete = row, complete

    def __call__(self, handler: Callable[[H, str], Awaitable[None]]) -> Callable[[H, str], Awaitable[None]]:
        setattr(handler, _MARK, Command(self.row, handler, self.complete, next(_order)))
        return handler


def command(name: str, *, title: str, help: str, args: str = "", key: str = "",
            complete: ArgumentChoices | None = None) -> _Register:
    """Make the decorated `async def handler(self, args: str)` the command `/name`. `complete`
    answers the whole argument texts Tab offers after `/name ` (those that start with what is
    typed); without it Tab completes the name only."""
    return _Register(SlashCommand(name, title, args, help, key), complete)


class CommandHost:
    """A base of the App and of each feature that has commands: the class's `slash_commands` are every
    command registered on it and its bases, by name; listed (F1, README, the palette) by feature in
    the order of the class's bases (its method resolution order), then as each feature defines them."""

    slash_commands: ClassVar[dict[str, Command]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, tuple[int, Command]] = {}
        for place, klass in reversed(list(enumerate(cls.__mro__))):
            for value in vars(klass).values():
                registered = getattr(value, _MARK, None)
                if isinstance(registered, Command):
                    found[registered.name] = (place, registered)  # a subclass's own wins over a base's
        # listed feature by feature as the App names its bases, each feature's in its own order
        ordered = sorted(found.values(), key=lambda pair: (pair[0], pair[1].order))
        cls.slash_commands = {c.name: c for _, c in ordered}

    @classmethod
    def command_table(cls) -> list[SlashCommand]:
        """The built-in commands' rows (F1, `/help`, README, the palette)."""
        return [c.row for c in cls.slash_commands.values()]

    async def dispatch_command(self, name: str, args: str) -> None:
        """Run the registered command `name` (the caller checked it is one)."""
        await self.slash_commands[name].handler(self, args)

    def argument_choices(self, name: str, chat: Chat) -> list[str]:
        """What Tab offers after `/name `: the command's own choices, asked now."""
        registered = self.slash_commands.get(name)
        if registered is None or registered.complete is None:
            return []
        return list(dict.fromkeys(registered.complete(chat)))
