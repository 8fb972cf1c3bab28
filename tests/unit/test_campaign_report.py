"""`report` on a campaign's folder: its lanes read as runs, named by arm and repeat, the arms compared repeat by
repeat, each arm's repeats (always / sometimes / never, pass^k, mean and spread) and the pairing gaps from the
records' starts; hand-checked numbers, the edges (a lane not started, a task one lane lacks, an errored unit), and
the command as a real process in every format."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.campaign_folder import PLAN_FILE, LaneName, lane_name
from om2w_tui.engine.pairing import pairing_words
from om2w_tui.evaluation.agreement import pass_k, pooled, repeats
from om2w_tui.evaluation.campaign_report import pairing_gaps, read_lanes
from om2w_tui.evaluation.campaign_summary import Pairing
from om2w_tui.evaluation.outcomes import RULE_ALL, RULE_EXECUTABLE
from om2w_tui.evaluation.text_formats import fmt_seconds
from tests.unit.helpers import PLAN, REPO, make_campaign, make_run, record, write_plan


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om2w_tui", "report", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


# ------------------------------------------------------------------------------------------ the numbers


def test_pass_k_is_tau_bench_s_estimate():
    # 4 tasks tried 2 times, solved 2, 1, 0, 0 times: pass^1 = 3/8, pass^2 = 1/4 (only the first task every time);
    # pass@2 = 1/2 (two tasks solved at least once)
    hat, at = pass_k([2, 1, 0, 0], 2)
    assert hat == pytest.approx((3 / 8, 1 / 4)) and at == pytest.approx((3 / 8, 1 / 2))
    # 3 tries, a task solved twice: pass^2 = C(2,2)/C(3,2) = 1/3, pass@2 = 1 - C(1,2)/C(3,2) = 1
    hat, at = pass_k([2], 3)
    assert hat == pytest.approx((2 / 3, 1 / 3, 0.0)) and at == pytest.approx((2 / 3, 1.0, 1.0))
    assert pass_k([], 3) == ((), ())


def test_repeats_count_always_sometimes_never_under_both_rules():
    runs = [{"t0": "success", "t1": "success", "t2": "failure", "t3": "not_executable"},
            {"t0": "success", "t1": "failure", "t2": "failure", "t3": "failure"}]
    over_all = repeats(runs, ["r1", "r2"], RULE_ALL, arm="base")
    assert (over_all.tasks, over_all.always, over_all.sometimes, over_all.never) == (4, 1, 1, 2)
    assert over_all.pass_all == pytest.approx(0.25) and over_all.pass_any == pytest.approx(0.5)
    assert over_all.spread.mean == pytest.approx(0.375) and over_all.arm == "base"
    # not executable in one repeat: the task is left out of the executable rule's counts
    executable = repeats(runs, ["r1", "r2"], RULE_EXECUTABLE)
    assert (executable.tasks, executable.always, executable.sometimes, executable.never) == (3, 1, 1, 1)
    assert executable.pass_all == pytest.approx(1 / 3)


def gaps_of(camp: Path) -> Pairing:
    """The campaign's pairing gaps as `report` reads them: its lanes, the widest named as the report names them."""
    lanes = read_lanes(camp)
    return pairing_gaps([(lane.lane, lane.out) for lane in lanes], {lane.lane.name: lane.shown for lane in lanes})


def test_the_pairing_gap_is_between_the_units_compared_and_the_span_over_every_lane(tmp_path):
    p = gaps_of(make_campaign(tmp_path / "c"))
    # compared pairs (agent rK against base rK): t0 30, 50; t1 10, 10; t2 0, 2500-2100 = 400; t3 0, 0
    assert (p.pairs.n, p.left_out, p.compared, p.lanes) == (8, 0, 2, 4)
    assert p.pairs.median_s == pytest.approx(10.0) and p.pairs.p90_s == pytest.approx(155.0)
    assert p.pairs.worst_s == 400.0
    assert [(g.task_id, g.gap_s, g.first, g.last) for g in p.largest] == [
        ("t2", 400.0, "agent r2", "base r2"), ("t0", 50.0, "base r2", "agent r2"), ("t0", 30.0, "base r1", "agent r1"),
        ("t1", 10.0, "base r1", "agent r1"), ("t1", 10.0, "base r2", "agent r2"), ("t2", 0.0, "base r1", "agent r1"),
        ("t3", 0.0, "base r1", "agent r1"), ("t3", 0.0, "base r2", "agent r2")]
    # the span, every lane's units of a task: t0 300-100 = 200, t1 30, t2 2500-2000 = 500, t3 0
    assert p.span.n == 4 and p.span.median_s == pytest.approx(115.0) and p.span.p90_s == pytest.approx(410.0)
    assert p.span.worst_s == 500.0


def test_the_lanes_are_ordered_by_arm_then_repeat_and_named_by_both(tmp_path):
    camp = make_campaign(tmp_path / "c")
    assert [(lane.lane.name, lane.shown) for lane in read_lanes(camp)] == [
        ("base", "base r1"), ("base-r2", "base r2"), ("agent", "agent r1"), ("agent-r2", "agent r2")]
    one = make_campaign(tmp_path / "one", {k: v for k, v in PLAN.items() if k[1] == 1})
    assert [lane.shown for lane in read_lanes(one)] == ["base", "agent"]


def test_gaps_leave_out_what_a_lane_has_not_settled(tmp_path):
    out = tmp_path / "c"
    a = make_run(out / "a", [record("t0", started_at=10, finished_at=20), record("t1", started_at=10, finished_at=20),
                             record("t2", started_at=10, finished_at=20), record("t3", started_at=10, finished_at=20),
                             record("t4", started_at=10, finished_at=20)])
    b = make_run(out / "b", [
        # t0: a settled attempt, then one stopped under it (not settled): the settled one's start counts
        record("t0", started_at=15, finished_at=30),
        record("t0", "killed", error="interrupted", started_at=99, finished_at=120, attempt=2),
        # t1: only a harness error (infra: retried, never settled): left out
        record("t1", "error", error="browser crashed", error_kind="infra", started_at=40, finished_at=50),
        # t2: a model error is the model's own: settled, measured
        record("t2", "error", error="context length", error_kind="model", started_at=70, finished_at=80),
        # t3: a record written with no start: left out; t4: not in this lane at all
        {k: v for k, v in record("t3", finished_at=90).items() if k != "started_at"},
    ])
    a_, b_, later = LaneName("a", "a", 1), LaneName("b", "b", 1), LaneName("later", "later", 1)
    p = pairing_gaps([(a_, a), (b_, b)])
    assert (p.pairs.n, p.left_out) == (2, 3)
    assert sorted((g.task_id, g.gap_s) for g in p.largest) == [("t0", 5.0), ("t2", 60.0)]
    # a lane with no folder yet: no pair has both units
    none = pairing_gaps([(a_, a), (later, out / "later")])
    assert (none.pairs.n, none.left_out, none.pairs.median_s, none.largest) == (0, 5, None, ())
    # one lane alone has nothing to pair
    assert pairing_gaps([(a_, a)]).pairs.n == 0


def test_one_arm_s_repeats_have_a_span_and_no_pair(tmp_path):
    camp = make_campaign(tmp_path / "c", {k: v for k, v in PLAN.items() if k[0] == "base"})
    p = gaps_of(camp)
    assert (p.pairs.n, p.compared, p.span.n, p.span.worst_s) == (0, 0, 4, 500.0)
    assert pairing_words(p.gaps(), fmt_seconds) == ("pairing gap: no arms compared (one arm); a task's span over its "
                                                    "2 units: median 85 s, worst 8.3 min")
    md = report(str(camp), "--format", "md").stdout
    assert "| compared pairs (none: one arm) | 0 | - | - | - |" in md
    assert "| a task's span over its 2 units | 4 | 85 s | 6.6 min | 8.3 min |" in md


# ------------------------------------------------------------------------------------------ the command


def test_report_on_a_campaign_names_the_lanes_compares_the_arms_and_sums_up_each_arm_s_repeats(tmp_path):
    camp = make_campaign(tmp_path / "c")
    done = report(str(camp), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["name"] for r in data["runs"]] == ["base r1", "base r2", "agent r1", "agent r2"]
    c = data["compare"]
    assert c["runs"] == ["base r1", "base r2", "agent r1", "agent r2"] and c["baseline"] == "base r1"
    # each arm against the first, repeat by repeat, under both rules
    tests = [(t["a"], t["b"], t["rule"]) for t in c["tests"]]
    assert tests == [("agent r1", "base r1", "over all"), ("agent r1", "base r1", "executable"),
                     ("agent r2", "base r2", "over all"), ("agent r2", "base r2", "executable")]
    first = c["tests"][0]
    assert (first["only_a_tasks"], first["only_b_tasks"], first["mcnemar_p"]) == (["t2"], [], 1.0)
    second = c["tests"][2]
    assert second["only_a_tasks"] == ["t1", "t3"] and second["mcnemar_p"] == pytest.approx(0.5)
    reps = {(r["arm"], r["rule"]): r for r in c["repeats"]}
    base, agent = reps[("base", "over all")], reps[("agent", "over all")]
    assert (base["always"], base["sometimes"], base["never"]) == (1, 1, 2)
    assert base["pass_hat"][-1] == pytest.approx(0.25) and base["pass_at"][-1] == pytest.approx(0.5)
    assert base["mean"] == pytest.approx(0.375) and base["stdev"] == pytest.approx(0.1767767)
    assert (base["lowest"], base["highest"]) == (0.25, 0.5)
    assert (agent["always"], agent["sometimes"], agent["never"]) == (2, 2, 0)
    assert agent["pass_hat"] == pytest.approx([0.75, 0.5]) and agent["stdev"] == 0.0
    camp_json = c["campaign"]
    assert camp_json["arms"] == ["base", "agent"] and [x["name"] for x in camp_json["lanes"]] == [
        "base", "base-r2", "agent", "agent-r2"]
    pairing = camp_json["pairing"]
    assert pairing["pairs"]["median_s"] == pytest.approx(10.0) and pairing["pairs"]["worst_s"] == 400.0
    assert pairing["span"]["median_s"] == pytest.approx(115.0) and pairing["span"]["worst_s"] == 500.0
    # a plain comparison's JSON keeps its keys: `campaign` only for a campaign
    plain = report(str(camp / "base"), str(camp / "agent"), "--format", "json")
    assert "campaign" not in json.loads(plain.stdout)["compare"]


def test_every_format_says_the_repeats_and_the_gap(tmp_path):
    camp = make_campaign(tmp_path / "c")
    md = report(str(camp), "--format", "md")
    assert md.returncode == 0, md.stderr
    text = md.stdout
    assert "### campaign " in text and "| base-r2 | base | 2 |" in text
    assert "### each arm against base, repeat by repeat" in text
    assert "### repeats of each arm" in text and "| base | reference answers | over all | 2 |" in text
    assert "| 1 | 1 | 2 | 25.0% | 50.0% |" in text            # always, sometimes, never, pass^k, pass@k
    assert "| compared pairs | 8 | 10 s | 2.6 min | 6.7 min |" in text   # the pairing gap: n, median, p90, worst
    assert "| a task's span over its 4 units | 4 | 115 s | 6.8 min | 8.3 min |" in text
    assert "| t2 | 6.7 min | agent r2 | base r2 |" in text
    table = report(str(camp))
    assert table.returncode == 0 and "repeats of each arm" in table.stdout and "pairing gap" in table.stdout
    assert "agent r2" in table.stdout
    rows = list(csv.DictReader(io.StringIO(report(str(camp), "--format", "csv").stdout)))
    assert {"run": "base", "section": "repeats by reference answers", "group": "over all", "metric": "pass^k",
            "value": "0.25"}.items() <= next(r for r in rows if r["run"] == "base" and r["metric"] == "pass^k").items()
    gap = {(r["group"], r["metric"]): r["value"] for r in rows if r["section"] == "pairing gap"}
    assert (gap[("pairs", "median_s")], gap[("span", "median_s")], gap[("pairs", "left_out")]) == ("10.0", "115.0", "0")
    assert any(r["section"] == "campaign lane" and r["group"] == "agent-r2" for r in rows)


def test_a_lane_not_started_is_named_and_left_out(tmp_path):
    plan = {**PLAN, ("agent", 3): {}}          # planned, nothing run in it yet
    camp = make_campaign(tmp_path / "c", {k: v for k, v in plan.items() if k != ("agent", 3)})
    write_plan(camp, list(plan))
    done = report(str(camp), "--format", "json")
    assert done.returncode == 0, done.stderr
    c = json.loads(done.stdout)["compare"]
    assert "agent r3" not in c["runs"] and len(c["runs"]) == 4
    lanes = {x["name"]: x for x in c["campaign"]["lanes"]}
    assert lanes["agent-r3"]["started"] is False and lanes["agent"]["started"] is True
    # agent r3 has settled nothing: the other lanes' pairs are measured, no task's span yet
    assert c["campaign"]["pairing"]["pairs"]["n"] == 8 and c["campaign"]["pairing"]["span"]["n"] == 0
    assert "not started yet" in report(str(camp), "--format", "md").stdout
    # a task one lane lacks: left out of the gap, and of the paired tests' tasks
    camp2 = make_campaign(tmp_path / "c2", {**PLAN, ("agent", 2): {k: v for k, v in PLAN[("agent", 2)].items()
                                                                   if k != "t3"}})
    c2 = json.loads(report(str(camp2), "--format", "json").stdout)["compare"]
    assert c2["campaign"]["pairing"]["pairs"]["n"] == 7 and c2["campaign"]["pairing"]["left_out"] == 1
    assert c2["tests"][2]["n"] == 3


def test_what_does_not_go_with_a_campaign_is_refused_naming_it(tmp_path):
    camp = make_campaign(tmp_path / "c")
    other = make_run(tmp_path / "run", [record("t0", correct=True)])
    for args, says in (([str(camp), str(other)], "is a campaign's folder: give it alone"),
                       ([str(other), str(camp)], "is a campaign's folder: give it alone"),
                       ([str(camp), "--repeats"], "its repeats are its plan's"),
                       ([str(camp), "--ui"], "give one of its lanes, e.g."),
                       ([str(camp), "--labels", str(other / "x.json")], "--labels goes with run folders"),
                       ([str(camp), "--judged", str(other / "j.json")], "--judged and --tasks go with --labels"),
                       ([str(camp), "--html", str(camp / "base" / "site")], "inside the run folder")):
        done = report(*args)
        assert done.returncode == 2 and says in done.stderr and done.stdout == "", (args, done.stderr)
    assert not (camp / "base" / "site").exists()


def test_a_malformed_campaign_json_is_refused_naming_it(tmp_path):
    camp = make_campaign(tmp_path / "c")
    (camp / PLAN_FILE).write_text(json.dumps({"format": 1, "lanes": [{"name": "x", "arm": "y", "repeat": 1}]}))
    done = report(str(camp))
    assert done.returncode == 2 and f"{camp / PLAN_FILE}: lane #1" in done.stderr and done.stdout == ""
    (camp / PLAN_FILE).write_text("{not json")
    done = report(str(camp), "--format", "json")
    assert done.returncode == 2 and str(camp / PLAN_FILE) in done.stderr
    empty = tmp_path / "empty"
    write_plan(empty, [("base", 1), ("agent", 1)])
    done = report(str(empty))
    assert done.returncode == 2 and "none of whose lanes (base, agent) has a task yet" in done.stderr


def test_the_site_of_a_campaign_shows_its_lanes_each_arm_s_repeats_and_the_gap(tmp_path):
    camp = make_campaign(tmp_path / "c")
    site = camp / "site"                 # beside the lanes, inside none of them: allowed
    done = report(str(camp), "--html", str(site))
    assert done.returncode == 0, done.stderr
    index, compare = (site / "index.html").read_text(), (site / "compare.html").read_text()
    for page in (index, compare):
        assert 'id="campaign"' in page and 'data-lane="agent-r2"' in page
        assert 'data-repeats="base|over all" data-always="1" data-sometimes="1" data-never="2"' in page
        assert 'data-pairing="median" data-value="10.0">10 s<' in page
        assert 'data-pairing="span" data-value="115.0">115 s<' in page
        assert "<th>t2</th><td>6.7 min</td><td>agent r2</td><td>base r2</td>" in page
        assert 'data-pooled="agent|over all" data-difference="0.375"' in page and "+37.5 pp [-2.3, +77.3]" in page
    # each test's difference and interval in percentage points, as the text report writes them (never [x%, y%])
    diffs = re.findall(r'data-check="diff">([^<]*)<', compare)
    assert diffs and all(re.fullmatch(r"[+-]\d+\.\d pp \[[+-]\d+\.\d, [+-]\d+\.\d\]", d) for d in diffs), diffs
    assert set(diffs) <= set(re.findall(r"[+-]\d+\.\d pp \[[^\]]*\]", report(str(camp)).stdout))
    # the tests are repeat by repeat: agent r2 against base r2, the tasks only agent r2 solved linked
    assert "agent r2 against base r2" in compare and re.search(r'href="r4/t/t3\.html">t3</a>', compare)
    assert [p.name for p in sorted(site.iterdir()) if p.name.startswith("r")] == ["r1", "r2", "r3", "r4"]
    # a plain comparison's pages have no campaign part
    plain = tmp_path / "plain"
    assert report(str(camp / "base"), str(camp / "agent"), "--html", str(plain)).returncode == 0
    assert 'id="campaign"' not in (plain / "index.html").read_text()


# ------------------------------------------------------------------------------------------ tasks health, label


def health_campaign(out: Path) -> Path:
    """Arms qwen (two repeats) and lora (its second repeat not started), every lane's run.json saying arm `base`:
    `wall` met a bot wall in every lane that ran it."""
    write_plan(out, [("qwen", 1), ("lora", 1), ("qwen", 2), ("lora", 2)])
    for lane in ("qwen", "qwen-r2", "lora"):
        make_run(out / lane, [record("ok", correct=True, answer="$12"),
                              record("wall", "blocked", error="CAPTCHA", agent_done=False, correct=False)])
    return out


def health_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om2w_tui", "tasks", "health", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_tasks_health_reads_a_campaign_as_its_lanes_named_by_arm_and_repeat(tmp_path):
    from om2w_tui.evaluation.health import health, run_folders

    camp = health_campaign(tmp_path / "c")
    h = health([camp])
    assert [(r.lane, r.arm, r.tasks, r.measure) for r in h.runs] == [
        ("qwen r1", "qwen", 2, "reference answers"), ("qwen r2", "qwen", 2, "reference answers"),
        ("lora r1", "lora", 2, "reference answers"), ("lora r2", "lora", 0, "not started yet")]
    assert h.by_arm      # the campaign's arms, not run.json's `base`
    wall = next(t for t in h.tasks if t.task_id == "wall")
    assert wall.arms() == {"qwen": {"bot_wall": 2}, "lora": {"bot_wall": 1}}
    assert [c.task_id for c in h.candidates] == ["wall"]
    assert [a.lane for a in wall.evidence] == ["qwen r1", "qwen r2", "lora r1"]
    # a lane given beside its campaign is read once, named by its arm and repeat
    assert [r.lane for r in health([camp / "qwen", camp]).runs][:2] == ["qwen r1", "qwen r2"]
    assert run_folders([camp]) == [camp / "qwen", camp / "qwen-r2", camp / "lora"]
    text = health_cli(str(camp))
    assert text.returncode == 0, text.stderr
    assert f"{camp / 'qwen-r2'} attempt 1 (qwen r2): bot wall" in text.stdout and "not started yet" in text.stdout
    data = json.loads(health_cli(str(camp), "--format", "json").stdout)
    assert [r["lane"] for r in data["runs"]] == ["qwen r1", "qwen r2", "lora r1", "lora r2"]
    rows = list(csv.DictReader(io.StringIO(health_cli(str(camp), "--format", "csv").stdout)))
    assert {r["lane"] for r in rows} == {"qwen r1", "qwen r2", "lora r1"}


def test_tasks_health_and_label_refuse_a_malformed_campaign_naming_its_plan(tmp_path):
    camp = health_campaign(tmp_path / "c")
    (camp / PLAN_FILE).write_text(json.dumps({"format": 1, "lanes": [{"name": "qwen", "arm": "qwen"}]}))
    for argv in (["tasks", "health", str(camp)], ["label", str(camp)]):
        done = subprocess.run([sys.executable, "-m", "om2w_tui", *argv], cwd=REPO, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and f"{camp / PLAN_FILE}: lane #1 is not" in done.stderr, (argv, done.stderr)
        assert done.stdout == ""


def test_label_judge_and_check_on_a_campaign_name_its_lanes_to_pick_and_write_nothing(tmp_path):
    camp = health_campaign(tmp_path / "c")
    before = sorted(p.relative_to(camp).as_posix() for p in camp.rglob("*"))
    for command, extra in (("label", []), ("label", ["--export", str(tmp_path / "h.json"), "--agent", "qwen"]),
                           ("judge", ["--judge-model", "m", "--judge-url", "http://127.0.0.1:9/v1"]),
                           ("check", [])):
        done = subprocess.run([sys.executable, "-m", "om2w_tui", command, str(camp), *extra], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stdout == "", (command, done.stderr)
        assert (f"{camp} is a campaign's folder: {command} one of its lanes at a time (qwen, qwen-r2, lora, "
                f"lora-r2), e.g. `om2w-tui {command} {camp / 'qwen'}`") in done.stderr, (command, done.stderr)
    assert sorted(p.relative_to(camp).as_posix() for p in camp.rglob("*")) == before
    assert not (tmp_path / "h.json").exists()


def test_each_arm_against_the_first_over_all_its_repeats_is_paired_by_task_with_a_t_interval(tmp_path):
    """PLAN's shares of repeats solved, over all: base t0 1, t1 1/2, t2 0, t3 0 (mean 3/8); agent 1, 1, 1/2, 1/2 (3/4);
    per task agent - base: 0, 1/2, 1/2, 1/2: mean 3/8, sd 1/4, se 1/8, t(3) 3.182 -> [-0.023, +0.773]."""
    c = json.loads(report(str(make_campaign(tmp_path / "c")), "--format", "json").stdout)["compare"]
    pooled = {p["rule"]: p for p in c["pooled"]}
    p = pooled["over all"]
    assert (p["a"], p["b"], p["a_runs"], p["b_runs"], p["tasks"]) == ("agent", "base", ["agent r1", "agent r2"],
                                                                     ["base r1", "base r2"], 4)
    assert (p["a_mean"], p["b_mean"], p["difference"], p["se"]) == pytest.approx((0.75, 0.375, 0.375, 0.125))
    assert (p["low"], p["high"]) == pytest.approx((0.375 - 3.1824463 * 0.125, 0.375 + 3.1824463 * 0.125))
    assert (p["better"], p["worse"]) == (3, 0)
    md = report(str(make_campaign(tmp_path / "c2")), "--format", "md").stdout
    assert "### each arm against the first over all its repeats" in md
    row = "| agent | base | reference answers | over all | 2 / 2 | 4 | 75.0% | 37.5% | +37.5 pp [-2.3, +77.3] | 3 | 0 |"
    assert row in md
    # one repeat each: the per-repeat tests say it all, nothing pooled
    one = make_campaign(tmp_path / "one", {k: v for k, v in PLAN.items() if k[1] == 1})
    assert "pooled" not in json.loads(report(str(one), "--format", "json").stdout)["compare"]


def test_the_pooled_interval_stays_within_a_hundred_points_either_way():
    """Three tasks, two repeats each, the weak arm failing one of them in both: the t interval (t = 4.30 on 2
    degrees of freedom) would reach -176.8 / +110.1 pp; a difference of two rates lies in [-1, 1], so it is clipped
    there once, and every view reads the clipped one."""
    good = {"t1": "success", "t2": "success", "t3": "success"}
    weak = {"t1": "success", "t2": "success", "t3": "failure"}
    p = pooled([weak, weak], [good, good], RULE_ALL, "weak", "good", ["weak r1", "weak r2"], ["good r1", "good r2"])
    d = p.difference
    assert (d.n, d.mean) == (3, pytest.approx(-1 / 3))
    assert (d.low, d.high) == (-1.0, 1.0)
    lopsided = {"t1": "failure", "t2": "failure", "t3": "success"}
    q = pooled([good], [lopsided], RULE_ALL, "good", "lop", ["good r1"], ["lop r1"]).difference
    assert q.low is not None and q.high == 1.0 and -1.0 < q.low < q.mean


def test_the_headless_end_says_each_arm_over_all_its_repeats_by_the_live_judge(tmp_path):
    """A campaign judged as it went, headless: after each repeat's test, each arm against the first over both
    repeats by the judge's verdicts (here the reference answers' PLAN, judged alike: +37.5 pp over 4 tasks)."""
    from types import SimpleNamespace

    from om2w_tui.frontends.headless import judge_lines

    camp = make_campaign(tmp_path / "c")
    name = "om2w-tui_WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json"
    lanes = []
    for (arm, k), tasks in PLAN.items():
        out = camp / lane_name(arm, k)
        (out / name).write_text("".join(json.dumps({"task_id": t, "predicted_label": int(ok)}) + "\n"
                                        for t, (ok, _) in tasks.items()))
        lanes.append(SimpleNamespace(name=lane_name(arm, k), arm=arm, repeat=k,
                                     pre=SimpleNamespace(config=SimpleNamespace(out=out))))
    pre = SimpleNamespace(config=SimpleNamespace(out=camp), lanes=lanes)
    said = judge_lines(pre, name)   # type: ignore[arg-type]  (the parts of a Preflight it reads)
    assert ("judge webjudge/o4-mini: agent - base over 2 and 2 repeats (over all, 4 tasks, paired by task): "
            "+37.5 pp [-2.3, +77.3], solved more often 3, less often 0") in said, said


def test_a_judge_file_that_is_no_file_is_named_for_what_it_is(tmp_path):
    out = make_run(tmp_path / "run", [record("t0", correct=True)])
    fifo = tmp_path / "verdicts.json"
    os.mkfifo(fifo)
    for given, says in ((tmp_path / "none.json", "no such judge file"), (fifo, "a FIFO, a device or a socket"),
                        (tmp_path, "not a file but a folder")):
        done = report(str(out), "--judge", str(given))
        assert done.returncode == 2 and str(given) in done.stderr and says in done.stderr, done.stderr


def test_a_labels_or_judge_file_that_is_no_regular_file_is_named_never_passed_over(tmp_path):
    """A FIFO (or a link to a device) by a labels file's or a judge file's name was left out of the report in
    silence, and its annotator's labels or its verdicts with it; each is named now, exit 2."""
    out = make_run(tmp_path / "run", [record("t0", correct=True)])
    labels = out / "labels.bob.json"
    os.mkfifo(labels)
    done = report(str(out))
    assert done.returncode == 2 and f"{labels}: is not a regular file" in done.stderr, done.stderr
    labels.unlink()
    labels.symlink_to("/dev/zero")
    done = report(str(out))
    assert done.returncode == 2 and f"{labels}: is a symbolic link" in done.stderr, done.stderr
    labels.unlink()
    judged = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_m_score_threshold_3_auto_eval_results.json"
    os.mkfifo(judged)
    done = report(str(out))
    assert done.returncode == 2 and str(judged) in done.stderr and "not a regular file" in done.stderr, done.stderr
