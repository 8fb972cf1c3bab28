"""The cost of `--executor ray`: episodes per hour against the local executor, and dispatch latency across nodes.

    .venv/bin/python bench/ray_overhead.py [--workers 1,2,4] [--limit 0] [--repeat 1] [--latency-tasks 6]
                                           [--cooldown 2]

1. Throughput: the offline suite with the oracle model (real workers, real Chromium, real pages on 127.0.0.1)
   through the real scheduler, at each worker count with the local executor (the baseline) and with Ray actors on a
   one-node Ray cluster on this machine (`browser` = the largest count), in the same run. Episodes per hour are
   counted over each run's span (the first dispatch to the last record: the workers' start included, the process's
   own start and Ray's connection not). With `--repeat 2` each pair runs twice, in both orders. Beside it, the CPU
   seconds per episode of Ray's own processes (GCS, raylet, the actors' Python processes; not the workers and
   Chromium they start). Goal: Ray's episodes per hour >= 0.95x the local executor's.
2. Dispatch latency across nodes: one site's tasks, one slot, a cooldown between episodes, so each episode after
   the first starts when the site's cooldown expires. The Ray cluster has two nodes: the head (where the console
   runs) holds no browser, so the actor lives on the other node. Latency: from the cooldown's expiry to the moment
   the `run` command is in the worker's pipe (the actor's answer to `send` is back in the console). The local
   executor, measured the same way in the same run, is the baseline. Goal: Ray's p99 <= 50 ms.

Each cluster is warmed up first (an actor started and ended, then 10 s to settle): a cluster just started burns CPU
for seconds, which the first Ray run measured would pay. Every Ray process stays on 127.0.0.1
(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, node_ip_address 127.0.0.1); each cluster is ended in a `finally`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"   # before Ray is imported: every node on loopback

from _common import pct, verdict  # noqa: E402

from om2w_tui.benchmarks.site_keys import site_key  # noqa: E402
from om2w_tui.engine.config import RunConfig  # noqa: E402
from om2w_tui.engine.launch import open_run, preflight  # noqa: E402
from om2w_tui.executors import local, ray  # noqa: E402
from om2w_tui.protocol.worker import Command, Run  # noqa: E402

THROUGHPUT_GOAL = 0.95
LATENCY_GOAL_MS = 50.0


def cluster(head_browsers: int, node_browsers: list[int], cpus: int) -> Any:
    from ray.cluster_utils import Cluster  # an optional extra: only this benchmark and --executor ray need it

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": cpus, "resources": {"browser": head_browsers}, "node_ip_address": "127.0.0.1",
        "include_dashboard": False})
    for n in node_browsers:
        c.add_node(num_cpus=cpus, resources={"browser": n}, node_ip_address="127.0.0.1")
    c.wait_for_nodes()
    warm_up(c)
    return c


def warm_up(c: Any, settle_s: float = 10.0) -> None:
    """A cluster just started burns CPU for seconds (its processes and the idle workers it starts import Ray): one
    actor is started and ended, then the cluster left to settle, so that the first Ray run does not pay for it."""
    import ray  # the optional extra, as above

    ray.init(address=c.address, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        actor = ray.remote(num_cpus=0)(Pong).remote()
        ray.get(actor.ping.remote())
        ray.kill(actor)
    finally:
        ray.shutdown()
    time.sleep(settle_s)


class Pong:
    def ping(self) -> int:
        return 1


def config(out: Path, executor: str, address: str | None, workers: int, cooldown: float, task_ids: list[str],
           limit: int) -> RunConfig:
    return RunConfig(out=out, bench="offline", model="oracle", workers=workers, pace_cooldown=cooldown,
                     task_ids=task_ids, limit=limit, executor=executor, ray_address=address)


class RayCpu:
    """CPU seconds spent by the Ray cluster's own processes (GCS, raylets, the actors' and idle workers' Python
    processes), not by what the actors start (the worker and its Chromium): sampled every 0.5 s, since an actor's
    process is gone (its CPU with it) once the run ends."""

    def __init__(self, c: Any) -> None:
        self.roots = [info.process.pid for node in [c.head_node, *c.worker_nodes]
                      for infos in node.all_processes.values() for info in infos]
        self.seen: dict[int, float] = {}
        self.start: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _ray_processes(self) -> list[psutil.Process]:
        procs = []
        for pid in self.roots:
            try:
                root = psutil.Process(pid)
            except psutil.Error:
                continue
            procs.append(root)
            for child in root.children():   # the raylet's workers and actors; not the actors' own children
                procs.append(child)
        return procs

    def _sample(self) -> None:
        while True:
            for p in self._ray_processes():
                try:
                    t = p.cpu_times()
                    total = t.user + t.system
                except psutil.Error:
                    continue
                self.start.setdefault(p.pid, total)
                self.seen[p.pid] = total
            if self.stop.wait(0.5):
                return

    def __enter__(self) -> RayCpu:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join()

    def seconds(self) -> float:
        return sum(self.seen[pid] - self.start.get(pid, 0.0) for pid in self.seen)


class SendTimer:
    """Wraps each worker's `send`: the latency from the site's cooldown expiry to the `run` command acknowledged."""

    def __init__(self) -> None:
        self.sched: Any = None
        self.samples: list[float] = []

    def wrap(self, w: Any) -> Any:
        send = w.send
        loop = asyncio.get_running_loop()

        async def timed(cmd: Command) -> bool:
            ok = await send(cmd)
            if isinstance(cmd, Run) and self.sched is not None:
                ready = self.sched.pacer.state(site_key(cmd.task["website"])).ready_at
                if ready > 0:   # 0: the site's first episode, which no cooldown held back
                    self.samples.append((loop.time() - ready) * 1000)
            return bool(ok)

        w.send = timed
        return w


async def one_run(cfg: RunConfig, timer: SendTimer | None = None) -> dict[str, float]:
    pre = preflight(cfg)
    patched = []
    if timer is not None:
        for cls in (local.LocalExecutor, ray.RayExecutor):
            real = cls.start_worker

            async def start_worker(self: Any, slot: int, _real: Any = real) -> Any:
                return timer.wrap(await _real(self, slot))

            patched.append((cls, real))
            cls.start_worker = start_worker   # type: ignore[method-assign]
    try:
        async with open_run(pre, []) as sched:
            if timer is not None:
                timer.sched = sched
            stats = await sched.run()
    finally:
        for cls, real in patched:
            cls.start_worker = real   # type: ignore[method-assign]
    rows = [json.loads(x) for x in (cfg.out / "results.jsonl").read_text().splitlines() if x.strip()]
    span = max(r["finished_at"] for r in rows) - min(r["started_at"] for r in rows)
    ok = sum(r["status"] == "done" for r in rows)
    for r in rows:   # said, never hidden: an attempt that did not end done (a retry counts as an episode)
        if r["status"] != "done":
            print(f"    {cfg.executor}: {r['task_id']} attempt {r['attempt']}: {r['status']} {r.get('error')}",
                  flush=True)
    return {"episodes": stats.finished, "done": ok, "span": span, "per_hour": len(rows) / span * 3600}


def add(total: dict[str, float], one: dict[str, float]) -> dict[str, float]:
    merged = {k: total.get(k, 0.0) + v for k, v in one.items() if k != "per_hour"}
    merged["per_hour"] = merged["episodes"] / merged["span"] * 3600
    return merged


def throughput(work: Path, counts: list[int], limit: int,
               repeat: int) -> list[tuple[int, dict[str, float], dict[str, float]]]:
    """Each count's local and Ray runs back to back, `repeat` times, the order swapped every other time (the run
    that goes first meets colder caches); episodes and spans summed over the repeats."""
    c = cluster(max(counts), [], max(counts))
    rows = []
    try:
        for n in counts:
            base: dict[str, float] = {}
            mine: dict[str, float] = {}
            for r in range(repeat):
                for kind in (("local", "ray") if r % 2 == 0 else ("ray", "local")):
                    cfg = config(work / f"{kind}-{n}-{r}", kind, c.address if kind == "ray" else None, n, 0.0, [],
                                 limit)
                    if kind == "ray":
                        with RayCpu(c) as cpu:
                            got = asyncio.run(one_run(cfg))
                        got["ray_cpu"] = cpu.seconds()
                    else:
                        got = asyncio.run(one_run(cfg))
                    if kind == "local":
                        base = add(base, got)
                    else:
                        mine = add(mine, got)
                    print(f"  {n} workers, {kind}: {got['per_hour']:.0f} ep/h", flush=True)
            rows.append((n, base, mine))
    finally:
        c.shutdown()
    return rows


def latency(work: Path, n_tasks: int, cooldown: float) -> tuple[list[float], list[float]]:
    from om2w_tui.engine.launch import offline_tasks

    _, tasks = offline_tasks()
    site = max({t.site for t in tasks}, key=lambda s: sum(t.site == s for t in tasks))
    ids = [t.task_id for t in tasks if t.site == site][:n_tasks]
    base, mine = SendTimer(), SendTimer()
    asyncio.run(one_run(config(work / "lat-local", "local", None, 1, cooldown, ids, 0), base))
    c = cluster(0, [1], 1)
    try:
        asyncio.run(one_run(config(work / "lat-ray", "ray", c.address, 1, cooldown, ids, 0), mine))
    finally:
        c.shutdown()
    return base.samples, mine.samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated (1,2,4)")
    ap.add_argument("--limit", type=int, default=0, help="tasks of the offline suite per run (0: all 19)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each executor per count, alternating order (1)")
    ap.add_argument("--latency-tasks", type=int, default=6,
                    help="tasks of one site for the latency part (6; 0: skip it)")
    ap.add_argument("--cooldown", type=float, default=2.0, help="the site's cooldown in the latency part (2 s)")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="om2w-ray-bench-"))
    t0 = time.monotonic()
    try:
        print("throughput (each line as it is measured):", flush=True)
        rows = throughput(work, counts, args.limit, args.repeat)
        print("dispatch latency:", flush=True)
        lat_local, lat_ray = latency(work, args.latency_tasks, args.cooldown) if args.latency_tasks else ([], [])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"offline suite, oracle model, cooldown 0, real workers and Chromium; Ray: one node on this machine "
          f"({os.cpu_count()} cores); {time.monotonic() - t0:.0f} s in all")
    print(f"{'workers':>7} {'executor':<8} {'eps':>4} {'span s':>7} {'ep/hour':>8} {'x local':>8} {'Ray CPU s/ep':>12}"
          f"  goal >= {THROUGHPUT_GOAL:.2f}")
    for n, base, mine in rows:
        ratio = mine["per_hour"] / base["per_hour"]
        print(f"{n:>7} {'local':<8} {base['episodes']:>4.0f} {base['span']:>7.1f} {base['per_hour']:>8.0f} "
              f"{1.0:>8.2f} {'':>12}")
        print(f"{n:>7} {'ray':<8} {mine['episodes']:>4.0f} {mine['span']:>7.1f} {mine['per_hour']:>8.0f} "
              f"{ratio:>8.2f} {mine['ray_cpu'] / mine['episodes']:>12.2f}  {verdict(ratio >= THROUGHPUT_GOAL)}")
    if not args.latency_tasks:
        return 0
    print()
    print(f"dispatch latency, cooldown expiry -> run command in the worker's pipe ({args.latency_tasks} tasks of one "
          f"site, cooldown {args.cooldown:g} s, 1 slot; Ray: the actor on a node other than the console's)")
    print(f"{'executor':<8} {'n':>3} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  goal p99 <= {LATENCY_GOAL_MS:g}")
    for name, ms in (("local", lat_local), ("ray", lat_ray)):
        if ms:
            print(f"{name:<8} {len(ms):>3} {pct(ms, 50):>7.1f} {pct(ms, 99):>7.1f} {max(ms):>7.1f}  "
                  f"{verdict(pct(ms, 99) <= LATENCY_GOAL_MS) if name == 'ray' else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
