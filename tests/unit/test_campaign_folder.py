"""A campaign's folder: its lanes' names (one run folder per arm and repeat) and the plan file that says a folder is
a campaign's, read back with a message naming the file for anything else."""

from __future__ import annotations

import json

import pytest

from om2w_tui.campaign_folder import CampaignFolder, arm_problem, is_campaign, lane_name
from om2w_tui.json_input import InputError
from om2w_tui.run_folder import RunFolder, what_is


def test_a_repeat_after_the_first_is_named_after_its_arm_and_an_arm_may_not_look_like_one():
    assert [lane_name("agent", k) for k in (1, 2, 3)] == ["agent", "agent-r2", "agent-r3"]
    assert arm_problem("base") == "" and arm_problem("my.lora_v2-final") == ""
    assert "may not end in -r<number>" in arm_problem("agent-r2")
    for bad in ("", ".hidden", "-x", "a/b", "a b", "x" * 65):
        assert arm_problem(bad), bad


def test_no_arm_may_be_named_as_a_file_the_campaigns_folder_keeps_whatever_its_case(tmp_path):
    """The folder is held as a run's too (its lock, control socket, workers' logs): every name either gives, for a
    whole campaign and a shard's, is refused as an arm (a lane's folder there would break the file), in any case."""
    camp = CampaignFolder(tmp_path)
    names = {camp.plan.name, camp.lock.name}
    for shard in ("", "1/3", "0:2/4"):
        run = RunFolder(tmp_path, shard)
        names |= {p.name for p in (run.results, run.manifest, run.lock, *run.shard_locks, run.folder_lock,
                                   run.socket, run.space_probe, run.worker_log(0), run.worker_log(17),
                                   run.labels("ann"), tmp_path / "x_auto_eval_results.json")}
    assert {"campaign.json", "worker_0.log", "worker_17.shard-1-of-3.log", "results.jsonl"} <= names
    for name in sorted(names):
        for shown in (name, name.upper()):
            assert arm_problem(shown), shown
    assert "campaign's own files" in arm_problem("campaign.json") and arm_problem("campaigns") == ""
    assert arm_problem("worker") == arm_problem("runner") == arm_problem("results") == ""


def test_arms_equal_but_for_case_are_one_folder_on_a_case_insensitive_disk():
    assert "the same as arm 'a' but for case" in arm_problem("A", ["a", "b"])
    assert "given twice" in arm_problem("b", ["a", "b"]) and arm_problem("c", ["a", "b"]) == ""


def test_the_plan_names_the_lanes_in_order_and_a_malformed_one_is_refused_naming_the_file(tmp_path):
    folder = CampaignFolder(tmp_path)
    assert not is_campaign(tmp_path)
    lanes = [{"name": "base", "arm": "base", "repeat": 1}, {"name": "agent", "arm": "agent", "repeat": 1},
             {"name": "base-r2", "arm": "base", "repeat": 2}]
    folder.plan.write_text(json.dumps({"format": 1, "lanes": lanes}))
    assert is_campaign(tmp_path)
    assert [(x.name, x.arm, x.repeat) for x in folder.lanes()] == [("base", "base", 1), ("agent", "agent", 1),
                                                                   ("base-r2", "base", 2)]
    assert folder.run_folders() == [tmp_path / "base", tmp_path / "agent", tmp_path / "base-r2"]
    for bad in ([{"name": "../x", "arm": "../x", "repeat": 1}], [{"name": "base-r2", "arm": "base", "repeat": 3}],
                [{"name": "b", "arm": "b", "repeat": True}], [{"arm": "b"}], "lanes"):
        folder.plan.write_text(json.dumps({"format": 1, "lanes": bad}))
        with pytest.raises(InputError, match="campaign.json"):
            folder.lanes()


def test_a_folder_that_holds_campaigns_is_named_so_by_every_reader_of_one_run(tmp_path):
    """`report runs/` where runs/ holds campaigns (their lanes one level deeper): a folder of campaigns, named, not
    "no results*.jsonl" (every reader of a run asks what_is)."""
    from tests.unit.helpers import make_campaign, make_run, record

    make_campaign(tmp_path / "camps" / "study1")
    make_campaign(tmp_path / "camps" / "study2")
    found = what_is(tmp_path / "camps")
    assert not found.is_run and found.problem() == (
        f"{tmp_path / 'camps'}: not a run but a folder of campaigns (2: study1, study2); give one of them, "
        f"e.g. {tmp_path / 'camps' / 'study1'}")
    make_run(tmp_path / "camps" / "plain", [record("t0")])
    assert "a folder of runs and campaigns (3: plain, study1, study2)" in what_is(tmp_path / "camps").problem()
