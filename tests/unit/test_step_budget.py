"""A task's step budget is decided once, as its file is loaded (`benchmarks/tasks.py`): its own `max_steps` when it
is a JSON whole number from 1 to MAX_STEPS, else the run's `--max-steps`; anything else (a string "12" too) is
refused naming the file and line. Every reader (the scheduler, the worker's spec, the probe) takes `Task.max_steps`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import MAX_STEPS, TaskFileError, load_tasks
from om2w_tui.cli.main import main
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.model_check import probe_spec

ROW = {"task_id": "t1", "confirmed_task": "Find the lamp", "website": "https://shop.example/"}


@pytest.mark.parametrize("own", [None, 1, 7, MAX_STEPS, "12", " 7", "7.0", 0, -3, MAX_STEPS + 1, True, 2.5, 7.0,
                                 "many", [5], {"n": 5}])
def test_the_loader_decides_the_budget_by_one_rule(tmp_path, own):
    """What the loader accepts is the budget every reader uses; what it refuses no reader takes: before, the loader
    refused "12" while the budget the scheduler and the worker computed (`step_budget`) took it."""
    path = tmp_path / "tasks.jsonl"
    row = ROW if own is None else {**ROW, "max_steps": own}
    path.write_text("\n" + json.dumps(row) + "\n")
    if own is None or (type(own) is int and 1 <= own <= MAX_STEPS):
        (task,) = load_tasks(path, max_steps=9)
        assert task.max_steps == (9 if own is None else own)
        spec = RunConfig(out=tmp_path, max_steps=30).worker_spec(tmp_path / "t1", max_steps=task.max_steps)
        assert spec.max_steps == task.max_steps
    else:
        with pytest.raises(TaskFileError, match=rf"^{path}:2: max_steps of task t1 must be a whole number from 1 to "
                                                rf"{MAX_STEPS}, got "):
            load_tasks(path, max_steps=9)


def test_a_string_budget_stops_the_run_before_anything_is_written(tmp_path, capsys):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{**ROW, "max_steps": "12"}]))
    code = main(["run", "--no-ui", "--tasks", str(tasks), "--out", str(tmp_path / "out")])
    assert code == 2
    assert f"{tasks}:1: task #1: max_steps of task t1 must be a whole number from 1 to {MAX_STEPS}, got str" \
        in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_probe_asks_with_the_first_tasks_own_budget(tmp_path: Path):
    """The preflight's probe sends the run's first step as its worker would: with that task's budget, not the run's."""
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{**ROW, "max_steps": 5}, {**ROW, "task_id": "t2"}]))
    cfg = RunConfig(out=tmp_path, max_steps=30)
    tasks = load_tasks(path, cfg.max_steps)
    assert probe_spec(cfg, "http://h/v1", tasks).max_steps == 5
    assert probe_spec(cfg, "http://h/v1", tasks[1:]).max_steps == 30
    assert probe_spec(cfg, "http://h/v1", []).max_steps == 30
