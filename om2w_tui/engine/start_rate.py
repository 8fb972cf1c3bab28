"""How fast a run starts worker processes: at most `rate` a second (`--worker-start-rate`), so that a run's first
workers, the console's `+` held down, or `ctl workers 500` never fork hundreds of Pythons (each importing
browser-use, then a Chromium) at once. An executor wrapped by `PacedStarts` hands out starts from a token bucket that
holds one second's worth: a run of up to `rate` workers starts them all at once, as before; more wait their turn.
The bucket reads the event loop's clock, so tests run it in virtual time. `at_once` bounds the starts under way (a
worker started but not ready yet): the next waits until one said ready, so a machine of few cores is never asked
to import browser-use a hundred times at once."""

from __future__ import annotations

import asyncio
from typing import Any


class PacedStarts:
    """An executor whose `start_worker` waits for a start token; everything else is the wrapped executor's."""

    def __init__(self, inner: Any, rate: float, at_once: int | None = None):
        if not rate > 0:
            raise ValueError(f"worker start rate {rate!r}: must be more than 0")
        self.at_once = at_once           # starts under way at most (None: no bound but the rate)
        self._under_way: asyncio.Semaphore | None = None
        self.inner = inner
        self.rate = float(rate)
        self.capacity = max(1.0, self.rate)   # one second's worth of starts
        self._tokens = self.capacity
        self._at: float | None = None         # when the bucket was last filled (loop time)
        self._lock: asyncio.Lock | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _fill(self, now: float) -> None:
        if self._at is not None:
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = now

    async def _token(self) -> None:
        """Wait for a start token; starts are handed out in the order they were asked."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            loop = asyncio.get_running_loop()
            self._fill(loop.time())
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.rate)
                self._fill(loop.time())
            self._tokens = max(0.0, self._tokens - 1)

    async def start_worker(self, slot: int) -> Any:
        if self.at_once is None:
            await self._token()
            return await self.inner.start_worker(slot)
        self._under_way = self._under_way or asyncio.Semaphore(self.at_once)
        async with self._under_way:   # until this worker said ready (or failed)
            await self._token()
            return await self.inner.start_worker(slot)
