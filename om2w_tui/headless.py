"""The --no-ui front end: a line per finished episode, a progress line, a summary; Ctrl-C or SIGTERM stops the run
gracefully (running episodes end keeping their steps and run again next time), a second Ctrl-C ends them at once."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import IO, Any

from .events import DispatchChanged, EpisodeFinished, Log, RunFinished, RunStarted
from .launch import Preflight, open_run


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}" if h else f"{rem // 60}:{rem % 60:02d}"


def episode_line(slot: int, rec: dict[str, Any]) -> str:
    verdict = ""
    if "correct" in rec:
        verdict = "  correct" if rec["correct"] else "  wrong"
    status = rec["status"] + (f" ({rec['error']})" if rec.get("error") and rec["error"] != rec["status"] else "")
    return (f"[slot {slot}] {rec['task_id']}  {rec.get('level') or '-'}  {rec['steps']} steps  "
            f"{rec['duration_s']:.1f}s  {status}{verdict}")


class HeadlessLog:
    """A sink that prints plain lines (cluster logs are files, not terminals)."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stdout
        self.total = self.settled = self.finished = self.errors = 0
        self.t0 = time.monotonic()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def handle(self, ev: object) -> None:
        if isinstance(ev, RunStarted):
            self.total, self.settled = ev.total, ev.settled
            resume = f", resuming: {ev.settled} of {ev.total} already done" if ev.settled else ""
            self._print(f"run: {ev.total} tasks, {ev.workers} workers, out {ev.out}{resume}")
        elif isinstance(ev, EpisodeFinished):
            if ev.done is not None and ev.errors is not None:   # the scheduler's count: retries and resumes included
                done, self.errors = ev.done, ev.errors
            else:
                if not ev.requeued:
                    self.finished += 1
                    self.errors += ev.record["status"] == "error"
                done = self.settled + self.finished
            self._print(episode_line(ev.slot, ev.record) + ("  (will run again)" if ev.requeued else ""))
            self._print(f"progress: {done}/{self.total} done, {self.errors} errors, "
                        f"elapsed {_clock(time.monotonic() - self.t0)}")
        elif isinstance(ev, DispatchChanged):
            self._print(f"dispatch {'paused' if ev.paused else 'resumed'}{': ' + ev.reason if ev.reason else ''}")
        elif isinstance(ev, Log) and ev.level in ("warning", "error"):
            self._print(f"{ev.level}: {ev.message}")
        elif isinstance(ev, RunFinished):
            s = ev.summary
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(s.get("by_status", {}).items())) or "nothing run"
            self._print(f"summary: {s['finished']} episodes this run ({statuses}); "
                        f"{s['settled_before']} done before; {s['pending']} left; {_clock(s['elapsed_s'])}")
            if "correct" in s:
                self._print(f"correct: {s['correct']} of {s['judged']} (reference judge)")
            self._print(f"results: {s.get('results') or s['out'] + '/results.jsonl'}")
            if s.get("unwritten"):
                self._print(f"error: {s['unwritten']} record(s) could not be written to {s.get('results') or s['out']} "
                            f"(listed above); those tasks run again next time")


async def run_headless(pre: Preflight, stream: IO[str] | None = None) -> int:
    sink = HeadlessLog(stream)
    async with open_run(pre, [sink]) as scheduler:
        loop = asyncio.get_running_loop()
        interrupts = 0

        def interrupt() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts == 1:
                sink._print("stopping: running episodes end keeping their steps (Ctrl-C again to end them now)")
                scheduler.stop()
            else:
                scheduler.stop(force=True)

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupt)
        try:
            await scheduler.run()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    if scheduler.stats.unwritten:   # records lost to a full disk: the run did not keep its word
        return 1
    # an episode's error is a result, not a failure of the run
    return 130 if interrupts else 0
