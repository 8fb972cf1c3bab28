"""What the benchmarks share: the two benchmark-shaped task sets, a long-tailed episode length for each task, a
stand-in worker that steps like a real one on the event loop's clock, a virtual-time loop, and small statistics.

The stand-in worker (`SimExecutor`) is a fake: it is used only where a benchmark says it simulates (makespan in
virtual time, dispatch latency, scale); every claim about real behaviour is measured with real workers."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:   # `python bench/x.py` runs with bench/ on the path, not the repository
    sys.path.insert(0, str(REPO))

from om2w_tui.benchmarks.tasks import Task, load_tasks  # noqa: E402
from om2w_tui.protocol.model import ModelCalls  # noqa: E402
from om2w_tui.protocol.worker import (  # noqa: E402
    Command,
    Event,
    Exited,
    Finished,
    ModelCall,
    Outcome,
    Run,
    Running,
    Started,
    Status,
    Step,
    Stop,
    StopReason,
    WorkerLog,
)

DATA = REPO / "data"
MAX_EPISODE_S = 1800.0      # the run's default timeout: no episode lasts longer
MODEL_CALL_S = 2.0          # the stand-in's model call, as its ModelCall events say (its time is inside the step's)
STEP_S_MEDIAN = 14.0        # one agent step on a live site with a served model (model call + browser), median


def om2w_tasks() -> list[Task]:
    """The real Online-Mind2Web task file (300 tasks on its sites)."""
    return load_tasks(DATA / "Online_Mind2Web.json")


def webvoyager_tasks() -> list[Task]:
    """The real WebVoyager task file (643 tasks on 15 sites)."""
    return load_tasks(DATA / "WebVoyager_data.jsonl")


def episode_lengths(tasks: list[Task], seed: int) -> dict[str, float]:
    """A length in seconds for each task: steps around the task's reference length (8 where it has none) with a
    log-normal spread, each step log-normal around STEP_S_MEDIAN; capped at the timeout. Median ~2 min, p99 ~15 min."""
    rng = random.Random(seed)
    out = {}
    for t in tasks:
        ref = (t.raw or {}).get("reference_length") or 8
        steps = max(1, round(float(ref) * rng.lognormvariate(0.0, 0.55)))
        step_s = STEP_S_MEDIAN * rng.lognormvariate(0.0, 0.35)
        out[t.task_id] = min(MAX_EPISODE_S, 10.0 + steps * step_s)   # 10 s: browser start and first page
    return out


def lower_bound(tasks: list[Task], length: dict[str, float], slots: int, cooldown: float) -> float:
    """No schedule ends sooner than the larger of the work per slot and the busiest site's chain of episodes and
    cooldowns (one episode at a time on a site, a cooldown between two)."""
    by_site: dict[str, list[float]] = {}
    for t in tasks:
        by_site.setdefault(t.site, []).append(length[t.task_id])
    chain = max(sum(v) + (len(v) - 1) * cooldown for v in by_site.values())
    return max(sum(length.values()) / slots, chain)


# ── a stand-in worker on the loop's clock ─────────────────
@dataclass
class SimExecutor:
    """Workers whose episodes last `length[task]` seconds of loop time, sending a step event every `step_s`; with
    `jitter` (a log-normal sigma), each step lasts that times a draw of its own (median 1), as a model's latency
    varies."""
    length: dict[str, float]
    step_s: float = 15.0
    jitter: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    start_s: float = 0.0
    screenshot: bool = False
    runs: int = 0
    workers: list[SimWorker] = field(default_factory=list)

    async def start_worker(self, slot: int) -> SimWorker:
        if self.start_s:
            await asyncio.sleep(self.start_s)
        w = SimWorker(self, slot)
        self.workers.append(w)
        return w


class SimWorker:
    """The worker protocol's typed commands and events on a queue (protocol/worker.py), held to the contract the
    real process keeps (tests/e2e/test_worker_contract.py runs it too): a second run while one runs is refused
    with a log line, a stop ends the episode with its reason and its steps, a killed worker says nothing more and
    takes no command, a pause before any run is ignored."""

    def __init__(self, ex: SimExecutor, slot: int):
        self.ex, self.slot = ex, slot
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.exited = self.killed = False
        self.job: asyncio.Task[None] | None = None
        self.stop_reason: StopReason | None = None

    @property
    def pid(self) -> int | None:
        return None

    async def send(self, cmd: Command) -> bool:
        if self.exited or self.killed:
            return False
        match cmd:
            case Run(task=task):
                if self.job is not None and not self.job.done():
                    self.say(WorkerLog("error", "run refused: an episode is already running"))
                    return True
                self.ex.runs += 1
                self.stop_reason = None
                self.say(Started(task["task_id"]))
                self.job = asyncio.ensure_future(self._run(task))
            case Stop(reason=reason) if self.job is not None and not self.job.done():
                self.stop_reason = reason
                self.job.cancel()
            case _:
                pass     # pause, resume: the benchmarks never pause; exit: `close`
        return True

    def say(self, event: Event) -> None:
        if not self.killed:      # a killed process says nothing more
            self.events.put_nowait(event)

    async def _run(self, task: dict[str, Any]) -> None:
        total = self.ex.length[task["task_id"]]
        self.say(Running())
        n = max(1, math.ceil(total / self.ex.step_s))
        done = 0
        calls = ModelCalls()
        status: Status = "done"
        try:
            for i in range(n):
                draw = self.ex.rng.lognormvariate(0.0, self.ex.jitter) if self.ex.jitter else 1.0
                await asyncio.sleep(total / n * draw)
                done = i + 1
                calls.add("ok", "", MODEL_CALL_S)      # one model call a step, as the agent makes
                self.say(ModelCall("ok", MODEL_CALL_S, 3000, 120))
                self.step(task, i)
        except asyncio.CancelledError:
            status = self.stop_reason or "killed"
        if not self.killed:
            self.say(Finished(Outcome(status, agent_done=status == "done", steps=done, actions=done,
                                      screenshots=done + 1, answer="an answer" if status == "done" else "",
                                      model=calls)))

    def step(self, task: dict[str, Any], i: int) -> None:
        """Step i (from 0) of `task` ended: says it (a subclass may write what a real step writes first)."""
        self.say(Step(i + 1, [f'<a id="r{i}"> result {i} -> CLICK'], f"https://{task['website']}/p{i}",
                      "the next result looks closer to the goal"))

    async def next_event(self) -> Event:
        return await self.events.get()

    def kill_group(self) -> None:
        self._end(-9)

    async def kill(self) -> None:
        self._end(-9)

    async def close(self) -> None:
        self._end(0)

    def _end(self, rc: int) -> None:
        if self.killed or self.exited:
            return
        self.killed = self.exited = True
        if self.job is not None:
            self.job.cancel()
        self.events.put_nowait(Exited(rc))


# ── virtual time ──────────────────────────────────────────
@contextlib.contextmanager
def virtual_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A looptime loop (the clock jumps to the next timer whenever the loop is idle). The scheduler's few file
    operations run inline instead of in a thread: a thread's real-time wait would let the virtual clock jump past
    it and count as simulated time."""
    import looptime

    async def inline(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    real = asyncio.to_thread
    asyncio.to_thread = inline   # type: ignore[assignment]
    loop = looptime.new_event_loop(start=0, _enabled=True, noop_cycles=2)
    try:
        yield loop
    finally:
        asyncio.to_thread = real   # type: ignore[assignment]
        loop.close()


# ── statistics ────────────────────────────────────────────
def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of `values`."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
