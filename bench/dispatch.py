"""The cost of choosing the next site, indexed (engine/dispatch.py) against the scan of every site it replaced.

    .venv/bin/python bench/dispatch.py [--sites 136,1000,10000] [--rounds 3000] [--no-makespan]

Part 1, one dispatch: a `Dispatcher` with 3 tasks a site (reference lengths 2 to 20), a 120 s cooldown and slots
for a tenth of the sites (at most 1,000), every slot busy. Each round an episode ends (its site released, its
length learnt, its task queued again so the work stays), the clock moves on, and one dispatch runs: the choice of a
site with the last-slot rule asked each time (its worst case), the start, and the next cooldown's end. The old scan
(`old_pick`, the code before the index, kept here as the reference) runs the same rounds on the same draws; both
must choose the same site every round. Printed: microseconds per dispatch, and old / new.

Part 2, makespans: the real `Scheduler` in virtual time (as bench/makespan.py) on the Online-Mind2Web and WebVoyager
task files at 4, 12 and 32 slots, once indexed and once with the index off (the scan): both makespans in seconds,
which must be identical.

Part 3, the whole scheduler at scale: 3,000 tasks on 1,000 sites, 100 slots, cooldown 120 s, in virtual time with
stand-in workers (a step every 600 s, so the scheduler's own work dominates), index on and off: CPU seconds of the
process per episode, and the makespans (identical).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import SimExecutor, episode_lengths, om2w_tasks, virtual_loop, webvoyager_tasks

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.scheduler import Scheduler

COOLDOWN = 120.0


def old_pick(d: Dispatcher, now: float, free: int, active: int) -> str | None:
    """The scheduler's choice before the index (`_pick_site` and `_keep_slot_for`), verbatim but for names."""
    best, best_chain = None, -1.0
    for site, q in d.queue.items():
        if q and d.pacer.can_start(site, now):
            chain = d.chain(site, len(q))
            if chain > best_chain:
                best, best_chain = site, chain
    if best is not None and old_keep_slot_for(d, now, free, active) is not None:
        return None
    return best


def old_keep_slot_for(d: Dispatcher, now: float, free: int, active: int) -> str | None:
    if free != 1 or active < 2 or d.pacer.cooldown <= 0:
        return None
    crit, crit_chain = None, 0.0
    for site, q in d.queue.items():
        if q and (chain := d.chain(site, len(q))) > crit_chain:
            crit, crit_chain = site, chain
    if crit is None or d.pacer.can_start(crit, now) or d.pacer.state(crit).busy or d.pacer.held_elsewhere(crit):
        return None
    rest = (sum(d.site_units.values()) - d.site_units.get(crit, 0.0)) * d.s_per_unit()
    return crit if crit_chain >= rest / (active - 1) else None


def old_next_ready(d: Dispatcher, now: float) -> float | None:
    return d.pacer.next_ready([s for s, q in d.queue.items() if q], now)


def one_run(n_sites: int, rounds: int, indexed: bool) -> tuple[float, list[str | None]]:
    """Seconds per dispatch, and the sites chosen."""
    rng = random.Random(n_sites)
    tasks = [Task(f"t{i}", "do", f"https://s{i % n_sites}.example/", "easy",
                  {"reference_length": rng.choice([2, 3, 5, 7, 9, 12, 20])}) for i in range(3 * n_sites)]
    d = Dispatcher(SitePacer(COOLDOWN, 1), tasks)
    d.indexed = indexed
    for t in tasks:
        d.push(t)
    d.sort_sites()
    slots = min(1000, max(2, n_sites // 10))
    pick: Callable[[float], str | None]
    if indexed:
        def pick(now: float) -> str | None:
            return d.pick(now, lambda: (1, slots))
        next_ready = d.next_ready
    else:
        def pick(now: float) -> str | None:
            return old_pick(d, now, 1, slots)

        def next_ready(now: float) -> float | None:
            return old_next_ready(d, now)
    now, running = 0.0, []
    while len(running) < slots:   # every slot busy to begin with (the index files every site here, once)
        site = d._best_ready(now) if indexed else d.scan_pick(now)
        assert site is not None
        t = d.take(site)
        d.acquire(site, now)
        running.append(t)
    chosen: list[str | None] = []
    spent = 0.0
    for _ in range(rounds):
        t = running.pop(rng.randrange(len(running)))   # an episode ends
        d.release(t.site, now)
        d.learn(t.task_id, "done", rng.uniform(30, 900))
        d.push(t)
        now += rng.expovariate(slots / 150.0)
        t0 = time.perf_counter()
        site = pick(now)
        if site is not None:
            started = d.take(site)
            d.acquire(site, now)
        next_ready(now)
        spent += time.perf_counter() - t0
        chosen.append(site)
        if site is not None:
            running.append(started)
        while len(running) < slots:   # untimed: a slot kept free is filled once a site may start
            site = d._best_ready(now) if indexed else d.scan_pick(now)
            if site is None:
                now = old_next_ready(d, now) or now + 1.0
                continue
            running.append(d.take(site))
            d.acquire(site, now)
    return spent / rounds, chosen


class LastEnd:
    def __init__(self) -> None:
        self.t = 0.0

    def handle(self, ev: object) -> None:
        import asyncio  # only for the loop's clock, here in a sink
        if isinstance(ev, EpisodeFinished):
            self.t = asyncio.get_running_loop().time()


def makespan(tasks: list[Task], length: dict[str, float], slots: int, indexed: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="om2w-dispatch-") as d, virtual_loop() as loop:
        cfg = RunConfig(out=Path(d), workers=slots, pace_cooldown=COOLDOWN, timeout=10 * 3600.0)
        end = LastEnd()
        sched = Scheduler(cfg, tasks, SimExecutor(length, step_s=600.0), [end])
        sched.dispatch.indexed = indexed
        loop.run_until_complete(sched.run())
        return end.t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", default="136,1000,10000")
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--no-makespan", action="store_true", help="skip parts 2 and 3")
    args = ap.parse_args()
    print(f"one dispatch (choose with the last-slot rule, start, next cooldown end), 3 tasks a site, cooldown "
          f"{COOLDOWN:g} s, every slot busy; {args.rounds} rounds")
    print(f"{'sites':>6} {'slots':>6} {'scan us':>9} {'index us':>9} {'scan/index':>10}  same choices")
    ok = True
    for n in (int(x) for x in args.sites.split(",")):
        rounds = max(300, args.rounds // max(1, n // 1000)) if n > 1000 else args.rounds
        old_s, old_chosen = one_run(n, rounds, indexed=False)
        new_s, new_chosen = one_run(n, rounds, indexed=True)
        same = old_chosen == new_chosen
        ok &= same
        print(f"{n:>6} {min(1000, max(2, n // 10)):>6} {old_s * 1e6:>9.1f} {new_s * 1e6:>9.1f} "
              f"{old_s / new_s:>10.1f}  {'yes' if same else 'NO'}")
    if not args.no_makespan:
        print(f"\nmakespan in virtual seconds, the real scheduler, cooldown {COOLDOWN:g} s, draw 0 of lengths")
        print(f"{'task set':<16} {'slots':>5} {'scan s':>10} {'index s':>10}  identical")
        for label, make in (("Online-Mind2Web", om2w_tasks), ("WebVoyager", webvoyager_tasks)):
            tasks = make()
            for slots in (4, 12, 32):
                length = episode_lengths(tasks, seed=slots)
                old_m, new_m = makespan(tasks, length, slots, False), makespan(tasks, length, slots, True)
                ok &= old_m == new_m
                print(f"{label:<16} {slots:>5} {old_m:>10.1f} {new_m:>10.1f}  {'yes' if old_m == new_m else 'NO'}")
        print("\nthe whole scheduler, virtual time: 3000 tasks on 1000 sites, 100 slots, cooldown 120 s")
        print(f"{'dispatch':<8} {'CPU ms/episode':>14} {'makespan s':>11}")
        rng = random.Random(3)
        tasks = [Task(f"t{i}", "do", f"https://s{rng.randrange(1000)}.example/", "easy",
                      {"reference_length": rng.choice([2, 3, 5, 7, 9, 12, 20])}) for i in range(3000)]
        length = episode_lengths(tasks, seed=3)
        spans = []
        for indexed in (False, True):
            c0 = time.process_time()
            spans.append(makespan(tasks, length, 100, indexed))
            cpu = (time.process_time() - c0) / len(tasks)
            print(f"{'index' if indexed else 'scan':<8} {cpu * 1000:>14.2f} {spans[-1]:>11.1f}")
        ok &= spans[0] == spans[1]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
