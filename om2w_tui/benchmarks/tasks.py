"""Task files into one shape: Online-Mind2Web JSON, WebVoyager JSONL, and plain JSON/JSONL of either shape.

Every loader rejects what cannot be a task with a `TaskFileError` that names the file, the line (where the task
starts, in a JSON list too; or a JSON syntax error's) and what to do; nothing else in the package has to re-check a
task. A task that could never run is refused here rather than failed in every attempt: an id not by `TASK_ID_RULE`
(matched whole: `"a\n"` is none), a lone surrogate in any of its text, a task text longer than the agent takes, a
website that is no http(s) URL with a host and a port in range, on a port Chromium refuses, or that carries
credentials (`user:pw@`, which the result files, the logs and the prompt would copy), a number anywhere beyond what
a float holds exactly, and a `max_steps` or `reference_length` out of range. The file is read through `json_input`
(a regular file of bounded size, nesting bounded).

A task's step budget is decided here, once, as it is loaded: its own `max_steps` (a JSON whole number from 1 to
MAX_STEPS; anything else, a string too, is refused) or else the run's `--max-steps`; `Task.max_steps` carries it to
the scheduler, the worker's spec, the probe and the front ends, none of which decides it again.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.files import read_file
from om2w_tui.json_input import InputError, decode, element_lines, read_bytes, text_of
from om2w_tui.run_folder import OWN_GLOBS, is_own_name
from om2w_tui.secret import check_http_url, redact_url

# a task id becomes a folder name under --out (and an argument of commands): the rule, said as it is enforced.
# Spaces inside are fine (WebVoyager's ids are like "BBC News--0"), not at either end
TASK_ID_RULE = ("a JSON string of 1 to 128 ASCII letters, digits, '_', '-', '.' or inner spaces, not starting "
                "with '-' or '.'")
_SAFE_ID = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\- ]{0,126}[A-Za-z0-9_.\-])?")   # matched whole (fullmatch)
TASK_FILE_LIMIT = 256 << 20   # bytes: the official files are well under 1 MiB
# the ports Chromium will not open (ERR_UNSAFE_PORT): net/base/port_util.cc's kRestrictedPorts, each one checked
# against Chromium 156 (the Fetch standard's later 4190 and 6679 it still opens); a website on one would fail every
# attempt before its first page
CHROMIUM_REFUSED_PORTS = frozenset((
    1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109,
    110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530,
    531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 5060,
    5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6697, 10080))
MAX_WEBSITE_CHARS = 100_000   # browser-use's MAX_URL_LENGTH (browser_use/agent/cloud_events.py) for a step's URL
# the longest instruction browser-use's Agent runs: its CreateAgentTaskEvent (browser_use/agent/cloud_events.py,
# MAX_TASK_LENGTH, built at the start of every run) refuses a longer `task` with `string_too_long`, failing every
# episode as the agent's fault; tests/unit/test_children.py holds this to browser-use's own constant
MAX_INSTRUCTION_CHARS = 100_000
MAX_STEPS = 10_000            # the most steps an episode may be given (--max-steps, a task's own max_steps)
DEFAULT_MAX_STEPS = 30        # the run's budget when --max-steps is not given (RunConfig's default)
# Online-Mind2Web's levels, in their order (the offline suite's too); a WebVoyager row's level is its web_name
LEVELS = ("easy", "medium", "hard")
MAX_EXACT_INT = 2 ** 53       # a number anywhere in a task beyond this is no float exactly (reference_length 10**400
                              # overflowed the dispatcher's float after run.json was written)


class TaskFileError(ValueError):
    """A task file that cannot be used, with a message fit to show the user as it is."""


def row_digest(row: dict[str, Any]) -> str:
    """A task row as 16 hex digits, its keys sorted: another text, site, reference or hint gives another; its place
    in the file, or the other tasks, none."""
    text = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Task:
    task_id: str
    confirmed_task: str
    website: str
    level: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # the episode's step budget, decided at load (its own max_steps, else the run's); a task built in code: the default
    max_steps: int = DEFAULT_MAX_STEPS
    # a campaign's lane the task runs in (engine/lanes.py: one unit per lane and task); "" in a plain run
    lane: str = ""
    # what the task file asks, as 16 hex digits (`row_digest`), kept through the run's own rewrites of the task (the
    # offline suite's live addresses, a lane): a resume finds a settled task the file changed since; "" built in code
    digest: str = field(default="", compare=False, repr=False)

    @property
    def site(self) -> str:
        return site_key(self.website)

    @property
    def key(self) -> str:
        """What a run's ledger and queue know it by: its id, with its lane in a campaign (unique over the lanes)."""
        return f"{self.lane}/{self.task_id}" if self.lane else self.task_id

    def to_dict(self) -> dict[str, Any]:
        """The task as sent to a worker: the raw row (hint fields, reference length) with the four fields on top."""
        return {**self.raw, "task_id": self.task_id, "confirmed_task": self.confirmed_task,
                "website": self.website, "level": self.level}

    @classmethod
    def from_dict(cls, row: dict[str, Any], max_steps: int = DEFAULT_MAX_STEPS) -> Task:
        """A checked row (`parse_tasks`) as a task; `max_steps`: the run's budget, which its own max_steps overrides."""
        own = row.get("max_steps")
        return cls(row["task_id"], row["confirmed_task"], row["website"], row.get("level"), dict(row),
                   own if own is not None else max_steps, digest=row_digest(row))


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
        shown = ascii(tid[:80]) if isinstance(tid, str) else f"{json.dumps(tid, default=str)[:80]} (not a string)"
        raise TaskFileError(f"{where}: task id {shown}: a task id is {TASK_ID_RULE} (it names the task's folder)")
    # a task folder named as one of the run's own files would shadow it (a results file's name breaks every launch)
    if is_own_name(tid):
        raise TaskFileError(f"{where}: task id {tid!r} is the name of one of the run's own files in the out folder "
                            f"({', '.join(OWN_GLOBS[:-1])}): rename the task")
    _check_types(row, tid, where)
    _check_text(row, tid, where)
    _check_numbers(row, tid, where)
    _check_website(row["website"], tid, where)
    if len(row["confirmed_task"]) > MAX_INSTRUCTION_CHARS:
        raise TaskFileError(f"{where}: the text of task {tid} is {len(row['confirmed_task']):,} characters; the "
                            f"agent (browser-use) takes an instruction of at most {MAX_INSTRUCTION_CHARS:,}")
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
    ref_len = row.get("reference_length")
    if ref_len is not None and (isinstance(ref_len, bool) or not isinstance(ref_len, int)
                                or not 0 <= ref_len <= MAX_STEPS):
        raise bad("reference_length", f"a whole number from 0 to {MAX_STEPS}")


def _check_numbers(value: Any, tid: str, where: str, path: str = "") -> None:
    """No number anywhere in the row beyond what a float holds exactly: one the harness (or a reader of its files)
    turns into a float would overflow or round far from the file."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, tid, where, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, tid, where, f"{path}[{i}]")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INT:
        raise TaskFileError(f"{where}: {path} of task {tid} is a number of {len(str(abs(value)))} digits; numbers in "
                            f"a task file are at most 2**53 ({MAX_EXACT_INT:,}) either way")


def _check_website(url: str, tid: str, where: str) -> None:
    """A website Chromium can open and that can be copied where the run copies it (results, logs, the prompt)."""
    shown = ascii((redact_url(url) or "")[:120])   # redacted before it is cut: no half of a password
    if len(url) > MAX_WEBSITE_CHARS:
        raise TaskFileError(f"{where}: website of task {tid} is {len(url):,} characters; the agent (browser-use) "
                            f"takes a URL of at most {MAX_WEBSITE_CHARS:,}")
    if problem := check_http_url(url):
        raise TaskFileError(f"{where}: website {shown} of task {tid} {problem}")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise TaskFileError(f"{where}: website {shown} of task {tid} carries credentials (user:password@): a website "
                            f"is copied into the results, the logs and the agent's prompt; remove them (a task that "
                            f"needs a login says so in its text)")
    if parts.port in CHROMIUM_REFUSED_PORTS:
        raise TaskFileError(f"{where}: website {shown} of task {tid} is on port {parts.port}, which Chromium refuses "
                            f"to open (ERR_UNSAFE_PORT); serve the site on another port")


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


def _rows_json(path: Path, text: str, data: Any) -> Iterable[tuple[str, Any]]:
    """Each task of a JSON document with where it is: `FILE:LINE: task #N` (the line its object starts on)."""
    key = None
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        data, key = data["tasks"], "tasks"
    if not isinstance(data, list):
        raise TaskFileError(f"{path}: expected a JSON list of tasks (or JSON lines, one task a line), "
                            f"got a {type(data).__name__}")
    lines = element_lines(text, key)
    if lines is None or len(lines) != len(data):
        return ((f"{path}: task #{i + 1}", row) for i, row in enumerate(data))
    return ((f"{path}:{line}: task #{i + 1}", row) for i, (line, row) in enumerate(zip(lines, data)))


def _rows_jsonl(path: Path, text: str) -> Iterable[tuple[str, Any]]:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = decode(line, str(path), line=n)
        except InputError as e:
            raise TaskFileError(str(e).replace(": invalid JSON:", ": invalid JSON line:")) from None
        yield f"{path}:{n}", row


def parse_tasks(path: Path, text: str, max_steps: int = DEFAULT_MAX_STEPS) -> list[Task]:
    """Tasks from a file's text; JSON lines when the name ends in .jsonl or the text is several JSON objects.
    `max_steps`: the run's --max-steps, the budget of each task without its own."""
    text = text.removeprefix("\ufeff")   # a byte order mark (files saved by some Windows editors)
    if not text.strip():
        raise TaskFileError(f"{path}: the file is empty")
    rows: Iterable[tuple[str, Any]]
    if path.suffix == ".jsonl":
        rows = _rows_jsonl(path, text)
    else:
        try:
            rows = _rows_json(path, text, decode(text, str(path)))
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
        tasks.append(Task.from_dict(row, max_steps))
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


def load_tasks(path: str | Path, max_steps: int = DEFAULT_MAX_STEPS) -> list[Task]:
    """A task file's tasks, each with its step budget (its own, else `max_steps`: the run's); raises TaskFileError."""
    path = Path(path)
    return parse_tasks(path, read_task_text(path), max_steps)


TASK_LIST_LIMIT = 16 << 20   # bytes of a list of task ids (a million ids is ~40 MiB: far more than any benchmark)
_TASK_ID = re.compile(r"\S{1,512}")
_COMMENT = re.compile(r"(?:^|\s)#")    # a `#` that starts a word starts a comment (one inside an id does not)


def read_task_list(path: Path, flag: str) -> list[str]:
    """The task ids a list file names (`--exclude-tasks`): one a line, blank lines and `#` comments (a `#` starting a
    word, to the line's end) skipped, in file order, each once. Raises TaskFileError naming the flag, the file and
    the line."""
    try:
        data = read_file(path, TASK_LIST_LIMIT, own=False, what=flag)
    except InputError as e:
        raise TaskFileError(str(e) if str(e).startswith(flag) else f"{flag} {e}") from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        bad = data[:e.start].count(b"\n") + 1
        raise TaskFileError(f"{flag} {path} line {bad}: not UTF-8 text ({e.reason}); "
                            f"one task id a line") from None
    ids: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        comment = _COMMENT.search(line)
        word = (line[:comment.start()] if comment else line).strip()
        if not word:
            continue
        if not _TASK_ID.fullmatch(word):
            raise TaskFileError(f"{flag} {path} line {n}: {word[:80]!r} is not one task id (one id a line, "
                                f"# starts a comment)")
        ids.append(word)
    return list(dict.fromkeys(ids))


def _check_levels(tasks: list[Task], levels: Iterable[str]) -> None:
    """TaskFileError naming each of `levels` no task has, and the levels the tasks have (Online-Mind2Web's in their
    order, each as the file first spells it)."""
    there: dict[str, str] = {}
    for t in tasks:
        if t.level:
            there.setdefault(t.level.lower(), t.level)
    unknown = [x for x in dict.fromkeys(levels) if x.lower() not in there]
    if unknown:
        shown = sorted(there.values(), key=lambda v: (LEVELS.index(v.lower()) if v.lower() in LEVELS
                                                      else len(LEVELS), v))
        raise TaskFileError(f"--level {','.join(unknown)}: no task in the task file has "
                            f"{'this level' if len(unknown) == 1 else 'these levels'} (its levels: "
                            f"{', '.join(shown) if shown else 'none'})")


SITES_SHOWN = 12   # an unknown --site lists this many of the file's sites (the closest first), then how many more


def _on_site(task: Task, site: str) -> bool:
    """Whether `--site site` takes `task`: its key or its website has it (lower case) as a part."""
    return site in task.site or site in task.website.lower()


def _likeness(given: str, key: str) -> float:
    """How close `given` is to the site `key` or its first label (`wiki` of wiki.offline.invalid), 0 below 0.6."""
    best = max(difflib.SequenceMatcher(None, given, part).ratio() for part in (key, key.split(".")[0]))
    return best if best >= 0.6 else 0.0


def _check_sites(tasks: list[Task], sites: Iterable[str]) -> None:
    """TaskFileError naming each of `sites` no task is on, and the sites the tasks are on (the closest to what was
    given first, at most SITES_SHOWN of them)."""
    unknown = [x for x in dict.fromkeys(sites) if not any(_on_site(t, x.lower()) for t in tasks)]
    if unknown:
        there = sorted({t.site for t in tasks})
        shown = sorted(there, key=lambda k: -max(_likeness(x.lower(), k) for x in unknown))   # stable: A-Z
        more = f", and {len(shown) - SITES_SHOWN} more" if len(shown) > SITES_SHOWN else ""
        raise TaskFileError(f"--site {','.join(unknown)}: no task in the task file is on "
                            f"{'this site' if len(unknown) == 1 else 'these sites'} (its sites: "
                            f"{', '.join(shown[:SITES_SHOWN]) if shown else 'none'}{more})")


def select(tasks: list[Task], *, task_ids: Iterable[str] | None = None, levels: Iterable[str] | None = None,
           sites: Iterable[str] | None = None, limit: int = 0) -> list[Task]:
    """The tasks a run takes, in file order: by id, level and site (a site matches its key or a part of it)."""
    if limit < 0:   # a slice with a negative end would drop tasks from the end without a word
        raise TaskFileError(f"--limit {limit}: must be 0 (all tasks) or more")
    if levels:   # a level no task in the file has is a typo, not a filter (the other filters aside)
        _check_levels(tasks, levels)
    if sites:    # so is a site
        _check_sites(tasks, sites)
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
        tasks = [t for t in tasks if any(_on_site(t, s) for s in ss)]
    if limit:
        tasks = tasks[:limit]
    return tasks
