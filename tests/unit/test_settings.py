"""engine/settings.py: every run setting declared once, and the command line, the launch form and doctor built from
that one declaration."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from om2w_tui.cli.main import build_parser, config_from_args
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.settings import BY_KEY, SETTINGS, Switch, changed, parse_number
from om2w_tui.frontends.console.launch_values import DEFAULTS, FIELDS, config_from_values, values_from_config

# RunConfig fields that are no flag of their own: derived (the template's text, the node's share) or internal
NOT_FLAGS = {"instruction_template", "shard", "stop_grace"}


def run_actions() -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices["run"]._actions}


def test_every_field_of_a_run_is_declared_once_or_said_not_to_be_a_flag():
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    declared = [s.key for s in SETTINGS]
    assert len(declared) == len(set(declared)) and len({s.flag for s in SETTINGS}) == len(SETTINGS)
    assert set(declared) | NOT_FLAGS == fields and not set(declared) & NOT_FLAGS


def test_the_command_line_has_each_declared_flag_with_its_default_and_help():
    actions = run_actions()
    for s in SETTINGS:
        a = actions[s.key]
        assert a.option_strings == [s.flag] and a.help == s.help_text()
        # a setting with a benchmark's own default is unset until the benchmark is known (config_from_args)
        assert a.default == (None if s.bench_defaults else s.default if s.kind != Switch(False) else True), s.key
        assert tuple(a.choices or ()) == s.choices


def test_the_demo_has_its_own_defaults_and_fewer_flags():
    args = build_parser().parse_args(["demo"])
    cfg = config_from_args(args)
    assert (cfg.workers, cfg.pace_cooldown, cfg.bench, cfg.model) == (2, 0.0, "offline", "oracle")
    assert not hasattr(args, "bench") and not hasattr(args, "arm")


def test_the_form_shows_the_labelled_settings_and_reads_them_back(tmp_path):
    assert {f.key for f in FIELDS} == {s.key for s in SETTINGS if s.label}
    assert all(f.flag == BY_KEY[f.key].flag and f.label == BY_KEY[f.key].label for f in FIELDS)
    cfg = RunConfig(out=tmp_path / "r", bench="webvoyager", workers=7, pace_cooldown=45.5, levels=["easy", "hard"],
                    limit=3, site_slots=0, coordinates="pixels", timezone="Europe/Paris")
    back = config_from_values(values_from_config(cfg))
    assert back == cfg
    assert config_from_values(DEFAULTS).bench == "offline"   # a first launch runs the offline suite


def test_doctor_lists_what_a_run_changes():
    cfg = RunConfig(out="x", workers=8, pace_cooldown=60, vision=False, levels=["easy"])
    assert changed(cfg) == ["--level easy", "--no-vision", "--workers 8", "--pace-cooldown 60"]
    assert changed(RunConfig(out="x")) == []


def test_the_offline_suite_paces_with_no_cooldown_unless_one_is_given():
    """Its sites are local: 120 s cooldowns left both slots idle (19 tasks in 10 minutes against 2:41 at 0, issue 26
    item 12). Declared with the setting, so the run, doctor's changed flags and run.json all say 0."""
    def cfg(*argv: str) -> RunConfig:
        return config_from_args(build_parser().parse_args(["run", "--out", "x", *argv]))

    assert cfg("--bench", "offline").pace_cooldown == 0.0
    assert cfg("--bench", "offline", "--pace-cooldown", "30").pace_cooldown == 30.0
    assert cfg().pace_cooldown == cfg("--bench", "om2w").pace_cooldown == 120.0
    assert BY_KEY["pace_cooldown"].default_for("offline") == 0.0
    assert changed(cfg("--bench", "offline")) == ["--bench offline"]
    assert changed(cfg("--bench", "offline", "--pace-cooldown", "120")) == ["--bench offline", "--pace-cooldown 120"]
    assert "default: 120; offline: 0" in BY_KEY["pace_cooldown"].help_text()


def test_the_checks_leave_the_config_they_check_as_it_was_given(tmp_path):
    """run_checks found the Chromium and the user agent and wrote them into the config, so doctor listed
    `--chromium` and `--user-agent` that were never given (issue 26 item 11): what they found comes beside it."""
    import copy

    from om2w_tui.engine.launch import run_checks

    given = config_from_args(build_parser().parse_args(["run", "--bench", "offline", "--model", "oracle", "--out",
                                                         str(tmp_path / "run")]))
    before = copy.deepcopy(given)
    pre, checks = run_checks(given, check_model=False)
    assert pre is not None, checks
    assert given == before and changed(given) == ["--bench offline", "--model oracle"]
    assert pre.config is given and pre.resolved.chromium and pre.resolved.user_agent not in (None, "auto")
    run = pre.run_config    # what the run's workers get
    assert (run.chromium, run.user_agent) == (pre.resolved.chromium, pre.resolved.user_agent)
    assert given.chromium is None and given.user_agent == "auto"


def test_doctor_lists_only_the_flags_given(tmp_path):
    """`om2w-tui doctor` as a process: its last row, the settings the run changes, names only what was given."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", "doctor", "--bench", "offline", "--model", "m",
                           "--vllm", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert proc.returncode == 2 and "does not answer" in proc.stdout   # the endpoint: nothing listens there
    assert "chromium       │ ok" in proc.stdout and "cooldown 0 s (the offline benchmark's default)" in rows[0]
    assert rows[-1].split("│")[3].strip() == "--bench offline --model m --vllm http://127.0.0.1:9/v1"


def test_a_key_given_for_a_key_variables_name_is_never_shown_by_any_check():
    """A key pasted where its variable's name belongs (`--api-key-env sk-...`) is refused by every key-variable
    setting's parser and check, the message saying what to do and never the value given."""
    from om2w_tui.engine.settings import KeyVariable  # the kind only for this test

    key = "sk-proj-abc123secretvalue"
    keyed = [s for s in SETTINGS if isinstance(s.kind, KeyVariable)]
    assert {s.key for s in keyed} >= {"api_key_env", "judge_api_key_env"}
    for s in keyed:
        try:
            s.parse(key)
        except ValueError as e:
            message = str(e)
        else:
            raise AssertionError(f"{s.flag} took a key for a name")
        assert "give the variable's NAME, e.g. OPENAI_API_KEY" in message and "sk-" not in message
        problem = s.check(key)
        assert problem.startswith(s.flag) and "sk-" not in problem and "abc123" not in problem
        assert s.parse("LORA_KEY") == "LORA_KEY" and s.check("LORA_KEY") == ""
        # a key made only of a name's letters would be taken for one, then written (campaign.json, run.json) and
        # shown (`$NAME is not set`): refused as what it looks like, unshown
        for token in ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AKIAIOSFODNN7EXAMPLE", "q7Xb2LmN9pQr4StUv8WxYz"):
            problem = s.check(token)
            assert "looks like a key" in problem and token not in problem and "OPENAI_API_KEY" in problem
        assert s.check("hf_inference_key") == s.check("OM2W_PLANTED_API_KEY") == s.check("MyServiceKey") == ""


@pytest.mark.parametrize(("text", "said"), [
    ("99999999999999999999", "99999999999999999999: must be 1 to 512"),
    ("-99999999999999999999999", "-99999999999999999999999: must be 1 to 512"),
    pytest.param("9" * 5000, "9" * 40 + ": must be 1 to 512", id="5000 digits"),
    ("100000", "100000: must be 1 to 512"),
    ("1.5", "1.5: not a whole number (a whole number has no decimal point)"),
])
def test_a_whole_number_of_any_length_is_told_its_range_not_that_it_is_no_whole_number(text, said):
    with pytest.raises(ValueError) as e:
        parse_number(text, whole=True, low=1, high=512)
    assert str(e.value) == said
    assert parse_number("0" * 300 + "7", whole=True, low=1, high=512) == 7
