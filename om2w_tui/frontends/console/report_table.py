"""`om2w-tui report --format table`: the report's sections as rich tables (a front end: the engine has no rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from om2w_tui.evaluation.report import _notes, _title, compare_sections, sections


def _print_sections(console: Console, parts: list[tuple[str, list[str], list[list[str]]]]) -> None:
    for title, header, rows in parts:
        t = Table(title=title, title_justify="left", show_edge=False, min_width=40)
        for h in header:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*r)
        console.print(t)


def print_table(summaries: list[dict[str, Any]], comparison: dict[str, Any] | None, console: Any = None) -> None:
    console = console or Console()
    for s in summaries:
        console.rule(f"[bold]{_title(s)}")
        for n in _notes(s):
            console.print(f"  {n}", highlight=False, markup=False)
        _print_sections(console, sections(s, site_limit=25))
    if comparison:
        console.rule("[bold]comparison")
        _print_sections(console, compare_sections(comparison))
