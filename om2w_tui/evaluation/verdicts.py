"""Which line of a judge file is the verdict of a task as its run settled it: the one rule `om2w-tui judge`, the run's
live judge and `report` read a judge file by.

A verdict judges one episode. A run that keeps records (`results*.jsonl`, or a `run.json` before its first record)
settles a task with its latest record when that record settles it (`EpisodeRecord.settles`: not stopped under it, not
failed by the harness); the task's folder is then that episode's. A line of a judge file counts for the task only
when it judged that episode, named in the line by `episode_mark` (the attempt and its start, as the record says them:
an attempt's number alone names no episode, since a run killed before it recorded an attempt runs it again under the
same number). A line written before lines named their episode counts unless it says another attempt or was written
before the settling episode ended (it judged an earlier folder); one with neither (the official evaluator's) counts.
A task with no settling record (still to run, running, stopped under it) has no verdict. A folder with no records
(another harness's task folders) settles every task folder it has: each line counts as it is.

Judging writes the mark into the line, so a task whose episode changed since is judged again and its new line, the
later one in the file, wins (`judge_files.read_judged`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.engine.results import EpisodeRecord, ResultsLog, read_results
from om2w_tui.evaluation.task_outcome import still_to_run
from om2w_tui.run_folder import RunFolder

EPISODE_KEY = "episode_started_at"   # the judged episode's start (its record's `started_at`), beside its `attempt`


def episode_mark(record: EpisodeRecord) -> dict[str, Any]:
    """What a verdict's line says of the episode it judged (its record's attempt and start)."""
    return {"attempt": record.attempt, EPISODE_KEY: record.started_at}


def verdicts_of(lines: Mapping[str, Mapping[str, Any]]) -> dict[str, bool]:
    """task -> its verdict (success or not) from judge file lines (task -> its line); a line without one (0 or 1) gives
    none."""
    return {t: r.get("predicted_label") == 1 for t, r in lines.items() if r.get("predicted_label") in (0, 1)}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def judges(line: Mapping[str, Any] | None, record: EpisodeRecord) -> bool:
    """Whether `line` (a judge file's, None: none) is the verdict of the episode `record` (a task's settling record)."""
    if line is None:
        return False
    started = _number(line.get(EPISODE_KEY))
    if started is not None:
        return started == record.started_at and line.get("attempt") in (None, record.attempt)
    attempt = line.get("attempt")
    if attempt and attempt != record.attempt:   # an older live judge's line: of another attempt
        return False
    judged_at = _number(line.get("judged_at"))
    return judged_at is None or judged_at >= record.finished_at


@dataclass(frozen=True)
class Settled:
    """What a run folder's records say of each task: its settling record, if it has one."""

    latest: Mapping[str, EpisodeRecord]   # each task's latest record
    keeps_records: bool                   # the run keeps records: a task without a settling one is not settled

    @classmethod
    def read(cls, out: Path, log: ResultsLog | None = None) -> Settled:
        """The run folder `out`'s (`log`: its records, read already)."""
        log = read_results(out) if log is None else log
        return cls(log.latest_records(), bool(log.records) or bool(RunFolder(Path(out)).manifests()))

    def episode(self, task_id: str) -> EpisodeRecord | None:
        """The record of the episode that settled the task (None: not settled, or no records to say)."""
        rec = self.latest.get(task_id)
        return rec if rec is not None and rec.settles else None

    def settled(self, task_id: str) -> bool:
        """Whether the task is settled (a folder with no records: every task it has is)."""
        return not self.keeps_records or self.episode(task_id) is not None

    def pending(self, task_id: str) -> bool:
        """Whether the task is still to run: no outcome, no failure class (`task_outcome.still_to_run`)."""
        return still_to_run(self.latest.get(task_id), self.keeps_records)

    def counts(self, task_id: str, line: Mapping[str, Any] | None) -> bool:
        """Whether `line` is the verdict of the task as the run settled it."""
        if line is None:
            return False
        if not self.keeps_records:
            return True
        rec = self.episode(task_id)
        return rec is not None and judges(line, rec)

    def current(self, judged: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The lines of a judge file (task -> its last line) that count: the verdicts of the tasks' settling
        episodes."""
        return {t: line for t, line in judged.items() if self.counts(t, line)}
