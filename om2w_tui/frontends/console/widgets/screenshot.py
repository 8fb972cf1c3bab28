"""A screenshot shown in the terminal: textual-image's widget, as graphics where the terminal supports them
(Kitty's protocol, Sixel) and as coloured half-cells or unicode blocks where it does not; and `ScreenshotPane`, the
bordered box the episode view and the label screen show one in (loaded in a thread, fitted to the box).

textual-image asks the terminal what it supports when it is imported, which is impossible once Textual runs:
the console imports this module before the app starts. It divides the window's pixels by its cells then, so a
terminal that says it has 0 columns or rows (a pty nobody sized) is given textual-image's own fallback cell size
first, rather than a ZeroDivisionError at the console's start."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual_image import _terminal
from textual_image._posix import get_tiocgwinsz  # what _terminal asks the terminal with, on Linux

from om2w_tui.files import SCREENSHOT_LIMIT, read_file
from om2w_tui.frontends.console.widgets.block_image import BlockImage, HalfCells, half_cells


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

from textual_image import renderable as image_renderables  # noqa: E402 (after the size is known)
from textual_image._terminal import get_cell_size  # noqa: E402 (as above)
from textual_image.renderable import halfcell  # noqa: E402 (as above)
from textual_image.widget import HalfcellImage, UnicodeImage  # noqa: E402 (as above)
from textual_image.widget import Image as AutoImage  # noqa: E402 (as above)
from textual_image.widget._base import Image as _Base  # noqa: E402 (as above)

ShotWidget = _Base  # every renderer's widget is one of these

RENDERERS: dict[str, type[ShotWidget]] = {"auto": AutoImage, "halfcell": HalfcellImage, "unicode": UnicodeImage}
# graphics protocols get more pixels than block characters can show
MAX_PIXELS = {"auto": (1600, 1600), "halfcell": (480, 480), "unicode": (480, 480)}


def draws_in_blocks(renderer: str) -> bool:
    """Whether screenshots are drawn in coloured half cells here (asked for, or all the terminal can do: tmux,
    most SSH logins): then the screen draws them itself, ahead of time (textual-image draws a 94x40-cell picture in
    about 170 ms, on every frame that repaints it)."""
    return renderer == "halfcell" or (renderer == "auto" and image_renderables.Image is halfcell.Image)


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


def cells_for(image: PILImage.Image, box: tuple[int, int]) -> HalfCells:
    """`image` in half cells, the largest that fits `box` (columns, rows) keeping its aspect ratio."""
    cols, rows = fit_cells(image.size, box)
    return half_cells(image, cols, rows)


class ScreenshotPane(Vertical):
    """The box one screenshot is shown in, fitted to it keeping its aspect ratio: read from its PNG in a thread
    (`load`: the latest asked for wins, a slow read never draws over a later one), or shown at once from a picture
    read ahead (`show_image`, or `show_cells` where `blocks` draws it in half cells, `widgets/block_image.py`).
    The caller names the screenshot in `border_subtitle`; a PNG that cannot be shown says why there."""

    def __init__(self, renderer: str = "auto", *, image_id: str, blocks: bool = False, id: str | None = None):
        super().__init__(id=id)
        self.renderer = renderer
        self.blocks = blocks
        self.image_id = image_id
        self._generation = 0
        self._image_px = (0, 0)

    def compose(self) -> ComposeResult:
        yield BlockImage(id=self.image_id) if self.blocks else screenshot_widget(self.renderer, id=self.image_id)

    def on_mount(self) -> None:
        self.border_title = "Screenshot"

    def on_resize(self) -> None:
        if not self.blocks and self._image_px != (0, 0):
            self.call_after_refresh(self._fit)

    def box(self) -> tuple[int, int]:
        """The (columns, rows) a picture may fill."""
        size = self.content_size
        return size.width, size.height

    def cancel_load(self) -> None:
        """A load under way draws nothing when it lands (another task is being shown)."""
        self._generation += 1

    def load(self, path: Path, then: Callable[[], object] | None = None) -> None:
        """Read `path` in a thread and show it (`then` once it is drawn); what failed is said in the subtitle."""
        self._generation += 1
        self._load(self._generation, path, self.box() if self.blocks else None, then)

    @work(thread=True, exclusive=True, group="screenshot", exit_on_error=False)
    def _load(self, generation: int, path: Path, box: tuple[int, int] | None,
              then: Callable[[], object] | None) -> None:
        try:
            image = load_screenshot(path, self.renderer)
            cells = cells_for(image, box) if box is not None else None
        except Exception as e:   # noqa: BLE001 - a PNG being rewritten, unreadable or gone: said, kept going
            self.app.call_from_thread(self._failed, generation, f"{path.name}: {e}")
            return
        self.app.call_from_thread(self._loaded, generation, image, cells, then)

    def _loaded(self, generation: int, image: PILImage.Image, cells: HalfCells | None,
                then: Callable[[], object] | None) -> None:
        if generation == self._generation and self.is_attached:
            self._put(image, cells)
            if then is not None:
                then()

    def _failed(self, generation: int, why: str) -> None:
        if generation == self._generation and self.is_attached:
            self.border_subtitle = f"cannot show {why}"

    def show_image(self, image: PILImage.Image) -> None:
        """A decoded picture, at once."""
        self._generation += 1
        self._put(image, None)

    def show_cells(self, cells: HalfCells) -> None:
        """A picture already in half cells (`blocks`), at once."""
        self._generation += 1
        self._put(None, cells)

    def clear(self) -> None:
        self._generation += 1
        widget = self.query_one(f"#{self.image_id}")
        if isinstance(widget, BlockImage):
            widget.show(HalfCells(0, 0))
        elif isinstance(widget, ShotWidget):
            widget.image = None

    def _put(self, image: PILImage.Image | None, cells: HalfCells | None) -> None:
        if cells is not None:
            self.query_one(f"#{self.image_id}", BlockImage).show(cells)
        elif image is not None:
            self._image_px = image.size
            self._fit()
            self.query_one(f"#{self.image_id}", ShotWidget).image = image

    def _fit(self) -> None:
        """Size the image to the largest box that keeps its aspect ratio (textual-image cannot know the height)."""
        cols, rows = fit_cells(self._image_px, self.box())
        shot = self.query_one(f"#{self.image_id}")
        shot.styles.width, shot.styles.height = max(1, cols), max(1, rows)
