"""A run's end typed once (protocol/run_end.py): the scheduler decides it into the summary its `RunFinished`
carries, the control socket carries it, and a headless run's exit code follows from it (a `ctl stop` exits 0, a
Ctrl-C 130, the model guard 3, records lost 1). The scheduler runs the stand-in worker in virtual time."""

from __future__ import annotations

import asyncio
import json

import pytest

from om2w_tui import exits
from om2w_tui.engine.events import RunFinished, RunSummary
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.engine.wire import line, read
from om2w_tui.frontends.headless import exit_code
from om2w_tui.protocol.control import RunInfo, Subscribed
from om2w_tui.protocol.run_end import RunEnd, decide
from tests.fakes import Behaviour, FakeExecutor, Recorder

from .helpers import config, make_tasks


def test_the_rule_most_serious_first():
    assert decide(failed=True, guard_ended=True, stopped=True) is RunEnd.ERROR
    assert decide(failed=False, guard_ended=True, stopped=True) is RunEnd.GUARD
    assert decide(failed=False, guard_ended=False, stopped=True) is RunEnd.STOPPED
    assert decide(failed=False, guard_ended=False, stopped=False) is RunEnd.FINISHED
    assert [e.words for e in RunEnd] == ["finished", "stopped", "ended by its model guard", "failed"]


@pytest.mark.parametrize("end,interrupted,code", [
    (RunEnd.FINISHED, False, exits.OK),
    (RunEnd.STOPPED, False, exits.OK),              # `ctl stop`: the run did what it was asked
    (RunEnd.STOPPED, True, exits.INTERRUPTED),      # Ctrl-C, SIGTERM
    (RunEnd.GUARD, False, exits.MODEL_GUARD),
    (RunEnd.GUARD, True, exits.INTERRUPTED),
    (RunEnd.ERROR, True, exits.FAILED),             # records lost: whatever else
    (None, True, exits.INTERRUPTED),
    (None, False, exits.OK),
])
def test_a_headless_runs_exit_code_follows_its_end(end, interrupted, code):
    assert exit_code(end, interrupted) == code


def test_the_end_crosses_the_control_socket():
    got = read(line(RunFinished(RunSummary(total=3, end=RunEnd.GUARD))))
    assert isinstance(got, RunFinished) and got.summary.end is RunEnd.GUARD
    sub = read(line(Subscribed(RunInfo(pid=1, out="/o", end=RunEnd.STOPPED))))
    assert isinstance(sub, Subscribed) and sub.run.end is RunEnd.STOPPED
    assert RunSummary(end=RunEnd.ERROR).to_json()["end"] == "error"


def ended(rec: Recorder) -> RunEnd:
    finished = [e for e in rec.events if isinstance(e, RunFinished)]
    assert len(finished) == 1
    return finished[0].summary.end


@pytest.mark.looptime
async def test_the_scheduler_says_how_its_run_ended(tmp_path):
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    rec = Recorder()
    await Scheduler(config(tmp_path / "done", pace_cooldown=0), tasks, FakeExecutor(), [rec]).run()
    assert ended(rec) is RunEnd.FINISHED

    rec = Recorder()
    sched = Scheduler(config(tmp_path / "stopped", pace_cooldown=0), tasks, FakeExecutor(), [rec])
    asyncio.get_running_loop().call_later(15, sched.stop)
    await sched.run()
    assert ended(rec) is RunEnd.STOPPED

    rec = Recorder()
    sites = make_tasks({f"s{i}.com": 1 for i in range(5)})
    failing = FakeExecutor({t.task_id: Behaviour(steps=2, step_s=5, model_failure="context_length") for t in sites})
    cfg = config(tmp_path / "guard", workers=1, pace_cooldown=0)
    await Scheduler(cfg, sites, failing, [rec], guard_ends_run=True).run()
    assert ended(rec) is RunEnd.GUARD


@pytest.mark.looptime
@pytest.mark.parametrize("kind", ["plain run", "campaign"])
async def test_a_run_going_on_says_no_end_until_it_has_ended(tmp_path, kind):
    """A snapshot taken while the run goes on (`ctl status --json`'s) says no end (defect: `"end": "finished"` while
    it ran); the summary its end carries says how it ended."""
    from om2w_tui.cli.ctl import status_json

    from .helpers import campaign

    tasks = make_tasks({"a.com": 2, "b.com": 1})
    if kind == "campaign":
        shared, lanes = campaign(tmp_path, tasks, pace_cooldown=0)
        sched = Scheduler(shared, tasks, FakeExecutor(), [rec := Recorder()], lanes=lanes)
    else:
        sched = Scheduler(config(tmp_path, pace_cooldown=0), tasks, FakeExecutor(), [rec := Recorder()])
    run = asyncio.ensure_future(sched.run())
    await asyncio.sleep(15)
    snap = sched.snapshot()
    assert sched.running() and snap.summary.end is None and sched.summary().end is None
    said = status_json(RunInfo(pid=1, out=str(tmp_path)), snap)
    assert said["run"]["end"] is None and said["snapshot"]["summary"]["end"] is None
    assert '"end": "' not in json.dumps(said)   # nowhere in the answer
    await run
    assert ended(rec) is RunEnd.FINISHED and sched.summary().end is RunEnd.FINISHED
