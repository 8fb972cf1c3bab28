"""An episode's folder in the Online-Mind2Web v1 layout, written as the episode goes:

    <out>/<task_id>/result.json                          task_id, task, final_result_response, action_history, thoughts
    <out>/<task_id>/trajectory/<i>_full_screenshot.png   one per step, in order, then the final state
    <out>/<task_id>/history_<k>.json                     the browser-use histories

Each step's screenshot and action lines land on disk when the step ends and `result.json` is rewritten atomically
after every step, so a timeout, a kill or a crash keeps every finished step in a folder the evaluator can read.
The action lines are factual, in the benchmark's style; the agent's words go to `thoughts`, its answer to
`final_result_response`, and `done` is never an action.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Iterable

NOT_ACTIONS = {"done"}
_KEEP_ATTRS = ("id", "aria-label", "name", "placeholder", "title", "href", "role", "type", "value", "alt")


def write_atomic(path: Path, data: bytes | str, tmp_dir: Path | None = None) -> None:
    """Write a file so that a reader (or a crash) sees the old content or the new, never a part. `tmp_dir` (on the
    same file system) keeps the half-written file out of a folder whose every file is read, like `trajectory/`."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    # not tempfile.mkstemp: its 0600 would make result.json and the screenshots unreadable to others (the evaluator
    # run by another user); 0666 less the umask, as for any file written plainly
    tmp = Path(tmp_dir or path.parent) / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str))


def element_tag(el: Any) -> str:
    """`<button id="go" aria-label="Search"> Search` for an interacted element (browser-use's DOMInteractedElement)."""
    if el is None:
        return ""
    tag = str(getattr(el, "node_name", None) or "element").lower()
    attrs = getattr(el, "attributes", None) or {}
    keep = " ".join(f'{k}="{str(attrs[k])[:80]}"' for k in _KEEP_ATTRS if attrs.get(k))
    name = getattr(el, "ax_name", None)
    return f"<{tag}{' ' + keep if keep else ''}>{' ' + str(name)[:80] if name else ''}"


def action_line(name: str, params: dict[str, Any] | None, el: Any = None) -> str:
    """One action in the benchmark's style."""
    params = params or {}
    if name in ("click", "dropdown_options"):
        if el is None:
            x, y = params.get("coordinate_x"), params.get("coordinate_y")
            if x is not None or y is not None:   # a coordinate click on the 0-1000 screen scale: no element
                return f"CLICK at ({x}, {y}) of 1000"
            return "<element> -> CLICK"          # no element matched the index
        return f"{element_tag(el)} -> CLICK"
    if name == "input":
        return f"{element_tag(el) or '<element>'} -> TYPE: {params.get('text', '')}"
    if name == "select_dropdown":
        return f"{element_tag(el) or '<element>'} -> SELECT: {params.get('text', '')}"
    if name == "navigate":
        return f"NAVIGATE -> {params.get('url', '')}"
    if name == "search":
        return f"SEARCH -> {params.get('query', '')}"
    if name == "scroll":
        return f"SCROLL {'DOWN' if params.get('down', True) else 'UP'}"
    if name == "send_keys":
        return f"KEYS: {params.get('keys', '')}"
    if name == "go_back":
        return "GO BACK"
    return f"{name.upper()} {json.dumps(params, ensure_ascii=False)[:120]}"


def step_actions(step: Any, skip: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(action lines, thoughts) of one browser-use history step; one thought per recorded action."""
    mo = getattr(step, "model_output", None)
    if mo is None:
        return [], []
    skip = NOT_ACTIONS | set(skip)
    els = list(getattr(getattr(step, "state", None), "interacted_element", None) or [])
    thought = str(getattr(mo, "next_goal", None) or getattr(mo, "memory", None) or "")[:400]
    actions, thoughts = [], []
    for k, a in enumerate(getattr(mo, "action", None) or []):
        d = a.model_dump(exclude_none=True) if hasattr(a, "model_dump") else dict(a)
        name = next(iter(d), "")
        if not name or name in skip:
            continue
        actions.append(action_line(name, d.get(name), els[k] if k < len(els) else None))
        thoughts.append(thought)
    return actions, thoughts


V2_SCHEMA = "online-mind2web-v2"


class TrajectoryWriter:
    """Writes one episode's folder step by step, in the v1 layout (`result.json` with `action_history` and
    `thoughts` as lists of strings) or the v2 layout (`"schema_version": "online-mind2web-v2"`, one entry per
    action with its screenshot, URL and thought, the answer in `agent_final_answer`, closed by TASK_COMPLETE)."""

    def __init__(self, folder: Path, task_id: str, task_text: str, schema: str = "v1",
                 reference_length: int | None = None):
        if schema not in ("v1", "v2"):
            raise ValueError(f"unknown trajectory schema {schema!r}")
        self.folder = Path(folder)
        self.shots = self.folder / "trajectory"
        self.task_id, self.task_text, self.schema = task_id, task_text, schema
        self.reference_length = reference_length
        self.actions: list[str] = []
        self.thoughts: list[str] = []
        self.steps_v2: list[dict[str, Any]] = []
        self.answer = ""
        self.last_shot: str | None = None     # the screenshot file of the latest step, if it had one
        self.n_shots = 0
        self.n_steps = 0
        self.shots.mkdir(parents=True, exist_ok=True)
        self._write_result()

    def _shot_name(self, i: int) -> str:
        return f"{i}_full_screenshot.png"

    def _write_result(self) -> None:
        if self.schema == "v1":
            doc: dict[str, Any] = {"task_id": self.task_id, "task": self.task_text,
                                   "final_result_response": self.answer, "action_history": self.actions,
                                   "thoughts": self.thoughts}
        else:
            # the evaluator drops the last step's action: a TASK_COMPLETE step always closes the list (with an
            # empty answer until the episode ends), so a folder cut short by a kill is still whole
            history = list(self.steps_v2)
            shot = self._shot_name(self.n_shots - 1) if self.n_shots else None
            history.append({"action": f"TASK_COMPLETE -> ANSWER: {self.answer}", "thought": None,
                            "screenshot": shot, "url": history[-1]["url"] if history else ""})
            doc = {"schema_version": V2_SCHEMA, "task": self.task_text, "task_id": self.task_id,
                   "agent_final_answer": self.answer, "reference_length": self.reference_length,
                   "action_history": [{"step": i, **entry} for i, entry in enumerate(history)]}
        write_json_atomic(self.folder / "result.json", doc)

    def add_screenshot(self, png: bytes | None = None, path: str | Path | None = None) -> bool:
        target = self.shots / self._shot_name(self.n_shots)
        if png:
            write_atomic(target, png, tmp_dir=self.folder)
        elif path and Path(path).exists():
            tmp = self.folder / f".{target.name}.tmp"   # beside trajectory/: the evaluator reads every file in it
            try:
                shutil.copyfile(path, tmp)
                os.replace(tmp, target)
            except OSError:   # the screenshot went away meanwhile: a missing picture must not cost the step
                tmp.unlink(missing_ok=True)
                return False
        else:
            return False
        self.n_shots += 1
        return True

    def add_step(self, step: Any, skip: Iterable[str] = ()) -> list[str]:
        """Record a finished browser-use step: its screenshot, its action lines; -> the lines."""
        state = getattr(step, "state", None)
        index = self.n_shots
        shot = self._shot_name(index) if self.add_screenshot(path=getattr(state, "screenshot_path", None)) else None
        self.last_shot = shot
        actions, thoughts = step_actions(step, skip)
        self.actions += actions
        self.thoughts += thoughts
        url = str(getattr(state, "url", "") or "")
        self.steps_v2 += [{"action": a, "thought": t, "screenshot": shot, "url": url} for a, t in zip(actions, thoughts)]
        self.n_steps += 1
        self._write_result()
        return actions

    def add_plain_step(self, actions: list[str], thought: str = "", png: bytes | None = None, url: str = "") -> None:
        """A step an arm describes itself (no browser-use history): its action lines and what it saw."""
        index = self.n_shots
        shot = self._shot_name(index) if self.add_screenshot(png=png) else None
        self.last_shot = shot
        self.actions += actions
        self.thoughts += [thought[:400]] * len(actions)
        self.steps_v2 += [{"action": a, "thought": thought[:400], "screenshot": shot, "url": url} for a in actions]
        self.n_steps += 1
        self._write_result()

    def finish(self, answer: str | None, final_png: bytes | None, histories: Iterable[Any] = ()) -> None:
        self.answer = answer or ""
        if final_png:
            self.add_screenshot(png=final_png)
        self._write_result()
        for i, h in enumerate(histories):
            try:
                write_atomic(self.folder / f"history_{i}.json",
                             json.dumps(h.model_dump() if hasattr(h, "model_dump") else h, default=str))
            except Exception:   # a history that cannot be serialised must not cost the trajectory
                continue
