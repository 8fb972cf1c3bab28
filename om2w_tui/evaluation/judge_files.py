"""A judge's output file: its name (ours, the official evaluator's, an `official_` copy, our older names) read and
written, our older file adopted under our name, and its lines read back (shape-checked, a torn line skipped) and
appended (whole, synced). Why our file is never under the official evaluator's own name: `output_path`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.files import append_own, read_file
from om2w_tui.json_input import InputError, Shape, decode, may_overflow, wrong_fields

RESULTS_SUFFIX = "_auto_eval_results.json"
OFFICIAL_PREFIX = "official_"     # the official evaluator's own output, kept in the run's folder under this prefix
OURS_PREFIX = "om2w-tui_"         # ours: never the official evaluator's own name (it resumes from that file)
OFFICIAL_MODES = ("WebJudge_Online_Mind2Web_eval_answer", "WebJudge_Online_Mind2Web_eval", "WebJudge_general_eval",
                  "WebVoyager_eval", "Autonomous_eval", "AgentTrek_eval")
_OUTPUT_NAME = re.compile(rf"(?:(?P<official>{OFFICIAL_PREFIX})|(?P<ours>{OURS_PREFIX}))?"
                          rf"(?P<mode>{'|'.join(OFFICIAL_MODES)}|webjudge-answer|"
                          rf"webjudge|webvoyager)_(?P<model>.+)_score_threshold_(?P<threshold>-?\d+){re.escape(RESULTS_SUFFIX)}")


def safe_model_name(model: str) -> str:
    """The model's name as it can stand in a file name (`org/model` -> `org-model`): never a path."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", model).strip("-.")
    return name or "model"


def output_path(out: Path, s: Settings) -> Path:
    """Our output file: the official evaluator's name with OURS_PREFIX before it. Never its own name: the official
    `run.py` resumes from the file of its name in its output folder, so our file under that name would make it
    skip every task we judged (and print a success rate of 0.0)."""
    return Path(out) / (OURS_PREFIX + official_file_name(s))


def official_file_name(s: Settings) -> str:
    """The name the official evaluator gives its output for these settings (our safe model name in it)."""
    return f"{s.file_mode}_{safe_model_name(s.model)}_score_threshold_{s.score_threshold}{RESULTS_SUFFIX}"


def adopt_legacy_output(out: Path, s: Settings, log: Callable[[str], None] = print) -> None:
    """Our output under the official evaluator's own name (as earlier versions wrote it) is renamed to ours, so that
    `judge` resumes from it and an official run in the folder no longer skips its tasks; the official evaluator's
    own file of that name (its lines have no `judge_model`) is left alone."""
    legacy, ours = Path(out) / official_file_name(s), output_path(out, s)
    if ours.exists() or not legacy.is_file():
        return
    try:
        first = next(iter(read_judged(legacy).values()), None)
    except InputError:   # not a file of ours to rename (a symlink, a FIFO): left where it is
        return
    if first is not None and "judge_model" in first:
        os.replace(legacy, ours)
        log(f"renamed {legacy.name} to {ours.name}: the official evaluator resumes from a file of its own name")


@dataclass
class OutputName:
    """What a judge output file's name says: the mode, the judge model, the threshold, and whose file it is."""
    mode: str
    model: str
    threshold: int
    official: bool
    ours: bool = False


def parse_output_name(name: str) -> OutputName | None:
    """`WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json` -> its parts (the official
    evaluator's name, ours with `om2w-tui_` before it, an `official_` copy, or our older `webjudge_...` name); None
    for another name."""
    m = _OUTPUT_NAME.fullmatch(name)
    if m is None:
        return None
    return OutputName(m["mode"], m["model"], int(m["threshold"]), bool(m["official"]), bool(m["ours"]))


JUDGE_LIMIT = 1 << 30      # bytes of a judge output file read back (replies are capped: ~2 MiB a task at most)
# what a judge output line read back may hold under the keys its readers use
JUDGED_SHAPE = Shape({
    "task_id": (str, int), "predicted_label": (int, type(None)), "image_judge_record": (list, type(None)),
    "attempt": (int, type(None)), "judge_model": (str, type(None)), "mode": (str, type(None)),
    "evaluation_details": (dict, type(None)), "kept_screenshots": (list, type(None)),
    "episode_started_at": (float, int, type(None)),
})


def read_judged(path: Path, warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """task_id -> its line in a judge output file (the last one wins). A line that is torn (a crash mid-write), not
    JSON, holds NaN, or is of the wrong shape is skipped, and `warn` told so (the file and the line). The file is
    the run's own: one that is a symlink, a FIFO or a device raises InputError naming it (never read through)."""
    got: dict[str, dict[str, Any]] = {}
    if not os.path.lexists(path):
        return got
    data = read_file(path, JUDGE_LIMIT, own=True, what="the judge's file")
    floats = may_overflow(data)
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            rec = decode(line, str(path), line=n, check_floats=floats)   # the one decoder: NaN, too deep, torn
        except InputError as e:
            if warn is not None:
                warn(f"{e}; skipped that line")
            continue
        if wrong := line_shape(rec):
            if warn is not None:
                warn(f"{path}:{n}: skipped a line of the wrong shape ({wrong})")
            continue
        got[str(rec["task_id"])] = rec
    return got


def line_shape(rec: Any) -> str:
    """What is wrong with the shape of a judge file's line, decoded ("" when it is a line `read_judged` keeps): the
    console's header reads the file as it grows by this too."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    return "; ".join(wrong_fields(rec, JUDGED_SHAPE)) or ("no task_id" if rec.get("task_id") is None else "")


def line_parsing(rec: dict[str, Any]) -> str:
    """How a judge file's line read its replies (`Settings.parsing`): as it says; our lines written before they said
    it were read leniently, and the official evaluator's (no `judge_model`) read its own way."""
    said = rec.get("parsing")
    return said if isinstance(said, str) and said else ("lenient" if "judge_model" in rec else "official")


def mixed_reading(path: Path, lines: dict[str, dict[str, Any]], s: Settings) -> str:
    """Why judging on into `path` with `s` would mix two readings of the replies in one file ("" when it would
    not): a resume takes the verdicts that count as they are (`lines`: `verdicts.Settled.current` of the file's),
    so they must have been read the way `s.parsing` reads them (a line of an episode run again since is judged
    again: it does not count). Refused, never re-read: under webjudge the scores read chose the screenshots the verdict
    call was shown, so a verdict read another way is not the one that reading would have given."""
    other = [t for t, rec in lines.items() if line_parsing(rec) != s.parsing]
    if not other:
        return ""
    was = line_parsing(lines[other[0]])
    return (f"{path.name} holds {len(other)} verdict(s) whose replies were read the {was} way (e.g. {other[0]}); "
            f"judging on with --parsing {s.parsing} would mix two readings in one file. Judge with --parsing {was} "
            f"to resume it, or move that file out of the run's folder to judge anew the {s.parsing} way (`om2w-tui "
            f"report` already counts the replies the two readings read differently)")


def append_line(path: Path, record: dict[str, Any]) -> None:
    """One whole JSON line, appended in one write and synced (O_APPEND keeps it whole), after ending a torn last
    line; never through a symlink, never to a FIFO or a device (files.UnsafeFile); a lone
    surrogate in a reply goes as its JSON escape."""
    append_own(path, (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace"))
