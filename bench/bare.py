"""om2w-tui against a bare runner written the seed's way, on the same tasks, oracle and worker count.

    .venv/bin/python bench/bare.py [--workers 2] [--heavy-tasks 4] [--heavy-items 300] [--rounds 2] [--only DOM]
                                   [--keep DIR]

The bare runner is what a user would otherwise write (the seed runner's policy): static slots as processes (task k
goes to slot k mod N), each slot taking the first of its tasks whose site is free (a lock per site, 15 s polls), and
a fresh event loop, Agent and browser session per task (the same episode code om2w-tui's workers run, so only the
harness differs); no console. Its slots run at the workers' priority (`lower_priority`: nice 15, their Chromium
too): on a machine shared with other jobs a niced process gets less of a busy core, so both runners' episodes run at
the same nice. om2w-tui runs headless (`run --no-ui`): its scheduler, one long-lived worker process per slot. Both
start the same servers in their own process (the offline sites or none, and the oracle model).

Two task sets: the offline suite (19 light tasks on 5 sites), and a DOM-heavy results page served by this bench
(`--heavy-items` product cards, each a link, a quantity field and a button: 900 interactive elements and ~2,400
nodes at the default, like a retailer's results page), one task per site so that pacing does not serialise them.
The best seller's note is below the list: the oracle scrolls a page a step until it shows (8 steps at the default),
then answers. Each task's text names its shop, since the oracle knows a task by its text.

Like with like: each runner runs every task `--rounds` times, the runners taking turns going first (a load that
drifts on a shared machine weighs on both alike), and the bench names any task whose episodes differ between the
runners (steps, judged right), since then the figures do not compare.

Measured for each runner, as a process tree (Chromium included), summed over the rounds: wall time (from the
runner's start to its exit) and episodes per hour; CPU seconds per episode (the tree's user + system time, from the
kernel's accounting of every reaped descendant; this process is the tree's subreaper, so orphans such as a killed
browser's renderers are reaped here and counted); the peak memory of a slot (a worker or slot process and its
Chromium, unique set size, sampled every 0.5 s). `--keep DIR` keeps the runs' folders (records with start and end
times, trajectories) and a trace of every process's CPU each 0.5 s.
Goals: om2w-tui's throughput >= the bare runner's; its CPU per episode <= 1.10x the bare runner's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SEED_POLL_S = 15.0
PR_SET_CHILD_SUBREAPER = 36   # linux/prctl.h


# ── the DOM-heavy site ────────────────────────────────────
def heavy_page(items: int, shop: int) -> bytes:
    cards = "".join(
        f'<li class="card"><a href="/item/{i}" id="item-{i}">Kettle model {shop}-{i}</a> '
        f'<span class="price">${10 + i % 90}.{i % 100:02d}</span> '
        f'<input name="qty-{i}" type="number" value="1" aria-label="quantity {i}"> '
        f'<button type="button" id="add-{i}">Add to cart</button></li>' for i in range(items))
    target = items // 2
    # below the list: the agent scrolls through the whole page (a browser-use step on it each time) to read it
    note = f"<p>Best seller of shop {shop}: Kettle model {shop}-{target}, sold 4{shop}2 times.</p>"
    return (f"<!doctype html><html><head><title>Results {shop}</title></head><body><h1>Results for kettle</h1>"
            f"<ul>{cards}</ul>{note}<footer>End of results</footer></body></html>").encode()


def serve_heavy(items: int, shops: int) -> tuple[ThreadingHTTPServer, list[str]]:
    pages = {f"/shop{s}/": heavy_page(items, s) for s in range(shops)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path) or pages.get(self.path.rstrip("/") + "/") or b"<p>item</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    # one port per shop: a site is host:port, so the tasks are on different sites
    servers = []
    urls = []
    for s in range(shops):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        urls.append(f"http://127.0.0.1:{srv.server_address[1]}/shop{s}/")
    return servers, urls


def heavy_tasks(urls: list[str]) -> list[dict[str, Any]]:
    """One task per heavy shop, with the oracle's script: scroll until the best seller's note shows, then answer.
    Each task's text names its shop: the oracle knows a task by its text, and tasks with one text would all be
    played as the first one (the others never finding their fact, scrolling to the step budget)."""
    tasks = []
    for s, url in enumerate(urls):
        fact = f"sold 4{s}2 times"
        tasks.append({
            "task_id": f"heavy_results_{s:02d}", "website": url, "level": "easy", "reference_length": 2,
            "confirmed_task": f"On the results page of shop {s} for kettle, find how many times shop {s}'s best "
                              f"seller was sold.",
            "reference_answer": [f"4{s}2"],
            "solution": [
                {"when": {"text_contains": fact}, "do": [{"done": {"text": f"It was {fact}.", "success": True}}]},
                {"when": {}, "do": [{"scroll": {"down": True, "pages": 1.0}}]}]})
    return tasks


# ── measuring a process tree ──────────────────────────────
def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def uss(p: psutil.Process) -> float:
    try:
        return p.memory_full_info().uss / 2**20
    except psutil.Error:
        return 0.0


def become_subreaper() -> bool:
    """Orphans of the measured tree (a Chromium renderer whose browser was killed, a process a harness did not wait
    for) are reparented to this process instead of init, so that reaping them adds their CPU to RUSAGE_CHILDREN:
    without it their CPU is lost to the accounting (~20% of a DOM-heavy run's, seen with a per-process trace)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(keep: int) -> int:
    """Reap this process's finished children other than `keep` (orphans handed to us as subreaper); -> how many."""
    n = 0
    for c in psutil.Process().children():
        if c.pid == keep:
            continue
        with contextlib.suppress(psutil.Error, ChildProcessError):
            if c.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(c.pid, 0)
                n += 1
    return n


def measured(cmd: list[str], slot_procs: Any, env: dict[str, str] | None = None,
             trace: Path | None = None) -> dict[str, float]:
    """Run `cmd` to its end; -> wall (from its start to its exit), CPU of its whole tree (orphans included, as this
    process's subreaped children), peak USS of a slot (`slot_procs(root)` lists them), and how many of its processes
    outlived it (killed then). With `trace`, every process of the tree's CPU time is written there each 0.5 s."""
    cpu0, t0, epoch0 = children_cpu(), time.monotonic(), time.time()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        root = psutil.Process(proc.pid)
        with contextlib.ExitStack() as files:
            log = files.enter_context(open(trace, "w")) if trace else None
            while not done.wait(0.5):
                reap_orphans(proc.pid)
                with contextlib.suppress(psutil.Error):
                    for p in slot_procs(root):
                        peak[0] = max(peak[0], uss(p) + sum(uss(c) for c in p.children(recursive=True)))
                if log is not None:
                    log.write(json.dumps({"t": round(time.time() - epoch0, 2), "procs": tree_cpu(root)}) + "\n")

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = proc.communicate()
    wall = time.monotonic() - t0
    done.set()
    t.join()
    outlived = [c for c in psutil.Process().children() if c.status() != psutil.STATUS_ZOMBIE]
    for c in outlived:
        with contextlib.suppress(psutil.Error):
            c.kill()
    psutil.wait_procs(outlived, timeout=10)
    reap_orphans(-1)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
    return {"wall": wall, "cpu": children_cpu() - cpu0, "slot_mb": peak[0], "outlived": len(outlived),
            "epoch0": epoch0}


def tree_cpu(root: psutil.Process) -> list[list[Any]]:
    """[pid, ppid, nice, name, CPU s] for every live process of the tree (for --keep's trace)."""
    rows = []
    for p in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            c = p.cpu_times()
            rows.append([p.pid, p.ppid(), p.nice(), p.name()[:20], round(c.user + c.system, 2)])
    return rows


def episodes_in(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(out.glob("results*.jsonl")) for line in f.read_text().splitlines()
            if line.strip()]


# ── the bare runner ───────────────────────────────────────
def bare_runner(args: argparse.Namespace) -> int:
    """The parent of the bare runner: the servers, then one process per slot, waited for."""
    from om2w_tui.engine.launch import live_offline_task, offline_tasks
    from om2w_tui.offline import OfflineSuite, OracleServer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if args.tasks_file == "offline":
            suite = stack.enter_context(OfflineSuite())
            tasks = [live_offline_task(t, suite.base_urls).to_dict() for t in offline_tasks()[1]]
            oracle_tasks = suite.tasks()
        else:
            tasks = oracle_tasks = json.loads(Path(args.tasks_file).read_text())
        oracle = stack.enter_context(OracleServer(oracle_tasks))
        (out / "tasks.json").write_text(json.dumps(tasks))
        from om2w_tui.engine.config import RunConfig
        from om2w_tui.episode.browser import find_chromium, resolve_browser
        chromium = find_chromium(None)   # as the preflight does, once: the slots start with it known
        ua = resolve_browser(RunConfig(out=out).browser_settings().as_dict(), chromium)["user_agent"]
        (out / "browser.json").write_text(json.dumps({"chromium": chromium, "user_agent": ua}))
        procs = [subprocess.Popen([sys.executable, __file__, "--bare-slot", str(k), "--workers", str(args.workers),
                                   "--out", str(out), "--base-url", oracle.url], cwd=REPO)
                 for k in range(args.workers)]
        return max(p.wait() for p in procs)


def bare_slot(args: argparse.Namespace) -> int:
    """One slot of the bare runner: its static share of the tasks, one fresh episode (loop, Agent, browser) each."""
    out, k, n = Path(args.out), args.bare_slot, args.workers
    from om2w_tui.episode.worker import lower_priority  # here: a slot process imports what it runs only

    lower_priority()   # the priority om2w-tui's workers and their Chromium run at: only the harness differs
    scratch = tempfile.mkdtemp(prefix=f"om2w-bare-{k}-")
    from om2w_tui.episode.browser import browser_use_env
    os.environ.update(browser_use_env(os.path.join(scratch, "config")))
    os.environ["TMPDIR"] = scratch
    from om2w_tui.benchmarks.site_keys import site_key
    from om2w_tui.benchmarks.tasks import Task
    from om2w_tui.engine.config import RunConfig
    from om2w_tui.episode.runner import EpisodeControl, run_episode
    from om2w_tui.offline import judge_answer
    from om2w_tui.protocol.codec import to_json

    tasks = [t for i, t in enumerate(json.loads((out / "tasks.json").read_text())) if i % n == k]
    cfg = RunConfig(out=out, model="oracle", workers=n, **json.loads((out / "browser.json").read_text()))
    locks = out / ".pace"
    locks.mkdir(exist_ok=True)
    results = out / f"results_{k}.jsonl"
    while tasks:
        held = None
        for t in tasks:   # the first task whose site is free (the seed's flock per site)
            f = open(locks / f"{site_key(t['website']).replace(':', '_')}.lock", "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = (t, f)
                break
            except OSError:
                f.close()
        if held is None:
            time.sleep(SEED_POLL_S)
            continue
        task, lock = held
        tasks.remove(task)
        folder = out / task["task_id"]
        folder.mkdir(parents=True, exist_ok=True)
        # the task's budget by the loader's one rule (its own max_steps, else the run's)
        spec = cfg.worker_spec(folder, base_url=args.base_url, max_steps=Task.from_dict(task, cfg.max_steps).max_steps)
        t_start = time.time()
        try:
            outcome = asyncio.run(run_episode(task, spec, lambda ev: None, EpisodeControl()))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
        # judged as om2w-tui judges a task with reference answers (engine/launch.py's reference_judge)
        correct = outcome.status == "done" and outcome.agent_done and judge_answer(task, outcome.answer)
        rec = {k: v for k, v in to_json(outcome).items() if k != "model"}
        with open(results, "a") as f:
            f.write(json.dumps({"task_id": task["task_id"], **rec, "correct": correct, "started_at": t_start,
                                "finished_at": time.time()}, default=str) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


# ── the comparison ────────────────────────────────────────
RUNNERS = ("bare", "om2w-tui")


def runner_command(runner: str, tasks: str, workers: int, out: Path) -> list[str]:
    if runner == "bare":
        return [sys.executable, __file__, "--bare-runner", "--tasks-file", tasks, "--workers", str(workers),
                "--out", str(out)]
    cmd = [sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--model", "oracle", "--workers", str(workers),
           "--pace-cooldown", "0", "--out", str(out)]
    return cmd + (["--bench", "offline"] if tasks == "offline" else ["--tasks", tasks])


def round_order(r: int) -> tuple[str, ...]:
    """Round r's order of the runners: alternated (bare first, then om2w-tui first, ...), so that a load that drifts
    during a run on a shared machine weighs on both alike instead of on whichever always runs second."""
    return RUNNERS if r % 2 == 0 else RUNNERS[::-1]


def episode_mismatch(records: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Where the runners' episodes differ: a task run by one runner only or a different number of times, with other
    step counts, or judged otherwise. The comparison holds only for the same episodes (same steps, same oracle's
    replies); -> one line per task that differs, [] when they match."""
    seen: dict[str, dict[str, list[tuple[int, bool]]]] = {}
    for runner, recs in records.items():
        for rec in recs:
            seen.setdefault(rec["task_id"], {r: [] for r in records})[runner].append(
                (int(rec.get("steps") or 0), bool(rec.get("correct"))))
    lines = []
    for task_id, by_runner in sorted(seen.items()):
        episodes = {r: sorted(v) for r, v in by_runner.items()}
        if len({tuple(v) for v in episodes.values()}) > 1:
            lines.append(f"{task_id}: " + "; ".join(f"{r} (steps, correct) {v}" for r, v in episodes.items()))
    return lines


def compare(args: argparse.Namespace) -> int:
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="om2w-bare-"))
    work.mkdir(parents=True, exist_ok=True)
    subreaped = become_subreaper()
    servers, urls = serve_heavy(args.heavy_items, args.heavy_tasks)
    heavy_file = work / "heavy.json"
    heavy_file.write_text(json.dumps(heavy_tasks(urls)))
    sets = {"offline suite": "offline", f"DOM-heavy ({args.heavy_items} items)": str(heavy_file)}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        for label, tasks in sets.items():
            if args.only and args.only not in label:
                continue
            for r in range(args.rounds):
                for runner in round_order(r):
                    name = f"{runner}-{'offline' if tasks == 'offline' else 'heavy'}-{r}"
                    out = work / name
                    cmd = runner_command(runner, tasks, args.workers, out)
                    # the slot processes, or om2w-tui's worker processes
                    m = measured(cmd, lambda root: root.children(), trace=work / f"trace-{name}.jsonl"
                                 if args.keep else None)
                    recs = episodes_in(out)
                    acc = rows.setdefault((label, runner), {"wall": 0.0, "cpu": 0.0, "slot_mb": 0.0, "outlived": 0,
                                                            "records": [], "rounds": []})
                    acc["rounds"].append(len(recs) / m["wall"])
                    acc["wall"] += m["wall"]
                    acc["cpu"] += m["cpu"]
                    acc["slot_mb"] = max(acc["slot_mb"], m["slot_mb"])
                    acc["outlived"] += m["outlived"]
                    acc["records"] += recs
                    steps = sum(int(x.get("steps") or 0) for x in recs)
                    print(f"  {label}, round {r + 1}, {runner}: {len(recs)} episodes, {steps} steps, "
                          f"{sum(bool(x.get('correct')) for x in recs)} right, {m['wall']:.0f} s, {m['cpu']:.0f} CPU s"
                          f" (load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for srv in servers:
            srv.shutdown()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.workers} workers, oracle model, cooldown 0 (one episode per site at a time); "
          f"{psutil.cpu_count()} cores; {args.rounds} rounds, the runners' order alternated; wall and CPU summed "
          f"over the rounds" + ("" if subreaped else "; CPU of orphaned processes NOT counted (no subreaper)"))
    print(f"{'task set':<22} {'runner':<9} {'eps':>4} {'steps':>5} {'right':>5} {'wall s':>7} {'ep/hour':>8} "
          f"{'CPU s/ep':>9} {'slot MB':>8} {'thru x':>7} {'CPU x':>6}  goals: thru >= 1, CPU <= 1.10")
    for label in sets:
        pair = {runner: rows[label, runner] for runner in RUNNERS if (label, runner) in rows}
        if len(pair) < 2:
            continue
        base = pair["bare"]
        base_rate, base_cpu = len(base["records"]) / base["wall"], base["cpu"] / max(1, len(base["records"]))
        for runner, m in pair.items():
            n = len(m["records"])
            rate, cpu_ep = n / m["wall"], m["cpu"] / max(1, n)
            thru, cpu_x = rate / base_rate, cpu_ep / base_cpu
            goal = "" if runner == "bare" else (f"{'met' if thru >= 1 else 'MISSED'} / "
                                                 f"{'met' if cpu_x <= 1.10 else 'MISSED'}")
            print(f"{label:<22} {runner:<9} {n:>4} {sum(int(x.get('steps') or 0) for x in m['records']):>5} "
                  f"{sum(bool(x.get('correct')) for x in m['records']):>5} {m['wall']:>7.0f} {rate * 3600:>8.0f} "
                  f"{cpu_ep:>9.1f} {m['slot_mb']:>8.0f} {thru:>7.2f} {cpu_x:>6.2f}  {goal}")
        for runner, m in pair.items():
            if m["outlived"]:
                print(f"  {label}, {runner}: {m['outlived']} processes outlived their run (killed by the bench)")
        per_round = [o / b for o, b in zip(pair["om2w-tui"]["rounds"], base["rounds"], strict=True)]
        print(f"  {label}: om2w-tui's throughput x, round by round (each pair of runs next to each other in time): "
              f"{', '.join(f'{x:.2f}' for x in per_round)}")
        mismatch = episode_mismatch({runner: m["records"] for runner, m in pair.items()})
        if mismatch:
            print(f"  {label}: NOT the same episodes, so the figures do not compare:")
            for line in mismatch:
                print(f"    {line}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--heavy-tasks", type=int, default=4)
    ap.add_argument("--heavy-items", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2, help="runs of each runner, in alternating order (default 2)")
    ap.add_argument("--only", default="", help="run only the task set whose name contains this")
    ap.add_argument("--keep", default="", help="keep both runs' folders here, with a trace of their processes")
    ap.add_argument("--bare-runner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bare-slot", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tasks-file", default="offline", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bare_slot is not None:
        return bare_slot(args)
    if args.bare_runner:
        return bare_runner(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
