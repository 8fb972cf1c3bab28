"""What the engine tells its front ends: the events it reports to every sink as they happen, and the snapshot of
its state that a front end asks for (`RunControl.snapshot()`, about once a second). A sink is anything with
`handle(event)` (the Textual app, the headless log, the control socket, a test recorder); sinks are called on the
event loop and must return at once. Everything here is a typed value: front ends read fields, never dict keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.protocol.run_end import RunEnd

# where a slot is: without an episode (idle; retiring: it goes once nothing runs on it), with one (an attempt's
# states, engine/attempt.py), or gone (retired: said once, when the slot is removed)
SlotState = Literal["idle", "starting", "running", "paused", "stopping", "retiring", "retired"]
# where a site is: an episode on it, its cooldown running, free to start one, held (every unit left on it is a held
# arm's: paused by its user or its model guard), nothing left; held elsewhere: another run pacing through the same
# --pace-dir has an episode on it
SiteState = Literal["running", "cooling", "free", "held", "done", "held elsewhere"]


@dataclass(frozen=True)
class RunStarted:
    total: int            # tasks selected for the run
    settled: int          # of those, already finished in the out folder (resume)
    workers: int
    out: str
    started_at: float = 0.0   # epoch seconds


@dataclass(frozen=True)
class SlotChanged:
    slot: int
    state: SlotState
    task_id: str | None = None
    lane: str = ""                 # a campaign's lane its episode belongs to (engine/lanes.py); "" in a plain run


@dataclass(frozen=True)
class EpisodeStarted:
    slot: int
    task_id: str
    site: str
    level: str | None
    attempt: int
    started_at: float
    max_steps: int                 # the episode's step budget: its task's (Task.max_steps, decided at load)
    lane: str = ""                 # a campaign's lane (its run folder's name, engine/lanes.py); "" in a plain run


@dataclass(frozen=True)
class EpisodeStep:
    slot: int
    task_id: str
    step: int
    actions: list[str]
    url: str = ""
    thought: str = ""
    screenshot: str | None = None   # the file in trajectory/ this step wrote (what the page looked like)


@dataclass(frozen=True)
class EpisodeModelCall:
    """One model call of a running episode ended: its kind (protocol/model.py's CallKind: `ok`, or what failed)."""
    slot: int
    task_id: str
    kind: str
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    message: str = ""          # the server's words, with the episode's first call of each failure kind


@dataclass(frozen=True)
class EpisodeFinished:
    """An attempt ended and was recorded (`record`, the line written to results.jsonl)."""
    slot: int
    record: EpisodeRecord
    requeued: bool = False    # the task goes back in the queue (interrupted, requeued, or an infra retry)
    done: int | None = None   # tasks of the run's selection settled now (resumed ones included)
    errors: int | None = None  # of those, ended in error
    lane: str = ""            # a campaign's lane: the run folder `record` was written to; "" in a plain run
    judged: int | None = None  # the run's settled tasks with a reference verdict now (resumed ones included)
    correct: int | None = None  # of those, correct


@dataclass(frozen=True)
class EpisodePutBack:
    """An attempt that never reached its worker (stopped while the worker started, or the worker vanished before
    taking it): nothing recorded, no try used; the task is back at the front of the queue."""
    slot: int
    task_id: str
    attempt: int
    reason: str
    done: int | None = None
    errors: int | None = None
    lane: str = ""


@dataclass(frozen=True)
class DispatchChanged:
    paused: bool
    reason: str = ""


@dataclass(frozen=True)
class Log:
    level: str            # info | warning | error
    message: str


@dataclass(frozen=True)
class LaneRow:
    """A campaign's lane (an arm's repeat: a run folder of its own) as it stands: its counts over the campaign's
    selection, and what holds its units back."""
    name: str                   # its run folder's name (campaign_folder.lane_name)
    arm: str
    repeat: int
    out: str = ""
    total: int = 0              # its units (the campaign's tasks)
    settled_before: int = 0     # finished in its folder before this run
    done: int = 0               # settled now (resumed ones included)
    errors: int = 0             # of those, ended in error
    correct: int = 0            # the reference judge's verdicts on its settled units (resumed ones included)
    judged: int = 0
    paused: bool = False        # its units held by its user (pause one arm)
    guard: str = ""             # why its model guard holds its units ("" when it does not)
    model_calls: dict[str, int] = field(default_factory=dict)   # its model calls by kind ("ok" too)


@dataclass(frozen=True)
class GapFigures:
    """Gaps in seconds: how many were measured, their median, p90 and worst."""
    n: int = 0
    median_s: float | None = None
    p90_s: float | None = None
    worst_s: float | None = None


@dataclass(frozen=True)
class PairingGaps:
    """How close in time a campaign ran the units it compares (engine/pairing.py): `pairs`, each compared pair's gap
    (an arm's k-th repeat and the first arm's, per task, between the starts of their settling attempts); `span`, each
    task's latest start of all its units minus the earliest. `lanes`: the units of a task (with two, the span is the
    pair's gap); `compared`: the pairs of a task (none: one arm)."""
    pairs: GapFigures = field(default_factory=GapFigures)
    span: GapFigures = field(default_factory=GapFigures)
    lanes: int = 0
    compared: int = 0

    @property
    def span_told(self) -> bool:
        """Whether the span says what the pairs do not: more than two units a task, or repeats of one arm alone."""
        return self.lanes > 2 or (self.lanes == 2 and not self.compared)


@dataclass(frozen=True)
class RunSummary:
    """The run's counts when it ended (or now)."""
    total: int = 0              # tasks selected
    settled_before: int = 0     # finished in the out folder before this run
    finished: int = 0           # attempts recorded by this run
    by_status: dict[str, int] = field(default_factory=dict)   # of those, by status
    pending: int = 0            # units left to start: queued, or a held arm's (the sites' `left`, summed)
    elapsed_s: float = 0.0
    out: str = ""
    correct: int | None = None  # the reference judge's verdicts on the settled tasks (resumed ones included)
    judged: int | None = None
    unwritten: int = 0          # records the out folder would not take (the run did not keep its word)
    results: str = ""           # the run's results file (a shard has its own)
    model_guard: str = ""       # why the model guard stopped dispatch, when it did ("" otherwise)
    model_calls: dict[str, int] = field(default_factory=dict)   # this run's model calls by kind ("ok" too)
    model_ended: dict[str, int] = field(default_factory=dict)   # this run's episodes that ended on each model kind
    end: RunEnd | None = None   # how it ended (protocol/run_end.py); None while it goes on (a snapshot's summary)
    lanes: tuple[LaneRow, ...] = ()  # a campaign's lanes, in its plan's order (none in a plain run)
    pairing: PairingGaps = field(default_factory=PairingGaps)   # a campaign's

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total": self.total, "settled_before": self.settled_before, "finished": self.finished,
                               "by_status": dict(self.by_status), "pending": self.pending,
                               "elapsed_s": self.elapsed_s, "out": self.out, "results": self.results,
                               "end": self.end.value if self.end is not None else None}
        if self.judged:
            out.update(correct=self.correct, judged=self.judged)
        if self.unwritten:
            out["unwritten"] = self.unwritten
        if self.model_guard:
            out["model_guard"] = self.model_guard
        if self.model_calls:
            out["model_calls"] = dict(self.model_calls)
        if self.model_ended:
            out["model_ended"] = dict(self.model_ended)
        return out


@dataclass(frozen=True)
class RunFinished:
    summary: RunSummary = field(default_factory=RunSummary)


@dataclass(frozen=True)
class SlotRow:
    slot: int
    state: SlotState
    task_id: str | None = None
    site: str | None = None
    level: str | None = None
    step: int = 0
    started_at: float | None = None   # epoch seconds
    attempt: int | None = None
    max_steps: int | None = None      # its episode's step budget (Task.max_steps); None when idle
    model_error: str = ""       # the kind of its episode's last model call, when that call failed
    lane: str = ""              # a campaign's lane its episode belongs to ("" idle, or in a plain run)
    left_s: float | None = None   # its episode's expected seconds left (engine/estimate.py); None when idle


@dataclass(frozen=True)
class SiteRow:
    site: str
    state: SiteState
    ready_at: float = 0.0       # loop clock: no episode starts here before it
    left: int = 0               # units left on it: queued, or held beside the queue (its share of `pending`)
    done: int = 0
    errors: int = 0
    total: int = 0
    cooldown: float = 0.0       # its current cooldown (the run's, unless widened after a block)
    running: int = 0
    limit: int = 1              # episodes at once allowed (0: no limit)
    work_s: float = 0.0         # its queued units' expected seconds (the dispatcher's lengths, learnt as episodes end)


@dataclass(frozen=True)
class ModelStats:
    """The run's model, as its calls went: counts since the run started, rates over the last minute, latencies over
    the last calls, and the model guard's state."""
    calls: int = 0
    ok: int = 0
    failures: dict[str, int] = field(default_factory=dict)       # calls by failure kind
    ended_on: dict[str, int] = field(default_factory=dict)       # episodes that ended on each model failure kind
    calls_per_min: float = 0.0
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    tokens_in_per_s: float = 0.0
    tokens_out_per_s: float = 0.0
    thinking_stripped: int = 0  # replies whose <think> block was split off (in episodes that ended)
    last_error: str = ""        # "<kind>: <the server's words>" of the last failed call
    guard: str = ""             # why the model guard holds dispatch ("" when it does not)


@dataclass(frozen=True)
class Pacing:
    per_site: int = 1
    cooldown: float = 0.0


@dataclass(frozen=True)
class RunSnapshot:
    """The engine's state at loop-clock time `now`: what a front end draws and what its controls depend on."""
    now: float = 0.0
    slots: list[SlotRow] = field(default_factory=list)
    sites: list[SiteRow] = field(default_factory=list)
    paused: bool = False        # dispatch paused, for whatever reason
    user_paused: bool = False   # ... by its user
    breaker: str = ""           # why the circuit breaker holds dispatch ("" when closed)
    storage: str = ""           # why the out folder holds dispatch ("" when it can be written)
    stopping: bool = False
    pacing: Pacing = field(default_factory=Pacing)
    target_workers: int = 0
    errors: int = 0             # tasks whose latest attempt ended in error (what retry_errors would queue)
    summary: RunSummary = field(default_factory=RunSummary)
    model: ModelStats = field(default_factory=ModelStats)
    lanes: tuple[LaneRow, ...] = ()   # a campaign's lanes (none in a plain run); `summary.pairing` its pairing gaps

    @property
    def running(self) -> int:
        """Episodes under way."""
        return sum(1 for s in self.slots if s.task_id is not None)


Event = (RunStarted | SlotChanged | EpisodeStarted | EpisodeStep | EpisodeModelCall | EpisodeFinished
         | EpisodePutBack | DispatchChanged | Log | RunFinished)


class Sink(Protocol):
    def handle(self, event: Event) -> None: ...
