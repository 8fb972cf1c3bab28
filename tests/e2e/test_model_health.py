"""Issue 19's table, end to end: the real command line, the real browser-use agent and Chromium on the offline
sites, and a model server that answers as vLLM does (the oracle's vLLM-faithful names, offline/vllm_answers.py),
one run per row. Each row is recorded with its kind and the server's words; the thinking and reasoning rows answer
correctly; the model guard stops a run whose first episodes all end on the same failure, with the remedy, and exit
code 3; the next launch resumes; every task has one settling record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from om2w_tui.engine.results import EpisodeRecord

from .helpers import assert_settled_once, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
# five tasks on five sites (two workers): the guard stops the run after the third, with the rest left
FIVE = ["offline_shop_search_01", "offline_wiki_port_06", "offline_booking_rates_11",
        "offline_longpage_automated_14", "offline_shop_battery_02"]
TEXT_TASKS = FIVE[:3]     # tasks a text-only model can do (no picture needed)


def run(out: Path, model: str, ids: list[str], *flags: str):
    return cli("run", "--no-ui", "--bench", "offline", "--model", model, "--task-ids", ",".join(ids),
               "--max-steps", "5", "--workers", "2", "--pace-cooldown", "0", "--out", str(out), *flags)


def thoughts(out: Path, task_id: str) -> list[str]:
    return json.loads((out / task_id / "result.json").read_text())["thoughts"]


# (model, kind, the error's words, the remedy's words); vLLM's older error shape, fenced and empty replies are read
# by the same rules, proven over HTTP with the real client in tests/unit/test_vllm_answers.py
FAILING = [
    ("oracle-context", "context_length", r"model: context length exceeded \(32768 tokens\): 'max_tokens' or "
     r"'max_completion_tokens' is too large: 4096\. This model's maximum context length is 32768 tokens",
     "--max-model-len"),
    ("oracle-prose", "unparseable", r"model: reply not the action schema \(prose\): ", "guided decoding"),
    ("oracle-truncated", "truncated", r"model: reply cut at max tokens: ", "--max-completion-tokens"),
    ("oracle-text-only", "images_refused", r"model: images refused \(not a multimodal model\): Qwen/Qwen3-8B is not "
     r"a multimodal model", "--no-vision"),
]


@pytest.mark.parametrize(("model", "kind", "words", "remedy"), FAILING, ids=[m for m, *_ in FAILING])
def test_each_failure_is_recorded_with_its_kind_and_the_guard_stops_the_run(tmp_path, model, kind, words, remedy):
    out = tmp_path / "run"
    r = run(out, model, FIVE)
    assert r.returncode == 3, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    rows = records(out)
    ended = [x for x in rows if x["error_kind"] == "model"]
    assert 3 <= len(ended) <= 4, rows                                    # the guard held the fifth back
    # an episode still in flight when the guard ended the run is stopped under it (it runs again): never a result
    assert all(EpisodeRecord.from_json(x).requeued for x in rows if x not in ended), rows
    for x in ended:
        assert (x["status"], x["model_fault"]) == ("error", kind), x
        assert re.match(words, x["error"]), x["error"]
        assert x["model_calls"]["failures"].get(kind, 0) >= 1 and kind in x["model_calls"]["first"]
    assert "model guard: 3 episodes in a row ended on the model" in r.stdout and remedy in r.stdout
    assert "exit code 3" in r.stdout and re.search(r"model: \d episodes ended on model errors", r.stdout)
    assert f"a model call failed: {kind}" in r.stdout                     # said when the kind first appeared
    assert_settled_once(rows, [x["task_id"] for x in ended])
    report = cli("report", str(out), "--format", "md")
    assert re.search(rf"{len(ended)} episodes ended on model errors \(counted as failures\): ", report.stdout), \
        report.stdout


def test_the_next_launch_after_the_guard_resumes(tmp_path):
    """(--model-guard 0, and a proxy's 429s waited out inside a call, are proven through the real scheduler and the
    real client in tests/unit/test_model_guard.py and tests/unit/test_vllm_answers.py.)"""
    out = tmp_path / "run"
    first = run(out, "oracle-prose", FIVE)
    assert first.returncode == 3
    left = [t for t in FIVE if t not in {x["task_id"] for x in records(out)}]
    assert left
    # the server fixed: the same command (the fixed oracle has another name, which the run is told to take)
    fixed = run(out, "oracle", FIVE, "--resume-changed")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    rows = records(out)
    assert {x["task_id"] for x in rows if x["status"] == "done"} == set(left)
    assert_settled_once(rows, FIVE)


@pytest.mark.parametrize("model", ["oracle-think", "oracle-think-open"])
def test_a_think_block_is_split_off_the_reply_and_kept_as_the_thought(tmp_path, model):
    out = tmp_path / "run"
    r = run(out, model, TEXT_TASKS)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = records(out)
    assert all(x["status"] == "done" and x["correct"] for x in rows), rows
    assert all(x["model_calls"]["thinking_stripped"] == x["model_calls"]["calls"] >= 2 for x in rows), rows
    assert all("thinking_stripped" not in x["model_calls"]["failures"] for x in rows)
    # the step's thought is the model's own reasoning (the oracle's `thinking`), not its next goal
    assert any("Oracle" in t or "oracle" in t for t in thoughts(out, TEXT_TASKS[0]))
    assert re.search(r"\d <think> blocks split off", r.stdout)
    if model != "oracle-think":
        return
    unmended = run(tmp_path / "raw", model, TEXT_TASKS, "--no-mend-thinking")
    assert unmended.returncode == 3                                        # the reply as it came cannot be parsed
    assert {x["model_fault"] for x in records(tmp_path / "raw")} == {"unparseable"}
    assert "--reasoning-parser" in unmended.stdout


@pytest.mark.parametrize("model", ["oracle-reasoning", "oracle-reasoning-new"])
def test_reasoning_beside_the_content_is_kept_as_the_thought(tmp_path, model):
    out = tmp_path / "run"
    r = run(out, model, TEXT_TASKS)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = records(out)
    assert all(x["status"] == "done" and x["correct"] for x in rows), rows
    assert all(x["model_calls"]["reasoning_kept"] >= 2 and not x["model_calls"]["failures"] for x in rows), rows


def test_a_text_only_model_runs_with_no_vision(tmp_path):
    out = tmp_path / "run"
    r = run(out, "oracle-text-only", TEXT_TASKS, "--no-vision")
    assert r.returncode == 0, r.stderr[-2000:]
    assert all(x["status"] == "done" and x["correct"] and not x["model_calls"]["failures"] for x in records(out))
