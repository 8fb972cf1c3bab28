"""Judging as the run goes, for real: `om2w-tui run --judge-url --judge-model` on the offline suite (real workers,
Chromium and the oracle model) with the oracle's judge mode on 127.0.0.1 as the judge: every settled episode is
judged into the judge's file while the run goes, the run's log says so, `report` reads the verdicts, and the same
command again (resume) judges nothing twice."""

from __future__ import annotations

import json
import re

import pytest

from om2w_tui.evaluation.judge_files import read_judged
from om2w_tui.offline.oracle import OracleServer
from om2w_tui.offline.suite import load_task_templates

from .helpers import cli, records

TASKS = "offline_booking_rates_11,offline_longpage_footer_15,offline_wiki_port_06"
JUDGE_FILE = "om2w-tui_WebJudge_Online_Mind2Web_eval_oracle-judge_score_threshold_3_auto_eval_results.json"


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_a_run_judges_its_episodes_as_they_end_and_resumes_without_judging_twice(tmp_path):
    out = tmp_path / "run"
    with OracleServer(load_task_templates()) as judge:
        args = ["run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", TASKS, "--workers", "2",
                "--pace-cooldown", "0", "--out", str(out), "--judge-url", judge.url, "--judge-model",
                "oracle-judge"]
        r = cli(*args)
        assert r.returncode == 0, r.stderr[-3000:]
        settled = {x["task_id"] for x in records(out)}
        lines = read_judged(out / JUDGE_FILE)
        assert sorted(lines) == sorted(settled) == sorted(TASKS.split(","))
        assert all(line["attempt"] == 1 and line["judge_model"] == "oracle-judge" for line in lines.values())
        # the headless log says what the judge does, and all went well: no warning or error of it
        assert "info: judge: judging each episode as it ends with oracle-judge" in r.stdout
        assert re.search(r"info: judge: judged 3 episode\(s\) during the run", r.stdout), r.stdout
        assert "warning: judge:" not in r.stdout and "error: judge:" not in r.stdout
        manifest = json.loads((out / "run.json").read_text())
        assert manifest["config"]["judge_model"] == "oracle-judge"
        calls = judge.calls

        again = cli(*args)                       # everything settled and judged: nothing runs, nothing is judged
        assert again.returncode == 0, again.stderr[-3000:]
        assert judge.calls == calls
        assert len((out / JUDGE_FILE).read_text().splitlines()) == 3

    report = cli("report", str(out), "--format", "json", "--no-per-task")
    assert report.returncode == 0, report.stderr
    run = json.loads(report.stdout)["runs"][0]
    assert [m["source"] for m in run["measures"]] == ["judge", "correct"]
    judged = run["measures"][0]["counts"]
    assert judged["pending"] == 0 and judged["success"] + judged["failure"] + judged["not_executable"] == 3


@pytest.mark.e2e
def test_a_judge_that_does_not_answer_stops_the_run_before_it_starts(tmp_path):
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", "offline_wiki_port_06",
            "--out", str(tmp_path / "run"), "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m")
    assert r.returncode == 2 and "--judge-url http://127.0.0.1:9/v1: the endpoint does not answer" in r.stderr
    assert not (tmp_path / "run").exists()
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--out", str(tmp_path / "run"),
            "--judge-url", "http://127.0.0.1:9/v1")
    assert r.returncode == 2 and "--judge-url needs --judge-model too" in r.stderr
