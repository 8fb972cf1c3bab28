"""The typed values of a run's report: what `report.summarize(out)` returns for one run (`RunReport`) and
`report.compare([...])` for several (`Comparison`), read by attribute by the text renderers, the command line and
the console's report screen.

Each value has one `to_json()`, the only place its JSON shape is written (`om2w-tui report --format json`): its
keys, in this order, are those the report has always written. Mappings keep the report's order (levels easy to
hard, sites by task count, statuses in `STATUSES` order). A field read from a record or a manifest as it was
written (a task's duration and tokens, the task file's entry, a judge's threshold) keeps that value untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rate:
    """Successes out of tasks; `rate` is None when there are no tasks."""

    successes: int
    tasks: int
    rate: float | None

    @classmethod
    def of(cls, successes: int, tasks: int) -> Rate:
        return cls(successes, tasks, (successes / tasks) if tasks else None)

    def to_json(self) -> dict[str, Any]:
        return {"successes": self.successes, "tasks": self.tasks, "rate": self.rate}


def _rate_json(v: Rate | None) -> dict[str, Any] | None:
    return None if v is None else v.to_json()


@dataclass(frozen=True)
class Stats:
    """A per-episode metric over the tasks that have it: how many, median, 90th percentile, total (None when n=0)."""

    n: int
    median: float | None
    p90: float | None
    total: float | None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "median": self.median, "p90": self.p90, "total": self.total}


@dataclass(frozen=True)
class TaskRow:
    """One task of the run: its level and site, its latest status, whether it succeeded (None: not judged, or no
    success measure), and its latest record's numbers as recorded (steps from the folder when no record has them)."""

    level: str
    site: str
    status: str
    success: bool | None
    steps: int | None
    duration_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    has_folder: bool

    def metric(self, key: str) -> Any:
        """One of `report.METRICS` by name (steps, duration_s, prompt_tokens, completion_tokens)."""
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "site": self.site, "status": self.status, "success": self.success,
                "steps": self.steps, "duration_s": self.duration_s, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "has_folder": self.has_folder}


@dataclass(frozen=True)
class ErrorGroup:
    """Attempts that met the same error (status, kind and normalised message): how many, the first three tasks
    and how many tasks in all."""

    status: str
    kind: str
    message: str
    count: int
    tasks: tuple[str, ...]
    task_count: int

    @property
    def key(self) -> str:
        return f"{self.status}|{self.kind}|{self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "kind": self.kind, "message": self.message, "count": self.count,
                "tasks": list(self.tasks), "task_count": self.task_count}


@dataclass(frozen=True)
class JudgeInfo:
    """A judge output file: its path, mode, model and threshold (from its lines, else its name), whose it is
    ("om2w-tui", "the official evaluator", None), how many of the run's tasks it judged and its rate over them."""

    file: str
    mode: str | None
    model: str | None
    threshold: Any
    by: str | None
    judged: int
    rate: Rate

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "mode": self.mode, "model": self.model, "threshold": self.threshold,
                "by": self.by, "judged": self.judged, "rate": self.rate.to_json()}


@dataclass(frozen=True)
class Success:
    """Where success comes from ("judge", "correct" or None) and the rates; with no source, `overall` is None and
    the groups are empty. `other_judges`: the folder's other judge files, summed up beside it."""

    source: str | None
    judge: JudgeInfo | None = None
    other_judges: tuple[JudgeInfo, ...] = ()
    overall: Rate | None = None
    by_level: Mapping[str, Rate] = field(default_factory=dict)
    by_site: Mapping[str, Rate] = field(default_factory=dict)

    def group(self, name: str) -> Mapping[str, Rate]:
        """by_level or by_site by name ("by_level", "by_site")."""
        return self.by_level if name == "by_level" else self.by_site

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "judge": None if self.judge is None else self.judge.to_json(),
                               "other_judges": [j.to_json() for j in self.other_judges]}
        if self.source:
            out["overall"] = _rate_json(self.overall)
            out["by_level"] = {k: v.to_json() for k, v in self.by_level.items()}
            out["by_site"] = {k: v.to_json() for k, v in self.by_site.items()}
        return out


@dataclass(frozen=True)
class Conformance:
    """How many problems the official evaluator would meet in the folder, and the first five."""

    problems: int
    examples: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"problems": self.problems, "examples": list(self.examples)}


@dataclass(frozen=True)
class RunReport:
    """One run's summary. `name` is arm/model from run.json, else the folder's name; `task_file` is run.json's
    entry as written; `status` counts tasks by latest status; `metrics` maps each of `report.METRICS` to its
    stats; `errors` are every attempt's, grouped, the most frequent first."""

    out: str
    name: str
    arm: str | None
    model: str | None
    bench: str | None
    task_file: Any
    has_results: bool
    has_manifest: bool
    tasks: int
    attempts: int
    success: Success
    status: Mapping[str, int]
    metrics: Mapping[str, Stats]
    errors: tuple[ErrorGroup, ...]
    conformance: Conformance
    warnings: tuple[str, ...]
    per_task: Mapping[str, TaskRow]

    def to_json(self, per_task: bool = True) -> dict[str, Any]:
        """JSON-ready; `per_task=False` leaves the per-task rows out (the key too)."""
        out: dict[str, Any] = {
            "out": self.out, "name": self.name, "arm": self.arm, "model": self.model, "bench": self.bench,
            "task_file": self.task_file, "has_results": self.has_results, "has_manifest": self.has_manifest,
            "tasks": self.tasks, "attempts": self.attempts, "success": self.success.to_json(),
            "status": dict(self.status), "metrics": {k: m.to_json() for k, m in self.metrics.items()},
            "errors": [g.to_json() for g in self.errors], "conformance": self.conformance.to_json(),
            "warnings": list(self.warnings),
        }
        if per_task:
            out["per_task"] = {t: row.to_json() for t, row in self.per_task.items()}
        return out


@dataclass(frozen=True)
class CompareRow:
    """One group (overall, a level, a site, paired) across the runs: each run's rate (None: the run has no success
    measure or not this group) and its difference from the first run's, in percentage points (the first's is
    None)."""

    group: str
    values: tuple[Rate | None, ...]
    delta_pp: tuple[float | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "values": [_rate_json(v) for v in self.values], "delta_pp": list(self.delta_pp)}


@dataclass(frozen=True)
class Paired:
    """The runs compared on the tasks they all have."""

    tasks: int
    values: tuple[Rate | None, ...]
    delta_pp: tuple[float | None, ...]

    def as_row(self) -> CompareRow:
        return CompareRow("paired", self.values, self.delta_pp)

    def to_json(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "values": [_rate_json(v) for v in self.values], "delta_pp": list(self.delta_pp)}


@dataclass(frozen=True)
class Comparison:
    """Several runs side by side, against the first (the baseline): `runs` are their unique names; `status` and
    `median` hold one value per run for each status and metric."""

    runs: tuple[str, ...]
    outs: tuple[str, ...]
    baseline: str | None
    sources: tuple[str | None, ...]
    rows: tuple[CompareRow, ...]
    site_rows: tuple[CompareRow, ...]
    paired: Paired
    status: Mapping[str, tuple[int, ...]]
    median: Mapping[str, tuple[float | None, ...]]

    def to_json(self) -> dict[str, Any]:
        return {"runs": list(self.runs), "outs": list(self.outs), "baseline": self.baseline,
                "sources": list(self.sources), "rows": [r.to_json() for r in self.rows],
                "site_rows": [r.to_json() for r in self.site_rows], "paired": self.paired.to_json(),
                "status": {k: list(v) for k, v in self.status.items()},
                "median": {k: list(v) for k, v in self.median.items()}}
