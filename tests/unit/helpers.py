"""Helpers the unit tests share (no fakes here: those are tests/fakes.py): tasks and a config for the scheduler on
the fake executor, the command line run as a real process on bad input, run folders for the report, and a run
lock held as a run holds it."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.campaign_folder import PLAN_FILE, lane_name
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.results import EpisodeRecord, read_results
from tests.stand_ins import STAND_IN_CHROMIUM


# ── the scheduler on the fake executor ────────────────────────────────────────────────────────────────────────
def make_tasks(spec: dict[str, int]) -> list[Task]:
    """{'a.com': 3, 'b.com': 1} -> tasks a.com-0, a.com-1, ... on those sites."""
    return [Task(f"{site}-{i}", f"do {i} on {site}", f"https://www.{site}/start", "easy")
            for site, n in spec.items() for i in range(n)]


def config(tmp_path: Path, **kw) -> RunConfig:
    kw.setdefault("workers", 2)
    kw.setdefault("pace_cooldown", 120)
    kw.setdefault("timeout", 1800)
    return RunConfig(out=tmp_path / "run", **kw)


def campaign(tmp_path: Path, tasks: list[Task], arms: tuple[str, ...] = ("a", "b"), repeats: int = 1,
             **kw: object) -> tuple[RunConfig, list[Lane]]:
    """A campaign's shared settings (out: tmp_path/camp) and its lanes, one per arm and repeat, each its own model."""
    shared = dataclasses.replace(config(tmp_path, **kw), out=tmp_path / "camp")
    lanes = [Lane(lane_name(arm, r), arm, r, dataclasses.replace(shared, out=shared.out / lane_name(arm, r),
                                                                  model=f"model-{arm}"), tuple(tasks))
             for r in range(1, repeats + 1) for arm in arms]
    return shared, lanes


def records(tmp_path: Path) -> list[dict]:
    return read_results(tmp_path / "run").records


# ── the command line as a process (tests/unit/conftest.py's `work` is its working folder) ─────────────────────
REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-secret-never-shown"


def good_rows() -> list[dict]:
    return [{"task_id": "a", "confirmed_task": "do a", "website": "https://a.com/", "level": "easy"},
            {"task_id": "b", "confirmed_task": "do b", "website": "https://b.com/", "level": "hard"}]


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in folder.rglob("*")}


def run_cli(work: Path, *args: str, out: Path | None = None, chromium: str | None = STAND_IN_CHROMIUM,
            model: str | None = "oracle", timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CHROME_PATH", "OM2W_CHROMIUM")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env["OPENAI_API_KEY"] = SECRET
    argv = [sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--out", str(out or work / "out")]
    if chromium:
        argv += ["--chromium", chromium]
    if model:
        argv += ["--model", model]
    before = listing(work)
    proc = subprocess.run(argv + list(args), cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert listing(work) == before, "the run wrote something"
    assert SECRET not in proc.stderr + proc.stdout
    return proc


def assert_usage_error(proc: subprocess.CompletedProcess, *parts: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    for part in parts:
        assert part in proc.stderr, (part, proc.stderr)


def task_file(work: Path, text: str, name: str = "bad.json") -> Path:
    p = work / name
    p.write_text(text)
    return p


# ── run folders, as the report reads them ──────────────────────────────────────────────────────────────────────
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def task_folder(out: Path, tid: str, actions: int = 2, answer: str = "") -> None:
    (out / tid / "trajectory").mkdir(parents=True)
    (out / tid / "result.json").write_text(json.dumps({
        "task_id": tid, "task": f"task {tid}", "final_result_response": answer,
        "action_history": [f"SCROLL DOWN {i}" for i in range(actions)], "thoughts": []}))
    (out / tid / "trajectory" / "0_full_screenshot.png").write_bytes(PNG)


def record(tid: str, status: str = "done", **kw) -> dict:
    rec = {"task_id": tid, "arm": "base", "model": "m", "website": "https://www.shop.test/", "level": "easy",
           "status": status, "error": None, "error_kind": None, "steps": 3, "actions": 2, "screenshots": 3,
           "answer": "", "agent_done": status == "done", "duration_s": 10.0, "started_at": 0,
           "finished_at": 1.0, "attempt": 1, "slot": 0}
    rec.update(kw)
    return rec


def make_run(out: Path, records: list[dict], *, arm: str = "base", model: str = "m",
             tasks: list[dict] | None = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for r in records:
        if not (out / r["task_id"]).exists():
            task_folder(out, r["task_id"], actions=r.get("actions", 2))
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest: dict = {"config": {"arm": arm, "model": model, "bench": "om2w"}}
    if tasks is not None:
        tf = out.parent / f"{out.name}-tasks.json"
        tf.write_text(json.dumps(tasks))
        manifest["task_file"] = {"path": str(tf), "sha256": "x"}
    (out / "run.json").write_text(json.dumps(manifest))
    return out


def judge_file(out: Path, labels: dict[str, int], name: str = "webjudge_o4-mini_score_threshold_3") -> Path:
    path = out / f"{name}_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": v, "mode": "webjudge",
                                        "judge_model": "o4-mini"}) + "\n" for t, v in labels.items()))
    return path


# ── a run lock ────────────────────────────────────────────────────────────────────────────────────────────────
@contextlib.contextmanager
def held_lock(out: Path, socket_name: str) -> Iterator[None]:
    """`<out>/.om2w-run.lock` held as a run holds it (flock, exclusive), naming this process and its socket."""
    fd = os.open(out / ".om2w-run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "socket": socket_name}).encode())
        yield
    finally:
        os.close(fd)


# ── a run for the web report ──────────────────────────────────────────────────────────────────────────────────
def web_png(shade: int, size: tuple[int, int] = (800, 600)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (shade, 90, 255 - shade)).save(buf, "PNG")
    return buf.getvalue()


def web_run(out: Path, schema: str = "v2") -> Path:
    """A run for the web report (test_web_site.py, e2e/test_web_report.py). Two tasks: one solved, one that looped
    on the same page; a judge file scoring each screenshot."""
    same = ["<button id=\"more\"> More -> CLICK"]
    for tid, steps, answer, correct in (("ok_1", [(["<a> Shop -> CLICK"], "open")], "$12", True),
                                        ("loop_2", [(same, "more")] * 3, "", False)):
        w = TrajectoryWriter(out / tid, tid, f"task {tid}", schema=schema)
        for i, (acts, thought) in enumerate(steps):
            w.add_plain_step(acts, thought, png=web_png(10 * i + len(tid)), url="http://127.0.0.1:9/shop")
        w.finish(answer, web_png(250))
        rec = EpisodeRecord(task_id=tid, status="done", website="http://127.0.0.1:9/", level="easy", model="m1",
                            steps=len(steps), answer=answer, agent_done=bool(answer), prompt_tokens=1000,
                            completion_tokens=100, correct=correct)
        with (out / "results.jsonl").open("a") as f:
            f.write(json.dumps(rec.to_json()) + "\n")
    (out / "run.json").write_text(json.dumps({"config": {"max_steps": 10, "model": "m1", "arm": "base"}}))
    judge = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_j1_score_threshold_3_auto_eval_results.json"
    lines = [{"task_id": "ok_1", "predicted_label": 1, "judge_model": "j1", "mode": "WebJudge_Online_Mind2Web_eval",
              "key_points": "1. the price", "response": "Status: success",
              "image_judge_screenshots": ["0_full_screenshot.png"],
              "image_judge_record": [{"Response": "Reasoning: shows $12", "Score": 5}],
              "usage": {"calls": 3, "prompt_tokens": 2000, "completion_tokens": 50}},
             {"task_id": "loop_2", "predicted_label": 0, "judge_model": "j1", "usage": {"calls": 2,
                                                                                     "prompt_tokens": 1000,
                                                                                     "completion_tokens": 20}}]
    judge.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


# ── a campaign's folder (tests of report and tasks health on one) ──
# per lane, each task's verdict (`correct`) and start: base solves t0 always and t1 once; agent t0, t1 always and
# t2, t3 once each
PLAN = {("base", 1): {"t0": (True, 100), "t1": (True, 1000), "t2": (False, 2000), "t3": (False, 3000)},
        ("agent", 1): {"t0": (True, 130), "t1": (True, 1010), "t2": (True, 2000), "t3": (False, 3000)},
        ("base", 2): {"t0": (True, 250), "t1": (False, 1020), "t2": (False, 2500), "t3": (False, 3000)},
        ("agent", 2): {"t0": (True, 300), "t1": (True, 1030), "t2": (False, 2100), "t3": (True, 3000)}}


def write_plan(out: Path, lanes: list[tuple[str, int]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / PLAN_FILE).write_text(json.dumps({"format": 1, "lanes": [
        {"name": lane_name(arm, k), "arm": arm, "repeat": k} for arm, k in lanes]}))


def make_campaign(out: Path, plan: dict[tuple[str, int], dict[str, tuple[bool, float]]] = PLAN) -> Path:
    """A campaign's folder as the engine leaves it: campaign.json (lanes interleaved as the plan runs them) and one
    run folder per lane, each record with its start."""
    write_plan(out, list(plan))
    for (arm, k), tasks in plan.items():
        make_run(out / lane_name(arm, k), [record(t, correct=ok, started_at=start, finished_at=start + 60)
                                           for t, (ok, start) in tasks.items()], arm="base", model=f"m-{arm}")
    return out
