"""Episodes that end on their model, through the real scheduler with the stand-in worker, in virtual time: they are
settled as the model's failures (never retried as the harness's, never counted by the breaker), the model guard
holds dispatch after N in a row of one kind (the console's way: until its user resumes; headless: the running
episodes finish and the run ends, resumable), and the statistics every front end shows count each call."""

from __future__ import annotations

import asyncio

import pytest

from om2w_tui.engine.events import DispatchChanged, EpisodeModelCall, Log
from om2w_tui.engine.model_health import ModelGuard, ModelMeter
from om2w_tui.engine.results import read_results, settles
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.protocol.worker import ModelCall
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records

pytestmark = pytest.mark.looptime


def failing(tasks, kind, steps=2):
    return {t.task_id: Behaviour(steps=steps, step_s=5, model_failure=kind) for t in tasks}


async def test_the_first_three_episodes_on_one_model_failure_end_a_headless_run_resumably(tmp_path):
    tasks = make_tasks({f"s{i}.com": 1 for i in range(6)})
    ex, rec = FakeExecutor(failing(tasks, "context_length")), Recorder()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ex, [rec], guard_ends_run=True)
    await sched.run()
    rows = records(tmp_path)
    assert len(rows) == 3 and all(settles(r) for r in rows)          # the model's failures: settled, once
    assert {(r["status"], r["error_kind"], r["model_fault"]) for r in rows} == {("error", "model", "context_length")}
    assert all(r["model_calls"]["failures"] == {"context_length": 2} for r in rows)
    summary = sched.summary()
    assert summary.pending == 3 and "3 episodes in a row ended on the model" in summary.model_guard
    assert "--max-model-len" in summary.model_guard                  # the remedy is named
    assert summary.model_ended == {"context_length": 3} and summary.model_calls == {"context_length": 6}
    assert any(isinstance(e, DispatchChanged) and e.paused and "model guard" in e.reason for e in rec.events)
    # the next launch resumes: the three settled stay, the other three run
    ok = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ok, guard_ends_run=True).run()
    assert sorted(t for t, _ in ok.runs) == sorted(t.task_id for t in tasks[3:])
    assert read_results(tmp_path / "run").settled() == {t.task_id for t in tasks}


async def test_the_console_holds_dispatch_until_its_user_resumes(tmp_path):
    tasks = make_tasks({f"s{i}.com": 1 for i in range(5)})
    behaviour = {**failing(tasks[:3], "images_refused"), **{t.task_id: Behaviour(steps=1, step_s=5)
                                                             for t in tasks[3:]}}
    ex = FakeExecutor(behaviour)
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ex)

    async def resume_when_held():
        while not sched.model_guard.holding:
            await asyncio.sleep(1)
        held_at = asyncio.get_running_loop().time()
        await asyncio.sleep(600)                    # ten minutes held: nothing starts meanwhile
        assert len(ex.runs) == 3 and sched.snapshot().paused and "--no-vision" in sched.snapshot().model.guard
        sched.pause_dispatch(False)                 # p / ctl resume: go on
        return held_at

    waiter = asyncio.ensure_future(resume_when_held())
    await sched.run()
    held_at = await waiter
    assert len(ex.runs) == 5 and min(at for _, at in ex.runs[3:]) >= held_at + 600
    assert not sched.model_guard.holding and sched.summary().model_guard == ""


async def test_other_kinds_and_other_outcomes_break_the_row(tmp_path):
    kinds = ["unparseable", "truncated", "unparseable", None, "unparseable", "unparseable"]
    tasks = make_tasks({f"s{i}.com": 1 for i in range(len(kinds))})
    ex = FakeExecutor({t.task_id: Behaviour(steps=1, step_s=5, model_failure=k) for t, k in zip(tasks, kinds)})
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), tasks, ex, guard_ends_run=True)
    await sched.run()
    assert len(records(tmp_path)) == 6 and not sched.summary().model_guard   # never three of one kind in a row


async def test_an_endpoint_that_is_down_is_the_breakers_not_the_guards(tmp_path):
    tasks = make_tasks({f"s{i}.com": 1 for i in range(4)})
    ex = FakeExecutor({t.task_id: Behaviour(steps=1, step_s=5, infra_failures=1) for t in tasks})
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0, retries=1, breaker_after=9), tasks, ex,
                      guard_ends_run=True)
    await sched.run()
    rows = records(tmp_path)
    failed = [r for r in rows if r["status"] == "error"]
    assert len(failed) == 4 and {(r["error_kind"], r["model_fault"]) for r in failed} == {("endpoint", "unreachable")}
    assert not any(settles(r) for r in failed) and len(rows) == 8   # retried: each task's second attempt is done
    assert not sched.summary().model_guard


async def test_the_guard_can_be_turned_off(tmp_path):
    tasks = make_tasks({f"s{i}.com": 1 for i in range(4)})
    ex = FakeExecutor(failing(tasks, "unparseable", steps=1))
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0, model_guard=0), tasks, ex, guard_ends_run=True)
    await sched.run()
    assert len(records(tmp_path)) == 4 and sched.pending() == 0


async def test_every_call_reaches_the_front_ends_and_the_snapshot(tmp_path):
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    ex, rec = FakeExecutor({tasks[0].task_id: Behaviour(steps=3, step_s=5),
                            tasks[1].task_id: Behaviour(steps=2, step_s=5, model_failure="empty")}), Recorder()
    sched = Scheduler(config(tmp_path, workers=2, pace_cooldown=0), tasks, ex, [rec])
    await sched.run()
    calls = rec.of(EpisodeModelCall)
    assert sorted(c.kind for c in calls) == ["empty", "empty", "ok", "ok", "ok"]
    firsts = [e for e in rec.of(Log) if "a model call failed: empty" in e.message]
    assert len(firsts) == 1                          # said once a run, when the kind first appears
    stats = sched.snapshot().model
    assert (stats.calls, stats.ok, stats.failures, stats.ended_on) == (5, 3, {"empty": 2}, {"empty": 1})
    assert stats.latency_p50_s == 0.5 and stats.last_error.startswith("empty: injected")


def test_the_meter_counts_a_minute_and_the_latest_calls():
    meter = ModelMeter()
    for i in range(30):
        meter.call(float(i * 4), slot=i % 2, call=ModelCall("ok", latency_s=1.0 + i / 10, prompt_tokens=600,
                                                             completion_tokens=60))
    meter.call(120.0, 0, ModelCall("timeout", 30.0, message="Request timed out."))
    stats = meter.stats(120.0)
    assert stats.calls == 31 and stats.calls_per_min == 16.0     # the calls of the last 60 s (t >= 60)
    assert stats.tokens_in_per_s == round(15 * 600 / 60, 1)
    assert stats.latency_p50_s == pytest.approx(2.5) and stats.latency_p95_s == pytest.approx(3.8)
    assert meter.slot_error(0) == "timeout" and meter.slot_error(1) == ""
    meter.episode_ended(0, None, 0)
    assert meter.slot_error(0) == ""


def test_a_guard_trips_once_and_names_the_remedy():
    said = []
    guard = ModelGuard(2, said.append)
    assert not guard.note("truncated", "finish_reason length after 4096 characters")
    assert guard.note("truncated", "again")
    guard.trip(ends_run=False)
    assert guard.holding and "--max-completion-tokens" in guard.reason
    assert not guard.note("truncated")                           # already holding: no second trip
    assert [type(e) for e in said] == [DispatchChanged, Log] and "press p" in said[1].message
    guard.clear()
    assert not guard.holding and guard.in_a_row == 0
