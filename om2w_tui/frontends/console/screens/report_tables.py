"""Every table of a run's report on one screen (`t` on the report screen): `om2w-tui report --format table`'s
sections drawn as rich tables (`report_table.rich_table`), under the run's heading and notes."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from om2w_tui.evaluation.report_text import notes, sections, title
from om2w_tui.evaluation.summary import RunReport
from om2w_tui.frontends.console.report_table import rich_table
from om2w_tui.frontends.console.widgets.footer import LeanFooter


class ReportTables(Screen[None]):
    """Every table of the report (`om2w-tui report --format table`'s): each success measure under both rules per
    level and per site, the judge against the humans, the annotators, statuses, medians and errors."""

    BINDINGS = [Binding("escape,t", "back", "Back", id="tables-back")]
    DEFAULT_CSS = """
    ReportTables #tables-title { width: 1fr; height: 1; padding: 0 1; background: $panel; }
    ReportTables VerticalScroll { padding: 0 1; }
    ReportTables .tables-note { color: $text-muted; }
    ReportTables .tables-section { margin-bottom: 1; }
    """

    def __init__(self, summary: RunReport):
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        yield Label(Text(title(self.summary), style="bold"), id="tables-title")
        with VerticalScroll():
            for line in notes(self.summary):
                yield Static(Text(line), classes="tables-note")
            for heading, header, rows in sections(self.summary, site_limit=40):
                yield Static(rich_table(heading, header, rows), classes="tables-section")
        yield LeanFooter(compact=True)

    def action_back(self) -> None:
        self.dismiss()
