"""Judging as the run goes costs the run's episodes nothing: the real Scheduler with and without its background judge
(`--judge-url`), episodes per hour of each.

    .venv/bin/python bench/live_judge.py [--tasks 96] [--workers 8] [--episode 4] [--latency 2] [--rounds 3]

The episodes are stand-in workers (bench/_common.py's SimExecutor) on the real clock, each writing its folder as a
real worker does (result.json and, step by step, 1280x800 PNG screenshots), so the judge has real work: it reads
each settled folder, re-encodes its screenshots as JPEG, and calls its judge over HTTP. The judge is a stand-in
OpenAI-compatible server on 127.0.0.1 that answers WebJudge's three kinds of request after a log-normal latency
(median `--latency` seconds: a served WebJudge-7B or o4-mini), from a thread pool of its own, as a remote endpoint
would. Both runs have the same tasks and episode lengths; they take turns (`--rounds`), the order swapped each
round. Printed: each run's episodes per hour (over the time from the first start to the last episode's end: the
judge's catching up after that is not the run's), the ratio with / without, and how far the judge had got when the
last episode ended. Goal: >= 0.99x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _common import SimExecutor, SimWorker, om2w_tasks, verdict

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeFinished, Event
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.protocol.worker import Command, Run

GOAL = 0.99


# ── a judge endpoint with a latency ──────────────────────────────────────────────────────────────────────────
class Judge(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, latency: float, seed: int = 0, port: int = 0):
        super().__init__(("127.0.0.1", port), JudgeHandler)
        self.latency, self.rng, self.calls = latency, random.Random(seed), 0
        self.lock = threading.Lock()

    def delay(self) -> float:
        with self.lock:
            self.calls += 1
            return self.latency * self.rng.lognormvariate(0.0, 0.5)


class JudgeHandler(BaseHTTPRequestHandler):
    server: Judge

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:   # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        time.sleep(self.server.delay())
        if "Status:" in system:
            text = "Thoughts: the key points are shown.\nStatus: success"
        elif "Score" in system:
            text = "Reasoning: the results page.\nScore: 4"
        else:
            text = "Key points:\n1. the item\n2. its price"
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}}
        data = json.dumps(reply).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):   # the judge stopped with the run, mid-call
            pass

    def do_GET(self) -> None:   # noqa: N802
        data = json.dumps({"object": "list", "data": [{"id": "judge", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# ── workers that write their folders ─────────────────────────────────────────────────────────────────────────
class FolderExecutor(SimExecutor):
    """SimExecutor whose episodes write result.json and a screenshot a step, as a real worker does."""

    pictures: list[Path] = []

    async def start_worker(self, slot: int) -> SimWorker:
        w = FolderWorker(self, slot)
        self.workers.append(w)
        return w


class FolderWorker(SimWorker):
    async def send(self, cmd: Command) -> bool:
        if isinstance(cmd, Run) and (self.job is None or self.job.done()):   # a run it takes
            self.folder = Path(cmd.spec.folder)
            self.steps: list[str] = []
            (self.folder / "trajectory").mkdir(parents=True, exist_ok=True)
        return await super().send(cmd)

    def step(self, task: dict[str, Any], i: int) -> None:
        """The step's screenshot and its line on disk when it ends, as a real worker writes them."""
        pics = FolderExecutor.pictures
        os.link(pics[i % len(pics)], self.folder / "trajectory" / f"{i}_full_screenshot.png")
        self.steps.append(f'<a id="r{i}"> result {i} -> CLICK')
        (self.folder / "result.json").write_text(json.dumps({
            "task_id": task["task_id"], "task": task["confirmed_task"], "final_result_response": "x",
            "action_history": self.steps, "thoughts": ["a thought"] * len(self.steps)}))
        super().step(task, i)


class Ends:
    """When the last episode ended."""

    def __init__(self) -> None:
        self.last = 0.0
        self.n = 0

    def handle(self, event: Event) -> None:
        if isinstance(event, EpisodeFinished):
            self.last, self.n = time.monotonic(), self.n + 1


async def one_run(tasks: list[Task], length: dict[str, float], out: Path, workers: int,
                  judge_url: str | None) -> dict[str, float]:
    from om2w_tui.evaluation.live_judge import LIVE_JUDGE, JudgedRun

    cfg = RunConfig(out=out, workers=workers, pace_cooldown=0.0, site_slots=0, timeout=3600.0,
                    judge_url=judge_url, judge_model="judge" if judge_url else None, judge_workers=4)
    ends = Ends()
    live = LIVE_JUDGE.open(cfg, lambda event: None, [t.task_id for t in tasks])
    sched = Scheduler(cfg, tasks, FolderExecutor(length, step_s=1.0), [ends, *([live] if live else [])])
    t0 = time.monotonic()
    if live is None:
        await sched.run()
        judged = 0
    else:
        await live.start()
        run = JudgedRun(sched, live)
        stop = asyncio.ensure_future(_stop_when_over(ends, len(tasks), run))
        await run.run()
        stop.cancel()
        judged = live.counts.judged
        await live.close()
    span = ends.last - t0
    return {"episodes": ends.n, "span": span, "per_hour": 3600 * ends.n / span, "judged": judged}


async def _stop_when_over(ends: Ends, n: int, run: Any) -> None:
    """The run is measured to its last episode; the judge's catching up afterwards is not waited for."""
    while ends.n < n:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)        # the scheduler's own end (its last record written)
    run.stop()


def picture(seed: int, path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from label_screen import screenshot

    screenshot(seed, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=96)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--episode", type=float, default=4.0, help="median seconds of an episode (4)")
    ap.add_argument("--latency", type=float, default=2.0, help="median seconds of one judge call (2)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(1)
    tasks = om2w_tasks()[:args.tasks]
    length = {t.task_id: args.episode * rng.lognormvariate(0.0, 0.4) for t in tasks}
    results: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    judge = Judge(args.latency)
    threading.Thread(target=judge.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{judge.server_address[1]}/v1"
    with tempfile.TemporaryDirectory(prefix="om2w-bench-judge-") as tmp:
        pics = [Path(tmp) / f"p{i}.png" for i in range(6)]
        for i, p in enumerate(pics):
            picture(i, p)
        FolderExecutor.pictures = pics
        for r in range(args.rounds):
            order = ["without", "with"] if r % 2 == 0 else ["with", "without"]
            for kind in order:
                out = Path(tmp) / f"{kind}-{r}"
                res = asyncio.run(one_run(tasks, length, out, args.workers, url if kind == "with" else None))
                results[kind].append(res)
                print(f"round {r + 1} {kind:<7} judge: {res['episodes']:.0f} episodes in {res['span']:.1f} s, "
                      f"{res['per_hour']:.0f}/h" + (f"; {res['judged']:.0f} judged by the last episode's end"
                                                     if kind == "with" else ""), flush=True)
    judge.shutdown()
    ratios = [w["per_hour"] / wo["per_hour"] for w, wo in zip(results["with"], results["without"])]
    ratio = statistics.median(ratios)
    print(f"{args.tasks} tasks, {args.workers} workers, episodes ~{args.episode:g} s with a screenshot a second; "
          f"judge calls ~{args.latency:g} s, 4 at once (the default), {judge.calls} calls")
    print(f"episodes per hour with the judge / without (median of {args.rounds}): {ratio:.3f}x "
          f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)}); goal >= {GOAL}: {verdict(ratio >= GOAL)}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
