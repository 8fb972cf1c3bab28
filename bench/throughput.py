"""Throughput and memory of real runs: the offline suite with the oracle at 1 and at N workers.

    .venv/bin/python bench/throughput.py [--workers 2] [--repeat 1]

Prints, for each worker count: wall time, episodes per hour, the peak memory of the console process and of a
slot (worker process + its Chromium, unique set size), and the speed-up of N workers over 1 measured in the same
run (the baseline). On a 2-core machine expect well under 2x: browser-use's DOM work is CPU-bound.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]


def tree_uss(root: psutil.Process) -> tuple[float, dict[int, float]]:
    """(USS of the root, USS of each child worker's whole tree) in MB."""
    def uss(p: psutil.Process) -> float:
        try:
            return p.memory_full_info().uss / 2**20
        except psutil.Error:
            return 0.0

    slots = {}
    for child in root.children():
        slots[child.pid] = uss(child) + sum(uss(g) for g in child.children(recursive=True))
    return uss(root), slots


def run(workers: int, out: Path) -> dict[str, float]:
    cmd = [sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model", "oracle",
           "--workers", str(workers), "--pace-cooldown", "0", "--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = {"console": 0.0, "slot": 0.0}
    done = threading.Event()

    def sample() -> None:
        ps = psutil.Process(proc.pid)
        while not done.wait(0.5):
            try:
                console, slots = tree_uss(ps)
            except psutil.Error:
                continue
            peak["console"] = max(peak["console"], console)
            peak["slot"] = max([peak["slot"], *slots.values()])

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    rc = proc.wait()
    done.set()
    t.join()
    if rc != 0:
        raise SystemExit(f"run failed ({rc}): {' '.join(cmd)}")
    wall = time.monotonic() - t0
    episodes = sum(1 for line in (out / "results.jsonl").read_text().splitlines() if line.strip())
    return {"wall": wall, "episodes": episodes, "per_hour": episodes / wall * 3600, **peak}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="om2w-throughput-"))
    results: dict[int, list[dict[str, float]]] = {1: [], args.workers: []}
    for r in range(args.repeat):
        for w in (1, args.workers):
            results[w].append(run(w, work / f"w{w}-{r}"))
    print(f"offline suite, oracle model, cooldown 0, {args.repeat} repeat(s); {psutil.cpu_count()} cores")
    print(f"{'workers':>7} {'episodes':>8} {'wall s':>7} {'ep/hour':>8} {'console MB':>10} {'slot MB':>8}")
    best = {}
    for w, runs in results.items():
        m = min(runs, key=lambda x: x["wall"])
        best[w] = m
        print(f"{w:>7} {m['episodes']:>8.0f} {m['wall']:>7.1f} {m['per_hour']:>8.0f} {m['console']:>10.0f} "
              f"{m['slot']:>8.0f}")
    print(f"speed-up of {args.workers} workers over 1: {best[args.workers]['per_hour'] / best[1]['per_hour']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
