"""Human labels: the annotators' files in a run's folder, their consensus, and the official `human_label.json` both
ways (export and read).

One file per annotator, `OUT/labels.<annotator>.json` (a file beside the task folders, never a folder: the official
evaluator takes every subfolder for a task), rewritten whole and atomically at every label, so a crash or a kill
leaves the labels given so far; the reviewer's final labels, where annotators disagreed, are `OUT/labels.final.json`
in the same shape. A task's label: "1" success, "0" failure, "2" not executable (with a reason: a CAPTCHA or bot
wall, the site down, the task outdated, another), and a note.

A task's consensus label: the reviewer's final label, else the one label all its annotators gave, else a strict
majority's; a task whose annotators split evenly is disputed (no label until reviewed).

The official file (the dataset's `human_label.json`) is a JSON list of `{"task_id", "confirmed_task",
"<Agent>_human_label": "0"|"1"|"2"}`, one column per agent (run).
"""

from __future__ import annotations

import getpass
import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from om2w_tui.files import read_file, write_atomic
from om2w_tui.json_input import InputError, Shape, decode, wrong_fields
from om2w_tui.run_folder import LABELS_PREFIX, RunFolder

FORMAT = "om2w-tui-labels"
VERSION = 1
PREFIX = LABELS_PREFIX
FINAL = "final"                        # the reviewer's file: labels.final.json
VALUES = ("1", "0", "2")
VALUE_WORDS = {"1": "success", "0": "failure", "2": "not executable"}
REASONS = {"captcha": "CAPTCHA / bot wall", "site_down": "site down", "outdated": "task outdated", "other": "other"}
COLUMN_SUFFIX = "_human_label"
_ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")   # matched whole: `bob\n` is no name


class LabelFileError(ValueError):
    """A labels file or a human_label.json that cannot be read as one; the message names the file and the place."""


@dataclass(frozen=True)
class Label:
    """One annotator's label of one task: its value ("1", "0", "2", or None: only a note so far), the reason of a
    "2", a note, and when it was given (epoch seconds)."""

    value: str | None
    reason: str | None = None
    note: str = ""
    at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.value}
        if self.reason:
            out["reason"] = self.reason
        if self.note:
            out["note"] = self.note
        out["at"] = self.at
        return out


def check_annotator(name: str) -> str:
    """The annotator's name as it stands in a file name; raises LabelFileError for one that cannot."""
    if not isinstance(name, str) or not _ANNOTATOR.fullmatch(name):
        raise LabelFileError(f"--annotator {name!r}: use letters, digits, '.', '_' or '-' (at most 64), "
                             f"starting with a letter or digit")
    return name


def default_annotator() -> str:
    """The user's name as an annotator's ("annotator" when there is none to be had)."""
    try:
        name = getpass.getuser()
    except Exception:   # noqa: BLE001 - no user name (a container's uid without a passwd entry): a plain one
        name = ""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return name if name and name != FINAL else "annotator"


def labels_path(out: Path, annotator: str) -> Path:
    return RunFolder(Path(out)).labels(check_annotator(annotator))


@dataclass
class LabelFile:
    """One annotator's labels of one run, kept on disk: every change is written at once (`set`)."""

    path: Path
    annotator: str
    labels: dict[str, Label] = field(default_factory=dict)
    saves: int = 0
    seen: tuple[int, int] | None = None      # the file's (mtime_ns, size) when last read or written here

    @classmethod
    def open(cls, out: Path, annotator: str) -> LabelFile:
        """The annotator's file in `out` (empty when there is none yet)."""
        path = labels_path(out, annotator)
        found = read_label_file(path) if path.exists() else {}
        return cls(path, annotator, found, seen=_stamp(path))

    def get(self, task_id: str) -> Label | None:
        return self.labels.get(task_id)

    def set(self, task_id: str, value: str | None = None, *, reason: str | None = None, note: str | None = None,
            now: float | None = None) -> Label:
        """Give `task_id` a label (and a reason for a "2"), or a note, and write the file (atomically) at once."""
        if value is not None and value not in VALUES:
            raise ValueError(f"label {value!r}: one of {', '.join(VALUES)}")
        if reason is not None and reason not in REASONS:
            raise ValueError(f"reason {reason!r}: one of {', '.join(REASONS)}")
        self._catch_up()
        old = self.labels.get(task_id) or Label(None)
        new = replace(old, at=time.time() if now is None else now)
        if value is not None:
            new = replace(new, value=value, reason=reason if value == "2" else None)
        elif reason is not None and old.value == "2":
            new = replace(new, reason=reason)
        if note is not None:
            new = replace(new, note=note)
        self.labels[task_id] = new
        self.save()
        return new

    def clear(self, task_id: str) -> None:
        self._catch_up()
        if self.labels.pop(task_id, None) is not None:
            self.save()

    def _catch_up(self) -> None:
        """The same annotator labelling in two terminals: take the file's labels written by the other session
        since, so that neither loses the other's (the task being labelled now is this session's)."""
        if _stamp(self.path) not in (self.seen, None):
            self.labels = read_label_file(self.path)

    def save(self) -> None:
        data = {"format": FORMAT, "version": VERSION, "annotator": self.annotator, "updated_at": time.time(),
                "labels": {t: lab.to_json() for t, lab in sorted(self.labels.items())}}
        write_atomic(self.path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        self.saves += 1
        self.seen = _stamp(self.path)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


LABELS_LIMIT = 64 << 20    # bytes of a labels file or a human_label.json read (the published one is 100 KiB)
# what a label entry may hold under each key (an older writer's null anywhere)
LABEL_SHAPE = Shape({"label": (str, int, type(None)), "reason": (str, type(None)),
                                            "note": (str, type(None)), "at": (float, type(None))})


def _load(path: Path, *, own: bool, what: str = "") -> Any:
    """A labels file (the run's own: never through a symlink) or a given human_label.json, through the one decoder:
    a regular file of at most LABELS_LIMIT, nested at most 64 deep; LabelFileError naming it otherwise."""
    try:
        return decode(read_file(path, LABELS_LIMIT, own=own, what=what), str(path))
    except InputError as e:
        raise LabelFileError(f"{e}; fix or remove the file") from None


def read_label_file(path: Path) -> dict[str, Label]:
    """task_id -> Label from one annotator's file; raises LabelFileError naming the file and the entry."""
    data = _load(path, own=True)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("labels"), dict):
        raise LabelFileError(f"{path}: not an om2w-tui labels file (a JSON object with format {FORMAT!r} and "
                             f"`labels`)")
    out: dict[str, Label] = {}
    for tid, entry in data["labels"].items():
        if not isinstance(entry, dict):
            raise LabelFileError(f"{path}: labels[{tid!r}]: not an object")
        wrong = wrong_fields(entry, LABEL_SHAPE)
        if wrong:   # `"at": "abc"` met later as a traceback: named here
            raise LabelFileError(f"{path}: labels[{tid!r}]: {'; '.join(wrong)}; fix or remove the file")
        value = entry.get("label")
        value = None if value is None else str(value)
        if value is not None and value not in VALUES:
            raise LabelFileError(f"{path}: labels[{tid!r}]: label {value!r} is not one of 0, 1, 2")
        reason = entry.get("reason")
        out[str(tid)] = Label(value, str(reason) if reason else None, str(entry.get("note") or ""),
                              float(entry.get("at") or 0.0))
    return out


def annotator_files(out: Path) -> dict[str, Path]:
    """annotator -> its file in `out` (the reviewer's `final` among them); whatever is there by such a name, so that
    its reader names one that is no regular file (a FIFO, a link to a device, a folder) instead of passing it over
    in silence with its annotator's labels."""
    found = {}
    for p in sorted(Path(out).glob(f"{PREFIX}*.json")):
        name = p.name[len(PREFIX):-len(".json")]
        if _ANNOTATOR.fullmatch(name):
            found[name] = p
    return found


@dataclass(frozen=True)
class RunLabels:
    """Every annotator's labels of a run (the reviewer's `final` apart) and the consensus of each task."""

    annotators: dict[str, dict[str, Label]]
    final: dict[str, Label]

    @property
    def names(self) -> list[str]:
        return sorted(self.annotators)

    def values(self, task_id: str) -> dict[str, str]:
        """annotator -> value, for those who labelled the task."""
        return {a: lab.value for a, labs in self.annotators.items()
                if (lab := labs.get(task_id)) is not None and lab.value is not None}

    def consensus(self, task_id: str) -> str | None:
        final = self.final.get(task_id)
        if final is not None and final.value is not None:
            return final.value
        return majority(self.values(task_id).values())

    def disputed(self, task_ids: Iterable[str]) -> list[str]:
        """Tasks whose annotators disagree (reviewed or not)."""
        return [t for t in task_ids if len(set(self.values(t).values())) > 1]

    def unresolved(self, task_ids: Iterable[str]) -> list[str]:
        """Disputed tasks without a consensus yet (an even split, not reviewed)."""
        return [t for t in task_ids if self.values(t) and self.consensus(t) is None]

    def labelled(self) -> set[str]:
        return {t for labs in [*self.annotators.values(), self.final] for t, lab in labs.items()
                if lab.value is not None}


def majority(values: Iterable[str]) -> str | None:
    """The one value all gave, or a strict majority's; None when nobody labelled or the vote is split evenly."""
    votes = Counter(values)
    if not votes:
        return None
    (top, n), *rest = votes.most_common()
    return top if not rest or n > sum(votes.values()) / 2 else None


def read_run_labels(out: Path) -> RunLabels:
    files = annotator_files(out)
    final = read_label_file(files.pop(FINAL)) if FINAL in files else {}
    return RunLabels({a: read_label_file(p) for a, p in files.items()}, final)


# ── the official human_label.json ────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class HumanLabelFile:
    """A human_label.json read: its agents (column names without `_human_label`, in the file's order), and per
    task its text and each agent's label ("0", "1", "2"; an agent missing from a row has none for that task)."""

    path: Path
    agents: tuple[str, ...]
    tasks: dict[str, str]                      # task_id -> confirmed_task
    labels: dict[str, dict[str, str]]          # agent -> task_id -> label


def column(agent: str) -> str:
    return f"{agent}{COLUMN_SUFFIX}"


def read_human_labels(path: Path) -> HumanLabelFile:
    """The official file's rows; raises LabelFileError naming the file and the row for what it cannot be."""
    path = Path(path)
    return _human_labels(path, _load(path, own=False))


def _human_labels(path: Path, data: Any) -> HumanLabelFile:
    if not isinstance(data, list):
        raise LabelFileError(f"{path}: not a human_label.json (a JSON list of {{task_id, confirmed_task, "
                             f"<Agent>{COLUMN_SUFFIX}}} rows)")
    agents: list[str] = []
    tasks: dict[str, str] = {}
    labels: dict[str, dict[str, str]] = {}
    for i, row in enumerate(data, 1):
        if not isinstance(row, dict) or row.get("task_id") in (None, ""):
            raise LabelFileError(f"{path}: row {i}: not an object with a task_id")
        tid = str(row["task_id"])
        if tid in tasks:
            raise LabelFileError(f"{path}: row {i}: task_id {tid} is there twice")
        tasks[tid] = str(row.get("confirmed_task") or "")
        for key, value in row.items():
            if not key.endswith(COLUMN_SUFFIX) or value in (None, ""):
                continue
            agent = key[:-len(COLUMN_SUFFIX)]
            text = str(value).strip()
            if text not in VALUES:
                raise LabelFileError(f"{path}: row {i} ({tid}): {key} is {value!r}; a label is \"0\" (failure), "
                                     f"\"1\" (success) or \"2\" (not executable)")
            if agent not in labels:
                agents.append(agent)
                labels[agent] = {}
            labels[agent][tid] = text
    if not agents:
        raise LabelFileError(f"{path}: no <Agent>{COLUMN_SUFFIX} column in any row")
    return HumanLabelFile(path, tuple(agents), tasks, labels)


def export_rows(existing: list[dict[str, Any]] | None, agent: str, labels: Mapping[str, str],
                texts: Mapping[str, str], tasks: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The rows of a human_label.json with `agent`'s column set to `labels` (task_id -> "0"/"1"/"2"), added to the
    rows of an existing file (its other columns kept, its rows in their order, new tasks after them). Every one of
    `tasks` has a row, those without a label a row without the column: a reader counts them not labelled (pending),
    where a file without their rows would read as every task labelled."""
    rows = [dict(r) for r in existing or []]
    key = column(agent)
    by_id = {str(r.get("task_id")): r for r in rows}
    for r in rows:
        r.pop(key, None)
    for tid in [*tasks, *labels]:
        if tid not in by_id:
            by_id[tid] = {"task_id": tid, "confirmed_task": texts.get(tid, "")}
            rows.append(by_id[tid])
    for tid, value in labels.items():
        row = by_id[tid]
        if not row.get("confirmed_task") and texts.get(tid):
            row["confirmed_task"] = texts[tid]
        row[key] = value
    return rows


def write_human_labels(path: Path, rows: list[dict[str, Any]]) -> None:
    """The official file's layout: one JSON list, written whole or not at all."""
    write_atomic(Path(path), json.dumps(rows, ensure_ascii=False) + "\n")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """An existing human_label.json's rows (checked as `read_human_labels` checks them)."""
    rows = _load(Path(path), own=False)
    _human_labels(Path(path), rows)
    return cast(list[dict[str, Any]], rows)


# ── a run's labels out as the official file ──────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Export:
    """What `export_labels` wrote (or would have): the file, the column, how many tasks it labelled, which were
    left out (no label, or annotators split and not reviewed), and whether the column replaced one there."""

    path: Path
    column: str
    labelled: int
    missing: tuple[str, ...]
    disputed: tuple[str, ...]
    replaced: bool
    written: bool


def export_labels(out: Path, task_ids: list[str], texts: Mapping[str, str], dest: Path, agent: str,
                  annotator: str | None = None, partial: bool = False) -> Export:
    """The run's labels (every annotator's consensus, or one annotator's) as `agent`'s column of the official file
    `dest` (added to its other columns when it exists), a row for each of `task_ids`. Nothing is written when a task
    has no label, unless `partial` (its row then lacks the column), nor ever when no task has one (no column: not a
    human_label.json). Raises LabelFileError for a file that cannot be read."""
    labels = read_run_labels(out)
    if annotator is not None:
        own = labels.final if annotator == FINAL else labels.annotators.get(annotator)
        if own is None:
            raise LabelFileError(f"--annotator {annotator}: no {PREFIX}{annotator}.json in {out} (there are: "
                                 f"{', '.join(labels.names) or 'none'})")
        values = {t: lab.value for t in task_ids if (lab := own.get(t)) is not None and lab.value is not None}
        disputed: list[str] = []
    else:
        values = {t: v for t in task_ids if (v := labels.consensus(t)) is not None}
        disputed = labels.unresolved(task_ids)
    missing = tuple(t for t in task_ids if t not in values and t not in disputed)
    existing = read_rows(dest) if Path(dest).exists() else None
    replaced = bool(existing) and any(column(agent) in r for r in existing or [])
    result = Export(Path(dest), column(agent), len(values), missing, tuple(disputed), replaced, False)
    if ((missing or disputed) and not partial) or not values:
        return result
    write_human_labels(dest, export_rows(existing, agent, values, texts, task_ids))
    return replace(result, written=True)
