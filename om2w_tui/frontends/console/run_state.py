"""What the dashboard knows about the run, folded from engine events and snapshots; the panels render from it.
No Textual here. Times are the console clock's (epoch seconds); a countdown keeps its deadline, never a counter."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from om2w_tui.engine import events
from om2w_tui.engine.results import settles

STEP_LINES_PER_TASK = 400
TASKS_WITH_STEPS = 64      # the step lines of this many recent tasks are kept, for the selected-slot view
RECORDS_KEPT = 2000        # the latest finished attempts kept (as many as the Episodes table shows)
ACTIVE_STATES = ("starting", "running", "paused")


@dataclass
class SlotView:
    slot: int
    state: str = "idle"
    task_id: str | None = None
    site: str | None = None
    level: str | None = None
    attempt: int = 0
    step: int = 0
    started_at: float | None = None     # epoch seconds (the engine's record time)
    last_task: str | None = None        # the task it ran last, for the episode view and the steps of an idle slot
    max_steps: int | None = None        # the running episode's step budget, when the engine said it

    @property
    def busy(self) -> bool:
        return self.task_id is not None and self.state in (*ACTIVE_STATES, "stopping")


@dataclass
class SiteView:
    site: str
    state: str = "free"
    ready_at: float = 0.0               # console-clock deadline of its cooldown
    left: int = 0
    done: int = 0
    errors: int = 0
    total: int = 0
    running: int = 0
    limit: int = 1                      # episodes at once allowed on the site (0: no limit)


@dataclass
class RunState:
    name: str = ""
    total: int = 0
    settled_before: int = 0
    max_steps: int = 0
    workers: int = 0
    phase: str = "starting"             # starting | running | stopping | finished | failed
    paused: bool = False
    pause_reason: str = ""
    started_at: float | None = None     # console clock
    ended_at: float | None = None
    finished_here: int = 0              # attempts that settled their task in this run
    errors_here: int = 0
    correct: int = 0
    judged: int = 0
    sites_seen: bool = False
    pacing: dict[str, Any] = field(default_factory=dict)   # per_site, cooldown: how the run paces its sites
    slots: dict[int, SlotView] = field(default_factory=dict)
    sites: dict[str, SiteView] = field(default_factory=dict)
    steps: OrderedDict[str, deque[str]] = field(default_factory=OrderedDict)
    records: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECORDS_KEPT))
    summary: dict[str, Any] = field(default_factory=dict)

    # ── events ─────────────────────────────────────────────
    def run_started(self, ev: events.RunStarted, now: float) -> None:
        self.total, self.settled_before, self.workers = ev.total, ev.settled, ev.workers
        self.started_at = now
        self.phase = "running"

    def slot_changed(self, ev: events.SlotChanged) -> None:
        if ev.state == "retired":
            self.slots.pop(ev.slot, None)
            return
        s = self.slots.setdefault(ev.slot, SlotView(ev.slot))
        s.state = ev.state
        if ev.state == "idle":
            s.task_id = s.site = s.level = None
            s.step, s.started_at = 0, None
        elif ev.task_id:
            s.task_id = s.last_task = ev.task_id

    def episode_started(self, ev: events.EpisodeStarted) -> None:
        s = self.slots.setdefault(ev.slot, SlotView(ev.slot))
        s.task_id = s.last_task = ev.task_id
        s.site, s.level, s.attempt, s.step, s.started_at = ev.site, ev.level, ev.attempt, 0, ev.started_at
        s.max_steps = ev.max_steps
        if s.state == "idle":
            s.state = "starting"
        self.task_lines(ev.task_id).clear()

    def step(self, ev: events.EpisodeStep) -> list[str]:
        """Record a step; -> its lines for the steps log (without the slot prefix)."""
        s = self.slots.get(ev.slot)
        if s is not None and s.task_id == ev.task_id:
            s.step = ev.step
        lines = [f"#{ev.step} {ev.url}".rstrip()] + [f"    {a}" for a in ev.actions]
        self.task_lines(ev.task_id).extend(lines)
        return lines

    def episode_finished(self, ev: events.EpisodeFinished) -> None:
        rec = ev.record
        self.records.append(rec)
        if settles(rec):
            self.finished_here += 1
            self.errors_here += rec.get("status") == "error"
            if "correct" in rec:     # an attempt that runs again is judged when it is over
                self.judged += 1
                self.correct += bool(rec["correct"])
        self.task_lines(rec["task_id"]).append(finish_line(rec))

    def dispatch_changed(self, ev: events.DispatchChanged) -> None:
        self.paused, self.pause_reason = ev.paused, ev.reason if ev.paused else ""

    def run_finished(self, ev: events.RunFinished, now: float) -> None:
        self.summary = dict(ev.summary)
        self.phase = "finished"
        self.ended_at = now
        for s in self.slots.values():
            s.state, s.task_id, s.started_at = "idle", None, None

    def task_lines(self, task_id: str) -> deque[str]:
        lines = self.steps.get(task_id)
        if lines is None:
            lines = self.steps[task_id] = deque(maxlen=STEP_LINES_PER_TASK)
            while len(self.steps) > TASKS_WITH_STEPS:
                self.steps.popitem(last=False)
        else:
            self.steps.move_to_end(task_id)
        return lines

    # ── snapshot ───────────────────────────────────────────
    def apply_snapshot(self, snap: dict[str, Any], taken_at: float) -> None:
        """Take the engine's state as it was at `taken_at` (console clock); loop-clock deadlines become console ones."""
        loop_now = float(snap.get("now", 0.0))
        self.pacing = dict(snap.get("pacing") or {})
        present = set()
        for row in snap.get("slots", []):
            sid = int(row["slot"])
            present.add(sid)
            s = self.slots.setdefault(sid, SlotView(sid))
            s.state = row.get("state") or "idle"
            tid = row.get("task_id")
            if tid != s.task_id:
                s.attempt = 0
            s.task_id = tid
            if tid:
                s.last_task = tid
            s.site, s.level = row.get("site"), row.get("level")
            s.step = int(row.get("step") or 0)
            s.started_at = row.get("started_at")
            s.max_steps = row.get("max_steps")
        for sid in list(self.slots):
            if sid not in present:
                del self.slots[sid]
        seen = set()
        for row in snap.get("sites", []):
            name = row["site"]
            seen.add(name)
            v = self.sites.setdefault(name, SiteView(name))
            v.state = row.get("state", "free")
            v.ready_at = taken_at + (float(row.get("ready_at") or 0.0) - loop_now)
            v.left, v.done, v.errors, v.total = (int(row.get(k) or 0) for k in ("left", "done", "errors", "total"))
            v.running, v.limit = int(row.get("running") or 0), int(row.get("limit", 1))
        for name in list(self.sites):
            if name not in seen:
                del self.sites[name]
        self.sites_seen = True
        self.paused = bool(snap.get("paused", self.paused))
        if snap.get("stopping") and self.phase == "running":
            self.phase = "stopping"

    # ── what the header shows ──────────────────────────────
    @property
    def done(self) -> int:
        if self.sites_seen and self.sites:
            return sum(v.done for v in self.sites.values())
        return self.settled_before + self.finished_here

    @property
    def errors(self) -> int:
        if self.sites_seen and self.sites:
            return sum(v.errors for v in self.sites.values())
        return self.errors_here

    @property
    def running(self) -> int:
        return sum(1 for s in self.slots.values() if s.busy)

    def elapsed(self, now: float) -> float:
        if self.started_at is None:
            return 0.0
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


def finish_line(rec: dict[str, Any]) -> str:
    verdict = ""
    if "correct" in rec:
        verdict = ", correct" if rec["correct"] else ", wrong"
    why = f" ({rec['error']})" if rec.get("error") and rec.get("error") != rec.get("status") else ""
    return f"= {rec.get('status')}{why} after {rec.get('steps', 0)} steps, {rec.get('duration_s', 0):.0f}s{verdict}"
