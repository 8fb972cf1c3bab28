"""The launch form's values: parsing, remembering (no secrets), where they live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om2w_tui.engine.config import RunConfig
from om2w_tui.frontends.console.launch_values import (
    DEFAULTS,
    FormError,
    config_from_values,
    field_of_problem,
    last_launch_path,
    load_values,
    save_values,
    values_from_config,
)


def test_the_last_launch_lives_under_xdg_config_home_or_dot_config():
    assert last_launch_path({"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"}) == Path(
        "/x/cfg/om2w-tui/last_launch.json")
    assert last_launch_path({"HOME": "/home/u"}) == Path("/home/u/.config/om2w-tui/last_launch.json")


def test_values_round_trip_through_a_config_and_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-value")
    cfg = RunConfig(out=tmp_path / "run", bench="webvoyager", tasks=tmp_path / "wv.jsonl", task_ids=["a", "b"],
                    levels=["easy"], sites=["example.com"], limit=3, model="qwen", vllm="http://h:1/v1",
                    api_key_env="MY_KEY", timeout=600, max_steps=12, pace_cooldown=30, workers=5)
    path = tmp_path / "cfg" / "last_launch.json"
    save_values(path, values_from_config(cfg))
    text = path.read_text()
    assert "sk-secret-value" not in text and json.loads(text)["api_key_env"] == "MY_KEY"
    again = config_from_values(load_values(path))
    assert again.to_json() == {**cfg.to_json(), "chromium": None}


def test_a_missing_or_broken_file_gives_the_defaults(tmp_path):
    assert load_values(tmp_path / "none.json") == DEFAULTS
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert load_values(bad) == DEFAULTS
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"bench": "nope", "workers": 7, "api_key": "leak?"}))
    values = load_values(odd)
    assert values["bench"] == DEFAULTS["bench"] and values["workers"] == "7" and "api_key" not in values


@pytest.mark.parametrize("key,value,says", [
    ("workers", "0", "must be 1 to 512"), ("workers", "two", "not a whole number"),
    ("timeout", "0", "more than 0"), ("pace_cooldown", "-1", "0 to 86400"), ("out", " ", "out folder"),
    ("max_steps", "", "(empty): give a whole number"), ("timeout", "nan", "nan: not a number"),
    ("pace_cooldown", "inf", "inf: not a number"), ("workers", "100000", "must be 1 to 512"),
    ("vllm", "http://[abc/x", "is not a URL"), ("vllm", "http://h:99999/v1", "is not a URL"),
    ("vllm", "http://:80/", "names no host"), ("api_key_env", "MY KEY", "not an environment variable's name"),
])
def test_a_value_that_cannot_be_read_names_its_field(key, value, says):
    with pytest.raises(FormError) as e:
        config_from_values({**DEFAULTS, key: value})
    assert e.value.key == key and says in str(e.value)


def test_a_preflight_problem_is_pinned_to_its_field():
    assert field_of_problem("--vllm http://x/v1: the endpoint does not answer (ConnectError).") == "vllm"
    assert field_of_problem("--model m: not served by http://x/v1") == "model"
    assert field_of_problem("--out /root: is a file, not a folder") == "out"
    assert field_of_problem("no task left after the filters (--task-ids/--level/--site/--limit)") == "task_ids"
    assert field_of_problem("Chromium not found") is None


def test_the_agent_and_browser_settings_are_in_the_form(tmp_path):
    template = tmp_path / "prompt.txt"
    template.write_text("On {website}: {task}")
    cfg = config_from_values({**DEFAULTS, "instruction_template_file": str(template), "coordinates": "pixels",
                              "viewport": "1024x768", "user_agent": "", "locale": "fr-FR", "timezone": "Europe/Paris"})
    assert (cfg.instruction_template, cfg.instruction_template_file) == ("On {website}: {task}", template)
    assert cfg.browser_settings().as_dict() == {"viewport": "1024x768", "user_agent": "auto", "locale": "fr-FR",
                                      "timezone": "Europe/Paris"}
    assert cfg.coordinates == "pixels"
    assert field_of_problem("--timezone Mars/Base: not an IANA time zone") == "timezone"
    assert field_of_problem("--viewport 1x1: give WIDTHxHEIGHT") == "viewport"
    with pytest.raises(FormError) as e:
        config_from_values({**DEFAULTS, "instruction_template_file": str(tmp_path / "missing.txt")})
    assert e.value.key == "instruction_template_file" and "--instruction-template" in str(e.value)


def test_where_episodes_run_and_the_shared_pace_dir_are_in_the_form(tmp_path):
    """The executor, the Ray cluster and --pace-dir are launched from the form as from the command line; a shard
    (a node of a cluster split, run headless) stays a flag."""
    assert DEFAULTS["executor"] == "local" and DEFAULTS["pace_dir"] == "" and DEFAULTS["ray_address"] == ""
    cfg = config_from_values({**DEFAULTS, "executor": "ray", "ray_address": "127.0.0.1:6379",
                              "pace_dir": str(tmp_path / "pace")})
    assert (cfg.executor, cfg.ray_address, cfg.pace_dir) == ("ray", "127.0.0.1:6379", tmp_path / "pace")
    plain = config_from_values(DEFAULTS)
    assert (plain.executor, plain.ray_address, plain.pace_dir) == ("local", None, None)
    with pytest.raises(FormError) as e:
        config_from_values({**DEFAULTS, "executor": "slurm"})
    assert e.value.key == "executor" and "local, ray" in str(e.value)
    assert field_of_problem("--pace-dir /etc/passwd: is a file, not a folder") == "pace_dir"
    assert field_of_problem("--executor ray: Ray is not installed (pip install 'om2w-tui[ray]')") == "executor"
    assert field_of_problem("--ray-address 10.0.0.1:6379: no Ray cluster answers there") == "ray_address"
    saved = tmp_path / "last.json"
    save_values(saved, values_from_config(cfg))
    assert config_from_values(load_values(saved)).to_json() == cfg.to_json()


def test_a_switch_is_true_or_false_on_the_form_and_never_remembered(tmp_path):
    """`resume changed` (--resume-changed): `true`/`false` (any case), empty its default; anything else is refused
    naming the field; whatever the form held, the file keeps nothing of it."""
    assert config_from_values({**DEFAULTS, "resume_changed": "True"}).resume_changed is True
    assert config_from_values({**DEFAULTS, "resume_changed": ""}).resume_changed is False
    with pytest.raises(FormError, match="resume changed: yes: give true or false") as refused:
        config_from_values({**DEFAULTS, "resume_changed": "yes"})
    assert refused.value.key == "resume_changed"
    path = tmp_path / "last_launch.json"
    save_values(path, {**DEFAULTS, "resume_changed": "true"})
    assert json.loads(path.read_text())["resume_changed"] == "" and load_values(path)["resume_changed"] == ""
