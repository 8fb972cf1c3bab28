"""Reading an episode's folder as `benchmarks/trajectory.py` writes it, in one place: the scheduler (what a dead
worker left), the console's episode view and report, and the official evaluator's reading (`conformance.py`, which
reads the same `result.json` with the evaluator's own rules) all go through it.

    <out>/<task_id>/result.json                          v1: task_id, task, final_result_response, action_history,
                                                         thoughts; v2: "schema_version": "online-mind2web-v2", one
                                                         entry per step, closed by TASK_COMPLETE / TASK_INCOMPLETE
    <out>/<task_id>/trajectory/<i>_full_screenshot.png   the screenshots, in the order of <i>
    <out>/<task_id>/history_<k>.json                     the browser-use histories: each step's URL where a v1
                                                         result.json has no `action_urls` (written before it)
    <out>/<task_id>/.attempt                             the number of the attempt whose files these are, written
                                                         as it began (an attempt cut with its console has no record)
    <out>/<task_id>/attempts/<n>/                        attempt n's files, moved there when the next began

The folder may be read while its episode writes it (`result.json` is replaced atomically after every step), or after
its worker died: nothing here raises for what is missing or torn; it is said in `EpisodeFolder.problems`.
`EpisodeFolder` is a folder on disk; a live attempt is the scheduler's `Episode`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from om2w_tui.benchmarks.trajectory import V2_JOIN
from om2w_tui.files import read_file, write_atomic
from om2w_tui.json_input import InputError, decode, read_bytes

SHOT = re.compile(r"(\d+)_full_screenshot\.png")   # matched whole (fullmatch)
CLOSING = ("TASK_COMPLETE", "TASK_INCOMPLETE")     # a v2 history's closing entry: the last state, no action
ATTEMPTS = "attempts"
ATTEMPT_MARK = ".attempt"   # the number of the attempt whose files the task's folder holds, written as it begins
RESULT_LIMIT = 64 << 20   # bytes of a result.json read back (a long episode's is well under 1 MiB)
MAX_STEP_NUMBER = 1 << 20  # an `action_steps` number past this is not a step of ours (its list is not used)
PAGE_TEXT_LIMIT = 500       # characters of the last page's URL and title kept
HISTORY_LIMIT = 64 << 20    # bytes of a history_<k>.json read back for its steps' URLs

Layout = Literal["v1", "v2"]


@dataclass(frozen=True)
class StepOnDisk:
    """What the agent did on one screenshot: its action lines, its thought and the page's URL (v2's entry's, v1's
    `action_urls`, else its browser-use history's; "" where the folder has none)."""

    actions: tuple[str, ...] = ()
    thought: str = ""
    url: str = ""


@dataclass(frozen=True)
class LastPage:
    """The page the episode ended on, as its worker read it from the browser when the episode ended (`last_page` in
    `result.json`; a folder written before it has none): its URL, its title and its main document's HTTP status
    (0: not known, e.g. the browser's own error page)."""

    url: str = ""
    title: str = ""
    status: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "title": self.title, **({"status": self.status} if self.status else {})}

    @classmethod
    def of(cls, value: Any) -> LastPage | None:
        """`result.json`'s `last_page` read (None: none, or not an object); a field of the wrong type is left out."""
        if not isinstance(value, dict):
            return None
        status = value.get("status")
        return cls(url=str(value.get("url") or "")[:PAGE_TEXT_LIMIT],
                   title=str(value.get("title") or "")[:PAGE_TEXT_LIMIT],
                   status=status if type(status) is int and 100 <= status <= 599 else 0)


@dataclass(frozen=True)
class ResultFile:
    """`result.json` as read: its object, or why there is none (`missing`: no such file; `error`: unreadable, torn
    or not a JSON object)."""

    result: dict[str, Any] | None
    missing: bool = False
    error: str = ""


@dataclass(frozen=True)
class EpisodeFolder:
    """An episode's folder read in one go."""

    folder: Path
    result: dict[str, Any] = field(default_factory=dict, repr=False)   # result.json's object ({} when unreadable)
    layout: Layout | None = None             # None: no readable result.json
    task_id: str = ""                        # result.json's, else the folder's name
    task: str = ""
    answer: str = ""
    actions: tuple[str, ...] = ()            # every action line, in order (v2: each entry's actions split)
    thoughts: tuple[str, ...] = ()           # v1: one per action line; v2: one per entry
    steps: tuple[StepOnDisk, ...] = ()       # see `episode_steps`
    recorded_steps: int = 0                  # steps with an action (`action_steps`); written before it, v2: entries
    #                                          but the closing one, v1: action lines (v1 kept no bounds)
    shots: tuple[Path, ...] = ()             # trajectory/<i>_full_screenshot.png, in the order of <i>
    blank_screenshot: bool = False           # the final state is the writer's blank stand-in: no real screenshot
    cut_short: str = ""                      # why the episode stopped before its end, as the writer said it
    last_page: LastPage | None = None        # the page it ended on (its URL, title, HTTP status), where recorded
    files: tuple[tuple[str, int], ...] = ()  # (name, bytes) of each file; (name + "/", -files inside) of a folder
    problems: tuple[str, ...] = ()           # what could not be read: no folder, no result.json yet, torn JSON

    @property
    def problem(self) -> str:
        """The problems on one line ("" when there is none)."""
        return "; ".join(self.problems)

    @property
    def is_earlier_attempt(self) -> bool:
        return is_attempt_folder(self.folder)


def load_result(folder: Path, *, bom_ok: bool = True) -> ResultFile:
    """`<folder>/result.json`'s object, through the one JSON decoder (never through a symlink); never raises.
    `bom_ok=False`: a byte order mark at its start is an error, as the official evaluator's `json.load` has it."""
    path = Path(folder) / "result.json"
    if not os.path.lexists(path):
        return ResultFile(None, missing=True)
    try:
        result = decode(read_bytes(path, RESULT_LIMIT, follow_symlinks=False), "result.json", bom_ok=bom_ok)
    except InputError as e:   # torn (a writer that is not ours), unreadable, not UTF-8, too deep, a symlink
        return ResultFile(None, error=str(e))   # it names result.json (its path where it cannot be read at all)
    if not isinstance(result, dict):
        return ResultFile(None, error=f"result.json holds a {type(result).__name__}, not an object")
    return ResultFile(result)


def screenshots(folder: Path) -> list[Path]:
    """`trajectory/<i>_full_screenshot.png` in the order of <i> (other files there are not ours: left out)."""
    traj = Path(folder) / "trajectory"
    try:
        found = [(int(m.group(1)), p) for p in traj.iterdir() if (m := SHOT.fullmatch(p.name))]
    except OSError:   # no trajectory/ yet, or gone with a moved attempt
        return []
    return [p for _, p in sorted(found)]


def layout_of(result: dict[str, Any]) -> Layout:
    history = result.get("action_history") or []
    is_v2 = result.get("schema_version") or (isinstance(history, list) and any(isinstance(h, dict) for h in history))
    return "v2" if is_v2 else "v1"


def _is_closing(entry: dict[str, Any]) -> bool:
    return str(entry.get("action", "")).startswith(CLOSING)


def _action_steps(result: dict[str, Any], n_actions: int) -> list[int] | None:
    """`action_steps` as the writer gave it: one step number (its screenshot's) per action; None where the folder
    has none (written before it) or it does not fit the actions (another writer's)."""
    steps = result.get("action_steps")
    if not isinstance(steps, list) or len(steps) != n_actions or n_actions == 0:
        return None
    if not all(type(n) is int and 0 <= n < MAX_STEP_NUMBER for n in steps):
        return None
    return steps


def _by_step(acted: list[tuple[str, str, str]], numbers: list[int], n_shots: int) -> list[StepOnDisk]:
    """(action, thought, url) of each action grouped by its step's number: one StepOnDisk per screenshot."""
    found: dict[int, tuple[list[str], str, str]] = {}
    for (action, thought, url), i in zip(acted, numbers, strict=True):
        found.setdefault(i, ([], thought, url))[0].append(action)
    n = max([n_shots, *[k + 1 for k in found]])
    return [StepOnDisk(tuple(found[i][0]), found[i][1], found[i][2]) if i in found else StepOnDisk()
            for i in range(n)]


def _strings(value: Any, n: int) -> list[str] | None:
    """A list of `n` strings as the writer gave it (None: absent, or not that: another writer's)."""
    if not isinstance(value, list) or len(value) != n or not all(isinstance(v, str) for v in value):
        return None
    return value


def history_urls(folder: Path, n_shots: int) -> dict[int, str]:
    """screenshot number -> the page URL of the step it shows, read from `history_<k>.json` (k = 0, 1 ...: the
    browser-use histories, in order), for a v1 folder written before `action_urls`. The writer numbered a step's
    screenshot in order, one per step whose history has a screenshot; {} where no history can be read or its steps
    with a screenshot are not the folder's (neither every screenshot nor all but the final state's)."""
    urls: dict[int, str] = {}
    for k in range(MAX_STEP_NUMBER):
        path = Path(folder) / f"history_{k}.json"
        if not os.path.lexists(path):
            break
        try:
            doc = decode(read_bytes(path, HISTORY_LIMIT, follow_symlinks=False), path.name, wide_ints=True)
        except InputError:
            return {}
        items = doc.get("history") if isinstance(doc, dict) else None
        for item in items if isinstance(items, list) else []:
            state = item.get("state") if isinstance(item, dict) else None
            if isinstance(state, dict) and state.get("screenshot_path"):
                urls[len(urls)] = str(state.get("url") or "")
    return urls if urls and len(urls) in (n_shots, n_shots - 1) else {}


def episode_steps(result: dict[str, Any], shots: list[Path] | tuple[Path, ...],
                  shot_urls: dict[int, str] | None = None) -> tuple[str, list[StepOnDisk]]:
    """(the answer, the steps) of a result.json in either layout: one StepOnDisk per screenshot, in order (a
    screenshot with no action, like the final state, gets an empty one).

    Each action's step is what the writer recorded in `action_steps` (the number of the step's screenshot). A folder
    written before that key: v2 names each entry's screenshot, so the match is exact; v1 keeps only flat lists, so
    consecutive actions with the same thought are taken as one step (two steps with the very same thought would
    read as one). A v1 step's URL is its actions' `action_urls`, else `shot_urls` (`history_urls`) of its number."""
    history = result.get("action_history") or []
    if not isinstance(history, list):
        history = []
    if layout_of(result) == "v2":
        entries = [h for h in history if isinstance(h, dict) and not _is_closing(h)]   # the closing one: no action
        acted = [(a, str(h.get("thought") or ""), str(h.get("url") or ""))
                 for h in entries for a in str(h.get("action", "")).split(V2_JOIN)]   # an entry's actions, joined
        if (numbers := _action_steps(result, len(acted))) is not None:
            return answer_of(result), _by_step(acted, numbers, len(shots))
        index = {p.name: i for i, p in enumerate(shots)}
        found: dict[int, tuple[list[str], str, str]] = {}
        for h in entries:
            i = index.get(str(h.get("screenshot")), -1)
            acts, _, _ = found.setdefault(i, ([], str(h.get("thought") or ""), str(h.get("url") or "")))
            acts += str(h.get("action", "")).split(V2_JOIN)   # one entry is one step, its actions joined
        n = max([len(shots), *[k + 1 for k in found]])
        steps = [StepOnDisk(tuple(found[i][0]), found[i][1], found[i][2]) if i in found else StepOnDisk()
                 for i in range(n)]
        return answer_of(result), steps
    thoughts = [str(t) for t in result.get("thoughts") or []]
    if (numbers := _action_steps(result, len(history))) is not None:
        urls = _strings(result.get("action_urls"), len(history)) or [(shot_urls or {}).get(i, "") for i in numbers]
        acted = [(str(a), thoughts[n] if n < len(thoughts) else "", urls[n]) for n, a in enumerate(history)]
        return answer_of(result), _by_step(acted, numbers, len(shots))
    groups: list[tuple[list[str], str]] = []
    for n, action in enumerate(str(a) for a in history):
        thought = thoughts[n] if n < len(thoughts) else ""
        if groups and thought and thought == groups[-1][1]:
            groups[-1][0].append(action)
        else:
            groups.append(([action], thought))
    return answer_of(result), [StepOnDisk(tuple(a), t) for a, t in groups]


def _files(folder: Path) -> list[tuple[str, int]]:
    files: list[tuple[str, int]] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return files
    for p in entries:
        if p.name.startswith("."):   # the writer's temporary files
            continue
        try:
            if p.is_dir():
                files.append((p.name + "/", -sum(1 for q in p.rglob("*") if q.is_file())))
            else:
                files.append((p.name, p.stat().st_size))
        except OSError:   # gone meanwhile (an attempt moved away)
            continue
    return files


def read_episode(folder: Path) -> EpisodeFolder:
    """Everything an episode folder holds, read once; what is missing or unreadable is in `problems`."""
    folder = Path(folder)
    if not folder.is_dir():
        return EpisodeFolder(folder, task_id=folder.name, problems=(f"no folder yet: {folder.name}",))
    loaded = load_result(folder)
    problems = []
    if loaded.missing:
        problems.append("no result.json yet (the episode has not finished a step)")
    elif loaded.error:
        problems.append(loaded.error)
    result = loaded.result or {}
    shots = screenshots(folder)
    layout = layout_of(result) if loaded.result is not None else None
    n_actions = len(result.get("action_history") or []) if layout == "v1" else 0
    older = (layout == "v1" and _action_steps(result, n_actions) is not None   # written before action_urls
             and _strings(result.get("action_urls"), n_actions) is None)
    answer, steps = episode_steps(result, shots, history_urls(folder, len(shots)) if older else None)
    history = result.get("action_history") or []
    history = history if isinstance(history, list) else []
    if layout == "v2":
        entries = [h for h in history if isinstance(h, dict) and not _is_closing(h)]
        actions = [a for h in entries for a in str(h.get("action", "")).split(V2_JOIN)]
        thoughts = [str(h.get("thought") or "") for h in entries]
        recorded = len(entries)
    else:
        actions = [str(a) for a in history]
        thoughts = [str(t) for t in result.get("thoughts") or []]
        recorded = len(actions)
    if (numbers := _action_steps(result, len(actions))) is not None:
        recorded = len(set(numbers))
    return EpisodeFolder(
        folder, result, layout, task_id=str(result.get("task_id") or folder.name), task=str(result.get("task") or ""),
        answer=answer, actions=tuple(actions), thoughts=tuple(thoughts), steps=tuple(steps), recorded_steps=recorded,
        shots=tuple(shots), blank_screenshot=bool(result.get("blank_screenshot")),
        cut_short=str(result.get("cut_short") or ""), last_page=LastPage.of(result.get("last_page")),
        files=tuple(_files(folder)), problems=tuple(problems))


def read_answer(folder: Path) -> str:
    """Only the agent's answer ("" when there is none or result.json cannot be read): a tenth of `read_episode`'s
    cost, for a report that lists many episodes."""
    return answer_of(load_result(folder).result or {})


def answer_of(result: dict[str, Any]) -> str:
    """The agent's answer; none for an episode cut short (a folder written before answers were only the agent's
    kept its last action's output there)."""
    if result.get("cut_short"):
        return ""
    return str(result.get("agent_final_answer" if layout_of(result) == "v2" else "final_result_response") or "")


# why an episode has no answer, by how it ended (its record's status, or its folder's `cut_short`)
NO_ANSWER_WHY = {"killed": "killed", "timeout": "timeout", "out_of_steps": "out of steps", "error": "error",
                 "blocked": "blocked"}


def no_answer(status: str | None) -> str:
    """What a view shows where an episode has no answer: `no answer (killed)`, `no answer (out of steps)` ..."""
    why = NO_ANSWER_WHY.get(status or "")
    return f"no answer ({why})" if why else "no answer"


# ── attempts ─────────────────────────────────────────────────────────────────────────────────────────────────────


def is_attempt_folder(folder: Path) -> bool:
    """An earlier attempt's folder (`<task>/attempts/<n>`): nothing writes it any more."""
    return Path(folder).parent.name == ATTEMPTS


def attempt_folders(task_folder: Path) -> list[tuple[int, Path]]:
    """The earlier attempts kept in `<task>/attempts/<n>/`, as (n, folder), in the order of n."""
    try:
        found = [(int(p.name), p) for p in (Path(task_folder) / ATTEMPTS).iterdir() if p.name.isdigit() and p.is_dir()]
    except OSError:   # no attempts/: the task ran once
        return []
    return sorted(found)


def attempt_mark(task_folder: Path) -> int | None:
    """The attempt number written in `<task>/.attempt` when the attempt whose files the folder holds began (None:
    none, or not a number: a folder written before the mark, or by another harness)."""
    try:
        text = read_file(Path(task_folder) / ATTEMPT_MARK, 32, own=True).decode("ascii").strip()
    except (OSError, ValueError, InputError):
        return None
    return int(text) if text.isdigit() and 0 < int(text) < MAX_STEP_NUMBER else None


def _leftovers(task_folder: Path) -> list[Path]:
    """What an attempt left in the task's folder: everything but `attempts/` and the mark."""
    return [p for p in Path(task_folder).iterdir() if p.name not in (ATTEMPTS, ATTEMPT_MARK)]


def begun_attempts(task_folder: Path) -> set[int]:
    """The attempt numbers whose files the task's folder holds: its kept attempts' and, where its own files are an
    attempt's, the mark's (empty: no folder, or none of ours)."""
    kept = {n for n, _ in attempt_folders(task_folder)}
    try:
        own = attempt_mark(task_folder) if _leftovers(task_folder) else None
    except OSError:
        own = None
    return kept | ({own} if own is not None else set())


def started_attempts(task_folder: Path) -> int:
    """The highest attempt number the task's folder shows began. An attempt cut with its console (kill -9) has no
    record; its number is taken all the same, so that the next attempt's is its own (0: none)."""
    return max(begun_attempts(task_folder), default=0)


def attempt_folder(out: Path, task_id: str, attempt: int, latest: bool) -> Path:
    """The folder of `task_id`'s attempt number `attempt`: `<task>/attempts/<attempt>` where that was kept, else the
    task's own folder where its mark says the attempt (or, with no mark, where the attempt is the latest), else the
    kept folder's path though it is not there (an attempt cut before it wrote a file left none)."""
    folder = Path(out) / task_id
    kept = folder / ATTEMPTS / str(attempt)
    if kept.is_dir():
        return kept
    mark = attempt_mark(folder)
    return folder if mark == attempt or (mark is None and latest) else kept


class UnsafeFolder(OSError):
    """A task folder (or its `attempts/`) that is a symlink or no folder: the run would write outside its out
    folder, or move another folder's files; the message names it."""


def unsafe_task_folder(folder: Path) -> str:
    """'' when `folder` is absent or a real folder whose `attempts/` is absent or a real folder (never a symlink),
    else what is wrong with it."""
    for path in (Path(folder), Path(folder) / ATTEMPTS):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return ""
        except OSError as e:
            return f"{path}: cannot be read ({e.strerror or e})"
        if stat.S_ISLNK(mode):
            return f"{path}: is a symbolic link; a task's folder must be a folder of the run's own (remove the link)"
        if not stat.S_ISDIR(mode):
            return f"{path}: is not a folder, where the run keeps the task's files (move it away)"
    return ""


def keep_earlier_attempt(folder: Path, attempt: int | None = None) -> Path | None:
    """Move the files an earlier attempt left in a task's folder to `<task>/attempts/<n>/` (inside the task's folder:
    every folder beside the task folders would count as a task for the evaluator), n the number its mark says (one
    past the highest kept where it has none: a folder written before the mark); -> that folder, or None when there
    was nothing to keep. `attempt`: the attempt about to begin, whose number is then marked in the folder. A task
    folder (or its attempts/) that is a symlink raises UnsafeFolder: nothing is moved, and the episode never writes
    through it."""
    if problem := unsafe_task_folder(folder):
        raise UnsafeFolder(problem)
    dest = None
    if folder.exists() and (leftovers := _leftovers(folder)):
        attempts = folder / ATTEMPTS
        attempts.mkdir(exist_ok=True)
        n = attempt_mark(folder)
        if n is None or (attempts / str(n)).exists():
            n = 1 + max((int(p.name) for p in attempts.iterdir() if p.name.isdigit()), default=0)
        dest = attempts / str(n)
        dest.mkdir()
        mark = folder / ATTEMPT_MARK
        for p in [*leftovers, *([mark] if mark.is_file() else [])]:   # the mark with them: attempts/<n> says n
            shutil.move(str(p), dest / p.name)
    if attempt is not None:
        folder.mkdir(exist_ok=True)
        write_atomic(folder / ATTEMPT_MARK, f"{attempt}\n")
    return dest


__all__ = ["ATTEMPTS", "ATTEMPT_MARK", "CLOSING", "NO_ANSWER_WHY", "SHOT", "EpisodeFolder", "Layout", "ResultFile",
           "StepOnDisk", "attempt_folder", "attempt_folders", "attempt_mark", "begun_attempts", "episode_steps",
           "history_urls", "is_attempt_folder", "keep_earlier_attempt", "layout_of", "load_result", "no_answer",
           "read_answer", "read_episode", "screenshots", "started_attempts"]
