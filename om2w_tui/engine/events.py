"""What the engine tells its front ends. The scheduler reports these to every sink; a sink is anything with
`handle(event)` (the Textual app, the headless log, a test recorder). Sinks are called on the event loop and
must return at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


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
    state: str            # idle | starting | running | paused | stopping | retired
    task_id: str | None = None


@dataclass(frozen=True)
class EpisodeStarted:
    slot: int
    task_id: str
    site: str
    level: str | None
    attempt: int
    started_at: float
    max_steps: int | None = None   # the episode's step budget (a task's own, or the run's)


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
class EpisodeFinished:
    slot: int
    record: dict[str, Any]
    requeued: bool = False    # the task goes back in the queue (interrupted, requeued, or an infra retry)
    done: int | None = None   # tasks of the run's selection settled now (resumed ones included)
    errors: int | None = None  # of those, ended in error


@dataclass(frozen=True)
class DispatchChanged:
    paused: bool
    reason: str = ""


@dataclass(frozen=True)
class Log:
    level: str            # info | warning | error
    message: str


@dataclass(frozen=True)
class RunFinished:
    summary: dict[str, Any] = field(default_factory=dict)


class Sink(Protocol):
    def handle(self, event: object) -> None: ...
