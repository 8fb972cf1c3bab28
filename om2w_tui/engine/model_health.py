"""The run's model, watched from the scheduler: `ModelMeter` keeps the statistics every front end shows (calls,
failures by kind, calls a minute, latency p50/p95, tokens a second, the last error, which slots' last call
failed), from the `ModelCall` events the workers send; `ModelGuard` stops dispatch when episodes keep ending on the
same model failure: a server that answers, but wrongly for this harness (its context too short for the agent's
prompt, no image input, no JSON schema followed, replies cut at max tokens) fails every episode the same way, and a
user learns it in minutes instead of from a judge that scores every episode 0 hours later.

The guard is not the circuit breaker (engine/guards.py): an endpoint that is down comes back by itself, so the
breaker probes it and resumes; a model that answers wrongly does not, so the guard holds dispatch until the user
resumes (`p`, `ctl resume`) or, headless, lets the running episodes finish and ends the run with its own exit code,
the message saying what to change. Its episodes stay recorded as the model's failures (settled), as they are."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable

from om2w_tui.engine.events import DispatchChanged, Event, Log, ModelStats
from om2w_tui.protocol.model import describe, kind_counted, kind_label, remedy
from om2w_tui.protocol.worker import ModelCall

WINDOW_S = 60.0          # calls a minute and tokens a second are counted over this much of the last time
LATENCIES = 200          # the latency percentiles are over this many of the last calls


class ModelMeter:
    def __init__(self) -> None:
        self.calls = 0
        self.ok = 0
        self.failures: dict[str, int] = {}
        self.ended_on: dict[str, int] = {}
        self.thinking_stripped = 0
        self.last_error = ""
        self._recent: deque[tuple[float, int, int]] = deque()   # (loop time, prompt tokens, completion tokens)
        self._latencies: deque[float] = deque(maxlen=LATENCIES)
        self._slot_error: dict[int, str] = {}

    def call(self, now: float, slot: int, call: ModelCall) -> str | None:
        """Count one call; -> its kind when it is the run's first call of that failure kind (worth a line)."""
        self.calls += 1
        self._recent.append((now, call.prompt_tokens, call.completion_tokens))
        self._latencies.append(call.latency_s)
        self._trim(now)
        if call.kind == "ok":
            self.ok += 1
            self._slot_error.pop(slot, None)
            return None
        first = call.kind not in self.failures
        self.failures[call.kind] = self.failures.get(call.kind, 0) + 1
        self._slot_error[slot] = call.kind
        if call.message:
            self.last_error = f"{call.kind}: {call.message}"
        return call.kind if first else None

    def episode_ended(self, slot: int, ended_on: str | None, thinking_stripped: int) -> None:
        """An episode on `slot` ended (`ended_on`: the model failure kind it ended on, if it did)."""
        self._slot_error.pop(slot, None)
        self.thinking_stripped += thinking_stripped
        if ended_on:
            self.ended_on[ended_on] = self.ended_on.get(ended_on, 0) + 1

    def slot_error(self, slot: int) -> str:
        return self._slot_error.get(slot, "")

    def _trim(self, now: float) -> None:
        while self._recent and self._recent[0][0] < now - WINDOW_S:
            self._recent.popleft()

    def stats(self, now: float, guard: str = "") -> ModelStats:
        self._trim(now)
        lat = sorted(self._latencies)
        p50 = statistics.median(lat) if lat else None
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))] if lat else None
        prompt = sum(p for _, p, _ in self._recent)
        completion = sum(c for _, _, c in self._recent)
        return ModelStats(calls=self.calls, ok=self.ok, failures=dict(self.failures), ended_on=dict(self.ended_on),
                          calls_per_min=round(len(self._recent) * 60.0 / WINDOW_S, 1),
                          latency_p50_s=None if p50 is None else round(p50, 3),
                          latency_p95_s=None if p95 is None else round(p95, 3),
                          tokens_in_per_s=round(prompt / WINDOW_S, 1),
                          tokens_out_per_s=round(completion / WINDOW_S, 1),
                          thinking_stripped=self.thinking_stripped, last_error=self.last_error, guard=guard)


class ModelGuard:
    """`after` episodes in a row that end on the same model failure kind hold dispatch (0: never). An attempt that
    failed through the harness (infra, endpoint, storage) or was stopped by its user says nothing of the model and
    leaves the count as it is; any other settled attempt resets it."""

    def __init__(self, after: int, emit: Callable[[Event], None], lane: str = ""):
        self.after = after
        self.emit = emit
        self.lane = lane              # a campaign's lane it watches: it holds that lane's units only ("" the run's)
        self.kind: str | None = None
        self.in_a_row = 0
        self.message = ""
        self.reason = ""              # "" while it does not hold dispatch

    @property
    def holding(self) -> bool:
        return bool(self.reason)

    def note(self, kind: str | None, message: str = "") -> bool:
        """Count a settled attempt that said something of the model (`kind`: the failure it ended on, None: it did
        not end on one); True when the guard should hold dispatch now (`trip`)."""
        if kind is None or kind != self.kind:
            self.kind, self.in_a_row, self.message = kind, 0, ""
        if kind is None:
            return False
        self.in_a_row += 1
        self.message = self.message or message
        return self.after > 0 and self.in_a_row >= self.after and not self.holding

    def trip(self, ends_run: bool) -> None:
        kind = self.kind or "unknown"
        words = describe(kind, self.message) if self.message else kind_label(kind)
        self.reason = (f"{self.in_a_row} episodes in a row ended on the model: {words.rstrip('. ')}. Remedy: "
                       f"{remedy(kind, self.message) or 'see the server log'}")
        if self.lane:   # one arm's model: its units wait, the other arms go on
            then = ("the other arms go on; once only its units are left the campaign ends" if ends_run else
                    f"the other arms go on; ctl resume --arm {self.lane} to go on")
            self.emit(Log("error", f"model guard, arm {self.lane}: {self.reason} (its units are held; {then})"))
            return
        then = ("the running episodes finish, then the run ends; the next launch resumes" if ends_run else
                "press p (or ctl resume) to go on; r runs the errored tasks again")
        self.emit(DispatchChanged(True, f"model guard: {self.in_a_row} episodes in a row ended on "
                                        f"{kind_counted(kind)}"))
        self.emit(Log("error", f"model guard: {self.reason} ({then})"))

    def clear(self) -> None:
        """The user resumed: go on, counting afresh."""
        self.reason, self.kind, self.in_a_row, self.message = "", None, 0, ""
