"""The pairing gap's one definition (engine/pairing.py): which units a comparison pairs (`compared_pairs`, also the
report's and the console's), each pair's gap and each task's span from the settling attempts' starts, what is left
out, and the line every front end says it in (`pairing_words`, also `ctl status`'s)."""

from __future__ import annotations

import pytest

from om2w_tui.campaign_folder import LaneName
from om2w_tui.engine.events import RunSnapshot, RunSummary
from om2w_tui.engine.pairing import Pairing, arm_groups, compared_pairs, pairing_words
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.text_formats import fmt_seconds
from tests.unit.helpers import record

T0 = 1_700_000_000.0


def lanes(arms: tuple[str, ...], repeats: int) -> list[LaneName]:
    """As a campaign orders them: repeats interleaved, the first arm the baseline."""
    return [LaneName(f"{a}-r{r}", a, r) for r in range(1, repeats + 1) for a in arms]


def started(tid: str, at: float, **kw) -> EpisodeRecord:
    """A record of an attempt started `at` seconds into the campaign (a start of 0 is one not written)."""
    return EpisodeRecord.from_json(record(tid, started_at=T0 + at, finished_at=T0 + at + 30, **kw))


def test_each_arm_is_paired_with_the_first_arm_s_same_repeat():
    units = lanes(("base", "agent", "c"), 2)
    assert [(units[a].name, units[b].name) for a, b in compared_pairs(units)] == [
        ("base-r1", "agent-r1"), ("base-r1", "c-r1"), ("base-r2", "agent-r2"), ("base-r2", "c-r2")]
    # a repeat the baseline has not: nothing to pair it with; one arm alone: no pair at all
    odd = [LaneName("base", "base", 1), LaneName("agent", "agent", 1), LaneName("agent-r2", "agent", 2)]
    assert compared_pairs(odd) == [(0, 1)]
    assert compared_pairs(lanes(("base",), 3)) == [] and compared_pairs([]) == []
    # each arm's repeats, the baseline first: what a comparison over all repeats puts side by side
    assert arm_groups(units) == [("base", [0, 3]), ("agent", [1, 4]), ("c", [2, 5])]


def test_a_pair_s_gap_is_between_its_own_units_and_the_span_over_every_unit():
    p = Pairing(lanes(("a", "b"), 2))
    # task t: a-r1 at 0, b-r1 at 100, a-r2 at 250, b-r2 at 330 (one after another on the site)
    for lane, at in (("a-r1", 0), ("b-r1", 100), ("a-r2", 250), ("b-r2", 330)):
        p.record(lane, started("t", at))
    assert [(g.gap_s, g.first, g.last) for g in p.gaps()] == [(100, "a-r1", "b-r1"), (80, "a-r2", "b-r2")]
    assert [(g.gap_s, g.first, g.last) for g in p.spans()] == [(330, "a-r1", "b-r2")]
    s = p.summary()
    assert (s.pairs.n, s.pairs.median_s, s.pairs.worst_s) == (2, 90, 100)
    assert (s.span.n, s.span.median_s, s.lanes, s.compared) == (1, 330, 4, 2)


def test_a_pair_one_unit_of_which_has_not_settled_is_left_out_and_counted():
    p = Pairing(lanes(("a", "b"), 2))
    p.record("a-r1", started("t", 0))
    p.record("b-r1", started("t", 90))
    p.record("a-r2", started("t", 200))
    # a harness error is retried, not settled: b-r2 has no outcome yet
    p.record("b-r2", started("t", 300, status="error", error="browser crashed", error_kind="infra"))
    assert [g.gap_s for g in p.gaps()] == [90] and p.left_out == 1 and p.spans() == []
    # its retry settles: the retry's start counts
    p.record("b-r2", started("t", 500, attempt=2))
    assert [g.gap_s for g in p.gaps()] == [90, 300] and p.left_out == 0


@pytest.mark.parametrize(("units", "settled", "said"), [
    (lanes(("a",), 1), {}, ""),
    (lanes(("a", "b"), 1), {}, "pairing gap: no task has both units settled yet"),
    (lanes(("a", "b"), 1), {"a-r1": 0, "b-r1": 95}, "pairing gap over 1 task: median 95 s, p90 95 s, worst 95 s"),
    (lanes(("a", "b"), 2), {"a-r1": 0, "b-r1": 95, "a-r2": 200, "b-r2": 300},
     "pairing gap over 2 pairs: median 98 s, p90 100 s, worst 100 s; a task's span over its 4 units: median 5.0 min, "
     "worst 5.0 min"),
    (lanes(("a",), 2), {"a-r1": 0, "a-r2": 120},
     "pairing gap: no arms compared (one arm); a task's span over its 2 units: median 2.0 min, worst 2.0 min"),
])
def test_the_line_every_front_end_says(units, settled, said):
    p = Pairing(units)
    for lane, at in settled.items():
        p.record(lane, started("t", at))
    assert pairing_words(p.summary(), fmt_seconds) == said


def test_ctl_status_says_the_pairing_line():
    from om2w_tui.cli.ctl import status_lines
    from om2w_tui.protocol.control import RunInfo

    p = Pairing(lanes(("a", "b"), 2))
    for lane, at in {"a-r1": 0, "b-r1": 95, "a-r2": 200, "b-r2": 300}.items():
        p.record(lane, started("t", at))
    snap = RunSnapshot(now=1.0, slots=[], target_workers=2, summary=RunSummary(total=1, pairing=p.summary()))
    assert pairing_words(p.summary(), fmt_seconds) in status_lines(RunInfo(out="/runs/c", pid=1), snap)
    plain = RunSnapshot(now=1.0, slots=[], target_workers=2, summary=RunSummary(total=1))
    assert not any("pairing" in line for line in status_lines(RunInfo(out="/runs/a", pid=1), plain))
