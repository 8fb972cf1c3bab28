"""An episode's folder in the Online-Mind2Web v1 layout, written as the episode goes:

    <out>/<task_id>/result.json                          task_id, task, final_result_response, action_history, thoughts,
                                                         action_steps, action_urls
    <out>/<task_id>/trajectory/<i>_full_screenshot.png   one per step, in order, then the final state when the
                                                         page changed after the last step's screenshot
    <out>/<task_id>/history_<k>.json                     the browser-use histories

Each step's screenshot and action lines land on disk when the step ends and `result.json` is rewritten atomically
after every step, so a timeout, a kill or a crash keeps every finished step in a folder the evaluator can read.
The action lines are factual, in the benchmark's style; the agent's words go to `thoughts`, its answer to
`final_result_response`, and `done` is never an action. `action_steps` (a key the evaluator ignores, in both layouts)
gives each action its step, numbered as the step's screenshot (`<n>_full_screenshot.png`; an action of a step that
got no screenshot has the number of the step before): what groups actions into steps, never their thoughts' text,
which may repeat. `action_urls` (v1; ignored by the evaluator too) gives each action its step's page URL, as a v2
entry's `url` does.

A browser-use step's screenshot is the page the step acted on. The evaluator sends the judge one image per v1 file
and one per v2 entry, so no state is written or named twice: the final state is kept only when it differs from the
last step's screenshot, a v2 entry is one step (its actions joined by " ; ") with that step's screenshot, and the
closing entry carries the last state. Until its first screenshot an episode has a blank image (said in
`result.json`) so that its folder is readable even if its worker dies; an episode cut short (timeout, kill, error)
says so in `cut_short`, a key the evaluator ignores, and its v2 history closes with TASK_INCOMPLETE instead of an
answer. `last_page` (ignored by the evaluator too) is the page the episode ended on, read from the browser at its
end: `{"url", "title", "status"}`, the status being its main document's HTTP status (left out where not known).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from om2w_tui.files import SCREENSHOT_LIMIT, read_file, write_atomic, write_json_atomic
from om2w_tui.json_input import InputError

NOT_ACTIONS = {"done"}
_KEEP_ATTRS = ("id", "aria-label", "name", "placeholder", "title", "href", "role", "type", "value", "alt")


def element_tag(el: Any) -> str:
    """`<button id="go" aria-label="Search"> Search` for an interacted element (browser-use's DOMInteractedElement)."""
    if el is None:
        return ""
    tag = str(getattr(el, "node_name", None) or "element").lower()
    attrs = getattr(el, "attributes", None) or {}
    keep = " ".join(f'{k}="{str(attrs[k])[:80]}"' for k in _KEEP_ATTRS if attrs.get(k))
    name = getattr(el, "ax_name", None)
    return f"<{tag}{' ' + keep if keep else ''}>{' ' + str(name)[:80] if name else ''}"


def action_line(name: str, params: dict[str, Any] | None, el: Any = None, coordinates: str = "normalized") -> str:
    """One action in the benchmark's style. `coordinates` is the run's mode: a coordinate click is said on the
    0-1000 grid (normalized) or in screenshot pixels (pixels)."""
    params = params or {}
    if name in ("click", "dropdown_options"):
        if el is None:
            x, y = params.get("coordinate_x"), params.get("coordinate_y")
            if x is not None or y is not None:   # a coordinate click: no element
                return f"CLICK at ({x}, {y}) px" if coordinates == "pixels" else f"CLICK at ({x}, {y}) of 1000"
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


def step_actions(step: Any, skip: Iterable[str] = (), coordinates: str = "normalized") -> tuple[list[str], list[str]]:
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
        actions.append(action_line(name, d.get(name), els[k] if k < len(els) else None, coordinates))
        thoughts.append(thought)
    return actions, thoughts


V2_SCHEMA = "online-mind2web-v2"
V2_JOIN = " ; "               # a v2 entry is one step: several actions of the step share its one screenshot
BLANK_SIZE = (1280, 720)


def blank_png(width: int = BLANK_SIZE[0], height: int = BLANK_SIZE[1]) -> bytes:
    """A plain light-grey PNG: the final state of an episode that got no screenshot at all (no imaging library)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    row = b"\x00" + b"\xee" * width                     # filter byte, then one grey byte a pixel
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * height, 9)) + chunk(b"IEND", b""))


class TrajectoryWriter:
    """Writes one episode's folder step by step, in the v1 layout (`result.json` with `action_history` and
    `thoughts` as lists of strings) or the v2 layout (`"schema_version": "online-mind2web-v2"`, one entry per step
    with the screenshot it acted on, its URL and thought, the answer in `agent_final_answer`, closed by an entry
    with the last state: TASK_COMPLETE, or TASK_INCOMPLETE for an episode cut short or still running)."""

    def __init__(self, folder: Path, task_id: str, task_text: str, schema: str = "v1",
                 reference_length: int | None = None, coordinates: str = "normalized"):
        if schema not in ("v1", "v2"):
            raise ValueError(f"unknown trajectory schema {schema!r}")
        self.folder = Path(folder)
        self.shots = self.folder / "trajectory"
        self.task_id, self.task_text, self.schema = task_id, task_text, schema
        self.reference_length = reference_length
        self.coordinates = coordinates       # how coordinate clicks are said (the run's --coordinates)
        self.actions: list[str] = []
        self.thoughts: list[str] = []
        self.action_steps: list[int] = []    # each action's step, numbered as the step's screenshot
        self.action_urls: list[str] = []     # each action's step's page URL (v1's `action_urls`)
        # one per step: {"shot": name | None, "actions": [...], "thought": str, "url": str, "step": int}
        self.frames: list[dict[str, Any]] = []
        self.answer = ""
        self.last_shot: str | None = None     # the screenshot file of the latest step, if it had one
        self.n_shots = 0
        self.n_steps = 0
        self.final_shot: str | None = None    # the final state's file, once finish() wrote or chose one
        self.cut_short: str | None = None     # why the episode stopped before its end (timeout, killed, error ...)
        self.blank = False                    # the final state is a blank stand-in: no screenshot could be taken
        self.last_page: dict[str, Any] | None = None   # the page it ended on (url, title, HTTP status), at finish()
        self.finished = False
        self._last_written: Path | None = None
        self.shots.mkdir(parents=True, exist_ok=True)
        # a blank stand-in until the first real screenshot takes its place: a folder left by a worker killed before
        # it (no finish() to come) is still one the evaluator can read
        self.add_screenshot(png=blank_png())
        self.final_shot, self.blank = self._shot_name(0), True
        self._write_result()

    def _shot_name(self, i: int) -> str:
        return f"{i}_full_screenshot.png"

    def _notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {}
        if self.cut_short:
            notes["cut_short"] = self.cut_short
        if self.blank:
            notes["blank_screenshot"] = (f"trajectory/{self.final_shot}: no screenshot could be taken; this blank "
                                         f"image stands for the final state")
        if self.last_page:
            notes["last_page"] = self.last_page
        return notes

    def v2_entries(self) -> list[dict[str, Any]]:
        """The v2 action history: one entry per step with a screenshot and actions, then the closing entry."""
        return self._v2()[0]

    def _v2(self) -> tuple[list[dict[str, Any]], list[int]]:
        """(the v2 action history, the step of each action its entries but the closing one hold, in order)."""
        entries: list[dict[str, Any]] = []
        steps: list[list[int]] = []      # per entry, its actions' steps
        pending: list[str] = []          # actions of steps without a screenshot: joined to a neighbour's entry
        pending_steps: list[int] = []
        last_state = self.final_shot
        for k, f in enumerate(self.frames):
            if not f["actions"]:
                if f["shot"] and k == len(self.frames) - 1 and last_state is None:
                    last_state = f["shot"]   # the `done` step's screenshot is the last state
                continue
            if f["shot"] is None:
                if entries:
                    entries[-1]["action"] += V2_JOIN + V2_JOIN.join(f["actions"])
                    steps[-1] += [f["step"]] * len(f["actions"])
                else:
                    pending += f["actions"]
                    pending_steps += [f["step"]] * len(f["actions"])
                continue
            entries.append({"action": V2_JOIN.join(pending + f["actions"]), "thought": f["thought"],
                            "screenshot": f["shot"], "url": f["url"]})
            steps.append(pending_steps + [f["step"]] * len(f["actions"]))
            pending, pending_steps = [], []
        if last_state is None and not entries:
            last_state = next((f["shot"] for f in reversed(self.frames) if f["shot"]), None)
        if last_state is None and entries:
            # still running (or the final state equals it): the latest screenshot closes, taken out of its entry
            # so that no file is named twice; its actions move to the entry before it
            tail, tail_steps = entries.pop(), steps.pop()
            last_state = tail["screenshot"]
            if entries:
                entries[-1]["action"] += V2_JOIN + tail["action"]
                steps[-1] += tail_steps
            else:
                pending = [tail["action"]]
        url = entries[-1]["url"] if entries else (self.frames[-1]["url"] if self.frames else "")
        if self.finished and not self.cut_short:
            close = f"TASK_COMPLETE -> ANSWER: {self.answer}"
        else:
            why = self.cut_short or "the episode stopped before its end (still running, or its process was killed)"
            close = f"TASK_INCOMPLETE -> STOPPED: {why}" + (f"; ANSWER: {self.answer}" if self.answer else "")
        if pending:   # actions no screenshot was taken for: kept in the record, though the evaluator drops them
            close += " (unpictured actions: " + V2_JOIN.join(pending) + ")"
        entries.append({"action": close, "thought": None, "screenshot": last_state, "url": url})
        return [{"step": i, **e} for i, e in enumerate(entries)], [n for s in steps for n in s]

    def _write_result(self) -> None:
        if self.schema == "v1":
            doc: dict[str, Any] = {"task_id": self.task_id, "task": self.task_text,
                                   "final_result_response": self.answer, "action_history": self.actions,
                                   "thoughts": self.thoughts, "action_steps": self.action_steps,
                                   "action_urls": self.action_urls, **self._notes()}
        else:
            history, steps = self._v2()
            if history[-1]["screenshot"] is None:   # never written: the evaluator crashes on a null screenshot
                history, steps = [], []
            doc = {"schema_version": V2_SCHEMA, "task": self.task_text, "task_id": self.task_id,
                   "agent_final_answer": self.answer, "reference_length": self.reference_length,
                   "action_history": history, "action_steps": steps, **self._notes()}
        write_json_atomic(self.folder / "result.json", doc)

    def add_screenshot(self, png: bytes | None = None, path: str | Path | None = None) -> bool:
        target = self.shots / self._shot_name(0 if self.blank else self.n_shots)
        if png:
            write_atomic(target, png, tmp_dir=self.folder)
        elif path and Path(path).exists():
            try:   # beside trajectory/ until whole: the evaluator reads every file in it
                write_atomic(target, read_file(path, SCREENSHOT_LIMIT, own=False), tmp_dir=self.folder)
            except (OSError, InputError):   # gone meanwhile: a missing picture must not cost the step
                return False
        else:
            return False
        if self.blank:   # the first real screenshot replaced the stand-in
            self.n_shots, self.blank, self.final_shot = 0, False, None
        self.n_shots += 1
        self._last_written = target
        return True

    def _add_frame(self, shot: str | None, actions: list[str], thought: str, url: str) -> None:
        # the step's number is its screenshot's (just written); without one, the step before's
        step = self.n_shots - 1 if shot else (self.frames[-1]["step"] if self.frames else 0)
        self.last_shot = shot
        self.actions += actions
        self.thoughts += [thought] * len(actions)
        self.action_steps += [step] * len(actions)
        self.action_urls += [url] * len(actions)
        self.frames.append({"shot": shot, "actions": list(actions), "thought": thought, "url": url, "step": step})
        self.n_steps += 1
        self._write_result()

    def add_step(self, step: Any, skip: Iterable[str] = (), thought: str | None = None) -> list[str]:
        """Record a finished browser-use step: its screenshot, its action lines; -> the lines. Its thought is
        `thought` where the model reasoned aloud (a <think> block, reasoning_content), else its next goal."""
        state = getattr(step, "state", None)
        shot = self._shot_name(self.n_shots - 1) if self.add_screenshot(path=getattr(state, "screenshot_path", None)) \
            else None
        actions, thoughts = step_actions(step, skip, self.coordinates)
        mo = getattr(step, "model_output", None)
        if thought:
            thought = thought[:400]
        else:
            thought = thoughts[0] if thoughts else str(getattr(mo, "next_goal", None) or "")[:400]
        self._add_frame(shot, actions, thought, str(getattr(state, "url", "") or ""))
        return actions

    def add_plain_step(self, actions: list[str], thought: str = "", png: bytes | None = None, url: str = "") -> None:
        """A step an arm describes itself (no browser-use history): its action lines and what it saw."""
        shot = self._shot_name(self.n_shots - 1) if self.add_screenshot(png=png) else None
        self._add_frame(shot, list(actions), thought[:400], url)

    def _same_as_last(self, png: bytes) -> bool:
        try:
            return self._last_written is not None and \
                read_file(self._last_written, SCREENSHOT_LIMIT, own=True) == png
        except InputError:
            return False

    def finish(self, answer: str | None, final_png: bytes | None, histories: Iterable[Any] = (),
               cut_short: str | None = None, last_page: dict[str, Any] | None = None) -> None:
        """The episode's end: its answer, the final state (written only when it is not the last screenshot
        again; a blank image when the episode has no screenshot at all), why it was cut short, if it was, and the
        page it ended on (`last_page`), where the browser could still be read."""
        self.answer = answer or ""
        self.cut_short = cut_short or None
        self.last_page = last_page or None
        if final_png and not self._same_as_last(final_png):
            if self.add_screenshot(png=final_png):
                self.final_shot = self._shot_name(self.n_shots - 1)
        elif final_png and self.frames and not self.frames[-1]["actions"]:
            self.final_shot = self.frames[-1]["shot"]     # the `done` step's screenshot is the final state
        self.finished = True
        self._write_result()
        for i, h in enumerate(histories):
            try:
                write_atomic(self.folder / f"history_{i}.json",
                             json.dumps(h.model_dump() if hasattr(h, "model_dump") else h, default=str))
            except Exception:   # a history that cannot be serialised must not cost the trajectory
                continue
