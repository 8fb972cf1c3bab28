"""A panel of horizontal bars, one per group (a level, a site): the share of its tasks that succeeded, drawn with
plotext. Each bar gets a whole row (or a row and a gap) so that plotext's rounding never merges two bars."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from om2w_tui.evaluation.summary import Rate
from om2w_tui.frontends.formatting import clip

FRAME_ROWS = 3          # plotext's frame (top and bottom) and the x axis's tick labels


def rate_label(name: str, rate: Rate, name_width: int, frac_width: int) -> str:
    """'easy     67%  2/3 [21-94]': the group's name, its success rate, its successes out of its tasks and the
    rate's 95% interval ('-' for a group with no outcome yet)."""
    pct = "-" if rate.rate is None else f"{100 * rate.rate:.0f}%"
    frac = f"{rate.successes}/{rate.tasks}"
    ci = "" if rate.interval is None else f" [{100 * rate.interval[0]:.0f}-{100 * rate.interval[1]:.0f}]"
    return f"{clip(name, name_width):<{name_width}} {pct:>4} {frac:>{frac_width}}{ci:<10}"


class RateChart(Vertical):
    """`show(rates)` with summarize()'s `success.by_level` or `success.by_site` ({name: Rate}, in its order):
    as many bars as the panel has rows for, the first groups first; the title says how many are shown when not all."""

    DEFAULT_CSS = """
    RateChart { height: 1fr; }
    RateChart > PlotextPlot { height: 4; }
    RateChart > .rate-note { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, title: str, what: str, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.chart_title = title
        self.what = what                                  # a group's name, plural: "levels", "sites"
        self.border_title = title
        self.rates: list[tuple[str, Rate]] = []
        self.note = ""
        self.labels: list[str] = []                       # the bars as drawn, top to bottom

    def compose(self) -> ComposeResult:
        yield Static("", classes="rate-note")
        yield PlotextPlot()

    def show(self, rates: Mapping[str, Rate] | None, note: str = "") -> None:
        """Draw `rates`; with none, `note` says why."""
        self.rates = list((rates or {}).items())
        self.note = note
        self.draw()

    def on_resize(self) -> None:
        self.draw()

    def draw(self) -> None:
        if not self.is_mounted:
            return
        plot = self.query_one(PlotextPlot)
        note = self.query_one(".rate-note", Static)
        width, height = self.content_size.width, self.content_size.height
        free = height - FRAME_ROWS
        if not self.rates or free < 1 or width < 20:
            self.labels = []
            plot.display = False
            note.display = True
            note.update(self.note if not self.rates else "(too small to draw)")
            self.border_title, self.border_subtitle = self.chart_title, ""
            return
        n = min(len(self.rates), free)
        shown = self.rates[:n]
        gap = n > 1 and free >= 2 * n - 1     # a blank row between bars when there is room
        frac_width = max(len(f"{v.successes}/{v.tasks}") for _, v in shown)
        # the labels take at most half the width: the bars keep the other half
        name_width = min(max(len(k) for k, _ in shown), max(6, width // 2 - frac_width - 6))
        self.labels = [rate_label(k, v, name_width, frac_width) for k, v in shown]
        values = [100 * (v.rate or 0) for _, v in shown]

        plt = plot.plt
        plt.clear_data()
        # plotext draws the first bar at the bottom: reversed, the first group is on top
        plt.bar(self.labels[::-1], values[::-1], orientation="horizontal", width=0.1, color=self._colour())
        plt.xlim(0, 100)
        # bar k sits at y = k; with y from 1 to n over exactly n (or 2n-1) rows each bar lands on a row of its own
        plt.ylim(1, n) if n > 1 else plt.ylim(0.5, 1.5)
        bars = width - len(self.labels[0]) - 2
        ticks: list[float] = [0, 25, 50, 75, 100] if bars >= 40 else [0, 50, 100] if bars >= 16 else [0, 100]
        plt.xticks(ticks, [f"{t}%" for t in ticks])
        plot.styles.height = (2 * n - 1 if gap else n) + FRAME_ROWS
        plot.display = True
        note.display = False
        plot.refresh()
        total = len(self.rates)
        # in the title too: a narrow terminal shows no bottom border
        self.border_title = f"{self.chart_title} · {n} of {total}" if n < total else self.chart_title
        self.border_subtitle = f"{total} {self.what}"

    def _colour(self) -> tuple[int, int, int] | str:
        try:
            r, g, b = Color.parse(self.app.theme_variables.get("success", "green")).rgb
            return (r, g, b)
        except Exception:   # a theme without a parseable colour: plotext's own green
            return "green"
