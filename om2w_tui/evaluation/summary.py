"""The typed values of a run's report: what `report.summarize(out)` returns for one run (`RunReport`) and
`compare.compare([...])` for several (`Comparison`), read by attribute by the text renderers, the command line and
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

from om2w_tui.evaluation.campaign_summary import CampaignView
from om2w_tui.evaluation.failure import Failure, counted
from om2w_tui.evaluation.measure import Measure
from om2w_tui.evaluation.stats import MeanInterval, PairedDifference, Spread, wilson
from om2w_tui.evaluation.task_outcome import Outcome


@dataclass(frozen=True)
class Rate:
    """Successes out of tasks; `rate` is None when there are no tasks. `low`/`high`: its 95% Wilson interval."""

    successes: int
    tasks: int
    rate: float | None

    @classmethod
    def of(cls, successes: int, tasks: int) -> Rate:
        return cls(successes, tasks, (successes / tasks) if tasks else None)

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.successes, self.tasks) if self.tasks else None

    @property
    def low(self) -> float | None:
        return self.interval[0] if self.interval else None

    @property
    def high(self) -> float | None:
        return self.interval[1] if self.interval else None

    def to_json(self) -> dict[str, Any]:
        return {"successes": self.successes, "tasks": self.tasks, "rate": self.rate, "low": self.low,
                "high": self.high}


@dataclass(frozen=True)
class Counts:
    """Tasks by outcome (`evaluation/outcomes.py`): successes, failures, not executable (label 2), and pending (no
    outcome yet: running, not labelled, not judged; in no rate). `overall` and `executable` are the two rules."""

    success: int = 0
    failure: int = 0
    not_executable: int = 0
    pending: int = 0

    @property
    def overall(self) -> Rate:
        """Success over every task with an outcome, not executable counted as failure."""
        return Rate.of(self.success, self.success + self.failure + self.not_executable)

    @property
    def executable(self) -> Rate:
        """Success over the executable tasks (not executable left out)."""
        return Rate.of(self.success, self.success + self.failure)

    @property
    def tasks(self) -> int:
        return self.success + self.failure + self.not_executable + self.pending

    def rate(self, rule: str) -> Rate:
        return self.executable if rule == "executable" else self.overall

    def to_json(self) -> dict[str, Any]:
        return {"success": self.success, "failure": self.failure, "not_executable": self.not_executable,
                "pending": self.pending, "overall": self.overall.to_json(), "executable": self.executable.to_json()}


@dataclass(frozen=True)
class Measured:
    """Success from one source (`labels`: human labels, `judge`: a judge's verdicts, `correct`: reference answers),
    named for the reader, with its counts overall, per level and per site. `measure`: which measure it is
    (`evaluation/measure.py`), `judge`: its judge file, `outcomes`: each task's outcome under it."""

    source: str
    name: str
    counts: Counts
    by_level: Mapping[str, Counts] = field(default_factory=dict)
    by_site: Mapping[str, Counts] = field(default_factory=dict)
    measure: Measure | None = None
    judge: JudgeInfo | None = None
    outcomes: Mapping[str, Outcome | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "counts": self.counts.to_json(),
                "by_level": {k: v.to_json() for k, v in self.by_level.items()},
                "by_site": {k: v.to_json() for k, v in self.by_site.items()}}


@dataclass(frozen=True)
class Confusion:
    """Two raters' yes/no on the same tasks: both said success, only A, only B, both failure."""

    both: int = 0
    only_a: int = 0
    only_b: int = 0
    neither: int = 0

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def agreement(self) -> Rate:
        return Rate.of(self.both + self.neither, self.n)

    @property
    def table(self) -> list[list[int]]:
        """Rows A success/failure, columns B success/failure."""
        return [[self.both, self.only_a], [self.only_b, self.neither]]

    def to_json(self) -> dict[str, Any]:
        return {"both": self.both, "only_a": self.only_a, "only_b": self.only_b, "neither": self.neither,
                "agreement": self.agreement.to_json()}


@dataclass(frozen=True)
class Disagreement:
    task_id: str
    a: str          # an outcome (success, failure, not_executable)
    b: str
    level: str = "-"
    site: str = "-"

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "a": self.a, "b": self.b, "level": self.level, "site": self.site}


@dataclass(frozen=True)
class Agreement:
    """Rater A (a judge) against rater B (humans) under one counting rule: the confusion, Cohen's kappa, both rates
    on the same tasks and their gap (A - B, percentage points), per level, and the tasks where they disagree.
    `left_out`: tasks only one of them rated (or, under the executable rule, not executable)."""

    a: str
    b: str
    rule: str
    confusion: Confusion
    kappa: float | None
    a_rate: Rate
    b_rate: Rate
    gap_pp: float | None
    by_level: Mapping[str, Confusion]
    kappa_by_level: Mapping[str, float | None]
    disagreements: tuple[Disagreement, ...]
    left_out: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "rule": self.rule, "confusion": self.confusion.to_json(),
                "kappa": self.kappa, "a_rate": self.a_rate.to_json(), "b_rate": self.b_rate.to_json(),
                "gap_pp": self.gap_pp, "by_level": {k: v.to_json() for k, v in self.by_level.items()},
                "kappa_by_level": dict(self.kappa_by_level),
                "disagreements": [d.to_json() for d in self.disagreements], "left_out": self.left_out}


def _paired_json(d: PairedDifference) -> dict[str, Any]:
    return {"n": d.n, "both": d.both, "only_a": d.only_a, "only_b": d.only_b, "neither": d.neither,
            "difference": d.difference, "low": d.low, "high": d.high, "mcnemar_p": d.p}


@dataclass(frozen=True)
class PairedTest:
    """Arm A against arm B on the tasks both have an outcome for, under one rule: both rates, A - B with its paired
    95% interval and McNemar's exact p, the tasks only one solved, and the same per site."""

    a: str
    b: str
    rule: str
    a_rate: Rate
    b_rate: Rate
    difference: PairedDifference
    only_a_tasks: tuple[str, ...]
    only_b_tasks: tuple[str, ...]
    by_site: Mapping[str, PairedDifference]
    left_out: int = 0
    measure: str = ""             # the measure both sides are read by (Measure.name)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "rule": self.rule, "measure": self.measure, "a_rate": self.a_rate.to_json(),
                "b_rate": self.b_rate.to_json(), **_paired_json(self.difference),
                "only_a_tasks": list(self.only_a_tasks), "only_b_tasks": list(self.only_b_tasks),
                "by_site": {k: _paired_json(v) for k, v in self.by_site.items()}, "left_out": self.left_out}


@dataclass(frozen=True)
class Pooled:
    """Arm A against arm B over all their repeats, under one rule: on the tasks every repeat of both has an outcome
    for, each task's share of A's repeats that solved it minus B's, averaged over the tasks, with its 95% t interval
    (`stats.mean_interval`: the tasks are the unit), clipped to [-1, 1]; each arm's mean rate on those tasks; the
    tasks A solved more often than B (`better`) and less often (`worse`)."""

    a: str
    b: str
    rule: str
    a_runs: tuple[str, ...]
    b_runs: tuple[str, ...]
    a_mean: float | None
    b_mean: float | None
    difference: MeanInterval
    better: int = 0
    worse: int = 0
    measure: str = ""             # the measure every run is read by (Measure.name)

    def to_json(self) -> dict[str, Any]:
        d = self.difference
        return {"a": self.a, "b": self.b, "rule": self.rule, "measure": self.measure, "a_runs": list(self.a_runs),
                "b_runs": list(self.b_runs), "tasks": d.n, "a_mean": self.a_mean, "b_mean": self.b_mean,
                "difference": d.mean, "se": d.se, "low": d.low, "high": d.high, "better": self.better,
                "worse": self.worse}


@dataclass(frozen=True)
class Repeats:
    """Several runs of one configuration under one rule: each run's rate, their mean and spread, and on the tasks
    every run has an outcome for, how many each run solved (always), some solved (sometimes) or none (never)."""

    runs: tuple[str, ...]
    rule: str
    rates: tuple[Rate, ...]
    spread: Spread
    tasks: int
    always: int
    sometimes: int
    never: int
    sometimes_tasks: tuple[str, ...]
    measure: str = ""             # the measure every run is read by (Measure.name)
    arm: str = ""                 # a campaign's arm these are the repeats of ('' for runs given as repeats)
    pass_hat: tuple[float, ...] = ()   # pass^j for j = 1..k: every one of j tries solves it (tau-bench's)
    pass_at: tuple[float, ...] = ()    # pass@j for j = 1..k: at least one of j tries does

    @property
    def pass_all(self) -> float | None:      # pass^k: the share of the tasks every one of the k runs solved
        return self.pass_hat[-1] if self.pass_hat else None

    @property
    def pass_any(self) -> float | None:      # pass@k: the share of the tasks one of the k runs solved at least
        return self.pass_at[-1] if self.pass_at else None

    def to_json(self) -> dict[str, Any]:
        sp = self.spread
        return {"runs": list(self.runs), "rule": self.rule, "measure": self.measure,
                "rates": [r.to_json() for r in self.rates],
                "mean": sp.mean, "stdev": sp.stdev, "lowest": sp.low, "highest": sp.high, "tasks": self.tasks,
                "always": self.always, "sometimes": self.sometimes, "never": self.never,
                "sometimes_tasks": list(self.sometimes_tasks), "arm": self.arm, "pass_hat": list(self.pass_hat),
                "pass_at": list(self.pass_at)}


@dataclass(frozen=True)
class Readings:
    """A judge file's replies read both ways (`judge.py`: the official evaluator's reading and the lenient one):
    how many verdict and score replies there are, how many the two read differently, and for scores how many
    differ on the keep-or-drop side of the threshold. `parsing`: the reading the file's labels used."""

    parsing: str | None
    verdicts: int
    verdicts_differ: int
    verdict_tasks: tuple[str, ...]
    scores: int
    scores_differ: int
    scores_cross: int

    def to_json(self) -> dict[str, Any]:
        return {"parsing": self.parsing, "verdicts": self.verdicts, "verdicts_differ": self.verdicts_differ,
                "verdict_tasks": list(self.verdict_tasks), "scores": self.scores,
                "scores_differ": self.scores_differ, "scores_cross": self.scores_cross}


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
    outcome: Outcome | None = None   # evaluation/outcomes.py; None: none yet (running, not labelled, not judged)
    # its failure class (evaluation/failure.py) when a measure calls it a failure, and while it has no outcome: both
    # kept, so that the run read by another measure (compare.with_measure) has its classes without reading it again
    failed_as: Failure | None = None
    pending_as: Failure | None = None

    @property
    def failure(self) -> Failure | None:
        """Why it did not succeed under the report's measure (None: it succeeded, or nothing says it failed yet)."""
        if self.outcome == "success":
            return None
        return self.pending_as if self.outcome is None else self.failed_as

    def metric(self, key: str) -> Any:
        """One of `report.METRICS` by name (steps, duration_s, prompt_tokens, completion_tokens)."""
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        f = self.failure
        return {"level": self.level, "site": self.site, "status": self.status, "success": self.success,
                "steps": self.steps, "duration_s": self.duration_s, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "has_folder": self.has_folder, "outcome": self.outcome,
                "failure": None if f is None else f.to_json()}


@dataclass(frozen=True)
class ModelReport:
    """The run's model, from its records (the `model_calls` and `model_fault` each attempt carries): the tasks whose
    latest attempt ended on its model, by the call kind it ended on (settled: failures); the attempts that ended on
    the endpoint, by kind (retried); every attempt's calls by kind ("ok" too); what was mended."""

    ended_on: Mapping[str, int]
    endpoint: Mapping[str, int]
    calls: Mapping[str, int]
    thinking_stripped: int = 0
    reasoning_kept: int = 0

    @property
    def episodes_ended(self) -> int:
        return sum(self.ended_on.values())

    def to_json(self) -> dict[str, Any]:
        return {"ended_on": dict(self.ended_on), "endpoint": dict(self.endpoint), "calls": dict(self.calls),
                "thinking_stripped": self.thinking_stripped, "reasoning_kept": self.reasoning_kept}


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
    readings: Readings | None = None   # its replies read the official way and the lenient way

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "mode": self.mode, "model": self.model, "threshold": self.threshold,
                "by": self.by, "judged": self.judged, "rate": self.rate.to_json(),
                "readings": None if self.readings is None else self.readings.to_json()}


@dataclass(frozen=True)
class Success:
    """Where success comes from ("labels", "judge", "correct" or None) and the rates; with no source, `overall` is
    None and the groups are empty. `overall` and the groups' rates are over every task with an outcome (not
    executable counted as failure); `counts` and the groups' counts give the executable rule too, and the tasks
    pending. `other_judges`: the folder's other judge files, summed up beside it."""

    source: str | None
    judge: JudgeInfo | None = None
    other_judges: tuple[JudgeInfo, ...] = ()
    overall: Rate | None = None
    by_level: Mapping[str, Rate] = field(default_factory=dict)
    by_site: Mapping[str, Rate] = field(default_factory=dict)
    counts: Counts | None = None
    level_counts: Mapping[str, Counts] = field(default_factory=dict)
    site_counts: Mapping[str, Counts] = field(default_factory=dict)

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
            out["counts"] = None if self.counts is None else self.counts.to_json()
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
    measures: tuple[Measured, ...] = ()         # every success measure there is (the first is `success`'s)
    agreement: tuple[Agreement, ...] = ()       # the judge against the human labels, under each rule
    annotators: tuple[Agreement, ...] = ()      # each pair of annotators
    labelled: int = 0                           # tasks with at least one human label
    disputed: tuple[str, ...] = ()              # tasks whose annotators split evenly, not reviewed yet
    kind: str = "run"                           # "run": a run's folder; "labels": a human_label.json's column
    model_health: ModelReport | None = None     # the model's calls and failures (None: no record says)
    measure: Measure | None = None              # the measure `success` and each task's outcome are read by

    @property
    def failures(self) -> dict[str, int]:
        """How many tasks each failure class has under the report's measure, in the classes' order (none: left
        out)."""
        return counted({t: row.failure for t, row in self.per_task.items()})

    def available(self) -> list[Measure]:
        """The measures this run has, in its order of preference (its newest judge file first)."""
        return [m.measure for m in self.measures if m.measure is not None]

    def to_json(self, per_task: bool = True) -> dict[str, Any]:
        """JSON-ready; `per_task=False` leaves the per-task rows out (the key too)."""
        out: dict[str, Any] = {
            "out": self.out, "name": self.name, "arm": self.arm, "model": self.model, "bench": self.bench,
            "task_file": self.task_file, "has_results": self.has_results, "has_manifest": self.has_manifest,
            "tasks": self.tasks, "attempts": self.attempts, "success": self.success.to_json(),
            "status": dict(self.status), "metrics": {k: m.to_json() for k, m in self.metrics.items()},
            "errors": [g.to_json() for g in self.errors], "conformance": self.conformance.to_json(),
            "warnings": list(self.warnings), "measures": [m.to_json() for m in self.measures],
            "agreement": [a.to_json() for a in self.agreement], "annotators": [a.to_json() for a in self.annotators],
            "labelled": self.labelled, "disputed": list(self.disputed), "kind": self.kind,
            "measure": None if self.measure is None else self.measure.to_json(), "failures": self.failures,
        }
        if self.model_health is not None:
            out["model_health"] = self.model_health.to_json()
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
    """Several runs side by side, against the first (the baseline), every one read by the same `measure`: `runs` are
    their unique names; `status` and `median` hold one value per run for each status and metric."""

    runs: tuple[str, ...]
    outs: tuple[str, ...]
    baseline: str | None
    sources: tuple[str | None, ...]
    rows: tuple[CompareRow, ...]
    site_rows: tuple[CompareRow, ...]
    paired: Paired
    status: Mapping[str, tuple[int, ...]]
    median: Mapping[str, tuple[float | None, ...]]
    tests: tuple[PairedTest, ...] = ()      # each run against the baseline, task by task, under each rule
    repeats: tuple[Repeats, ...] = ()       # the runs as repeats of one configuration, under each rule
    pooled: tuple[Pooled, ...] = ()         # a campaign's arms against the first over all their repeats, each rule
    measure: Measure | None = None          # the one measure every run is read by (None: no run has one)
    campaign: CampaignView | None = None    # the runs are a campaign's lanes (its key only then)

    def to_json(self) -> dict[str, Any]:
        out = {"runs": list(self.runs), "outs": list(self.outs), "baseline": self.baseline,
               "sources": list(self.sources), "rows": [r.to_json() for r in self.rows],
               "site_rows": [r.to_json() for r in self.site_rows], "paired": self.paired.to_json(),
               "status": {k: list(v) for k, v in self.status.items()},
               "median": {k: list(v) for k, v in self.median.items()},
               "tests": [t.to_json() for t in self.tests], "repeats": [r.to_json() for r in self.repeats],
               "measure": None if self.measure is None else self.measure.to_json()}
        if self.pooled:
            out["pooled"] = [p.to_json() for p in self.pooled]
        if self.campaign is not None:
            out["campaign"] = self.campaign.to_json()
        return out
