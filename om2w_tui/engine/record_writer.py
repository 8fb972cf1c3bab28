"""`results.jsonl`'s one writer: the run's records appended in order, one at a time, in a thread (an fsync must not
stall the event loop). A record the out folder will not take stays in memory, in order, with every later one; the
writer tells the storage guard (engine/guards.py), which pauses dispatch and starts the writer again once its probe
(`space_ok`: a megabyte written and synced) passes. The scheduler submits each record as its attempt settles and
waits for the writer before the run ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from om2w_tui.engine.results import EpisodeRecord, ResultsStore
from om2w_tui.files import open_own

STORAGE_PROBE_BYTES = 1 << 20     # dispatch resumes when the out folder takes this much again


class WriterRun(Protocol):
    """What the writer asks of the run it writes for (the scheduler is one)."""

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """A background task the run owns (awaited before it ends)."""
        ...

    def wake(self) -> None:
        """Let the run look again (it may be over once its records are on disk)."""
        ...


class RecordWriter:
    """The records on their way to `store`, written by one task at a time; `unwritten` holds those not on disk yet."""

    def __init__(self, store: ResultsStore, run: WriterRun, fault: Callable[[str], None], held: Callable[[], bool]):
        self.store = store
        self.run = run
        self.fault = fault          # the folder would not take a record: the storage guard pauses dispatch
        self.held = held            # the storage guard holds: records wait in memory for its probe to pass
        self.unwritten: deque[EpisodeRecord] = deque()
        self._writer: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A write is under way (the run waits for it before it ends)."""
        return self._writer is not None and not self._writer.done()

    def submit(self, rec: EpisodeRecord) -> None:
        """Queue a record for `results.jsonl`. One writer appends them in order in a thread (an fsync must not stall
        the loop); when the folder cannot take one, it stays in memory, dispatch stops, and the storage probe
        starts the writer again once the folder can be written."""
        self.unwritten.append(rec)
        if not self.held():
            self.start()

    def start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = self.run.spawn(self.write())

    async def write(self) -> None:
        try:
            while self.unwritten:
                try:
                    await asyncio.to_thread(self.store.append, self.unwritten[0])
                except OSError as e:
                    self.fault(f"cannot write {self.store.path}: {e.strerror or e}")
                    return
                self.unwritten.popleft()
        finally:
            self.run.wake()   # the run may be over now

    async def write_kept(self) -> None:
        """The storage probe passed: write the records kept in memory."""
        self.start()
        if self._writer is not None:
            await self._writer


    def last_word(self) -> list[str]:
        """The records the folder would not take, each said whole (the run's last word on them: nothing else has
        them)."""
        return [f"record not written to {self.store.path}: {json.dumps(rec.to_json(), default=str)}"
                for rec in self.unwritten]


def space_ok(probe: Path) -> bool:
    """Whether the out folder takes STORAGE_PROBE_BYTES now, written and synced to `probe` (then removed);
    blocking: the storage guard runs it in a thread."""
    try:   # the run's own file: never written through a symlink planted there (it is removed below)
        with os.fdopen(open_own(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
            f.write(b"\0" * STORAGE_PROBE_BYTES)
            f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
