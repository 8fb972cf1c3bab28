"""Driving the console in tests (shared by the test modules of tests/ui and tests/e2e): the dashboard on the
recorded run (recorded.py) with the fake run, the report screen and the label screen on a finished run's folder built
by hand, the launch form with a stand-in preflight, and the console on a real run with a Recorder on its events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from textual.widgets import Static
from textual.worker import WorkerCancelled

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import Preflight, preflight
from om2w_tui.evaluation.label_session import LabelSession
from om2w_tui.frontends.console.app import ConsoleApp, make_app
from om2w_tui.frontends.console.label_app import LabelApp
from om2w_tui.frontends.console.launch_values import DEFAULTS
from om2w_tui.frontends.console.screens.label import LabelScreen
from om2w_tui.frontends.console.screens.launch_form import LaunchScreen
from om2w_tui.frontends.console.screens.report import ReportScreen
from tests.fakes import Recorder

from . import recorded as R


# ── the dashboard on the recorded run ─────────────────────────────────────────────────────────────────────────
def build(tmp_path: Path, **kw) -> tuple[ConsoleApp, R.FrozenClock, R.StubRun]:
    out = tmp_path / "demo"
    out.mkdir(exist_ok=True)
    (out / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in R.earlier_records()))
    clock = R.FrozenClock(R.T0 - 40)
    app = make_app(R.preflight_for(out), clock=clock, start_engine=False, last_launch=None,
                   image_renderer="unicode", **kw)
    stub = R.StubRun()
    app.control = stub
    return app, clock, stub


async def feed(pilot, app: ConsoleApp, clock: R.FrozenClock) -> None:
    """The recorded run through the engine's own sink: RunStarted 40 s before T0, the rest at T0."""
    await pilot.pause()
    evs = R.events()
    app.sink.handle(evs[0])
    await pilot.pause()
    clock.t = R.T0
    for ev in evs[1:]:
        app.sink.handle(ev)
    app.sink.snapshot(R.snapshot(), clock())
    await pilot.pause()
    # events redraw at most every 0.2 s, every 1 s while the machine is busy (RedrawPace, on the real clock): draw
    # now what that redraw would, so that a loaded machine running the tests does not decide what they read
    app.screen.render_all()
    await pilot.pause()


def shown_keys(app: ConsoleApp) -> dict[str, str]:
    return {b.binding.action: b.binding.description for b in app.screen.active_bindings.values()
            if b.enabled and b.binding.show}


def cells(table, key: str) -> list[str]:
    return [str(c) for c in table.get_row(key)]


async def settle_episode(pilot) -> None:
    """Let the episode view's file and image reads (threads) land."""
    for _ in range(4):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


# ── the report screen on a finished run ───────────────────────────────────────────────────────────────────────
# (task id, site, level, status, correct, steps, duration, error, error kind, answer)
RUN = [
    ("amazon_kettle_price_01", "https://www.amazon.com/", "easy", "done", True, 4, 31.0, None, None,
     "The Copper Pour-Over Kettle costs $42.50."),
    ("amazon_cart_two_items_02", "https://www.amazon.com/", "medium", "done", False, 9, 74.5, None, None,
     "I added the kettle to the cart."),
    ("amazon_return_policy_03", "https://www.amazon.com/", "hard", "timeout", False, 30, 1800.0, "timeout", None,
     ""),
    ("wikipedia_wal_mode_04", "https://en.wikipedia.org/", "easy", "done", True, 3, 22.0, None, None,
     "WAL stands for write-ahead logging."),
    ("wikipedia_port_default_05", "https://en.wikipedia.org/", "medium", "done", True, 5, 40.0, None, None,
     "The default port is 5432."),
    ("booking_cheapest_room_06", "https://www.booking.com/", "medium", "error", False, 2, 12.0,
     "model endpoint http://127.0.0.1:41234/v1 failed: HTTP 500", "infra", ""),
    ("booking_cancel_07", "https://www.booking.com/", "hard", "error", False, 1, 8.0,
     "model endpoint http://127.0.0.1:39999/v1 failed: HTTP 502", "infra", ""),
    ("kayak_flight_08", "https://www.kayak.com/", "hard", "blocked", False, 1, 6.0, "Cloudflare challenge",
     "site", ""),
]


def rec(row: tuple[Any, ...], finished: float, attempt: int = 1) -> dict[str, Any]:
    tid, site, level, status, correct, steps, duration, error, kind, answer = row
    return {"task_id": tid, "arm": "base", "website": site, "level": level, "model": "qwen3-vl-8b",
            "status": status, "error": error, "error_kind": kind, "steps": steps, "actions": steps,
            "screenshots": steps + 1, "answer": answer, "agent_done": status == "done", "duration_s": duration,
            "started_at": finished - duration, "finished_at": finished, "attempt": attempt, "slot": 0,
            "prompt_tokens": 1200 * steps, "completion_tokens": 90 * steps, "correct": correct}


def write_task(out: Path, row: tuple[Any, ...], shots: int = 2) -> None:
    tid, answer = row[0], row[9]
    folder = out / tid
    (folder / "trajectory").mkdir(parents=True, exist_ok=True)
    actions = [f"<a id=\"link-{i}\"> Step {i} -> CLICK" for i in range(shots - 1)]
    (folder / "result.json").write_text(json.dumps({
        "task_id": tid, "task": f"Do the task {tid}.", "final_result_response": answer,
        "action_history": actions, "thoughts": [f"thought {i}" for i in range(len(actions))]}))
    for i in range(shots):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(
            R.png(32, 18, (250, 250, 245), (30, 90 + 20 * i, 160)))


def finished_run(tmp_path: Path) -> Path:
    """A finished run of eight tasks on four sites, one retried after an infra error."""
    out = tmp_path / "om2w-qwen3"
    out.mkdir()
    records = [rec(RUN[6], R.T0 - 900)]       # booking_cancel_07's first attempt, retried
    for n, row in enumerate(RUN):
        write_task(out, row)
        records.append(rec(row, R.T0 - 800 + 60 * n, attempt=2 if row[0] == "booking_cancel_07" else 1))
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (out / "run.json").write_text(json.dumps({"config": {"arm": "base", "model": "qwen3-vl-8b", "bench": "om2w"}}))
    return out


def report_app(out: Path) -> ConsoleApp:
    return make_app(None, report=out, clock=R.FrozenClock(), last_launch=None, image_renderer="unicode",
                    start_engine=False, cursor_blink=False)


async def settle_report(pilot) -> None:
    """Let the report's computation and the episode view's reads (threads) land."""
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        report = pilot.app.screen
        if not isinstance(report, ReportScreen) or (report.data is not None or report.problem):
            break
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def row_keys(table) -> list[str]:
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(table.row_count)]


# ── the label screen ──────────────────────────────────────────────────────────────────────────────────────────
def labeller(out: Path, annotator: str = "alice", **kw: Any) -> LabelApp:
    show = kw.pop("show_judge", False)
    return LabelApp(LabelSession(out, annotator, **kw), show_judge=show, renderer="unicode")


async def settle_label(pilot) -> None:
    """Let the folder reads and the screenshot loads (threads) land. A load a later one replaced is cancelled (the
    latest wins, `exclusive`): waiting on it says so, and the wait goes on for the one that replaced it."""
    for _ in range(5):
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def screen_of(app: LabelApp) -> LabelScreen:
    screen = app.screen
    assert isinstance(screen, LabelScreen)
    return screen


def text(screen: LabelScreen, part: str) -> str:
    return str(screen.query_one(part).render())


# ── the launch form ───────────────────────────────────────────────────────────────────────────────────────────
def remembered(tmp_path: Path, **values: str) -> Path:
    path = tmp_path / "cfg" / "om2w-tui" / "last_launch.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**DEFAULTS, **values}))
    return path


class FakePreflight:
    """Stands for launch.run_checks: records the configs it is given; finds what it is told to."""

    def __init__(self, settled: int = 0, total: int = 3, problems: tuple[tuple[str, str], ...] = ()):
        self.settled, self.total, self.problems = settled, total, problems
        self.seen: list[RunConfig] = []

    def __call__(self, cfg: RunConfig) -> tuple[Preflight | None, list[tuple[str, bool, str]]]:
        self.seen.append(cfg)
        checks = [("settings", True, f"arm base, {cfg.workers} workers"),
                  ("tasks", True, f"tasks.json: {self.total} tasks, {self.total} selected"),
                  ("out folder", True, str(cfg.out))]
        checks += [(what, False, detail) for what, detail in self.problems]
        if self.settled:
            checks.append(("resume", True, f"{self.settled} of {self.total} already done in {cfg.out}"))
        if self.problems:
            return None, checks
        tasks = [Task(f"t{i}", "do it", "http://example.com/") for i in range(self.total)]
        return Preflight(cfg, tasks, Path("tasks.json"), self.settled, checks), checks


async def checked(pilot) -> str:
    for _ in range(4):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    screen = pilot.app.screen
    return str(screen.query_one("#preflight-report", Static).render()) if isinstance(screen, LaunchScreen) else ""


# ── the console on a real run ─────────────────────────────────────────────────────────────────────────────────
WAIT_S = 150.0
MARKER = "om2w-episode-"


def console(tmp_path: Path, task_ids: list[str], *, model: str = "oracle-slow-1", workers: int = 1,
            **cfg: Any) -> tuple[ConsoleApp, Recorder, Path]:
    out = tmp_path / "run"
    pre = preflight(RunConfig(out=out, bench="offline", model=model, task_ids=task_ids, workers=workers,
                              pace_cooldown=0, **cfg))
    rec = Recorder()
    app = make_app(pre, image_renderer="unicode", last_launch=None, sinks=[rec])
    return app, rec, out


async def until(pilot: Any, what: str, cond: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)
    return value


async def stays(pilot: Any, what: str, cond: Callable[[], Any], seconds: float) -> None:
    """`cond` holds for the whole window (for what must NOT happen, a window is all there is)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert cond(), what
        await pilot.pause(0.1)


async def app_exits(app: ConsoleApp, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while app.is_running:
        assert time.monotonic() < deadline, "the app did not exit"
        await asyncio.sleep(0.1)


def records(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def task_folders(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if p.is_dir()} if out.exists() else set()


def our_chromium() -> dict[int, tuple[float, str]]:
    """Chromium processes of this test's episodes (other runs may share the machine): pid -> (create time, the
    episode's profile folder)."""
    found = {}
    for p in psutil.Process(os.getpid()).children(recursive=True):
        try:
            marked = [part for part in p.cmdline() if MARKER in part]
            if marked:
                found[p.pid] = (p.create_time(), marked[0][marked[0].index(MARKER):].split("/")[0])
        except psutil.Error:
            continue
    return found


def still_alive(procs: dict[int, tuple[float, str]]) -> list[int]:
    alive = []
    for pid, (created, _) in procs.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            continue
    return alive
