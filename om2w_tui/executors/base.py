"""The seam between the scheduler and where episodes run: an `Executor` makes a `Worker` for a slot; the scheduler
owns the worker from then on, hands it tasks and reads its events, and ends it. `local` (a process per slot) and
`ray` (the same process inside a Ray actor) implement these; the scheduler knows only the protocols.

The words are the worker protocol's (protocol/worker.py), typed on this side too: commands in, events out, and at
the end of a worker's stream `Exited(rc)` (rc None: it was lost). Only an executor encodes and decodes them."""

from __future__ import annotations

from typing import Protocol

from om2w_tui.protocol.worker import Command, Event


class Worker(Protocol):
    slot: int
    exited: bool     # its end has been seen (an `exit` event is queued or read)
    killed: bool     # it was killed: never hand it work again, though its exit may be seen later

    @property
    def pid(self) -> int | None: ...

    async def next_event(self) -> Event:
        """Its next event, in order; `Exited` ends the stream."""
        ...

    async def send(self, cmd: Command) -> bool:
        """Send a command; False when the worker is gone."""
        ...

    def kill_group(self) -> None:
        """End it and everything it started, now, without waiting (marks it killed)."""
        ...

    async def kill(self) -> None:
        """End it and everything it started, and wait until it has ended."""
        ...

    async def close(self) -> None:
        """Ask it to exit (an episode it runs stops, keeping its steps); kill it if it does not in time."""
        ...


class Executor(Protocol):
    async def start_worker(self, slot: int) -> Worker:
        """A worker for `slot`, ready for a task (raises when it cannot start one)."""
        ...
