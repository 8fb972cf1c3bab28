"""The out folder with real processes: one run at a time holds it, and nothing secret in an endpoint URL reaches it."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from .helpers import REPO, cli, free_port, popen, records, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_a_second_run_on_the_same_out_folder_is_refused_naming_the_first(tmp_path):
    out = tmp_path / "shared"
    first = popen("run", "--no-ui", "--bench", "offline", "--model", "oracle-slow-2", "--task-ids",
                  "offline_wiki_admin_10", "--out", str(out))
    try:
        wait_for(lambda: (out / "run.json").exists(), 120, first, "the first run's manifest")
        manifest = (out / "run.json").read_bytes()
        for command in ("run", "doctor"):
            second = cli(command, "--no-ui", "--bench", "offline", "--model", "oracle", "--out", str(out))
            assert second.returncode == 2, (command, second.stdout[-2000:], second.stderr[-2000:])
            said = second.stdout + second.stderr
            if command == "run":
                assert f"pid {first.pid} on {socket.gethostname()}" in said and "--out" in said, said[-2000:]
            else:   # doctor's table wraps the same message
                assert "another run is using this folder" in said and str(first.pid) in said, said[-2000:]
        assert (out / "run.json").read_bytes() == manifest        # the refused run wrote nothing
        first.send_signal(signal.SIGINT)
        _, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, stderr[-2000:]
    # the lock went with its holder: the next run takes the folder and finishes the interrupted task (with the
    # oracle at full speed: the same answers sooner, which the run is told it may mix in)
    third = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", "offline_wiki_admin_10",
                "--out", str(out), "--resume-changed")
    assert third.returncode == 0, third.stderr[-2000:]
    assert [(r["status"], r["error"]) for r in records(out)] == [("killed", "interrupted"), ("done", None)]


def test_credentials_in_the_endpoint_url_reach_no_file_and_no_output(tmp_path):
    port = free_port()
    oracle = subprocess.Popen([sys.executable, "-m", "om2w_tui", "oracle", "--port", str(port)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 60, oracle, "the oracle")
        out = tmp_path / "creds"
        r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", "offline_shop_search_01",
                "--vllm", f"http://alice:hunter2-secret@127.0.0.1:{port}/v1", "--out", str(out))
    finally:
        oracle.kill()
        oracle.wait()
    assert r.returncode == 0, r.stderr[-3000:]
    assert records(out)[0]["correct"]
    assert "hunter2-secret" not in r.stdout + r.stderr
    leaks = [str(p) for p in out.rglob("*") if p.is_file() and b"hunter2-secret" in p.read_bytes()]
    assert leaks == []
    assert f"http://***@127.0.0.1:{port}/v1" in (out / "run.json").read_text()


def test_a_resume_that_changes_what_the_run_measures_is_refused_unless_asked_and_then_kept_and_said(tmp_path):
    """The real command line on the offline suite: a changed temperature and step budget under an existing run are
    refused with exit 2 naming each, the folder untouched; a wider selection is no change; `--resume-changed` goes
    on, its log says so first, run.json keeps the change and `report` warns."""
    out = tmp_path / "run"
    base = ("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--out", str(out))
    first = cli(*base, "--task-ids", "offline_shop_search_01")
    assert first.returncode == 0, first.stderr[-2000:]
    manifest, results = (out / "run.json").read_bytes(), (out / "results.jsonl").read_bytes()
    wider = ("--task-ids", "offline_shop_search_01,offline_wiki_admin_10")
    refused = cli(*base, *wider, "--temperature", "0.5", "--max-steps", "9")
    assert refused.returncode == 2, refused.stdout[-2000:]
    assert ("the run there measured otherwise (--temperature 0.0 -> 0.5; --max-steps 30 -> 9)" in refused.stderr
            and "--resume-changed" in refused.stderr), refused.stderr[-2000:]
    assert (out / "run.json").read_bytes() == manifest and (out / "results.jsonl").read_bytes() == results
    went_on = cli(*base, *wider, "--temperature", "0.5", "--max-steps", "9", "--resume-changed")
    assert went_on.returncode == 0, went_on.stderr[-2000:]
    assert went_on.stdout.startswith(f"warning: resume: 1 of 2 already done in {out}; --resume-changed: "
                                     "--temperature 0.0 -> 0.5; --max-steps 30 -> 9\n"), went_on.stdout[:2000]
    assert [r["task_id"] for r in records(out)] == ["offline_shop_search_01", "offline_wiki_admin_10"]
    kept = json.loads((out / "run.json").read_text())
    assert [c["changed"] for c in kept["changes"]] == [["--temperature 0.0 -> 0.5", "--max-steps 30 -> 9"]]
    assert kept["measured"]["temperature"] == 0.5
    again = cli(*base, *wider, "--temperature", "0.5", "--max-steps", "9")   # as it now is: no change, nothing said
    assert again.returncode == 0 and "warning" not in again.stdout, again.stdout[-2000:]
    # doctor says the folder mixes two measurements, each change with when, where the resume itself is no change
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(kept["changes"][0]["at"]))
    doctor = cli("doctor", *base[2:], *wider, "--temperature", "0.5", "--max-steps", "9")
    said = " ".join(doctor.stdout.split())
    assert doctor.returncode == 0, doctor.stdout[-3000:] + doctor.stderr[-2000:]
    assert ("resumed changed" in said and "run.json: the run went on under other settings than it began with "
            f"(--resume-changed, {at}: --temperature 0.0 -> 0.5; --max-steps 30 -> 9); its episodes mix two "
            "measurements" in said), said[-3000:]
    report = cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr[-2000:]
    assert any("--temperature 0.0 -> 0.5" in w and "mix two measurements" in w
               for w in json.loads(report.stdout)["runs"][0]["warnings"]), report.stdout[-3000:]


def test_a_task_file_edited_under_a_run_is_refused_for_the_tasks_it_settled_and_may_grow(tmp_path):
    """The offline suite from a task file of one's own: a task added to the file runs on resume; a settled task's
    text edited since is refused with exit 2 naming it, the folder untouched; run.json keeps the file read before."""
    from om2w_tui.offline import TASKS_TEMPLATE  # the suite's task file, copied to be edited

    rows = json.loads(TASKS_TEMPLATE.read_text())
    first, second = rows[0], rows[1]
    tasks, out = tmp_path / "tasks.json", tmp_path / "run"
    tasks.write_text(json.dumps([first]))
    run = ("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--tasks", str(tasks), "--out", str(out))
    assert cli(*run).returncode == 0
    before = json.loads((out / "run.json").read_text())["task_file"]["sha256"]
    tasks.write_text(json.dumps([first, second]))                      # grown: the new task runs, nothing refused
    grown = cli(*run)
    assert grown.returncode == 0, grown.stderr[-2000:]
    assert [r["task_id"] for r in records(out)] == [first["task_id"], second["task_id"]]
    assert json.loads((out / "run.json").read_text())["task_file"]["earlier_sha256"] == [before]
    tasks.write_text(json.dumps([{**first, "confirmed_task": first["confirmed_task"] + " Today."}, second]))
    manifest = (out / "run.json").read_bytes()
    edited = cli(*run)
    assert edited.returncode == 2, edited.stdout[-2000:]
    assert (f"--tasks: 1 settled task(s) changed in the task file since they ran ({first['task_id']})"
            in edited.stderr), edited.stderr[-2000:]
    assert (out / "run.json").read_bytes() == manifest
