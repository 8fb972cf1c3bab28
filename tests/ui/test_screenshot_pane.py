"""The screenshot pane the episode view and the label screen share (`widgets/screenshot.py`), alone in an app: the
latest screenshot asked for is the one shown (a slow read never draws over a later one), a PNG that cannot be read
is said in the subtitle, and the picture is fitted to the box keeping its aspect ratio."""

from __future__ import annotations

from pathlib import Path

from PIL import Image
from textual.app import App, ComposeResult

from om2w_tui.frontends.console.widgets.block_image import BlockImage
from om2w_tui.frontends.console.widgets.screenshot import ScreenshotPane, ShotWidget


class PaneApp(App[None]):
    def __init__(self, blocks: bool = False):
        super().__init__()
        self.blocks = blocks

    def compose(self) -> ComposeResult:
        yield ScreenshotPane("unicode", image_id="shot", blocks=self.blocks, id="box")


def png(path: Path, size: tuple[int, int]) -> Path:
    Image.new("RGB", size, (200, 30, 30)).save(path)
    return path


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def test_the_latest_screenshot_asked_for_is_shown_and_a_bad_one_is_said(tmp_path):
    wide = png(tmp_path / "0_full_screenshot.png", (400, 100))
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(ScreenshotPane)
        assert pane.border_title == "Screenshot"
        drawn: list[str] = []
        pane.load(wide, lambda: drawn.append("wide"))
        pane.show_image(Image.new("RGB", (100, 400)))      # asked for after: the read that lands later is dropped
        await settle(pilot)
        shot = app.query_one("#shot", ShotWidget)
        assert drawn == [] and shot.image is not None and shot.image.size == (100, 400)
        pane.load(wide, lambda: drawn.append("wide"))
        await settle(pilot)
        assert drawn == ["wide"] and shot.image.size == (400, 100)
        cols, rows = pane.box()
        assert shot.size.width == cols and 0 < shot.size.height < rows       # as wide as the box, kept in proportion
        (tmp_path / "1_full_screenshot.png").write_bytes(b"not a png")
        pane.load(tmp_path / "1_full_screenshot.png")
        await settle(pilot)
        assert pane.border_subtitle.startswith("cannot show 1_full_screenshot.png")
        pane.clear()
        assert shot.image is None


async def test_in_blocks_a_screenshot_is_read_into_half_cells_for_the_box(tmp_path):
    app = PaneApp(blocks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(ScreenshotPane)
        pane.load(png(tmp_path / "0_full_screenshot.png", (400, 100)))
        await settle(pilot)
        image = app.query_one("#shot", BlockImage)
        cols, rows = pane.box()
        assert image.cells.cols == cols and 0 < image.cells.rows < rows and len(image.strips) == image.cells.rows
