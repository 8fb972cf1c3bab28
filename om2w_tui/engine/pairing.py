"""A campaign's pairing gap, defined once: for the live figure (the scheduler's, shown by the console, the headless
log and `ctl status`) and for `report` on a campaign's folder (evaluation/campaign_report.py), both fed the same
records, so that they never disagree.

The gap is measured between the units a comparison puts side by side (`compared_pairs`): each arm's k-th repeat
against the first arm's k-th repeat, per task, as `report` tests the arms (McNemar, the paired interval). A pair's gap
is the later start of its two units minus the earlier, once both have settled, each unit's start being its *settling
attempt's*: the attempt whose outcome is the unit's final outcome (a record that `settles`; a later settling record
replaces an earlier one). A record with no start written counts as none.

Beside it, a task's **span**: the latest start of all its units (every arm, every repeat) minus the earliest, once every
unit has settled. With two lanes it is the pair's gap; with repeats it grows by an episode and a cooldown per unit,
since a site runs one episode at a time, so it says how long the site was watched for one task, not how close the
compared outcomes were."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from om2w_tui.campaign_folder import LaneName
from om2w_tui.engine.events import GapFigures, PairingGaps
from om2w_tui.engine.results import EpisodeRecord


@dataclass(frozen=True)
class TaskGap:
    """One gap (seconds) of a task, and the units (lanes) that started first and last: a compared pair's, or the
    task's span over every unit."""

    task_id: str
    gap_s: float
    first: str
    last: str


def compared_pairs(lanes: Sequence[LaneName]) -> list[tuple[int, int]]:
    """The lanes a comparison puts side by side, as (baseline, other) indexes into `lanes`: each lane of an arm other
    than the first (the baseline, the first lane's arm) against the baseline's lane of the same repeat, where it has
    one; in `lanes`' order."""
    base = lanes[0].arm if lanes else ""
    at = {(lane.arm, lane.repeat): k for k, lane in enumerate(lanes)}
    return [(at[(base, lane.repeat)], k) for k, lane in enumerate(lanes)
            if lane.arm != base and (base, lane.repeat) in at]


def arm_groups(lanes: Sequence[LaneName]) -> list[tuple[str, list[int]]]:
    """Each arm's lanes (its repeats), as indexes into `lanes`, arms in the order they first appear (the first is the
    baseline): what a comparison over all repeats puts side by side."""
    groups: dict[str, list[int]] = {}
    for k, lane in enumerate(lanes):
        groups.setdefault(lane.arm, []).append(k)
    return list(groups.items())


def settling_start(rec: EpisodeRecord) -> float | None:
    """When the record's attempt started; None where its writer wrote no start (a record of another harness)."""
    return rec.started_at if rec.recorded("started_at") and rec.started_at > 0 else None


def figures(values: Iterable[float]) -> GapFigures:
    """How many, their median, p90 (linear interpolation between the closest ranks) and worst."""
    v = sorted(values)
    if not v:
        return GapFigures()
    p90 = statistics.quantiles(v, n=10, method="inclusive")[8] if len(v) > 1 else v[0]
    return GapFigures(len(v), statistics.median(v), p90, v[-1])


class Pairing:
    """The gaps of a campaign's tasks over its `lanes` (each task has one unit in each), learnt record by record in the
    order they were finished (`record`)."""

    def __init__(self, lanes: Iterable[LaneName]):
        lanes = list(lanes)
        self.units = tuple(lane.name for lane in lanes)
        self.pairs = tuple((self.units[a], self.units[b]) for a, b in compared_pairs(lanes))
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
        """Each compared pair of each task both units of which have settled with a start: the tasks in the order they
        were first seen, a task's pairs in `pairs`' order."""
        out = []
        for tid, by_unit in self.starts.items():
            for a, b in self.pairs:
                sa, sb = by_unit.get(a), by_unit.get(b)
                if sa is not None and sb is not None:
                    first, last = (a, b) if sa <= sb else (b, a)
                    out.append(TaskGap(tid, abs(sb - sa), first, last))
        return out

    def spans(self) -> list[TaskGap]:
        """Each task every unit of which has settled with a start: the latest start minus the earliest."""
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
        """Compared pairs one unit of which has settled and whose gap is not measured yet (the other unsettled, or a
        start not written)."""
        return sum(1 for by_unit in self.starts.values() for a, b in self.pairs
                   if (a in by_unit or b in by_unit) and (by_unit.get(a) is None or by_unit.get(b) is None))

    def summary(self) -> PairingGaps:
        """The compared pairs' gaps and the tasks' spans: how many, median, p90, worst."""
        return PairingGaps(figures(g.gap_s for g in self.gaps()), figures(g.gap_s for g in self.spans()),
                           len(self.units), len(self.pairs))


def pairing_words(gaps: PairingGaps, seconds: Callable[[float | None], str]) -> str:
    """The pairing gap in one line, as the headless log, `ctl status` and the console's comparison say it: the
    compared pairs' gaps (counted as tasks where a task has one pair), and the tasks' span where it says more (more
    than two units a task, or one arm's repeats); '' for a plain run. `seconds`: the front end's one way of saying a
    duration (evaluation/text_formats.fmt_seconds, the console's clock), so each view says it as its other numbers."""
    p, span = gaps.pairs, gaps.span
    what = "task" if gaps.compared == 1 else "pair"
    if p.n:
        text = (f"pairing gap over {p.n} {what}{'' if p.n == 1 else 's'}: median {seconds(p.median_s)}, "
                f"p90 {seconds(p.p90_s)}, worst {seconds(p.worst_s)}")
    elif gaps.compared:
        text = f"pairing gap: no {what} has both units settled yet"
    else:
        text = "pairing gap: no arms compared (one arm)" if gaps.lanes > 1 else ""
    if gaps.span_told and span.n:
        text += (f"; a task's span over its {gaps.lanes} units: median {seconds(span.median_s)}, "
                 f"worst {seconds(span.worst_s)}")
    return text
