"""A slot of the run: a place for one attempt at a time, with its worker process (started in the background, again
when it died or was killed, and closed when the slot retires or the run ends). The scheduler keeps the slots and
decides what runs on them; an attempt uses its slot as its `Seat` (engine/attempt.py). Scrapy's downloader slots
are the model: per-place state beside the scheduler, no policy."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from om2w_tui.engine.attempt import Attempt
from om2w_tui.engine.machine import Room
from om2w_tui.executors.base import Executor, Worker


@dataclass
class Slot:
    """A place for one attempt at a time, with its worker (an attempt's `Seat`)."""
    id: int
    executor: Executor
    worker: Worker | None = None
    worker_start: asyncio.Task[Worker] | None = None
    episode: Attempt | None = None
    retired: bool = False

    def ensure_worker(self) -> asyncio.Task[Worker]:
        """The slot's worker, started once in the background (so imports overlap) and again if it died or was
        killed (a killed worker's exit is seen late: it is never handed another episode)."""
        start = self.worker_start
        usable = start is not None and (not start.done() or (
            not start.cancelled() and start.exception() is None and _usable(start.result())))
        if not usable:
            self.worker = None
            self.worker_start = asyncio.create_task(self.executor.start_worker(self.id))
            self.worker_start.add_done_callback(lambda t: t.cancelled() or t.exception())
        assert self.worker_start is not None
        return self.worker_start

    def kill_worker(self, worker: Worker) -> None:
        """End a worker's process group now; the slot gets a new worker for its next episode."""
        worker.kill_group()
        if self.worker is worker:
            self.worker = None

    async def close_worker(self) -> None:
        """Close the slot's worker, once it has started (a start still under way is awaited first)."""
        if self.worker_start is not None and not self.worker_start.done():
            with contextlib.suppress(BaseException):
                await self.worker_start
        w = self.worker
        if w is None and self.worker_start is not None and self.worker_start.done() \
                and not self.worker_start.cancelled() and self.worker_start.exception() is None:
            w = self.worker_start.result()
        if w is not None:
            await w.close()


def _usable(worker: Worker) -> bool:
    return not worker.exited and not worker.killed


def resize(active: list[Slot], n: int, room: Room | None) -> tuple[int, str, list[Slot]]:
    """`n` slots asked of the `active` ones, `room`: what the machine holds more (None: not asked) -> the slots kept,
    why fewer than asked ('' when as asked), and the slots to retire (idle ones first, then the newest)."""
    note = ""
    if room is not None:
        # slots whose worker is not up yet take their memory soon: they count against what is available now
        fit = len(active) + max(0, room.slots - sum(1 for s in active if s.worker is None))
        if n > fit:
            note = f"workers {n}: {fit} kept, as many as this machine holds: {room.why}"
            n = max(1, fit)
    surplus = sorted(active, key=lambda s: (s.episode is not None, -s.id))[: max(0, len(active) - n)]
    return n, note, surplus
