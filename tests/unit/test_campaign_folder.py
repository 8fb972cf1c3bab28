"""A campaign's folder: its lanes' names (one run folder per arm and repeat) and the plan file that says a folder is
a campaign's, read back with a message naming the file for anything else."""

from __future__ import annotations

import json

import pytest

from om2w_tui.campaign_folder import CampaignFolder, arm_problem, is_campaign, lane_name
from om2w_tui.json_input import InputError


def test_a_repeat_after_the_first_is_named_after_its_arm_and_an_arm_may_not_look_like_one():
    assert [lane_name("agent", k) for k in (1, 2, 3)] == ["agent", "agent-r2", "agent-r3"]
    assert arm_problem("base") == "" and arm_problem("my.lora_v2-final") == ""
    assert "may not end in -r<number>" in arm_problem("agent-r2")
    for bad in ("", ".hidden", "-x", "a/b", "a b", "x" * 65):
        assert arm_problem(bad), bad


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
