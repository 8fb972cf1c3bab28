"""One attempt of a task on a slot, from its start to its outcome: wait for the slot's worker (or a stop), keep the
earlier attempt's files, hand the task over (its timeout runs from then), follow the worker's events as a `match`
over the protocol's types (protocol/worker.py), pause (the timeout stops meanwhile), stop (asked; the worker's
whole group ended when it does not stop within the grace).

The scheduler decides where the task goes afterwards (settled, queued again, put back); this module only drives the
attempt and says what it came to: `Attempt.drive()` returns the `Outcome` to record, and `put_back` says whether the
task never reached its worker (no record, no try used). What it does to the run goes through `AttemptRun` (the
scheduler is one)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.events import EpisodeModelCall, EpisodeStep, Log, SlotChanged
from om2w_tui.engine.events import Event as RunEvent
from om2w_tui.engine.records import harness_error, outcome_from_folder, prepare_folder
from om2w_tui.executors.base import Worker
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.worker import (
    Event,
    Exited,
    Finished,
    ModelCall,
    Outcome,
    Pause,
    Resume,
    Run,
    Running,
    Started,
    Step,
    Stop,
    StopReason,
    WorkerLog,
    WorkerSpec,
)

# where an attempt is: what its slot row shows
AttemptState = Literal["starting", "running", "paused", "stopping"]


class Seat(Protocol):
    """The slot an attempt runs on, as the attempt may use it: its worker, started (once) or replaced."""
    worker: Worker | None

    def ensure_worker(self) -> asyncio.Task[Worker]:
        """The slot's worker, started in the background if it has none that is usable."""
        ...

    def kill_worker(self, worker: Worker) -> None:
        """End the worker's process group now; the slot gets a new worker for its next attempt."""
        ...


class AttemptRun(Protocol):
    """What an attempt may do to the run it belongs to (the scheduler is one)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def emit(self, event: RunEvent) -> None: ...

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """A background task the run owns (awaited before it ends)."""
        ...

    def spec_for(self, task: Task, folder: Path) -> WorkerSpec:
        """The run's settings for an episode of `task` into `folder`."""
        ...

    def model_called(self, slot: int, task_id: str, call: ModelCall) -> None:
        """One model call of the attempt ended: the run's model statistics and front ends learn of it."""
        ...


@dataclass
class Attempt:
    task: Task
    attempt: int
    slot: int
    started_at: float                  # epoch seconds, for the record
    folder: Path
    timeout: float
    grace: float                       # after a stop's ask, time before the worker's group is ended (timeout's)
    seat: Seat = field(repr=False)
    run: AttemptRun = field(repr=False)
    deadline: float = 0.0              # loop time when the timeout fires (moved on by pauses)
    paused_at: float | None = None
    stop_reason: StopReason | None = None
    stop_error: str | None = None
    steps: int = 0
    state: AttemptState = "starting"
    timer: asyncio.TimerHandle | None = None
    kill_timer: asyncio.TimerHandle | None = None
    stop_requested: asyncio.Event = field(default_factory=asyncio.Event)
    sent: bool = False                 # the worker has been handed the task (the timeout runs from here)
    put_back: bool = False             # it ends without a record and goes back in the queue (never ran)
    killed_worker: bool = False        # its worker's process group was ended by the kill timer
    site_released: bool = False        # its place on the site was given back to the pacer

    # ── the attempt's life ──────────────────────────────────
    async def drive(self) -> Outcome:
        """Run the attempt to its outcome (whatever the worker does; a failure of the harness itself is an `infra`
        error). `put_back` is True afterwards when the task never reached its worker."""
        try:
            return await self._drive()
        except Exception as e:
            return harness_error(f"harness: {type(e).__name__}: {str(e)[:300]}")
        finally:
            self.cancel_timers()

    async def _drive(self) -> Outcome:
        seat, run = self.seat, self.run
        start = seat.ensure_worker()
        stopped = asyncio.ensure_future(self.stop_requested.wait())
        try:
            await asyncio.wait({start, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        self.put_back = True   # until the worker has the task, a stop or a lost worker puts it back
        if self.stop_reason:   # stopped while its worker started: the task was never run
            return Outcome(self.stop_reason, self.stop_error)
        self.put_back = False
        worker = seat.worker = start.result()   # a worker that failed to start: recorded as infra, retried
        self.put_back = True
        await asyncio.to_thread(prepare_folder, self.folder, self.attempt)
        if self.stop_reason:
            return Outcome(self.stop_reason, self.stop_error)
        if not await worker.send(Run(self.task.to_dict(), run.spec_for(self.task, self.folder))):
            seat.kill_worker(worker)
            return harness_error("the worker process is gone")
        self.sent = True
        self.deadline = run.loop.time() + self.timeout   # the timeout runs from when the worker has the task
        self.arm_timeout()
        while True:
            event = await worker.next_event()
            if isinstance(event, Exited):
                return await self._lost(seat, worker, event.rc)
            if (outcome := self._take(event, worker)) is not None:
                return outcome

    def _take(self, event: Event, worker: Worker) -> Outcome | None:
        """One event of the worker: what it changes, and the outcome when it ends the attempt."""
        run = self.run
        match event:
            case Started():
                self.put_back = False
            case Step(step=n, actions=actions, url=url, thought=thought, screenshot=shot):
                self.put_back = False
                self.steps = n or self.steps + 1
                run.emit(EpisodeStep(self.slot, self.task.task_id, self.steps, list(actions), url, thought, shot))
            case Running():
                self.put_back = False
                if self.state == "starting":
                    self.set_state("running")
            case ModelCall() as call:
                run.model_called(self.slot, self.task.task_id, call)
                run.emit(EpisodeModelCall(self.slot, self.task.task_id, call.kind, call.latency_s,
                                            call.prompt_tokens, call.completion_tokens, call.message))
            case WorkerLog(level=level, message=message):
                run.emit(Log(level, f"slot {self.slot}: {message}"))
            case Finished(outcome=outcome):
                self.put_back = False
                if self.stop_reason and outcome.status != "done":   # the scheduler's reason is the one recorded
                    outcome = dataclasses.replace(outcome, status=self.stop_reason, error=self.stop_error,
                                                  fault=None, model_fault=None)
                if self.killed_worker:   # the kill raced the worker's last word: it is gone all the same
                    self.seat.kill_worker(worker)
                return outcome
        return None

    async def _lost(self, seat: Seat, worker: Worker, rc: int | None) -> Outcome:
        """The worker's stream ended without its last word: what the folder holds is the attempt's record."""
        if seat.worker is worker:
            seat.worker = None
        # it died before it said a word of the task (`started`, a step): nothing of the task ran, whether or not a
        # stop was asked meanwhile (a kill on a slot still `starting`): put back, no record, no cooldown
        if self.put_back:
            return harness_error(f"worker process exited (code {rc})")
        if self.stop_reason:
            return await asyncio.to_thread(outcome_from_folder, self.folder, self.stop_reason, self.stop_error, None)
        return await asyncio.to_thread(outcome_from_folder, self.folder, "error", f"worker process exited (code {rc})",
                                       FaultKind.INFRA)

    # ── controls ───────────────────────────────────────────
    def stop(self, reason: StopReason, error: str, grace: float) -> bool:
        """Ask the worker to stop (it keeps every finished step); end its group if it does not in time. An attempt
        whose worker has not got it yet is simply not started: it goes back in the queue. False when it was
        already stopping."""
        if self.stop_reason:
            return False
        seat, run = self.seat, self.run
        self.stop_reason, self.stop_error = reason, error
        self.stop_requested.set()
        self.set_state("stopping")
        worker = seat.worker
        if self.sent and worker is not None:
            run.spawn(worker.send(Stop(reason, error)))

            def kill() -> None:
                self.killed_worker = True
                seat.kill_worker(worker)

            self.kill_timer = run.loop.call_at(run.loop.time() + grace, kill)
        return True

    def pause(self, paused: bool) -> bool:
        """Pause or resume the episode; its timeout does not run while it is paused. False when it cannot be now."""
        seat, run = self.seat, self.run
        if self.stop_reason or not self.sent or seat.worker is None or (self.paused_at is not None) == paused:
            return False
        now = run.loop.time()
        if paused:
            self.paused_at = now
            if self.timer:
                self.timer.cancel()
            self.set_state("paused")
        else:
            self.deadline += now - (self.paused_at or now)
            self.paused_at = None
            self.arm_timeout()
            self.set_state("running")
        run.spawn(seat.worker.send(Pause() if paused else Resume()))
        return True

    def arm_timeout(self) -> None:
        if self.timer:
            self.timer.cancel()
        self.timer = self.run.loop.call_at(self.deadline, self.stop, "timeout", "timeout", self.grace)

    def cancel_timers(self) -> None:
        for handle in (self.timer, self.kill_timer):
            if handle:
                handle.cancel()

    def set_state(self, state: AttemptState) -> None:
        self.state = state
        self.run.emit(SlotChanged(self.slot, state, self.task.task_id, lane=self.task.lane))
