"""A campaign's plan (engine/plan.py): read from TOML with every value checked as its flag is, a problem named by
the plan's file and line; resolved into the shared config and the lanes; campaign.json as written, with no secret;
the resume rule (a lane's measured settings may not change under its folder, lanes may be added, not dropped)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from om2w_tui.campaign_folder import CampaignFolder
from om2w_tui.engine.plan import PlanError, plan_json, read_plan, resolve, resume_problem, short_form, write_plan
from tests.stand_ins import STAND_IN_CHROMIUM

EXAMPLE = """\
# a study: the base model against the agent, three repeats
bench = "offline"
workers = 12
pace_cooldown = 120
pace-dir = "/tmp/pace"
out = "{out}"
repeats = 3
temperature = 0.5
level = ["easy", "medium"]

[arms.base]
model = "qwen"

[arms.agent]
arm = "agent"
model = "my-lora"
vllm = "http://user:hunter2@127.0.0.1:9/v1"
api-key-env = "LORA_KEY"
max_steps = 12
top_p = 0.9
seed = 7
no-vision = true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text.replace("{out}", str(tmp_path / "study")))
    return path


def test_a_plan_resolves_into_the_shared_settings_and_one_lane_per_arm_and_repeat(tmp_path):
    campaign = resolve(read_plan(write(tmp_path, EXAMPLE)))
    cfg = campaign.config
    assert (cfg.bench, cfg.workers, cfg.pace_cooldown, cfg.out) == ("offline", 12, 120.0, tmp_path / "study")
    assert cfg.pace_dir == Path("/tmp/pace") and cfg.levels == ["easy", "medium"]
    assert [(x.name, x.arm, x.repeat) for x in campaign.lanes] == [
        ("base", "base", 1), ("agent", "agent", 1), ("base-r2", "base", 2), ("agent-r2", "agent", 2),
        ("base-r3", "base", 3), ("agent-r3", "agent", 3)]
    base, agent = campaign.lanes[0].config, campaign.lanes[1].config
    assert base.out == tmp_path / "study" / "base" and campaign.lanes[5].config.out == tmp_path / "study" / "agent-r3"
    assert (base.arm, base.model, base.temperature, base.vision, base.workers) == ("base", "qwen", 0.5, True, 12)
    assert (agent.arm, agent.model, agent.max_steps, agent.top_p, agent.seed, agent.vision, agent.api_key_env) == (
        "agent", "my-lora", 12, 0.9, 7, False, "LORA_KEY")
    assert agent.temperature == 0.5 and agent.pace_cooldown == 120.0   # the top level, where the arm changes nothing


def test_flags_after_the_plan_replace_its_top_level_and_an_arm_still_changes_its_own(tmp_path):
    campaign = resolve(read_plan(write(tmp_path, EXAMPLE)), {"workers": 3, "model": "other", "pace_cooldown": 1.0})
    assert campaign.config.workers == 3 and campaign.lanes[0].config.pace_cooldown == 1.0
    assert campaign.lanes[0].config.workers == 3
    assert campaign.lanes[1].config.model == "my-lora"


def test_the_offline_benchmark_default_cooldown_applies_unless_the_plan_gives_one(tmp_path):
    path = write(tmp_path, 'bench = "offline"\nout = "{out}"\n[arms.a]\n')
    assert resolve(read_plan(path)).config.pace_cooldown == 0.0
    assert resolve(read_plan(path), {"no_pacing": True}).config.site_slots == 0


@pytest.mark.parametrize(("text", "line", "words"), [
    ('out = "x"\nworkers = 0\n[arms.a]\n', 2, "workers: 0: must be 1 to 512"),
    ('out = "x"\n[arms.a]\nmodel = "m"\ntemperature = "hot"\n', 4, "[arms.a] temperature: hot: not a number"),
    ('out = "x"\n[arms.a]\ntop_p = 2\n', 3, "top_p: 2: must be more than 0 and at most 1"),
    ('out = "x"\n[arms.a]\n\nmax-steps = 1.5\n', 4, "not a whole number"),
    ('out = "x"\n[arms.a]\ntemperature = inf\n', 3, "inf: must be a finite number"),   # as --temperature 1e999
    ('out = "x"\n[arms.a]\ntimeout = 1e999\n', 3, "[arms.a] timeout: inf: must be a finite number"),
    ('out = "x"\n[arms.a]\nmax-steps = -inf\n', 3, "max-steps: -inf: must be a finite number"),
    # a number is no text: a model's name is quoted (as a boolean is no number)
    ('out = "x"\n[arms.a]\nmodel = 5\n', 3, '[arms.a] model: 5 is an integer, not text; write it in quotes ("5")'),
    ('out = "x"\ntask-ids = 7\n[arms.a]\n', 2, "task-ids: 7 is an integer, not text"),
    ('out = "x"\n[arms.a]\nvllm = 1.5\n', 3, "vllm: 1.5 is a float, not text"),
    # repeats read as every whole-number setting is (workers = "2" and repeats = "2" alike; 2.0 neither)
    ('out = "x"\nrepeats = 2.0\n[arms.a]\n', 2, "repeats: 2.0: not a whole number (a whole number has no decimal"),
    ('out = "x"\nworkers = 2.0\n[arms.a]\n', 2, "workers: 2.0: not a whole number (a whole number has no decimal"),
    ('out = "x"\nrepeats = "0"\n[arms.a]\n', 2, "repeats: 0: must be 1 to 100"),
    ('out = "x"\nrepeats = true\n[arms.a]\n', 2, "repeats: true: not a value of repeats (it is no switch)"),
    ('out = "x"\nrepeats = [2]\n[arms.a]\n', 2, "repeats: an array is not a value of repeats"),
    # repeats is the campaign's, a table in an arm no setting
    ('out = "x"\n[arms.a]\nrepeats = 2\n', 3, "[arms.a] repeats: campaign-wide (every arm runs as many times, each "
                                              "repeat paired); set it at the plan's top level"),
    ('out = "x"\n[arms.a]\nmodel = "m"\n[arms.a.extra]\nx = 1\n', 4, "[arms.a.extra]: no such table (an arm's "
                                                                     "table holds the settings the arm changes"),
    ('out = "x"\n[arms.a]\nextra.x = 1\n', 3, "[arms.a.extra]: no such table"),
    ('out = "x"\n[arms.a]\nno-vision = "yes"\n', 3, "true or false"),
    ('out = "x"\n[arms.a]\nvllm = "ftp://x"\n', 3, "vllm"),
    ('out = "x"\nbench = "om3"\n[arms.a]\n', 2, "one of om2w, webvoyager, offline"),
    ('out = "x"\nworkerz = 3\n[arms.a]\n', 2, "workerz: no such setting (did you mean workers?)"),
    ('out = "x"\n[arms.a]\n"pace_cooldown" = 3\n', 3, "campaign-wide"),
    ('out = "x"\n[arms.a]\nworkers = 3\n', 3, "[arms.a] workers: campaign-wide"),
    ('out = "x"\n[arms.a]\nout = "y"\n', 3, "campaign-wide"),
    ('out = "x"\n[arms.b]\n[arms.a]\ntask-ids = "t1"\n', 4, "campaign-wide"),
    ('out = "x"\n[arms.a]\nshard = "0/2"\n', 3, "campaign-wide"),
    # one judge for every arm: the arms are compared on one measure
    ('out = "x"\n[arms.a]\n[arms.b]\nmodel = "m"\njudge-url = "http://127.0.0.1:9/v1"\n', 5,
     "[arms.b] judge-url: campaign-wide (one judge for every arm, so the arms are compared on one measure)"),
    ('out = "x"\n[arms.a]\njudge_model = "o4-mini"\n', 3, "[arms.a] judge_model: campaign-wide (one judge"),
    ('out = "x"\n\n[arms."a-r2"]\n', 3, "may not end in -r<number>"),
    ('out = "x"\n[arms.".x"]\n', 2, "arm name '.x'"),
    ('out = "x"\nrepeats = 0\n[arms.a]\n', 2, "repeats: 0: must be 1 to 100"),
    ('out = "x"\nseed = 99999999999999999999\n[arms.a]\n', 2, "seed: 99999999999999999999: must be 0 to 4294967295"),
    ('out = "x"\n[arms.a]\nworkers = 100000000000000000000000\n', 3, "must be 1 to 512"),
    ('out = "x"\n[other]\nx = 1\n[arms.a]\n', 2, "[other]: no such table"),
    # a table named only by the tables under it, or by a key: its first line, and TOML's words for what is wrong
    ('out = "x"\n[arm.a]\nmodel = "m"\n', 2, "[arm]: no such table"),
    ('out = "x"\nother.x = 1\n[arms.a]\n', 2, "[other]: no such table"),
    ('out = "x"\narms = "a"\n', 2, "arms: a string, not a table; give one [arms.NAME] table per arm"),
    ('out = "x"\n\narms = [1]\n', 3, "arms: an array, not a table"),
    ('out = "x"\n[arms]\na = "m"\n', 3, "arms.a: a string, not a table; give [arms.a] with the settings"),
    ('out = "x"\n[arms.a]\nmodel = {x = 1}\n', 3, "[arms.a] model: a table is not a value of --model"),
    ('out = "x"\nworkers = [1, 2]\n[arms.a]\n', 2, "workers: an array is not a value of --workers"),
    ('out = "x"\npace-cooldown = 1979-05-27\n[arms.a]\n', 2, "a date or time is not a value of --pace-cooldown"),
    ('out = "x"\narms.a.model = "m"\narms.a.modle = "m"\n', 3, "[arms.a] modle: no such setting"),
    ('out = "x"\nworkers = 2\n', 0, "no arms"),
    ('out = "x"\n[arms]\n', 2, "no arms"),
    ('out = "x"\nworkers = \n', 2, "not a plan in TOML: Invalid value (at line 2, column 11)"),
    # an arm's folder named as one of the campaign folder's own files (its plan, a worker's log, a run's file)
    ('out = "x"\n[arms.b]\n[arms."campaign.json"]\n', 3, "arm name 'campaign.json' is the name of one of the "
                                                         "campaign's own files"),
    ('out = "x"\n[arms."worker_0.log"]\n', 2, "arm name 'worker_0.log' is the name of one of"),
    ('out = "x"\n[arms."Worker_3.shard-0-of-2.LOG"]\n', 2, "is the name of one of the campaign's own files"),
    ('out = "x"\n[arms."results.jsonl"]\n', 2, "is the name of one of the campaign's own files"),
    ('out = "x"\n[arms."run.json"]\n', 2, "is the name of one of the campaign's own files"),
    ('out = "x"\n[arms."Campaign.JSON"]\n', 2, "is the name of one of the campaign's own files"),
    # two arms equal but for case: one folder on a case-insensitive disk
    ('out = "x"\n[arms.a]\n[arms.A]\n', 3, "arm name 'A': the same as arm 'a' but for case"),
    # one setting spelled both ways: TOML takes two keys, the last would win without a word
    ('out = "x"\npace_cooldown = 1\npace-cooldown = 2\n[arms.a]\n', 3,
     "pace-cooldown: set twice, also as pace_cooldown on line 2; keep one of them"),
    ('out = "x"\n[arms.a]\nmax_steps = 3\nmodel = "m"\n"max-steps" = 4\n', 5,
     "[arms.a] max-steps: set twice, also as max_steps on line 3"),
    ('out = "x"\nno_pacing = true\nno-pacing = false\n[arms.a]\n', 3, "no-pacing: set twice"),
])
def test_a_bad_plan_is_refused_naming_its_file_its_line_and_what_is_wrong(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(PlanError) as e:
        resolve(read_plan(path))
    message = str(e.value)
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: "), message
    assert words in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]   # nothing written


def test_a_plan_without_out_and_a_bad_instruction_file_are_refused_naming_the_plan(tmp_path):
    with pytest.raises(PlanError, match="out: required"):
        resolve(read_plan(write(tmp_path, "[arms.a]\n")))
    with pytest.raises(PlanError, match="plan.toml: .*missing"):
        resolve(read_plan(write(tmp_path, 'out = "x"\n[arms.a]\ninstruction-template = "missing"\n')))


def test_campaign_json_records_the_resolved_plan_and_no_secret(tmp_path):
    campaign = resolve(read_plan(write(tmp_path, EXAMPLE)))
    write_plan(campaign)
    text = CampaignFolder(tmp_path / "study").plan.read_text()
    assert "hunter" not in text and "LORA_KEY" in text
    data = json.loads(text)
    assert data["format"] == 1 and data["repeats"] == 3 and data["plan"] == str(tmp_path / "plan.toml")
    assert data["shared"]["workers"] == 12 and data["arms"]["agent"]["model"] == "my-lora"
    assert [x.name for x in CampaignFolder(tmp_path / "study").lanes()] == [x.name for x in campaign.lanes]
    assert data["lanes"][1]["settings"]["max_steps"] == 12


def test_every_shard_of_a_campaign_records_the_same_plan(tmp_path):
    plan = read_plan(write(tmp_path, EXAMPLE))
    written = [plan_json(resolve(plan, {"shard": f"{k}/2"})) for k in (0, 1)]
    assert written[0] == written[1] == plan_json(resolve(plan))   # the node's shard is no part of the plan


def test_nodes_given_slot_ranges_record_the_campaigns_workers_and_the_second_is_no_changed_plan(tmp_path):
    """`--slot-range a:b --workers W`: W is the campaign's slots, the same on every node; the node runs b - a of them
    (its own config, its lanes' run.<shard>.json), and campaign.json says W whichever node wrote it last."""
    from om2w_tui.cli.main import campaign_from_args, parse_args  # the command line only for its short form

    path = write(tmp_path, EXAMPLE)
    nodes = [resolve(read_plan(path), {"slot_range": r}) for r in ("0:4", "4:12")]
    assert [(c.config.workers, c.config.shard) for c in nodes] == [(4, "0:4/12"), (8, "4:12/12")]
    assert [c.lanes[0].config.workers for c in nodes] == [4, 8]   # what each node runs
    written = [plan_json(c) for c in nodes]
    assert written[0] == written[1] == plan_json(resolve(read_plan(path)))
    assert written[0]["shared"]["workers"] == 12
    write_plan(nodes[0])
    assert resume_problem(nodes[1]) == ""                          # the second node is not refused
    write_plan(nodes[1])
    assert json.loads(CampaignFolder(tmp_path / "study").plan.read_text())["shared"]["workers"] == 12
    short = [campaign_from_args(parse_args(["run", "--bench", "offline", "--model", "oracle", "--out",
                                            str(tmp_path / "o"), "--arm", "base", "--arm", "agent", "--workers", "6",
                                            "--slot-range", r])) for r in ("0:2", "2:6")]
    assert [c.config.workers for c in short if c is not None] == [2, 4]
    assert [plan_json(c)["shared"]["workers"] for c in short if c is not None] == [6, 6]


def test_resume_refuses_a_changed_lane_and_a_dropped_one_and_allows_more_repeats(tmp_path):
    path = write(tmp_path, EXAMPLE)
    campaign = resolve(read_plan(path))
    assert resume_problem(campaign) == ""
    write_plan(campaign)
    assert resume_problem(resolve(read_plan(path))) == ""
    # where and how fast it runs may change; what it measures may not
    assert resume_problem(resolve(read_plan(path), {"workers": 2, "pace_cooldown": 5.0})) == ""
    changed = resume_problem(resolve(read_plan(write(tmp_path, EXAMPLE.replace('"my-lora"', '"my-lora-2"')))))
    assert "agent: model 'my-lora' -> 'my-lora-2'" in changed and "agent-r3" in changed
    assert "base:" not in changed and "or add --resume-changed to go on with both in its lanes" in changed
    more = resume_problem(resolve(read_plan(write(tmp_path, EXAMPLE.replace("repeats = 3", "repeats = 4")))))
    assert more == ""
    fewer = resume_problem(resolve(read_plan(write(tmp_path, EXAMPLE.replace("repeats = 3", "repeats = 2")))))
    assert "drops: base-r3, agent-r3" in fewer


def test_resume_takes_a_selection_as_a_set_and_still_refuses_a_changed_one(tmp_path):
    """The same tasks, levels or sites in another order (or case, where the selection ignores it) select the same
    tasks: no change of what the lanes measure; another selection is, named with what changed."""
    plan = EXAMPLE.replace('level = ["easy", "medium"]', 'level = ["easy", "medium"]\ntask_ids = "t1,t2,t3"\n'
                                                         'site = "a.com,b.com"')
    write_plan(resolve(read_plan(write(tmp_path, plan))))
    same = (plan.replace('"t1,t2,t3"', '"t3,t1,t2"').replace('["easy", "medium"]', '["Medium", "easy"]')
            .replace('"a.com,b.com"', '"B.com,a.com,a.com"'))
    assert resume_problem(resolve(read_plan(write(tmp_path, same)))) == ""
    other = resume_problem(resolve(read_plan(write(tmp_path, plan.replace('"t1,t2,t3"', '"t1,t2,T3"')))))
    assert "base: task-ids ['t1', 't2', 't3'] -> ['t1', 't2', 'T3']" in other   # a task id's case is its own
    fewer = resume_problem(resolve(read_plan(write(tmp_path, plan.replace('"t1,t2,t3"', '"t2,t1"')))))
    assert "task-ids ['t1', 't2', 't3'] -> ['t2', 't1']" in fewer


def test_a_run_folder_is_no_campaign_folder(tmp_path):
    campaign = resolve(read_plan(write(tmp_path, EXAMPLE)))
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "results.jsonl").write_text("")
    assert "a run's folder, not a campaign's" in resume_problem(campaign)


def test_the_short_form_names_each_lane_by_its_arm(tmp_path):
    from om2w_tui.engine.config import RunConfig  # the config only for this test's short form

    campaign = short_form(RunConfig(out=tmp_path / "o", workers=3), ["base", "agent"])
    assert [(x.name, x.config.arm, x.config.out, x.config.workers) for x in campaign.lanes] == [
        ("base", "base", tmp_path / "o" / "base", 3), ("agent", "agent", tmp_path / "o" / "agent", 3)]
    with pytest.raises(PlanError, match="--arm x-r2: arm name 'x-r2'"):
        short_form(RunConfig(out=tmp_path), ["x-r2"])


@pytest.mark.parametrize("arms, words", [
    (["base", "agent", "base"], "--arm base: arm name 'base': given twice"),          # never dropped without a word
    (["base", "Base"], "--arm Base: arm name 'Base': the same as arm 'base' but for case"),
    (["base", "worker_0.log"], "--arm worker_0.log: arm name 'worker_0.log' is the name of one of the campaign's"),
])
def test_the_short_form_refuses_an_arm_given_twice_or_named_as_the_folders_own_file(tmp_path, arms, words):
    from om2w_tui.engine.config import RunConfig  # the config only for this test's short form

    with pytest.raises(PlanError) as e:
        short_form(RunConfig(out=tmp_path / "o"), arms)
    assert words in str(e.value)


def test_the_campaign_command_refuses_a_bad_plan_a_changed_one_and_a_bad_flag_with_exit_2_writing_nothing(
        tmp_path, capsys):
    from om2w_tui.cli.main import main  # the command line only for this test

    bad = write(tmp_path, 'out = "{out}"\n[arms.a]\nworkers = 3\n')
    assert main(["campaign", str(bad), "--no-ui"]) == 2
    assert f"{bad}:3: [arms.a] workers: campaign-wide" in capsys.readouterr().err
    path = write(tmp_path, EXAMPLE)
    write_plan(resolve(read_plan(path)))
    before = (tmp_path / "study" / "campaign.json").read_text()
    assert main(["campaign", str(path), "--no-ui", "--temperature", "0.7"]) == 2   # a flag replaces the top level
    err = capsys.readouterr().err
    # the flag is named as the change's source, not the plan (which did not change)
    assert err.startswith("om2w-tui: --temperature (given after the plan) changes what lanes in"), err
    assert "base: temperature 0.5 -> 0.7" in err and f"{path}" not in err
    assert (tmp_path / "study" / "campaign.json").read_text() == before
    assert sorted(p.name for p in (tmp_path / "study").iterdir()) == ["campaign.json"]
    with pytest.raises(SystemExit) as e:
        main(["campaign", str(path), "--temperature", "3"])
    assert e.value.code == 2 and "--temperature 3: must be 0 to 2" in capsys.readouterr().err


def test_run_with_several_arms_is_the_short_form_of_a_campaign_and_one_arm_is_a_run(tmp_path):
    from om2w_tui.cli.main import campaign_from_args, parse_args  # the command line only for this test

    out = str(tmp_path / "o")
    campaign = campaign_from_args(parse_args(["run", "--bench", "offline", "--model", "oracle", "--out", out,
                                              "--arm", "base", "--arm", "agent", "--workers", "3"]))
    assert campaign is not None and campaign.config.out == tmp_path / "o"
    assert [(x.name, x.config.arm, x.config.workers) for x in campaign.lanes] == [("base", "base", 3),
                                                                                  ("agent", "agent", 3)]
    assert campaign_from_args(parse_args(["run", "--out", out, "--arm", "agent"])) is None
    assert campaign_from_args(parse_args(["run", "--out", out])) is None


def test_the_campaign_checks_ask_each_model_once_and_name_the_lane_whose_model_is_missing(tmp_path):
    from om2w_tui.engine.campaign_launch import campaign_checks  # the checks start a Chromium: this test only
    from om2w_tui.evaluation.live_judge import LIVE_JUDGE  # as above
    from om2w_tui.offline import OfflineSuite, OracleServer

    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        # the live judge's model too: asked once for every lane, with the shared settings, before any lane
        plan = (f'bench = "offline"\nout = "{{out}}"\nvllm = "{oracle.url}"\nrepeats = 2\n'
                f'judge-url = "{oracle.url}"\njudge-model = "JUDGE"\n'
                '[arms.good]\nmodel = "oracle"\n[arms.typo]\nmodel = "oracel"\n')
        bad = write(tmp_path, plan.replace("JUDGE", "no-such-judge"))
        pre, checks = campaign_checks(resolve(read_plan(bad)), companions=[LIVE_JUDGE])
        assert pre is None
        failed = [(what, detail) for what, ok, detail in checks if not ok]
        assert [what for what, _ in failed] == ["judge endpoint"]
        # named where the plan set it, as its other problems are (not as a run's flag)
        assert failed[0][1].startswith(f"{bad}:6: judge-model no-such-judge: not served by"), failed
        pre, checks = campaign_checks(resolve(read_plan(bad), {"judge_model": "no-such-judge"}),
                                      companions=[LIVE_JUDGE])
        assert next(detail for _, ok, detail in checks if not ok).startswith("--judge-model no-such-judge: not")
        path = write(tmp_path, plan.replace("JUDGE", "oracle-judge"))
        pre, checks = campaign_checks(resolve(read_plan(path)), companions=[LIVE_JUDGE])
    assert pre is None
    assert [what for what, *_ in checks if "judge" in what] == ["judge endpoint"]
    failed = [(what, detail) for what, ok, detail in checks if not ok]
    assert [what for what, _ in failed] == ["typo: model endpoint"]   # asked once: its repeat is not asked again
    assert failed[0][1].startswith("lane typo (arm typo): ") and "oracel" in failed[0][1]
    assert [what for what, *_ in checks if what.endswith("model endpoint")] == ["good: model endpoint",
                                                                                "typo: model endpoint"]
    assert not (tmp_path / "study").exists()


def test_a_new_arm_is_refused_where_its_lane_folder_holds_something_the_campaign_did_not_write(tmp_path):
    """An arm added (or a first start) whose lane's folder exists beside the lanes holding something else (a site
    `report --html` wrote, another run) would write its lane into it: refused naming it. A folder of hidden files
    only (an earlier start's locks) is taken."""
    path = write(tmp_path, EXAMPLE.replace("repeats = 3", "repeats = 1"))
    write_plan(resolve(read_plan(path)))
    study = tmp_path / "study"
    (study / "site").mkdir()
    (study / "site" / "index.html").write_text("<html>")
    added = write(tmp_path, EXAMPLE.replace("repeats = 3", "repeats = 1") + '\n[arms.site]\nmodel = "m"\n')
    problem = resume_problem(resolve(read_plan(added)))
    assert problem == (f"{study / 'site'}: a folder that holds index.html, not a lane of the campaign in {study}; "
                       f"arm site's lane would be written into it: move it aside or rename the arm")
    (study / "site" / "index.html").unlink()
    (study / "site" / ".om2w-run.lock").write_text("")
    assert resume_problem(resolve(read_plan(added))) == ""
    (study / "campaign.json").unlink()   # a campaign's first start over a folder that holds such a folder
    (study / "base").mkdir()
    (study / "base" / "results.jsonl").write_text("")
    assert "study/base: a folder that holds results.jsonl, not a lane" in resume_problem(resolve(read_plan(path)))


def selection_plan(tmp_path: Path, exclude: str = "", tasks: str = "tasks.json") -> Path:
    (tmp_path / "skip.txt").write_text(exclude)
    return write(tmp_path, f'bench = "om2w"\ntasks = "{tmp_path / tasks}"\nexclude-tasks = "{tmp_path / "skip.txt"}"\n'
                           f'model = "oracle"\nchromium = "{STAND_IN_CHROMIUM}"\nout = "{{out}}"\n'
                           '[arms.base]\n[arms.agent]\narm = "agent"\n')


def test_a_campaign_resumes_on_the_tasks_it_selected_whatever_the_files_that_say_them(tmp_path, capsys):
    """campaign.json records the task ids every lane runs; a resume whose files now select others (an
    --exclude-tasks file edited under the same path, tasks added to the task file) is refused naming how, exit 2,
    nothing written. The same tasks named otherwise (another path to the same list) are no change."""
    from om2w_tui.cli.main import main  # the command line only for this test
    from om2w_tui.engine.campaign_launch import whole_selection

    rows = [{"task_id": t, "confirmed_task": f"do {t}", "website": f"https://{t}.com/", "level": "easy"}
            for t in ("t1", "t2", "t3")]
    (tmp_path / "tasks.json").write_text(json.dumps(rows))
    campaign = resolve(read_plan(selection_plan(tmp_path)))
    campaign = dataclasses.replace(campaign, selection=whole_selection(campaign.settings))
    write_plan(campaign)
    study = tmp_path / "study"
    before = (study / "campaign.json").read_text()
    assert json.loads(before)["selection"] == ["t1", "t2", "t3"]
    selection_plan(tmp_path, "t2\n")
    assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui"]) == 2
    err = capsys.readouterr().err
    # the plan is as it was: the file it names says other tasks, and the refusal names that file
    assert "the tasks it selects now, as the files it names say them (exclude_tasks " in err, err
    assert "are not those of the lanes in" in err and "(selection: 3 tasks -> 2 (left out: t2))" in err, err
    (tmp_path / "tasks.json").write_text(json.dumps([*rows, {**rows[0], "task_id": "t4"}]))
    selection_plan(tmp_path)
    assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui", "--limit", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("om2w-tui: --limit (given after the plan) changes what lanes in"), err
    assert "selection: 3 tasks -> 2 (left out: t3)" in err
    assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui", "--level", "easy"]) == 2
    err = capsys.readouterr().err   # a flag named as it is spelled (`--level`, the field `levels`)
    assert err.startswith("om2w-tui: --level (given after the plan) changes") and "(added: t4)" in err, err
    assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui"]) == 2
    assert "selection: 3 tasks -> 4 (added: t4)" in capsys.readouterr().err
    assert (study / "campaign.json").read_text() == before and sorted(p.name for p in study.iterdir()) == [
        "campaign.json"]
    # another path to the same tasks selects the same tasks
    (tmp_path / "same.json").write_text(json.dumps(rows))
    again = resolve(read_plan(selection_plan(tmp_path, tasks="same.json")))
    assert resume_problem(dataclasses.replace(again, selection=whole_selection(again.settings))) == ""
    # a task file (or exclusion file) that cannot be read is said as a new campaign's is, not taken for a change;
    # nor are the paths compared where campaign.json has the selection (a resume through another path wrote them)
    write_plan(dataclasses.replace(again, selection=whole_selection(again.settings)))
    selection_plan(tmp_path)
    for flag, missing, words in (("--tasks", "nosuch.json", "no such task file"),
                                 ("--exclude-tasks", "nosuch.txt", "no such file")):
        assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui", flag, str(tmp_path / missing)]) == 2
        err = capsys.readouterr().err
        assert f"{tmp_path / missing}: {words}" in err and "measure" not in err, err


def test_a_campaign_json_without_the_selection_is_read_as_before_comparing_the_settings(tmp_path, capsys):
    (tmp_path / "tasks.json").write_text(json.dumps([{"task_id": "t1", "confirmed_task": "x",
                                                      "website": "https://a.com/", "level": "easy"}]))
    write_plan(resolve(read_plan(selection_plan(tmp_path))))   # as a campaign.json before `selection` was kept
    assert "selection" not in json.loads((tmp_path / "study" / "campaign.json").read_text())
    from om2w_tui.engine.campaign_launch import whole_selection

    now = resolve(read_plan(selection_plan(tmp_path, "t9\n")))
    assert resume_problem(dataclasses.replace(now, selection=whole_selection(now.settings))) == ""
    other = resolve(read_plan(selection_plan(tmp_path, tasks="other.json")))
    assert "tasks " in resume_problem(other) and "other.json" in resume_problem(other)
    # the task files read first: one that cannot be read is said so, not taken for a change of them
    from om2w_tui.cli.main import main  # the command line only here

    assert main(["campaign", str(tmp_path / "plan.toml"), "--no-ui"]) == 2
    assert f"{tmp_path / 'other.json'}: no such task file" in capsys.readouterr().err


def test_a_refusal_names_the_plan_and_the_flag_each_change_came_from(tmp_path):
    path = write(tmp_path, EXAMPLE)
    write_plan(resolve(read_plan(path)))
    changed = write(tmp_path, EXAMPLE.replace('"my-lora"', '"my-lora-2"'))
    both = resume_problem(resolve(read_plan(changed), {"temperature": 0.7}))
    assert both.startswith(f"{changed}: the plan and --temperature (given after the plan) change what lanes in")
    assert "agent: model 'my-lora' -> 'my-lora-2'" in both and "base: temperature 0.5 -> 0.7" in both
    # an arm that sets it itself keeps its own: the flag changes no lane of it
    path = write(tmp_path, EXAMPLE.replace("seed = 7", "seed = 7\ntemperature = 0.5"))
    flag = resume_problem(resolve(read_plan(path), {"temperature": 0.7}))
    assert flag.startswith("--temperature (given after the plan) changes") and "agent:" not in flag


def test_every_unknown_arm_of_a_plan_is_named_at_once_at_its_line(tmp_path):
    path = write(tmp_path, 'out = "x"\narm = "nope"\n[arms.x]\narm = "foo"\n[arms.y]\narm = "bar"\n[arms.z]\n'
                           'arm = "base"\n[arms.w]\narm = "foo"\n')
    with pytest.raises(PlanError) as e:
        read_plan(path)
    assert str(e.value) == (f'{path}:2: arm = "nope", {path}:4: [arms.x] arm = "foo", {path}:6: [arms.y] arm = "bar", '
                            f'{path}:10: [arms.w] arm = "foo": no such arm (known: agent, base)')


def test_every_unknown_arm_of_the_short_form_is_named_at_once(tmp_path, capsys):
    from om2w_tui.cli.main import main  # the command line only for this test

    for command in ("run", "doctor"):
        assert main([command, "--no-ui", "--out", str(tmp_path / "o"), "--bench", "offline", "--model", "oracle",
                     "--arm", "good", "--arm", "base", "--arm", "weak"]) == 2
        assert "--arm good, --arm weak: no such arm (known: agent, base)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_doctor_checks_a_plan_as_campaign_would_each_warning_once_the_shared_row_naming_no_arm(tmp_path, capsys):
    """`om2w-tui doctor PLAN.toml [flags]`: the plan's checks before hours of work, flags after it replacing its top
    level as `campaign` has them; a warning of the shared settings (--exclude-tasks) said once, not once more per
    lane; the shared settings' row names no arm (each lane's says its own); a bad plan: exit 2 naming its line."""
    from om2w_tui.cli.main import main  # the command line only for this test

    (tmp_path / "skip.txt").write_text("offline_shop_search_01\nno_such_task\n")
    path = write(tmp_path, f'bench = "offline"\nmodel = "oracle"\nout = "{{out}}"\nchromium = "{STAND_IN_CHROMIUM}"\n'
                           f'exclude_tasks = "{tmp_path / "skip.txt"}"\n[arms.base]\n[arms.planner]\narm = "agent"\n')
    assert main(["doctor", str(path), "--workers", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "arms base, planner x 1 repeat: 2 lanes (base, planner)" in out
    assert out.count("left out by --exclude-tasks") == 1 and "no_such_task" in out
    assert "│ settings │ ok │ 2 workers," in out and "planner: settings │ ok │ arm agent, 2 workers" in out
    assert not (tmp_path / "study").exists()                      # checked, nothing written
    bad = write(tmp_path, 'out = "{out}"\nworkers = "many"\n[arms.a]\n')
    assert main(["doctor", str(bad)]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err
