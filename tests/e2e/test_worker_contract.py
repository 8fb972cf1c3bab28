"""One contract, three workers: the stand-in the scheduler's unit tests use (tests/fakes.py), the one the
benchmarks simulate with (bench/_common.py's SimExecutor) and the real worker process (`WorkerProcess`: Chromium,
the offline sites, the oracle, the protocol's pipe), each held to the same promises the scheduler builds on:

- a run says started, then its steps, then finished with the outcome (steps kept, the record's part);
- a stop mid-episode ends it with the stop's reason, its finished steps kept;
- a kill mid-step is final: nothing more is said, the exit is seen (late), and a command after it is refused;
- a pause before any run is ignored (nothing said, nothing changed), and the next run is not paused;
- a second run while one runs is refused with a log line, and the first goes on to its end.

If a stand-in and the real process disagree, the scheduler's unit tests (or a benchmark's figures) are about a
worker that does not exist; this file is where they are made to agree."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import live_offline_task, offline_tasks
from om2w_tui.episode.browser import find_chromium
from om2w_tui.executors.local import LocalExecutor
from om2w_tui.protocol.worker import (
    EPISODE_SCRATCH,
    EPISODE_SCRATCH_PREFIX,
    Event,
    Exited,
    Finished,
    Pause,
    Run,
    Started,
    Step,
    Stop,
    WorkerLog,
)
from tests.fakes import Behaviour, FakeExecutor

pytestmark = [pytest.mark.timeout(600)]
TASK_ID = "offline_shop_cart_05"          # seven steps: time enough to stop or kill it in the middle


@contextlib.asynccontextmanager
async def real_worker(tmp_path: Path) -> AsyncIterator[tuple[Any, Callable[[str], Run]]]:
    from om2w_tui.offline import OfflineSuite, OracleServer

    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        tasks = {t.task_id: live_offline_task(t, suite.base_urls) for t in offline_tasks()[1]}
        cfg = RunConfig(out=tmp_path, bench="offline", model="oracle-slow-1", max_steps=12,
                        chromium=find_chromium(None))
        executor = LocalExecutor(tmp_path)   # the worker forked from its zygote, as a run's are
        try:
            worker = await executor.start_worker(0)
            try:
                yield worker, lambda tid: Run(tasks[tid].to_dict(),
                                              cfg.worker_spec(tmp_path / tid, base_url=oracle.url,
                                                              max_steps=tasks[tid].max_steps))
            finally:
                await worker.kill()
        finally:
            await executor.aclose()


def fake_worker(tmp_path: Path) -> contextlib.AbstractAsyncContextManager[tuple[Any, Callable[[str], Run]]]:
    ex = FakeExecutor({TASK_ID: Behaviour(steps=7, step_s=1.0)}, start_s=0.2, exit_seen_s=0.3)
    return started(ex, tmp_path)


def bench_worker(tmp_path: Path) -> contextlib.AbstractAsyncContextManager[tuple[Any, Callable[[str], Run]]]:
    return started(bench_common().SimExecutor({TASK_ID: 7.0}, step_s=1.0), tmp_path)


@contextlib.asynccontextmanager
async def started(executor: Any, tmp_path: Path) -> AsyncIterator[tuple[Any, Callable[[str], Run]]]:
    """A stand-in's worker for slot 0 and how to make a run of a task for it."""
    worker = await executor.start_worker(0)
    cfg = RunConfig(out=tmp_path, max_steps=12, chromium="/bin/true")
    try:
        yield worker, lambda tid: Run({"task_id": tid, "confirmed_task": "x", "website": "http://x/"},
                                      cfg.worker_spec(tmp_path / tid, max_steps=cfg.max_steps))
    finally:
        await worker.kill()


@functools.cache
def bench_common() -> Any:
    """bench/_common.py, which the benchmarks import by its folder (bench/ is no package)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "_common.py"
    spec = importlib.util.spec_from_file_location("bench_common", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules["bench_common"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WORKERS = pytest.mark.parametrize("make", [pytest.param(fake_worker, id="stand-in"),
                                           pytest.param(bench_worker, id="bench"),
                                           pytest.param(real_worker, id="real", marks=pytest.mark.e2e)])


async def until(worker: Any, want: Callable[[Event], bool], timeout: float = 240) -> list[Event]:
    """The events up to and including the first that `want` accepts."""
    seen: list[Event] = []
    async with asyncio.timeout(timeout):
        while True:
            ev = await worker.next_event()
            seen.append(ev)
            if want(ev):
                return seen


def steps_in(events: list[Event]) -> int:
    return max((e.step for e in events if isinstance(e, Step)), default=0)


@WORKERS
async def test_a_run_says_started_its_steps_and_its_outcome(tmp_path, make):
    async with make(tmp_path) as (worker, run):
        assert await worker.send(run(TASK_ID))
        events = await until(worker, lambda e: isinstance(e, Finished))
        assert isinstance(events[0], Started) and events[0].task_id == TASK_ID
        outcome = events[-1].outcome
        assert outcome.status == "done" and outcome.steps == steps_in(events) >= 3
        assert outcome.model is not None and outcome.model.calls >= outcome.steps   # every call counted


@WORKERS
async def test_a_stop_mid_episode_keeps_its_steps(tmp_path, make):
    async with make(tmp_path) as (worker, run):
        assert await worker.send(run(TASK_ID))
        before = await until(worker, lambda e: isinstance(e, Step) and e.step >= 2)
        assert await worker.send(Stop("killed", "killed by user"))
        after = await until(worker, lambda e: isinstance(e, Finished))
        outcome = after[-1].outcome
        assert outcome.status == "killed" and outcome.steps >= steps_in(before) >= 2


@WORKERS
async def test_a_kill_mid_step_is_final(tmp_path, make):
    async with make(tmp_path) as (worker, run):
        assert await worker.send(run(TASK_ID))
        await until(worker, lambda e: isinstance(e, Step))
        worker.kill_group()
        assert worker.killed and not await worker.send(Pause())     # refused at once, before the exit is seen
        after = await until(worker, lambda e: isinstance(e, Exited))
        assert not any(isinstance(e, Finished) for e in after), after   # a killed process says nothing more
        assert worker.exited


@WORKERS
async def test_a_pause_before_any_run_is_ignored(tmp_path, make):
    async with make(tmp_path) as (worker, run):
        assert await worker.send(Pause())
        assert await worker.send(run(TASK_ID))
        events = await until(worker, lambda e: isinstance(e, Finished))
        assert events[-1].outcome.status == "done"                   # the run was not paused by it
        assert not any(type(e).__name__ in ("Paused", "Resumed") for e in events)


@WORKERS
async def test_a_second_run_while_one_runs_is_refused(tmp_path, make):
    async with make(tmp_path) as (worker, run):
        assert await worker.send(run(TASK_ID))
        await until(worker, lambda e: isinstance(e, Step))
        assert await worker.send(run(TASK_ID))
        events = await until(worker, lambda e: isinstance(e, Finished))
        refused = [e for e in events if isinstance(e, WorkerLog) and "run refused" in e.message]
        assert len(refused) == 1 and not any(isinstance(e, Started) for e in events)
        assert events[-1].outcome.status == "done"


@pytest.mark.e2e
async def test_a_worker_killed_mid_episode_leaves_no_temp_folder(tmp_path):
    """Its parent made its temp folder and removes it once the exit is seen, with the episode's it names (Chromium's
    profile): a killed worker removes nothing itself, and a long run's kills would fill the node's /tmp."""
    async with real_worker(tmp_path) as (worker, run):
        scratch = worker.scratch
        assert scratch is not None and scratch.is_dir()
        assert await worker.send(run(TASK_ID))
        await until(worker, lambda e: isinstance(e, Step))
        episode = Path((scratch / EPISODE_SCRATCH).read_text())
        assert episode.name.startswith(EPISODE_SCRATCH_PREFIX) and (episode / "profile").is_dir()   # Chromium's
        worker.kill_group()
        await until(worker, lambda e: isinstance(e, Exited))
        assert not scratch.exists() and not episode.exists(), sorted(p.name for p in episode.parent.iterdir())
