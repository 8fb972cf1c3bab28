"""The whole product, headless, for real: worker processes, Chromium, the offline sites and the oracle."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from om2w_tui.offline import TASKS_TEMPLATE

from .helpers import REPO, assert_settled_once, check_task_folder, chromium_left, cli, popen, records, steps_on_disk

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
OFFLINE_IDS = [t["task_id"] for t in json.loads(TASKS_TEMPLATE.read_text())]


def by_site(site: str) -> list[str]:
    return [t["task_id"] for t in json.loads(TASKS_TEMPLATE.read_text()) if t["website"].startswith("{" + site)]


def test_the_offline_suite_runs_all_correct_and_a_second_run_adds_nothing(tmp_path):
    out = tmp_path / "demo"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--workers", "2", "--pace-cooldown", "0",
            "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    every = records(out)
    recs = list({x["task_id"]: x for x in every}.values())     # the latest attempt of each task
    assert sorted(x["task_id"] for x in recs) == sorted(OFFLINE_IDS)
    retried = [x for x in every if x not in recs]                # only the harness's faults are tried again
    assert all(x["status"] == "error" and x["error_kind"] in ("infra", "endpoint") for x in retried), retried
    wrong = [(x["task_id"], x["status"], x["error"], x["answer"]) for x in recs if not x["correct"]]
    assert not wrong
    for x in recs:
        assert x["status"] == "done" and x["agent_done"] and x["model"] == "oracle" and x["arm"] == "base"
        res = check_task_folder(out / x["task_id"])
        assert len(res["action_history"]) == x["actions"] >= 1
        assert x["screenshots"] == len(list((out / x["task_id"] / "trajectory").iterdir())) >= 2
        assert (out / x["task_id"] / "history_0.json").exists()
    assert f"correct: {len(OFFLINE_IDS)} of {len(OFFLINE_IDS)}" in r.stdout
    assert {p.name for p in out.iterdir() if p.is_dir()} == set(OFFLINE_IDS)   # nothing else the evaluator would read
    manifest = json.loads((out / "run.json").read_text())
    assert len(manifest["task_file"]["sha256"]) == 64 and manifest["versions"]["browser-use"].startswith("0.13")
    assert chromium_left(out) == []

    again = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--workers", "2", "--out", str(out))
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(records(out)) == len(every)
    assert f"resuming: {len(OFFLINE_IDS)} of {len(OFFLINE_IDS)} already done" in again.stdout


def test_a_timeout_keeps_the_partial_trajectory(tmp_path):
    """The timeout runs from when the worker has the task, its Chromium's start included: 45 s leaves a loaded CI
    machine (which once took 25 s to start the browser and ask the first step) time for a step or more."""
    out = tmp_path / "slow"
    task = by_site("longpage")[0]
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle-nodone", "--task-ids", task,
            "--timeout", "45", "--max-steps", "200", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["status"] == "timeout" and rec["error"] == "timeout"
    assert rec["actions"] >= 1 and rec["screenshots"] >= 1 and 44 <= rec["duration_s"] < 90
    res = check_task_folder(out / task)
    assert len(res["action_history"]) == rec["actions"] == len(res["action_steps"])
    # no answer: what the last action returned is no answer of the agent's (it stays in the histories)
    assert rec["answer"] == "" == res["final_result_response"] and res["cut_short"] == "timeout"
    assert chromium_left(out) == []


def test_out_of_steps_is_its_own_status_with_no_answer_and_each_scroll_beside_its_screenshot(tmp_path):
    """An agent that never says done, not even on the last step where only `done` is allowed (oracle-nodone-unguided:
    a server without guided decoding) runs out of its 3 steps: `out_of_steps`, settled (a second run adds nothing),
    no answer; the report counts it; each of its steps is beside its own screenshot. oracle-nodone answers within
    the schema there: a failed `done`, and no reply it cannot parse."""
    out = tmp_path / "loop"
    task = "offline_booking_rates_11"
    args = ("run", "--no-ui", "--bench", "offline", "--model", "oracle-nodone-unguided", "--task-ids", task,
            "--max-steps", "3", "--pace-cooldown", "0", "--out", str(out))
    r = cli(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert (rec["status"], rec["error"], rec["error_kind"], rec["agent_done"]) == ("out_of_steps", None, None, False)
    assert rec["model_calls"]["failures"] == {"unparseable": 1}    # its last reply, outside the schema
    # its 3 steps, never browser-use's end-of-budget marker after them as a 4th
    assert rec["answer"] == "" and rec["steps"] == 3 == rec["max_steps"] and "(out_of_steps 1)" in r.stdout
    res = check_task_folder(out / task)
    assert res["final_result_response"] == "" and res["cut_short"] == "out_of_steps"
    steps = res["action_steps"]
    assert len(steps) == len(res["action_history"]) >= 2 and steps == sorted(set(steps))   # one action a step
    again = cli(*args)
    assert again.returncode == 0 and len(records(out)) == 1, again.stderr[-2000:]
    report = cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr[-2000:]
    assert json.loads(report.stdout)["runs"][0]["status"]["out_of_steps"] == 1
    guided = tmp_path / "guided"
    r = cli(*args[:5], "oracle-nodone", *args[6:-1], str(guided))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(guided)
    assert (rec["status"], rec["agent_done"], rec["steps"]) == ("done", True, 3)
    assert "only `done` is allowed at step 3" in rec["answer"] and not rec["model_calls"].get("failures")


def test_one_site_never_runs_two_episodes_at_once_and_keeps_its_cooldown(tmp_path):
    out = tmp_path / "paced"
    ids = by_site("wiki")[:2] + by_site("shop")[:1]
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", ",".join(ids),
            "--workers", "3", "--pace-cooldown", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    wiki = sorted((x for x in records(out) if x["task_id"] in ids[:2]), key=lambda x: x["started_at"])
    assert len(wiki) == 2
    assert wiki[1]["started_at"] >= wiki[0]["finished_at"] + 4 - 0.05


def test_ctrl_c_stops_gracefully_keeps_steps_and_the_next_run_finishes(tmp_path):
    out = tmp_path / "interrupted"
    task = by_site("longpage")[0]
    p = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-1", "--task-ids", task,
              "--out", str(out))
    deadline = time.monotonic() + 120
    while not steps_on_disk(out / task):   # wait for the first finished step on disk
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() is not None else ""
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr[-3000:]
    (rec,) = records(out)
    assert (rec["status"], rec["error"]) == ("killed", "interrupted") and rec["screenshots"] >= 1
    check_task_folder(out / task)
    assert chromium_left(out) == []

    # the oracle at full speed (the same answers sooner): a change of the model's name, which the run is told to take
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", task, "--out", str(out),
            "--resume-changed")
    assert r.returncode == 0, r.stderr[-3000:]
    last = records(out)[-1]
    assert last["status"] == "done" and last["attempt"] == 2 and last["correct"]
    assert (out / task / "attempts" / "1" / "result.json").exists()
    check_task_folder(out / task)


def test_the_installed_package_runs_from_any_folder(tmp_path):
    """From a folder that is not the checkout, the installed package (in CI a wheel install) must carry its
    offline sites, tasks and styles."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model", "oracle",
                        "--task-ids", "offline_booking_rates_11", "--out", "here"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(tmp_path / "here")
    assert rec["correct"]
    styles = subprocess.run([sys.executable, "-c", "import om2w_tui.frontends.console.app as a, pathlib; "
                             "print(all(pathlib.Path(p).exists() for p in a.ConsoleApp.CSS_PATH))"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert styles.stdout.strip() == "True", styles.stderr[-2000:]


def test_a_log_reader_that_goes_away_leaves_the_run_going_and_says_so(tmp_path):
    """`om2w-tui run --no-ui ... | head -2`, or a `tee` that died: the run goes on to its end (hours of work are not
    thrown away for a log), says once on stderr where its records are, leaves no Chromium, and exits 1 (its output
    was not all read); every task settled once, conforming, as without the pipe."""
    out = tmp_path / "piped"
    tasks = by_site("shop")[:3]
    p = subprocess.Popen([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model",
                          "oracle", "--workers", "2", "--task-ids", ",".join(tasks), "--out", str(out)],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().startswith("run: 3 tasks")
    p.stdout.close()                   # the reader goes away after the first line
    _, stderr = p.communicate(timeout=600)
    assert p.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr[-3000:]
    assert stderr.count("standard output closed: the run goes on") == 1 and str(out) in stderr, stderr[-3000:]
    assert_settled_once(records(out), tasks)
    assert all(r["status"] == "done" and r["correct"] for r in records(out))
    for t in tasks:
        check_task_folder(out / t)
    assert chromium_left(out) == []
