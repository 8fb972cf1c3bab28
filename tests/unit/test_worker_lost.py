"""The paths where a worker is not there to run the attempt, through the real scheduler with the stand-in worker in
virtual time: a worker that fails to start (the attempt is the harness's failure, retried with a new worker) and one
that vanishes between the `run` command and its `started` (nothing of the task ran: put back for free, a few times,
then recorded as the harness's failure so that a task that kills every worker cannot loop forever)."""

from __future__ import annotations

import pytest

from om2w_tui.engine.events import EpisodePutBack
from om2w_tui.engine.results import settles
from om2w_tui.engine.scheduler import FREE_RESTARTS, Scheduler
from tests.fakes import Behaviour, FakeExecutor

from .test_scheduler import Recorder, config, make_tasks, records

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
