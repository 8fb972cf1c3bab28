"""The typed values of a campaign's report (`report OUT` on a campaign's folder, evaluation/campaign_report.py): its
lanes as read (`LaneInfo`), their pairing gaps (`Pairing`, `Gap`: engine/pairing.py's figures with the widest
pairs) and the whole (`CampaignView`, a `Comparison`'s `campaign`). Each value has one `to_json()`, the only place its
JSON shape is written, as in evaluation/summary.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from om2w_tui.engine.events import GapFigures, PairingGaps


@dataclass(frozen=True)
class Gap:
    """One pairing gap: the later start of a compared pair's units minus the earlier (or a task's span: the latest
    start of its units minus the earliest), in seconds, and the lanes that started first and last."""
    task_id: str
    gap_s: float
    first: str
    last: str

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "gap_s": self.gap_s, "first": self.first, "last": self.last}


@dataclass(frozen=True)
class Pairing:
    """How close in time a campaign ran the units it compares, from the records (engine/pairing.py): per compared pair
    (an arm's k-th repeat and the first arm's, per task) both of whose units settled, the later start of their
    settling attempts minus the earlier; `left_out`: the pairs one unit of which has settled, the other not yet;
    `largest`: the widest gaps, widest first. `span`: per task every lane settled, the latest start of its units minus
    the earliest (`lanes` units a task: with two, the pair's gap); `compared`: the pairs of a task (none: one arm)."""
    pairs: GapFigures = field(default_factory=GapFigures)
    left_out: int = 0
    largest: tuple[Gap, ...] = ()
    span: GapFigures = field(default_factory=GapFigures)
    lanes: int = 0
    compared: int = 0

    def gaps(self) -> PairingGaps:
        """The figures as the live summary has them (engine/pairing.py's `pairing_words` says them)."""
        return PairingGaps(self.pairs, self.span, self.lanes, self.compared)

    def to_json(self) -> dict[str, Any]:
        return {"pairs": _figures_json(self.pairs), "left_out": self.left_out, "compared": self.compared,
                "largest": [g.to_json() for g in self.largest], "span": _figures_json(self.span), "lanes": self.lanes}


def _figures_json(f: GapFigures) -> dict[str, Any]:
    return dataclasses.asdict(f)


@dataclass(frozen=True)
class LaneInfo:
    """One lane of a campaign as the report read it: its run folder's name, arm and repeat, its folder, its name in
    the report's tables, and whether it has anything to read yet (a lane not started is left out of the tables)."""

    name: str
    arm: str
    repeat: int
    out: str
    shown: str
    started: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arm": self.arm, "repeat": self.repeat, "out": self.out, "shown": self.shown,
                "started": self.started}


@dataclass(frozen=True)
class CampaignView:
    """A campaign's folder as its report reads it: its lanes in the report's order (arms in the plan's order, each
    arm's repeats in order), its arms (the first is the baseline) and the pairing gaps."""

    out: str
    lanes: tuple[LaneInfo, ...]
    arms: tuple[str, ...]
    pairing: Pairing

    def to_json(self) -> dict[str, Any]:
        return {"out": self.out, "arms": list(self.arms), "lanes": [lane.to_json() for lane in self.lanes],
                "pairing": self.pairing.to_json()}
