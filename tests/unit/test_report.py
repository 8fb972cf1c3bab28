"""Run summaries and comparisons: computed from folders built by hand, then rendered in every format."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.compare import compare
from om2w_tui.evaluation.errors import normalise_error
from om2w_tui.evaluation.report import METRICS, quantile, summarize
from om2w_tui.evaluation.report_text import to_csv, to_json, to_markdown
from om2w_tui.evaluation.summary import Counts, Rate, Stats
from tests.unit.helpers import REPO, judge_file, make_run, record, task_folder

# ------------------------------------------------------------------------------------------ pieces


@pytest.mark.parametrize("a, b", [
    ("model endpoint http://127.0.0.1:41234/v1 failed: Connection refused (errno 111)",
     "model endpoint http://127.0.0.1:39999/v1 failed: Connection refused (errno 104)"),
    ("worker 3 died after 12.5 s", "worker 0 died after 3 s"),
    ("browser at 127.0.0.1:9222 lost target 3F2A9C1B7D", "browser at 127.0.0.1:40111 lost target 0A1B2C3D4E5F"),
    ("no file /tmp/run-1/x/result.json", "no file /home/u/runs/7/result.json"),
    ("session 123e4567-e89b-12d3-a456-426614174000 closed", "session 00000000-1111-2222-3333-444444444444 closed"),
])
def test_errors_that_differ_only_in_numbers_ids_urls_and_ports_group_together(a, b):
    assert normalise_error(a) == normalise_error(b)
    assert any(ch.isalpha() for ch in normalise_error(a))


def test_different_errors_stay_apart_and_empty_ones_are_named():
    assert normalise_error("HTTP 500 from the model") != normalise_error("Cloudflare challenge")
    assert normalise_error("model endpoint http://h:1/v1: HTTP 500") == "model endpoint <url>: HTTP <n>"
    assert normalise_error(None) == "(no message)"


def test_quantiles_interpolate_like_numpy():
    assert quantile([], 0.5) is None
    assert quantile([4.0], 0.9) == 4.0
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile(list(range(1, 11)), 0.9) == pytest.approx(9.1)


# ------------------------------------------------------------------------------------------ one run


@pytest.fixture
def run_a(tmp_path) -> Path:
    tasks = [{"task_id": f"t{i}", "confirmed_task": "x", "website": w, "level": lv}
             for i, (w, lv) in enumerate([("https://www.shop.test/", "easy"), ("https://shop.test/", "easy"),
                                          ("https://wiki.test/", "medium"), ("https://wiki.test/", "hard"),
                                          ("https://wiki.test/", "hard")])]
    recs = [
        record("t0", correct=True, steps=2, duration_s=10.0, prompt_tokens=100, completion_tokens=10),
        record("t1", correct=False, steps=4, duration_s=20.0, prompt_tokens=300, completion_tokens=30),
        record("t2", "error", error="model endpoint http://127.0.0.1:4000/v1: HTTP 500", error_kind="infra",
               correct=False, finished_at=0.5, steps=1, level="medium"),
        record("t2", correct=True, steps=6, duration_s=30.0, attempt=2, finished_at=2.0, level="medium"),
        record("t3", "timeout", error="timeout", correct=False, steps=9, duration_s=1800.0, level="hard"),
        record("t4", "error", error="model endpoint http://127.0.0.1:4001/v1: HTTP 502", error_kind="infra",
               correct=False, steps=1, duration_s=5.0, level="hard"),
    ]
    return make_run(tmp_path / "a", recs, arm="base", model="qwen", tasks=tasks)


def test_summary_of_an_offline_style_run(run_a):
    s = summarize(run_a)
    assert s.name == "base/qwen" and s.tasks == 5 and s.attempts == 6
    succ = s.success
    assert succ.source == "correct"
    assert succ.overall == Rate(successes=2, tasks=5, rate=0.4)
    assert list(succ.by_level) == ["easy", "medium", "hard"]
    assert succ.by_level["easy"].successes == 1 and succ.by_level["hard"].rate == 0.0
    assert succ.by_site["shop.test"].tasks == 2 and succ.by_site["wiki.test"].successes == 1
    assert s.status["done"] == 3 and s.status["timeout"] == 1 and s.status["error"] == 1
    steps = s.metrics["steps"]
    assert steps.n == 5 and steps.median == 4 and steps.p90 == pytest.approx(7.8)
    assert s.metrics["prompt_tokens"] == Stats(n=2, median=200.0, p90=280.0, total=400.0)
    (infra, timeout) = s.errors
    assert (infra.count, infra.task_count, infra.kind) == (2, 2, "infra")
    assert infra.message == "model endpoint <url>: HTTP <n>" and infra.tasks == ("t2", "t4")
    assert timeout.status == "timeout" and timeout.tasks == ("t3",)
    assert s.conformance.problems == 0


def test_every_per_episode_number_is_over_one_set_the_episodes_the_tasks_outcomes_rest_on(tmp_path):
    """A run SIGKILLed mid-run, then read: its folders cut short (no record; or a record of its stop, run again
    later) are no episode of their task's yet: in none of steps, duration, tokens, each of n 2."""
    out = tmp_path / "run"
    for tid, steps in (("cut", 1), ("stopped", 3)):
        task_folder(out, tid, actions=steps)
    make_run(out, [record("a", steps=4, duration_s=10.0, prompt_tokens=100, completion_tokens=10),
                   record("b", steps=6, duration_s=20.0, prompt_tokens=300, completion_tokens=30),
                   record("stopped", "killed", error="interrupted", steps=3, duration_s=5.0, prompt_tokens=50,
                          completion_tokens=5)])
    s = summarize(out)
    assert {k: m.n for k, m in s.metrics.items()} == {k: 2 for k in METRICS}
    assert s.metrics["steps"] == Stats(n=2, median=5.0, p90=5.8, total=10.0)


def test_a_judge_file_decides_success_and_a_task_not_judged_yet_is_in_no_rate(run_a):
    judge_file(run_a, {"t0": 1, "t1": 1, "t2": 0})
    s = summarize(run_a)
    assert s.success.source == "judge" and s.success.judge is not None and s.success.judge.judged == 3
    # t3 finished but is not judged yet: pending, neither success nor failure; t4 ended on an infra error (the
    # harness's fault): not executable, a failure over all tasks and left out of the executable rate
    assert s.per_task["t3"].success is None and s.per_task["t3"].outcome is None
    assert s.per_task["t4"].outcome == "not_executable"
    assert s.success.counts == Counts(success=2, failure=1, not_executable=1, pending=1)
    assert s.success.overall == Rate(2, 4, 0.5) and s.success.counts.executable == Rate(2, 3, 2 / 3)


def test_the_newest_judge_file_wins_unless_one_is_given(run_a):
    old = judge_file(run_a, {"t0": 1, "t1": 1, "t2": 1}, "webvoyager_gpt-4o_score_threshold_3")
    new = judge_file(run_a, {"t0": 0})
    os.utime(old, (1_000_000, 1_000_000))
    assert summarize(run_a).success.overall == Rate(0, 2, 0.0)        # t0 failed, t4 not executable, 3 not judged
    assert summarize(run_a, old).success.overall == Rate(3, 4, 0.75)
    with pytest.raises(FileNotFoundError):
        summarize(run_a, run_a / "nope.json")
    assert new.exists()


def test_a_folder_from_another_harness(tmp_path):
    out = tmp_path / "foreign"
    task_folder(out, "aaa", actions=3)
    task_folder(out, "bbb", actions=5)
    task_folder(out, "ccc", actions=0)
    judge_file(out, {"aaa": 1, "bbb": 0, "zzz": 1})
    s = summarize(out)
    assert s.name == "foreign" and not s.has_results and not s.has_manifest
    assert s.tasks == 3 and s.status == {"done": 0, "out_of_steps": 0, "timeout": 0, "killed": 0, "error": 0,
                                         "blocked": 0, "folder": 3}
    assert s.metrics["steps"].median == 3 and s.metrics["duration_s"].n == 0
    assert s.success.overall == Rate(1, 2, 0.5) and s.success.counts is not None and s.success.counts.pending == 1
    assert any("not in this run" in w for w in s.warnings)
    assert s.success.by_level == {"-": Rate(1, 2, 0.5)}


def test_no_success_measure_is_said_plainly(tmp_path):
    out = tmp_path / "plain"
    task_folder(out, "a")
    s = summarize(out)
    assert s.success.source is None and s.success.overall is None and not s.success.by_level
    assert "no judge file" in to_markdown([s], None)
    assert list(s.to_json()["success"]) == ["source", "judge", "other_judges"]   # no rates without a measure


# ------------------------------------------------------------------------------------------ several runs


def test_compare_gives_the_difference_per_level_against_the_first_run(run_a, tmp_path):
    levels = ["easy", "easy", "medium", "hard"]
    recs = [record(f"t{i}", correct=ok, level=lv) for i, (ok, lv) in enumerate(zip([True, True, True, False], levels))]
    tasks = [{"task_id": f"t{i}", "confirmed_task": "x", "website": "https://wiki.test/", "level": lv}
             for i, lv in enumerate(levels)]
    run_b = make_run(tmp_path / "b", recs, arm="agent", model="qwen", tasks=tasks)
    c = compare([summarize(run_a), summarize(run_b)])
    assert c.runs == ("base/qwen", "agent/qwen") and c.baseline == "base/qwen"
    rows = {r.group: r for r in c.rows}
    assert rows["overall"].delta_pp[1] == pytest.approx(100 * (3 / 4 - 2 / 5))
    assert rows["level easy"].delta_pp == (None, pytest.approx(50.0))
    assert rows["level medium"].delta_pp[1] == pytest.approx(0.0)
    assert c.paired.tasks == 4
    assert [v.successes if v else None for v in c.paired.values] == [2, 3]
    assert c.status["done"] == (3, 4)


def test_runs_with_the_same_name_are_told_apart_by_folder(run_a, tmp_path):
    other = make_run(tmp_path / "again", [record("t0", correct=True)], arm="base", model="qwen")
    assert compare([summarize(run_a), summarize(other)]).runs == ("base/qwen (a)", "base/qwen (again)")


def test_every_format_renders(run_a, tmp_path):
    run_b = make_run(tmp_path / "b", [record("t0", correct=True)], arm="agent", model="qwen")
    sums = [summarize(run_a), summarize(run_b)]
    c = compare(sums)
    md = to_markdown(sums, c)
    assert "| overall | 40.0% (2/5) [11.8, 76.9] | 50.0% (2/4) [15.0, 85.0] | 1 | 0 |" in md
    assert "## comparison" in md and "+60.0 pp" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(sums, c))))
    assert {"run": "base/qwen", "section": "success", "group": "overall", "metric": "rate", "value": "0.4"}.items() \
        <= next(r for r in rows if r["group"] == "overall" and r["metric"] == "rate").items()
    assert any(r["section"] == "delta_pp" and r["group"] == "overall" for r in rows)
    data = json.loads(to_json(sums, c))
    assert data["runs"][0]["success"]["overall"]["rate"] == 0.4 and data["compare"]["baseline"] == "base/qwen"
    # the JSON's keys, in the order the report has always written them
    assert list(data["runs"][0]) == ["out", "name", "arm", "model", "bench", "task_file", "has_results",
                                     "has_manifest", "tasks", "attempts", "success", "status", "metrics", "errors",
                                     "conformance", "warnings", "measures", "agreement", "annotators", "labelled",
                                     "disputed", "kind", "measure", "failures", "per_task"]
    assert list(data["runs"][0]["success"]) == ["source", "judge", "other_judges", "overall", "by_level", "by_site",
                                                "counts"]
    assert list(data["runs"][0]["errors"][0]) == ["status", "kind", "message", "count", "tasks", "task_count"]
    assert list(data["runs"][0]["per_task"]["t0"]) == ["level", "site", "status", "success", "steps", "duration_s",
                                                       "prompt_tokens", "completion_tokens", "has_folder",
                                                       "outcome", "failure"]
    assert list(data["compare"]) == ["runs", "outs", "baseline", "sources", "rows", "site_rows", "paired", "status",
                                     "median", "tests", "repeats", "measure"]
    assert "per_task" not in json.loads(to_json(sums, c, per_task=False))["runs"][0]


def test_the_report_command(run_a, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert cli_main(["report", str(run_a), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["tasks"] == 5
    assert cli_main(["report", str(run_a)]) == 0
    table = capsys.readouterr().out
    assert "base/qwen" in table and "40.0% (2/5)" in table and "model endpoint <url>: HTTP <n>" in table
    assert cli_main(["report", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert cli_main(["report", str(run_a), "--judge", "missing.json"]) == 2


def test_the_tools_import_neither_rich_nor_textual_until_a_table_is_printed():
    code = ("import sys; import om2w_tui.evaluation.report as r, om2w_tui.evaluation.judge, "
            "om2w_tui.benchmarks.conformance, om2w_tui.benchmarks.fetch, om2w_tui.benchmarks.dates, "
            "om2w_tui.cli.tools as t; "
            "t._load(); r.summarize(sys.argv[1]); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('rich', 'textual', 'openai', 'httpx')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code, str(REPO)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def official_lines(out: Path, name: str, labels: dict[str, int]) -> Path:
    """A judge file as the official evaluator writes it: the task's result.json with the judgement added, and
    neither our mode nor our model in its lines (only in its name)."""
    path = out / name
    path.write_text("".join(json.dumps({"task_id": t, "task": "x", "action_history": [], "predicted_label": v,
                                        "image_judge_record": [{"Response": "Score: 4", "Score": 4}],
                                        "evaluation_details": {"response": "Status: success", "predicted_label": v}})
                            + "\n" for t, v in labels.items()))
    return path


def test_an_official_judge_file_says_its_mode_and_model(tmp_path):
    out = tmp_path / "foreign"
    for t in ("aaa", "bbb"):
        task_folder(out, t)
    official_lines(out, "WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json",
                   {"aaa": 1, "bbb": 0})
    j = summarize(out).success.judge
    assert j is not None and (j.mode, j.model, j.threshold, j.by) == ("WebJudge_Online_Mind2Web_eval", "o4-mini", 3,
                                                                "the official evaluator")
    md = to_markdown([summarize(out)], None)
    assert "(by the official evaluator, WebJudge_Online_Mind2Web_eval, o4-mini; 2 of 2 tasks judged)" in md


def test_the_official_rate_is_read_beside_ours(tmp_path):
    out = tmp_path / "run"
    for t in ("aaa", "bbb", "ccc"):
        task_folder(out, t)
    official = official_lines(
        out, "official_WebJudge_Online_Mind2Web_eval_Qwen-Qwen2.5-VL_score_threshold_3_auto_eval_results.json",
        {"aaa": 1, "bbb": 1})
    ours = judge_file(out, {"aaa": 1, "bbb": 0, "ccc": 0},
                      "WebJudge_Online_Mind2Web_eval_Qwen-Qwen2.5-VL_score_threshold_3")
    os.utime(official, (1_000_000, 1_000_000))
    s = summarize(out)
    assert s.success.judge is not None and s.success.judge.file == str(ours)
    assert s.success.overall is not None and s.success.overall.successes == 1
    other, = s.success.other_judges
    assert other.by == "the official evaluator" and other.model == "Qwen-Qwen2.5-VL"
    assert other.rate == Rate(2, 3, 2 / 3) and other.judged == 2
    assert "also judged in official_WebJudge" in to_markdown([s], None)


def test_a_task_still_running_counts_as_neither_success_nor_failure(tmp_path):
    # a live run: two tasks settled, a third running (its folder written as it goes, no record yet) on its own site
    tasks = [{"task_id": t, "confirmed_task": "x", "website": w, "level": "easy"}
             for t, w in (("t0", "https://shop.test/"), ("t1", "https://shop.test/"), ("t2", "https://long.test/"))]
    out = make_run(tmp_path / "live", [record("t0", correct=True), record("t1", correct=False)], tasks=tasks)
    task_folder(out, "t2")
    s = summarize(out)
    assert s.per_task["t2"].status == "unrecorded" and s.per_task["t2"].outcome is None
    assert s.success.overall == Rate(1, 2, 0.5)                       # not 1 of 3
    assert s.success.by_site["long.test"] == Rate(0, 0, None)         # not "long.test 0% 0/1"
    assert s.success.counts is not None and s.success.counts.pending == 1


def test_episodes_that_ended_on_their_model_are_listed_apart_and_count_as_failures(tmp_path):
    """Issue 19: the report says how many episodes ended on model errors, by kind, beside the agent's own."""
    calls = {"calls": 6, "ok": 2, "failures": {"context_length": 4}, "first": {}, "latency_s": 3.0}
    rows = [record("t1", "error", error="model: context length exceeded (32768 tokens): ...", error_kind="model",
                   model_fault="context_length", model_calls=calls, correct=False),
            record("t2", "error", error="model: context length exceeded", error_kind="model",
                   model_fault="context_length", model_calls=calls, correct=False),
            record("t3", "error", error="model: reply not the action schema (prose): I will", error_kind="model",
                   model_fault="unparseable", model_calls={"calls": 4, "ok": 0, "failures": {"unparseable": 4}},
                   correct=False),
            record("t4", "error", error="model endpoint: endpoint unreachable: refused", error_kind="endpoint",
                   model_fault="unreachable", finished_at=1.0),
            record("t4", "done", attempt=2, finished_at=2.0, correct=True,
                   model_calls={"calls": 3, "ok": 3, "failures": {}, "thinking_stripped": 3})]
    s = summarize(make_run(tmp_path / "run", rows))
    m = s.model_health
    assert m is not None and m.ended_on == {"context_length": 2, "unparseable": 1} and m.episodes_ended == 3
    assert m.endpoint == {"unreachable": 1} and m.thinking_stripped == 3
    assert m.calls == {"ok": 7, "context_length": 8, "unparseable": 4}
    assert s.success.overall.successes == 1 and s.success.overall.tasks == 4   # the model's errors are failures
    md = to_markdown([s], None)
    assert "3 episodes ended on model errors (counted as failures): context length 2, unparseable replies 1" in md
    assert "1 attempt(s) ended on the model endpoint (retried): unreachable 1" in md
    assert "model replies mended: 3 <think> blocks split off" in md
    assert json.loads(to_json([s], None))["runs"][0]["model_health"]["ended_on"]["context_length"] == 2


def test_a_run_whose_records_say_nothing_of_the_model_has_no_model_section(tmp_path):
    s = summarize(make_run(tmp_path / "run", [record("t1")]))
    assert s.model_health is None and "model errors" not in to_markdown([s], None)


def test_the_measure_chosen_is_the_best_every_run_has():
    from om2w_tui.evaluation.measure import Measure, NoCommonMeasure, choose

    humans, ref = Measure("humans"), Measure("reference")
    o4, gpt = Measure("judge", "webjudge", "o4-mini"), Measure("judge", "webjudge", "gpt-4o")
    assert choose([("a", [humans, o4, ref]), ("b", [humans, ref])]) == humans
    assert choose([("a", [humans, gpt, o4]), ("b", [o4, ref])]) == o4           # the judge both have, not a's first
    with pytest.raises(NoCommonMeasure, match="a has no reference answers"):
        choose([("a", [humans, gpt]), ("b", [o4, ref])], "reference")
    assert choose([("a", [gpt, ref]), ("b", [o4, ref])]) == ref                 # two judges are two measures
    assert choose([("a", [])]) is None                                           # one run without any: said so
    with pytest.raises(NoCommonMeasure, match="b has no human labels"):
        choose([("a", [humans]), ("b", [ref])], "humans")
    with pytest.raises(NoCommonMeasure, match="a has human labels .final.; b has reference answers"):
        choose([("a", [humans]), ("b", [ref])])
    with pytest.raises(NoCommonMeasure, match="no judge of the same mode and model"):
        choose([("a", [gpt]), ("b", [o4])], "judge")
    with pytest.raises(NoCommonMeasure, match="a has no success measure"):
        choose([("a", []), ("b", [])])


def test_a_report_written_to_a_file_keeps_each_row_on_one_line(run_a, tmp_path):
    """`report OUT > file`: rich takes 80 columns where stdout is no terminal, and folded every rate's interval onto
    a second line; a file or a pipe gets the whole rows (issue 26 item 10)."""
    import re

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with open(tmp_path / "report.txt", "w") as f:
        r = subprocess.run([sys.executable, "-m", "om2w_tui", "report", str(run_a)], cwd=REPO, env=env, stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "report.txt").read_text()
    rates = r"40\.0% \(2/5\) \[[\d.]+, [\d.]+\] +│ [\d.]+% \(\d/\d\) \[[\d.]+, [\d.]+\]"   # both rules, whole
    assert re.search(r"overall +│ " + rates, text), text
    assert "rates: over all = success / every task with an outcome (not executable counted as failure);" in text
    assert max(len(line) for line in text.splitlines()) > 80


# ------------------------------------------------------------------------------------------ small texts


def test_a_difference_that_rounds_to_zero_has_no_minus_sign():
    from om2w_tui.evaluation.text_formats import fmt_delta, fmt_pp, signed
    from om2w_tui.frontends.console.widgets.comparison import _pp

    # Newcombe's upper bound of a difference of nothing came out as -0.0000556 (QA): `-0.0` read as a loss
    assert fmt_pp(0.0, -0.5, -0.0000556) == "+0.0 pp [-50.0, +0.0]"
    assert (signed(-0.04), signed(-0.06), signed(0.0), signed(-0.4, 0)) == ("+0.0", "-0.1", "+0.0", "+0")
    assert fmt_delta(-0.0000556) == "+0.0 pp" and _pp(-0.0000556) == "+0" and _pp(-0.012) == "-1"


def test_a_side_that_solved_nothing_alone_says_none_in_every_text(tmp_path):
    from om2w_tui.evaluation.report_text import compare_sections

    base = make_run(tmp_path / "base", [record("t0", correct=True), record("t1", correct=True)], arm="base",
                    model="qwen")
    weak = make_run(tmp_path / "weak", [record("t0", correct=True), record("t1", correct=False)], arm="weak",
                    model="qwen")
    sums = [summarize(base), summarize(weak)]
    c = compare(sums)
    md = to_markdown(sums, c)
    assert "| only weak/qwen | none |" in md and "| only base/qwen | t1 |" in md
    only = next(rows for heading, _, rows in compare_sections(c) if heading.startswith("tasks only one solved"))
    assert only == [["only weak/qwen", "none"], ["only base/qwen", "t1"]]   # the table's (text) rows


def test_the_per_site_table_lists_where_the_arms_differ_and_its_heading_counts_the_others():
    """Under "per site where they differ" only such sites are rows: more of them past the limit are a row saying so;
    the sites where the arms solved the same tasks are counted in the heading, never a row of the table."""
    from om2w_tui.evaluation.agreement import paired
    from om2w_tui.evaluation.outcomes import RULE_ALL
    from om2w_tui.evaluation.report_text import test_sections as paired_sections

    a = {"s1": "success", "s2": "success", "s3": "failure", "w1": "success", "b1": "failure"}
    b = {"s1": "failure", "s2": "failure", "s3": "success", "w1": "success", "b1": "failure"}
    site = {"s1": "shop", "s2": "shop", "s3": "cart", "w1": "wiki", "b1": "booking"}.__getitem__
    t = paired(a, b, RULE_ALL, "a", "b", site_of=site)
    heading, _, rows = paired_sections((t,))[-1]
    assert heading == "per site where they differ: a / b (, over all); 2 other sites the same on each task"
    assert [r[0] for r in rows] == ["shop", "cart"]
    heading, _, rows = paired_sections((t,), limit=1)[-1]
    assert [r[0] for r in rows] == ["shop", "... 1 more site where they differ"]
    same = paired(a, a, RULE_ALL, "a", "a2", site_of=site)
    heading, _, rows = paired_sections((same,))[-1]
    assert heading.endswith("(, over all); none: all 4 sites the same on each task") and rows == []


@pytest.mark.parametrize(("shards", "missing"), [
    (["shard-0-of-2"], "shard 1 of 2 wrote no manifest here"),
    (["shard-1-of-4", "shards-2-to-3-of-4"], "shard 0 of 4 wrote no manifest here"),
    (["shard-0-of-3"], "shards 1, 2 of 3 wrote no manifest here"),
    (["shard-0-of-2", "shard-1-of-2"], None),                   # every shard of the split: the whole selection
    (["shard-0-of-2", "shard-0-of-3", "shard-1-of-2"], None),   # one complete split is enough
])
def test_a_run_read_after_only_some_of_its_shards_ran_says_their_tasks_are_missing(tmp_path, shards, missing):
    out = make_run(tmp_path / "run", [record("t0", correct=True)])
    manifest = (out / "run.json").read_text()
    (out / "run.json").unlink()
    for label in shards:
        (out / f"run.{label}.json").write_text(manifest)
    said = [w for w in summarize(out).warnings if "shard" in w]
    if missing is None:
        assert said == []
    else:
        assert len(said) == 1 and missing in said[0] and "tasks are missing from this report" in said[0], said
    # a whole run's manifest beside them: it took every task
    (out / "run.json").write_text(manifest)
    assert not [w for w in summarize(out).warnings if "shard" in w]


def test_the_csv_says_a_runs_warnings_on_stderr_and_keeps_its_stdout_one_table(tmp_path, capsys):
    out = make_run(tmp_path / "run", [record("t0", correct=True)])
    (out / "run.json").rename(out / "run.shard-0-of-2.json")         # the report of half a split run
    judge_file(out, {"t0": 1, "stray": 0})                            # and a judge file naming a task not in it
    warnings = summarize(out).warnings
    assert len(warnings) == 2
    assert cli_main(["report", str(out), "--format", "csv"]) == 0
    said = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(said.out)))
    assert rows[0] == ["run", "out", "section", "group", "metric", "value"] and all(len(r) == 6 for r in rows)
    assert not any("warning" in c or "shard" in c for r in rows for c in r)
    lines = [line for line in said.err.splitlines() if not line.startswith(f"note: {out}: ")]   # its notes first
    assert len(lines) == 2 and all(line.startswith(f"warning: {out}: ") for line in lines), lines
    assert any("shard 1 of 2 wrote no manifest here" in line for line in lines)
    assert any("judged task(s) are not in this run" in line for line in lines)


def test_the_csv_says_a_runs_notes_on_stderr_as_the_text_formats_show_them(tmp_path, capsys):
    """The lines under each run's heading in the Markdown (and the table): where success comes from, the rules, the
    other judge files..., then its warnings, go to stderr with the CSV too, each naming its run and what it is; the
    CSV's stdout stays one table."""
    a = make_run(tmp_path / "a", [record("t0", correct=True)])
    b = make_run(tmp_path / "b", [record("t0", correct=False)])
    judge_file(b, {"t0": 1, "stray": 0})                              # another measure, and a warning
    assert cli_main(["report", str(a), str(b), "--format", "md"]) == 0
    md = capsys.readouterr().out
    runs = [part for part in md.split("\n## ")[:2]]
    shown = [[n[2:] for n in part.split("\n### ")[0].splitlines() if n.startswith("- ")] for part in runs]
    assert all(shown) and any("not in this run" in n for n in shown[1])
    assert cli_main(["report", str(a), str(b), "--format", "csv"]) == 0
    said = capsys.readouterr()
    told: list[list[str]] = [[], []]
    for line in said.err.splitlines():
        kind, _, rest = line.partition(": ")
        i = 0 if rest.startswith(f"{a}: ") else 1
        told[i].append(rest.removeprefix(f"{(a, b)[i]}: "))
        assert kind == ("warning" if "not in this run" in rest else "note"), line
    assert told == shown
    rows = list(csv.reader(io.StringIO(said.out)))
    assert rows[0] == ["run", "out", "section", "group", "metric", "value"] and all(len(r) == 6 for r in rows)
    assert not any(c.startswith(("note", "warning", "rates: ", "success from")) for r in rows for c in r)


def test_each_other_judge_file_gives_its_rate_under_both_rules_and_no_scores_where_its_mode_has_none(tmp_path):
    """QA: beside the judge file read, another one's line said only "19 of 19 tasks judged", not its success; and a
    webvoyager file (no screenshot scores) read "the lenient reading agrees on all 19 verdicts and 0 scores"."""
    out = make_run(tmp_path / "run", [record("a"), record("b"), record("c", "blocked", agent_done=False)])

    def lines(name: str, mode: str, verdicts: dict[str, int], scored: bool) -> Path:
        path = out / f"om2w-tui_{name}_j_score_threshold_3_auto_eval_results.json"
        said = {1: "Status: success", 0: "Status: failure"} if scored else \
            {1: "Verdict: SUCCESS", 0: "Verdict: NOT SUCCESS"}
        rows = [{"task_id": t, "predicted_label": v, "mode": mode, "judge_model": "j", "parsing": "official",
                 "score_threshold": 3, "response": f"Thoughts: x.\n{said[v]}",
                 "image_judge_record": [{"Response": "Score: 4", "Score": 4}] if scored else None}
                for t, v in verdicts.items()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    webjudge = lines("WebJudge_Online_Mind2Web_eval", "webjudge", {"a": 1, "b": 0, "c": 1}, True)
    webvoyager = lines("WebVoyager_eval", "webvoyager", {"a": 1, "b": 1, "c": 1}, False)
    os.utime(webjudge, (1_000_000, 1_000_000))                       # the webvoyager file is the newest: read
    md = to_markdown([summarize(out)], None)
    assert (f"also judged in {webjudge.name} (by om2w-tui, webjudge, j): 3 of 3 tasks judged; success over all "
            f"33.3% (1/3) [6.1, 79.2], executable only 50.0% (1/2) [9.5, 90.5]") in md   # c: blocked, not executable
    assert f"{webvoyager.name}: replies read the official way; the lenient reading agrees on all 3 verdicts\n" in md
    assert f"{webjudge.name}: replies read the official way; the lenient reading agrees on all 3 verdicts and 3 " \
           f"scores" in md
