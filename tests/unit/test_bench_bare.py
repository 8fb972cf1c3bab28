"""bench/bare.py compares like with like: each DOM-heavy task is played as itself by the oracle, the runners take
turns going first, and a difference in the episodes the two runners ran is reported, not averaged away."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from om2w_tui.offline.player import find_task

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bare.py"


@pytest.fixture(scope="module")
def bare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bare", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_oracle_plays_each_heavy_task_as_itself(bare: ModuleType) -> None:
    # tasks with one text were all played as the first: the others scrolled to the step budget, never answering
    tasks = bare.heavy_tasks([f"http://127.0.0.1:{9000 + s}/shop{s}/" for s in range(4)])
    for task in tasks:
        asked = f"{task['confirmed_task']}\n\nThe task starts on {task['website']} (already open in the browser)."
        assert find_task(tasks, asked) is task


def test_the_best_seller_is_below_the_results(bare: ModuleType) -> None:
    # the agent reads the answer only after scrolling through the whole heavy list: a multi-step episode
    page = bare.heavy_page(300, 2).decode()
    assert page.index("sold 422 times") > page.index('id="add-299"')


def test_the_runners_take_turns_going_first(bare: ModuleType) -> None:
    assert bare.round_order(0) == ("bare", "om2w-tui")
    assert bare.round_order(1) == ("om2w-tui", "bare")


def test_episodes_that_differ_are_named(bare: ModuleType) -> None:
    same = [{"task_id": "a", "steps": 8, "correct": True}, {"task_id": "b", "steps": 8, "correct": True}]
    assert bare.episode_mismatch({"bare": same, "om2w-tui": list(reversed(same))}) == []
    runaway = [{"task_id": "a", "steps": 8, "correct": True}, {"task_id": "b", "steps": 31, "correct": False}]
    lines = bare.episode_mismatch({"bare": same, "om2w-tui": runaway})
    assert len(lines) == 1 and lines[0].startswith("b: ")
    assert bare.episode_mismatch({"bare": same, "om2w-tui": same[:1]}) != []
