"""Training rows: every model call of an episode, recorded with a privileged hint stripped.

`<out>/<task_id>/rows/` holds `rows.jsonl` (task_id, step, segment, macro, op, family, messages, target, and where
known `call`, the call's kind, and `thinking`, the model's reasoning split off its reply), the images
of the messages as PNG files (each replaced in the messages by its file name) and `episode.json` (task_id,
instruction, start_url, steps, source, hint_left). A hint appended to the instruction while acting is removed
from every recorded message and reply; `hint_left` says whether any of it survived anywhere in a row.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.files import write_atomic, write_json_atomic

# the op's family, as the training mix names them; the rest (click, navigate, scroll, go_back, tabs ...) navigate
ROW_FAMILY = {"input": "Text entry", "send_keys": "Text entry", "select_dropdown": "Discrete selection",
              "done": "Reasoning base"}
_DATA_URL = re.compile(r"^data:image/(png|jpeg|jpg|webp);base64,(.*)$", re.S)
HINT_PROBE_CHARS = 60


@dataclass
class CallLog:
    """What the model calls of the episode were (episode/model_watch.py records each): one entry per call that got
    a reply, in order, every arm's; `thinking` is the reasoning split off or sent beside the reply, `call` the
    call's kind (protocol/model.py) once it is known."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    segment: int = 0          # which agent of the episode is calling now (the planner arm: 0, then one per specialist)

    def add(self, messages: Any, response_format: Any, content: str | None, segment: int | None = None,
            thinking: str | None = None) -> dict[str, Any]:
        entry = {"messages": copy.deepcopy(messages), "response_format": response_format, "content": content or "",
                 "segment": self.segment if segment is None else segment}
        if thinking:
            entry["thinking"] = thinking
        self.calls.append(entry)
        return entry


def _escaped(text: str) -> list[str]:
    """`text` as it reads inside a JSON string, once and twice escaped (a reply is JSON; a reply quoted in a prompt
    is JSON inside JSON), longest first, each only when it differs from the text."""
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return [form for form in (twice, once) if form != text]


def _strip_text(text: str, full: str, short: str, hint: str | None) -> str:
    text = text.replace(full, short)
    for f, s in zip(_escaped(full), _escaped(short)):
        text = text.replace(f, s)
    if hint:
        for form in (*_escaped(hint), hint):
            text = text.replace(form, "")
    return text


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def hint_survives(row: Any, probe: str) -> bool:
    """Whether the probe (the hint's start) is in any string of the row, as it is or JSON-escaped."""
    forms = [probe, *_escaped(probe)]
    return any(form in text for text in _strings(row) for form in forms)


def _messages_with_files(messages: list[dict[str, Any]], rows_dir: Path, step: int, full: str, short: str,
                         hint: str | None) -> list[dict[str, Any]]:
    out = []
    n_img = 0
    for m in messages:
        m = dict(m)
        content = m.get("content")
        if isinstance(content, str):
            m["content"] = _strip_text(content, full, short, hint)
        elif isinstance(content, list):
            parts = []
            for part in content:
                part = dict(part) if isinstance(part, dict) else part
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    part["text"] = _strip_text(part["text"], full, short, hint)
                url = part.get("image_url", {}).get("url") if isinstance(part, dict) else None
                match = _DATA_URL.match(url) if isinstance(url, str) else None
                if match:
                    name = f"step_{step}_{n_img}.{'jpg' if match.group(1) in ('jpeg', 'jpg') else match.group(1)}"
                    write_atomic(rows_dir / name, base64.b64decode(match.group(2)))
                    part = {**part, "image_url": {**part["image_url"], "url": name}}
                    n_img += 1
                parts.append(part)
            m["content"] = parts
        out.append(m)
    return out


def _op(content: str) -> str:
    """The first action of an agent's reply, or the decision of a planner's (`plan:delegate`); '' for others."""
    try:
        reply = json.loads(content)
        if isinstance(reply, dict) and "decision" in reply and "action" not in reply:
            return f"plan:{reply['decision']}"
        actions = reply.get("action") or [{}]
        return next(iter(actions[0])) if actions and actions[0] else ""
    except (ValueError, AttributeError, TypeError, StopIteration):
        return ""


def _family(op: str, call: dict[str, Any]) -> str:
    if op.startswith("plan:"):
        return "Planning"
    if not call.get("response_format") and not op:
        return "Reading"          # browser-use's own calls outside the agent loop (extraction)
    return ROW_FAMILY.get(op, "Navigation")


def write_rows(rows_dir: Path, task: dict[str, Any], log: CallLog, hint: str | None,
               model_calls: dict[str, Any] | None = None) -> tuple[int, bool]:
    """-> (rows written, whether any hint text is left in a row). Every model call that got a reply becomes a row
    (the agent's steps, browser-use's extraction calls, a planner's turns); each image is a file beside rows.jsonl;
    `model_calls` (every call's kind, those that failed too) goes into episode.json."""
    rows_dir.mkdir(parents=True, exist_ok=True)
    short = task["confirmed_task"]
    full = short + (f"\n\n{hint}" if hint else "")
    probe = hint[:HINT_PROBE_CHARS] if hint else None
    rows, left = [], False
    for i, call in enumerate(log.calls):
        target = _strip_text(call.get("content") or "", full, short, hint)
        op = _op(call.get("content") or "")
        row = {"task_id": task["task_id"], "step": i, "segment": call.get("segment", 0), "macro": None, "op": op,
               "family": _family(op, call),
               "messages": _messages_with_files(call.get("messages") or [], rows_dir, i, full, short, hint),
               "target": target}
        if call.get("thinking"):
            row["thinking"] = _strip_text(call["thinking"], full, short, hint)
        if call.get("call"):
            row["call"] = call["call"]
        if probe and hint_survives(row, probe):
            left = True
        rows.append(row)
    write_atomic(rows_dir / "rows.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    write_json_atomic(rows_dir / "episode.json", {
        "task_id": task["task_id"], "instruction": short, "start_url": task["website"], "steps": len(rows),
        "source": task.get("source", ""), "hint_left": left,
        **({"model_calls": model_calls} if model_calls is not None else {})})
    return len(rows), left
