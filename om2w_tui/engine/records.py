"""An attempt's record: built from what its worker (or, when the worker died, its folder) said of it, judged, and
classified for the scheduler's settle decision (the folder's fault, the endpoint's, the harness's).

Pure functions: no event loop, no state. The scheduler decides what becomes of the task (settled or queued again).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.episode_folder import keep_earlier_attempt, read_episode
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.results import ENDPOINT_ERROR, STATUSES, EpisodeRecord

Judge = Callable[[dict[str, Any], EpisodeRecord], "bool | None"]
_STORAGE_ERROR = re.compile(r"no space left on device|read-only file system|disk quota exceeded|errno 28\b", re.I)


def prepare_folder(folder: Path) -> None:
    """Keep an earlier attempt's files in `<task>/attempts/<n>/`."""
    keep_earlier_attempt(folder)


def record_from_folder(folder: Path) -> dict[str, Any]:
    """What an episode whose worker died left on disk (its result.json is rewritten after every step)."""
    ep = read_episode(folder)
    return {"steps": ep.recorded_steps, "actions": len(ep.actions), "screenshots": 0 if ep.blank_screenshot
            else len(ep.shots), "answer": ep.answer[:500], "agent_done": False,
            **({"blank_screenshot": True} if ep.blank_screenshot else {})}


def build_record(cfg: RunConfig, task: Task, part: dict[str, Any], *, attempt: int, slot: int, started_at: float,
                 finished_at: float) -> EpisodeRecord:
    """The record of an attempt, from what its worker (or its folder) said of it: `part`, as the wire gave it."""
    status, error = str(part.get("status") or "error"), part.get("error")
    if status not in STATUSES:
        status, error = "error", f"unknown status {status[:40]!r}: {error}"
    return EpisodeRecord(
        task_id=task.task_id, status=status, arm=cfg.arm, website=task.website, level=task.level,
        model=cfg.model, error=None if error is None else str(error),
        error_kind=str(part["error_kind"]) if part.get("error_kind") else None,
        steps=_int(part.get("steps")), actions=_int(part.get("actions")),
        screenshots=_int(part.get("screenshots")), answer=str(part.get("answer") or ""),
        agent_done=bool(part.get("agent_done")), prompt_tokens=_int(part.get("prompt_tokens")),
        completion_tokens=_int(part.get("completion_tokens")), duration_s=round(finished_at - started_at, 1),
        started_at=round(started_at, 3), finished_at=round(finished_at, 3), attempt=attempt, slot=slot,
        # optional fields the worker may add
        rows=_opt_int(part.get("rows")), hint_left=_opt_bool(part, "hint_left"),
        blank_screenshot=_opt_bool(part, "blank_screenshot"))


def judged(rec: EpisodeRecord, task: Task, judge: Judge, warn: Callable[[str], None]) -> EpisodeRecord:
    """The record with the reference judge's verdict, if it gives one."""
    try:
        verdict = judge(task.to_dict(), rec)
    except Exception as e:   # a judge that cannot read the task costs the verdict, never the record
        warn(f"{task.task_id}: the reference judge failed ({type(e).__name__}: {e}); no verdict recorded")
        verdict = None
    return rec if verdict is None else dataclasses.replace(rec, correct=bool(verdict))


def storage_fault(rec: EpisodeRecord) -> bool:
    """The out folder failed, not the task: it runs again, costing no try, once the folder can be written."""
    return rec.status == "error" and bool(_STORAGE_ERROR.search(rec.error or ""))


def infra_fault(rec: EpisodeRecord, storage: bool) -> bool:
    """The harness's fault (retried within `--retries`), the folder's excepted."""
    return rec.status == "error" and rec.error_kind == "infra" and not storage


def endpoint_fault(rec: EpisodeRecord, infra: bool) -> bool:
    """A failure of the model endpoint: what the circuit breaker counts."""
    return infra and (rec.error or "").startswith(ENDPOINT_ERROR)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _opt_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _opt_bool(part: dict[str, Any], key: str) -> bool | None:
    return bool(part[key]) if key in part else None
