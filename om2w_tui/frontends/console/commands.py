"""A screen's key commands declared once: each `Command` says its key, its action, its footer label, its title and
help in the command palette, and when it applies; the screen's `CommandTable` gives Textual its `BINDINGS`, answers
its `check_action` and lists its palette entries, so a key, the footer, the palette and the gating cannot drift
apart (Harlequin's one action registry, with Textual's own `Binding` and `SystemCommand` underneath).

Adding a key to a screen is one line in its `COMMAND_TABLE` (and the `action_` method it runs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

from textual.actions import parse
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.widget import Widget

# what a table's commands run on and are asked of: a screen (a widget) or the app
S = TypeVar("S", bound="Widget | App[Any]")


@dataclass(frozen=True)
class Command(Generic[S]):
    """One command of a screen (or of the app).

    key: Textual's key names, comma-separated ("" for a command offered only in the palette). action: the action
    it runs, with its arguments as Textual writes them (`shot(-1)`). label: the footer's word for it. title, help:
    its entry in the command palette (no title: not in the palette). when: whether it applies now, asked of the
    screen (None: always); a command that does not apply is refused by `check_action` and left out of the palette.
    id, key_display, show, priority: as Textual's `Binding` has them (show: in the footer). An action on another
    node (`app.quit`) is gated by that node's `check_action`; its `when` gates the palette only."""

    key: str
    action: str
    label: str = ""
    title: str = ""
    help: str = ""
    when: Callable[[S], bool] | None = None
    id: str | None = None
    key_display: str | None = None
    show: bool = True
    priority: bool = False
    # the action's namespace ("" for the node's own), name and arguments as Textual hands them to check_action
    parsed: tuple[str, str, tuple[object, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parsed", parse(self.action))

    def applies(self, node: S) -> bool:
        return self.when is None or self.when(node)

    def binding(self) -> Binding:
        return Binding(self.key, self.action, self.label, show=self.show, key_display=self.key_display,
                       priority=self.priority, tooltip=self.help, id=self.id)


class CommandTable(Generic[S]):
    """A screen's commands, in the footer's order (the palette lists them in the same order)."""

    def __init__(self, *commands: Command[S]):
        self.commands = commands
        self._by_action: dict[tuple[str, tuple[object, ...]], list[Command[S]]] = {}
        for c in commands:
            namespace, name, args = c.parsed
            if not namespace:
                self._by_action.setdefault((name, args), []).append(c)

    def bindings(self) -> list[BindingType]:
        """The screen's `BINDINGS`: every command that has a key."""
        return [c.binding() for c in self.commands if c.key]

    def check(self, node: S, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The screen's `check_action`: an action of the table is allowed when one of its commands applies; an
        action it does not name (Textual's own, a widget's) is allowed."""
        try:
            found = self._by_action.get((action, parameters))
        except TypeError:    # an argument that cannot be a key (a list): not one of ours
            return True
        if found is None:
            return True
        return any(c.applies(node) for c in found)

    def gates(self, node: S) -> tuple[bool, ...]:
        """Whether each command applies now: a screen rebuilds its footer only when this changed."""
        return tuple(c.applies(node) for c in self.commands if c.when is not None)

    def palette(self, node: S) -> Iterator[SystemCommand]:
        """The palette's entries that apply now, each running its action on `node`."""
        for c in self.commands:
            if c.title and c.applies(node):
                yield SystemCommand(c.title, c.help, partial(node.run_action, c.action))

    def keys_text(self, *actions: str) -> str:
        """`ctrl+r: check   ctrl+s: launch`: the keys of `actions` with their labels, for a hint on the screen."""
        by_action = {c.action: c for c in self.commands}
        return "   ".join(f"{by_action[a].key_display or by_action[a].key}: {by_action[a].label.lower()}"
                           for a in actions)


def palette_of(node: object) -> Iterator[SystemCommand]:
    """The palette's entries of a screen that has a `COMMAND_TABLE` (none for one that has not)."""
    table = getattr(node, "COMMAND_TABLE", None)
    if isinstance(table, CommandTable):
        yield from table.palette(node)
