"""What `report`, `label`, `judge` and `check` say, through the real command line, on run folders written by the
report tests' builders and the real labels files: a comparison reads one measure on every side (or refuses, saying
why), a folder that is not a run is refused naming the runs inside it, and labels counted are final labels."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from om2w_tui.evaluation.labels import LabelFile
from tests.unit.helpers import judge_file, make_run, record

from .helpers import REPO, cli

TASKS = [f"t{i}" for i in range(6)]
JUDGE = "judge webjudge/o4-mini"


def labelled_and_judged(tmp_path: Path) -> Path:
    """Run A: every task labelled by alice (5 of 6 successes) and judged (2 of 6)."""
    out = make_run(tmp_path / "a", [record(t) for t in TASKS], arm="base", model="qwen")
    f = LabelFile.open(out, "alice")
    for t in TASKS:
        f.set(t, "0" if t == "t5" else "1")
    judge_file(out, {t: int(t in ("t0", "t1")) for t in TASKS})
    return out


def judged_with_answers(tmp_path: Path) -> Path:
    """Run B: the same judge (3 of 6) and the reference answers (6 of 6), no labels."""
    out = make_run(tmp_path / "b", [record(t, correct=True) for t in TASKS], arm="agent", model="qwen")
    judge_file(out, {t: int(t in ("t0", "t1", "t2")) for t in TASKS})
    return out


def report_json(*args: str) -> dict:
    r = cli("report", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ── item 1: one measure on every side ──────────────────────────────────────────────────────────────────────────


def test_a_comparison_reads_the_best_measure_every_run_has_and_names_it_everywhere(tmp_path):
    a, b = labelled_and_judged(tmp_path), judged_with_answers(tmp_path)
    data = report_json(str(a), str(b))
    # A has labels (5/6) but B has none: both are read by the judge they share, never labels against a judge
    assert data["compare"]["measure"]["kind"] == "judge" and data["compare"]["measure"]["name"] == JUDGE
    assert [r["success"]["source"] for r in data["runs"]] == ["judge", "judge"]
    overall = data["compare"]["rows"][0]["values"]
    assert [(v["successes"], v["tasks"]) for v in overall] == [(2, 6), (3, 6)]
    assert {t["measure"] for t in data["compare"]["tests"]} == {JUDGE}

    md = cli("report", str(a), str(b), "--format", "md").stdout
    assert f"success (over all) by {JUDGE}, against base/qwen" in md
    assert f"| agent/qwen | base/qwen | {JUDGE} | over all |" in md
    rows = list(csv.DictReader(io.StringIO(cli("report", str(a), str(b), "--format", "csv").stdout)))
    compared = [r for r in rows if r["section"] == "delta_pp" or r["section"].startswith("paired vs")]
    assert compared and all(JUDGE in (r["section"] + r["metric"]) for r in compared)
    table = cli("report", str(a), str(b), env={"COLUMNS": "250"}).stdout
    assert f"success (over all) by {JUDGE}" in table


def test_the_measure_can_be_chosen_and_a_run_lacking_it_is_named(tmp_path):
    a, b = labelled_and_judged(tmp_path), judged_with_answers(tmp_path)
    r = cli("report", str(a), str(b), "--measure", "humans")
    assert r.returncode == 2 and not r.stdout
    assert f"--measure humans: {b} has no human labels" in r.stderr
    r = cli("report", str(a), str(b), "--measure", "reference")
    assert r.returncode == 2 and f"{a} has no reference answers" in r.stderr
    # one run: --measure chooses what its success is read from
    data = report_json(str(a), "--measure", "judge")
    assert data["runs"][0]["success"]["source"] == "judge" and data["runs"][0]["measure"]["name"] == JUDGE
    assert data["runs"][0]["success"]["overall"]["successes"] == 2


def test_judge_file_given_decides_success_over_the_labels(tmp_path):
    a = labelled_and_judged(tmp_path)
    given = judge_file(a, {t: 1 for t in TASKS}, "webvoyager_gpt-4o_score_threshold_3")
    data = report_json(str(a), "--judge", str(given))
    run = data["runs"][0]
    assert run["success"]["source"] == "judge" and run["success"]["overall"]["successes"] == 6
    assert run["success"]["judge"]["file"] == str(given) and run["measure"]["kind"] == "judge"


def test_runs_with_no_measure_in_common_are_refused_with_the_reason(tmp_path):
    a = labelled_and_judged(tmp_path)
    (next(a.glob("*_auto_eval_results.json"))).unlink()          # A: labels only
    b = make_run(tmp_path / "b", [record(t, correct=True) for t in TASKS], arm="agent", model="qwen")   # B: answers
    r = cli("report", str(a), str(b))
    assert r.returncode == 2 and not r.stdout
    assert "no measure of success common to every run" in r.stderr
    assert f"{a} has human labels (final)" in r.stderr and f"{b} has reference answers" in r.stderr
    # two judges of different models are not one measure either
    judge_file(a, {t: 1 for t in TASKS})
    judge_file(b, {t: 1 for t in TASKS}, "webjudge_gpt-4o_score_threshold_3")
    with_model = [json.loads(x) for x in next(b.glob("*gpt-4o*")).read_text().splitlines()]
    next(b.glob("*gpt-4o*")).write_text("".join(json.dumps({**x, "judge_model": "gpt-4o"}) + "\n"
                                                for x in with_model))
    r = cli("report", str(a), str(b), "--measure", "judge")
    assert r.returncode == 2 and "no judge of the same mode and model in every run" in r.stderr


def test_repeats_read_one_measure(tmp_path):
    a, b = labelled_and_judged(tmp_path), judged_with_answers(tmp_path)
    data = report_json(str(a), str(b), "--repeats")
    reps = data["compare"]["repeats"]
    assert reps and {r["measure"] for r in reps} == {JUDGE}
    assert [x["successes"] for x in reps[0]["rates"]] == [2, 3]


# ── item 8: a folder that is not a run ─────────────────────────────────────────────────────────────────────────


def test_a_folder_of_runs_or_an_empty_one_is_refused_by_every_reader(tmp_path):
    parent = tmp_path / "runs"
    make_run(parent / "one", [record("t0", correct=True)])
    make_run(parent / "two", [record("t0", correct=True)])
    for cmd in (["report"], ["label"], ["check"], ["label", "--export", str(tmp_path / "h.json"), "--agent", "x"]):
        r = cli(*cmd[:1], str(parent), *cmd[1:])
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert f"{parent}: not a run but a folder of runs (2: one, two)" in r.stderr, cmd
    assert not list(parent.glob("labels.*")) and not (tmp_path / "h.json").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    for cmd in ("report", "label", "check"):
        r = cli(cmd, str(empty))
        assert r.returncode == 2 and f"{empty}: not a run" in r.stderr, (cmd, r.stderr)
    r = cli("judge", str(parent), "--judge-model", "m", "--judge-url", "http://127.0.0.1:9/v1", timeout=60)
    assert r.returncode == 2 and "folder of runs" in r.stderr


def test_label_refuses_a_task_it_does_not_have(tmp_path):
    out = make_run(tmp_path / "a", [record("t0"), record("t1")])
    r = cli("label", str(out), "--task", "nope")
    assert r.returncode == 2 and "--task nope: no such task in" in r.stderr


def test_report_ui_without_a_terminal_is_refused_not_drawn(tmp_path):
    out = make_run(tmp_path / "a", [record("t0", correct=True)])
    r = subprocess.run([sys.executable, "-m", "om2w_tui", "report", str(out), "--ui"], cwd=REPO, text=True,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 2 and not r.stdout
    assert "needs a terminal" in r.stderr and "drop --ui" in r.stderr


# ── item 9: labels counted are final labels ─────────────────────────────────────────────────────────────────────


def test_a_dispute_is_not_counted_as_labelled(tmp_path):
    a = labelled_and_judged(tmp_path)
    LabelFile.open(a, "root").set("t0", "0")        # one label by another: t0 is now split 1-1
    run = report_json(str(a))["runs"][0]
    assert run["labelled"] == 5 and run["disputed"] == ["t0"]
    md = cli("report", str(a), "--format", "md").stdout
    assert "5 of 6 tasks with a final label" in md and "1 disputed" in md
