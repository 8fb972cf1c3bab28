"""Dispatch latency: from an episode's end or a cooldown's expiry to the next episode's start message, in a real run.

    .venv/bin/python bench/latency.py [--workers 2] [--rounds 2] [--cooldown 4]

Runs the offline suite with the oracle model (real worker processes, real Chromium, real pages on 127.0.0.1) through
the real scheduler and the real LocalExecutor, `--rounds` times (a fresh out folder each), headless. Each worker's
`run` command is timed as it is written to the worker's pipe; its trigger is the later of the moment its slot became
free (its worker's previous `finished` event reached the scheduler) and the moment its site's cooldown expired.
A slot's first episode is left out (it waits for its worker to import browser-use, which is not dispatch).
Prints p50, p99 and max of the latency, by trigger. Goal: p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import pct, verdict

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import open_run, preflight
from om2w_tui.executors import local
from om2w_tui.protocol.worker import Command, Event, Finished, Run

GOAL_MS = 50.0


class Timing:
    """Wraps each worker's `send` and `next_event` to time run commands against their triggers."""

    def __init__(self) -> None:
        self.sched: Any = None
        self.free_at: dict[int, float] = {}     # worker id -> loop time its last episode's end reached the scheduler
        self.samples: list[tuple[str, float]] = []   # (trigger, latency ms)
        self.worst: list[tuple[float, str, str]] = []  # (latency ms, task, trigger)
        self.lags: list[float] = []                    # the loop's lag, probed every 10 ms

    def wrap(self, w: Any) -> Any:
        send, next_event = w.send, w.next_event
        loop = asyncio.get_running_loop()

        async def timed_send(cmd: Command) -> bool:
            if isinstance(cmd, Run) and id(w) in self.free_at:
                now = loop.time()
                ready = self.sched.pacer.state(site_key(cmd.task["website"])).ready_at
                free = self.free_at[id(w)]
                trigger, at = ("cooldown", ready) if ready > free else ("episode end", free)
                self.samples.append((trigger, (now - at) * 1000))
                self.worst = sorted([*self.worst, ((now - at) * 1000, cmd.task["task_id"], trigger)])[-3:]
            return await send(cmd)

        async def timed_next() -> Event:
            ev = await next_event()
            if isinstance(ev, Finished):
                self.free_at[id(w)] = loop.time()
            return ev

        w.send, w.next_event = timed_send, timed_next
        return w


async def probe(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(0.01)
        lags.append((loop.time() - t - 0.01) * 1000)


async def one_round(out: Path, workers: int, cooldown: float, timing: Timing) -> int:
    cfg = RunConfig(out=out, bench="offline", model="oracle", workers=workers, pace_cooldown=cooldown)
    pre = preflight(cfg)
    real_start = local.LocalExecutor.start_worker

    async def start_worker(self: Any, slot: int) -> Any:
        return timing.wrap(await real_start(self, slot))

    local.LocalExecutor.start_worker = start_worker   # type: ignore[method-assign]
    try:
        async with open_run(pre, []) as sched:
            timing.sched = sched
            timing.free_at.clear()
            stop = asyncio.Event()
            prober = asyncio.ensure_future(probe(timing.lags, stop))
            try:
                stats = await sched.run()
            finally:
                stop.set()
                await prober
    finally:
        local.LocalExecutor.start_worker = real_start   # type: ignore[method-assign]
    return stats.finished


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cooldown", type=float, default=4.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="om2w-latency-"))
    timing = Timing()
    episodes = 0
    try:
        for r in range(args.rounds):
            episodes += asyncio.run(one_round(work / f"r{r}", args.workers, args.cooldown, timing))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"offline suite, oracle model, {args.workers} workers, cooldown {args.cooldown:g} s, {args.rounds} rounds: "
          f"{episodes} episodes, real workers and Chromium")
    print(f"{'trigger':<12} {'n':>4} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  goal p99 <= {GOAL_MS:g}")
    groups = {"all": [ms for _, ms in timing.samples]}
    for trig in ("episode end", "cooldown"):
        groups[trig] = [ms for t, ms in timing.samples if t == trig]
    for name, ms in groups.items():
        if ms:
            print(f"{name:<12} {len(ms):>4} {pct(ms, 50):>7.1f} {pct(ms, 99):>7.1f} {max(ms):>7.1f}  "
                  f"{verdict(pct(ms, 99) <= GOAL_MS) if name == 'all' else ''}")
    lags = timing.lags
    print(f"the loop's own lag meanwhile: p50 {pct(lags, 50):.1f} ms, p99 {pct(lags, 99):.1f} ms, "
          f"max {max(lags):.0f} ms")
    print("slowest: " + "; ".join(f"{task} {ms:.0f} ms ({trig})" for ms, task, trig in reversed(timing.worst)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
