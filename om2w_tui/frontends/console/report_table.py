"""`om2w-tui report --format table`: the report's sections as rich tables (a front end: the engine has no rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from om2w_tui.evaluation.report_text import compare_sections, notes, sections, title
from om2w_tui.evaluation.summary import Comparison, RunReport


def _print_sections(console: Console, parts: list[tuple[str, list[str], list[list[str]]]]) -> None:
    for heading, header, rows in parts:
        t = Table(title=heading, title_justify="left", show_edge=False, min_width=40)
        for h in header:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*r)
        console.print(t)


def print_table(summaries: list[RunReport], comparison: Comparison | None, console: Any = None) -> None:
    console = console or Console()
    for s in summaries:
        console.rule(f"[bold]{title(s)}")
        for n in notes(s):
            console.print(f"  {n}", highlight=False, markup=False)
        _print_sections(console, sections(s, site_limit=25))
    if comparison is not None:
        console.rule("[bold]comparison")
        _print_sections(console, compare_sections(comparison))
