"""Each console screen's keys, footer labels, palette entries and gating come from its one command table
(`frontends/console/commands.py`): every key of the table is a binding with its label, every titled command is in
the palette while it applies, and a command whose `when` is false is refused by `check_action` and left out of the
palette. The screens are built without an app: the table's `when`s are swapped for constants, so what the screen
answers can only come from the table."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from textual.binding import Binding

from om2w_tui.frontends.console.app import ConsoleApp
from om2w_tui.frontends.console.commands import Command, CommandTable, palette_of
from om2w_tui.frontends.console.screens.dashboard import DashboardScreen
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.screens.label import LabelScreen
from om2w_tui.frontends.console.screens.launch_form import LaunchScreen
from om2w_tui.frontends.console.screens.quit import ConfirmQuit
from om2w_tui.frontends.console.screens.report import ReportScreen

BUILDERS: dict[type, Any] = {
    ConsoleApp: lambda tmp: ConsoleApp(None, last_launch=None),
    DashboardScreen: lambda tmp: DashboardScreen("demo", 3),
    EpisodeScreen: lambda tmp: EpisodeScreen(tmp, "task"),
    ReportScreen: lambda tmp: ReportScreen(tmp),
    LabelScreen: lambda tmp: LabelScreen(object(), renderer="unicode"),   # type: ignore[arg-type]
    LaunchScreen: lambda tmp: LaunchScreen({}),
    ConfirmQuit: lambda tmp: ConfirmQuit(1),
}
NODES = pytest.mark.parametrize("cls", list(BUILDERS), ids=lambda c: c.__name__)


def action_of(c: Command[Any]) -> tuple[str, tuple[object, ...]]:
    """What Textual hands `check_action` for the command's action."""
    _, name, args = c.parsed
    return name, args


def own(table: CommandTable[Any]) -> list[Command[Any]]:
    """The commands gated by the node itself (`app.quit` is gated by the app)."""
    return [c for c in table.commands if not c.parsed[0]]


@NODES
def test_the_bindings_are_the_tables_keys(cls):
    table = cls.COMMAND_TABLE
    assert all(isinstance(b, Binding) for b in cls.BINDINGS)
    got = [(b.key, b.action, b.description, b.id, b.show, b.priority, b.key_display) for b in cls.BINDINGS]
    assert got == [(c.key, c.action, c.label, c.id, c.show, c.priority, c.key_display)
                   for c in table.commands if c.key]
    # the merged map Textual binds from holds them too (nothing declared beside the table)
    merged = {(b.key, b.action) for bs in cls._merged_bindings.key_to_bindings.values() for b in bs}
    assert {(k.strip(), c.action) for c in table.commands if c.key for k in c.key.split(",")} <= merged


@NODES
def test_gating_and_palette_come_from_the_table(cls, tmp_path, monkeypatch):
    table = cls.COMMAND_TABLE
    for applies in (False, True):
        swapped = CommandTable(*(dataclasses.replace(c, when=lambda _, a=applies: a) for c in table.commands))
        monkeypatch.setattr(cls, "COMMAND_TABLE", swapped)
        node = BUILDERS[cls](tmp_path)
        for c in own(table):
            assert node.check_action(*action_of(c)) is applies, (c.action, applies)
        titles = [cmd.title for cmd in palette_of(node)]
        assert titles == ([c.title for c in table.commands if c.title] if applies else [])
    # what no table names is Textual's or a widget's: allowed
    assert node.check_action("no_such_action", ()) is True


@pytest.mark.parametrize("cls", [c for c in BUILDERS if any(k.title and k.key for k in own(c.COMMAND_TABLE))],
                         ids=lambda c: c.__name__)
def test_a_key_that_applies_is_offered_and_one_that_does_not_is_refused(cls, tmp_path, monkeypatch):
    table = cls.COMMAND_TABLE
    titled = [c for c in own(table) if c.title and c.key]
    off = titled[0]
    swapped = CommandTable(*(dataclasses.replace(c, when=lambda _, c=c: c is not off) for c in table.commands))
    monkeypatch.setattr(cls, "COMMAND_TABLE", swapped)
    node = BUILDERS[cls](tmp_path)
    titles = [cmd.title for cmd in palette_of(node)]
    assert node.check_action(*action_of(off)) is False and off.title not in titles
    for c in titled[1:]:
        assert node.check_action(*action_of(c)) is True and c.title in titles
        assert any(b.action == c.action and b.description == c.label for b in cls.BINDINGS)


def test_the_tables_rules():
    class Node:
        def __init__(self, ok: bool):
            self.ok = ok

        async def run_action(self, action: str) -> None:
            pass

    table: CommandTable[Any] = CommandTable(
        Command("left", "shot(-1)", "Prev", when=lambda n: n.ok),
        Command("right", "shot(1)", "Next"),
        Command("", "quit", "", "Quit", "detach", lambda n: n.ok),
        Command("", "quit", "", "Quit", "stop and quit", lambda n: not n.ok),
        Command("escape", "app.quit", "Quit", "Quit the app", when=lambda n: False),
        Command("ctrl+r", "check", "Check", id="check"),
    )
    yes, no = Node(True), Node(False)
    # an action is told apart by its arguments, as Textual hands them over
    assert table.check(no, "shot", (-1,)) is False and table.check(no, "shot", (1,)) is True
    # one action, several commands: allowed when one of them applies (`app.quit` is the app's to gate)
    assert table.check(yes, "quit", ()) is True and table.check(no, "quit", ()) is True
    # an argument that cannot be a key is none of ours
    assert table.check(no, "shot", ([1],)) is True
    assert [c.help for c in table.palette(yes)] == ["detach"]
    assert [c.help for c in table.palette(no)] == ["stop and quit"]
    assert table.gates(yes) == (True, True, False, False) and table.gates(no) == (False, False, True, False)
    assert [b.key for b in table.bindings()] == ["left", "right", "escape", "ctrl+r"]
    assert table.bindings()[0].tooltip == "" and table.keys_text("check", "shot(1)") == "ctrl+r: check   right: next"


def test_the_palette_runs_the_commands_action():
    ran: list[str] = []

    class Node:
        async def run_action(self, action: str) -> None:
            ran.append(action)

    table: CommandTable[Any] = CommandTable(Command("L", "label_tasks", "Label", "Label the episodes", "by hand"))
    (cmd,) = table.palette(Node())
    asyncio.run(cmd.callback())   # type: ignore[arg-type]
    assert ran == ["label_tasks"] and cmd.help == "by hand"
