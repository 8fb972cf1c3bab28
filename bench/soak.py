"""Soak: many episodes of the offline suite with faults injected at random, then an account of what was lost.

    .venv/bin/python bench/soak.py [--episodes 64] [--workers 2] [--seed 7] [--keep DIR]

Faults, all real: a chaos proxy in front of the oracle answers some model calls with HTTP 500 and lets others
hang past the client's timeout, and goes down (its port closed: connections refused) and comes up again several
times, as a model server that restarts; a killer ends a random Chromium of the run now and then; a few tasks start
on a page that never answers. The run is the real command line (`om2w-tui run --no-ui`). At the end it checks
every record, not the latest, and prints: tasks with exactly one settling record that is their last (nothing run
after it was settled, nothing settled twice), attempts numbered without a gap, records per status, task folders
that conform to the evaluator's layout (`benchmarks.conformance.check_run`), Chromium processes left (must be 0),
and the cost of the faults (wall time against a clean run of the same tasks, when --baseline is given). Exit 1
when anything was lost or run twice.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from om2w_tui.benchmarks.conformance import check_run  # noqa: E402
from om2w_tui.engine.results import read_results, settles  # noqa: E402
from om2w_tui.executors.local import run_tag  # noqa: E402
from om2w_tui.offline import OfflineSuite, OracleServer  # noqa: E402


class ChaosProxy:
    """Forwards chat completions to the oracle; some get HTTP 500, some hang for `hang_s`."""

    def __init__(self, upstream: str, rng: random.Random, p500: float, phang: float, hang_s: float):
        self.upstream, self.rng, self.p500, self.phang, self.hang_s = upstream.rstrip("/"), rng, p500, phang, hang_s
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self, body: bytes | None) -> None:
                path = self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
                req = urllib.request.Request(proxy.upstream + path, data=body, method=self.command,
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=120) as r:
                        code, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    code, data = e.code, e.read()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                self._forward(None)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy.lock:
                    roll = proxy.rng.random()
                if self.path.endswith("/chat/completions") and roll < proxy.p500:
                    proxy.counts["http_500"] += 1
                    data = b'{"error": {"message": "chaos: injected 500", "type": "server_error"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if self.path.endswith("/chat/completions") and roll < proxy.p500 + proxy.phang:
                    proxy.counts["hang"] += 1
                    time.sleep(proxy.hang_s)
                proxy.counts["forwarded"] += 1
                self._forward(body)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):   # a client that gave up on a hang: expected
                pass

        self._server_class = Server
        self._handler = Handler
        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def flap(self, down_s: float) -> None:
        """The model server goes away (its port closed: connections are refused) and comes back on the same port."""
        self.stop()
        self.counts["down"] += 1
        time.sleep(down_s)
        self.server = self._server_class(("127.0.0.1", self.port), self._handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def flapper(proxy: ChaosProxy, flaps: int, every_s: float, down_s: float, stop: threading.Event) -> None:
    for _ in range(flaps):
        if stop.wait(every_s):
            return
        proxy.flap(down_s)


def chromium_of(out: Path) -> list[psutil.Process]:
    marker = f"om2w-episode-{run_tag(out)}-"
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = p.info["cmdline"] or []
            if any(marker in part for part in cmd) and not any(part.startswith("--type=") for part in cmd):
                found.append(p)
        except psutil.Error:
            continue
    return found


def killer(out: Path, rng: random.Random, every_s: float, stop: threading.Event, kills: Counter[str]) -> None:
    while not stop.wait(every_s * (0.5 + rng.random())):
        browsers = chromium_of(out)
        if browsers:
            try:
                rng.choice(browsers).kill()
                kills["chromium_killed"] += 1
            except psutil.Error:
                pass


def make_tasks(suite: OfflineSuite, episodes: int, hanging: int) -> list[dict]:
    base = suite.tasks()
    rows = []
    for k in range(episodes - hanging):
        t = dict(base[k % len(base)])
        t["task_id"] = f"{t['task_id']}__r{k // len(base)}"
        rows.append({key: t[key] for key in ("task_id", "confirmed_task", "website", "level", "reference_answer")})
    urls = list(suite.base_urls.values())
    for k in range(hanging):
        rows.append({"task_id": f"hangs_{k}", "confirmed_task": "Read the page that never loads",
                     "website": f"{urls[k % len(urls)]}/hang", "level": "easy", "reference_answer": ["-"]})
    return rows


def run(args: argparse.Namespace, out: Path, tasks_file: Path, model_url: str) -> float:
    cmd = [sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--tasks", str(tasks_file), "--model", "oracle",
           "--vllm", model_url, "--workers", str(args.workers), "--pace-cooldown", "0", "--timeout", "30",
           "--llm-timeout", "10", "--retries", "3", "--breaker-after", "6", "--probe-interval", "3",
           "--out", str(out)]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=REPO, stdout=open(out.parent / f"{out.name}.log", "w"), stderr=subprocess.STDOUT,
                   check=True, timeout=3600)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--hanging", type=int, default=3, help="tasks whose start page never answers")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--p500", type=float, default=0.04)
    ap.add_argument("--phang", type=float, default=0.02)
    ap.add_argument("--kill-every", type=float, default=25.0, help="mean seconds between Chromium kills")
    ap.add_argument("--flaps", type=int, default=3, help="times the model server goes down and comes back")
    ap.add_argument("--flap-every", type=float, default=45.0, help="seconds between model server flaps")
    ap.add_argument("--flap-down", type=float, default=10.0, help="seconds the model server stays down")
    ap.add_argument("--baseline", action="store_true", help="also run the same tasks without faults and compare")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(args.keep or tempfile.mkdtemp(prefix="om2w-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        rows = make_tasks(suite, args.episodes, args.hanging)
        tasks_file = work / "soak_tasks.json"
        tasks_file.write_text(json.dumps(rows))
        baseline_s = None
        if args.baseline:
            clean = work / "clean"
            shutil.rmtree(clean, ignore_errors=True)
            baseline_s = run(args, clean, tasks_file, oracle.url)
        proxy = ChaosProxy(oracle.url, rng, args.p500, args.phang, hang_s=15)
        out = work / "soak"
        shutil.rmtree(out, ignore_errors=True)
        stop, kills = threading.Event(), Counter()
        threading.Thread(target=killer, args=(out, rng, args.kill_every, stop, kills), daemon=True).start()
        threading.Thread(target=flapper, args=(proxy, args.flaps, args.flap_every, args.flap_down, stop),
                         daemon=True).start()
        try:
            soak_s = run(args, out, tasks_file, proxy.url)
        finally:
            stop.set()
            proxy.stop()
    log = read_results(out)
    latest = log.latest_records()
    ids = [r["task_id"] for r in rows]
    by_task: dict[str, list[dict]] = {t: [] for t in ids}
    for r in log.records:   # file order is the order they were written
        by_task.setdefault(r["task_id"], []).append(r)
    exactly_one = [t for t in ids if sum(map(settles, by_task[t])) == 1 and settles(by_task[t][-1])]
    twice = sorted(t for t in ids if sum(map(settles, by_task[t])) > 1)
    after = sorted(t for t in ids if any(settles(r) for r in by_task[t][:-1]))
    gaps = sorted(t for t in ids if [r.get("attempt") for r in by_task[t]] != list(range(1, len(by_task[t]) + 1)))
    unsettled = sorted(t for t in ids if not any(map(settles, by_task[t])))
    folders = [p for p in out.iterdir() if p.is_dir()]
    problems = check_run(out)
    print(f"soak: {len(ids)} tasks, {args.workers} workers, seed {args.seed}, folder {work}")
    print(f"faults injected: {dict(proxy.counts)} model calls and server flaps, {dict(kills)}, "
          f"{args.hanging} hanging start pages")
    print(f"records: {len(log.records)} attempts; per status {dict(Counter(r['status'] for r in log.records))}")
    print(f"final records per status: {dict(Counter(r.status for r in latest.values()))}")
    print(f"tasks with exactly one settling record, their last: {len(exactly_one)} of {len(ids)}; "
          f"settled twice: {twice or 'none'}; run after settling: {after or 'none'}; "
          f"attempts with a gap: {gaps or 'none'}; never settled: {unsettled or 'none'}")
    print(f"task folders: {len(folders)}, conforming: {len(folders) - len({p.split(':')[0] for p in problems})}, "
          f"problems: {problems[:5] or 'none'}")
    correct = sum(bool(r.correct) for r in latest.values())
    print(f"correct (reference judge on the final record): {correct} of {len(ids) - args.hanging} solvable")
    print(f"chromium processes left: {len(chromium_of(out))}")
    print(f"wall time: soak {soak_s:.0f} s" + (f", clean {baseline_s:.0f} s, ratio {soak_s / baseline_s:.2f}x"
                                              if baseline_s else ""))
    lost = twice or after or gaps or len(exactly_one) + len(unsettled) != len(ids) or chromium_of(out)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
