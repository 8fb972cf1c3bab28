"""Training rows from recorded model calls: every call a row, the hint stripped (also where a reply carries it
JSON-escaped), images made files, the family of each op."""

from __future__ import annotations

import base64
import json

from om2w_tui.episode.instruction import task_text as instruction_for
from om2w_tui.episode.rows import CallLog, write_rows

PNG = b"\x89PNG\r\n\x1a\n" + b"0" * 16
TASK = {"task_id": "t1", "confirmed_task": "Find the cheapest lamp", "website": "https://shop.example/",
        "hint": "It is the Aurora lamp, page 2."}


def call(user_text: str, reply: dict, image: bool = True) -> dict:
    parts = [{"type": "text", "text": user_text}]
    if image:
        parts.append({"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                         base64.b64encode(PNG).decode(), "detail": "auto"}})
    return {"messages": [{"role": "system", "content": "You are a browser agent."},
                         {"role": "user", "content": parts}],
            "response_format": {"type": "json_schema"}, "content": json.dumps(reply)}


def test_the_instruction_carries_the_hint_while_acting():
    assert instruction_for(TASK, "hint") == "Find the cheapest lamp\n\nIt is the Aurora lamp, page 2."
    assert instruction_for(TASK, None) == "Find the cheapest lamp"
    assert instruction_for({**TASK, "hint": ""}, "hint") == "Find the cheapest lamp"


def test_rows_strip_the_hint_and_save_images(tmp_path):
    full = instruction_for(TASK, "hint")
    log = CallLog([call(f"<user_request>{full}</user_request>", {"action": [{"input": {"index": 2, "text": "lamp"}}]}),
                   call(f"<user_request>{full}</user_request> memo: {TASK['hint']}",
                        {"memory": TASK["hint"], "action": [{"done": {"text": "Aurora", "success": True}}]}),
                   {"messages": [{"role": "user", "content": "extract the price"}], "response_format": None,
                    "content": "browser-use's extraction call: a row too"}])
    n, left = write_rows(tmp_path / "rows", TASK, log, TASK["hint"])
    assert (n, left) == (3, False)
    text = (tmp_path / "rows" / "rows.jsonl").read_text()
    assert "Aurora lamp, page 2" not in text and "data:image" not in text
    rows = [json.loads(x) for x in text.splitlines()]
    assert [r["op"] for r in rows] == ["input", "done", ""]
    assert [r["family"] for r in rows] == ["Text entry", "Reasoning base", "Reading"]
    assert rows[0]["messages"][1]["content"][0]["text"] == "<user_request>Find the cheapest lamp</user_request>"
    assert rows[0]["messages"][1]["content"][1]["image_url"]["url"] == "step_0_0.png"
    assert (tmp_path / "rows" / "step_0_0.png").read_bytes() == PNG
    episode = json.loads((tmp_path / "rows" / "episode.json").read_text())
    assert episode == {"task_id": "t1", "instruction": "Find the cheapest lamp", "start_url": "https://shop.example/",
                       "steps": 3, "source": "", "hint_left": False}


def test_a_hint_that_survives_in_another_form_is_reported(tmp_path):
    """A model that quotes part of the hint cannot be cleaned by removing the whole hint: the row says so."""
    hint = "The cheapest lamp is the Aurora desk lamp on the second page of results, at $19.99 before tax."
    task = {**TASK, "hint": hint}
    quoted = hint[:64]                     # a cut copy: not the whole hint, so string removal misses it
    log = CallLog([call(f"<user_request>{TASK['confirmed_task']}</user_request> memory: {quoted}",
                        {"action": [{"scroll": {"down": True}}]}, image=False)])
    n, left = write_rows(tmp_path / "rows", task, log, hint)
    assert n == 1 and left is True
    assert json.loads((tmp_path / "rows" / "episode.json").read_text())["hint_left"] is True


HINT_WITH_QUOTES = 'Click "Aurora" on page 2;\nthe path is C:\\lamps\\aurora and the code is "A-19".'


def test_a_hint_quoted_json_escaped_in_a_reply_is_reported(tmp_path):
    """A reply is JSON: a hint with quotes, backslashes or newlines sits in it escaped (`\\"`, `\\\\`, `\\n`),
    which a search for the raw text never finds."""
    task = {**TASK, "hint": HINT_WITH_QUOTES}
    cut = HINT_WITH_QUOTES[:70]                # a cut copy, so stripping the whole hint cannot remove it
    log = CallLog([call(f"<user_request>{TASK['confirmed_task']}</user_request>",
                        {"memory": f"noted: {cut}", "action": [{"scroll": {"down": True}}]}, image=False)])
    assert '\\"Aurora\\"' in log.calls[0]["content"]     # the reply really carries it escaped
    n, left = write_rows(tmp_path / "rows", task, log, HINT_WITH_QUOTES)
    assert n == 1 and left is True


def test_a_whole_hint_json_escaped_in_a_reply_is_stripped(tmp_path):
    task = {**TASK, "hint": HINT_WITH_QUOTES}
    full = instruction_for(task, "hint")
    log = CallLog([call(f"<user_request>{full}</user_request>",
                        {"memory": f"the hint says {HINT_WITH_QUOTES}", "action": [{"scroll": {"down": True}}]},
                        image=False)])
    n, left = write_rows(tmp_path / "rows", task, log, HINT_WITH_QUOTES)
    text = (tmp_path / "rows" / "rows.jsonl").read_text()
    assert (n, left) == (1, False)
    assert "Aurora" not in text and "A-19" not in text
    row = json.loads(text)
    assert json.loads(row["target"])["memory"] == "the hint says "
    assert row["messages"][1]["content"][0]["text"] == f"<user_request>{TASK['confirmed_task']}</user_request>"


def test_a_planners_call_is_a_row_of_its_own_family(tmp_path):
    log = CallLog()
    log.add([{"role": "user", "content": "<task>x</task>"}], None,
            json.dumps({"thought": "t", "decision": "delegate", "family": "rest", "subtask": "s"}), segment=0)
    log.segment = 1
    log.add([{"role": "user", "content": "state"}], {"type": "json_schema"},
            json.dumps({"action": [{"click": {"index": 3}}]}))
    write_rows(tmp_path / "rows", TASK, log, None)
    rows = [json.loads(x) for x in (tmp_path / "rows" / "rows.jsonl").read_text().splitlines()]
    assert [(r["op"], r["family"], r["segment"]) for r in rows] == [("plan:delegate", "Planning", 0),
                                                                    ("click", "Navigation", 1)]
