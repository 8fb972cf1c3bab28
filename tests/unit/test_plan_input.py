"""A campaign's plan and flags given badly, as real `om2w-tui` processes: exit code 2, a message on stderr naming the
plan's line or the flag and what to do, nothing written, and no key given in place of its variable's name shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.unit.helpers import REPO

KEY = "sk-abc123secretvalue"


def om2w(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`om2w-tui ARGS` in `work`, which must be left as it was; the key is in no output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    before = sorted(p.name for p in work.iterdir())
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)
    assert sorted(p.name for p in work.iterdir()) == before, "something was written"
    assert KEY not in proc.stdout + proc.stderr and "abc123" not in proc.stdout + proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    return proc


def plan(work: Path, arms: str, top: str = "") -> Path:
    path = work / "plan.toml"
    path.write_text(f'bench = "offline"\nout = "out"\nmodel = "oracle"\n{top}{arms}')
    return path


def test_an_arm_named_as_the_campaign_folders_own_file_or_like_another_but_for_case_is_refused(work):
    path = plan(work, '[arms.b]\n[arms."campaign.json"]\n')
    err = om2w(work, "campaign", str(path), "--no-ui").stderr
    assert f"""{path}:5: [arms."campaign.json"]: arm name 'campaign.json' is the name of one of the campaign's own""" \
        """ files""" in err and "rename the arm" in err and "Traceback" not in err
    plan(work, '[arms."worker_0.log"]\n')
    assert f"""{path}:4: [arms."worker_0.log"]: arm name 'worker_0.log'""" in om2w(work, "campaign", str(path)).stderr
    plan(work, "[arms.a]\n[arms.A]\n")
    assert f"{path}:5: [arms.A]: arm name 'A': the same as arm 'a' but for case" in om2w(work, "campaign",
                                                                                      str(path)).stderr


def test_one_setting_spelled_both_ways_is_refused_naming_both_lines(work):
    path = plan(work, "[arms.a]\n", "pace_cooldown = 1\npace-cooldown = 2\n")
    err = om2w(work, "campaign", str(path), "--no-ui").stderr
    assert f"{path}:5: pace-cooldown: set twice, also as pace_cooldown on line 4; keep one of them" in err


def test_an_arm_given_twice_on_the_command_line_is_refused_not_run_as_one(work):
    err = om2w(work, "run", "--arm", "base", "--arm", "base", "--bench", "offline", "--model", "oracle", "--out",
               "X", "--no-ui").stderr
    assert "--arm base: arm name 'base': given twice; name each arm once" in err


def test_a_key_given_for_its_variables_name_is_refused_without_showing_it(work):
    """In a plan (an arm's, the judge's), on the run's flags and on `judge`'s: the same check, the value unshown."""
    for arms, top in ((f'[arms.a]\napi_key_env = "{KEY}"\n', ""), ("[arms.a]\n", f'judge-api-key-env = "{KEY}"\n'),
                      ('[arms.a]\napi_key_env = "abc123SECRETvalue456xyz"\n', "")):   # a key with a name's letters
        path = plan(work, arms, top)
        err = om2w(work, "campaign", str(path), "--no-ui").stderr
        assert f"{path}:" in err and "not an environment variable's name" in err and "abc123" not in err
        assert "give the variable's NAME, e.g. OPENAI_API_KEY, and export the key in it" in err
    for flag in ("--api-key-env", "--judge-api-key-env"):
        err = om2w(work, "run", "--bench", "offline", "--model", "oracle", "--out", "X", "--no-ui", flag, KEY).stderr
        assert f"argument {flag}: {flag} not an environment variable's name" in err and "OPENAI_API_KEY" in err
    (work / "run").mkdir()
    err = om2w(work, "judge", "run", "--judge-model", "m", "--judge-url", "http://127.0.0.1:9/v1", "--api-key-env",
               KEY).stderr
    assert "--api-key-env not an environment variable's name" in err


def test_a_plan_that_is_a_fifo_a_folder_or_too_large_is_refused_at_once_naming_it(work):
    """The plan is read through the one reader: a FIFO is never waited on (it hung `campaign`), a folder and a file
    past the limit are named as such."""
    fifo = work / "fifo.toml"
    os.mkfifo(fifo)
    err = om2w(work, "campaign", str(fifo), "--no-ui").stderr
    assert str(fifo) in err and "FIFO" in err and "give a campaign's plan (TOML)" in err
    (work / "dir.toml").mkdir()
    assert "a folder" in om2w(work, "doctor", str(work / "dir.toml")).stderr
    big = work / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n")
    assert "more than the" in om2w(work, "campaign", str(big)).stderr


def test_a_plan_nested_past_any_depth_is_refused_naming_it(work):
    """tomllib recurses without a limit: arrays 20,000 deep were a RecursionError's traceback (exit 1)."""
    deep = work / "deep.toml"
    deep.write_text("a = " + "[" * 20_000 + "]" * 20_000 + "\n")
    for command in ("campaign", "doctor"):
        err = om2w(work, command, str(deep)).stderr
        assert f"{deep}: nested too deep to be a plan" in err and "Traceback" not in err
