"""Faults caused for real: Chromium killed, the model server stopped, a site that hangs or blocks, the console
killed. Each must be survived, recorded, and (where it is the harness's fault) retried; nothing lost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from om2w_tui.executors.local import run_tag
from tests.fakes import Reply, Request, StubServer

from .helpers import (
    REPO,
    assert_settled_once,
    check_task_folder,
    chromium_left,
    cli,
    free_port,
    popen,
    records,
    steps_on_disk,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
MULTI_STEP = "offline_shop_cart_05"        # seven steps with the oracle


def first_step_on_disk(out: Path, task: str) -> bool:
    return steps_on_disk(out / task) >= 1


def test_chromium_killed_mid_episode_is_an_infra_error_retried_with_its_steps_kept(tmp_path):
    out = tmp_path / "crash"
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-1", "--task-ids", MULTI_STEP,
              "--pace-cooldown", "0", "--out", str(out))
    wait_for(lambda: first_step_on_disk(out, MULTI_STEP), 120, p, "the first step")
    victims = chromium_left(out)
    assert victims
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr[-3000:]
    first, second = records(out)
    assert (first["status"], first["error_kind"], first["attempt"]) == ("error", "infra", 1)
    assert first["screenshots"] >= 1
    assert (second["status"], second["attempt"], second["correct"]) == ("done", 2, True)
    kept = check_task_folder(out / MULTI_STEP / "attempts" / "1", MULTI_STEP)
    assert kept["action_history"]
    check_task_folder(out / MULTI_STEP)
    assert chromium_left(out) == []


def test_a_model_server_that_goes_down_costs_no_task_its_result(tmp_path):
    """The oracle runs as its own process; it is killed mid-run and started again later on the same port.
    The breaker pauses dispatch, probes, and resumes: every task ends done and correct."""
    port = free_port()
    oracle_cmd = [sys.executable, "-m", "om2w_tui", "oracle", "--port", str(port)]

    def start_oracle() -> subprocess.Popen:
        proc = subprocess.Popen(oracle_cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 60, proc, "the oracle")
        return proc

    oracle = start_oracle()
    out = tmp_path / "down"
    ids = ["offline_wiki_port_06", "offline_booking_rates_11", "offline_longpage_automated_14",
           "offline_shop_search_01"]
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--vllm", f"http://127.0.0.1:{port}/v1",
              "--task-ids", ",".join(ids), "--workers", "1", "--pace-cooldown", "0", "--breaker-after", "2",
              "--probe-interval", "2", "--out", str(out))
    try:
        wait_for(lambda: len(records(out)) >= 1, 180, p, "the first record")
        oracle.kill()
        oracle.wait()
        wait_for(lambda: sum(r["status"] == "error" for r in records(out)) >= 2, 240, p, "two infra errors")
        time.sleep(4)   # the breaker is open and probing a server that is still down
        assert p.poll() is None
        oracle = start_oracle()
        stdout, stderr = p.communicate(timeout=300)
    finally:
        oracle.kill()
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, stderr[-3000:]
    assert "circuit breaker" in stdout and "answers again" in stdout
    latest = {r["task_id"]: r for r in records(out)}
    assert sorted(latest) == sorted(ids)
    assert all(r["status"] == "done" and r["correct"] for r in latest.values()), latest
    assert_settled_once(records(out), ids)     # every record: no task settled twice or run after it was
    errors = [r for r in records(out) if r["status"] == "error"]
    # the endpoint's fault, typed: named by the kind of call that failed (the server refused the connection)
    assert errors and all((r["error_kind"], r["model_fault"]) == ("endpoint", "unreachable")
                          and r["error"].startswith("model endpoint: endpoint unreachable: ") for r in errors), errors


def hang(req: Request) -> None:
    """A page that never answers (until the server stops)."""
    req.stopping.wait(300)


def _blocker() -> StubServer:
    """Pages that a bot wall would show, and one that never answers."""
    def page(status: int, html: str) -> Reply:
        return Reply(status, html, length=False)
    return StubServer({
        "/cloudflare": page(200, "<html><head><title>Just a moment...</title></head><body>"
                                 "<div id='cf-challenge-running'>Checking your browser</div></body></html>"),
        "/forbidden": page(403, "<html><body><h1>Forbidden</h1></body></html>"),
        "/captcha": page(200, "<html><body><form><iframe src='https://www.google.com/recaptcha/api2/anchor?k=x'>"
                              "</iframe></form></body></html>"),
        "/hang": hang,
    }, default=page(404, "no"))


@pytest.fixture
def blocker():
    with _blocker() as server:
        yield server.url


@pytest.fixture
def blockers():
    """Three blocker servers: three sites (a port is a site here), so that no widened cooldown is waited out."""
    with _blocker() as a, _blocker() as b, _blocker() as c:
        yield [a.url, b.url, c.url]


def test_bot_walls_are_recorded_as_blocked_and_a_site_refusing_connections_as_the_site_down(tmp_path, blockers):
    # One wall per site: a block widens its site's cooldown to at least a minute (pacing.WIDEN_FLOOR_S, its
    # timing checked in virtual time in tests/unit), which three walls on one site would wait out in real time.
    walls = ("cloudflare", "forbidden", "captcha")
    down = f"http://127.0.0.1:{free_port()}/"   # nothing listens there: the first page load is refused
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([
        {"task_id": f"wall_{name}", "confirmed_task": f"Find the price on the {name} page",
         "website": f"{url}/{name}", "level": "easy"} for name, url in zip(walls, blockers)]
        + [{"task_id": "down", "confirmed_task": "Find the price of the kettle", "website": down, "level": "easy"}]))
    out = tmp_path / "walls"
    r = cli("run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--workers", "2", "--pace-cooldown", "0",
            "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    got = {x["task_id"]: (x["status"], x["error"]) for x in records(out) if x["task_id"] != "down"}
    assert got == {"wall_cloudflare": ("blocked", "Cloudflare challenge"),
                   "wall_forbidden": ("blocked", "HTTP 403 on the main document"),
                   "wall_captcha": ("blocked", "reCAPTCHA")}
    # the site's own network error, in the worker's words; retried once as a moment's outage (--retries 1)
    refused = [(x["status"], x["error"], x["error_kind"]) for x in records(out) if x["task_id"] == "down"]
    assert refused == [("error", f"the site did not answer at {down}: net::ERR_CONNECTION_REFUSED", "infra")] * 2
    health = cli("tasks", "health", str(out), "--format", "json")
    assert health.returncode == 0, health.stderr[-2000:]
    seen = json.loads(health.stdout)
    assert {t["task_id"]: t["endings"] for t in seen["tasks"]}["down"] == {"site_down": 2}
    assert [c["task_id"] for c in seen["candidates"]] == ["down", "wall_captcha", "wall_cloudflare", "wall_forbidden"]
    for name, url in zip(walls, blockers):          # each site's pacing widened, from 0 to the floor
        error = got[f"wall_{name}"][1]
        assert f"{url.removeprefix('http://')}: {error}; its cooldown is now 60 s" in r.stdout, r.stdout[-3000:]
    for tid in got:
        check_task_folder(out / tid)


def test_a_page_answered_with_503_is_a_site_error_read_off_its_http_status(tmp_path):
    """The evidence is the page itself: the worker records the main document's HTTP status of the page the episode
    ended on, and `tasks health` reads it, though neither the page's title nor the agent's thought says 503."""
    quiet = "<html><head><title>Back soon</title></head><body><p>We are tuning the shop.</p></body></html>"
    with StubServer(default=Reply(503, quiet)) as site:
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps([{"task_id": "unavailable", "confirmed_task": "Find the price of the lamp",
                                      "website": f"{site.url}/", "level": "easy"}]))
        out = tmp_path / "503"
        r = cli("run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--pace-cooldown", "0",
                "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["status"] == "done" and not rec["error"]          # the agent answered: nothing in the record says 503
    result = check_task_folder(out / "unavailable")
    assert result["last_page"] == {"url": f"{site.url}/", "title": "Back soon", "status": 503}
    assert "503" not in json.dumps(result["thoughts"])
    health = cli("tasks", "health", str(out), "--format", "json")
    assert health.returncode == 0, health.stderr[-2000:]
    seen = json.loads(health.stdout)
    (attempt,) = seen["tasks"][0]["attempts"]
    assert (attempt["ending"], attempt["why"]) == ("site_error", f"the last page answered HTTP 503 ({site.url}/)")
    assert [c["task_id"] for c in seen["candidates"]] == ["unavailable"]


def test_a_site_that_hangs_is_ended_by_the_timeout(tmp_path, blocker):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"task_id": "hangs", "confirmed_task": "Read the page",
                                  "website": f"{blocker}/hang", "level": "easy"}]))
    out = tmp_path / "hang"
    t0 = time.monotonic()
    r = cli("run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--timeout", "8", "--retries", "0",
            "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["status"] == "timeout" and rec["duration_s"] < 40
    assert time.monotonic() - t0 < 90
    check_task_folder(out / "hangs")
    assert chromium_left(out) == []


def test_the_console_killed_outright_loses_nothing_and_leaves_no_chromium(tmp_path, request):
    out = tmp_path / "sigkill"
    ids = [MULTI_STEP, "offline_wiki_changelog_09"]
    # the run's temp folders (the zygote's, each worker's) alone in a folder of their own, whose path is too long for
    # Chromium's socket under the folders nested in it: each episode's Chromium gets its temp folder in /tmp
    temp = Path(tempfile.mkdtemp(prefix="t-"))
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-1", "--task-ids", ",".join(ids),
              "--workers", "2", "--pace-cooldown", "0", "--out", str(out), env={"TMPDIR": str(temp)})
    wait_for(lambda: all(first_step_on_disk(out, t) for t in ids), 180, p, "a step of each episode")
    workers = [c for c in psutil.Process(p.pid).children(recursive=True)]   # the zygote and the workers it forked
    assert len(workers) >= 3 and list(temp.iterdir())
    p.kill()                                           # SIGKILL: no handler runs in the console
    p.wait()
    psutil.wait_procs(workers, timeout=20)
    wait_for(lambda: chromium_left(out) == [], 20, None, "the orphaned Chromium to be ended")
    assert list(temp.iterdir()) == []                  # the orphans removed their own temp folders as they ended
    assert not list(Path("/tmp").glob(f"om2w-episode-{run_tag(out)}-*"))   # and their Chromiums' in /tmp
    assert records(out) == []                          # nothing finished, nothing half-written
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", ",".join(ids),
            "--workers", "2", "--pace-cooldown", "0", "--out", str(out), "--resume-changed")   # the oracle at speed
    assert r.returncode == 0, r.stderr[-3000:]
    recs = records(out)
    assert sorted(x["task_id"] for x in recs) == sorted(ids) and all(x["correct"] for x in recs)
    # the killed attempt took its number: the resumed run's is the second, and each number finds its own files
    assert [x["attempt"] for x in recs] == [2, 2]
    for t in ids:
        check_task_folder(out / t)
        assert check_task_folder(out / t / "attempts" / "1", t)["action_history"]   # the killed attempt, kept aside
    health = cli("tasks", "health", str(out), "--format", "json")
    assert health.returncode == 0, health.stderr[-2000:]
    for task in json.loads(health.stdout)["tasks"]:
        assert [(a["attempt"], a["ending"]) for a in task["attempts"]] == [(1, "stopped"), (2, "success")]


@pytest.fixture
def small_disk(tmp_path):
    """A real, tiny file system (tmpfs) that fills up; the test grows it later to free space."""
    mount = tmp_path / "disk"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(mount)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()}); needs root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_stops_dispatch_loses_nothing_and_resumes_when_space_is_freed(small_disk):
    from om2w_tui.benchmarks.conformance import check_run

    out = small_disk / "run"
    ids = ["offline_shop_cart_05", "offline_wiki_admin_10", "offline_booking_rates_11", "offline_longpage_footer_15"]
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", ",".join(ids),
              "--workers", "1", "--pace-cooldown", "0", "--probe-interval", "1", "--out", str(out))
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("free space or fix the folder" in x for x in lines), 240, p, "the disk-full message")
        assert p.poll() is None                                       # waiting, not failing
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
        p.wait(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    reader.join(timeout=10)
    assert p.returncode == 0, p.stderr.read()[-3000:]
    assert any("can be written again" in x for x in lines)
    every = records(out)                                             # every line parses: none half-written
    latest = {r["task_id"]: r for r in every}
    assert sorted(latest) == sorted(ids) and all(r["status"] == "done" and r["correct"] for r in latest.values())
    assert check_run(out) == []
    assert not list(out.glob(".om2w-space-probe"))
