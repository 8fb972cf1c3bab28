"""An attempt's record: built from its `Outcome` (what its worker, or, when the worker died, its folder said of it),
judged, and classified for the scheduler's settle decision by its fault kind, a type (protocol/faults.py): the
folder's (`STORAGE`), the endpoint's (`ENDPOINT`: the circuit breaker counts these), the harness's (`INFRA`), the
model's (`MODEL`: the model guard counts these), the agent's.

Pure functions: no event loop, no state. The scheduler decides what becomes of the task (settled or queued again).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.episode_folder import keep_earlier_attempt, read_episode
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.worker import Outcome, Status

Judge = Callable[[dict[str, Any], EpisodeRecord], "bool | None"]


def prepare_folder(folder: Path, attempt: int) -> None:
    """Keep an earlier attempt's files in `<task>/attempts/<n>/` (n: its own number) and mark the folder as
    `attempt`'s."""
    keep_earlier_attempt(folder, attempt)


def outcome_from_folder(folder: Path, status: Status, error: str | None, fault: FaultKind | None) -> Outcome:
    """What an episode whose worker died left on disk (its result.json is rewritten after every step), ended with
    `status`: the scheduler's stop reason, or the harness's error."""
    ep = read_episode(folder)
    return Outcome(status=status, error=error, fault=fault, steps=ep.recorded_steps, actions=len(ep.actions),
                   screenshots=0 if ep.blank_screenshot else len(ep.shots), answer=ep.answer[:500],
                   blank_screenshot=True if ep.blank_screenshot else None)


def harness_error(error: str) -> Outcome:
    """An attempt the harness itself failed before its worker said anything of it."""
    return Outcome(status="error", error=error, fault=FaultKind.INFRA)


def build_record(cfg: RunConfig, task: Task, outcome: Outcome, *, attempt: int, slot: int, started_at: float,
                 finished_at: float) -> EpisodeRecord:
    """The record of an attempt, from its outcome."""
    o = outcome
    return EpisodeRecord(
        task_id=task.task_id, status=o.status, arm=cfg.arm, website=task.website, level=task.level,
        model=cfg.model, error=o.error, error_kind=o.fault, steps=o.steps, max_steps=task.max_steps,
        actions=o.actions,
        screenshots=o.screenshots, answer=o.answer, agent_done=o.agent_done, prompt_tokens=o.prompt_tokens,
        completion_tokens=o.completion_tokens, duration_s=round(finished_at - started_at, 1),
        started_at=round(started_at, 3), finished_at=round(finished_at, 3), attempt=attempt, slot=slot,
        rows=o.rows, hint_left=o.hint_left, blank_screenshot=o.blank_screenshot,
        model_calls=o.model.record() if o.model is not None and o.model.calls else None, model_fault=o.model_fault,
        task_digest=task.digest or None)


def judged(rec: EpisodeRecord, task: Task, judge: Judge, warn: Callable[[str], None]) -> EpisodeRecord:
    """The record with the reference judge's verdict, if it gives one."""
    try:
        verdict = judge(task.to_dict(), rec)
    except Exception as e:   # a judge that cannot read the task costs the verdict, never the record
        warn(f"{task.task_id}: the reference judge failed ({type(e).__name__}: {e}); no verdict recorded")
        verdict = None
    return rec if verdict is None else dataclasses.replace(rec, correct=bool(verdict))


def fault(rec: EpisodeRecord) -> FaultKind | None:
    """Whose fault an errored attempt was (None for an attempt that did not end in error)."""
    return rec.error_kind if rec.status == "error" else None


def storage_fault(rec: EpisodeRecord) -> bool:
    """The out folder failed, not the task: it runs again, costing no try, once the folder can be written."""
    return fault(rec) is FaultKind.STORAGE


def retried_fault(rec: EpisodeRecord) -> bool:
    """The harness's or the endpoint's fault: retried within `--retries` (the folder's costs no try at all)."""
    kind = fault(rec)
    return kind is not None and kind.retried


def endpoint_fault(rec: EpisodeRecord) -> bool:
    """A failure of the model endpoint: what the circuit breaker counts."""
    return fault(rec) is FaultKind.ENDPOINT


def model_fault(rec: EpisodeRecord) -> str | None:
    """The call kind an attempt that ended on its model ended on: what the model guard counts."""
    return (rec.model_fault or "unknown") if fault(rec) is FaultKind.MODEL else None
