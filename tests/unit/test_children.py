"""Issue 30 items 3 and 5: children get nothing they do not need (every key variable of the run withheld from
workers, probes and Chromium; the user's folder never on a child's import path), and what cannot succeed is refused
when the task file and the settings are read."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import make_executor
from om2w_tui.engine.model_check import probe_spec
from om2w_tui.engine.settings import SETTINGS, KeyVariable, key_variables
from om2w_tui.executors.local import WorkerProcess, python_module, worker_environment
from om2w_tui.executors.ray import ActorWorkerProcess

ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "OM2W_MODEL_KEY": "sk-model", "OM2W_JUDGE_KEY": "sk-judge",
       "OM2W_CHROMIUM": "/usr/bin/chromium", "BROWSER_USE_API_KEY": "bu-cloud", "RAY_REDIS_PASSWORD": "pw",
       "OM2W_ANYTHING": "x", "BROWSER_USE_LOGGING_LEVEL": "warning"}


def _cfg(tmp_path: Path) -> RunConfig:
    return RunConfig(out=tmp_path / "out", api_key_env="OM2W_MODEL_KEY", judge_api_key_env="OM2W_JUDGE_KEY")


def test_every_setting_that_names_a_key_variable_is_declared_one():
    """The withheld set is derived from the declaration: a setting naming an environment variable (a key's) must be
    a KeyVariable, or its key would reach every worker."""
    for s in SETTINGS:
        if s.key.endswith("_env") or "key" in s.flag:
            assert isinstance(s.kind, KeyVariable), s.flag
    assert {s.flag for s in SETTINGS if isinstance(s.kind, KeyVariable)} >= {"--api-key-env", "--judge-api-key-env"}


def test_the_run_withholds_every_key_variable_from_its_workers(tmp_path):
    cfg = _cfg(tmp_path)
    assert set(key_variables(cfg)) == {"OM2W_MODEL_KEY", "OM2W_JUDGE_KEY"}
    with contextlib.ExitStack() as stack:
        ex = make_executor(cfg, stack)
        env = worker_environment(ENV, ex.env, ex.withhold)
    assert "sk-model" not in env.values() and "sk-judge" not in env.values()
    assert env["OM2W_CHROMIUM"] == "/usr/bin/chromium" and env["OM2W_RUN_TAG"]


def test_the_probe_withholds_every_key_variable(tmp_path):
    spec = probe_spec(_cfg(tmp_path), "http://127.0.0.1:1/v1", [])
    env = worker_environment(ENV, withhold=spec.withhold)
    assert "sk-model" not in env.values() and "sk-judge" not in env.values()


def test_only_the_variables_a_worker_reads_pass_and_no_credential_by_its_name():
    env = worker_environment(ENV)
    assert "OM2W_ANYTHING" not in env and "BROWSER_USE_API_KEY" not in env and "RAY_REDIS_PASSWORD" not in env
    assert env["BROWSER_USE_LOGGING_LEVEL"] == "warning" and env["PATH"] == "/usr/bin"


def test_children_start_without_the_users_folder_on_their_import_path(tmp_path):
    assert WorkerProcess.command == python_module("om2w_tui.episode.worker")
    assert "-P" in python_module("x") and "-I" not in python_module("x")
    assert '"$0" -P -m om2w_tui.episode.worker' in ActorWorkerProcess.command[2]
    # a real child, started as a worker is, from a folder holding a json.py: the folder is not on its path
    (tmp_path / "json.py").write_text("raise SystemExit('planted json imported')\n")
    cmd = [*python_module("json.tool"), "--help"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=worker_environment(ENV), timeout=60)
    assert r.returncode == 0 and "planted" not in r.stderr
