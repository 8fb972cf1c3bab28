"""What a task came to, as a type: `Outcome` (`success`, `failure`, `not_executable`; None where a task has none
yet), and when it has none whatever a verdict says (`still_to_run`). Below the report's values (`summary.py`), the
failure classes (`failure.py`) and the rules that decide it (`outcomes.py`), which all name it: none of them imports
another for it."""

from __future__ import annotations

from typing import Literal

from om2w_tui.engine.results import EpisodeRecord

Outcome = Literal["success", "failure", "not_executable"]


def still_to_run(record: EpisodeRecord | None, keeps_records: bool) -> bool:
    """Whether a task has no episode to count yet, whatever a verdict says: no record in a run that keeps records
    (its folder, if any, is of an episode running or cut short under a killed run), or a latest attempt its run's
    stop or its user's requeue ended (it runs again). Such a task is pending: no outcome, no failure class, in none
    of the report's per-episode numbers."""
    return record.requeued if record is not None else keeps_records

