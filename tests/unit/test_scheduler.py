"""The scheduler alone, with a stand-in worker, in virtual time (looptime): pacing, timeouts, resume, control."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.events import EpisodeFinished, EpisodeStarted
from om2w_tui.engine.results import read_results
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records

pytestmark = pytest.mark.looptime


async def test_every_task_runs_once_and_records_its_fields(tmp_path):
    ex, rec = FakeExecutor(), Recorder()
    tasks = make_tasks({"a.com": 2, "b.com": 2, "c.com": 1})
    tasks[0] = dataclasses.replace(tasks[0], max_steps=7)   # a task's own budget, decided at load
    stats = await Scheduler(config(tmp_path), tasks, ex, [rec]).run()
    rows = records(tmp_path)
    assert sorted(r["task_id"] for r in rows) == sorted(t.task_id for t in tasks)
    assert stats.by_status == {"done": 5}
    for r in rows:
        assert {"task_id", "arm", "website", "level", "steps", "actions", "screenshots", "answer", "duration_s",
                "error", "status", "started_at", "finished_at", "attempt", "slot", "model"} <= r.keys()
        assert r["status"] == "done" and r["steps"] == 3 and r["attempt"] == 1
        assert r["max_steps"] == next(t.max_steps for t in tasks if t.task_id == r["task_id"])   # its budget
        assert r["finished_at"] - r["started_at"] == pytest.approx(30, abs=1.5)
    assert len(rec.of(EpisodeFinished)) == 5
    assert {r["max_steps"] for r in rows} == {7, config(tmp_path).max_steps}


async def test_one_episode_per_site_and_the_cooldown_between(tmp_path):
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=3, pace_cooldown=120), make_tasks({"a.com": 3, "b.com": 1}), ex).run()
    rows = sorted((r for r in records(tmp_path) if r["website"].startswith("https://www.a.com")),
                  key=lambda r: r["started_at"])
    assert len(rows) == 3
    for prev, nxt in zip(rows, rows[1:]):
        assert nxt["started_at"] >= prev["finished_at"] + 120 - 0.01   # never overlapping, cooldown kept


async def test_the_busiest_site_goes_first(tmp_path):
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=0),
                    make_tasks({"small.com": 1, "big.com": 3}), ex).run()
    assert ex.runs[0][0].startswith("big.com")


async def test_dispatch_waits_for_a_cooldown_without_polling(tmp_path):
    """Two tasks on one site, one slot: the second starts exactly when the cooldown ends."""
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=300), make_tasks({"a.com": 2}), ex).run()
    (t1, s1), (t2, s2) = ex.runs
    assert s2 - s1 == pytest.approx(30 + 300, abs=0.5)


async def test_a_timeout_keeps_the_finished_steps(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=100, step_s=60)})
    await Scheduler(config(tmp_path, workers=1, timeout=200), make_tasks({"a.com": 1}), ex).run()
    (r,) = records(tmp_path)
    assert r["status"] == "timeout" and r["steps"] == 3       # steps at 60, 120, 180 s; the timeout at 200 s
    assert r["duration_s"] == pytest.approx(200, abs=1.5)
    assert len(list((tmp_path / "run" / "a.com-0" / "trajectory").iterdir())) == 3


async def test_a_worker_that_ignores_the_stop_is_ended_after_the_grace(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=100, step_s=60, ignore_stop=True)})
    await Scheduler(config(tmp_path, workers=1, timeout=200, stop_grace=20), make_tasks({"a.com": 1}), ex).run()
    (r,) = records(tmp_path)
    assert r["status"] == "timeout" and r["actions"] == 3      # read back from the folder the worker left
    assert r["duration_s"] == pytest.approx(220, abs=1.5)
    assert ex.workers[0].exited


async def test_a_crashed_worker_is_recorded_as_infra_and_replaced(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(die_at_step=1)})
    stats = await Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 2}), ex).run()
    by_id = {r["task_id"]: r for r in records(tmp_path)}
    rows = records(tmp_path)
    crash = rows[0]
    assert crash["task_id"] == "a.com-0" and crash["status"] == "error" and crash["error_kind"] == "infra"
    assert crash["actions"] == 1 and "worker process exited" in crash["error"]
    assert by_id["a.com-1"]["status"] == "done"
    # a.com-0 crashes its worker each time: tried once more (--retries 1), each crash replaced the worker
    assert ex.started == [0, 0, 0] and stats.by_status == {"error": 2, "done": 1}
    assert [r["attempt"] for r in rows if r["task_id"] == "a.com-0"] == [1, 2]


async def test_a_second_run_starts_nothing(tmp_path):
    tasks = make_tasks({"a.com": 2, "b.com": 1})
    await Scheduler(config(tmp_path), tasks, FakeExecutor()).run()
    ex, rec = FakeExecutor(), Recorder()
    stats = await Scheduler(config(tmp_path), tasks, ex, [rec]).run()
    assert ex.runs == [] and ex.started == [] and stats.finished == 0 and stats.settled_before == 3
    assert len(records(tmp_path)) == 3


async def test_seed_slot_files_count_as_finished(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results_3.jsonl").write_text(json.dumps({"task_id": "a.com-0", "steps": 4}) + "\n")
    ex = FakeExecutor()
    await Scheduler(config(tmp_path), make_tasks({"a.com": 2}), ex).run()
    assert [t for t, _ in ex.runs] == ["a.com-1"]


async def test_a_stopped_run_reruns_its_interrupted_episodes_keeping_the_earlier_attempt(tmp_path):
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    sched = Scheduler(config(tmp_path, pace_cooldown=0), tasks, FakeExecutor())

    async def stop_soon():
        await asyncio.sleep(15)      # workers start at 1 s, one step done at 11 s
        sched.stop()

    asyncio.get_running_loop().create_task(stop_soon())
    await sched.run()
    first = records(tmp_path)
    assert {r["status"] for r in first} == {"killed"} and {r["error"] for r in first} == {"interrupted"}
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, pace_cooldown=0), tasks, ex).run()
    assert sorted(t for t, _ in ex.runs) == ["a.com-0", "b.com-0"]
    latest = read_results(tmp_path / "run").latest_records()
    assert all(r.status == "done" and r.attempt == 2 for r in latest.values())
    kept = tmp_path / "run" / "a.com-0" / "attempts" / "1"
    assert (kept / "result.json").exists() and (kept / "trajectory" / "0_full_screenshot.png").exists()
    assert not [p for p in (tmp_path / "run").iterdir() if p.is_dir() and p.name not in ("a.com-0", "b.com-0")]


async def test_paused_dispatch_starts_nothing_until_resumed(tmp_path):
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 1, "b.com": 1}), ex)
    sched.user_paused = True
    loop = asyncio.get_running_loop()
    loop.call_later(1000, sched.pause_dispatch, False)
    await sched.run()
    assert min(t for _, t in ex.runs) >= 1000


async def test_a_paused_episode_does_not_use_its_timeout(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=3, step_s=50)})
    sched = Scheduler(config(tmp_path, workers=1, timeout=200), make_tasks({"a.com": 1}), ex)
    loop = asyncio.get_running_loop()
    loop.call_later(20, sched.pause_episode, 0, True)
    loop.call_later(520, sched.pause_episode, 0, False)   # 500 s paused: past the 200 s timeout
    await sched.run()
    (r,) = records(tmp_path)
    assert r["status"] == "done" and r["steps"] == 3


async def test_more_workers_start_more_episodes_at_once(tmp_path):
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 1, "b.com": 1,
                                                                               "c.com": 1}), ex)
    asyncio.get_running_loop().call_later(5, sched.set_workers, 3)
    await sched.run()
    starts = sorted(t for _, t in ex.runs)
    assert starts[2] < 30     # all three began before the first one (30 s) ended


async def test_a_killed_and_requeued_episode_runs_again(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=5, step_s=10)})
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 1}), ex)
    asyncio.get_running_loop().call_later(25, sched.kill, 0, True)
    await sched.run()
    rows = records(tmp_path)
    assert [(r["status"], r["attempt"]) for r in rows] == [("killed", 1), ("done", 2)]
    assert rows[0]["actions"] == 2


async def test_a_killed_episode_stays_killed(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=5, step_s=10)})
    sched = Scheduler(config(tmp_path, workers=1), make_tasks({"a.com": 1}), ex)
    asyncio.get_running_loop().call_later(25, sched.kill, 0)
    await sched.run()
    (r,) = records(tmp_path)
    assert r["status"] == "killed" and r["error"] == "killed by user"
    ex2 = FakeExecutor()
    await Scheduler(config(tmp_path, workers=1), make_tasks({"a.com": 1}), ex2).run()
    assert ex2.runs == []


async def test_every_worker_is_closed_at_the_end(tmp_path):
    ex = FakeExecutor()
    await Scheduler(config(tmp_path, workers=3), make_tasks({"a.com": 1, "b.com": 1}), ex).run()
    assert ex.workers and all(w.closed for w in ex.workers)


async def test_events_come_in_order_for_each_episode(tmp_path):
    rec = Recorder()
    await Scheduler(config(tmp_path), make_tasks({"a.com": 1}), FakeExecutor(), [rec]).run()
    kinds = [type(e).__name__ for e in rec.events if type(e).__name__ in ("EpisodeStarted", "EpisodeStep",
                                                                          "EpisodeFinished")]
    assert kinds == ["EpisodeStarted", "EpisodeStep", "EpisodeStep", "EpisodeStep", "EpisodeFinished"]
    assert rec.of(EpisodeStarted)[0].site == "a.com"


async def test_an_infra_error_is_tried_again_as_a_new_attempt(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(infra_failures=1)})
    await Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 1}), ex).run()
    rows = records(tmp_path)
    assert [(r["status"], r["attempt"]) for r in rows] == [("error", 1), ("done", 2)]
    assert (tmp_path / "run" / "a.com-0" / "attempts" / "1").is_dir()


async def test_retries_are_bounded_and_the_task_stays_unsettled(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(infra_failures=5)})
    stats = await Scheduler(config(tmp_path, workers=1, pace_cooldown=0, retries=2, breaker_after=99),
                            make_tasks({"a.com": 1}), ex).run()
    assert [r["attempt"] for r in records(tmp_path)] == [1, 2, 3]
    assert stats.by_status == {"error": 3}
    assert "a.com-0" not in read_results(tmp_path / "run").settled()   # the next launch tries it again


async def test_the_breaker_pauses_dispatch_while_the_endpoint_is_down_and_no_task_loses_its_result(tmp_path):
    """Every episode fails while the 'endpoint' is down (the first 600 s); the breaker stops dispatch after 3 in a
    row, probes, and resumes when it answers: every task ends done."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    down_until = t0 + 600
    tasks = make_tasks({f"s{i}.com": 1 for i in range(8)})
    ex = FakeExecutor({t.task_id: Behaviour(infra_failures=99, steps=1, step_s=5) for t in tasks})

    async def probe() -> bool:
        up = loop.time() >= down_until
        if up:
            for b in ex.behaviour.values():
                b.infra_failures = 0
        return up

    rec = Recorder()
    sched = Scheduler(config(tmp_path, workers=2, pace_cooldown=0, retries=1, breaker_after=3, probe_interval=30),
                      tasks, ex, [rec], probe=probe)
    await sched.run()
    latest = read_results(tmp_path / "run").latest_records()
    assert {r.status for r in latest.values()} == {"done"} and len(latest) == 8
    paused = [e for e in rec.events if type(e).__name__ == "DispatchChanged"]
    assert paused[0].paused and "circuit breaker" in paused[0].reason
    assert not paused[-1].paused and "answers again" in paused[-1].reason
    failures = [r for r in records(tmp_path) if r["status"] == "error"]
    assert 3 <= len(failures) <= 4       # the breaker opened after 3 in a row (one more was already running)
    starts_while_down = [t for _, t in ex.runs if t0 + 20 < t < down_until]
    assert starts_while_down == []


async def test_an_unwritable_results_file_stops_dispatch_and_keeps_the_record(tmp_path, monkeypatch):
    """The disk fills after the first record: dispatch stops with a message naming the file; once the user
    resumes (space freed), the kept record is written and the run goes on. No line is half-written."""
    from om2w_tui.engine.results import ResultsStore

    real_append = ResultsStore.append
    full = {"on": False, "calls": 0}

    def append(self, record):
        full["calls"] += 1
        if full["on"]:
            raise OSError(28, "No space left on device")
        real_append(self, record)
        full["on"] = full["calls"] == 1

    monkeypatch.setattr(ResultsStore, "append", append)
    rec = Recorder()
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 1, "b.com": 1,
                                                                              "c.com": 1}), ex, [rec])

    def free_space():
        full["on"] = False
        sched.pause_dispatch(False)

    asyncio.get_running_loop().call_later(500, free_space)
    await sched.run()
    stops = [e for e in rec.events if type(e).__name__ == "DispatchChanged" and e.paused]
    assert stops and "No space left on device" in stops[0].reason and "results.jsonl" in stops[0].reason
    fault_at = next(t for t, e in rec.timed if type(e).__name__ == "DispatchChanged" and e.paused)
    assert len(ex.runs) == 3
    assert not [t for _, t in ex.runs if fault_at < t < 500]   # nothing started while the disk was full
    assert sorted(r["task_id"] for r in records(tmp_path)) == ["a.com-0", "b.com-0", "c.com-0"]


async def test_an_episode_says_its_own_step_budget(tmp_path, monkeypatch):
    """A task's step budget is decided at load (its own max_steps, else the run's) and read from the task by the
    scheduler's events, its snapshot and the worker's spec: the Slots panel shows `step k/5`, the worker runs 5."""
    from om2w_tui.benchmarks.tasks import parse_tasks
    from om2w_tui.protocol.worker import Run
    from tests.fakes import FakeWorker

    rows = [{"task_id": "a.com-0", "confirmed_task": "do it", "website": "https://www.a.com/", "max_steps": 5},
            {"task_id": "b.com-0", "confirmed_task": "do it", "website": "https://www.b.com/"}]
    tasks = parse_tasks(tmp_path / "tasks.json", json.dumps(rows), max_steps=12)
    sent: dict[str, int] = {}
    send = FakeWorker.send

    async def recording(self, cmd):
        if isinstance(cmd, Run):
            sent[cmd.task["task_id"]] = cmd.spec.max_steps
        return await send(self, cmd)

    monkeypatch.setattr(FakeWorker, "send", recording)
    rec = Recorder()
    # the config's own figure is not asked again: the tasks carry theirs
    sched = Scheduler(config(tmp_path, workers=2, max_steps=12), tasks, FakeExecutor(), [rec])
    seen = {}
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time() + 5, lambda: seen.update(snap=sched.snapshot()))
    await sched.run()
    assert {e.task_id: e.max_steps for e in rec.of(EpisodeStarted)} == {"a.com-0": 5, "b.com-0": 12} == sent
    assert sorted(s.max_steps for s in seen["snap"].slots) == [5, 12]


async def test_an_interrupt_stops_gracefully_and_a_second_ends_the_workers_now(tmp_path):
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    # stuck workers: the graceful stop would wait its grace (120 s) before killing them
    ex = FakeExecutor({t.task_id: Behaviour(ignore_stop=True) for t in tasks})
    sched = Scheduler(config(tmp_path, pace_cooldown=0, stop_grace=120), tasks, ex)
    loop = asyncio.get_running_loop()
    said: list[tuple[float, str]] = []
    loop.call_at(loop.time() + 15, lambda: said.append((loop.time(), sched.interrupt())))
    loop.call_at(loop.time() + 20, lambda: said.append((loop.time(), sched.interrupt())))
    await sched.run()
    assert [w for _, w in said] == ["stopping", "forced"]
    assert loop.time() < 20 + 5          # ended by the second interrupt, not after the grace
    assert {(r["status"], r["error"]) for r in records(tmp_path)} == {("killed", "interrupted")}
    assert sched.snapshot().stopping and sched.snapshot().running == 0


async def test_a_site_with_no_task_left_is_done_not_cooling(tmp_path):
    """a.com's one task ends at 30 s: its cooldown runs to 150 s, but it waits for nothing (issue 26 item 10)."""
    sched = Scheduler(config(tmp_path, workers=2, pace_cooldown=120), make_tasks({"a.com": 1, "b.com": 3}),
                      FakeExecutor())
    seen = {}
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time() + 40, lambda: seen.update(snap=sched.snapshot()))
    await sched.run()
    states = {s.site: (s.state, s.left) for s in seen["snap"].sites}
    assert states["a.com"] == ("done", 0)
    assert states["b.com"] == ("cooling", 2)


async def test_sites_are_shown_by_the_name_the_report_gives_them(tmp_path):
    """The offline suite's sites run on 127.0.0.1 ports; the events and the snapshot name them as the report does
    (benchmarks/site_keys.site_name), never 127.0.0.1:PORT."""
    rec = Recorder()
    tasks = [Task("s-0", "buy", "http://127.0.0.1:41001/", "easy"), Task("w-0", "read", "http://127.0.0.1:41002/x")]
    sched = Scheduler(config(tmp_path, workers=2), tasks, FakeExecutor(), [rec],
                      site_names={"127.0.0.1:41001": "shop", "127.0.0.1:41002": "wiki"})
    seen = {}
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time() + 5, lambda: seen.update(snap=sched.snapshot()))
    await sched.run()
    assert sorted(s.site for s in seen["snap"].sites) == ["shop", "wiki"]
    assert sorted(s.site for s in seen["snap"].slots) == ["shop", "wiki"]
    assert sorted(e.site for e in rec.of(EpisodeStarted)) == ["shop", "wiki"]
