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

DATA = REPO / "data"
MAX_EPISODE_S = 1800.0      # the run's default timeout: no episode lasts longer
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
    def __init__(self, ex: SimExecutor, slot: int):
        self.ex, self.slot = ex, slot
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.exited = self.killed = False
        self.job: asyncio.Task[None] | None = None

    async def send(self, cmd: dict[str, Any]) -> bool:
        if cmd["cmd"] == "run":
            self.ex.runs += 1
            self.events.put_nowait({"ev": "started"})
            self.job = asyncio.ensure_future(self._run(cmd["task"]))
        elif cmd["cmd"] == "stop" and self.job is not None:
            self.job.cancel()
        return True

    async def _run(self, task: dict[str, Any]) -> None:
        total = self.ex.length[task["task_id"]]
        self.events.put_nowait({"ev": "running"})
        n = max(1, math.ceil(total / self.ex.step_s))
        status = "done"
        try:
            for i in range(n):
                draw = self.ex.rng.lognormvariate(0.0, self.ex.jitter) if self.ex.jitter else 1.0
                await asyncio.sleep(total / n * draw)
                self.events.put_nowait({"ev": "step", "step": i + 1, "url": f"https://{task['website']}/p{i}",
                                        "actions": [f"<a id=\"r{i}\"> result {i} -> CLICK"],
                                        "thought": "the next result looks closer to the goal"})
        except asyncio.CancelledError:
            status = "killed"
        self.events.put_nowait({"ev": "finished", "record": {
            "status": status, "steps": n, "actions": n, "screenshots": n + 1, "answer": "an answer",
            "agent_done": status == "done"}})

    async def next_event(self) -> dict[str, Any]:
        return await self.events.get()

    def kill_group(self) -> None:
        self.killed = True
        if self.job is not None:
            self.job.cancel()
        self.events.put_nowait({"ev": "exit", "rc": -9})

    async def close(self) -> None:
        self.exited = True


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
