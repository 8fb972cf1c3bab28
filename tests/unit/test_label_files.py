"""Human labels on disk: an annotator's file (written whole at every change, resumable), the consensus of several,
the official human_label.json both ways (the published file in tests/data read, a run's labels exported and read
back), and `om2w-tui report --labels` on the published file checked against counts, McNemar's p and kappa computed
here by hand from the raw JSON."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.labels import (
    LabelFile,
    LabelFileError,
    export_labels,
    majority,
    read_human_labels,
    read_label_file,
    read_run_labels,
)
from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.stats import wilson
from tests.unit.helpers import judge_file, make_run, record

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "human_label.json"
AGENTS = ("Operator", "Agent-E", "Browser_Use", "Claude_Computer_Use_3.5", "Claude_Computer_Use_3.7", "SeeAct")


def raw_rows() -> list[dict]:
    return json.loads(PUBLISHED.read_text())


# ── an annotator's file ─────────────────────────────────────────────────────────────────────────────────────


def test_every_label_is_on_disk_at_once_and_a_new_session_resumes(tmp_path):
    f = LabelFile.open(tmp_path, "alice")
    f.set("t1", "1", now=10.0)
    on_disk = json.loads((tmp_path / "labels.alice.json").read_text())
    assert on_disk["annotator"] == "alice" and on_disk["labels"]["t1"] == {"label": "1", "at": 10.0}
    f.set("t2", "2", reason="captcha", now=11.0)
    f.set("t2", note="a Cloudflare page from the first step", now=12.0)
    f.set("t3", note="looks odd")                      # a note before any label
    assert read_label_file(f.path)["t2"].reason == "captcha" and read_label_file(f.path)["t2"].value == "2"
    assert read_label_file(f.path)["t3"].value is None and f.saves == 4
    assert [p.name for p in tmp_path.iterdir()] == ["labels.alice.json"]     # no temporary file left, no folder
    again = LabelFile.open(tmp_path, "alice")
    assert again.get("t2").note == "a Cloudflare page from the first step" and again.get("t1").value == "1"
    again.set("t2", "0")                              # a failure has no reason; the note stays
    assert again.get("t2").reason is None and again.get("t2").note.startswith("a Cloudflare")
    with pytest.raises(ValueError):
        again.set("t1", "3")
    with pytest.raises(ValueError):
        again.set("t1", "2", reason="bored")


@pytest.mark.parametrize("text,says", [
    ("{not json", ":1:2: invalid JSON"),
    ('{"labels": {}}', "not an om2w-tui labels file"),
    ('{"format": "om2w-tui-labels", "labels": {"t1": {"label": "5"}}}', "labels['t1']: label '5'"),
])
def test_a_broken_labels_file_is_named(tmp_path, text, says):
    path = tmp_path / "labels.bob.json"
    path.write_text(text)
    with pytest.raises(LabelFileError) as e:
        read_label_file(path)
    assert str(path) in str(e.value) and says in str(e.value)


def test_the_consensus_is_the_reviewer_then_everyone_then_a_majority(tmp_path):
    for name, labels in (("alice", {"a": "1", "b": "1", "c": "1", "d": "0"}),
                         ("bob", {"a": "1", "b": "0", "c": "0", "d": "1"}),
                         ("carol", {"a": "1", "b": "0"})):
        f = LabelFile.open(tmp_path, name)
        for t, v in labels.items():
            f.set(t, v)
    LabelFile.open(tmp_path, "final").set("d", "1")
    labels = read_run_labels(tmp_path)
    assert labels.names == ["alice", "bob", "carol"]
    assert [labels.consensus(t) for t in "abcde"] == ["1", "0", None, "1", None]
    assert labels.disputed("abcde") == ["b", "c", "d"] and labels.unresolved("abcde") == ["c"]
    assert majority(["1", "1", "0"]) == "1" and majority(["1", "0"]) is None and majority([]) is None


# ── the official human_label.json ───────────────────────────────────────────────────────────────────────────


def test_the_published_file_reads_as_its_rows_say():
    f = read_human_labels(PUBLISHED)
    rows = raw_rows()
    assert f.agents == AGENTS and len(f.tasks) == len(rows) == 300
    for agent in AGENTS:
        assert Counter(f.labels[agent].values()) == Counter(r[f"{agent}_human_label"] for r in rows)
    assert f.tasks["b7258ee05d75e6c50673a59914db412e"].startswith("Find the store location and hours")


@pytest.mark.parametrize("data,says", [
    ({"task_id": "a"}, "not a human_label.json"),
    ([{"confirmed_task": "x", "A_human_label": "1"}], "row 1: not an object with a task_id"),
    ([{"task_id": "a", "A_human_label": "1"}, {"task_id": "a", "A_human_label": "0"}],
     "row 2: task_id a is there twice"),
    ([{"task_id": "a", "A_human_label": "3"}], "row 1 (a): A_human_label is '3'"),
    ([{"task_id": "a", "confirmed_task": "x"}], "no <Agent>_human_label column"),
])
def test_a_file_that_is_not_the_official_shape_is_named(tmp_path, data, says):
    path = tmp_path / "human_label.json"
    path.write_text(json.dumps(data))
    with pytest.raises(LabelFileError) as e:
        read_human_labels(path)
    assert str(path) in str(e.value) and says in str(e.value)


def labelled_run(tmp_path: Path, labels: dict[str, str]) -> Path:
    out = make_run(tmp_path / "run", [record(t) for t in labels])
    f = LabelFile.open(out, "alice")
    for t, v in labels.items():
        f.set(t, v, reason="site_down" if v == "2" else None)
    return out


def test_a_runs_labels_export_as_a_column_and_read_back(tmp_path):
    out = labelled_run(tmp_path, {"t1": "1", "t2": "0", "t3": "2"})
    dest = tmp_path / "human_label.json"
    res = export_labels(out, ["t1", "t2", "t3"], {"t1": "task one"}, dest, "mine")
    assert res.written and res.labelled == 3 and not res.missing
    rows = json.loads(dest.read_text())
    assert rows[0] == {"task_id": "t1", "confirmed_task": "task one", "mine_human_label": "1"}
    back = read_human_labels(dest)
    assert back.agents == ("mine",) and back.labels["mine"] == {"t1": "1", "t2": "0", "t3": "2"}


def test_an_export_into_the_published_file_keeps_its_columns(tmp_path):
    dest = tmp_path / "human_label.json"
    dest.write_bytes(PUBLISHED.read_bytes())
    first = raw_rows()[0]["task_id"]
    out = labelled_run(tmp_path, {first: "0", "new-task": "1"})
    res = export_labels(out, [first, "new-task"], {}, dest, "Mine")
    back = read_human_labels(dest)
    assert res.written and back.agents == (*AGENTS, "Mine") and len(back.tasks) == 301
    for agent in AGENTS:                               # every published label untouched
        assert back.labels[agent] == read_human_labels(PUBLISHED).labels[agent]
    assert back.labels["Mine"] == {first: "0", "new-task": "1"}
    again = export_labels(out, [first, "new-task"], {}, dest, "Mine")
    assert again.replaced and read_human_labels(dest).agents == (*AGENTS, "Mine")


def test_an_export_with_unlabelled_tasks_writes_nothing_unless_partial(tmp_path, capsys):
    out = labelled_run(tmp_path, {"t1": "1", "t2": "0"})
    (out / "t9" / "trajectory").mkdir(parents=True)    # a task folder nobody labelled
    dest = tmp_path / "hl.json"
    assert cli_main(["label", str(out), "--export", str(dest), "--agent", "mine"]) == 2
    err = capsys.readouterr().err
    assert "1 task(s) have no label (e.g. t9)" in err and "--partial" in err and not dest.exists()
    assert cli_main(["label", str(out), "--export", str(dest)]) == 2
    assert "--export needs --agent NAME" in capsys.readouterr().err
    assert cli_main(["label", str(out), "--export", str(dest), "--agent", "mine", "--partial"]) == 0
    assert "wrote mine_human_label for 2 of 3 tasks" in capsys.readouterr().out
    assert read_human_labels(dest).labels["mine"] == {"t1": "1", "t2": "0"}
    assert json.loads(dest.read_text())[2] == {"task_id": "t9", "confirmed_task": ""}   # its row, no column
    assert cli_main(["label", str(out), "--annotator", "bad/name", "--export", str(dest), "--agent", "x"]) == 2
    assert cli_main(["label", str(tmp_path / "nope")]) == 2


def test_a_partial_export_has_every_tasks_row_so_the_report_counts_the_rest_pending(tmp_path, capsys):
    """docs/labels.md: `--partial` writes anyway, the unlabelled rows without the column. Left out, a file of 2 of 6
    tasks labelled read as a run of 2 tasks, every one labelled; with none labelled it was `[]`, which no reader
    takes for a human_label.json."""
    out = labelled_run(tmp_path, {"t1": "1", "t2": "0"})
    for t in ("t3", "t4", "t5", "t6"):
        (out / t / "trajectory").mkdir(parents=True)
        (out / t / "result.json").write_text(json.dumps({"task_id": t, "task": f"do {t}"}))
    dest = tmp_path / "hl.json"
    assert cli_main(["label", str(out), "--export", str(dest), "--agent", "mine", "--partial"]) == 0
    assert "for 2 of 6 tasks" in capsys.readouterr().out
    rows = json.loads(dest.read_text())
    assert [r["task_id"] for r in rows] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert rows[2] == {"task_id": "t3", "confirmed_task": "do t3"} and rows[0]["mine_human_label"] == "1"
    assert cli_main(["report", "--labels", str(dest), "--agent", "mine", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["runs"][0]
    assert (report["tasks"], report["labelled"], report["success"]["counts"]["pending"]) == (6, 2, 4)

    empty = tmp_path / "empty"
    (empty / "t1" / "trajectory").mkdir(parents=True)
    (empty / "t1" / "result.json").write_text(json.dumps({"task_id": "t1", "task": "do t1"}))
    none = tmp_path / "none.json"
    assert cli_main(["label", str(empty), "--export", str(none), "--agent", "mine", "--partial"]) == 2
    assert f"nothing written to {none}: no task of {empty} has a label yet" in capsys.readouterr().err
    assert not none.exists()


# ── report --labels on the published file ───────────────────────────────────────────────────────────────────


def by_hand(agent: str) -> tuple[int, int, int]:
    c = Counter(r[f"{agent}_human_label"] for r in raw_rows())
    return c["1"], c["0"], c["2"]


def test_report_labels_gives_every_agents_counts_and_both_rates(capsys):
    assert cli_main(["report", "--labels", str(PUBLISHED), "--format", "json", "--no-per-task"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["name"] for r in runs] == list(AGENTS)
    for r in runs:
        success, failure, not_exec = by_hand(r["name"])
        counts = r["measures"][0]["counts"]
        assert (counts["success"], counts["failure"], counts["not_executable"], counts["pending"]) == \
            (success, failure, not_exec, 0)
        assert counts["overall"]["rate"] == pytest.approx(success / 300)
        assert counts["executable"]["rate"] == pytest.approx(success / (success + failure))
        low, high = wilson(success, success + failure)
        assert (counts["executable"]["low"], counts["executable"]["high"]) == (pytest.approx(low), pytest.approx(high))
    # the paper's human evaluation: Operator 61.3%, Claude Computer Use 3.7 56.3%, Browser Use 30.0%
    rates = {r["name"]: round(100 * r["measures"][0]["counts"]["overall"]["rate"], 1) for r in runs}
    assert (rates["Operator"], rates["Claude_Computer_Use_3.7"], rates["Browser_Use"]) == (61.3, 56.3, 30.0)


def test_report_labels_as_a_table_names_the_rule_beside_every_rate(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert cli_main(["report", "--labels", str(PUBLISHED), "--agent", "Operator"]) == 0
    text = capsys.readouterr().out
    assert "61.3% (184/300) [55.7, 66.7]" in text and "63.4% (184/290) [57.8, 68.8]" in text
    assert "over all" in text and "executable only" in text and "95% Wilson interval" in text


def test_two_agents_are_compared_task_by_task_as_by_hand(capsys):
    assert cli_main(["report", "--labels", str(PUBLISHED), "--agent", "Operator", "--agent", "Browser_Use",
                     "--format", "json", "--no-per-task"]) == 0
    tests = json.loads(capsys.readouterr().out)["compare"]["tests"]
    over_all = next(t for t in tests if t["rule"] == "over all")
    rows = raw_rows()
    only_b = [r["task_id"] for r in rows if r["Browser_Use_human_label"] == "1" and r["Operator_human_label"] != "1"]
    only_op = [r["task_id"] for r in rows if r["Operator_human_label"] == "1" and r["Browser_Use_human_label"] != "1"]
    assert over_all["a"] == "Browser_Use" and over_all["b"] == "Operator"
    assert over_all["only_a_tasks"] == only_b and over_all["only_b_tasks"] == only_op
    n = len(only_b) + len(only_op)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(len(only_b), len(only_op)) + 1)) / 2 ** n)
    assert over_all["mcnemar_p"] == pytest.approx(p, rel=1e-9)
    assert over_all["difference"] == pytest.approx((len(only_b) - len(only_op)) / 300)
    assert over_all["low"] < over_all["difference"] < over_all["high"] < 0
    executable = next(t for t in tests if t["rule"] == "executable")
    kept = [r for r in rows if "2" not in (r["Operator_human_label"], r["Browser_Use_human_label"])]
    assert executable["n"] == len(kept)


def judged_file(tmp_path: Path, agent: str) -> tuple[Path, dict[str, int]]:
    """An auto-eval results file (the official evaluator's shape) that flips every seventh human label."""
    verdicts = {}
    for i, r in enumerate(raw_rows()):
        human = r[f"{agent}_human_label"] == "1"
        verdicts[r["task_id"]] = int(human != (i % 7 == 0))
    path = tmp_path / "WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": v,
                                        "evaluation_details": {"response": "Status: success" if v else
                                                               "Status: failure", "predicted_label": v}}) + "\n"
                            for t, v in verdicts.items()))
    return path, verdicts


def test_a_judge_file_against_the_labels_gives_agreement_and_kappa_as_by_hand(tmp_path, capsys):
    path, verdicts = judged_file(tmp_path, "Operator")
    assert cli_main(["report", "--labels", str(PUBLISHED), "--agent", "Operator", "--judged", str(path),
                     "--format", "json", "--no-per-task"]) == 0
    run, = json.loads(capsys.readouterr().out)["runs"]
    over_all = next(a for a in run["agreement"] if a["rule"] == "over all")
    human = {r["task_id"]: r["Operator_human_label"] == "1" for r in raw_rows()}
    a = sum(1 for t in human if verdicts[t] and human[t])
    b = sum(1 for t in human if verdicts[t] and not human[t])
    c = sum(1 for t in human if not verdicts[t] and human[t])
    d = 300 - a - b - c
    po = (a + d) / 300
    pe = ((a + b) * (a + c) + (c + d) * (b + d)) / 300 ** 2
    assert over_all["confusion"] == {"both": a, "only_a": b, "only_b": c, "neither": d,
                                     "agreement": over_all["confusion"]["agreement"]}
    assert over_all["confusion"]["agreement"]["rate"] == pytest.approx(po)
    assert over_all["kappa"] == pytest.approx((po - pe) / (1 - pe))
    assert over_all["gap_pp"] == pytest.approx(100 * (b - c) / 300)
    assert len(over_all["disagreements"]) == b + c
    executable = next(x for x in run["agreement"] if x["rule"] == "executable")
    assert executable["confusion"]["both"] + executable["confusion"]["only_a"] + executable["confusion"]["only_b"] \
        + executable["confusion"]["neither"] == 290


@pytest.mark.parametrize("argv,says", [
    (["--agent", "Nobody"], "--agent Nobody: no column Nobody_human_label"),
    (["--judged", "missing.json", "--agent", "Operator"], "--judged missing.json: no such file"),
    (["--agent", "Operator", "--tasks", "nope.json"], "--tasks nope.json: no such file"),
])
def test_bad_label_report_flags_are_named(capsys, argv, says):
    assert cli_main(["report", "--labels", str(PUBLISHED), *argv]) == 2
    assert says in capsys.readouterr().err


def test_judged_needs_one_agent_and_labels_needs_a_file(tmp_path, capsys):
    path, _ = judged_file(tmp_path, "Operator")
    assert cli_main(["report", "--labels", str(PUBLISHED), "--judged", str(path)]) == 2
    assert "name the agent it judged with --agent" in capsys.readouterr().err
    assert cli_main(["report", "--labels", str(tmp_path / "none.json")]) == 2
    assert cli_main(["report", "--agent", "Operator", str(tmp_path)]) == 2
    assert cli_main(["report"]) == 2


# ── a run's own labels in its report ────────────────────────────────────────────────────────────────────────


def test_a_runs_labels_decide_success_and_the_judge_is_measured_against_them(tmp_path):
    out = labelled_run(tmp_path, {"t1": "1", "t2": "0", "t3": "2", "t4": "1"})
    judge_file(out, {"t1": 1, "t2": 1, "t3": 0, "t4": 1})
    s = summarize(out)
    assert s.success.source == "labels" and [m.source for m in s.measures] == ["labels", "judge"]
    assert s.success.counts is not None and s.success.counts.executable.rate == pytest.approx(2 / 3)
    over_all, executable = s.agreement
    assert (over_all.confusion.both, over_all.confusion.only_a, over_all.confusion.neither) == (2, 1, 1)
    assert executable.confusion.n == 3 and [d.task_id for d in over_all.disagreements] == ["t2"]
    assert s.labelled == 4 and not s.disputed


def test_two_sessions_of_one_annotator_keep_each_others_labels(tmp_path):
    here, there = LabelFile.open(tmp_path, "alice"), LabelFile.open(tmp_path, "alice")
    here.set("t1", "1")
    there.set("t2", "0")                 # the other terminal: it reads t1 before it writes
    here.set("t3", "2", reason="outdated")
    assert {t: lab.value for t, lab in read_label_file(here.path).items()} == {"t1": "1", "t2": "0", "t3": "2"}


def test_the_reviewers_last_line_tells_its_own_labels_from_the_consensus(tmp_path):
    """QA: `label --review` ended "2 of 19 tasks labelled in labels.final.json" while that file held one label, the
    other final label being the annotators' consensus."""
    from om2w_tui.evaluation.label_session import LabelSession

    out = make_run(tmp_path / "run", [record(t) for t in ("a", "b", "c", "d")])
    for name, labels in (("alice", {"a": "1", "b": "0", "c": "1"}), ("bob", {"a": "0", "b": "0"})):
        f = LabelFile.open(out, name)
        for t, v in labels.items():
            f.set(t, v)
    LabelFile.open(out, "final").set("a", "1")            # the dispute settled; b agreed; c one annotator's
    final = out / "labels.final.json"
    assert len(read_label_file(final)) == 1
    review = LabelSession(out, "me", review=True)
    assert review.summary_line() == (f"3 of 4 tasks have a final label (1 set in {final}, 2 by the annotators' "
                                     f"consensus)")
    assert LabelSession(out, "bob").summary_line() == f"2 of 4 tasks labelled in {out / 'labels.bob.json'}"
