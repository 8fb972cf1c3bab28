"""A DataTable whose rows have stable keys and are brought up to date by difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.widgets import DataTable


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    width: int
    wide: int | None = None     # its width on a wide terminal


class KeyedTable(DataTable[Any]):
    """`sync(rows)` adds new rows, updates only the cells that changed and removes rows that went away: never a
    `clear()` per tick, which would reset the cursor and the scroll position. Only a change between the narrow and
    the wide column widths rebuilds the table."""

    COLUMNS: Sequence[Col] = ()

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._cells: dict[str, tuple[Any, ...]] = {}
        self.wide = False
        self._add_columns()

    def _add_columns(self) -> None:
        for c in self.COLUMNS:
            self.add_column(c.label, width=self.width_of(c.key), key=c.key)

    def width_of(self, key: str) -> int:
        c = next(c for c in self.COLUMNS if c.key == key)
        return (c.wide or c.width) if self.wide else c.width

    def set_wide(self, wide: bool) -> bool:
        """Use the wide (or narrow) column widths; -> whether the table was rebuilt (its rows must be synced)."""
        if wide == self.wide:
            return False
        kept = self.cursor_key()
        self.wide = wide
        self.clear(columns=True)
        self._cells.clear()
        self._add_columns()
        self._keep_cursor = kept
        return True

    _keep_cursor: str | None = None

    def sync(self, rows: Mapping[str, Sequence[Any]]) -> bool:
        """Bring the table to `rows` (key -> cells, in display order for new rows); -> whether any row came or went."""
        changed = False
        for key in [k for k in self._cells if k not in rows]:
            self.remove_row(key)
            del self._cells[key]
            changed = True
        for key, cells in rows.items():
            cells = tuple(cells)
            old = self._cells.get(key)
            if old is None:
                self.add_row(*cells, key=key)
                changed = True
            elif old != cells:
                for col, a, b in zip(self.COLUMNS, old, cells):
                    if a != b:
                        self.update_cell(key, col.key, b)
            self._cells[key] = cells
        if self._keep_cursor is not None:
            self.move_to_key(self._keep_cursor)
            self._keep_cursor = None
        return changed

    def sync_row(self, key: str, cells: Sequence[Any]) -> bool:
        """Bring one existing row to `cells`; False (nothing done) when the table has no such row."""
        old = self._cells.get(key)
        if old is None:
            return False
        cells = tuple(cells)
        for col, a, b in zip(self.COLUMNS, old, cells):
            if a != b:
                self.update_cell(key, col.key, b)
        self._cells[key] = cells
        return True

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, or None when the table is empty."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:   # the cursor is past the last row while rows are being removed
            return None

    def move_to_key(self, key: str) -> None:
        if key in self._cells or key in self.rows:
            self.move_cursor(row=self.get_row_index(key), animate=False, scroll=False)
