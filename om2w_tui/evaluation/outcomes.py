"""What each task came to, and the two counting rules every rate of the report is given under.

A task's outcome is `success`, `failure`, `not_executable` (the benchmark's label 2: a CAPTCHA or bot wall, a site
down, a task outdated, the harness failing), or None: no outcome yet (still queued or running, not labelled, not
judged). A task without an outcome counts as neither a success nor a failure: it is left out of every rate and
shown as pending beside it.

The two rules published scores differ by: success over all tasks with an outcome (not executable counted as a
failure, as the leaderboard's 300-task figure does), and over the executable ones (label 2 left out, as ABP's
90.53% is). `Counts` holds the four numbers and gives both rates.

Where an outcome comes from:
  - human labels ("1", "0", "2"), read as they are;
  - a judge's verdict or the offline suite's reference answer (`correct`), read beside the run's record of the task:
    an episode the harness failed (status `error` of a harness's `FaultKind`: infra, endpoint or storage) or a
    site's bot wall (`blocked`) is not executable whatever the verdict; any other `error` (the agent's, the
    model's, or of a kind this version does not know) and an agent that ran `out_of_steps` (its whole step budget
    without `done`: no answer) is a failure; otherwise the verdict decides, and a task with no verdict yet has no
    outcome. A task whose latest attempt does not settle it (interrupted, requeued) or that has no record in a run
    that keeps records is still to run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.summary import Counts
from om2w_tui.evaluation.task_outcome import Outcome, still_to_run
from om2w_tui.evaluation.verdicts import Settled, verdicts_of

SUCCESS: Outcome = "success"
FAILURE: Outcome = "failure"
NOT_EXECUTABLE: Outcome = "not_executable"
OUTCOMES: tuple[Outcome, ...] = (SUCCESS, FAILURE, NOT_EXECUTABLE)
# the official human_label.json's values
LABELS: dict[str, Outcome] = {"1": SUCCESS, "0": FAILURE, "2": NOT_EXECUTABLE}
LABEL_OF: dict[Outcome, str] = {v: k for k, v in LABELS.items()}
# statuses that are the agent's failure whatever a verdict says (an error of the harness's kinds aside, above)
AGENT_FAILURES = ("error", "out_of_steps")

RULE_ALL = "over all"
RULE_EXECUTABLE = "executable"
RULES = (RULE_ALL, RULE_EXECUTABLE)
RULE_WORDS = {RULE_ALL: "over all tasks (not executable counted as failure)",
              RULE_EXECUTABLE: "over executable tasks (not executable left out)"}


def harness_fault(record: EpisodeRecord) -> bool:
    """An attempt the harness (or its services) failed, not the agent: the task was not executable."""
    return record.status == "error" and record.error_kind is not None and record.error_kind.harness


def run_outcome(record: EpisodeRecord | None, verdict: bool | None, keeps_records: bool) -> Outcome | None:
    """A task's outcome from its latest record (None: none yet) and a verdict (the judge's, or `correct`; None:
    none yet). `keeps_records`: the run writes results.jsonl (or has its run.json), so a task without a record has
    not run yet (another harness's folder has task folders only: its verdicts are read as they are)."""
    if still_to_run(record, keeps_records):
        return None
    if record is None:
        return None if verdict is None else (SUCCESS if verdict else FAILURE)
    if harness_fault(record) or record.status == "blocked":
        return NOT_EXECUTABLE
    if record.status in AGENT_FAILURES:
        return FAILURE
    if verdict is None:
        return None
    return SUCCESS if verdict else FAILURE


def judge_file_outcomes(settled: Settled, lines: Mapping[str, dict[str, Any]],
                        task_ids: Iterable[str]) -> dict[str, Outcome | None]:
    """Each task's outcome by a judge file's lines (task -> its last line), as `report` reads them: only the verdict of
    the episode that settled the task counts (`verdicts.Settled.current`: not one of an attempt run again since, nor of
    a task running again), one per task, beside its latest record (`run_outcome`). The console's header and its lanes'
    line count their judge's rate by it too (`live_judge.VerdictTail`)."""
    verdicts = verdicts_of(settled.current(lines))
    return {t: run_outcome(settled.latest.get(t), verdicts.get(t), settled.keeps_records) for t in task_ids}


def label_outcome(label: str | None) -> Outcome | None:
    return LABELS.get(label) if label is not None else None


def count(outcomes: Iterable[Outcome | None]) -> Counts:
    n = {SUCCESS: 0, FAILURE: 0, NOT_EXECUTABLE: 0}
    pending = 0
    for o in outcomes:
        if o is None:
            pending += 1
        else:
            n[o] += 1
    return Counts(n[SUCCESS], n[FAILURE], n[NOT_EXECUTABLE], pending)


def count_by(outcomes: Mapping[str, Outcome | None], key: Callable[[str], str],
             order: Callable[[str, int], Any] | None = None) -> dict[str, Counts]:
    """Counts per group (`key(task_id)`: a level, a site), in `order(group, tasks)`'s order (default: by name)."""
    groups: dict[str, list[Outcome | None]] = defaultdict(list)
    for tid, o in outcomes.items():
        groups[key(tid)].append(o)
    names = sorted(groups, key=lambda g: order(g, len(groups[g])) if order else g)
    return {g: count(groups[g]) for g in names}


def succeeded(outcome: Outcome | None, rule: str) -> bool | None:
    """The outcome as a yes/no under `rule` (None: it does not count under it)."""
    if outcome is None or (rule == RULE_EXECUTABLE and outcome == NOT_EXECUTABLE):
        return None
    return outcome == SUCCESS
