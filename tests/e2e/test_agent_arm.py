"""--arm agent: a planner delegating to specialist browser-use Agents, the oracle playing both, for real."""

from __future__ import annotations

import json

import pytest

from .helpers import check_task_folder, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_the_planner_runs_the_offline_suite_and_its_steps_merge_into_conforming_trajectories(tmp_path):
    from om2w_tui.benchmarks.conformance import check_run
    from om2w_tui.offline import TASKS_TEMPLATE

    out = tmp_path / "agent"
    ids = [t["task_id"] for t in json.loads(TASKS_TEMPLATE.read_text())]
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--arm", "agent", "--adapters", "rest,io",
            "--workers", "2", "--pace-cooldown", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    recs = {x["task_id"]: x for x in records(out)}     # the latest attempt of each
    assert set(recs) == set(ids)
    assert check_run(out) == []
    for tid in ids:
        rec = recs[tid]
        assert rec["arm"] == "agent" and rec["status"] == "done" and rec["correct"], rec
        folder = out / tid
        res = check_task_folder(folder)
        assert res["action_history"] and not any("delegate" in a.lower() for a in res["action_history"])
        trace = json.loads((folder / "subtasks.json").read_text())["trace"]
        assert [(t["family"], t["model"], t["done"]) for t in trace] == [("rest", "rest", True)]
        turns = json.loads((folder / "planner_history.json").read_text())["turns"]
        assert [t["decision"]["decision"] for t in turns] == ["delegate", "answer"]
        assert turns[0]["ended_at"] <= trace[0]["started_at"] <= trace[0]["ended_at"] <= turns[1]["started_at"]
        assert (folder / "history_0.json").exists()
        # the planner's looks (before delegating, before answering) are screenshots too, merged in order; the
        # final state is its last look's page, not written twice
        assert rec["screenshots"] == rec["steps"] + 2
    assert recs["offline_wiki_port_06"]["prompt_tokens"] > 0


def test_a_family_outside_the_adapters_uses_the_fallback_and_a_timeout_keeps_the_running_specialist(tmp_path):
    """The task takes its specialist 7 replies (35 s at 5 s each: it cannot finish in 30 s); the first action comes
    5 s after the browser is up, which a loaded machine (the whole suite in three processes) may take 20 s to reach:
    15 s against 3 s replies was not always enough there."""
    out = tmp_path / "agent-timeout"
    tid = "offline_shop_cart_05"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--arm", "agent", "--adapters", "none",
            "--fallback", "oracle-slow-5", "--task-ids", tid, "--timeout", "30", "--retries", "0",
            "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["status"] == "timeout" and rec["actions"] >= 1
    trace = json.loads((out / tid / "subtasks.json").read_text())["trace"]
    assert trace[0]["model"] == "oracle-slow-5" and trace[0].get("stopped") is True and trace[0]["steps"] >= 1
    assert (out / tid / "history_0.json").exists()
    check_task_folder(out / tid)
