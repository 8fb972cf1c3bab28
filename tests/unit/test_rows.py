"""Training rows from recorded model calls: the hint stripped, images made files, the family of each op."""

from __future__ import annotations

import base64
import json

from om2w_tui.episode.rows import CallLog, write_rows
from om2w_tui.episode.runner import instruction_for

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
                   {"messages": [], "response_format": None, "content": "a judge call, not a row"}])
    n, left = write_rows(tmp_path / "rows", TASK, log, TASK["hint"])
    assert (n, left) == (2, False)
    text = (tmp_path / "rows" / "rows.jsonl").read_text()
    assert "Aurora lamp, page 2" not in text and "data:image" not in text
    rows = [json.loads(x) for x in text.splitlines()]
    assert [r["op"] for r in rows] == ["input", "done"]
    assert [r["family"] for r in rows] == ["Text entry", "Reasoning base"]
    assert rows[0]["messages"][1]["content"][0]["text"] == "<user_request>Find the cheapest lamp</user_request>"
    assert rows[0]["messages"][1]["content"][1]["image_url"]["url"] == "step_0_0.png"
    assert (tmp_path / "rows" / "step_0_0.png").read_bytes() == PNG
    episode = json.loads((tmp_path / "rows" / "episode.json").read_text())
    assert episode == {"task_id": "t1", "instruction": "Find the cheapest lamp", "start_url": "https://shop.example/",
                       "steps": 2, "source": "", "hint_left": False}


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
