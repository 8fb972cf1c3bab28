"""A defect the property test found (tests/unit/test_scheduler_properties.py): a worker that vanishes on reading its
task, stopped before its exit is seen, turns an episode that never ran into a record.

docs/pacing.md: "An episode stopped before its worker had it (`k` on a slot still `starting`, Ctrl-C) goes back in the
queue with no record", and an episode put back before its worker had it costs the site no cooldown. A worker that
dies having read the command, before it says `started`, never had the task: left alone, the scheduler puts it back
for free (`_put_back`). But when a stop lands between the command and the exit being seen, `Attempt._lost` takes the
stop to mean the worker had the task: the attempt is recorded (`killed`, 0 steps, an attempt number used), the site
is charged its cooldown, and a user's `k` settles a task of which nothing ran.

Runs in virtual time against the stand-in worker of `tests/fakes.py` (its exit is seen `exit_seen_s` late).
"""

from __future__ import annotations

import asyncio

import pytest

from om2w_tui.engine.events import EpisodePutBack, EpisodeStarted
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records


@pytest.mark.looptime
async def test_k_on_a_slot_whose_worker_vanished_before_starting_the_task_puts_it_back(tmp_path):
    """One task, one slot, cooldown 60 s: the worker takes 1 s to start, reads the task and dies before a word of it;
    its exit is seen 3 s later. The user presses `k` on the slot (still `starting`) 1 s after the task was sent. The
    task goes back in the queue with no record and no cooldown, runs on a new worker, and is recorded once: done."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    tasks = make_tasks({"a.com": 1})
    ex = FakeExecutor({tasks[0].task_id: Behaviour(steps=1, step_s=1.0, vanish_before_start=1)},
                      start_s=1.0, exit_seen_s=3.0)
    rec = Recorder()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=60), tasks, ex, [rec])
    loop.call_at(t0 + 2.0, sched.kill, 0)    # the task was sent at t0 + 1; the worker's exit is seen at t0 + 4
    await sched.run()

    statuses = [(r["status"], r["error"], r["attempt"]) for r in records(tmp_path)]
    assert statuses == [("done", None, 1)], statuses
    assert len(rec.of(EpisodePutBack)) == 1
    starts = [t for t, ev in rec.timed if isinstance(ev, EpisodeStarted)]
    assert starts[1] - t0 < 60, f"the site was charged a cooldown: the second start at {starts[1] - t0:.1f} s"
