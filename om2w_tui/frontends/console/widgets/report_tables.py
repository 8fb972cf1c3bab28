"""The report screen's tables, kept by difference like every table of the console (`KeyedTable`): the tasks that did
not succeed (`FailuresTable`, with why) and the errors grouped by status, kind and message (`ErrorsTable`), their
text columns sharing the width the terminal leaves (`FittedTable`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from om2w_tui.evaluation.summary import ErrorGroup
from om2w_tui.frontends.answer import shown_answer
from om2w_tui.frontends.console.report_data import Failure
from om2w_tui.frontends.console.widgets.keyed_table import Col, KeyedTable
from om2w_tui.frontends.console.widgets.panels import STATUS_STYLE, styled
from om2w_tui.frontends.formatting import clip


class FittedTable(KeyedTable):
    """A KeyedTable whose FLEX columns share, by weight, the width the other columns leave (never narrower than
    their own width): the text columns use a terminal of any width."""

    FLEX: dict[str, int] = {}
    SCROLLBAR = 2

    def __init__(self, **kw: Any):
        self._fitted: dict[str, int] = {}
        super().__init__(**kw)

    def width_of(self, key: str) -> int:
        return self._fitted.get(key) or super().width_of(key)

    def fit(self, width: int) -> bool:
        """Share `width` (the table's inside) out; -> whether the table was rebuilt (its rows must be synced)."""
        if width <= 0:
            return False
        fixed = sum(super(FittedTable, self).width_of(c.key) for c in self.COLUMNS if c.key not in self.FLEX)
        free = width - fixed - 2 * len(self.COLUMNS) - self.SCROLLBAR     # each cell has a column of padding each side
        weights = sum(self.FLEX.values())
        widths = {k: max(super(FittedTable, self).width_of(k), free * w // weights) for k, w in self.FLEX.items()}
        if widths == self._fitted:
            return False
        kept = self.cursor_key()
        self._fitted = widths
        self.clear(columns=True)
        self._cells.clear()
        self._add_columns()
        self._keep_cursor = kept
        return True

    def set_wide(self, wide: bool) -> bool:
        if wide != self.wide:
            self._fitted = {}      # fitted again next
        return super().set_wide(wide)


class FailuresTable(FittedTable):
    """The tasks that did not succeed, by task id, with why (their failure class)."""

    COLUMNS = (Col("task", "task", 22, 34), Col("ok", "ok", 2), Col("status", "status", 7, 12),
               Col("why", "why", 10, 14), Col("error", "error", 16), Col("answer", "answer", 18))
    FLEX = {"error": 1, "answer": 1}

    def show(self, failures: list[Failure]) -> None:
        rows = {}
        for f in failures:
            mark = (Text("⊘", style="yellow") if f.outcome == "not_executable" else Text("?", style="dim")
                    if f.success is None else Text("✗", style="red") if not f.success else "")
            shown = shown_answer(f.answer, f.record, f.status)
            answer = Text(clip(shown.text, self.width_of("answer")), style="" if shown.answered else "dim")
            rows[f.task_id] = (clip(f.task_id, self.width_of("task")), mark,
                               styled(clip(f.status, self.width_of("status")), STATUS_STYLE, f.status),
                               clip(f.why, self.width_of("why")),
                               clip(f.record.error or "" if f.record else "", self.width_of("error")), answer)
        self.sync(rows)


class ErrorsTable(FittedTable):
    """summarize()'s errors: every attempt's, grouped by status, kind and message."""

    COLUMNS = (Col("count", "n", 4), Col("status", "status", 7, 9), Col("kind", "kind", 6, 8),
               Col("message", "message", 30), Col("tasks", "tasks", 12))
    FLEX = {"message": 5, "tasks": 2}

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.groups: dict[str, ErrorGroup] = {}

    def show(self, errors: Sequence[ErrorGroup]) -> None:
        self.groups = {g.key: g for g in errors}
        rows = {}
        for key, g in self.groups.items():
            tasks = ", ".join(g.tasks) + (" …" if g.task_count > len(g.tasks) else "")
            rows[key] = (str(g.count), styled(clip(g.status, self.width_of("status")), STATUS_STYLE, g.status),
                         clip(g.kind, self.width_of("kind")), clip(g.message, self.width_of("message")),
                         clip(tasks, self.width_of("tasks")))
        self.sync(rows)

