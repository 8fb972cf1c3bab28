"""Replies through the real agent (issue 26 items 4 and 6): the real command line, browser-use and Chromium on the
offline sites, the oracle answering as a server with guided decoding answers.

- At its last step browser-use asks for the `done` action only (a narrower response_format): the oracle answers
  what it is asked, so a budget that ends mid-script costs no "unparseable reply".
- A reply that is valid JSON but not valid text (a `\\ud800` escape: half a character) is mended where replies are
  read: the answer kept (U+FFFD in its place), the episode right, every file written."""

from __future__ import annotations

import json

import pytest

from .helpers import check_task_folder, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
MULTI_STEP = "offline_shop_cart_05"        # seven steps with the oracle
TEXT_TASK = "offline_shop_search_01"


def run(out, model: str, task: str, *flags: str):
    return cli("run", "--no-ui", "--bench", "offline", "--model", model, "--task-ids", task, "--pace-cooldown", "0",
               "--out", str(out), *flags)


def test_the_last_step_is_answered_with_done_as_the_narrower_schema_asks(tmp_path):
    out = tmp_path / "run"
    r = run(out, "oracle", MULTI_STEP, "--max-steps", "3")
    assert r.returncode == 0, r.stderr[-2000:]
    (rec,) = records(out)
    assert rec["model_calls"]["failures"] == {}, rec["model_calls"]          # was {"unparseable": 1}
    assert rec["model_calls"]["calls"] == rec["model_calls"]["ok"] == 3
    assert rec["correct"] is False           # (whether a done forced by the budget is "out of steps": the outcome's)
    res = check_task_folder(out / MULTI_STEP)
    assert "only `done` is allowed at step 3" in res["final_result_response"]


def test_a_reply_whose_text_is_not_unicode_is_mended_and_the_answer_kept(tmp_path):
    out = tmp_path / "run"
    r = run(out, "oracle-surrogate", TEXT_TASK, "--max-steps", "6")
    assert r.returncode == 0, r.stderr[-2000:]
    (rec,) = records(out)
    assert (rec["status"], rec["correct"]) == ("done", True), rec
    assert rec["model_calls"]["failures"] == {} and rec["model_calls"]["text_mended"] == rec["model_calls"]["calls"]
    res = check_task_folder(out / TEXT_TASK)
    assert res["final_result_response"].endswith(" \ufffd")
    json.dumps(res, ensure_ascii=False).encode("utf-8")                     # every string writable as UTF-8
