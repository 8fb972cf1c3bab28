"""A watchdog for an event loop's stalls: where the loop's thread is while the loop is late.

A callback on the loop marks a heartbeat every few milliseconds; a thread checks the heartbeat and, whenever the
loop is more than `late_ms` late, samples the loop thread's stack (`sys._current_frames`). The samples are counted
by stack, so the report says what the loop was doing during its stalls, weighted by how long they lasted (each
sample is `every_ms` of stall). Idle time (the loop in `select`, waiting for a core) shows as such.

    watch = StallWatch(asyncio.get_running_loop(), late_ms=50)
    watch.start()
    ...
    watch.stop()
    print(watch.report())
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time

BEAT_S = 0.005


class StallWatch:
    def __init__(self, loop: asyncio.AbstractEventLoop, late_ms: float = 50.0, every_ms: float = 5.0):
        self.loop, self.late_s, self.every_s = loop, late_ms / 1000, every_ms / 1000
        self.ident = threading.get_ident()   # made in the loop's thread
        self.beat = time.monotonic()
        self.stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="stall-watch")
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._tick()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
        self._thread.join()

    def _tick(self) -> None:
        self.beat = time.monotonic()
        self._handle = self.loop.call_later(BEAT_S, self._tick)

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            if time.monotonic() - self.beat > self.late_s + BEAT_S:
                frame = sys._current_frames().get(self.ident)
                stack = []
                while frame is not None:
                    code = frame.f_code
                    stack.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}:{frame.f_lineno}")
                    frame = frame.f_back
                self.stacks[tuple(reversed(stack))] += 1
                self.samples += 1

    def report(self, top: int = 60, depth: int = 8) -> str:
        """The functions seen most in the stalls' samples (inclusive), then the deepest frames of the top stacks."""
        if not self.samples:
            return "no stall sampled"
        incl: collections.Counter[str] = collections.Counter()
        for stack, n in self.stacks.items():
            for name in set(f.rsplit(":", 1)[0] for f in stack):
                incl[name] += n
        lines = [f"stalls: {self.samples} samples of {self.every_s * 1000:g} ms "
                 f"({self.samples * self.every_s:.1f} s with the loop over {self.late_s * 1000:g} ms late)"]
        lines += [f"{n:6d} {100 * n / self.samples:5.1f}%  {name}" for name, n in incl.most_common(top)]
        lines.append("top stacks (innermost frames last):")
        for stack, n in self.stacks.most_common(8):
            lines.append(f"{n:6d} {100 * n / self.samples:5.1f}%  " + " < ".join(reversed(stack[-depth:])))
        return "\n".join(lines)
