"""The console under load: its event loop's lag with the dashboard open while the workers saturate every core.

    .venv/bin/python bench/console_lag.py [--workers 2xcores] [--cooldown 0]

A real offline run (the offline suite, the oracle model, real worker processes and Chromium on 127.0.0.1) with the
real console app open on its dashboard (headless Textual, `run_test`), at workers = 2 x cores. A probe coroutine in
the console's loop sleeps 10 ms at a time and records how late it wakes. Printed: p50, p99 and max lag while the
run goes; the same probe in the same process before the run starts (an idle dashboard); and the same probe in a
bare Python process at the console's priority during the run (the baseline: what any process waits for a core on
this machine then, the floor under the console's lag). Goal: p99 <= 50 ms.

By default the offline sites and the oracle run in a helper process at the workers' priority, as live sites and a
model server are elsewhere in a real run (`--bench offline` serves them in threads of the console process, where
their Python work takes the console's GIL: `--servers-inside` measures that too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _common import pct, verdict
from loop_watch import StallWatch

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import preflight
from om2w_tui.episode.worker import WORKER_NICE

GOAL_MS = 50.0
PROBE_S = 0.010


WORST: list[tuple[float, float]] = []   # (lag ms, seconds into the probe) of the worst wake-ups


async def probe(lags: list[float], until: float | None, stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    while not stop.is_set() and (until is None or loop.time() < until):
        t = loop.time()
        await asyncio.sleep(PROBE_S)
        lags.append((loop.time() - t - PROBE_S) * 1000)
        if until is None and lags[-1] > GOAL_MS:
            WORST[:] = sorted([*WORST, (lags[-1], t - t0)])[-5:]


def run_config(out: Path, workers: int, cooldown: float, served: dict[str, str] | None) -> RunConfig:
    if served is None:
        return RunConfig(out=out, bench="offline", model="oracle", workers=workers, pace_cooldown=cooldown)
    return RunConfig(out=out, tasks=Path(served["tasks"]), model="oracle", vllm=served["oracle"], workers=workers,
                     pace_cooldown=cooldown)


def serve_apart(folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """The offline sites and the oracle in a helper process (at the workers' priority); -> it, its task file and URL."""
    info = folder / "served.json"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(info)], stdin=subprocess.PIPE,
                            preexec_fn=lambda: os.nice(WORKER_NICE))
    while not info.exists():
        if proc.poll() is not None:
            raise SystemExit("the helper serving the offline sites failed")
        time.sleep(0.1)
    time.sleep(0.2)
    return proc, json.loads(info.read_text())


def serve(info: Path) -> int:
    from om2w_tui.offline import OfflineSuite, OracleServer

    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        tasks = info.parent / "tasks.json"
        tasks.write_text(json.dumps(suite.tasks()))
        tmp = info.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tasks": str(tasks), "oracle": oracle.url}))
        tmp.rename(info)
        sys.stdin.read()   # until the bench closes the pipe
    return 0


async def measure(out: Path, workers: int, cooldown: float, idle_s: float,
                  served: dict[str, str] | None, stalls_ms: float = 0.0) -> dict[str, object]:
    from om2w_tui.frontends.console.app import make_app

    pre = preflight(run_config(out, workers, cooldown, served))
    app = make_app(pre, start_engine=False, last_launch=None, image_renderer="unicode", cursor_blink=False)
    idle: list[float] = []
    busy: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        loop = asyncio.get_running_loop()
        await probe(idle, loop.time() + idle_s, asyncio.Event())   # the baseline: the dashboard open, no run
        psutil.cpu_percent(None)
        t0 = time.monotonic()
        bare = subprocess.Popen([sys.executable, __file__, "--bare-probe"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        app.engine = app.run_engine(pre)
        stop = asyncio.Event()
        prober = asyncio.ensure_future(probe(busy, None, stop))
        watch = StallWatch(loop, late_ms=stalls_ms) if stalls_ms else None
        if watch is not None:
            watch.start()
        while not app.engine.is_finished:
            await asyncio.sleep(0.5)
        stop.set()
        await prober
        if watch is not None:
            watch.stop()
            print(watch.report())
        bare_lags = json.loads(bare.communicate(b"")[0])
        wall, load = time.monotonic() - t0, psutil.cpu_percent(None)
        episodes = len(app.dashboard.known_records()) if app.dashboard else 0
        await pilot.pause(0.5)
    return {"idle": idle, "busy": busy, "wall": wall, "load": load, "episodes": episodes, "bare": bare_lags}


def bare_probe() -> int:
    """Probe a bare process's loop until stdin closes; print the lags as JSON."""
    import threading

    stop = asyncio.Event()
    lags: list[float] = []

    async def go() -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)), daemon=True).start()
        await probe(lags, None, stop)

    asyncio.run(go())
    print(json.dumps(lags))
    return 0


async def measure_headless(out: Path, workers: int, cooldown: float, served: dict[str, str] | None) -> list[float]:
    """The same run with no front end, the probe in its loop: what the engine and the in-process servers cost."""
    from om2w_tui.engine.launch import open_run

    cfg = run_config(out, workers, cooldown, served)
    lags: list[float] = []
    stop = asyncio.Event()
    async with open_run(preflight(cfg), []) as sched:
        prober = asyncio.ensure_future(probe(lags, None, stop))
        try:
            await sched.run()
        finally:
            stop.set()
            await prober
    return lags


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2 * (psutil.cpu_count() or 1))
    ap.add_argument("--cooldown", type=float, default=0.0)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--headless", action="store_true", help="also the same run with no front end (a baseline)")
    ap.add_argument("--servers-inside", action="store_true", help="the sites and oracle in the console")
    ap.add_argument("--stalls", type=float, default=0.0, metavar="MS",
                    help="sample the loop's stack whenever it is this late; print where it was (bench/loop_watch.py)")
    ap.add_argument("--serve", default="", help=argparse.SUPPRESS)
    ap.add_argument("--bare-probe", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(Path(args.serve))
    if args.bare_probe:
        return bare_probe()
    work = Path(tempfile.mkdtemp(prefix="om2w-console-lag-"))
    helper, served = serve_apart(work) if not args.servers_inside else (None, None)
    try:
        r = asyncio.run(measure(work / "run", args.workers, args.cooldown, args.idle_s, served, args.stalls))
        headless = asyncio.run(measure_headless(work / "headless", args.workers, args.cooldown, served)) \
            if args.headless else []
    finally:
        if helper is not None:
            helper.communicate(b"")
        shutil.rmtree(work, ignore_errors=True)
    where = "in the console process" if served is None else "in a helper process"
    print(f"the offline sites and the oracle: {where}")
    print(f"offline suite, oracle model, {args.workers} workers on {psutil.cpu_count()} cores, cooldown "
          f"{args.cooldown:g} s: {r['episodes']} episodes in {r['wall']:.0f} s, machine CPU {r['load']:.0f}% busy")
    print(f"{'event loop lag':<24} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'samples':>8}  goal p99 <= {GOAL_MS:g}")
    rows = [("dashboard idle", r["idle"]), ("dashboard, run going", r["busy"]),
            ("bare process, run going", r["bare"])]
    if headless:
        rows.append(("headless, run going", headless))
    for name, lags in rows:
        assert isinstance(lags, list)
        print(f"{name:<24} {pct(lags, 50):>7.1f} {pct(lags, 99):>7.1f} {max(lags):>7.1f} {len(lags):>8}  "
              f"{verdict(pct(lags, 99) <= GOAL_MS) if name.startswith('dashboard, run') else ''}")
    print("worst wake-ups (ms at s into the run): " + ", ".join(f"{ms:.0f} at {at:.1f}" for ms, at in reversed(WORST)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
