"""A campaign end to end, headless, with the real worker, real Chromium, the offline sites on 127.0.0.1 and the oracle:
two arms (`oracle` and `oracle-weak`, which fails 3 of the 19 tasks) over three tasks, judged as they go (the oracle's
judge mode on 127.0.0.1), killed with SIGKILL after its first settled unit and run again with the same command. Each
lane's folder is a complete run folder the official evaluator reads, every unit settled once in its own lane and
judged once into its lane's folder, a task's units one after another on its site, the arms compared on the judge at
the end, and a plan that changes a lane under the folder is refused."""

from __future__ import annotations

import json
import re
import signal
import time
from collections import defaultdict
from typing import Any

import pytest

from om2w_tui.benchmarks.conformance import check_run
from om2w_tui.engine.campaign_launch import campaign_preflight
from om2w_tui.engine.events import RunFinished
from om2w_tui.engine.plan import read_plan, resolve
from om2w_tui.evaluation.judge_files import read_judged
from om2w_tui.offline.oracle import OracleServer, weak_fails
from om2w_tui.offline.suite import load_task_templates
from tests.fakes import Recorder
from tests.ui.pilots import app_exits, make_app, until

from .helpers import Lines, assert_settled_once, cli, popen, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
# two tasks on the booking site (their units must not interleave there) and one on the shop; oracle-weak fails the
# reservation
IDS = ["offline_booking_rates_11", "offline_booking_reserve_12", "offline_shop_search_01"]
PLAN = """\
bench = "offline"
task-ids = {ids}
out = "{out}"
workers = 2
pace_cooldown = 0.5
retries = 0

{judge}
[arms.good]
model = "oracle"

[arms.weak]
model = "oracle-weak"
"""


# the campaign's one live judge, for every arm (its key's variable named; the key itself never written)
# (shown the agent's answer as its claim: the oracle judge sees no pixels, so in plain WebJudge it fails every task)
JUDGE = """judge-url = "{url}"
judge-model = "oracle-judge"
judge-mode = "webjudge-answer"
judge-api-key-env = "OM2W_TEST_JUDGE_KEY"
"""
JUDGE_FILE = "om2w-tui_WebJudge_Online_Mind2Web_eval_answer_oracle-judge_score_threshold_3_auto_eval_results.json"
SECRET = "sk-judge-secret-7f3a"


@pytest.fixture
def judge(monkeypatch):
    monkeypatch.setenv("OM2W_TEST_JUDGE_KEY", SECRET)   # the campaign's processes inherit it
    with OracleServer(load_task_templates()) as server:
        yield server


def test_a_two_arm_campaign_killed_and_run_again_settles_every_unit_once_in_its_lane_paired_on_its_site(tmp_path,
                                                                                                         judge):
    out = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(ids=json.dumps(IDS), out=out, judge=JUDGE.format(url=judge.url)))
    tasks = {t["task_id"]: t for t in load_task_templates()}
    assert [weak_fails(tasks[i]) for i in IDS] == [False, True, False]   # the arms really differ on one task

    first = popen("campaign", str(plan), "--no-ui")
    lines = Lines(first)
    lines.wait_for("progress: ", timeout=240)   # a unit ended in some lane: the campaign killed once it is on disk
    deadline = time.monotonic() + 60
    while not any(records(out / lane) for lane in ("good", "weak")) and time.monotonic() < deadline:
        time.sleep(0.05)   # the record's writer is in the run's own thread: nothing to await from here
    for folder in (out, out / "weak"):   # ctl reaches the campaign by its folder and by a lane's
        status = cli("ctl", str(folder), "status", "--json", timeout=60)
        assert status.returncode == 0 and json.loads(status.stdout)["total"] == 2 * len(IDS), status.stderr
        assert '"end": "' not in status.stdout   # running: no end said (it said "finished")
    killed_at = time.time()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    settled_before = sum(len(records(out / lane)) for lane in ("good", "weak"))
    assert 1 <= settled_before < 2 * len(IDS), "".join(lines.seen)  # killed mid-campaign, something settled
    written = json.loads((out / "campaign.json").read_text())
    assert [(x["name"], x["arm"], x["repeat"]) for x in written["lanes"]] == [("good", "good", 1), ("weak", "weak", 1)]

    again = cli("campaign", str(plan), "--no-ui", timeout=360)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "lane good (arm good, repeat 1): 3/3 done" in again.stdout, again.stdout[-3000:]
    assert "lane weak (arm weak, repeat 1): 3/3 done" in again.stdout
    assert f"campaign: {len(IDS)} tasks x 2 lanes = {2 * len(IDS)} units, " in again.stdout
    # each lane's verdicts over all its units, those settled before the kill included (only this run's, before)
    assert re.search(r"lane good \(arm good, repeat 1\): [^;]*correct 3 of 3", again.stdout), again.stdout[-3000:]
    assert re.search(r"lane weak \(arm weak, repeat 1\): [^;]*correct 2 of 3", again.stdout), again.stdout[-3000:]
    assert "\ncorrect: " not in again.stdout      # never both arms' verdicts summed in one line
    stopped = cli("ctl", str(out), "status", timeout=60)   # over: start it again by its plan
    assert stopped.returncode == 2 and "`om2w-tui campaign PLAN.toml`" in stopped.stderr, stopped.stderr
    assert "pairing gap over" in again.stdout
    assert sum(int(n) for n in re.findall(r"3/3 done \((\d+) before\)", again.stdout)) == settled_before
    # the judge: each lane judged into its own folder, each unit once over the kill (judged then or at this start),
    # and the arms compared on its verdicts once it is done
    for lane in ("good", "weak"):
        assert sorted(read_judged(out / lane / JUDGE_FILE)) == sorted(IDS), lane
        assert len((out / lane / JUDGE_FILE).read_text().splitlines()) == len(IDS), lane
    # the judge sees good's three answers right and weak's wrong one on the reservation
    assert re.search(r"judge webjudge-answer/oracle-judge: good: over all 100.0% \(3/3\) \[[\d.]+, [\d.]+\], "
                     r"executable [^;]+; 0 not judged", again.stdout), again.stdout[-3000:]
    assert re.search(r"judge webjudge-answer/oracle-judge: weak: over all 66.7% \(2/3\) ", again.stdout)
    assert re.search(r"judge webjudge-answer/oracle-judge: weak - good \(over all, 3 tasks\): -33.3 pp", again.stdout)
    assert "warning: judge" not in again.stdout and "error: judge" not in again.stdout
    assert not [f for f in out.rglob("*") if f.is_file() and SECRET.encode() in f.read_bytes()]
    report = cli("report", str(out), "--format", "json", "--no-per-task", timeout=120)   # reads them as a run's
    assert report.returncode == 0, report.stderr
    measures = [r["measure"]["name"] for r in json.loads(report.stdout)["runs"]]
    assert measures == ["judge webjudge-answer/oracle-judge"] * 2

    by_lane: dict[str, list[dict[str, Any]]] = {}
    for lane in ("good", "weak"):
        assert check_run(out / lane) == [], lane                   # what the official evaluator reads, as a run's
        rows = records(out / lane)
        assert_settled_once(rows, IDS, out / lane)                  # nothing settled ran twice, every unit settled
        assert {r["task_id"] for r in rows} == set(IDS)
        assert (out / lane / "run.json").is_file()
        by_lane[lane] = rows
    latest = {lane: {r["task_id"]: r for r in rows} for lane, rows in by_lane.items()}
    assert [latest["good"][i]["correct"] for i in IDS] == [True, True, True]
    assert [latest["weak"][i]["correct"] for i in IDS] == [True, False, True]

    # the units of one task one after another on its site: in each start of the campaign, no other task's unit
    # started on that site between the first and the last of a task's units
    for before in (True, False):
        on_site: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for rows in by_lane.values():
            for r in rows:
                if (float(r.get("started_at") or 0) < killed_at) == before:
                    on_site[tasks[r["task_id"]]["website"]].append((float(r["started_at"]), r["task_id"]))
        for site, units in on_site.items():
            order = [tid for _, tid in sorted(units)]
            runs = [tid for k, tid in enumerate(order) if k == 0 or order[k - 1] != tid]
            assert len(runs) == len(set(runs)), (site, order)

    # a plan that changes what a lane measures under this folder: refused, naming what changed; nothing written
    plan.write_text(PLAN.format(ids=json.dumps(IDS), out=out, judge="").replace('"oracle-weak"', '"oracle-slow-1"'))
    kept = (out / "campaign.json").read_text()
    refused = cli("campaign", str(plan), "--no-ui", timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "weak: model 'oracle-weak' -> 'oracle-slow-1'" in refused.stderr
    assert (out / "campaign.json").read_text() == kept


async def test_the_console_opens_a_campaign_and_runs_it_to_the_end(tmp_path):
    out = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(ids=json.dumps(IDS[2:]), out=out, judge=""))
    pre = campaign_preflight(resolve(read_plan(plan)))
    rec = Recorder()
    app = make_app(pre, image_renderer="unicode", last_launch=None, sinks=[rec])   # the same app as `run` opens
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "the campaign's end", lambda: rec.of(RunFinished), timeout=240)
        await pilot.press("q")
        await app_exits(app)
    assert app.return_code == 0
    summary = rec.of(RunFinished)[0].summary
    assert [(lane.name, lane.done) for lane in summary.lanes] == [("good", 1), ("weak", 1)]
    for lane in ("good", "weak"):
        assert [r["task_id"] for r in records(out / lane)] == IDS[2:] and check_run(out / lane) == []
