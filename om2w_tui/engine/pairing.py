"""A campaign's pairing gap, defined once: for the live figure (the scheduler's, shown by the console, the headless
log and `ctl status`) and for `report` on a campaign's folder (evaluation/campaign_report.py), both fed the same
records, so that they never disagree.

A task's gap is the latest start of its units (one per lane) minus the earliest, once every unit has settled, each
unit's start being its *settling attempt's*: the attempt whose outcome is the unit's final outcome (a record that
`settles`; a later settling record replaces an earlier one). A record with no start written counts as none."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from om2w_tui.engine.events import PairingGaps
from om2w_tui.engine.results import EpisodeRecord


@dataclass(frozen=True)
class TaskGap:
    """One task's gap (seconds) and the units (lanes) that started first and last."""

    task_id: str
    gap_s: float
    first: str
    last: str


def settling_start(rec: EpisodeRecord) -> float | None:
    """When the record's attempt started; None where its writer wrote no start (a record of another harness)."""
    return rec.started_at if rec.recorded("started_at") and rec.started_at > 0 else None


class Pairing:
    """The gaps of a campaign's tasks over its `units` (its lanes' names: each task has one unit in each), learnt
    record by record in the order they were finished (`record`)."""

    def __init__(self, units: Iterable[str]):
        self.units = tuple(units)
        # task id -> unit -> its settling attempt's start (None: its settling record has none written)
        self.starts: dict[str, dict[str, float | None]] = {}

    def record(self, unit: str, rec: EpisodeRecord) -> None:
        """One attempt's record of `unit`'s task. Why the settling attempts' starts, not each unit's first start: a
        paired comparison compares the units' final outcomes, so what must be close in time are the moments those
        outcomes met the live site; an attempt the harness failed and retried, or one stopped under a run resumed
        later, gave no outcome compared, and its start would show a pairing the compared outcomes do not have."""
        if rec.settles and len(self.units) > 1:   # one unit a task (a plain run) pairs nothing: nothing kept
            self.starts.setdefault(rec.task_id, {})[unit] = settling_start(rec)

    def read(self, unit: str, records: Iterable[EpisodeRecord], tasks: set[str] | None = None) -> None:
        """A lane's records as its folder holds them (a resume, `report`), in the order they finished (a tie: the
        file's order); `tasks`: only those tasks' (a shard's share)."""
        for rec in sorted(records, key=lambda r: r.finished_at):
            if tasks is None or rec.task_id in tasks:
                self.record(unit, rec)

    def gaps(self) -> list[TaskGap]:
        """Each task every unit of which has settled with a start, in the order they were first seen."""
        if len(self.units) < 2:
            return []
        out = []
        for tid, by_unit in self.starts.items():
            starts = {u: s for u, s in by_unit.items() if s is not None}
            if len(starts) < len(self.units):
                continue
            first, last = min(starts, key=lambda u: starts[u]), max(starts, key=lambda u: starts[u])
            out.append(TaskGap(tid, starts[last] - starts[first], first, last))
        return out

    @property
    def left_out(self) -> int:
        """Tasks some unit settled whose gap is not measured yet (a unit unsettled, or with no start written)."""
        return len(self.starts) - len(self.gaps())

    def summary(self) -> PairingGaps:
        """How many tasks are measured, and their median, p90 (linear interpolation between the closest ranks) and
        worst gap."""
        values = sorted(g.gap_s for g in self.gaps())
        if not values:
            return PairingGaps()
        p90 = statistics.quantiles(values, n=10, method="inclusive")[8] if len(values) > 1 else values[0]
        return PairingGaps(len(values), statistics.median(values), p90, values[-1])
