"""`om2w-tui attach`: the console in this process on a real headless run in another (the offline sites, the slow
oracle, workers, Chromium), through the run's control socket. The dashboard shows the run's slots; its controls
act on the run for real (checked with `ctl`); `q` detaches and the run goes on; a second console stops it with the
palette's "Stop the run", sees it finish, and `q` quits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from om2w_tui.engine.control_socket import SOCKET_NAME
from om2w_tui.frontends.console.app import ConsoleApp, make_app
from om2w_tui.frontends.console.widgets.panels import SlotsTable
from om2w_tui.frontends.remote import RemoteRun
from tests.e2e.control import wait_listening
from tests.e2e.helpers import REPO, chromium_left, cli, popen, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
WAIT_S = 120.0


async def until(pilot: Any, what: str, cond: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.1)
    return value


async def app_exits(app: ConsoleApp, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while app.is_running:
        assert time.monotonic() < deadline, "the app did not exit"
        await asyncio.sleep(0.1)


async def ctl_status(out) -> dict:
    r = await asyncio.to_thread(cli, "ctl", str(out), "status", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def attached(out) -> ConsoleApp:
    return make_app(None, attach=RemoteRun(out), image_renderer="unicode", last_launch=None, cursor_blink=False)


def running_row(app: ConsoleApp) -> tuple[str, str] | None:
    """(task, state) of the dashboard's first slot while it shows an episode."""
    table = app.screen.query_one(SlotsTable)
    if not table.row_count:
        return None
    row = [str(c) for c in table.get_row_at(0)]
    task = next((c for c in row if c.startswith("offline_")), None)
    return (task, row[-1]) if task else None


async def test_attach_shows_and_steers_a_headless_run_q_detaches_and_a_second_console_stops_it(tmp_path):
    out = tmp_path / "run"
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-2", "--task-ids",
              "offline_wiki_admin_10,offline_shop_cart_05", "--workers", "1", "--pace-cooldown", "0",
              "--out", str(out))
    try:
        await asyncio.to_thread(wait_listening, out, p)
        app = attached(out)
        async with app.run_test(size=(120, 40)) as pilot:
            task, state = await until(pilot, "the run's episode on the dashboard", lambda: running_row(app))
            assert state in ("starting", "running") and app.dashboard.state.total == 2
            await pilot.press("p")
            await until(pilot, "the dashboard saying paused", lambda: app.dashboard.state.paused)
            assert (await ctl_status(out))["paused"]            # paused for real, in the run
            await pilot.press("q")                               # detaches: no question, the run goes on
            await app_exits(app)
        assert app.return_code == 0 and p.poll() is None
        status = await ctl_status(out)
        assert status["paused"] and [r["task_id"] for r in status["running"]] == [task]

        second = attached(out)
        async with second.run_test(size=(120, 40)) as pilot:
            await until(pilot, "the paused run", lambda: second.control is not None and second.dashboard.state.paused)
            await pilot.press("p")                               # resume, from this console
            await until(pilot, "the run resumed", lambda: not second.dashboard.state.paused)
            await pilot.press("ctrl+p")
            await pilot.press(*"Stop the run")
            await pilot.press("enter")
            await until(pilot, "the run's end on the dashboard", lambda: second.dashboard.state.phase == "finished")
            await pilot.press("q")
            await app_exits(second)
        assert p.wait(timeout=60) == 0, p.stderr.read()[-3000:]
    finally:
        if p.poll() is None:
            p.kill()
    assert [(r["task_id"], r["status"], r["error"]) for r in records(out)] == [(task, "killed", "interrupted")]
    assert not (out / SOCKET_NAME).exists() and chromium_left(out) == []



def run_snapshotting_hourly(*args: str) -> subprocess.Popen[str]:
    """`om2w-tui ARGS` whose control socket sends a snapshot at subscribe and at its end only (its 1 s tick an
    hour): what an attached console ends on is then the run's last word, never a tick that happened to follow the
    run's last episode."""
    code = ("import sys; from om2w_tui.engine import control_socket; control_socket.SNAPSHOT_EVERY_S = 3600.0; "
            "from om2w_tui.cli.main import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


async def test_an_attached_console_ends_showing_what_the_run_recorded(tmp_path):
    """The run's last episodes and model calls reach an attached console before the run closes its socket: the
    console's final counts (header, Sites, model line) are the run's records'."""
    out = tmp_path / "run"
    p = run_snapshotting_hourly("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-1", "--workers", "2",
                                "--limit", "3", "--pace-cooldown", "0", "--out", str(out))
    try:
        await asyncio.to_thread(wait_listening, out, p)
        app = attached(out)
        async with app.run_test(size=(160, 45)) as pilot:
            await until(pilot, "the run's end, its socket closed",
                        lambda: app.dashboard.state.phase == "finished" and app.control is None)
            await pilot.pause(0.5)   # the dashboard's timers (a snapshot asked for, a redraw) come and go
            state = app.dashboard.state
            seen = (state.done, sum(v.done for v in state.sites.values()), state.model.calls if state.model else 0)
            await pilot.press("q")
            await app_exits(app)
        assert p.wait(timeout=60) == 0, p.stderr.read()[-3000:]
    finally:
        if p.poll() is None:
            p.kill()
    rs = records(out)
    calls = sum(r["model_calls"]["calls"] for r in rs)
    assert len(rs) == 3 and calls > 0
    assert seen == (3, 3, calls)
