"""A DataTable whose rows have stable keys and are brought up to date by difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, RowKey


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    width: int
    wide: int | None = None     # its width on a wide terminal


class Styled(NamedTuple):
    """A cell's text and style: compared as two strings (a rich Text is built only when the cell is written)."""
    text: str
    style: str = ""


def as_cell(value: Any) -> Any:
    return Text(value.text, style=value.style) if isinstance(value, Styled) else value


class KeyedTable(DataTable[Any]):
    """`sync(rows)` adds new rows, updates only the cells that changed and removes rows that went away: never a
    `clear()` per tick, which would reset the cursor and the scroll position. Only a change between the narrow and
    the wide column widths rebuilds the table.

    With `LAZY`, a changed row out of view is written only when it comes into view (a scroll, a resize, rows coming
    or going): a DataTable re-renders every row in view whenever any cell changes, so a long table's changes out of
    view (hundreds of slots' clocks) cost a redraw each and show nothing."""

    COLUMNS: Sequence[Col] = ()
    LAZY = False

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._cells: dict[str, tuple[Any, ...]] = {}   # what each row shows
        self._wanted: dict[str, tuple[Any, ...]] = {}  # LAZY: what a row out of view will show when in view
        self.wide = False
        self._widths: dict[str, int] = {}
        self._add_columns()

    def _add_columns(self) -> None:
        self._widths = {c.key: (c.wide or c.width) if self.wide else c.width for c in self.COLUMNS}
        for c in self.COLUMNS:
            self.add_column(c.label, width=self.width_of(c.key), key=c.key)

    def add_row(self, *cells: Any, **kw: Any) -> Any:
        return super().add_row(*map(as_cell, cells), **kw)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, *, update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, as_cell(value), update_width=update_width)

    def width_of(self, key: str) -> int:
        return self._widths[key]

    def set_wide(self, wide: bool) -> bool:
        """Use the wide (or narrow) column widths; -> whether the table was rebuilt (its rows must be synced)."""
        if wide == self.wide:
            return False
        kept = self.cursor_key()
        self.wide = wide
        self.clear(columns=True)
        self._cells.clear()
        self._wanted.clear()
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
            self._wanted.pop(key, None)
            changed = True
        for key, cells in rows.items():
            cells = tuple(cells)
            if key not in self._cells:
                self.add_row(*cells, key=key)
                self._cells[key] = cells
                changed = True
            else:
                self._write(key, cells)
        if changed and self._wanted:   # rows moved: some out of view may be in view now
            self.show_wanted()
        if self._keep_cursor is not None:
            self.move_to_key(self._keep_cursor)
            self._keep_cursor = None
        return changed

    def sync_row(self, key: str, cells: Sequence[Any]) -> bool:
        """Bring one existing row to `cells`; False (nothing done) when the table has no such row."""
        if key not in self._cells:
            return False
        self._write(key, tuple(cells))
        return True

    def _write(self, key: str, cells: tuple[Any, ...]) -> None:
        old = self._cells[key]
        if old == cells:
            self._wanted.pop(key, None)
            return
        if self.LAZY and not self.in_view(key):
            self._wanted[key] = cells
            return
        self._wanted.pop(key, None)
        for col, a, b in zip(self.COLUMNS, old, cells):
            if a != b:
                self.update_cell(key, col.key, b)
        self._cells[key] = cells

    def in_view(self, key: str) -> bool:
        """Whether the row is in view, or may be (the table not laid out yet); rows are one line high."""
        height = self.size.height
        if not height:
            return True
        top = int(self.scroll_y)
        return top - 1 <= self.get_row_index(key) <= top + height

    def show_wanted(self) -> None:
        """Write the rows that came into view with what they should show."""
        for key in [k for k in self._wanted if self.in_view(k)]:
            self._write(key, self._wanted[key])

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._wanted:
            self.show_wanted()

    def on_resize(self) -> None:
        if self._wanted:
            self.show_wanted()

    def remove_rows(self, keys: Sequence[str]) -> None:
        """Remove several rows in one pass. DataTable's `remove_row` re-indexes every remaining row each time (a
        window of 2,000 rows: ~2 ms a row); this re-indexes them once, the way `remove_row` does it."""
        if len(keys) < 2:
            for key in keys:
                self.remove_row(key)
                self._cells.pop(key, None)
                self._wanted.pop(key, None)
            return
        gone = {RowKey(k) for k in keys}
        for row_key in gone:
            for column_key in self._data.get(row_key, ()):
                self._updated_cells.discard(CellKey(row_key, column_key))
            self.rows.pop(row_key, None)
            self._data.pop(row_key, None)
            self._cells.pop(str(row_key.value), None)
            self._wanted.pop(str(row_key.value), None)
        where = self._row_locations
        kept = sorted((where.get(row_key), row_key) for row_key in where if row_key not in gone)
        self._row_locations = TwoWayDict({row_key: i for i, (_, row_key) in enumerate(kept)})
        self.cursor_coordinate = self.cursor_coordinate   # clamped to the rows left, as remove_row does
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.refresh(layout=True)

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
