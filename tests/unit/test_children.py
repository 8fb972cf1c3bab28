"""Issue 30 items 3 and 5: children get nothing they do not need (every key variable of the run withheld from
workers, probes and Chromium; the user's folder never on a child's import path), and what cannot succeed is refused
when the task file and the settings are read."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from om2w_tui.benchmarks.tasks import TASK_ID_RULE
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import make_executor
from om2w_tui.engine.model_check import probe_spec
from om2w_tui.engine.settings import SETTINGS, KeyVariable, key_variables
from om2w_tui.evaluation.labels import LabelFileError, check_annotator
from om2w_tui.executors.local import WorkerProcess, python_module, worker_environment
from om2w_tui.executors.ray import ActorWorkerProcess
from tests.unit.helpers import assert_usage_error, good_rows, run_cli

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


# ── what cannot succeed, refused at load through the real command line (exit 2, named, nothing written) ──────────
def test_the_agents_limits_are_browser_uses_own():
    from browser_use.agent import cloud_events

    from om2w_tui.benchmarks.tasks import MAX_INSTRUCTION_CHARS, MAX_WEBSITE_CHARS

    assert MAX_INSTRUCTION_CHARS == cloud_events.MAX_TASK_LENGTH
    assert MAX_WEBSITE_CHARS == cloud_events.MAX_URL_LENGTH


def _jsonl(work: Path, row: dict[str, Any], raw_tail: str = "") -> Path:
    """A one-task JSONL file (its second line the task); `raw_tail` is spliced into the object as written."""
    text = json.dumps(row)
    if raw_tail:
        text = text[:-1] + ", " + raw_tail + "}"
    p = work / "bad.jsonl"
    p.write_text(json.dumps(good_rows()[1]) + "\n" + text + "\n")
    return p


@pytest.mark.parametrize("tid", [5, "-rf", "café", ".hidden", "a\n"])
def test_task_ids_are_refused_by_the_rule_the_message_states(work, tid):
    p = _jsonl(work, {**good_rows()[0], "task_id": tid})
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:2: task id", TASK_ID_RULE)


def test_a_website_with_credentials_is_refused_without_showing_them(work):
    p = _jsonl(work, {**good_rows()[0], "website": "https://user:pw-in-a-task-4411@shop.example/"})
    proc = run_cli(work, "--tasks", str(p))
    assert_usage_error(proc, f"{p}:2: website", "carries credentials")
    assert "pw-in-a-task-4411" not in proc.stderr


@pytest.mark.parametrize("port", [6000, 10080, 6666, 25])
def test_a_website_on_a_port_chromium_refuses_is_refused(work, port):
    p = _jsonl(work, {**good_rows()[0], "website": f"http://127.0.0.1:{port}/"})
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:2: website", f"port {port}", "Chromium refuses")


def test_a_task_text_longer_than_the_agent_takes_is_refused(work):
    p = _jsonl(work, {**good_rows()[0], "confirmed_task": "x" * 150_000})
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:2: the text of task a is 150,000 characters",
                       "at most 100,000")


@pytest.mark.parametrize("tail,says", [
    # past 64 bits the one decoder refuses the number before the loader sees it (json_input.py)
    ('"reference_length": 1' + "0" * 400, "(401 digits) is beyond 64 bits"),
    ('"max_steps": 1' + "0" * 400, "(401 digits) is beyond 64 bits"),
    ('"reference_length": 10001', "reference_length of task a must be a whole number from 0 to 10000"),
    ('"max_steps": 10001', "max_steps of task a must be a whole number from 1 to 10000"),
    ('"extra": {"n": [-1' + "0" * 17 + "]}", "extra.n[0] of task a is a number of 18 digits"),
    ('"reference_length": "many"', "reference_length of task a must be a whole number"),
])
def test_numbers_beyond_their_range_anywhere_in_a_task_are_refused(work, tail, says):
    p = _jsonl(work, good_rows()[0], tail)
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:2: ", says)


@pytest.mark.parametrize("flag,url", [("--vllm", "http://127.0.0.1:9/v1?x=1"),
                                      ("--vllm", "http://127.0.0.1:9/v1?api_key=sk-in-a-query-93"),
                                      ("--vllm", "http://127.0.0.1:9/v1#frag"),
                                      ("--judge-url", "http://127.0.0.1:9/v1?x=1")])
def test_an_endpoint_with_a_query_or_a_fragment_is_refused(work, flag, url):
    proc = run_cli(work, "--tasks", "tasks.json", flag, url, "--judge-model", "j", model="qwen")
    assert_usage_error(proc, flag, "/chat/completions")
    assert "sk-in-a-query-93" not in proc.stderr


def test_an_instruction_longer_than_the_agent_takes_is_refused(work):
    long = work / "long.txt"
    long.write_text("{task}" + "x" * 100_000)
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--instruction-template", str(long)),
                       f"--instruction-template {long}", "at most 100,000")
    fills = work / "fills.txt"
    fills.write_text("{task}" + "x" * 99_990)   # itself short enough; filled with task a's 100 characters it is not
    p = _jsonl(work, {**good_rows()[0], "confirmed_task": "y" * 100})
    assert_usage_error(run_cli(work, "--tasks", str(p), "--instruction-template", str(fills)),
                       f"--instruction-template {fills}", "filled with task a it is 100,090", "at most 100,000")


def test_a_symlinked_worker_log_is_refused_before_the_run_starts(work, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "worker_3.log").symlink_to(tmp_path / "victim")
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", out=out), "worker_3.log", "symbolic link")
    assert not (tmp_path / "victim").exists() and sorted(p.name for p in out.iterdir()) == ["worker_3.log"]


@pytest.mark.parametrize("name", ["bob\n", "bob\nx", ""])
def test_an_annotator_name_is_matched_whole(tmp_path, name):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text("")     # a run, so that the name is what is refused
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", "label", str(tmp_path / "run"), "--annotator", name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "--annotator" in proc.stderr, proc.stderr
    with pytest.raises(LabelFileError):
        check_annotator(name)


def test_a_checkout_run_from_its_own_folder_still_finds_the_package(monkeypatch):
    """`python -m om2w_tui` from an uninstalled checkout found the package only in the folder it started in, which
    `-P` leaves off the worker's path: the package's own folder is then given explicitly (and only then)."""
    from om2w_tui.executors import local

    root = str(local._PACKAGE_ROOT)
    monkeypatch.setattr(sys, "path", [root, "/usr/lib/python3.11"])
    assert worker_environment({"PATH": "/bin"})["PYTHONPATH"] == root
    assert worker_environment({"PYTHONPATH": "/x"})["PYTHONPATH"] == os.pathsep.join((root, "/x"))
    monkeypatch.setattr(sys, "path", ["/elsewhere", root])   # found through PYTHONPATH or the install: nothing added
    assert "PYTHONPATH" not in worker_environment({"PATH": "/bin"})


def test_the_refused_ports_are_chromiums_own_not_the_fetch_standards_later_ones(tmp_path):
    """4190 and 6679 are on the Fetch standard's list but Chromium 156 opens them: a site there is not refused."""
    from om2w_tui.benchmarks.tasks import CHROMIUM_REFUSED_PORTS, parse_tasks

    assert {6000, 6665, 6669, 6697, 10080} <= CHROMIUM_REFUSED_PORTS and not {4190, 6679} & CHROMIUM_REFUSED_PORTS
    rows = [{**good_rows()[0], "website": "http://127.0.0.1:4190/"}]
    assert parse_tasks(tmp_path / "t.json", json.dumps(rows))[0].website.endswith(":4190/")
