"""The defects an outside review found (issue 9), each pinned by a test that reads every record, not the latest.

The scheduler runs in virtual time against the stand-in worker of `tests/fakes.py`, which is as racy as a process:
starts take time, a killed worker's exit is seen late, its last event may land after the kill."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import Task, TaskFileError, parse_tasks
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished, EpisodePutBack
from om2w_tui.engine.redact import redact_argv, redact_url
from om2w_tui.engine.results import ResultsStore, read_results, settles
from om2w_tui.engine.runlock import OutFolderBusy, RunLock, check_free
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.engine.slot import _usable
from om2w_tui.episode.worker import EventWriter, event_stream
from om2w_tui.executors.local import WorkerProcess
from om2w_tui.protocol.codec import to_json
from om2w_tui.protocol.worker import EVENTS, Exited, Finished, Outcome, Pause
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records


def settling_records(tmp_path: Path) -> dict[str, list[dict]]:
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in records(tmp_path):
        if settles(r):
            by_task[r["task_id"]].append(r)
    return by_task


def assert_each_settled_once(tmp_path: Path, tasks: list[Task], ex: FakeExecutor) -> None:
    """Every task has exactly one settling record, it is the task's last record, and nothing ran after it."""
    rows = records(tmp_path)
    for t in tasks:
        mine = [r for r in rows if r["task_id"] == t.task_id]
        settling = [r for r in mine if settles(r)]
        assert len(settling) == 1, (t.task_id, [(r["status"], r["error"], r["attempt"]) for r in mine])
        assert mine[-1] is settling[0], (t.task_id, [(r["status"], r["attempt"]) for r in mine])
        assert [r["attempt"] for r in mine] == list(range(1, len(mine) + 1)), t.task_id
        # each run the worker was handed ends in exactly one record: none ran after it settled, none twice
        assert len([tid for tid, _ in ex.runs if tid == t.task_id]) == len(mine), t.task_id


# ── 1. the breaker requeued tasks twice ─────────────────────
@pytest.mark.looptime
@pytest.mark.parametrize("retries", [0, 1])
async def test_an_endpoint_down_for_20s_gives_every_task_exactly_one_final_record(tmp_path, retries):
    """Six tasks, two slots, the model server down for the first 20 s: the breaker trips, probes, resumes. Every task
    ends with one settling record and is run while no other attempt of it runs (defect: two `done` for a task)."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    tasks = make_tasks({f"s{i}.com": 1 for i in range(6)})
    ex = FakeExecutor({t.task_id: Behaviour(steps=1, step_s=2) for t in tasks}, endpoint_down=True)
    loop.call_at(t0 + 20, setattr, ex, "endpoint_down", False)

    async def probe() -> bool:
        return loop.time() >= t0 + 20

    sched = Scheduler(config(tmp_path, workers=2, pace_cooldown=0, retries=retries, breaker_after=3,
                             probe_interval=5), tasks, ex, [Recorder()], probe=probe)
    await sched.run()
    assert_each_settled_once(tmp_path, tasks, ex)
    assert {r[0]["status"] for r in settling_records(tmp_path).values()} == {"done"}
    assert not sched.streak and not sched.queue.get("s0.com")
    done, errors = sched.done_count()
    assert (done, errors) == (6, 0)


# ── 2. a judge that raises hung the run ─────────────────────
@pytest.mark.looptime
async def test_a_judge_that_raises_costs_the_verdict_not_the_record_nor_the_run(tmp_path):
    def judge(task, rec):
        raise TypeError("'int' object is not iterable")

    rec = Recorder()
    tasks = make_tasks({"a.com": 2, "b.com": 1})
    ex = FakeExecutor()
    await asyncio.wait_for(Scheduler(config(tmp_path, pace_cooldown=0), tasks, ex, [rec], judge=judge).run(), 3600)
    assert_each_settled_once(tmp_path, tasks, ex)
    assert all("correct" not in r for r in records(tmp_path))
    assert any("reference judge failed" in e.message for e in rec.events if type(e).__name__ == "Log")


def test_a_reference_answer_that_is_a_number_is_refused_at_load(tmp_path):
    row = {"task_id": "t1", "confirmed_task": "x", "website": "https://a.com", "reference_answer": 42}
    with pytest.raises(TaskFileError, match=r"tasks.json:1: task #1: reference_answer of task t1 must be a string"):
        parse_tasks(tmp_path / "tasks.json", json.dumps([row]))
    row["reference_answer"], row["max_steps"] = ["ok"], "30"
    with pytest.raises(TaskFileError, match="max_steps of task t1 must be a whole number"):
        parse_tasks(tmp_path / "tasks.json", json.dumps([row]))


# ── 3. a short write counted as written ─────────────────────
def test_a_short_write_is_cut_back_and_raised(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path)
    store.append({"task_id": "a", "status": "done"})
    before = store.path.read_bytes()
    real_write = os.write

    def short(fd, data):   # a nearly full disk: part of the line, no error
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(os, "write", short)
    with pytest.raises(OSError) as e:
        store.append({"task_id": "b", "status": "done", "answer": "x" * 200})
    assert e.value.errno == errno.ENOSPC
    assert store.path.read_bytes() == before          # nothing torn left behind
    monkeypatch.setattr(os, "write", real_write)
    store.append({"task_id": "c", "status": "done"})
    log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a", "c"] and log.warnings == []


@pytest.mark.looptime
async def test_a_short_write_mid_run_keeps_the_record_and_writes_it_whole_later(tmp_path, monkeypatch):
    real_write = os.write
    state = {"short": False}

    def maybe_short(fd, data):
        if state["short"] and data.startswith(b"{"):
            return real_write(fd, data[:7])
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", maybe_short)
    loop = asyncio.get_running_loop()
    tasks = make_tasks({"a.com": 1, "b.com": 1, "c.com": 1})
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0, probe_interval=30), tasks, ex)
    monkeypatch.setattr(sched, "_space_ok", lambda: not state["short"])
    loop.call_later(35, state.update, {"short": True})      # after the first record, before the second
    loop.call_later(400, state.update, {"short": False})
    await sched.run()
    log = read_results(tmp_path / "run")
    assert log.warnings == []
    assert sorted(r["task_id"] for r in log.records) == ["a.com-0", "b.com-0", "c.com-0"]
    assert_each_settled_once(tmp_path, tasks, ex)


# ── 4. the run ended with its last record unwritten ─────────
@pytest.mark.looptime
async def test_a_disk_full_at_the_end_keeps_the_run_waiting_until_the_record_is_written(tmp_path, monkeypatch):
    loop = asyncio.get_running_loop()
    full = {"on": False}
    real_append = ResultsStore.append

    def append(self, record):
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, record)

    monkeypatch.setattr(ResultsStore, "append", append)
    tasks = make_tasks({"a.com": 1})
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=1, probe_interval=30), tasks, ex)
    monkeypatch.setattr(sched, "_space_ok", lambda: not full["on"])
    loop.call_later(10, full.update, {"on": True})       # the disk fills while the only episode runs
    loop.call_later(1000, full.update, {"on": False})
    stats = await sched.run()
    assert loop.time() >= 1000 and stats.unwritten == 0
    assert [r["task_id"] for r in records(tmp_path)] == ["a.com-0"]


@pytest.mark.looptime
async def test_a_run_stopped_while_the_disk_is_full_says_which_records_are_unwritten(tmp_path, monkeypatch):
    loop = asyncio.get_running_loop()

    def append(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultsStore, "append", append)
    rec = Recorder()
    sched = Scheduler(config(tmp_path, workers=1), make_tasks({"a.com": 1}), FakeExecutor(), [rec])
    monkeypatch.setattr(sched, "_space_ok", lambda: False)
    loop.call_later(500, sched.stop)
    stats = await sched.run()
    assert stats.unwritten == 1
    assert any("record not written" in e.message and "a.com-0" in e.message
               for e in rec.events if type(e).__name__ == "Log")
    assert rec.events[-1].summary.unwritten == 1


# ── 5. a widened cooldown did not reach the next episode ────
@pytest.mark.looptime
async def test_a_bot_wall_widens_the_gap_before_the_next_episode_on_the_site(tmp_path):
    ex = FakeExecutor({"a.com-0": Behaviour(steps=1, step_s=10, blocked=True)})
    tasks = make_tasks({"a.com": 3})
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=120), tasks, ex)
    await sched.run()
    rows = records(tmp_path)
    assert [r["status"] for r in rows] == ["blocked", "done", "done"]
    gap1 = rows[1]["started_at"] - rows[0]["finished_at"]
    gap2 = rows[2]["started_at"] - rows[1]["finished_at"]
    assert gap1 >= 240 - 1.5          # the doubled cooldown, not the old one
    assert 120 < gap2 < 240           # one clean episode relaxes it part of the way, not straight to the base


# ── 6. a slow worker start was recorded as a timeout ────────
@pytest.mark.looptime
async def test_a_worker_slower_to_start_than_the_timeout_costs_nothing(tmp_path):
    ex = FakeExecutor(start_s=300)
    tasks = make_tasks({"a.com": 1})
    await Scheduler(config(tmp_path, workers=1, timeout=200), tasks, ex).run()
    assert [(r["status"], r["steps"]) for r in records(tmp_path)] == [("done", 3)]
    assert (tmp_path / "run" / "a.com-0" / "result.json").exists()


@pytest.mark.looptime
@pytest.mark.parametrize("requeue", [False, True])
async def test_a_kill_while_the_worker_starts_puts_the_task_back(tmp_path, requeue):
    ex = FakeExecutor(start_s=30)
    tasks = make_tasks({"a.com": 1})
    rec = Recorder()
    sched = Scheduler(config(tmp_path, workers=1), tasks, ex, [rec])
    asyncio.get_running_loop().call_later(10, sched.kill, 0, requeue)
    await sched.run()
    assert [(r["status"], r["attempt"]) for r in records(tmp_path)] == [("done", 1)]
    assert [(e.task_id, e.attempt) for e in rec.of(EpisodePutBack)] == [("a.com-0", 1)]   # no record, no try
    assert [e.requeued for e in rec.of(EpisodeFinished)] == [False]


# ── 7. a killed worker was handed the next episode ──────────
@pytest.mark.looptime
async def test_a_killed_worker_is_never_handed_the_next_episode(tmp_path):
    """The worker ignores the timeout's stop and is killed; its last event lands after the kill and its exit is seen
    late. The next task must get a new worker, not a spurious infra error."""
    ex = FakeExecutor({"a.com-0": Behaviour(steps=100, step_s=60, ignore_stop=True)}, exit_seen_s=5)
    tasks = make_tasks({"a.com": 1, "b.com": 1})
    await Scheduler(config(tmp_path, workers=1, timeout=200, stop_grace=20, pace_cooldown=0), tasks, ex).run()
    rows = records(tmp_path)
    assert [(r["task_id"], r["status"]) for r in rows] == [("a.com-0", "timeout"), ("b.com-0", "done")]
    assert ex.started == [0, 0]


async def test_a_real_worker_is_unusable_from_the_moment_it_is_killed(tmp_path):
    """The real worker process: `killed` is set by the kill itself, before its exit is seen."""
    w = WorkerProcess(0, tmp_path / "worker_0.log")
    await w.start()
    try:
        w.kill_group()
        assert w.killed and not await w.send(Pause())
        assert not _usable(w)
        assert isinstance(await asyncio.wait_for(w.next_event(), 30), Exited) and w.exited
    finally:
        await w.kill()


# ── 9. a lone surrogate dropped the `finished` event ────────
def test_a_finished_event_with_a_lone_surrogate_crosses_the_pipe_and_lands_in_the_results(tmp_path):
    r, w = os.pipe()
    answer = "price \udcff\ud800 ok \\\udc80"
    EventWriter(event_stream(w))(Finished(Outcome("done", answer=answer)))
    with open(r, "rb") as f:
        line = f.readline()
    ev = EVENTS.read(line)        # how the console reads events
    assert isinstance(ev, Finished) and ev.outcome.answer == answer
    ResultsStore(tmp_path).append({"task_id": "a", **to_json(ev.outcome)})
    assert read_results(tmp_path).records[0]["answer"] == answer


# ── 10. reserved names as task ids ──────────────────────────
@pytest.mark.parametrize("tid", ["run.json", "results_x.jsonl", "results.jsonl", "worker_0.log",
                                 "webjudge_o4-mini_score_threshold_3_auto_eval_results.json", "labels.ann.json",
                                 "RUN.JSON"])
def test_the_runs_own_file_names_are_refused_as_task_ids(tmp_path, tid):
    row = {"task_id": tid, "confirmed_task": "x", "website": "https://a.com"}
    with pytest.raises(TaskFileError, match="the name of one of the run's own files"):
        parse_tasks(tmp_path / "t.jsonl", json.dumps(row))


def test_a_folder_named_like_a_results_file_does_not_break_resume(tmp_path):
    (tmp_path / "results_x.jsonl").mkdir()
    ResultsStore(tmp_path).append({"task_id": "a", "status": "done"})
    assert [r["task_id"] for r in read_results(tmp_path).records] == ["a"]


# ── 11. two runs on one out folder ──────────────────────────
def test_a_second_run_on_the_out_folder_is_refused_naming_the_holder(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(OutFolderBusy, match=rf"pid {os.getpid()} on \S+"):
            RunLock(tmp_path).acquire()
        assert "another run is using this folder" in check_free(tmp_path)
    assert check_free(tmp_path) == ""
    with RunLock(tmp_path):   # released: the next run takes it
        pass


# ── 12. the event loop blocked; loose ends ──────────────────
@pytest.mark.looptime
async def test_records_are_written_off_the_event_loop_in_order(tmp_path, monkeypatch):
    threads = []
    real_append = ResultsStore.append

    def append(self, record):
        threads.append(threading.current_thread() is threading.main_thread())
        real_append(self, record)

    monkeypatch.setattr(ResultsStore, "append", append)
    tasks = make_tasks({"a.com": 3, "b.com": 2})
    await Scheduler(config(tmp_path, pace_cooldown=10), tasks, FakeExecutor()).run()
    assert threads and not any(threads)
    rows = records(tmp_path)
    assert [r["finished_at"] for r in rows] == sorted(r["finished_at"] for r in rows)


@pytest.mark.looptime
async def test_resuming_while_the_disk_is_full_runs_one_probe_at_a_time(tmp_path, monkeypatch):
    loop = asyncio.get_running_loop()
    probes = {"now": 0, "most": 0, "calls": 0}
    full = {"on": True}

    def append(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    def space_ok():
        probes["now"] += 1
        probes["calls"] += 1
        probes["most"] = max(probes["most"], probes["now"])
        probes["now"] -= 1
        return not full["on"]

    monkeypatch.setattr(ResultsStore, "append", append)
    sched = Scheduler(config(tmp_path, workers=1, probe_interval=30), make_tasks({"a.com": 1}), FakeExecutor())
    monkeypatch.setattr(sched, "_space_ok", space_ok)
    for i in range(20):                                   # the user presses `p` twice a second for 10 s
        loop.call_later(100 + i / 2, sched.pause_dispatch, i % 2 == 0)
    loop.call_later(400, sched.stop)
    await sched.run()
    assert probes["most"] == 1
    assert probes["calls"] <= 400 / 30 + 10 + 2          # one chain, plus at most one probe per resume


@pytest.mark.looptime
async def test_nothing_the_scheduler_started_outlives_its_run(tmp_path):
    ex = FakeExecutor()
    sched = Scheduler(config(tmp_path, workers=3, pace_cooldown=0), make_tasks({"a.com": 1, "b.com": 1}), ex)
    loop = asyncio.get_running_loop()
    loop.call_later(12, sched.set_workers, 1)
    loop.call_later(13, sched.pause_episode, 0, True)
    loop.call_later(14, sched.pause_episode, 0, False)
    await sched.run()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert others == []


@pytest.mark.looptime
async def test_retrying_errors_of_an_earlier_run_takes_them_out_of_the_done_count(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text(
        json.dumps({"task_id": "a.com-0", "status": "error", "error": "agent gave up", "error_kind": "agent"}) + "\n")
    rec = Recorder()
    sched = Scheduler(config(tmp_path, workers=1, pace_cooldown=0), make_tasks({"a.com": 2}), FakeExecutor(), [rec])
    asyncio.get_running_loop().call_later(5, sched.retry_errors)
    await sched.run()
    assert sched.stats.settled_before == 0 and sched.done_count() == (2, 0)
    assert [(e.done, e.errors) for e in rec.of(EpisodeFinished)] == [(1, 0), (2, 0)]


def test_credentials_in_the_endpoint_url_are_never_recorded(tmp_path):
    url = "https://alice:hunter2@llm.example/v1?api_key=sk-abc123&region=eu"
    d = RunConfig(out=tmp_path, vllm=url).to_json()
    text = json.dumps(d)
    assert "hunter2" not in text and "sk-abc123" not in text and "alice" not in text
    assert d["vllm"] == "https://***@llm.example/v1?api_key=***&region=eu"
    assert redact_url("http://127.0.0.1:8400/v1") == "http://127.0.0.1:8400/v1"
    argv = ["run", "--vllm", url, f"--vllm={url}", "--model", "m"]
    assert "hunter2" not in json.dumps(redact_argv(argv)) and redact_argv(["--out", "x"]) == ["--out", "x"]



def test_appenders_at_once_never_leave_an_empty_line_in_a_judge_file(tmp_path: Path) -> None:
    """Several judges append to one judge file at once (a node's shards, a campaign's lanes' judges in threads). Each
    looked at the file's last byte to end a torn line first: looking while another's line was half-written, it took
    that line for torn and ended it again, an empty line after it (190 in 790 lines here; a reader of the file's JSON
    lines stopped there). The look and the write are now one step under a lock."""
    from om2w_tui.files import append_own

    path = tmp_path / "judge.jsonl"
    line = b'{"task_id": "' + b"t" * 200_000 + b'"}\n'     # long: a write another appender can look into

    def append() -> None:
        for _ in range(60):
            append_own(path, line)

    threads = [threading.Thread(target=append) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and lines[:-1] == [line[:-1]] * 360
