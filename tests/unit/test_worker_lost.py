"""The paths where a worker is not there to run the attempt, through the real scheduler with the stand-in worker in
virtual time: a worker that fails to start (the attempt is the harness's failure, retried with a new worker) and one
that vanishes between the `run` command and its `started` (nothing of the task ran: put back for free, a few times,
then recorded as the harness's failure so that a task that kills every worker cannot loop forever)."""

from __future__ import annotations

import asyncio

import pytest

from om2w_tui.engine.events import DispatchChanged, EpisodePutBack
from om2w_tui.engine.results import settles
from om2w_tui.engine.scheduler import FREE_RESTARTS, Scheduler
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records

pytestmark = pytest.mark.looptime


async def test_a_worker_that_fails_to_start_is_an_infra_error_retried_with_a_new_worker(tmp_path):
    ex = FakeExecutor(fail_starts=1)
    tasks = make_tasks({"a.com": 1})
    await Scheduler(config(tmp_path, workers=1, retries=1), tasks, ex).run()
    rows = records(tmp_path)
    assert [(r["status"], r["error_kind"], r["attempt"]) for r in rows] == [("error", "infra", 1), ("done", None, 2)]
    assert "failed to start (injected)" in rows[0]["error"] and not settles(rows[0])
    assert ex.started == [0] and [t for t, _ in ex.runs] == ["a.com-0"]   # only the second start ran it


async def test_a_worker_that_vanishes_before_it_starts_the_task_puts_it_back_for_free(tmp_path):
    tasks = make_tasks({"a.com": 1})
    ex, rec = FakeExecutor({"a.com-0": Behaviour(vanish_before_start=2)}), Recorder()
    await Scheduler(config(tmp_path, workers=1, retries=0), tasks, ex, [rec]).run()
    rows = records(tmp_path)
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)]        # no record, no try used
    assert [(e.task_id, e.attempt) for e in rec.of(EpisodePutBack)] == [("a.com-0", 1)] * 2
    assert len(ex.runs) == 3 and len(ex.started) == 3                          # a new worker each time


async def test_a_task_whose_worker_always_vanishes_is_recorded_after_its_free_restarts(tmp_path):
    tasks = make_tasks({"a.com": 1})
    ex, rec = FakeExecutor({"a.com-0": Behaviour(vanish_before_start=100)}), Recorder()
    await Scheduler(config(tmp_path, workers=1, retries=1), tasks, ex, [rec]).run()
    rows = records(tmp_path)
    assert len(rec.of(EpisodePutBack)) == FREE_RESTARTS        # free restarts are counted per task, not per try
    assert [(r["status"], r["error_kind"], r["attempt"]) for r in rows] == [("error", "infra", 1),
                                                                              ("error", "infra", 2)]
    assert all(r["error"].startswith("worker process exited") for r in rows)


async def test_an_episode_that_could_not_write_its_folder_waits_for_space_and_costs_no_try(tmp_path):
    """The worker's outcome says `storage` (its folder could not be written): dispatch stops with the folder's
    problem, the task is queued again costing no try (retries 0), and runs once the probe finds space."""
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    ex, rec = FakeExecutor({"a.com-0": Behaviour(steps=1, step_s=5, storage_failures=1)}), Recorder()
    sched = Scheduler(config(tmp_path, workers=1, retries=0, probe_interval=30, pace_cooldown=0), tasks, ex, [rec])
    full = {"on": True}
    sched._space_ok = lambda: not full["on"]          # read in the probe's thread: a flag the loop's clock flips
    loop = asyncio.get_running_loop()
    freed_at = loop.time() + 100
    loop.call_at(freed_at, full.update, {"on": False})
    await sched.run()
    rows = records(tmp_path)
    first = [r for r in rows if r["task_id"] == "a.com-0"]
    assert [(r["status"], r["error_kind"]) for r in first] == [("error", "storage"), ("done", None)]
    assert not settles(first[0])
    paused = [e for e in rec.of(DispatchChanged) if e.paused]
    assert paused and "could not write its folder" in paused[0].reason
    later = sorted(at for _, at in ex.runs)[1:]
    assert later and all(at >= freed_at for at in later)   # nothing started while the folder was full
