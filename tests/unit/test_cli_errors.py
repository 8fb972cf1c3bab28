"""`om2w-tui run --no-ui` on bad input, as a real process: exit code 2, a message on stderr that names the file,
line or flag, and nothing written (the --out folder is not even created)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from om2w_tui.cli.main import main
from tests.fakes import Reply, StubServer
from tests.stand_ins import STAND_IN_CHROMIUM
from tests.unit.helpers import (
    REPO,
    SECRET,
    assert_usage_error,
    good_rows,
    listing,
    make_campaign,
    make_run,
    record,
    run_cli,
    task_file,
)


def test_a_good_preflight_reaches_past_these_checks(work, monkeypatch):
    """The harness itself: with good input and --model oracle the same flags pass preflight (not a usage error)."""
    monkeypatch.chdir(work)
    from om2w_tui.cli.main import build_parser, config_from_args
    from om2w_tui.engine.launch import preflight

    args = build_parser().parse_args(["run", "--no-ui", "--out", str(work / "out"), "--chromium", STAND_IN_CHROMIUM,
                                      "--model", "oracle", "--tasks", str(work / "tasks.json")])
    pre = preflight(config_from_args(args))
    assert [t.task_id for t in pre.tasks] == ["a", "b"] and pre.config.chromium == STAND_IN_CHROMIUM
    assert not (work / "out").exists()


def test_missing_tasks_file(work):
    proc = run_cli(work, "--tasks", str(work / "nope.json"))
    assert_usage_error(proc, f"{work / 'nope.json'}: no such task file")
    assert not (work / "out").exists()


def test_no_tasks_flag_for_a_benchmark_without_its_shipped_file(work, monkeypatch):
    """`--bench om2w` reads data/Online_Mind2Web.json (tests/unit/test_resources.py); where that file is missing,
    the message says to pass --tasks or fetch it."""
    from om2w_tui.engine import launch
    from om2w_tui.engine.config import RunConfig

    monkeypatch.setattr(launch, "default_task_file", lambda bench: work / "missing" / "Online_Mind2Web.json")
    with pytest.raises(launch.UsageError) as e:
        launch._load_selection(RunConfig(out=work / "out", bench="om2w"))
    assert "--bench om2w needs --tasks PATH" in str(e.value) and "tasks fetch om2w" in str(e.value)


def test_out_is_required(work):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--tasks", "tasks.json",
                           "--model", "oracle", "--chromium", STAND_IN_CHROMIUM], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert_usage_error(proc, "--out")


def test_invalid_json_names_line_and_column(work):
    p = task_file(work, '[\n {"task_id": "a",\n  "confirmed_task": nope}\n]')
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:3:21: invalid JSON")
    assert not (work / "out").exists()


def test_invalid_jsonl_names_the_line(work):
    p = task_file(work, json.dumps(good_rows()[0]) + "\n{oops\n", "bad.jsonl")
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:2:")


@pytest.mark.parametrize("text", ['{"task_id": "a"}', "3"])
def test_json_that_is_not_a_list(work, text):
    p = task_file(work, text)
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}: expected a JSON list")


def test_missing_fields(work):
    p = task_file(work, json.dumps([good_rows()[0], {"task_id": "b", "website": "https://b.com/"}]))
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:1: task #2: missing confirmed_task")


def test_duplicate_ids(work):
    p = task_file(work, json.dumps(good_rows() + [good_rows()[0]]))
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:1: task #3: duplicate task id 'a'",
                       f"first at {p}:1: task #1")


def test_unsafe_id(work):
    p = task_file(work, json.dumps([{**good_rows()[0], "task_id": "../x"}]))
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:1: task #1", "'../x'", "a task id is a JSON string")
    assert not (work.parent / "x").exists()


def test_website_not_http(work):
    p = task_file(work, json.dumps([{**good_rows()[0], "website": "ftp://x"}]))
    assert_usage_error(run_cli(work, "--tasks", str(p)), f"{p}:1: task #1", "'ftp://x'", "http(s)")


def test_unknown_task_id(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--task-ids", "nope"),
                       "--task-ids", "not in the task file: nope")


def test_empty_selection(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--site", "a.com", "--level", "hard"),
                       "no task left after the filters", "tasks.json")


def test_unknown_site(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--site", "nothing"),
                       "--site nothing: no task in the task file is on this site (its sites: a.com, b.com)")


def test_unknown_level(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--level", "hardest"),
                       "--level hardest: no task in the task file has this level (its levels: ")


@pytest.mark.parametrize("flag,value", [("--workers", "0"), ("--workers", "two"), ("--timeout", "-5"),
                                        ("--timeout", "0"), ("--max-steps", "0"), ("--pace-cooldown", "-1")])
def test_bad_numbers(work, flag, value):
    proc = run_cli(work, "--tasks", "tasks.json", flag, value)
    assert_usage_error(proc, f"{flag} {value}")


def test_out_is_an_existing_file(work):
    out = work / "taken.txt"
    out.write_text("precious\n")
    proc = run_cli(work, "--tasks", "tasks.json", out=out)
    assert_usage_error(proc, f"--out {out}", "not a folder")
    assert out.read_text() == "precious\n"


def test_chromium_not_found(work):
    proc = run_cli(work, "--tasks", "tasks.json", chromium="/nonexistent")
    assert_usage_error(proc, "--chromium /nonexistent", "not an executable file")


def test_chromium_not_executable(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", chromium=str(work / "tasks.json")), "--chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_that_does_not_answer(work):
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = run_cli(work, "--tasks", "tasks.json", "--vllm", url, model="qwen")
    assert_usage_error(proc, f"--vllm {url}", "does not answer")


def fake_vllm(served: list[str], status: int = 200) -> StubServer:
    """GET /v1/models on 127.0.0.1, serving the given model names (or an HTTP status); any other path is a 404."""
    listing = {"object": "list", "data": [{"id": m, "object": "model"} for m in served]}
    return StubServer({"GET /v1/models": Reply(status, listing)}, default=Reply(404, listing))


def test_model_not_served(work):
    with fake_vllm(["other"]) as vllm:
        proc = run_cli(work, "--tasks", "tasks.json", "--vllm", f"{vllm.url}/v1", model="qwen")
    assert_usage_error(proc, "--model qwen", "not served", "other")
    # the list, then the model by name (servers that list aliases apart); the key only ever in the header
    assert [(r.path, r.header("Authorization")) for r in vllm.requests] == [
        ("/v1/models", f"Bearer {SECRET}"), ("/v1/models/qwen", f"Bearer {SECRET}")]
    assert not (work / "out").exists()


def test_endpoint_refuses_the_key(work):
    with fake_vllm(["qwen"], status=401) as vllm:
        proc = run_cli(work, "--tasks", "tasks.json", "--vllm", f"{vllm.url}/v1", model="qwen")
    assert_usage_error(proc, f"--vllm {vllm.url}/v1", "HTTP 401", "--api-key-env")


def test_negative_limit(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--limit", "-1"), "--limit -1")


def test_out_below_an_existing_file(work):
    blocker = work / "taken.txt"
    blocker.write_text("precious\n")
    proc = run_cli(work, "--tasks", "tasks.json", out=blocker / "sub")
    assert_usage_error(proc, "--out", str(blocker))
    assert blocker.read_text() == "precious\n"


def test_endpoint_url_with_a_bad_port(work):
    assert_usage_error(run_cli(work, "--tasks", "tasks.json", "--vllm", "http://[::1", model="qwen"), "--vllm")


@pytest.mark.parametrize("argv, usage", [
    (["run", "--wokers", "3", "--out", "x"], "om2w-tui run"),
    (["report", "--formt", "md", "x"], "om2w-tui report"),
    (["tasks", "fetch", "om2w", "--revison", "r"], "om2w-tui tasks fetch"),
    (["doctor", "--pace-cooldwn", "3"], "om2w-tui doctor"),
])
def test_a_mistyped_flag_prints_its_subcommands_usage(work, argv, usage):
    """argparse handed a subcommand's unknown flag to the main parser, which printed `usage: om2w-tui [-h]
    {run,...}` (issue 26 item 10): the subcommand's own usage says which flags there are."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", *argv], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"usage: {usage} [-h]"), proc.stderr
    assert f"{usage}: error: unrecognized arguments: {argv[1] if argv[0] != 'tasks' else argv[3]}" in proc.stderr


def test_pair_hold_on_a_run_is_refused_as_a_campaigns_and_the_demo_has_none(work, capsys):
    """`--pair-hold` keeps a slot for a task's next unit: a run has one unit a task, so the flag would do nothing."""
    p = task_file(work, json.dumps(good_rows()), name="ok.json")
    assert_usage_error(run_cli(work, "--tasks", str(p), "--pair-hold", "30"), "--pair-hold: a campaign's")
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "--pair-hold" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, hint", [
    (["check", "{f}"], "give a run's --out folder"),
    (["report", "{f}"], "give a run's --out folder"),
    (["report", "--html", "{w}/site", "{f}"], "give a run's --out folder"),
    (["judge", "{f}", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m"], "give a run's --out folder"),
    (["label", "{f}", "--export", "{w}/hl.json", "--agent", "a"], "give a run's --out folder"),
    (["tasks", "health", "{f}"], "a campaign's"),
    (["ctl", "{f}", "status"], "give the --out folder of a running run"),
    (["attach", "{f}"], "give the --out folder of a running run"),
])
def test_a_file_given_for_a_run_folder_is_named_a_file(work, capsys, argv, hint):
    """One check for every command taking a run's folder (run_folder.folder_problem): a file there is not "no such
    folder" (it is there), and nothing is written."""
    f = work / "stub.py"
    f.write_text("print('not a run')\n")
    assert main([a.format(f=f, w=work) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{f}: is a file, not a folder (" in err and hint in err, err
    assert sorted(p.name for p in work.iterdir()) == ["stub.py", "tasks.json"]


def test_every_flag_the_guide_gives_judge_is_in_its_help(capsys):
    """docs/judging.md's `judge` entry names --request-timeout and --backoff; `judge --help` hid them."""
    import re

    guide = (REPO / "docs" / "judging.md").read_text()
    entry = guide.split("- **`judge OUT --judge-model M --judge-url URL`**")[1].split("\n- **")[0]
    flags = set(re.findall(r"`(--[a-z][a-z-]+)", entry))
    assert {"--request-timeout", "--retries"} <= flags
    with pytest.raises(SystemExit):
        main(["judge", "--help"])
    shown = capsys.readouterr().out
    assert [f for f in sorted(flags | {"--backoff"}) if f not in shown] == []
    assert "--backoff S           seconds before the first retry" in shown
    assert "--request-timeout S   seconds one call may take in all" in shown


def test_an_out_inside_a_run_folder_or_a_campaigns_folder_is_refused_for_a_run_and_a_campaign(work, tmp_path,
                                                                                                capsys):
    """The official evaluator takes every subfolder of a run's folder as a task: no run or campaign is written
    inside one (a lane's, or any run's: the rule `report --html` asks); a run is never written into a campaign's
    folder, nor as one of its lanes or beside them. Exit 2 naming the folder, nothing written."""
    camp = make_campaign(work / "camp")
    before = listing(camp)
    for lane, out in ((camp / "base", camp / "base" / "sub"), (camp / "agent-r2", camp / "agent-r2" / "x" / "sub")):
        proc = run_cli(work, "--tasks", str(work / "tasks.json"), out=out)
        assert_usage_error(proc, f"--out {out}: inside the run folder {lane}; the official evaluator takes every "
                                 f"subfolder of a run for a task")
    proc = run_cli(work, "--tasks", str(work / "tasks.json"), out=camp)
    assert_usage_error(proc, f"--out {camp}: a campaign's folder (its campaign.json)")
    for out in (camp / "base", camp / "new"):   # a lane, or a folder beside them: a lane runs with its campaign
        proc = run_cli(work, "--tasks", str(work / "tasks.json"), out=out)
        assert_usage_error(proc, f"--out {out}: a folder of the campaign in {camp} (its campaign.json), where its "
                                 f"lanes are")
    plan = tmp_path / "plan.toml"
    plan.write_text(f'bench = "om2w"\ntasks = "{work / "tasks.json"}"\nmodel = "oracle"\n'
                    f'chromium = "{STAND_IN_CHROMIUM}"\nout = "{tmp_path / "study"}"\n[arms.base]\n')
    capsys.readouterr()
    assert main(["campaign", str(plan), "--no-ui", "--out", str(camp / "base" / "sub")]) == 2
    assert f"--out {camp / 'base' / 'sub'}: inside the run folder {camp / 'base'}" in capsys.readouterr().err
    # the plan's own out: named at its line in the plan, as the plan's other problems are, not as a flag
    plan.write_text(plan.read_text().replace(str(tmp_path / "study"), str(camp / "base" / "sub")))
    assert main(["campaign", str(plan), "--no-ui"]) == 2
    assert f"om2w-tui: {plan}:5: out {camp / 'base' / 'sub'}: inside the run folder {camp / 'base'}" in \
        capsys.readouterr().err
    assert main(["doctor", "--arm", "base", "--arm", "agent", "--out", str(camp / "agent" / "sub"), "--tasks",
                 str(work / "tasks.json"), "--model", "oracle", "--chromium", STAND_IN_CHROMIUM]) == 2
    assert listing(camp) == before


@pytest.mark.parametrize("value", ["0", "65", "99999999999999999999", "two"])
def test_judge_workers_has_the_bounds_and_message_of_a_runs_judge_workers(tmp_path, capsys, value):
    """`judge --workers` and `run --judge-workers` are one setting (engine/settings.py's declaration)."""
    said = {}
    for argv, flag in ((["judge", str(tmp_path), "--judge-model", "m", "--judge-url", "http://127.0.0.1:9/v1"],
                        "--workers"),
                       (["run", "--bench", "offline", "--model", "oracle", "--out", str(tmp_path / "x"), "--no-ui"],
                        "--judge-workers")):
        with pytest.raises(SystemExit) as e:
            main([*argv, flag, value])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"{flag} {value}: " in err, err
        said[flag] = err.rsplit(f"{flag} {value}: ", 1)[1]
    assert said["--workers"] == said["--judge-workers"]


@pytest.mark.parametrize("argv", [["check", "{out}"], ["report", "{out}", "--format", "csv"],
                                  ["report", "{out}", "--format", "md"], ["report", "{out}"]])
def test_a_reader_that_goes_away_ends_any_command_quietly(tmp_path, argv):
    """`om2w-tui ... | head -0`: the pipe's reader closed before a line is written; no traceback, exit 1."""
    out = make_run(tmp_path / "run", [record(f"t{i}", correct=True) for i in range(3)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    read, write = os.pipe()
    os.close(read)                    # the reader is gone before the command writes its first byte
    try:
        proc = subprocess.run([sys.executable, "-m", "om2w_tui", *(a.format(out=out) for a in argv)], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 1


def test_a_broken_pipe_that_is_not_stdouts_is_still_an_error(monkeypatch):
    from om2w_tui.cli import tools

    def broken(args):
        raise BrokenPipeError("a socket's")
    monkeypatch.setattr(tools, "run", broken)
    with pytest.raises(BrokenPipeError, match="a socket's"):
        main(["check", "."])
