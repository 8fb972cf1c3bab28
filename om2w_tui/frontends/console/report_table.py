"""`om2w-tui report --format table`: the report's sections as rich tables (a front end: the engine has no rich), one
`rich_table` per section, which the console's tables screen (`screens/report_tables.py`) draws too."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from om2w_tui.evaluation.report_text import compare_sections, notes, sections, title
from om2w_tui.evaluation.summary import Comparison, RunReport

UNBOUNDED = 100_000   # a file's or a pipe's width: a table is as wide as its rows, never wrapped at 80 columns
RULE_WIDTH = 100      # a heading's rule where the output has no width of its own


def printed_console() -> Console:
    """Where printed tables go: a terminal at its width; a file or a pipe (`report > file`) with no width to wrap at
    (rich would take 80 columns there and fold every wide table)."""
    return Console() if sys.stdout.isatty() else Console(width=UNBOUNDED)


def rule(console: Console, title: str) -> None:
    """A heading's rule: across a terminal, a fixed width elsewhere (never UNBOUNDED dashes)."""
    console.print(Rule(title), width=min(console.width, RULE_WIDTH))


def rich_table(heading: str | None, header: list[str], rows: list[list[str]]) -> Table:
    """One section of the report as a rich table: printed here, drawn on the console's tables screen."""
    t = Table(title=heading, title_justify="left", show_edge=False, min_width=40)
    for h in header:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def _print_sections(console: Console, parts: list[tuple[str, list[str], list[list[str]]]]) -> None:
    for heading, header, rows in parts:   # the heading on a line of its own: a title is folded at its table's width
        console.print(Text(heading, style="table.title"))
        console.print(rich_table(None, header, rows))


def print_table(summaries: list[RunReport], comparison: Comparison | None, console: Any = None) -> None:
    console = console or printed_console()
    for s in summaries:
        rule(console, f"[bold]{title(s)}")
        for n in notes(s):
            console.print(f"  {n}", highlight=False, markup=False)
        _print_sections(console, sections(s, site_limit=25))
    if comparison is not None:
        rule(console, "[bold]comparison")
        _print_sections(console, compare_sections(comparison))
