"""The two guards that pause dispatch on a fault of the run's surroundings, not of its tasks.

- The circuit breaker watches the model endpoint: `--breaker-after` endpoint failures in a row pause dispatch; the
  endpoint is probed every `--probe-interval` seconds, and dispatch resumes when it answers. The failures that
  tripped it are the endpoint's: the scheduler gives their tasks' tries back.
- The storage guard watches the out folder: a record or an episode folder it cannot take pauses dispatch; a probe
  (a write and an fsync, in a thread) runs every `--probe-interval` seconds, one chain at a time however often the
  user presses resume, and once it passes the kept records are written and dispatch resumes.

Each holds its state and its probe chain on the scheduler's loop; the scheduler tells them what happened and reads
whether dispatch may go on. No queue, no slots here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.events import DispatchChanged, Event, Log

Probe = Callable[[], Awaitable[bool]]


class GuardedRun(Protocol):
    """What a guard may do to the run it guards (the scheduler is one)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def emit(self, event: Event) -> None: ...

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """A background task the run owns (awaited before it ends)."""
        ...

    def wake(self) -> None:
        """Let the run's dispatch look again (a guard closed)."""
        ...

    @property
    def closing(self) -> bool:
        """The run is stopping or has ended: no new probe starts."""
        ...

    @property
    def dispatch_paused(self) -> bool:
        """Dispatch is paused, for any reason (said when a guard closes)."""
        ...


class Breaker:
    """The circuit breaker over the model endpoint."""

    def __init__(self, after: int, interval: float, probe: Probe | None, run: GuardedRun):
        self.after = after
        self.interval = interval
        self.probe = probe
        self.run = run
        self.open = False
        self.reason = ""
        self.in_a_row = 0
        self.streak: list[Task] = []       # the tasks of the current run of endpoint errors, each once

    def note(self, task: Task, endpoint: bool, stopping: bool) -> bool:
        """Count a settled attempt (`endpoint`: it failed through the endpoint); True when the breaker should open
        now (`trip`)."""
        self.in_a_row = self.in_a_row + 1 if endpoint else 0
        if not endpoint:
            self.streak.clear()
        elif all(t.key != task.key for t in self.streak):
            self.streak.append(task)
        return endpoint and self.in_a_row >= self.after and not self.open and not stopping

    def trip(self, error: str, give_back: Callable[[Task], None]) -> None:
        """Pause dispatch and start probing the endpoint. `give_back` runs for each task of the streak that tripped
        it: those failures are the endpoint's, not the tasks'."""
        self.open = True
        n, self.in_a_row = self.in_a_row, 0
        for task in self.streak:
            give_back(task)
        self.streak.clear()
        self.reason = f"{n} infra errors in a row (last: {error[:160]}); probing every {self.interval:g} s"
        self.run.emit(DispatchChanged(True, f"circuit breaker: {self.reason}"))
        self.run.loop.call_later(self.interval, self._start_probe)

    def _start_probe(self) -> None:
        if self.open and not self.run.closing:
            self.run.spawn(self._probe_once())

    async def _probe_once(self) -> None:
        try:
            ok = await self.probe() if self.probe is not None else True
        except Exception:
            ok = False
        if not self.open:
            return
        if ok:
            self.open, self.reason = False, ""
            self.streak.clear()
            self.in_a_row = 0
            self.run.emit(DispatchChanged(self.run.dispatch_paused,
                                          "circuit breaker closed: the endpoint answers again"))
            self.run.wake()
        else:
            self.run.loop.call_later(self.interval, self._start_probe)


class StorageGuard:
    """The out folder's guard: `error` says what cannot be written ("" while it can)."""

    def __init__(self, interval: float, run: GuardedRun, space_ok: Callable[[], bool],
                 write_kept: Callable[[], Awaitable[None]], kept: Callable[[], int]):
        self.interval = interval
        self.run = run
        self.space_ok = space_ok            # blocking: run in a thread
        self.write_kept = write_kept        # writes the records kept in memory; calls `fault` again if it cannot
        self.kept = kept                    # how many records are kept in memory
        self.error = ""
        self._timer: asyncio.TimerHandle | None = None
        self._probing = False

    def fault(self, problem: str) -> None:
        first = not self.error
        self.error = (f"{problem}; free space or fix the folder: dispatch resumes when it can be written "
                      f"({self.kept()} record(s) kept in memory)")
        if first:
            self.run.emit(DispatchChanged(True, self.error))
            self.schedule_probe(self.interval)
        self.run.emit(Log("error", self.error))

    def schedule_probe(self, delay: float) -> None:
        """One probe chain at a time, however often the user presses resume."""
        if self._probing:
            return   # the probe writing now schedules the next one itself if it must
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.run.loop.call_later(delay, lambda: self.run.spawn(self._probe()))

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def _probe(self) -> None:
        """Dispatch waits while the out folder cannot take a record and a screenshot's worth of bytes (the probe's
        write and fsync run in a thread)."""
        self._timer = None
        self._probing = True
        try:
            if not self.error or not await asyncio.to_thread(self.space_ok):
                return
            self.error = ""
            await self.write_kept()
            if not self.error:   # the writer wrote every kept record
                self.run.emit(DispatchChanged(self.run.dispatch_paused, "the out folder can be written again"))
                self.run.wake()
        finally:
            self._probing = False
            if self.error and not self.run.closing and self._timer is None:
                self.schedule_probe(self.interval)
