"""What the console's report screen shows, computed with no screen (in a thread: a large run's folder takes a
while): `summarize()`'s numbers read by the chosen measure, the latest record of each task, and the tasks that did
not succeed (`Failure`), which the screen's table lists and `enter` opens."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from om2w_tui.benchmarks.episode_folder import read_answer
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.compare import choose_measure, with_measure
from om2w_tui.evaluation.measure import NoCommonMeasure
from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.summary import RunReport, TaskRow


@dataclass
class Failure:
    """A task that did not succeed: its summary line and its latest record (None for another harness's folder)."""

    task_id: str
    status: str
    success: bool | None
    record: EpisodeRecord | None
    answer: str
    outcome: str | None = None       # evaluation/outcomes.py: failure, not_executable, or None (none yet)
    why: str = ""                    # its failure class (evaluation/failure.py's CLASSES; '' when none yet)


@dataclass
class Computed:
    summary: RunReport
    latest: dict[str, EpisodeRecord]
    failures: list[Failure]
    why: str = ""          # why the measure asked for is not the one read ('' when it is)


def failed(task: TaskRow) -> bool:
    """A task that did not succeed, by the one rule `report`, the label screen and the web report read: it has a
    failure class (evaluation/failure.py: its measure calls it a failure or not executable, or, with no outcome yet,
    its status says it failed; a task still to run, or `done` and not judged, has none)."""
    return task.failure is not None


def compute(out: Path, judge: Path | None = None, measure: str | None = None) -> Computed:
    """The report's data: summarize()'s numbers read by the chosen measure (`measure`: the kind asked for, else the
    best the run has), the latest record of each task and the failures."""
    summary = summarize(out, judge)
    why = ""
    try:
        summary = with_measure(summary, choose_measure([summary], measure))
    except NoCommonMeasure as e:   # asked for a measure the run lacks (yet): said, never another one in its place
        why = str(e)
        summary = replace(summary, success=replace(summary.success, source=None), measure=None)
    latest = read_results(out).latest_records()
    rows = []
    for tid, t in summary.per_task.items():
        if not failed(t):
            continue
        rec = latest.get(tid)
        # the record says whether the agent answered; a folder without one is read as it is
        answer = rec.agents_answer if rec else (read_answer(out / tid) if t.has_folder else "")
        rows.append(Failure(tid, t.status, t.success, rec, answer, t.outcome, t.failure.cls if t.failure else ""))
    return Computed(summary, latest, rows, why)
