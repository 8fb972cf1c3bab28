"""Makespan against the pacing bound: the real scheduler in virtual time against the seed runner's policy.

    .venv/bin/python bench/makespan.py [--slots 4,12,32] [--cooldown 120] [--seeds 3]

Each task set runs through the real `Scheduler` (its dispatch rule, its pacing, its timers) on a looptime loop,
with stand-in workers whose episodes last a long-tailed length of simulated time (bench/_common.py: steps around
the task's reference length, ~2 min median, ~15 min p99). The seed runner's policy (static slots: task k goes to
slot k mod N; each slot takes the first of its tasks whose site is free and cooled down, else sleeps 15 s) is
simulated on the same lengths in the same run. Both are divided by the lower bound: the larger of the work per slot
and the busiest site's chain of episodes and cooldowns. The figure is the worst over `--seeds` draws of lengths.
A third column runs the same scheduler told each task's true length (as its reference length): what is left there is
the dispatch rule's, the rest is what cannot be known before an episode runs. Goal: the scheduler's ratio <= 1.01.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import tempfile
import time
from pathlib import Path

from _common import SimExecutor, episode_lengths, lower_bound, om2w_tasks, verdict, virtual_loop, webvoyager_tasks

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.engine.scheduler import Scheduler

GOAL = 1.01
SEED_POLL_S = 15.0


class LastEnd:
    """A sink that keeps the loop time of the last finished episode."""

    def __init__(self) -> None:
        self.t = 0.0
        self.n = 0

    def handle(self, ev: object) -> None:
        import asyncio
        if isinstance(ev, EpisodeFinished):
            self.t = asyncio.get_running_loop().time()
            self.n += 1


def scheduler_makespan(tasks: list[Task], length: dict[str, float], slots: int, cooldown: float) -> float:
    with tempfile.TemporaryDirectory(prefix="om2w-makespan-") as d, virtual_loop() as loop:
        cfg = RunConfig(out=Path(d), workers=slots, pace_cooldown=cooldown, timeout=10 * 3600.0)
        end = LastEnd()
        sched = Scheduler(cfg, tasks, SimExecutor(length, step_s=600.0), [end])
        loop.run_until_complete(sched.run())
        if end.n != len(tasks):
            raise SystemExit(f"the scheduler finished {end.n} of {len(tasks)} episodes")
        return end.t


def seed_makespan(tasks: list[Task], length: dict[str, float], slots: int, cooldown: float) -> float:
    """The seed runner's policy, event by event: per-slot task lists, first free task in file order, 15 s polls."""
    pending = [[t for k, t in enumerate(tasks) if k % slots == s] for s in range(slots)]
    busy: set[str] = set()
    ready: dict[str, float] = {}
    heap = [(0.0, 0, s, None) for s in range(slots)]   # (time, order, slot, site to release)
    order, end = 1, 0.0
    while heap:
        now, _, s, release = heapq.heappop(heap)
        if release is not None:
            busy.discard(release)
            ready[release] = now + cooldown
            end = max(end, now)
        if not pending[s]:
            continue
        task = next((t for t in pending[s] if t.site not in busy and ready.get(t.site, 0.0) <= now), None)
        if task is None:
            heapq.heappush(heap, (now + SEED_POLL_S, order, s, None))
        else:
            pending[s].remove(task)
            busy.add(task.site)
            heapq.heappush(heap, (now + length[task.task_id], order, s, task.site))
        order += 1
    return end


def skewed_tasks(seed: int = 7) -> list[Task]:
    """300 tasks on 60 sites, one site holding a fifth of them (its chain close to the work per slot at 4)."""
    rng = random.Random(seed)
    sites = ["big"] * 60 + [f"s{rng.randrange(1, 60)}" for _ in range(240)]
    rng.shuffle(sites)
    levels = ["easy", "medium", "hard"]
    return [Task(f"k{i}", f"task {i}", f"https://{s}.example/", rng.choice(levels),
                 {"reference_length": rng.choice([3, 5, 7, 9, 12, 16])}) for i, s in enumerate(sites)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", default="4,12,32")
    ap.add_argument("--cooldown", type=float, default=120.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sets", default="om2w,webvoyager,skewed")
    args = ap.parse_args()
    slot_counts = [int(x) for x in args.slots.split(",")]
    sets = {"om2w": ("Online-Mind2Web (real file)", om2w_tasks), "webvoyager": ("WebVoyager (real file)",
            webvoyager_tasks), "skewed": ("skewed (one site a fifth)", skewed_tasks)}
    t0 = time.monotonic()
    print(f"makespan / lower bound, cooldown {args.cooldown:g} s, worst of {args.seeds} draws of episode lengths; "
          f"goal <= {GOAL}")
    print(f"{'task set':<28} {'tasks':>5} {'sites':>5} {'slots':>5} {'bound h':>7} {'om2w-tui':>8} {'seed':>6} "
          f"{'told lengths':>12}  goal")
    worst = 0.0
    for name in args.sets.split(","):
        label, make = sets[name]
        tasks = make()
        n_sites = len({t.site for t in tasks})
        for slots in slot_counts:
            ours = seed = told = 0.0
            bound_h = 0.0
            for draw in range(args.seeds):
                length = episode_lengths(tasks, seed=1000 * draw + slots)
                bound = lower_bound(tasks, length, slots, args.cooldown)
                bound_h = max(bound_h, bound / 3600)
                ours = max(ours, scheduler_makespan(tasks, length, slots, args.cooldown) / bound)
                seed = max(seed, seed_makespan(tasks, length, slots, args.cooldown) / bound)
                known = [Task(t.task_id, t.confirmed_task, t.website, t.level,
                              {**t.raw, "reference_length": length[t.task_id]}) for t in tasks]
                told = max(told, scheduler_makespan(known, length, slots, args.cooldown) / bound)
            worst = max(worst, ours)
            print(f"{label:<28} {len(tasks):>5} {n_sites:>5} {slots:>5} {bound_h:>7.2f} {ours:>8.3f} {seed:>6.3f} "
                  f"{told:>12.3f}  "
                  f"{verdict(ours <= GOAL)}")
    print(f"worst om2w-tui ratio {worst:.3f} ({verdict(worst <= GOAL)}); {time.monotonic() - t0:.0f} s of real time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
