"""Scale: many simulated slots through the real scheduler and the real dashboard (headless Textual), in real time.

    .venv/bin/python bench/scale.py [--slots 1000] [--tasks 10000] [--sites 1000] [--seconds 120] [--step-s 15]

Phase 1, loop lag: `--slots` stand-in workers (bench/_common.py SimExecutor: fakes, no browsers) step every
`--step-s` seconds (15 s, a real agent's pace; episodes of 4 to 10 steps) through the real
Scheduler, whose events reach the real dashboard, open in a headless Textual app. A probe coroutine in the same
loop sleeps 10 ms at a time and records how late it wakes: p50, p99, max. Goal: p99 <= 50 ms. Each step takes
`--step-s` times a log-normal draw (sigma 0.35: a model's latency varies), so that slots started together drift
apart as real ones do; `--sync` steps every slot at exactly `--step-s`, so that all 1,000 slots started at one
instant step and end in waves (~140 episodes at once every 15 s) for as long as the phase lasts. `--stalls MS`
prints where the loop was whenever it was that late (bench/loop_watch.py). Printed beside it: the console's CPU
(scheduler and dashboard) and, the floor, the same probe in a bare Python process during the same run (what any
process waits for a core on the machine then).

Phase 2, memory and CPU per episode: `--tasks` tasks of 10 steps each (100,000 steps logged at the default) run as
fast as the loop goes, with the dashboard open, then the same with no front end (the baseline, in the same run).
Prints the process's peak RSS and the console's CPU seconds per finished episode for both.
Goals: peak RSS <= 150 MB with the dashboard; its CPU per episode bounded (flat as the run grows: the second and
last fifths of the episodes are printed side by side; the first pays the app's start).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from _common import SimExecutor, pct, verdict
from loop_watch import StallWatch

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.engine.launch import Preflight
from om2w_tui.engine.scheduler import Scheduler

LAG_GOAL_MS, RSS_GOAL_MB = 50.0, 150.0
PROBE_S = 0.010


def make_tasks(n: int, sites: int) -> list[Task]:
    return [Task(f"t{i:05d}", f"find the item {i} on site {i % sites}", f"https://site{i % sites:04d}.example/",
                 ("easy", "medium", "hard")[i % 3]) for i in range(n)]


class Progress:
    """A sink counting finished episodes, with the process CPU time at every fifth of them."""

    def __init__(self, total: int):
        self.total, self.n = total, 0
        self.cpu_marks: list[tuple[int, float]] = []

    def handle(self, ev: object) -> None:
        if isinstance(ev, EpisodeFinished):
            self.n += 1
            if self.n % max(1, self.total // 5) == 0:
                self.cpu_marks.append((self.n, time.process_time()))


STARTUP_S = 10.0   # phase 1 also prints the lag after this: all slots starting at once is a burst of its own
LATE: list[float] = []
WORST: list[tuple[float, float]] = []   # (lag ms, seconds into the run) of the worst wake-ups


async def probe_lag(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(PROBE_S)
        lags.append((loop.time() - t - PROBE_S) * 1000)
        if t - t0 > STARTUP_S:
            LATE.append(lags[-1])
        if lags[-1] > LAG_GOAL_MS:
            WORST[:] = sorted([*WORST, (lags[-1], t - t0)])[-5:]


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


async def run(tasks: list[Task], slots: int, lengths: dict[str, float], step_s: float, *, ui: bool,
              seconds: float | None, out: Path, stalls_ms: float = 0.0, jitter: bool = False) -> dict[str, Any]:
    """One run through the real scheduler, with the dashboard open (ui) or no front end; -> lags, RSS, CPU."""
    cfg = RunConfig(out=out, workers=slots, pace_cooldown=0, timeout=3600, max_steps=30)
    progress = Progress(len(tasks))
    lags: list[float] = []
    stop = asyncio.Event()
    peak = [rss_mb()]

    async def sample_rss() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb())
            await asyncio.sleep(0.5)

    async def drive(sched: Scheduler) -> None:
        probe = asyncio.ensure_future(probe_lag(lags, stop))
        rss = asyncio.ensure_future(sample_rss())
        runner = asyncio.ensure_future(sched.run())
        watch = StallWatch(asyncio.get_running_loop(), late_ms=stalls_ms) if stalls_ms else None
        if watch is not None:
            watch.start()
        try:
            if seconds is not None:
                await asyncio.wait({runner}, timeout=seconds)
                sched.stop(force=True)
            await runner
        finally:
            stop.set()
            await asyncio.gather(probe, rss)
            if watch is not None:
                watch.stop()
                print(watch.report())

    bare = subprocess.Popen([sys.executable, str(Path(__file__).with_name("console_lag.py")), "--bare-probe"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE) if seconds is not None else None
    cpu0, t0 = time.process_time(), time.monotonic()
    executor = SimExecutor(lengths, step_s=step_s, jitter=0.35 if jitter else 0.0)
    if ui:
        from om2w_tui.frontends.console.app import make_app
        app = make_app(Preflight(cfg, tasks, Path("tasks.json"), settled=0), start_engine=False, last_launch=None,
                       image_renderer="unicode", cursor_blink=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            sched = Scheduler(cfg, tasks, executor, [app.sink, progress])
            app.control = sched
            await drive(sched)
            app.control = None
            await pilot.pause(1.0)   # the footer's last rebuild lands before the app closes
            peak[0] = max(peak[0], rss_mb())
    else:
        await drive(Scheduler(cfg, tasks, executor, [progress]))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    bare_lags = json.loads(bare.communicate(b"")[0]) if bare is not None else []
    marks = [(0, cpu0)] + progress.cpu_marks
    per_fifth = [(b[1] - a[1]) / max(1, b[0] - a[0]) for a, b in zip(marks, marks[1:])]
    return {"lags": lags, "bare": bare_lags, "peak_mb": peak[0], "episodes": progress.n, "cpu": cpu, "wall": wall,
            "cpu_per_ep": cpu / max(1, progress.n),   # the second fifth: the first one pays the app's start
            "first_fifth": per_fifth[1] if len(per_fifth) > 1 else float("nan"),
            "last_fifth": per_fifth[-1] if per_fifth else float("nan")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--sites", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=120.0, help="phase 1's length")
    ap.add_argument("--step-s", type=float, default=15.0, help="phase 1: seconds between two steps of an episode")
    ap.add_argument("--sync", action="store_true", help="phase 1: every step exactly --step-s long (waves)")
    ap.add_argument("--phase", default="12", help="1, 2 or 12")
    ap.add_argument("--profile", default="", help="phase 2 with the dashboard under cProfile, written here")
    ap.add_argument("--stalls", type=float, default=0.0, metavar="MS",
                    help="sample the loop's stack whenever it is this late; print where it was (bench/loop_watch.py)")
    ap.add_argument("--cap-s", type=float, default=None, help="phase 2: stop each run after this many seconds")
    args = ap.parse_args()
    if len(args.phase) > 1:   # each phase in a process of its own: a process's peak memory is never given back
        for phase in args.phase:
            argv = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--phase")
                    and not (i and sys.argv[i] == "--phase")]
            subprocess.run([sys.executable, __file__, *argv, "--phase", phase], check=True)
        return 0
    work = Path(tempfile.mkdtemp(prefix="om2w-scale-"))
    print(f"{psutil.cpu_count()} cores; Python {sys.version.split()[0]}; stand-in workers (fakes), real scheduler "
          f"and dashboard (headless Textual)")
    if "1" in args.phase:
        tasks = make_tasks(args.tasks, args.sites)
        lengths = {t.task_id: args.step_s * (4 + i % 7) for i, t in enumerate(tasks)}   # 4 to 10 steps
        r = asyncio.run(run(tasks, args.slots, lengths, args.step_s, ui=True, seconds=args.seconds,
                            out=work / "phase1", stalls_ms=args.stalls, jitter=not args.sync))
        lags = r["lags"]
        steps_s = args.slots / args.step_s
        how = "exactly" if args.sync else "a median of"
        print(f"\nphase 1: {args.slots} slots, {args.tasks} tasks on {args.sites} sites, a step every {how} "
              f"{args.step_s:g} s (~{steps_s:.0f} steps/s), {args.seconds:g} s with the dashboard open")
        print(f"{'loop lag ms':<14} {'p50':>6} {'p99':>6} {'max':>7} {'samples':>8} {'episodes':>8}  goal p99 <= "
              f"{LAG_GOAL_MS:g}")
        print(f"{'dashboard':<14} {pct(lags, 50):>6.1f} {pct(lags, 99):>6.1f} {max(lags):>7.1f} {len(lags):>8} "
              f"{r['episodes']:>8}  {verdict(pct(lags, 99) <= LAG_GOAL_MS)}")
        if LATE:
            print(f"{'after ' + str(int(STARTUP_S)) + ' s':<14} {pct(LATE, 50):>6.1f} {pct(LATE, 99):>6.1f} "
                  f"{max(LATE):>7.1f} {len(LATE):>8}")
        print(f"the console's CPU: {r['cpu']:.1f} s in {r['wall']:.0f} s ({100 * r['cpu'] / r['wall']:.0f}% of a core)")
        bare = r["bare"]
        if bare:
            print(f"{'bare process':<14} {pct(bare, 50):>6.1f} {pct(bare, 99):>6.1f} {max(bare):>7.1f} {len(bare):>8}"
                  f"{'':>9}  the floor: a process doing nothing but the probe, in the same run")
            print(f"dashboard p99 / bare p99: {pct(lags, 99) / max(pct(bare, 99), 0.1):.2f}; uptime: "
                  f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
        print("worst wake-ups (ms at s into the run): "
              + ", ".join(f"{ms:.0f} at {at:.1f}" for ms, at in reversed(WORST)))
    if "2" in args.phase:
        tasks = make_tasks(args.tasks, args.sites)
        lengths = {t.task_id: 0.5 for t in tasks}
        slots = min(args.slots, 100)
        rows = {}
        for ui in (False, True):
            gc.collect()
            if ui and args.profile:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            rows[ui] = asyncio.run(run(tasks, slots, lengths, 0.05, ui=ui, seconds=args.cap_s,
                                       out=work / f"phase2-{int(ui)}"))
            if ui and args.profile:
                prof.disable()
                prof.dump_stats(args.profile)
        print(f"\nphase 2: {args.tasks} tasks x 10 steps ({args.tasks * 10} steps) on {args.sites} sites, {slots} "
              f"slots, as fast as the loop goes; headless is the baseline")
        print(f"{'front end':<10} {'episodes':>8} {'wall s':>7} {'CPU s/ep':>9} {'2nd 1/5':>9} {'last 1/5':>9} "
              f"{'peak RSS MB':>11}  goal")
        for ui, r in rows.items():
            goal = f"RSS <= {RSS_GOAL_MB:g}: {verdict(r['peak_mb'] <= RSS_GOAL_MB)}" if ui else "baseline"
            print(f"{'dashboard' if ui else 'headless':<10} {r['episodes']:>8} {r['wall']:>7.1f} "
                  f"{r['cpu_per_ep'] * 1000:>7.2f}ms {r['first_fifth'] * 1000:>7.2f}ms "
                  f"{r['last_fifth'] * 1000:>7.2f}ms "
                  f"{r['peak_mb']:>11.0f}  {goal}")
        ratio = rows[True]["cpu_per_ep"] / rows[False]["cpu_per_ep"]
        print(f"dashboard CPU per episode: {ratio:.1f}x headless; last fifth / second fifth "
              f"{rows[True]['last_fifth'] / rows[True]['first_fifth']:.2f} (flat: ~1)")
        print(f"max RSS of the process over both phases: "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    os.system(f"rm -rf '{work}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
