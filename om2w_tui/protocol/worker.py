"""The worker's pipe, declared once: what the scheduler sends a worker process (commands, on its stdin) and what the
worker says back (events, on its stdout), one JSON line each, through one codec (`COMMANDS`, `EVENTS`).

- `WorkerSpec` is everything a worker needs to run an episode of the run (the model's settings whole, a
  `ModelSettings`). It is built from the run's settings on the engine's side (`engine/config.py:
  RunConfig.worker_spec`) and has no defaults of its own: the worker never decides a setting. The API key travels
  in it (never in the worker's environment, which Chromium inherits); the spec is never written anywhere.
- `Outcome` is how an attempt ended, as the worker (or, when the worker died, its folder) tells it: a `Status`, and
  for an error its `FaultKind` (protocol/faults.py), a type, never read back out of the message's words.
- At the end of a worker's stream the executor adds `Exit(rc)` (rc None: the worker was lost with its node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from om2w_tui.protocol.codec import Tagged
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.model import ModelCalls
from om2w_tui.protocol.model_settings import ModelSettings

# out_of_steps: the agent used its whole step budget without saying `done` (the agent's failure, settled, never retried)
Status = Literal["done", "out_of_steps", "timeout", "killed", "error", "blocked"]
STATUSES: tuple[str, ...] = get_args(Status)
StopReason = Literal["timeout", "killed"]
LogLevel = Literal["info", "warning", "error"]
# A worker's temp folder is made by its parent and named to it in this variable; the parent removes it when the
# worker has exited, however it ended (a worker killed mid-episode removes nothing itself). While an episode runs,
# the file EPISODE_SCRATCH in it names the episode's own temp folder (Chromium's profile), which the parent removes
# with it.
SCRATCH_VAR = "OM2W_WORKER_SCRATCH"
EPISODE_SCRATCH = "episode-scratch"
EPISODE_SCRATCH_PREFIX = "om2w-episode-"


@dataclass(frozen=True)
class BrowserSettings:
    """The pinned browser, the same on every host (the run's --viewport, --user-agent, --locale, --timezone)."""
    viewport: str
    user_agent: str
    locale: str
    timezone: str

    def as_dict(self) -> dict[str, str]:
        return {"viewport": self.viewport, "user_agent": self.user_agent, "locale": self.locale,
                "timezone": self.timezone}


@dataclass(frozen=True)
class WorkerSpec:
    """One episode's settings, as the run decided them."""
    folder: str                      # the task's folder (the worker writes the trajectory there as it goes)
    chromium: str
    llm: ModelSettings               # the run's model settings, whole
    base_url: str = field(repr=False)    # the endpoint as the client opens it (credentials in it, if any)
    api_key: str = field(repr=False)
    max_steps: int                   # the episode's step budget: its task's (Task.max_steps, decided at load)
    arm: str
    arm_options: dict[str, Any]
    schema: Literal["v1", "v2"]
    instruction_template: str
    record_rows: bool
    hint_field: str | None
    browser: BrowserSettings


# ── commands: scheduler -> worker ─────────────────────────
@dataclass(frozen=True)
class Run:
    task: dict[str, Any]             # the task row as the task file gave it (task_id, confirmed_task, website, ...)
    spec: WorkerSpec


@dataclass(frozen=True)
class Pause:
    pass


@dataclass(frozen=True)
class Resume:
    pass


@dataclass(frozen=True)
class Stop:
    reason: StopReason
    error: str | None = None


@dataclass(frozen=True)
class Exit:
    """End the worker (an episode it runs stops first, keeping its steps)."""


Command = Run | Pause | Resume | Stop | Exit
COMMANDS: Tagged[Command] = Tagged("cmd", {"run": Run, "pause": Pause, "resume": Resume, "stop": Stop,
                                           "exit": Exit})


# ── events: worker -> scheduler ───────────────────────────
@dataclass(frozen=True)
class Outcome:
    """How an attempt ended: its part of the results record."""
    status: Status
    error: str | None = None
    fault: FaultKind | None = None   # set for status "error" (and for an episode cut short by its model)
    agent_done: bool = False         # the agent said it was done
    steps: int = 0
    actions: int = 0
    screenshots: int = 0
    answer: str = ""                 # the agent's answer: "" unless it said `done` (never a last action's output)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: ModelCalls | None = None  # every model call of the episode, by kind
    model_fault: str | None = None   # the call kind (protocol/model.py) an episode that ended on its model ended on
    rows: int | None = None          # --record-rows: training rows written
    hint_left: bool | None = None    # --hint-field: hint text found in a recorded row
    blank_screenshot: bool | None = None   # no screenshot at all: the trajectory holds a stand-in image


@dataclass(frozen=True)
class Ready:
    pid: int


@dataclass(frozen=True)
class Started:
    task_id: str


@dataclass(frozen=True)
class Running:
    """The browser is on the task's website and the agent runs (the episode cannot be put back any more)."""


@dataclass(frozen=True)
class Step:
    step: int
    actions: list[str]
    url: str = ""
    thought: str = ""
    screenshot: str | None = None    # the file in trajectory/ this step wrote


@dataclass(frozen=True)
class ModelCall:
    """One model call ended (its kind, protocol/model.py's CallKind); `message` is the server's words, sent with
    the first call of each failure kind in the episode only."""
    kind: str
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    message: str = ""


@dataclass(frozen=True)
class Paused:
    pass


@dataclass(frozen=True)
class Resumed:
    pass


@dataclass(frozen=True)
class WorkerLog:
    level: LogLevel
    message: str


@dataclass(frozen=True)
class Finished:
    outcome: Outcome


@dataclass(frozen=True)
class Exited:
    """The worker's stream ended (added by the executor, never sent by a worker): rc None when it was lost."""
    rc: int | None


Event = Ready | Started | Running | Step | ModelCall | Paused | Resumed | WorkerLog | Finished | Exited
EVENTS: Tagged[Event] = Tagged("ev", {
    "ready": Ready, "started": Started, "running": Running, "step": Step, "model_call": ModelCall,
    "paused": Paused, "resumed": Resumed, "log": WorkerLog, "finished": Finished, "exit": Exited})
