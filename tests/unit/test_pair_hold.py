"""A campaign's free slot kept for a started task's next unit (engine/dispatch.py, `hold_for_next`), in virtual time
(looptime): while slots are spare (the run's length is its longest chain, not its work per slot) a free slot waits
for a next unit coming off its site's cooldown instead of starting a fresh task's first unit, and the next unit
starts the moment its cooldown ends; while every slot is needed nothing waits, unless the user chose to
(`--pair-hold`); nothing waits forever."""

from __future__ import annotations

import dataclasses

import pytest

from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import EpisodeStarted
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import campaign, make_tasks

COOLDOWN = 100.0
LONG = Behaviour(steps=20, step_s=10.0)   # 200 s: a fresh task's first unit that would fill a slot past a cooldown


def starts(rec: Recorder) -> dict[str, list[tuple[float, int]]]:
    """task id -> (start, slot) of each of its units' first start, in order."""
    seen: set[tuple[str, str]] = set()
    out: dict[str, list[tuple[float, int]]] = {}
    for t, ev in rec.timed:
        if isinstance(ev, EpisodeStarted) and (ev.lane, ev.task_id) not in seen:
            seen.add((ev.lane, ev.task_id))
            out.setdefault(ev.task_id, []).append((t, ev.slot))
    return out


@pytest.mark.looptime
async def test_a_spare_slot_waits_for_the_next_unit_which_starts_when_its_cooldown_ends(tmp_path):
    """w.com's chain (4 tasks, 8 units and the cooldowns between) sets the run's length; the three first units end
    at 31 s and their sites cool until 131 s. Two of the three slots are spare: they wait, and w.com's and
    x.com's next units start in them at the cooldown's end; the third starts a fresh task (200 s). Before, all three
    started fresh 200 s tasks and the next units waited for them to end. Every unit runs, once."""
    tasks = make_tasks({"w.com": 4, "x.com": 1, "y.com": 1, "z.com": 1, "v.com": 1, "u.com": 1})
    ex = FakeExecutor({t.task_id: LONG for t in tasks if t.site in ("z.com", "v.com", "u.com")})
    rec = Recorder()
    shared, lanes = campaign(tmp_path, tasks, workers=3, pace_cooldown=COOLDOWN)
    stats = await Scheduler(shared, tasks, ex, [rec], lanes=lanes).run()
    assert stats.by_status == {"done": 2 * len(tasks)}                  # nothing starves: every unit ran, once
    first = starts(rec)
    (w0, _), (w1, wslot) = first["w.com-0"]
    (x0, _), (x1, xslot) = first["x.com-0"]
    assert w0 == x0 == 0.0                                     # the first units, at once
    assert w1 == pytest.approx(131.0, abs=0.1) and x1 == pytest.approx(131.0, abs=0.1)   # at the cooldown's end
    fresh = [(t, slot) for tid, units in first.items() if tid[0] in "zvu" for t, slot in units[:1] if t < 131.0]
    assert len(fresh) == 1 and fresh[0][1] not in (wslot, xslot)          # the slot not spare started fresh work


@pytest.mark.looptime
@pytest.mark.parametrize("pair_hold", [0.0, COOLDOWN])
async def test_while_every_slot_is_needed_nothing_waits_unless_the_user_chose_to(tmp_path, pair_hold):
    """Twenty fresh 200 s tasks: the run's length is its work per slot, so a slot that waited would lengthen it.
    With no `--pair-hold` every free slot takes fresh work and x.com's next unit waits for one to end; with
    `--pair-hold 100` a slot waits up to 100 s for it, and it starts at its cooldown's end."""
    tasks = make_tasks({"x.com": 1, **{f"f{i}.com": 1 for i in range(20)}})
    ex = FakeExecutor({t.task_id: LONG for t in tasks if t.site != "x.com"})
    rec = Recorder()
    shared, lanes = campaign(tmp_path, tasks, workers=3, pace_cooldown=COOLDOWN, pair_hold=pair_hold)
    await Scheduler(shared, tasks, ex, [rec], lanes=lanes).run()
    (x0, _), (x1, _) = starts(rec)["x.com-0"]
    assert x0 == 0.0
    if pair_hold:
        assert x1 == pytest.approx(131.0, abs=0.1)
    else:
        assert x1 > 200.0   # after a fresh 200 s episode ended


def test_no_slot_waits_before_episodes_are_done_for_half_the_slots():
    """The seconds a unit takes are learnt from the episodes done so far, and the first to end are the short ones:
    until episodes are done for half the slots, the slack is not trusted and no slot waits (but by `--pair-hold`)."""
    units = [dataclasses.replace(t, lane=lane)
             for t in make_tasks({"w.com": 5, "x.com": 1, "y.com": 1}) for lane in ("a", "b")]
    d = Dispatcher(SitePacer(COOLDOWN), units)
    for u in units:
        d.push(u)
    first = d.take("x.com")
    d.acquire("x.com", 0.0)
    d.release("x.com", 30.0)                     # x.com's next unit comes off its cooldown at 130
    d.take("w.com")
    d.acquire("w.com", 0.0)                      # w.com busy: its chain (9 units) sets the run's length
    assert d.pick(40.0, lambda: (1, 3)) == "y.com"
    d.learn(first.key, "done", 30.0)
    assert d.pick(40.0, lambda: (1, 3)) == "y.com"
    d.learn(first.key, "done", 30.0)             # two done, three slots: the spare slot now waits for x.com
    assert d.pick(40.0, lambda: (1, 3)) is None
    assert d.pick(40.0, lambda: (2, 3)) == "y.com"   # but one a next unit coming
    assert d.pick(130.0, lambda: (1, 3)) == "x.com"
