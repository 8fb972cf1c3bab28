"""The question asked before quitting while episodes run."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from om2w_tui.frontends.console.commands import Command, CommandTable


class ConfirmQuit(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmQuit { align: center middle; }
    ConfirmQuit #quit-dialog {
        width: 64; max-width: 95%; height: auto; padding: 1 2;
        border: thick $error; background: $surface;
    }
    ConfirmQuit #quit-title { text-style: bold; margin-bottom: 1; }
    ConfirmQuit #quit-buttons { height: auto; margin-top: 1; align-horizontal: right; }
    ConfirmQuit Button { margin-left: 2; }
    """
    COMMAND_TABLE: ClassVar[CommandTable[ConfirmQuit]] = CommandTable(
        Command("y", "answer(True)", "Stop and quit", id="quit-yes"),
        Command("n,escape", "answer(False)", "Cancel", id="quit-no"),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, running: int):
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        n = self.running
        with Vertical(id="quit-dialog"):
            yield Label("Stop the run and quit?", id="quit-title")
            yield Static(f"{n} episode{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} running. "
                         "They stop now, keep every finished step, and run again the next time you run "
                         "this folder.")
            with Horizontal(id="quit-buttons"):
                yield Button("Cancel", id="quit-cancel")
                yield Button("Stop and quit", variant="error", id="quit-confirm")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def on_mount(self) -> None:
        self.query_one("#quit-confirm", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit-confirm")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
