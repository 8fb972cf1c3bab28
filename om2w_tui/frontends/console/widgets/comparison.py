"""A campaign's comparison of its arms, live: each lane's rate under both counting rules with its 95% Wilson
interval, each arm against the baseline arm (of the same repeat) on the tasks both have an outcome for (the paired
difference with its interval, McNemar's exact p, the tasks only one solved), all by one measure; and the pairing
gaps (how far apart in time the compared units started, engine/pairing.py). Drawn from `CampaignBoard.comparison()`."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from om2w_tui.engine.pairing import pairing_words
from om2w_tui.evaluation.outcomes import RULE_WORDS, RULES
from om2w_tui.evaluation.summary import Rate
from om2w_tui.evaluation.text_formats import signed
from om2w_tui.frontends.campaign_board import Comparison
from om2w_tui.frontends.formatting import clock_text

ONLY_SHOWN = 12      # tasks only one arm solved, listed per side


def rate_cell(r: Rate) -> str:
    """`12/40 30% [18-45]`, or `-` with nothing counted yet."""
    if r.rate is None or r.interval is None:
        return "-"
    lo, hi = r.interval
    return f"{r.successes}/{r.tasks} {100 * r.rate:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"


def _pp(x: float | None) -> str:
    return "-" if x is None else signed(100 * x, 0)


def _seconds(s: float | None) -> str:
    return "-" if s is None else clock_text(s)


def comparison_renderable(c: Comparison) -> RenderableType:
    parts: list[RenderableType] = []
    head = Text()
    head.append("measure: ", style="dim")
    head.append(c.measure.name if c.measure is not None else c.problem or "none yet", style="bold")
    head.append("   ")
    head.append(pairing_words(c.pairing, _seconds) or "pairing gap: -")
    parts.append(head)
    if c.not_started:   # as `report` says them: no unit finished, so nothing of theirs is compared yet
        parts.append(Text(f"not started yet (left out): {', '.join(c.not_started)}", style="dim"))
    if c.measure is None:
        return Group(*parts)

    rates = Table(title="each arm's rate (95% Wilson interval)", title_justify="left", expand=False,
                  show_edge=False, pad_edge=False)
    rates.add_column("arm", no_wrap=True)
    for rule in RULES:   # the rules' short names ("over all", "executable"): the footnote says them whole
        rates.add_column(rule, no_wrap=True)
    rates.add_column("pending", justify="right")
    for arm in c.arms:
        rates.add_row(arm.label, *(rate_cell(arm.counts.rate(rule)) for rule in RULES), str(arm.counts.pending))
    parts += [Text(""), rates]

    if c.tests:
        diffs = Table(title="paired, on the tasks both have an outcome for (A - B in points)", title_justify="left",
                      expand=False, show_edge=False, pad_edge=False)
        for col in ("A - B", "rule", "n", "diff", "95% CI", "McNemar p", "only A", "only B"):
            diffs.add_column(col, justify="left" if col in ("A - B", "rule") else "right", no_wrap=True)
        for t in c.tests:
            d = t.difference
            diffs.add_row(f"{t.a} - {t.b}", t.rule, str(d.n), _pp(d.difference),
                          f"[{_pp(d.low)}, {_pp(d.high)}]" if d.low is not None else "-", f"{d.p:.3g}",
                          str(d.only_a), str(d.only_b))
        parts += [Text(""), diffs]
        only = Text()
        for t in c.tests:
            if t.rule != RULES[0]:
                continue
            for who, tasks in ((t.a, t.only_a_tasks), (t.b, t.only_b_tasks)):
                only.append(f"only {who} solved ({len(tasks)}): ", style="bold")
                shown = ", ".join(tasks[:ONLY_SHOWN]) + (" …" if len(tasks) > ONLY_SHOWN else "")
                only.append((shown or "none") + "\n")
        parts += [Text(""), only]
    if c.pooled:
        over = Table(title="over all repeats, paired by task (each task's share solved; A - B in points, t interval)",
                     title_justify="left", expand=False, show_edge=False, pad_edge=False)
        for col in ("A - B", "rule", "repeats", "tasks", "diff", "95% CI", "more often", "less often"):
            over.add_column(col, justify="left" if col in ("A - B", "rule") else "right", no_wrap=True)
        for p in c.pooled:
            m = p.difference
            over.add_row(f"{p.a} - {p.b}", p.rule, f"{len(p.a_runs)}/{len(p.b_runs)}", str(m.n), _pp(m.mean),
                         f"[{_pp(m.low)}, {_pp(m.high)}]" if m.low is not None else "-", str(p.better), str(p.worse))
        parts += [Text(""), over]
    parts.append(Text("  ".join(f"{rule}: {RULE_WORDS[rule]}." for rule in RULES), style="dim"))
    return Group(*parts)


class ComparisonPanel(Static):
    DEFAULT_CSS = """
    ComparisonPanel { height: auto; width: 1fr; min-width: 104; padding: 0 1; }   /* narrower: scrolled sideways */
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self._shown: Comparison | None = None

    def show(self, c: Comparison) -> None:
        """Redraw when the comparison changed (the board hands back the same one while nothing did)."""
        if c is not self._shown:
            self._shown = c
            self.update(comparison_renderable(c))
