"""The scheduler's promises as invariants, searched by hypothesis over random interleavings in virtual time.

Each example is a random run: tasks on a few sites whose stand-in workers finish, crash, hang, hit bot walls or
fail as the endpoint's fault; starts that take time and kills whose exits are seen late (tests/fakes.py); and a
random script of user and world events at random times: kills, kill-and-requeues, episode and dispatch pauses,
slot changes, retrying errors, the model server going down and up, the disk filling and freeing. Then:

- every task ends with at most one settling record, the last of its records; each run its worker was handed
  ended in exactly one record; attempts count 1, 2, 3 ...;
- never more episodes of one site at once than `--site-slots` allows (one, mostly), and the gap on a site is never
  below the cooldown it had when its last episode ended (a widened one included);
- no slot idles while a task may start (sampled throughout the run);
- the run ends only when every task is settled (or failed through the harness's fault past its retries), unless
  it was stopped; and nothing the scheduler started outlives it.

`OM2W_PROPERTY_EXAMPLES` sets how many schedules are searched (CI runs the default, the same ones each time);
`OM2W_PROPERTY_RANDOM=1` searches new ones.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import looptime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished, EpisodePutBack, EpisodeStarted
from om2w_tui.engine.results import INTERRUPTED, read_results, settles
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor

EXAMPLES = int(os.environ.get("OM2W_PROPERTY_EXAMPLES", "1500"))
SCRIPT_END = 600.0          # the script's events fall before this; then the world heals
WORLD_HEALS = 700.0
RUN_LIMIT = 10 ** 7         # virtual seconds: a run still going then has hung
SAMPLE_EVERY = 3.7
# looptime lets this many idle loop cycles pass before it moves the clock (its default, 42, is 4x slower here)
NOOP_CYCLES = 2
# the same schedules every run (CI stays reproducible); OM2W_PROPERTY_RANDOM=1 searches new ones
RANDOM = os.environ.get("OM2W_PROPERTY_RANDOM") == "1"

OPS = ("kill", "requeue", "pause_ep", "resume_ep", "pause", "resume", "workers", "retry", "down", "up",
       "disk_full", "disk_ok")


@dataclass
class World:
    disk_full: bool = False
    stopped: bool = False


@st.composite
def runs(draw: Any) -> dict[str, Any]:
    n_sites = draw(st.integers(1, 4))
    tasks, behaviour = [], {}
    for s in range(n_sites):
        for i in range(draw(st.integers(1, 4))):
            t = Task(f"s{s}-{i}", f"task {i} on site {s}", f"https://s{s}.example/", "easy")
            tasks.append(t)
            behaviour[t.task_id] = Behaviour(
                steps=draw(st.integers(0, 4)), step_s=draw(st.sampled_from([1.0, 7.0, 40.0])),
                blocked=draw(st.integers(0, 7)) == 0,
                die_at_step=draw(st.one_of(st.none(), st.integers(0, 2))) if draw(st.integers(0, 5)) == 0 else None,
                infra_failures=draw(st.sampled_from([0, 0, 0, 1, 3])),
                ignore_stop=draw(st.integers(0, 6)) == 0,
                stop_delay_s=draw(st.sampled_from([0.0, 0.0, 2.0, 30.0])))
    cfg = dict(workers=draw(st.integers(1, 4)), pace_cooldown=draw(st.sampled_from([0.0, 10.0, 60.0])),
               timeout=draw(st.sampled_from([25.0, 90.0, 1000.0])), retries=draw(st.integers(0, 2)),
               breaker_after=draw(st.integers(1, 4)), probe_interval=draw(st.sampled_from([5.0, 30.0])),
               stop_grace=draw(st.sampled_from([3.0, 20.0])), site_slots=draw(st.sampled_from([1, 1, 1, 2, 0])))
    script = draw(st.lists(st.tuples(st.floats(0, SCRIPT_END, allow_nan=False), st.sampled_from(OPS),
                                     st.integers(0, 4)), max_size=14))
    return {"tasks": tasks, "behaviour": behaviour, "cfg": cfg, "script": sorted(script),
            "start_s": draw(st.sampled_from([0.5, 5.0, 40.0])), "exit_seen_s": draw(st.sampled_from([0.1, 3.0])),
            "stop_at": draw(st.one_of(st.none(), st.floats(1, SCRIPT_END))) if draw(st.integers(0, 4)) == 0 else None}


@dataclass
class Watcher:
    """A sink that keeps what the invariants need, read off the scheduler at the moment each event happens."""
    ex: FakeExecutor
    sched: Scheduler | None = None
    started: list[tuple[float, str, str]] = field(default_factory=list)          # (t, site, task)
    finished: list[tuple[float, str, str, float]] = field(default_factory=list)  # (t, site, task, ready_at)
    paced: list[tuple[float, str, float, float]] = field(default_factory=list)   # reached: (t, task, ready, cooldown)
    timeline: list[tuple[str, float, str, float]] = field(default_factory=list)  # (start|end, t, site, ready_at)
    _runs_at_start: dict[str, int] = field(default_factory=dict)
    idle_with_work: list[str] = field(default_factory=list)

    def handle(self, ev: object) -> None:
        now = asyncio.get_running_loop().time()
        if isinstance(ev, EpisodeStarted):
            self.started.append((now, ev.site, ev.task_id))
            self.timeline.append(("start", now, ev.site, 0.0))
            self._runs_at_start[ev.task_id] = self.runs_of(ev.task_id)
        elif isinstance(ev, EpisodeFinished | EpisodePutBack):
            tid = ev.record.task_id if isinstance(ev, EpisodeFinished) else ev.task_id
            site = next(t.site for t in self.sched.tasks if t.task_id == tid)
            st = self.sched.pacer.state(site)
            self.finished.append((now, site, tid, st.ready_at))
            self.timeline.append(("end", now, site, st.ready_at))
            if self.runs_of(tid) > self._runs_at_start[tid]:   # its worker had the task: the site was visited
                self.paced.append((now, tid, st.ready_at, st.cooldown))

    def runs_of(self, task_id: str) -> int:
        return sum(1 for tid, _ in self.ex.runs if tid == task_id)

    def startable(self) -> tuple[int, str] | None:
        """A free slot and a site that may start now, while dispatch may start it."""
        s = self.sched
        if s is None or s.stopping or s.dispatch_paused or s._wake is None:
            return None
        now = s.loop.time()
        free = [x.id for x in s.slots.values() if x.episode is None and not x.retired]
        site = s._pick_site(now)
        return (free[0], site) if free and site else None

    async def sample(self) -> None:
        """No slot idles while a task may start: a moment that shows one must be gone a moment later."""
        while True:
            await asyncio.sleep(SAMPLE_EVERY)
            seen = self.startable()
            if seen is None:
                continue
            n = len(self.started)
            await asyncio.sleep(0.01)
            if self.startable() == seen and len(self.started) == n:
                self.idle_with_work.append(f"t={self.sched.loop.time():.2f}: slot {seen[0]} idle, {seen[1]} ready")


def drive(example: dict[str, Any], folder: Path) -> None:
    loop = looptime.new_event_loop(start=0, _enabled=True, noop_cycles=NOOP_CYCLES)
    try:
        loop.run_until_complete(asyncio.wait_for(_run(example, folder), RUN_LIMIT))
    finally:
        loop.close()


async def _run(example: dict[str, Any], folder: Path) -> None:
    loop = asyncio.get_running_loop()
    ours = asyncio.all_tasks()
    ex = FakeExecutor({k: Behaviour(**vars(b)) for k, b in example["behaviour"].items()},
                      start_s=example["start_s"], exit_seen_s=example["exit_seen_s"])
    world = World()
    watcher = Watcher(ex)
    cfg = RunConfig(out=folder, **example["cfg"])

    async def probe() -> bool:
        return not ex.endpoint_down

    sched = Scheduler(cfg, example["tasks"], ex, [watcher], probe=probe)
    watcher.sched = sched
    real_append = sched.store.append

    def append(record: dict[str, Any]) -> None:
        if world.disk_full:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(record)

    sched.store.append = append                       # type: ignore[method-assign]
    sched._space_ok = lambda: not world.disk_full     # type: ignore[method-assign]

    def act(op: str, arg: int) -> None:
        slot = sorted(sched.slots)[arg % len(sched.slots)] if sched.slots else 0
        if op == "kill":
            sched.kill(slot)
        elif op == "requeue":
            sched.kill(slot, requeue=True)
        elif op == "pause_ep":
            sched.pause_episode(slot, True)
        elif op == "resume_ep":
            sched.pause_episode(slot, False)
        elif op == "pause":
            sched.pause_dispatch(True)
        elif op == "resume":
            sched.pause_dispatch(False)
        elif op == "workers":
            sched.set_workers(arg + 1)
        elif op == "retry":
            sched.retry_errors()
        elif op == "down":
            ex.endpoint_down = True
        elif op == "up":
            ex.endpoint_down = False
        elif op == "disk_full":
            world.disk_full = True
        elif op == "disk_ok":
            world.disk_full = False

    def heal() -> None:
        ex.endpoint_down = world.disk_full = False
        sched.pause_dispatch(False)
        for slot in list(sched.slots):
            sched.pause_episode(slot, False)

    def stop() -> None:
        world.stopped = True
        sched.stop()

    for at, op, arg in example["script"]:
        loop.call_at(at, act, op, arg)
    loop.call_at(WORLD_HEALS, heal)
    if example["stop_at"] is not None:
        loop.call_at(example["stop_at"], stop)
    sampler = asyncio.ensure_future(watcher.sample())
    try:
        await sched.run()
    finally:
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
    leftovers = [t for t in asyncio.all_tasks() - ours if not t.done()]
    assert leftovers == [], f"tasks outlive the run: {leftovers}"
    check(example, folder, ex, watcher, world, sched)


def check(example: dict[str, Any], folder: Path, ex: FakeExecutor, w: Watcher, world: World,
          sched: Scheduler) -> None:
    rows = read_results(folder).records + [r.to_json() for r in sched.unwritten]   # kept in memory: named
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_task[r["task_id"]].append(r)
    runs = defaultdict(int)
    for tid, _ in ex.runs:
        runs[tid] += 1
    retries = example["cfg"]["retries"]
    for t in example["tasks"]:
        mine = by_task[t.task_id]
        trail = [(r["status"], r["error"], r["attempt"]) for r in mine]
        settling = [r for r in mine if settles(r)]
        assert len(settling) <= 1, (t.task_id, "settled more than once", trail)
        if settling:
            assert mine[-1] is settling[0], (t.task_id, "ran after it was settled", trail)
        assert [r["attempt"] for r in mine] == list(range(1, len(mine) + 1)), (t.task_id, trail)
        assert runs[t.task_id] == len(mine), (t.task_id, f"{runs[t.task_id]} runs, {len(mine)} records", trail)
        if not world.stopped and sched.stats.unwritten == 0:
            retried = ("infra", "endpoint")   # the harness's faults that cost a try
            harness_gave_up = bool(mine) and mine[-1]["status"] == "error" and mine[-1]["error_kind"] in retried
            assert settling or harness_gave_up, (t.task_id, "the run ended with the task unsettled", trail)
            if harness_gave_up:
                assert len([r for r in mine if r["error_kind"] in retried]) >= retries + 1, (t.task_id, trail)
        if world.stopped:
            assert all(r["error"] != INTERRUPTED or not settles(r) for r in mine)
    if not world.stopped:
        assert sched.stats.unwritten == 0 and not sched.unwritten, "records left unwritten at the end"
        assert sched.pending() == 0 and not sched.running()

    # pacing, in the order things happened: never more episodes of a site at once than it allows, and none starts
    # before the ready time the site's last ended episode left
    limit = example["cfg"]["site_slots"]
    on_site: dict[str, int] = defaultdict(int)
    ready: dict[str, float] = defaultdict(float)
    for kind, t, site, value in w.timeline:
        if kind == "start":
            on_site[site] += 1
            assert not limit or on_site[site] <= limit, (site, f"{on_site[site]} episodes at once (limit {limit})")
            assert t >= ready[site] - 1e-3, (site, f"started at {t} before the site was ready at {ready[site]}")
        else:
            on_site[site] -= 1
            ready[site] = value
    # an episode that reached its site leaves it ready no sooner than its end plus the cooldown it had then
    for t, tid, ready_at, cooldown in w.paced:
        assert ready_at >= t + cooldown - 1e-6, (tid, t, ready_at, cooldown)
        if limit == 1:
            assert abs(ready_at - (t + cooldown)) < 1e-6, (tid, t, ready_at, cooldown)
    assert w.idle_with_work == [], w.idle_with_work[:3]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(runs())
def test_no_interleaving_loses_a_task_runs_it_twice_or_breaks_pacing(example):
    folder = Path(tempfile.mkdtemp(prefix="om2w-prop-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        drive(example, folder / "run")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
