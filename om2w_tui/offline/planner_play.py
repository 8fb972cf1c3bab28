"""The oracle as the `agent` arm's planner: it delegates the whole task to one specialist, then answers with the
specialist's report. Stateless: the decision comes from what the request shows (the task and the reports)."""

from __future__ import annotations

import json
import re
from typing import Any

from om2w_tui.protocol.planner import PLANNER_MARKER

_TASK = re.compile(r"<task>(.*?)</task>", re.S)
_REPORTS = re.compile(r"<specialist_reports>\n(.*?)\n</specialist_reports>", re.S)
_REPORT = re.compile(r"^\d+\. \[(\w+)\] .*? -> (done|not done): (.*)$")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def planner_reply(tasks: list[dict[str, Any]], body: dict[str, Any]) -> str | None:
    """The planner's decision for a request of the `agent` arm's planner, or None when it is not one."""
    messages = body.get("messages") or []
    if not messages or PLANNER_MARKER not in _text(messages[0].get("content")):
        return None
    user = _text(messages[-1].get("content"))
    found_task, found_reports = _TASK.search(user), _REPORTS.search(user)
    task = found_task.group(1) if found_task else ""
    reports = [m.groups() for line in (found_reports.group(1) if found_reports else "").splitlines()
               if (m := _REPORT.match(line.strip()))]
    known = max((t for t in tasks if t.get("confirmed_task") and t["confirmed_task"] in task),
                key=lambda t: len(t["confirmed_task"]), default=None)
    if not reports:
        return json.dumps({"thought": "One specialist can do the whole task.", "decision": "delegate",
                           "family": "rest", "subtask": known["confirmed_task"] if known else task})
    done = [text for _, status, text in reports if status == "done"]
    answer = done[-1] if done else ""
    return json.dumps({"thought": "The specialist reported back.", "decision": "answer", "answer": answer})
