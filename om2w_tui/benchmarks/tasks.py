"""Task files into one shape: Online-Mind2Web JSON, WebVoyager JSONL, and plain JSON/JSONL of either shape.

Every loader rejects what cannot be a task with a `TaskFileError` that names the file, the line (for JSONL or
a JSON syntax error) and what to do; nothing else in the package has to re-check a task. A task that could never
run is refused here rather than failed in every attempt: an id that is no safe folder name (matched whole: `"a\n"`
is none), a lone surrogate in any of its text, a website that is no http(s) URL with a host and a port in range, a
`max_steps` out of range. The file is read through `json_input` (a regular file of bounded size, nesting bounded).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.episode.instruction import MAX_STEPS
from om2w_tui.json_input import InputError, decode, read_bytes, text_of
from om2w_tui.secret import check_http_url

# a task id becomes a folder name under --out: letters, digits and a few safe marks, not starting with a dot;
# spaces inside are fine (WebVoyager's ids are like "BBC News--0"), not at either end
_SAFE_ID = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.\- ]{0,126}[A-Za-z0-9_.\-])?$")
# the run's own files beside the task folders: a task folder of one of these names would shadow it (and a folder
# named like a results file would break every later launch)
_RUN_FILES = re.compile(r"^(run(\..+)?\.json|results.*\.jsonl|worker_.*\.log|.*_auto_eval_results\.json)$", re.I)
TASK_FILE_LIMIT = 256 << 20   # bytes: the official files are well under 1 MiB


class TaskFileError(ValueError):
    """A task file that cannot be used, with a message fit to show the user as it is."""


@dataclass(frozen=True)
class Task:
    task_id: str
    confirmed_task: str
    website: str
    level: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def site(self) -> str:
        return site_key(self.website)

    def to_dict(self) -> dict[str, Any]:
        """The task as sent to a worker: the raw row (hint fields, reference length) with the four fields on top."""
        return {**self.raw, "task_id": self.task_id, "confirmed_task": self.confirmed_task,
                "website": self.website, "level": self.level}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Task:
        return cls(row["task_id"], row["confirmed_task"], row["website"], row.get("level"), dict(row))


def file_sha256(path: Path) -> str:
    """The task file's digest; InputError (naming it) for what is no regular file of at most TASK_FILE_LIMIT."""
    return hashlib.sha256(read_bytes(path, TASK_FILE_LIMIT)).hexdigest()


def _normalise(row: Any, where: str) -> dict[str, Any]:
    """One row of either benchmark's shape -> the Online-Mind2Web shape (WebVoyager: id, ques, web, web_name)."""
    if not isinstance(row, dict):
        raise TaskFileError(f"{where}: a task must be a JSON object, got {type(row).__name__}")
    if "task_id" not in row and {"id", "ques", "web"} <= row.keys():
        row = {**row, "task_id": row["id"], "confirmed_task": row["ques"], "website": row["web"],
               "level": row.get("level", row.get("web_name"))}
    missing = [k for k in ("task_id", "confirmed_task", "website") if not row.get(k)]
    if missing:
        raise TaskFileError(
            f"{where}: missing {', '.join(missing)} (a task needs task_id, confirmed_task and website; "
            f"WebVoyager rows need id, ques and web)")
    tid = row["task_id"]
    if not isinstance(tid, str) or not _SAFE_ID.fullmatch(tid):
        raise TaskFileError(
            f"{where}: task id {str(tid)[:80]!r} cannot be a folder name: use 1-128 letters, digits, '_', '-', '.' "
            f"or inner spaces, not starting with '.'")
    if _RUN_FILES.match(tid):
        raise TaskFileError(f"{where}: task id {tid!r} is the name of one of the run's own files in the out folder "
                            f"(run*.json, results*.jsonl, worker_*.log, *_auto_eval_results.json): rename the task")
    _check_types(row, tid, where)
    _check_text(row, tid, where)
    problem = check_http_url(row["website"])
    if problem:
        raise TaskFileError(f"{where}: website {row['website'][:120]!r} of task {tid} {problem}")
    if row.get("level") is not None:
        row = {**row, "level": str(row["level"])}
    return cast(dict[str, Any], row)   # a JSON object (checked above): its keys are strings


def _check_types(row: dict[str, Any], tid: str, where: str) -> None:
    """Fields the harness reads must have the type it reads them as, or the run would fail far from the file."""
    def bad(name: str, want: str) -> TaskFileError:
        return TaskFileError(f"{where}: {name} of task {tid} must be {want}, got {type(row[name]).__name__} "
                             f"{json.dumps(row[name], default=str)[:60]}")

    for name in ("confirmed_task", "website"):
        if not isinstance(row[name], str):
            raise bad(name, "a string")
    if row.get("level") is not None and not isinstance(row["level"], (str, int)):
        raise bad("level", "a string")
    ref = row.get("reference_answer")
    if ref is not None and not (isinstance(ref, str) or (isinstance(ref, list)
                                                           and all(isinstance(x, str) for x in ref))):
        raise bad("reference_answer", "a string or a list of strings")
    steps = row.get("max_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS):
        raise bad("max_steps", f"a whole number from 1 to {MAX_STEPS}")


def _check_text(row: dict[str, Any], tid: str, where: str) -> None:
    """Every string of the row must be text a UTF-8 pipe and file can carry: a lone surrogate (`"\\ud800"` in JSON)
    would fail the episode's every attempt as the harness's fault."""
    try:
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        field = next((k for k, v in row.items() if not _encodes(k) or not _encodes(v)), "a field")
        raise TaskFileError(f"{where}: {field} of task {tid} holds a lone surrogate (an escape like \\ud800 that "
                            f"is no character); fix the text") from None


def _encodes(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _rows_json(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        data = data["tasks"]
    if not isinstance(data, list):
        raise TaskFileError(f"{path}: expected a JSON list of tasks (or JSON lines, one task a line), "
                            f"got a {type(data).__name__}")
    return ((f"{path}: task #{i + 1}", row) for i, row in enumerate(data))


def _rows_jsonl(path: Path, text: str) -> Iterable[tuple[str, Any]]:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = decode(line, str(path), line=n)
        except InputError as e:
            raise TaskFileError(str(e).replace(": invalid JSON:", ": invalid JSON line:")) from None
        yield f"{path}:{n}", row


def parse_tasks(path: Path, text: str) -> list[Task]:
    """Tasks from a file's text; JSON lines when the name ends in .jsonl or the text is several JSON objects."""
    text = text.removeprefix("\ufeff")   # a byte order mark (files saved by some Windows editors)
    if not text.strip():
        raise TaskFileError(f"{path}: the file is empty")
    rows: Iterable[tuple[str, Any]]
    if path.suffix == ".jsonl":
        rows = _rows_jsonl(path, text)
    else:
        try:
            rows = _rows_json(path, decode(text, str(path)))
        except InputError as e:
            # one object a line: JSON lines, whatever the file's name (a pretty-printed object is one JSON value)
            if e.reason == "Extra data" and text.lstrip().startswith("{"):
                rows = _rows_jsonl(path, text)
            else:
                raise TaskFileError(str(e)) from None
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for where, row in rows:
        row = _normalise(row, where)
        tid = row["task_id"]
        if tid in seen:
            raise TaskFileError(f"{where}: duplicate task id {tid!r} (first at {seen[tid]}); task ids must be unique")
        seen[tid] = where
        tasks.append(Task.from_dict(row))
    if not tasks:
        raise TaskFileError(f"{path}: no tasks in the file")
    return tasks


def read_task_text(path: Path) -> str:
    """A task file's text: a regular file of at most TASK_FILE_LIMIT bytes of UTF-8 (never a FIFO or a device,
    which would hang or fill memory); raises TaskFileError."""
    if not path.exists():
        raise TaskFileError(f"{path}: no such task file (give --tasks PATH, or fetch one with "
                            f"`om2w-tui tasks fetch` where that is available)")
    if path.is_dir():
        raise TaskFileError(f"{path}: is a folder, not a task file")
    try:
        return text_of(read_bytes(path, TASK_FILE_LIMIT), str(path))
    except InputError as e:
        raise TaskFileError(str(e)) from None


def load_tasks(path: str | Path) -> list[Task]:
    path = Path(path)
    return parse_tasks(path, read_task_text(path))


def select(tasks: list[Task], *, task_ids: Iterable[str] | None = None, levels: Iterable[str] | None = None,
           sites: Iterable[str] | None = None, limit: int = 0) -> list[Task]:
    """The tasks a run takes, in file order: by id, level and site (a site matches its key or a part of it)."""
    if limit < 0:   # a slice with a negative end would drop tasks from the end without a word
        raise TaskFileError(f"--limit {limit}: must be 0 (all tasks) or more")
    if task_ids:
        wanted = set(task_ids)
        known = {t.task_id for t in tasks}
        unknown = sorted(wanted - known)
        if unknown:
            raise TaskFileError(f"--task-ids: not in the task file: {', '.join(unknown[:5])}"
                                f"{' ...' if len(unknown) > 5 else ''}")
        tasks = [t for t in tasks if t.task_id in wanted]
    if levels:
        lv = {x.lower() for x in levels}
        tasks = [t for t in tasks if (t.level or "").lower() in lv]
    if sites:
        ss = [s.lower() for s in sites]
        tasks = [t for t in tasks if any(s in t.site or s in t.website.lower() for s in ss)]
    if limit:
        tasks = tasks[:limit]
    return tasks
