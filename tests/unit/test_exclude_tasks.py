"""`--exclude-tasks FILE` (issue 28 item 6): the task ids a file names (one a line, `#` comments) are left out of the
run's selection before anything starts, named in the preflight's task line and recorded in run.json; ids the task
file lacks are warned of; a file that cannot be read exits 2 naming the file and its line, writing nothing."""

from __future__ import annotations

import json

import pytest

from om2w_tui.cli.main import build_parser, config_from_args
from om2w_tui.cli.main import main as cli_main
from om2w_tui.engine.launch import WARNING, preflight, run_checks, write_manifest
from tests.stand_ins import STAND_IN_CHROMIUM
from tests.unit.helpers import assert_usage_error, run_cli


def config(work, *flags: str):
    args = build_parser().parse_args(["run", "--no-ui", "--out", str(work / "out"), "--chromium", STAND_IN_CHROMIUM,
                                      "--model", "oracle", "--tasks", str(work / "tasks.json"), *flags])
    return config_from_args(args)


def test_the_tasks_a_file_names_never_start_and_run_json_names_them(work):
    (work / "skip.txt").write_text("# walled: tasks health's candidates\n\nb   # bot wall twice\n")
    cfg = config(work, "--exclude-tasks", str(work / "skip.txt"))
    pre = preflight(cfg)
    assert [t.task_id for t in pre.tasks] == ["a"]        # what the scheduler is given: `b` never starts
    line = next(detail for what, _, detail in pre.checks if what == "tasks")
    assert f"1 selected, 1 left out by --exclude-tasks {work / 'skip.txt'}: b" in line
    cfg.out.mkdir()
    write_manifest(pre)
    manifest = json.loads((cfg.out / "run.json").read_text())
    assert manifest["task_file"]["excluded"] == ["b"] and manifest["config"]["exclude_tasks"] == str(work / "skip.txt")


def test_ids_the_task_file_lacks_are_warned_of_and_the_run_may_start(work):
    (work / "skip.txt").write_text("a\nnot-a-task\n")
    pre, checks = run_checks(config(work, "--exclude-tasks", str(work / "skip.txt")), check_model=False)
    assert pre is not None and [t.task_id for t in pre.tasks] == ["b"]
    (what, ok, detail), = [c for c in checks if c[0] == "tasks"]
    assert ok == WARNING and "not in the task file, ignored: not-a-task" in detail


def test_every_task_left_out_is_no_run(work):
    (work / "skip.txt").write_text("a\nb\n")
    pre, checks = run_checks(config(work, "--exclude-tasks", str(work / "skip.txt")), check_model=False)
    assert pre is None and any("no task left after the filters" in d and "--exclude-tasks" in d for _, _, d in checks)


@pytest.mark.parametrize("text, says", [(b"a\nb c\n", "line 2: 'b c' is not one task id"),
                                        (b"a\n\n\xff\n", "line 3: not UTF-8 text"),
                                        (None, "no such file")])
def test_a_bad_file_exits_2_naming_the_file_and_line(work, text, says):
    path = work / "skip.txt"
    if text is not None:
        path.write_bytes(text)
    proc = run_cli(work, "--tasks", str(work / "tasks.json"), "--exclude-tasks", str(path))
    assert_usage_error(proc, f"--exclude-tasks {path}", says)


def test_doctor_names_the_tasks_left_out(work, capsys):
    (work / "skip.txt").write_text("b\n")
    code = cli_main(["doctor", "--tasks", str(work / "tasks.json"), "--model", "oracle", "--chromium",
                     STAND_IN_CHROMIUM, "--out", str(work / "o"), "--exclude-tasks", str(work / "skip.txt")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "left out by --exclude-tasks" in out and "1 selected" in out
