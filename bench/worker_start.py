"""What forking workers from a zygote saves: a run's workers forked from one process that imported browser-use once
(the default), against each worker started as its own Python that imports it (the baseline, the zygote turned off
here), in the same run.

    .venv/bin/python bench/worker_start.py [--workers 1,2,4] [--repeat 2]

A real run each time, in this process as `om2w-tui run` would run it: the offline suite's short tasks (one per
worker, two steps each, the oracle model), real workers, a real Chromium each, pages on 127.0.0.1. Measured: the
run's wall time from its start to its last episode's end, and the CPU seconds of every process of the run (this
one's own, the zygote's, the workers', their Chromiums'), sampled every 0.1 s from /proc (a process gone takes its
seconds with it, so each one's last reading is kept). With `--repeat 2` each pair runs twice, in both orders.
Goal: forking spends less CPU than starting plainly at every worker count, and never takes longer.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from _common import verdict

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import open_run, preflight
from om2w_tui.executors import local

SHORT = ["offline_booking_rates_11", "offline_shop_search_01", "offline_wiki_port_06", "offline_shop_battery_02"]


class TreeCpu:
    """CPU seconds of this process and all it started, each process's last reading kept (it is gone once it ends)."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.last: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            for p in [self.me, *self.me.children(recursive=True)]:
                try:
                    t = p.cpu_times()
                    self.last[p.pid] = t.user + t.system
                except psutil.Error:
                    continue
            self.stop.wait(0.1)

    def __enter__(self) -> TreeCpu:
        t = self.me.cpu_times()
        self.base = t.user + t.system
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join()

    def seconds(self) -> float:
        return sum(self.last.values()) - self.base


async def one_run(out: Path, workers: int, fork: bool) -> tuple[float, float]:
    possible = local.Zygote.possible
    if not fork:
        local.Zygote.possible = staticmethod(lambda: False)   # type: ignore[method-assign]
    try:
        cfg = RunConfig(out=out, bench="offline", model="oracle", workers=workers, pace_cooldown=0.0,
                        task_ids=SHORT[:workers], max_steps=5)
        pre = preflight(cfg)
        with TreeCpu() as cpu:
            t0 = time.monotonic()
            async with open_run(pre, []) as sched:
                stats = await sched.run()
            wall = time.monotonic() - t0
    finally:
        local.Zygote.possible = possible   # type: ignore[method-assign]
    if stats.finished != workers:
        raise SystemExit(f"{workers} workers, fork={fork}: {stats.finished} episodes ended, {workers} expected")
    return wall, cpu.seconds()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-worker-start-"))
    ok = True
    try:
        print(f"{'workers':>7}  {'plain wall':>10}  {'forked wall':>11}  {'plain CPU':>9}  {'forked CPU':>10}  "
              f"{'CPU ratio':>9}  {'wall ratio':>10}")
        for n in counts:
            res: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for r in range(args.repeat):
                for fork in ((False, True) if r % 2 == 0 else (True, False)):
                    res[fork].append(asyncio.run(one_run(work / f"w{n}-r{r}-{fork}", n, fork)))
            pw, pc = (sum(x) / len(x) for x in zip(*res[False], strict=True))
            fw, fc = (sum(x) / len(x) for x in zip(*res[True], strict=True))
            ok &= fc < pc and fw <= pw * 1.05
            print(f"{n:>7}  {pw:>9.1f}s  {fw:>10.1f}s  {pc:>8.1f}s  {fc:>9.1f}s  {fc / pc:>9.2f}  {fw / pw:>10.2f}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"goal (less CPU at every count, never longer): {verdict(ok)}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
