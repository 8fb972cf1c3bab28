"""The comparison screen of a campaign (`c` on the dashboard): the comparison panel (`widgets/comparison.py`),
brought up to date once a second from the dashboard's `CampaignBoard` (which the engine's events keep filling while
this screen is shown); `escape` or `c` goes back."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Label

from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.widgets.comparison import ComparisonPanel
from om2w_tui.frontends.console.widgets.footer import LeanFooter

REFRESH_S = 1.0


class ComparisonScreen(Screen[None]):
    DEFAULT_CSS = """
    ComparisonScreen #compare-title { width: 1fr; background: $panel; text-style: bold; padding: 0 1; }
    ComparisonScreen #compare-body { height: 1fr; border: round $primary; overflow: auto auto; }
    """
    COMMAND_TABLE: ClassVar[CommandTable[ComparisonScreen]] = CommandTable(
        Command("escape,c,backspace", "back", "Back", id="compare-back", key_display="esc"),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, board: CampaignBoard, title: str = ""):
        super().__init__()
        self.board = board
        self._title = title

    def compose(self) -> ComposeResult:
        yield Label(f"Comparison of the arms · {self._title}" if self._title else "Comparison of the arms",
                    id="compare-title")
        with ScrollableContainer(id="compare-body"):   # a narrow terminal scrolls the tables sideways
            yield ComparisonPanel(id="comparison")
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self.refresh_panel()
        self.set_interval(REFRESH_S, self.refresh_panel)

    def refresh_panel(self) -> None:
        try:   # closed before its first drawing (a key pressed twice): its widgets are gone, nothing to draw
            body, panel = self.query_one("#compare-body"), self.query_one(ComparisonPanel)
        except NoMatches:
            return
        c = self.board.comparison()
        body.border_title = "Arms"
        body.border_subtitle = f"{len(c.arms)} lanes" if c.arms else ""
        panel.show(c)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def action_back(self) -> None:
        self.dismiss()
