"""How `om2w-tui judge` reads a judge model's replies, on a corpus of replies in every form a model gives: plain,
markdown bold, bullets, headings, trailing remarks, second thoughts.

Each case carries what the official evaluator reads from the same reply (measured by running its own expressions
on this corpus): ours must agree wherever it reads right, and each case where it does not says why ours differs."""

from __future__ import annotations

import json

import pytest

from om2w_tui.evaluation.judge_files import adopt_legacy_output, official_file_name, output_path, parse_output_name
from om2w_tui.evaluation.judge_replies import (
    compare_readings,
    official_score,
    official_status,
    parse_key_points,
    parse_reasoning,
    parse_score,
    parse_status,
    read_score,
    read_status,
)
from om2w_tui.evaluation.judge_settings import FILE_MODES, Settings

# (reply, ours, the official evaluator's reading, why they differ if they do)
SCORES = [
    ("Reasoning: The search results for 'kettle' are listed with their prices.\nScore: 4", 4, 4, ""),
    ("1. **Reasoning**: The product page shows the Copper Pour-Over Kettle, rated 4.6.\n2. **Score**: 5", 5, 5, ""),
    ("**Reasoning:** The cart holds both items.\n**Score:** 3", 3, 3, ""),
    ("- **Reasoning**: Only the home page, nothing about the task.\n- **Score**: 1", 1, 1, ""),
    ("### Reasoning\nThe filter panel shows Kitchen selected and a price limit.\n\n### Score\n4", 4, 4, ""),
    ("**Reasoning**: The search box holds the query.\n\n**Score**: 2\n\nNote: a score of 5 would need the price.",
     2, 2, ""),
    ("Reasoning: first look.\nScore: 5\nOn second thought the price is cut off. Score: 2", 5, 5, ""),
    ("**Score**: 4", 4, 4, ""),
    ("**Score**: 4/5\n\n**Reasoning**: the results are sorted by price.", 4, 4, ""),
    ("Reasoning: relevant.\nScore: [4]", 4, 4, ""),
    ("Reasoning: the login page.\n\nRating: 1", 0, 0, ""),
    ("Reasoning: relevant, the ports table.\nScore (1-5): 3", 3, 1, "the official takes the 1 of '(1-5)'"),
    ("Reasoning: The Scores tab of the league table is open, showing 3 matches.\nScore: 2", 2, 3,
     "the official reads after the first 'Score' anywhere, here inside the reasoning"),
    ("reasoning: the order confirmation.\nscore: 5", 5, 0, "the official looks for 'Score' in that case only"),
    ("Reasoning: fine.\nScore: 10/10", 0, 1, "out of 1-5: not a score (the official takes the 1 of 10)"),
    ("The format asked:\n```\nReasoning: ...\nScore: 5\n```\nReasoning: only the home page.\nScore: 1", 1, 5,
     "a code block is an example, not the reply's score (the official reads the first 'Score' anywhere)"),
    ("> Score: 5 would need the price shown.\n\nReasoning: the price is cut off.\nScore: 2", 2, 5,
     "quoted text is not the reply's own (the official reads the first 'Score' anywhere)"),
    ("```\nReasoning: the cart page.\nScore: 4\n```", 4, 4, ""),   # a reply all in a block is read inside it
    ("I cannot see the image.", 0, 0, ""),
]

STATUSES = [
    ('Thoughts: All key points are met: the filter, the sort and the item.\nStatus: "success"', 1, 1, ""),
    ('Thoughts: The price filter was never applied.\nStatus: "failure"', 0, 0, ""),
    ("Thoughts: The answer is on the page.\nStatus: success", 1, 1, ""),
    ("- Thoughts: only the home page was visited.\n- Status: failure", 0, 0, ""),
    ("Thoughts: done as asked.\nStatus: Success.\n\nThe agent completed the task.", 1, 1, ""),
    ('Thoughts: the key point "sort by price" is unmet, so no.\nStatus: failure', 0, 0, ""),
    ("The agent seems to have succeeded.", 0, 0, ""),
    ("**Thoughts**: every key point is shown.\n**Status**: success", 1, 0,
     "the official looks for 'status:' and misses the markdown"),
    ("### Thoughts\nEvery key point is shown.\n\n### Status\nsuccess", 1, 0, "the official needs 'status:'"),
    ('Thoughts: it stopped on the search page.\nStatus: "failure" (the agent never reached success)', 0, 1,
     "the official finds 'success' anywhere after 'status:'"),
    ("Thoughts: one of two items added.\nStatus: partial success", 0, 1, "a partial success is not a success"),
    ("Thoughts: no result page.\nStatus: unsuccessful", 0, 1, "'unsuccessful' holds 'success'"),
    ("Thoughts: a success would look like this:\n```\nStatus: success\n```\nBut the filter is wrong.\n"
     "Status: failure", 0, 1, "a code block is an example, not the verdict (the official reads the first one)"),
    ("Thoughts: the task says\n> Status: success only when the item is in the cart\nIt is not.\nStatus: failure",
     0, 1, "quoted text is not the verdict (the official reads the first 'status:')"),
    ('Thoughts: the agent wrote "status: success" in its answer, but the page shows no booking. Verdict below.\n'
     "**Status**: failure", 0, 1, "quoted inline text is not the verdict"),
    ("```\nThoughts: all met.\nStatus: success\n```", 1, 1, ""),   # a reply all in a block is read inside it
]


@pytest.mark.parametrize("reply, ours, official, why", SCORES)
def test_scores(reply, ours, official, why):
    assert parse_score(reply) == ours == read_score(reply, "lenient")
    assert official_score(reply) == official == read_score(reply, "official")
    assert (ours == official) == (why == ""), "a difference from the official reading must say why"


@pytest.mark.parametrize("reply, ours, official, why", STATUSES)
def test_statuses(reply, ours, official, why):
    assert parse_status(reply) == ours == read_status(reply, "lenient")
    assert official_status(reply) == official == read_status(reply, "official")
    assert (ours == official) == (why == ""), "a difference from the official reading must say why"


def test_the_issues_two_examples_read_both_ways():
    assert (official_status("**Status**: success"), parse_status("**Status**: success")) == (0, 1)
    assert (official_score("Score (1-5): 2"), parse_score("Score (1-5): 2")) == (1, 2)
    assert Settings(model="m").parsing == "official"          # the official reading unless asked


def test_a_judge_files_replies_are_counted_where_the_two_readings_differ():
    lines = [{"task_id": "a", "parsing": "official", "judge_model": "m",
              "evaluation_details": {"response": "**Status**: success"},
              "image_judge_record": [{"Response": "Score (1-5): 4", "Score": 1}, {"Response": "Score: 5", "Score": 5},
                                     {"Response": "score: 2", "Score": 0}]},
             {"task_id": "b", "response": "Status: failure", "image_judge_record": [{"Response": "Score: 3"}]}]
    r = compare_readings(lines, threshold=3)
    assert (r.parsing, r.verdicts, r.verdicts_differ, r.verdict_tasks) == ("official", 2, 1, ("a",))
    # '(1-5): 4' reads 1 against 4 (across 3); 'score: 2' reads 0 against 2 (both below 3)
    assert (r.scores, r.scores_differ, r.scores_cross) == (4, 2, 1)
    assert compare_readings([{"task_id": "x", "judge_model": "m"}], 3).parsing == "lenient"   # ours, before


def test_our_output_never_takes_the_official_evaluators_own_name(tmp_path):
    for mode in ("webjudge", "webvoyager"):
        for include in (False, True):
            s = Settings(model="o4-mini", mode=mode, include_answer=include)
            official = f"{s.file_mode}_o4-mini_score_threshold_3_auto_eval_results.json"   # run.py's own name
            assert output_path(tmp_path, s).name == "om2w-tui_" + official != official
            assert official_file_name(s) == official
            named = parse_output_name(output_path(tmp_path, s).name)
            assert named is not None and named.ours and not named.official and named.mode == FILE_MODES[s.mode_name]


def test_our_file_under_the_official_name_is_renamed_and_theirs_is_left(tmp_path):
    s = Settings(model="o4-mini")
    legacy = tmp_path / official_file_name(s)
    legacy.write_text(json.dumps({"task_id": "a", "judge_model": "o4-mini", "predicted_label": 1}) + "\n")
    said: list[str] = []
    adopt_legacy_output(tmp_path, s, said.append)
    assert not legacy.exists() and output_path(tmp_path, s).is_file() and "renamed" in said[0]
    theirs = tmp_path / "other"
    theirs.mkdir()
    official = theirs / official_file_name(s)
    official.write_text(json.dumps({"task_id": "a", "predicted_label": 1}) + "\n")   # the evaluator's: no judge_model
    adopt_legacy_output(theirs, s, said.append)
    assert official.exists() and not output_path(theirs, s).exists() and len(said) == 1


@pytest.mark.parametrize("reply, reasoning", [
    ("1. **Reasoning**: The product page shows the kettle.\n2. **Score**: 5", "The product page shows the kettle."),
    ("Reasoning: The results, listed.\nScore: 4", "The results, listed."),
    ("### Reasoning\nThe filter panel,\nKitchen selected.\n\n### Score\n4", "The filter panel, Kitchen selected."),
    ("- **Reasoning**: Home page only.\n- **Score**: 1", "Home page only."),
    ("The page shows the cart.\n\nScore: 3", "The page shows the cart."),
    ("Score: 3", ""),
])
def test_the_reasoning_that_goes_to_the_verdict(reply, reasoning):
    assert parse_reasoning(reply) == reasoning


def test_key_points_in_either_form():
    assert parse_key_points("**Key Points**:\n1. Kitchen\n2. under $50") == "1. Kitchen\n2. under $50"
    assert parse_key_points("Key points:\n1. a") == "1. a"
    assert parse_key_points("1. a\n2. b") == "1. a\n2. b"
