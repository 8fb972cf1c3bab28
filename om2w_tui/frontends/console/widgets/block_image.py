"""Screenshots drawn in coloured half cells (`▀`, two pixels a cell) by the console itself, for a terminal that
draws pictures only in block characters (tmux, most SSH logins): a picture is scaled ahead of time to `HalfCells`
(bytes, in a thread) and its lines made when shown, where textual-image would draw it again on every frame.
`BlockImage` is the widget; `widgets/screenshot.py` says when it is used (`draws_in_blocks`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from PIL import Image as PILImage
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget


@dataclass(frozen=True)
class HalfCells:
    """A picture scaled to `cols` x 2*`rows` pixels, one 32-bit word each (RGBX): what a screenshot in blocks
    is kept as, read ahead. Bytes hold no objects, so the collector never walks them; the lines are made from
    them when shown (`block_strips`, about a millisecond)."""

    cols: int
    rows: int
    pixels: bytes = b""


def half_cells(image: PILImage.Image, cols: int, rows: int) -> HalfCells:
    """`image` as `rows` lines of `cols` half cells (the slow part is PIL's, in C: in a thread)."""
    if cols <= 0 or rows <= 0:
        return HalfCells(0, 0)
    scaled = image.convert("RGB").resize((cols, rows * 2), PILImage.Resampling.BOX)
    return HalfCells(cols, rows, scaled.convert("RGBX").tobytes())


def block_strips(cells: HalfCells) -> list[Strip]:
    """The picture's lines of half cells (`▀`: the upper pixel in the foreground colour, the lower one in the
    background's), runs of equal cells in one segment and one Style per colour pair: a web page's flat areas cost
    next to nothing. The runs are found by `groupby` over the pixel words, in C."""
    cols = cells.cols
    words = memoryview(cells.pixels).cast("I")
    strips = []
    for r in range(cells.rows):
        top = 2 * r * cols
        pairs = zip(words[top:top + cols], words[top + cols:top + 2 * cols], strict=True)
        strips.append(Strip([Segment("▀" * sum(1 for _ in run), _style(upper, lower))
                             for (upper, lower), run in groupby(pairs)], cols))
    return strips


_STYLES: dict[tuple[int, int], Style] = {}
STYLES_KEPT = 50_000     # colour pairs (a page has a few hundred; a photo many): the cache starts again past it


def _style(upper: int, lower: int) -> Style:
    style = _STYLES.get((upper, lower))
    if style is None:
        if len(_STYLES) >= STYLES_KEPT:
            _STYLES.clear()
        style = _STYLES[upper, lower] = Style.from_color(_rgb(upper), _rgb(lower))
    return style


def _rgb(word: int) -> Color:
    """An RGBX word as `memoryview.cast("I")` reads it on this machine's byte order."""
    r, g, b, _ = word.to_bytes(4, sys.byteorder)
    return Color.from_rgb(r, g, b)


class BlockImage(Widget):
    """A screenshot in half cells, its lines made from its `HalfCells` when shown: drawing is handing them over."""

    DEFAULT_CSS = "BlockImage { width: auto; height: auto; }"

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.cells = HalfCells(0, 0)
        self.strips: list[Strip] = []

    def show(self, cells: HalfCells) -> None:
        self.cells = cells
        self.strips = block_strips(cells)
        self.styles.width, self.styles.height = max(1, cells.cols), max(1, cells.rows)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        return self.strips[y] if 0 <= y < len(self.strips) else Strip.blank(self.size.width)
