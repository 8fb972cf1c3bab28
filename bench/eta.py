"""How true the header's ETA is: the real `Scheduler` in virtual time on the real task files, its events and snapshots
folded into the front ends' `RunState` as the console folds them, the ETA read as the run goes and held against the
time the run really took after it.

    .venv/bin/python bench/eta.py [--slots 4,12,32] [--bench om2w,webvoyager] [--cooldown 120] [--seeds 3]

Stand-in workers (bench/_common.py) with each task's own draw of length (median ~2 min, a long tail); a snapshot every
`--every` seconds as the console takes one. At each tenth of the run's tasks settled (10% ... 90%), the ETA against
the time left: the error as a share of the time left (+ late: the run ends after the ETA said). Printed per
configuration: the median and worst absolute error over the checkpoints and seeds, and the mean signed error (a bias);
beside them the same for the baseline, the ETA as it was before the engine said its expected lengths (`mean_eta`:
the mean length of the latest done episodes for every task left), and how many times smaller the median error is.
A fake worker, so a simulation: the ETA's arithmetic against a schedule, not a claim about live sites.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import SimExecutor, episode_lengths, om2w_tasks, virtual_loop, webvoyager_tasks

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.frontends.run_state import RunState

CHECKPOINTS = tuple(k / 10 for k in range(1, 10))


class Folded:
    """A sink folding every event into a RunState at the scheduler's clock, reading the ETA at each checkpoint."""

    def __init__(self, total: int, clock: Callable[[], float], eta: Callable[[RunState, float], float | None]):
        self.state, self.clock, self.eta = RunState(), clock, eta
        self.total = total
        self.said: list[tuple[float, float, float | None]] = []   # (share settled, when, the ETA then)
        self.next = 0

    def handle(self, ev: object) -> None:
        now = self.clock()
        self.state.apply(ev, now)   # type: ignore[arg-type]
        if isinstance(ev, EpisodeFinished) and self.next < len(CHECKPOINTS):
            share = self.state.done / self.total
            if share >= CHECKPOINTS[self.next]:
                self.said.append((CHECKPOINTS[self.next], now, self.eta(self.state, now)))
                self.next += 1


def one_run(tasks: list[Task], slots: int, cooldown: float, seed: int, every: float,
            eta: Callable[[RunState, float], float | None]) -> list[float]:
    """-> the ETA's error at each checkpoint, as a share of the time then left (+: the run ended later)."""
    length = episode_lengths(tasks, seed=seed)
    with tempfile.TemporaryDirectory(prefix="om2w-eta-") as d, virtual_loop() as loop:
        cfg = RunConfig(out=Path(d), workers=slots, pace_cooldown=cooldown, timeout=10 * 3600.0)
        sched: Scheduler | None = None
        folded = Folded(len(tasks), lambda: sched.epoch() if sched else 0.0, eta)
        sched = Scheduler(cfg, tasks, SimExecutor(length, step_s=600.0), [folded])

        async def snapshots() -> None:
            while True:
                await asyncio.sleep(every)
                folded.state.apply_snapshot(sched.snapshot(), sched.epoch())

        async def main() -> float:
            taker = asyncio.ensure_future(snapshots())
            try:
                await sched.run()
            finally:
                taker.cancel()
            return sched.epoch()

        end = loop.run_until_complete(main())
    return [((end - now) - said) / (end - now) for _, now, said in folded.said if said is not None and end > now]


def header_eta(state: RunState, now: float) -> float | None:
    return state.eta(now)


def mean_eta(state: RunState, now: float) -> float | None:
    """The baseline: the ETA as it was before the engine said its expected lengths (every task left, and every
    episode under way, as long as the mean of the latest done; the work shared evenly over the slots)."""
    left = max(0, state.total - state.done)
    lengths = [r.duration_s for r in list(state.records)[-200:] if r.duration_s > 0]
    if not lengths:
        return None
    mean = sum(lengths) / len(lengths)
    busy = [s for s in state.slots.values() if s.busy]
    rest = {s.slot: max(0.0, mean - (now - s.started_at)) if s.started_at else mean for s in busy}
    longest = (sum(rest.values()) + max(0, left - len(busy)) * mean) / max(1, state.target_workers, len(busy))
    for v in state.sites.values():
        here = [rest[s.slot] for s in busy if s.site == v.site]
        if not v.left or not v.limit:
            longest = max(longest, max(here, default=0.0))
            continue
        start = min(here) + v.cooldown if len(here) >= v.limit else max(0.0, v.ready_at - now)
        rounds = -(-v.left // v.limit)
        longest = max(longest, start + rounds * mean + (rounds - 1) * v.cooldown)
    return longest


def errors(tasks: list[Task], slots: int, cooldown: float, seeds: int, every: float,
           eta: Callable[[RunState, float], float | None]) -> tuple[list[float], list[float]]:
    """-> every checkpoint's error over the seeds, and the mean absolute error at each checkpoint."""
    per = [one_run(tasks, slots, cooldown, seed, every, eta) for seed in range(1, seeds + 1)]
    return ([e for run in per for e in run],
            [statistics.mean(abs(run[k]) for run in per if len(run) > k) for k in range(len(CHECKPOINTS))])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", default="4,12,32")
    ap.add_argument("--bench", default="om2w,webvoyager")
    ap.add_argument("--cooldown", type=float, default=120.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--every", type=float, default=5.0, help="seconds between snapshots, as the console takes them")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    files = {"om2w": om2w_tasks, "webvoyager": webvoyager_tasks}
    print(f"the header's ETA against the time the run took after it (virtual time, cooldown {args.cooldown:g} s, "
          f"{args.seeds} draws of lengths; error as a share of the time left, + late)")
    print(f"{'tasks':>10} {'slots':>5} {'median |err|':>12} {'worst |err|':>11} {'bias':>6} {'baseline':>8} "
          f"{'worst':>6} {'bias':>6} {'x better':>8}  by checkpoint (10%..90%)")
    for name in args.bench.split(","):
        tasks = files[name]()
        for slots in (int(x) for x in args.slots.split(",")):
            errs, by_point = errors(tasks, slots, args.cooldown, args.seeds, args.every, header_eta)
            base, _ = errors(tasks, slots, args.cooldown, args.seeds, args.every, mean_eta)
            ours, theirs = statistics.median(abs(e) for e in errs), statistics.median(abs(e) for e in base)
            print(f"{name:>10} {slots:>5} {ours:>12.1%} {max(abs(e) for e in errs):>11.1%} "
                  f"{statistics.mean(errs):>+6.1%} {theirs:>8.1%} {max(abs(e) for e in base):>6.1%} "
                  f"{statistics.mean(base):>+6.1%} {theirs / ours if ours else float('inf'):>8.1f}  "
                  + " ".join(f"{x:.0%}" for x in by_point))
    print(f"{time.monotonic() - t0:.0f} s of real time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
