"""The dashboard's line of a campaign's lanes, under the header: each lane's progress (done of total, errors), its
reference answers' rate so far and its judge's (the campaign's live judge, or a judge file in its folder), each with
its interval, as a run's header shows them; and what holds its units (its user, or its model guard, with why):
`HELD`, the word `ctl` and the Sites panel say for a held arm. Hidden in a plain run."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.widgets.run_header import rate_text
from om2w_tui.frontends.formatting import clip


def lanes_text(board: CampaignBoard, wide: bool) -> str:
    """One part per lane: `agent 12/50 · 2 err · correct 60% [39-78] · judge 55% [34-74] · HELD`."""
    parts = []
    for name, row in board.rows.items():
        text = f"{board.label(name)} {row.done}/{row.total}"
        if row.errors:
            text += f" · {row.errors} err"
        if row.judged:
            text += f" · {rate_text('correct', row.correct, row.judged, wide)}"
        successes, judged = board.verdicts(name)
        if judged:
            text += f" · {rate_text('judge', successes, judged, wide)}"
        if row.guard:      # why its model guard holds it says more than its user's hold
            text += f" · HELD: {clip(row.guard, 60 if wide else 24)}"
        elif row.paused:
            text += " · HELD"
        parts.append(text)
    return "  │  ".join(parts)


class LanesBar(Static):
    DEFAULT_CSS = """
    LanesBar { height: auto; max-height: 3; padding: 0 1; display: none; background: $boost; }
    LanesBar.-campaign { display: block; }
    LanesBar.-held { color: $text-warning; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self._shown: str | None = None

    def show(self, board: CampaignBoard, wide: bool) -> None:
        if not board.rows:
            return
        text = lanes_text(board, wide)
        if text != self._shown:
            self._shown = text
            self.update(text)
            held = any(r.paused or r.guard for r in board.rows.values())
            self.set_classes("-campaign -held" if held else "-campaign")
