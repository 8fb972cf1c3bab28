"""What a front end knows about the run, folded from the engine's events and snapshots: the console's panels render
from it and the headless log counts with it. No Textual here. Times are the front end's clock (epoch seconds); a
countdown keeps its deadline, never a counter. The lines both front ends print for an episode are here too, and a
campaign's lane line (the headless log's and `ctl status`'s)."""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import assert_never

from om2w_tui.engine import events
from om2w_tui.engine.events import ModelStats, Pacing, RunSnapshot, RunSummary
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.protocol.model import kind_counted
from om2w_tui.protocol.run_end import RunEnd

STEP_LINES_PER_TASK = 400
TASKS_WITH_STEPS = 64      # the step lines of this many recent tasks are kept, for the selected-slot view
RECORDS_KEPT = 2000        # the latest finished attempts kept (as many as the Episodes table shows)
ACTIVE_STATES = ("starting", "running", "paused")
ETA_EPISODES = 200         # the ETA's mean episode length is over the latest this many


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
    max_steps: int | None = None        # the running episode's step budget (its task's), as the engine said it
    model_error: str = ""               # the kind of its episode's last model call, when that call failed
    left_s: float | None = None         # its episode's expected seconds left, as the engine said at `left_at`
    left_at: float = 0.0                # (console clock)

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
    cooldown: float = 0.0               # its cooldown now (the run's, unless widened after a bot wall)
    work_s: float = 0.0                 # its queued units' expected seconds, as the engine last said


@dataclass
class RunState:
    name: str = ""
    total: int = 0
    settled_before: int = 0
    phase: str = "starting"             # starting | running | stopping | finished | failed | stopped
    end: RunEnd | None = None           # how the run ended (its RunFinished; the engine's failure), once it has
    paused: bool = False
    pause_reason: str = ""
    started_at: float | None = None     # console clock
    ended_at: float | None = None
    finished_here: int = 0              # attempts that settled their task in this run
    errors_here: int = 0
    # settled tasks with a reference verdict, and of those correct, as the engine counts them: over every settled task
    # of the run, those settled before a resume included (its events and snapshots say them; never folded here)
    judged: int = 0
    correct: int = 0
    pacing: Pacing | None = None        # how the run paces its sites (from the first snapshot)
    target_workers: int = 0             # the slots the run keeps (from the latest snapshot)
    errored: int = 0                    # tasks whose latest attempt is an error (what a retry would queue)
    reported: tuple[int, int] | None = None   # (done, errors) as the engine last counted them
    slots: dict[int, SlotView] = field(default_factory=dict)
    sites: dict[str, SiteView] = field(default_factory=dict)
    steps: OrderedDict[str, deque[str]] = field(default_factory=OrderedDict)
    records: deque[EpisodeRecord] = field(default_factory=lambda: deque(maxlen=RECORDS_KEPT))
    summary: RunSummary | None = None
    model: ModelStats | None = None     # the run's model, as the latest snapshot counted it
    held: int = 0                       # units left of a held arm, none running (its user's pause, its model guard)

    # ── events ─────────────────────────────────────────────
    def run_started(self, ev: events.RunStarted, now: float) -> None:
        self.total, self.settled_before, self.target_workers = ev.total, ev.settled, ev.workers
        # the run's own start: a console attached later counts from it too (a clock behind it, a test's: from now)
        self.started_at = ev.started_at if 0 < ev.started_at <= now else now
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
        s.max_steps, s.left_s = ev.max_steps, None
        s.model_error = ""
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

    def model_call(self, ev: events.EpisodeModelCall) -> None:
        s = self.slots.get(ev.slot)
        if s is not None and s.task_id == ev.task_id:
            s.model_error = "" if ev.kind == "ok" else ev.kind

    def episode_finished(self, ev: events.EpisodeFinished) -> None:
        rec = ev.record
        self.records.append(rec)
        if rec.settles:
            self.finished_here += 1
            self.errors_here += rec.status == "error"
        if ev.done is not None and ev.errors is not None:
            self.reported = (ev.done, ev.errors)
        self._verdicts(ev.judged, ev.correct)
        self.task_lines(rec.task_id).append(finish_line(rec))

    def _verdicts(self, judged: int | None, correct: int | None) -> None:
        """The engine's counts of verdicts, where it said them (None: an event that does not say them)."""
        if judged is not None:
            self.judged, self.correct = judged, correct or 0

    def episode_put_back(self, ev: events.EpisodePutBack) -> None:
        if ev.done is not None and ev.errors is not None:
            self.reported = (ev.done, ev.errors)
        self.task_lines(ev.task_id).append(f"= put back in the queue before it started ({ev.reason})")

    def dispatch_changed(self, ev: events.DispatchChanged) -> None:
        self.paused, self.pause_reason = ev.paused, ev.reason if ev.paused else ""

    def run_finished(self, ev: events.RunFinished, now: float) -> None:
        self.summary, self.end = ev.summary, ev.summary.end
        self._verdicts(ev.summary.judged or 0, ev.summary.correct)
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
    def apply_snapshot(self, snap: RunSnapshot, taken_at: float) -> None:
        """Take the engine's state as it was at `taken_at` (console clock); loop-clock deadlines become console ones."""
        self.pacing = snap.pacing
        self.target_workers, self.errored = snap.target_workers, snap.errors
        present = set()
        for row in snap.slots:
            present.add(row.slot)
            s = self.slots.setdefault(row.slot, SlotView(row.slot))
            s.state = row.state or "idle"
            if row.task_id != s.task_id:
                s.attempt = 0
            s.task_id = row.task_id
            if row.task_id:
                s.last_task = row.task_id
            s.site, s.level, s.step, s.started_at, s.max_steps = (row.site, row.level, row.step, row.started_at,
                                                                  row.max_steps)
            if row.attempt is not None:
                s.attempt = row.attempt
            s.model_error, s.left_s, s.left_at = row.model_error, row.left_s, taken_at
        for sid in list(self.slots):
            if sid not in present:
                del self.slots[sid]
        seen = set()
        for site in snap.sites:
            seen.add(site.site)
            v = self.sites.setdefault(site.site, SiteView(site.site))
            v.state = site.state
            v.ready_at = taken_at + (site.ready_at - snap.now)
            v.left, v.done, v.errors, v.total = site.left, site.done, site.errors, site.total
            v.running, v.limit, v.cooldown, v.work_s = site.running, site.limit, site.cooldown, site.work_s
        for name in list(self.sites):
            if name not in seen:
                del self.sites[name]
        if self.sites:
            self.reported = (sum(v.done for v in self.sites.values()), sum(v.errors for v in self.sites.values()))
        self.paused = snap.paused
        self.model = snap.model
        under_way = Counter(row.lane for row in snap.slots if row.task_id)
        self.held = sum(max(0, lane.total - lane.done - under_way[lane.name]) for lane in snap.lanes
                        if lane.paused or lane.guard)
        self._verdicts(snap.summary.judged or 0, snap.summary.correct)
        if snap.stopping and self.phase == "running":
            self.phase = "stopping"

    def apply(self, ev: events.Event, now: float) -> None:
        """Fold any event in (the headless log's way; the dashboard calls the methods above one by one)."""
        match ev:
            case events.RunStarted():
                self.run_started(ev, now)
            case events.SlotChanged():
                self.slot_changed(ev)
            case events.EpisodeStarted():
                self.episode_started(ev)
            case events.EpisodeStep():
                self.step(ev)
            case events.EpisodeModelCall():
                self.model_call(ev)
            case events.EpisodeFinished():
                self.episode_finished(ev)
            case events.EpisodePutBack():
                self.episode_put_back(ev)
            case events.DispatchChanged():
                self.dispatch_changed(ev)
            case events.RunFinished():
                self.run_finished(ev, now)
            case events.Log():
                pass   # what the run says is shown, never counted
            case _:
                assert_never(ev)

    # ── what the header shows ──────────────────────────────
    @property
    def done(self) -> int:
        """Tasks of the run's selection settled (resumed ones included), as the engine counts them."""
        return self.reported[0] if self.reported is not None else self.settled_before + self.finished_here

    @property
    def finished_this_run(self) -> int:
        """Tasks this run settled: what its rate and ETA count (an attached console saw only some of them finish)."""
        return max(self.finished_here, self.done - self.settled_before)

    @property
    def errors(self) -> int:
        return self.reported[1] if self.reported is not None else self.errors_here

    @property
    def running(self) -> int:
        return sum(1 for s in self.slots.values() if s.busy)

    def waits(self) -> str:
        """What the run's end waits on rather than its work, the word the ETA says instead of a time: `held` while a
        held arm has units left (they start only once it is resumed), `paused` while dispatch is paused with tasks
        still to start; "" when the ETA counts."""
        if self.held:
            return "held"
        if self.paused and self.total - self.done > self.running:
            return "paused"
        return ""

    def eta(self, now: float) -> float | None:
        """Seconds until the run's last task settles, as its pacing allows: the longer of the work left spread over
        the slots and the longest chain of one site (its tasks `limit` at a time, each followed by the site's
        cooldown); None before the first episode finished. The work left is the engine's expected lengths where its
        snapshots said them (each task's reference length at the seconds per unit learnt: the longest tasks go
        first, so the mean of those done so far overstates what is left; bench/eta.py), else the mean length of
        the episodes seen."""
        left = max(0, self.total - self.done)
        if left == 0:
            return 0.0
        lengths = [r.duration_s for r in list(self.records)[-ETA_EPISODES:] if r.duration_s > 0]
        busy = [s for s in self.slots.values() if s.busy]
        said = any(v.work_s > 0 for v in self.sites.values())   # the engine's expected lengths (a snapshot's)
        if not lengths and not said:
            return None
        # the mean of the episodes seen; a console attached after they ended has the engine's word only
        mean = (sum(lengths) / len(lengths) if lengths else
                sum(v.work_s for v in self.sites.values()) / max(1, left - len(busy)))
        rest = {s.slot: max(0.0, s.left_s - (now - s.left_at)) if s.left_s is not None else
                max(0.0, mean - (now - s.started_at)) if s.started_at else mean for s in busy}
        queued = sum(v.work_s for v in self.sites.values()) if said else max(0, left - len(busy)) * mean
        slots = max(1, self.target_workers, len(busy))
        longest = list_schedule(sorted(rest.values()), slots, max(0, left - len(busy)), queued)
        for v in self.sites.values():
            here = [rest[s.slot] for s in busy if s.site == v.site]
            if not v.left or not v.limit:   # nothing queued, or no limit: only the work spread over the slots
                longest = max(longest, max(here, default=0.0))
                continue
            # its next start: when the first episode under way ends and cools down (all seats taken), else its cooldown
            start = min(here) + v.cooldown if len(here) >= v.limit else max(0.0, v.ready_at - now)
            rounds = -(-v.left // v.limit)
            work = v.work_s / v.limit if said and v.work_s > 0 else rounds * mean
            longest = max(longest, start + work + (rounds - 1) * v.cooldown)
        return longest

    def elapsed(self, now: float) -> float:
        if self.started_at is None:
            return 0.0
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


def list_schedule(rest: list[float], slots: int, n: int, work: float) -> float:
    """When `n` tasks of `work` seconds in all (as long each) end, each taken by the first slot to come free; the
    slots come free after `rest` (the episodes under way, any more slots free now): the work spread over the slots
    and the last round's stagger, which a plain share of the work leaves out."""
    free = sorted(rest)[-slots:] if len(rest) >= slots else [0.0] * (slots - len(rest)) + sorted(rest)
    if n <= 0:
        return max(free, default=0.0)
    each = work / n
    heapq.heapify(free)
    for _ in range(n):
        heapq.heappush(free, heapq.heappop(free) + each)
    return max(free)


def status_text(rec: EpisodeRecord) -> str:
    """`timeout`, or `error (why)`: the status, and the error when it says more."""
    return rec.status + (f" ({rec.error})" if rec.error and rec.error != rec.status else "")


def verdict_text(rec: EpisodeRecord) -> str:
    """`correct` or `wrong`: the reference verdict of an attempt that settles its task; "" for one without a verdict,
    or one that does not settle (stopped under a kill or stop, or failed by the harness: it runs again)."""
    if rec.correct is None or not rec.settles:
        return ""
    return "correct" if rec.correct else "wrong"


def finish_line(rec: EpisodeRecord) -> str:
    """An episode's last line in the steps log."""
    verdict = verdict_text(rec)
    return f"= {status_text(rec)} after {rec.steps} steps, {rec.duration_s:.0f}s{', ' + verdict if verdict else ''}"


def episode_line(slot: int, rec: EpisodeRecord) -> str:
    """An episode's line in the headless log (with its model calls when some failed or were mended)."""
    verdict = verdict_text(rec)
    model = model_text(rec.model_calls)
    return (f"[slot {slot}] {rec.task_id}  {rec.level or '-'}  {rec.steps} steps  {rec.duration_s:.1f}s  "
            f"{status_text(rec)}{'  ' + verdict if verdict else ''}{'  model: ' + model if model else ''}")


def lane_line(lane: events.LaneRow, results: bool = False) -> str:
    """A campaign's lane as the headless log and `ctl status` say it: `lane agent-r2 (arm agent, repeat 2): 6/8 done
    (2 before), 1 errors, correct 4 of 6, held` (its counts over every settled unit, those of a run before
    included), with `; results: FOLDER` when `results`."""
    judged = f", correct {lane.correct} of {lane.judged}" if lane.judged else ""
    held = (", held" if lane.paused else "") + (f", model guard: {lane.guard}" if lane.guard else "")
    folder = f"; results: {lane.out or lane.name}" if results else ""
    return (f"lane {lane.name} (arm {lane.arm}, repeat {lane.repeat}): {lane.done}/{lane.total} done "
            f"({lane.settled_before} before), {lane.errors} errors{judged}{held}{folder}")


def counted(by_kind: dict[str, int]) -> str:
    """`context length 9, unparseable replies 3`: counts by call kind, most first."""
    return ", ".join(f"{kind_counted(k)} {n}" for k, n in sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0])))


def model_text(calls: dict[str, object] | None) -> str:
    """An episode's model calls in a few words when any failed or was mended ("" when all simply answered)."""
    if not calls:
        return ""
    failures = calls.get("failures")
    failed = {str(k): int(v) for k, v in failures.items() if isinstance(v, int)} if isinstance(failures, dict) \
        else {}
    mended = calls.get("thinking_stripped")
    if not failed and not mended:
        return ""
    parts = [f"{sum(failed.values())} of {calls.get('calls', '?')} calls failed ({counted(failed)})"] if failed else []
    if isinstance(mended, int) and mended:
        parts.append(f"{mended} <think> blocks split off")
    return "; ".join(parts)


def model_summary(summary: RunSummary) -> list[str]:
    """The headless summary's lines about the model: calls by kind, and the episodes that ended on it."""
    lines = []
    calls = summary.model_calls
    if calls:
        failed = {k: n for k, n in calls.items() if k != "ok"}
        total = sum(calls.values())
        failures = f", {counted(failed)}" if failed else ""
        lines.append(f"model: {total} calls, {calls.get('ok', 0)} answered{failures}")
    if summary.model_ended:
        n = sum(summary.model_ended.values())
        lines.append(f"model: {n} episode{'s' if n != 1 else ''} ended on model errors: {counted(summary.model_ended)}")
    return lines
