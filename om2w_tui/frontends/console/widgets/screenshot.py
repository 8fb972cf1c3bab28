"""A screenshot shown in the terminal: textual-image's widget, as graphics where the terminal supports them
(Kitty's protocol, Sixel) and as coloured half-cells or unicode blocks where it does not.

textual-image asks the terminal what it supports when it is imported, which is impossible once Textual runs:
the console imports this module before the app starts. It divides the window's pixels by its cells then, so a
terminal that says it has 0 columns or rows (a pty nobody sized) is given textual-image's own fallback cell size
first, rather than a ZeroDivisionError at the console's start."""

from __future__ import annotations

import io
import sys
from typing import Any

from PIL import Image as PILImage
from textual_image import _terminal
from textual_image._posix import get_tiocgwinsz  # what _terminal asks the terminal with, on Linux

from om2w_tui.files import SCREENSHOT_LIMIT, read_file


def _size_a_sizeless_terminal() -> None:
    try:
        if not (sys.__stdout__ and sys.__stdout__.isatty()):
            return
        rows, columns, _, _ = get_tiocgwinsz()
    except (OSError, ValueError):
        return
    if not rows or not columns:   # textual-image's fallback (a VT340's cell), as it uses when it learns nothing
        setattr(_terminal.get_cell_size, "_result", _terminal.CellSize(10, 20))  # noqa: B010 (its own cache)


_size_a_sizeless_terminal()

from textual_image._terminal import get_cell_size  # noqa: E402 (after the size is known)
from textual_image.widget import HalfcellImage, UnicodeImage  # noqa: E402 (as above)
from textual_image.widget import Image as AutoImage  # noqa: E402 (as above)
from textual_image.widget._base import Image as _Base  # noqa: E402 (as above)

ShotWidget = _Base  # every renderer's widget is one of these

RENDERERS: dict[str, type[ShotWidget]] = {"auto": AutoImage, "halfcell": HalfcellImage, "unicode": UnicodeImage}
# graphics protocols get more pixels than block characters can show
MAX_PIXELS = {"auto": (1600, 1600), "halfcell": (480, 480), "unicode": (480, 480)}


def screenshot_widget(renderer: str, **kw: Any) -> ShotWidget:
    """The image widget for `renderer` (auto | halfcell | unicode), sized to fit its box keeping the aspect ratio."""
    widget = RENDERERS[renderer](**kw)
    widget.add_class("screenshot")
    return widget


def load_screenshot(path: Any, renderer: str) -> PILImage.Image:
    """Read a PNG and scale it down to what the renderer can use (in a thread: it is the slow part). A screenshot
    that is a symlink, a FIFO or a device is refused (InputError), never read or waited on."""
    with PILImage.open(io.BytesIO(read_file(path, SCREENSHOT_LIMIT, own=True, what="screenshot"))) as png:
        im = png.convert("RGB")
    im.thumbnail(MAX_PIXELS.get(renderer, MAX_PIXELS["auto"]))
    return im


def fit_cells(image_px: tuple[int, int], box: tuple[int, int]) -> tuple[int, int]:
    """The largest (columns, rows) inside `box` that keeps the image's aspect ratio on this terminal's cells."""
    (w, h), (cols, rows) = image_px, box
    if w <= 0 or h <= 0 or cols <= 0 or rows <= 0:
        return 0, 0
    cell = get_cell_size()
    fit_rows = round(cols * cell.width * h / w / cell.height)
    if fit_rows <= rows:
        return cols, max(1, fit_rows)
    return max(1, round(rows * cell.height * w / h / cell.width)), rows
