"""A campaign's folder as `report` and `tasks health` read it (`campaign_folder.py` names it): its lanes (one run
folder per arm and repeat) in the report's order, each named by its arm and repeat; the arms compared; each arm's
repeats; and the pairing gaps, read from the lanes' records.

What a researcher comparing arms reads here:
- every lane is a run of `report OUT/<a> OUT/<b> ...`: its rates under both rules, and one column in the comparison
  against the first lane (the first arm's first repeat), every lane read by the one measure they share;
- the arms compared task by task **repeat by repeat**: each arm's k-th repeat against the first arm's k-th repeat
  (McNemar, the paired interval, the tasks only one solved), the units the campaign ran together on each site;
- each arm with two repeats or more summed up as repeats (`agreement.repeats`): always / sometimes / never solved,
  pass^k and pass@k, the mean rate over its repeats and its spread, under both rules;
- where an arm repeats, each arm against the first over all their repeats, paired by task (`agreement.pooled`: each
  task's share of repeats solved, the arms' difference averaged over the tasks with its t interval);
- the pairing gap, as the live figure measures it (engine/pairing.py): per compared pair (an arm's k-th repeat and
  the first arm's, per task) the later start of their settling attempts minus the earlier, the pairs one side of which
  has not settled yet left out and counted; and each task's span, the latest start of its units minus the earliest.

A lane with no task yet (no folder, or nothing run in it) is named as not started and left out of the tables. Only
reading here: nothing printed, nothing written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from om2w_tui.campaign_folder import CampaignFolder, LaneName, is_campaign
from om2w_tui.engine.pairing import Pairing as PairingBook
from om2w_tui.engine.pairing import arm_groups, compared_pairs
from om2w_tui.engine.results import read_results
from om2w_tui.evaluation.campaign_summary import CampaignView, Gap, LaneInfo, Pairing
from om2w_tui.evaluation.compare import compare
from om2w_tui.evaluation.measure import Measure
from om2w_tui.evaluation.summary import Comparison, RunReport
from om2w_tui.json_input import InputError
from om2w_tui.run_folder import what_is

LARGEST = 10      # the widest pairing gaps named


@dataclass(frozen=True)
class LaneRun:
    """One lane of a campaign: its name, arm and repeat, its run folder, and how the report names it."""

    lane: LaneName
    out: Path
    shown: str

    @property
    def is_run(self) -> bool:
        """Its folder is a run's already (`run_folder.what_is`): it has something to read."""
        return what_is(self.out).is_run


def read_lanes(folder: Path) -> list[LaneRun]:
    """The campaign's lanes: arms in the plan's order (the first is the baseline), each arm's repeats in order; a
    lane is named by its arm, and `ARM rK` where its arm has repeats. Raises json_input.InputError naming
    campaign.json where the plan is malformed."""
    camp = CampaignFolder(Path(folder))
    lanes = camp.lanes()
    arms = list(dict.fromkeys(lane.arm for lane in lanes))
    repeated = {a for a in arms if sum(1 for lane in lanes if lane.arm == a) > 1}
    ordered = sorted(lanes, key=lambda lane: (arms.index(lane.arm), lane.repeat))
    return [LaneRun(lane, camp.run(lane.name), f"{lane.arm} r{lane.repeat}" if lane.arm in repeated else lane.arm)
            for lane in ordered]


def lanes_words(lanes: Sequence[LaneRun]) -> str:
    """`base, base-r2, agent`: the lanes' run folders, for a message."""
    return ", ".join(lane.lane.name for lane in lanes)


def one_run_problem(out: Path, command: str, hint: str = "") -> str:
    """Why `om2w-tui COMMAND OUT` (a reader of one run: label, judge, check) does not take a campaign's folder whole
    ('' for any other folder): its lanes are the runs, each taken on its own. Names the lanes, or the plan's problem
    where it is malformed."""
    if not is_campaign(Path(out)):
        return ""
    try:
        lanes = read_lanes(Path(out))
    except InputError as e:
        return str(e)
    first = lanes[0].out if lanes else Path(out) / "ARM"
    return (f"{out} is a campaign's folder: {command} one of its lanes at a time ({lanes_words(lanes) or 'none'}), "
            f"e.g. `om2w-tui {command} {first}`{hint}")


def pairing_gaps(lanes: Sequence[tuple[LaneName, Path]], shown: Mapping[str, str] | None = None,
                 largest: int = LARGEST) -> Pairing:
    """The pairing gaps of `lanes` ((the lane, its run folder); the baseline arm's first) by the one definition the
    live figure has too (engine/pairing.py: per compared pair both of whose units settled, the later start of the
    settling attempts minus the earlier; per task, the span over every lane); the widest named as `shown` names the
    lanes."""
    book = PairingBook(lane for lane, _ in lanes)
    for lane, out in lanes:
        book.read(lane.name, read_results(out).episode_records() if Path(out).is_dir() else [])
    shown = shown or {}
    gaps = [Gap(g.task_id, g.gap_s, shown.get(g.first, g.first), shown.get(g.last, g.last)) for g in book.gaps()]
    widest = sorted(gaps, key=lambda g: (-g.gap_s, g.task_id))[:largest]
    s = book.summary()
    return Pairing(s.pairs, book.left_out, tuple(widest), s.span, s.lanes, s.compared)


def campaign_view(folder: Path, lanes: Sequence[LaneRun], started: Sequence[LaneRun]) -> CampaignView:
    """The campaign's lanes as read (`started`: those with a task) and its pairing gaps over every lane."""
    ran = {lane.lane.name for lane in started}
    infos = tuple(LaneInfo(lane.lane.name, lane.lane.arm, lane.lane.repeat, str(lane.out), lane.shown,
                           lane.lane.name in ran) for lane in lanes)
    arms = tuple(dict.fromkeys(lane.lane.arm for lane in lanes))
    gaps = pairing_gaps([(lane.lane, lane.out) for lane in lanes], {lane.lane.name: lane.shown for lane in lanes})
    return CampaignView(str(folder), infos, arms, gaps)


def compare_campaign(view: CampaignView, summaries: list[RunReport], measure: Measure | None) -> Comparison:
    """The started lanes' summaries (in `view`'s order, named as it names them) compared: against the first lane,
    each arm against the first arm repeat by repeat, each arm with repeats summed up as such."""
    lanes = [lane for lane in view.lanes if lane.started]
    if len(lanes) != len(summaries):
        raise ValueError(f"{len(summaries)} summaries for {len(lanes)} lanes")
    summaries = [replace(s, name=lane.shown) for s, lane in zip(summaries, lanes)]
    based = bool(lanes) and lanes[0].arm == view.arms[0]   # the baseline arm has a lane to compare with
    units = [LaneName(lane.name, lane.arm, lane.repeat) for lane in lanes]
    pairs = [(k, base) for base, k in compared_pairs(units)] if based else []
    groups = arm_groups(units)
    c = compare(summaries, measure=measure, pairs=pairs, groups=[(a, ks) for a, ks in groups if len(ks) > 1],
                arms=groups if based else ())
    return replace(c, campaign=view)


__all__ = ["LaneRun", "campaign_view", "compare_campaign", "lanes_words", "one_run_problem", "pairing_gaps",
           "read_lanes"]
