"""Reading a run's folder exactly as the official Online-Mind2Web evaluator (`src/run.py`) reads it, and saying
where it would read something else than we meant.

The evaluator takes every subfolder of its trajectories folder as a task (hidden ones too: `os.listdir`), names the
task by its folder, and divides the success rate by the number of these folders. From each it reads `result.json`:

- v1: `task`, and `action_history`, `thoughts`, `final_result_response` where present; the screenshots are every
  file in `trajectory/`, ordered by the first integer in the file's name (`int(re.findall(r'\\d+', name)[0])`), so a
  file there without a digit crashes it, and a stray file (a temporary file, a JPEG) is taken as a screenshot;
- v2 (`"schema_version": "online-mind2web-v2"`): `task`, `action_history` as steps `{action, thought, screenshot,
  ...}`; it drops the last step's action (the final answer step) and takes the screenshots named by the steps, in
  order, from `trajectory/`; the answer is `agent_final_answer`.

`load_episode` reads one task folder that way; `check_run(out)` lists every problem: what one of its modes crashes
on (a null or missing screenshot, a file without a digit, an empty `trajectory/`, a missing key it indexes), what
skews its rate (a folder that is not a task), or what it would read otherwise than the episode meant (`done` as an
action, a v2 history whose last action is not the closing one, a task id that is not the folder's). What it reads
right, if oddly, is a note, not a problem: a key it never reads, a v2 screenshot named twice (the judge sees it
twice). `read_run(out)` is the lenient form for reports: it keeps what could be read.

`result.json` is loaded by `episode_folder.load_result`, the one reader of an episode folder, as the evaluator loads
it (`json.load` of the file opened as text: UTF-8, and a byte order mark at its start is its crash "Unexpected UTF-8
BOM", where the package's own readers read past one); what is read from it here is the evaluator's reading. The
command line (`om2w-tui check`) is `cli/check.py`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.episode_folder import load_result
from om2w_tui.files import read_start
from om2w_tui.json_input import InputError

V2 = "online-mind2web-v2"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# what the evaluator's Pillow opens for certain; anything else in trajectory/ it takes as a screenshot and crashes on
IMAGE_MAGICS = (PNG_MAGIC, b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")
# keys a mode of the evaluator reads without a default: missing, it crashes (AgentTrek zips `thoughts`) or reads None
V1_KEYS = ("task", "final_result_response", "action_history", "thoughts")
V2_KEYS = ("task", "agent_final_answer", "action_history")
V2_CLOSING = ("TASK_COMPLETE", "TASK_INCOMPLETE")
_FIRST_INT = re.compile(r"\d+")
# the agent's `done` written as an action ("done", "DONE {...}", "done: ..."), not a click on a button named Done
_DONE_ACTION = re.compile(r"^\s*done\b", re.IGNORECASE)


@dataclass
class EvaluatorView:
    """One task folder as the evaluator sees it."""

    task_id: str                      # the folder's name (the evaluator ignores result.json's task_id)
    folder: Path
    schema: str                       # "v1" | "v2"
    task: str
    action_history: list[str]         # what the evaluator gives its judge (v2: every step's action but the last)
    thoughts: list[Any] | None
    final_result_response: str | None
    screenshots: list[Path]           # in the evaluator's order
    result: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def steps(self) -> int:
        return len(self.action_history)


class ConformanceError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def task_dirs(out: Path) -> list[str]:
    """The task folders the evaluator takes: every subfolder, hidden ones too, sorted like it sorts them."""
    return [d for d in sorted(os.listdir(out)) if os.path.isdir(os.path.join(out, d))]


def first_int(name: str) -> int | None:
    found = _FIRST_INT.findall(name)
    return int(found[0]) if found else None


def _is_image(path: Path) -> bool:
    try:   # the run's own file: a FIFO (never waited on), a device, a symlink is no image
        head = read_start(path, 12, own=True)
    except InputError:
        return False
    return head.startswith(IMAGE_MAGICS) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def _check_actions(where: str, actions: list[Any], problems: list[str]) -> list[str]:
    out: list[str] = []
    for i, a in enumerate(actions):
        if not isinstance(a, str):
            problems.append(f"{where}: action {i} is a {type(a).__name__}, not a string")
            a = str(a)
        elif _DONE_ACTION.match(a):
            problems.append(f"{where}: action {i} is the agent's `done` ({a[:60]!r}); the action history must hold "
                            f"factual actions only (the answer belongs in the final answer)")
        out.append(a)
    return out


def _v1_screenshots(folder: Path, where: str, problems: list[str]) -> list[Path] | None:
    shots_dir = folder / "trajectory"
    if not shots_dir.is_dir():
        problems.append(f"{where}: no trajectory/ folder (the evaluator lists it and crashes)")
        return None
    names = os.listdir(shots_dir)
    fatal = False
    seen: dict[int, str] = {}
    for name in sorted(names):
        n = first_int(name)
        if n is None:
            problems.append(f"{where}: trajectory/{name} has no digit in its name (the evaluator orders the "
                            f"screenshots by the first number in each name and crashes on this one)")
            fatal = True
            continue
        if n in seen:
            problems.append(f"{where}: trajectory/{name} and trajectory/{seen[n]} share the index {n}, so their "
                            f"order is undefined")
        else:
            seen[n] = name
        path = shots_dir / name
        if path.is_dir():
            problems.append(f"{where}: trajectory/{name} is a folder; the evaluator would take it as a screenshot")
        elif not _is_image(path):
            problems.append(f"{where}: trajectory/{name} is not an image; the evaluator takes every file in "
                            f"trajectory/ as a screenshot and crashes opening this one")
    if fatal:
        return None
    if not names:
        problems.append(f"{where}: trajectory/ is empty (the evaluator's Autonomous and AgentTrek modes crash on "
                        f"the missing last screenshot, WebJudge judges without any)")
    return [shots_dir / n for n in sorted(names, key=lambda x: int(_FIRST_INT.findall(x)[0]))]


def _read_result(folder: Path, where: str, problems: list[str]) -> dict[str, Any] | None:
    if not (folder / "result.json").is_file():
        problems.append(f"{where}: no result.json (a folder that is not a task: the evaluator crashes on it, and "
                        f"counts it in the success rate's denominator)")
        return None
    loaded = load_result(folder, bom_ok=False)   # the evaluator's json.load refuses a byte order mark
    if loaded.result is None:
        problems.append(f"{where}: {loaded.error or 'result.json went away while it was read'}")
    return loaded.result


def load_episode(folder: Path, problems: list[str] | None = None,
                 notes: list[str] | None = None) -> EvaluatorView | None:
    """One task folder read as the evaluator reads it. What it would crash on or read wrong goes to `problems`,
    what it reads right though oddly to `notes`; the view is None only where the evaluator itself would fail
    on the folder."""
    folder = Path(folder)
    problems = [] if problems is None else problems
    notes = [] if notes is None else notes
    where = folder.name
    if folder.name.startswith("."):
        problems.append(f"{where}: a hidden folder is still a task folder to the evaluator (it lists hidden ones "
                        f"too); move it out of the run's folder")
    result = _read_result(folder, where, problems)
    if result is None:
        return None
    if "task_id" not in result:
        notes.append(f"{where}: result.json has no `task_id` (the evaluator names the task by its folder)")
    elif result.get("task_id") is not None and str(result["task_id"]) != folder.name:
        problems.append(f"{where}: result.json's task_id {str(result['task_id'])[:80]!r} is not the folder's name "
                        f"(the evaluator names a task by its folder)")
    if "task" not in result:
        problems.append(f"{where}: result.json has no `task` (the evaluator reads result['task'] and crashes)")
        return None
    task = result["task"]
    if not isinstance(task, str) or not task.strip():
        problems.append(f"{where}: the task text (`task`) is empty or not a string")
        task = str(task or "")
    if result.get("schema_version") == V2:
        return _load_v2(folder, where, result, task, problems, notes)
    if "schema_version" in result and result["schema_version"] not in (None, "", "online-mind2web-v1"):
        problems.append(f"{where}: unknown schema_version {result['schema_version']!r}; the evaluator reads it as v1")
    for key in V1_KEYS:
        if key not in result:
            problems.append(f"{where}: result.json has no `{key}`")
    actions = result.get("action_history")
    if actions is None:
        actions = []
    if not isinstance(actions, list):
        problems.append(f"{where}: action_history is a {type(actions).__name__}, not a list of strings")
        actions = []
    actions = _check_actions(where, actions, problems)
    thoughts = result.get("thoughts")
    if thoughts is not None and not isinstance(thoughts, list):
        problems.append(f"{where}: thoughts is a {type(thoughts).__name__}, not a list")
    answer = result.get("final_result_response")
    if answer is not None and not isinstance(answer, str):
        problems.append(f"{where}: final_result_response is a {type(answer).__name__}, not a string")
    shots = _v1_screenshots(folder, where, problems)
    if shots is None:
        return None
    return EvaluatorView(folder.name, folder, "v1", task, actions, thoughts, answer, shots, result)


def _load_v2(folder: Path, where: str, result: dict[str, Any], task: str, problems: list[str],
             notes: list[str]) -> EvaluatorView | None:
    for key in V2_KEYS:
        if key not in result:
            problems.append(f"{where}: result.json (v2) has no `{key}`")
    steps = result.get("action_history")
    if not isinstance(steps, list):
        problems.append(f"{where}: action_history (v2) must be a list of steps, got {type(steps).__name__}")
        return None
    shots_dir = folder / "trajectory"
    fatal = False
    shots: list[Path] = []
    names: set[str] = set()
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            problems.append(f"{where}: step {i} is a {type(step).__name__}, not an object")
            fatal = True
            continue
        for key in ("action", "screenshot"):
            if key not in step:
                problems.append(f"{where}: step {i} has no `{key}` (the evaluator reads step['{key}'] and crashes)")
                fatal = True
        if "thought" not in step:
            notes.append(f"{where}: step {i} has no `thought` (read as none)")
        if step.get("step") is not None and step.get("step") != i:
            notes.append(f"{where}: step {i} says it is step {step.get('step')} (the evaluator goes by the order)")
        name = step.get("screenshot")
        if isinstance(name, str):
            path = shots_dir / name
            if name in names:
                notes.append(f"{where}: step {i} repeats the screenshot {name} (the judge is sent it twice)")
            names.add(name)
            if not path.is_file():
                problems.append(f"{where}: step {i}'s screenshot trajectory/{name} does not exist")
            elif not _is_image(path):
                problems.append(f"{where}: step {i}'s screenshot trajectory/{name} is not an image (the evaluator "
                                f"crashes opening it)")
            shots.append(path)
        elif "screenshot" in step:
            problems.append(f"{where}: step {i}'s screenshot is not a file name")
            fatal = True
    if fatal:
        return None
    if not steps:
        problems.append(f"{where}: no steps (v2 needs at least the closing step with the last state; the "
                        f"evaluator's Autonomous and AgentTrek modes crash without a screenshot)")
    else:
        last = str(steps[-1].get("action", ""))
        if not last.upper().startswith(V2_CLOSING):
            problems.append(f"{where}: the last step's action {last[:60]!r} is not the closing step "
                            f"(TASK_COMPLETE or TASK_INCOMPLETE ...); the evaluator drops the last step's action, "
                            f"so this one is lost")
    actions = _check_actions(where, [s.get("action") for s in steps[:-1]], problems)
    answer = result.get("agent_final_answer")
    if answer is not None and not isinstance(answer, str):
        problems.append(f"{where}: agent_final_answer is a {type(answer).__name__}, not a string")
    thoughts = [s.get("thought") for s in steps]
    return EvaluatorView(folder.name, folder, "v2", task, actions, thoughts, answer, shots, result)


@dataclass
class RunRead:
    out: Path
    episodes: dict[str, EvaluatorView]
    problems: list[str]
    task_dirs: list[str]
    notes: list[str] = field(default_factory=list)


def read_run(out: Path) -> RunRead:
    """Every task folder of `out` read as the evaluator reads it: the episodes it could read and every problem."""
    out = Path(out)
    problems: list[str] = []
    if not out.is_dir():
        return RunRead(out, {}, [f"{out}: not a folder"], [])
    dirs = task_dirs(out)
    if not dirs:
        problems.append(f"{out}: no task folders (the evaluator divides by their number: zero)")
    episodes: dict[str, EvaluatorView] = {}
    notes: list[str] = []
    for d in dirs:
        ep = load_episode(out / d, problems, notes)
        if ep is not None:
            episodes[d] = ep
    return RunRead(out, episodes, problems, dirs, notes)


def check_run(out: Path) -> list[str]:
    """Every problem the official evaluator would have with the run's folder `out`; [] when it reads it as meant."""
    return read_run(out).problems
