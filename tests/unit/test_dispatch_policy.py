"""The dispatch rule, in virtual time: the longest chain of work first, the longest task first on a site, and the
last free slot kept for a cooling site whose chain sets the run's length (bench/makespan.py measures the effect)."""

from __future__ import annotations

from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor

pytestmark = pytest.mark.looptime


def task(tid: str, site: str, ref: int | None = None) -> Task:
    raw = {"reference_length": ref} if ref else {}
    return Task(tid, f"do {tid}", f"https://www.{site}/", "easy", raw)


def config(tmp_path: Path, **kw) -> RunConfig:
    kw.setdefault("timeout", 3600)
    return RunConfig(out=tmp_path / "run", **kw)


async def test_on_a_site_the_longest_task_goes_first_and_file_order_breaks_ties(tmp_path):
    tasks = [task("a0", "a.com", 3), task("a1", "a.com", 12), task("a2", "a.com", 3), task("a3", "a.com", 7)]
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ex).run()
    assert [tid for tid, _ in ex.runs] == ["a1", "a3", "a0", "a2"]


async def test_the_site_with_the_longer_chain_goes_first_not_the_one_with_more_tasks(tmp_path):
    # two long tasks outweigh three short ones: 2 x 20 units against 3 x 2 units
    tasks = [task(f"s{i}", "short.com", 2) for i in range(3)] + [task(f"l{i}", "long.com", 20) for i in range(2)]
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ex).run()
    assert ex.runs[0][0] == "l0"


async def test_a_slot_waits_for_the_site_whose_chain_sets_the_run_length(tmp_path):
    """Four tasks on big.com (a chain of 4 x 30 s and 3 cooldowns of 120 s) against four 100 s tasks elsewhere, two
    slots: each time big.com's cooldown ends a slot is free for it, so its chain runs back to back. Filling every
    slot would have big.com wait for an episode to end (its second episode at 200 s instead of 150 s)."""
    tasks = [task(f"big{i}", "big.com") for i in range(4)] + [task(f"x{i}", f"x{i}.com") for i in range(4)]
    ex = FakeExecutor({t.task_id: Behaviour(steps=3, step_s=10.0 if t.task_id.startswith("big") else 100 / 3)
                       for t in tasks}, start_s=0.0)
    await Scheduler(config(tmp_path, workers=2, pace_cooldown=120), tasks, ex).run()
    big = [at for tid, at in ex.runs if tid.startswith("big")]
    gaps = [b - a for a, b in zip(big, big[1:])]
    assert gaps == pytest.approx([150.0] * 3, abs=0.5)   # 30 s an episode + 120 s cooldown, never more


async def test_no_slot_is_kept_when_the_other_work_is_the_longer(tmp_path):
    """A shorter big.com chain, and eight long tasks elsewhere: the other work needs both slots, none is kept."""
    tasks = [task(f"big{i}", "big.com") for i in range(3)] + [task(f"x{i}", f"x{i}.com") for i in range(8)]
    ex = FakeExecutor({t.task_id: Behaviour(steps=3, step_s=10.0 if t.task_id.startswith("big") else 60.0)
                       for t in tasks}, start_s=0.0)
    sched = Scheduler(config(tmp_path, workers=2, pace_cooldown=120), tasks, ex)
    await sched.run()
    starts = sorted(at for _, at in ex.runs)
    assert starts[:2] == pytest.approx([0.0, 0.0], abs=0.5)
    assert starts[2] == pytest.approx(30.0, abs=0.5)   # the slot big.com's first episode freed is filled at once
