"""The run's scheduler: one global queue, N slots, per-site pacing, per-episode timeouts, resume, live control.

It is event-driven: a slot is filled the moment an episode ends, a site's cooldown expires or a command arrives,
never by polling. Among the sites it may start, it takes the one with the longest chain of work left (its tasks'
expected lengths and the cooldowns between them: the busiest site's chain bounds the run's length), and on a site
the longest task first (the run's tail is set by long episodes started late). All time goes through the event
loop's clock, so tests run cooldowns and timeouts in virtual time. It writes `results.jsonl` alone and reports to
sinks; it knows no front end. Its parts: the queue and the choice of the next site are `engine/dispatch.py`'s, the
circuit breaker and the storage guard `engine/guards.py`'s, the model's statistics and guard
`engine/model_health.py`'s, an attempt's life (its worker's events, timeout, pause, stop) `engine/attempt.py`'s,
building and classifying a record `engine/records.py`'s, writing it `engine/record_writer.py`'s, a slot and its
worker `engine/slot.py`'s, what front ends see (the summary, the snapshot) `engine/snapshot.py`'s; this module keeps
where each task is, the slots' use, settling an attempt and the run's controls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.site_keys import site_name
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.attempt import Attempt
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import Interrupt
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodePutBack,
    EpisodeStarted,
    Event,
    Log,
    RunFinished,
    RunSnapshot,
    RunStarted,
    RunSummary,
    Sink,
    SlotChanged,
)
from om2w_tui.engine.guards import Breaker, Probe, StorageGuard
from om2w_tui.engine.lanes import Lane, LaneSet
from om2w_tui.engine.ledger import Ledger
from om2w_tui.engine.machine import Room
from om2w_tui.engine.model_health import ModelGuard, ModelMeter
from om2w_tui.engine.record_writer import RecordWriter, space_ok
from om2w_tui.engine.records import (
    Judge as Judge,  # re-exported: launch builds the run with it
)
from om2w_tui.engine.records import (
    build_record,
    endpoint_fault,
    judged,
    retried_fault,
    storage_fault,
)
from om2w_tui.engine.results import (
    INTERRUPTED,
    REQUEUED,
    EpisodeRecord,
    ResultsStore,
)
from om2w_tui.engine.settings import clamp_workers
from om2w_tui.engine.shared_pacing import make_pacer
from om2w_tui.engine.slot import Slot, resize
from om2w_tui.engine.snapshot import RunStats, run_snapshot, run_summary
from om2w_tui.executors.base import Executor
from om2w_tui.protocol.worker import ModelCall, Outcome, WorkerSpec
from om2w_tui.run_folder import RunFolder

USER_KILL_GRACE_S = 5.0
FREE_RESTARTS = 3                 # an episode whose worker vanished before taking it is put back this often for free


class Scheduler:
    """The run. Every task is in exactly one place at a time: the queue, a slot, or settled (its record written or
    waiting to be). `_settle` is the only way out of a slot, and it runs whatever the episode raised."""

    def __init__(self, config: RunConfig, tasks: list[Task], executor: Executor, sinks: Iterable[Sink] = (),
                 judge: Judge | None = None, endpoint: str | None = None, probe: Probe | None = None,
                 guard_ends_run: bool = False, site_names: Mapping[str, str] | None = None,
                 slot_room: Callable[[], Room | None] | None = None, lanes: Sequence[Lane] = ()):
        """`lanes`: a campaign's (engine/lanes.py), one unit per lane and task; `config` is then its shared settings."""
        self.cfg = config
        self.guard_ends_run = guard_ends_run
        self.model = ModelMeter()           # the run's model calls, every lane's
        # a run without a screen (headless) ends when the model guard holds dispatch; a console waits for its user
        self.model_guard = ModelGuard(config.model_guard if not lanes else 0, self.emit)
        self.lanes = LaneSet.build(lanes, config, tasks, self._writer, self.model, self.model_guard, self.emit)
        self.tasks = [u for lane in self.lanes.all for u in lane.tasks]
        # site key -> the name people read (`site_name`, as the report names it: the offline suite's 127.0.0.1:PORT,
        # given in `site_names`, is `shop`); what front ends are shown, never what paces
        self.site_names = {t.site: site_name(t.website, site_names) for t in self.tasks}
        self.executor = executor
        self.sinks = list(sinks)
        self.judge = judge
        self.endpoint = endpoint            # the model endpoint the workers use (the oracle's, when it is served here)
        self.out = Path(config.out)
        self.folder = RunFolder(self.out, config.shard)   # the run's (a campaign's: its storage probe's)
        first = self.lanes.all[0]
        self.store, self.records = first.store, first.records   # a plain run's results.jsonl and its one writer
        self.pacer = make_pacer(config.pace_dir, config.pace_cooldown, config.site_slots, self.tasks,
                                note=lambda message: self.emit(Log("warning", message)))
        self.dispatch = Dispatcher(self.pacer, self.tasks, self.cfg.pair_hold)   # the queue, which site starts next
        self.queue = self.dispatch.queue
        self.slots: dict[int, Slot] = {}
        self.target_workers = max(1, int(config.workers))
        self.slot_room = slot_room          # how many more slots the machine holds now (engine/machine.py)
        self.user_paused = False
        self.breaker = Breaker(config.breaker_after, config.probe_interval, probe, self)
        # the out folder's guard (`self._space_ok` is looked up at each probe: tests replace it)
        self.storage = StorageGuard(config.probe_interval, self, lambda: self._space_ok(), self.lanes.write_kept,
                                    self.lanes.unwritten)
        self.ledger = Ledger()              # where each task is (queued, running, settled), and its counts
        self.stopping = False
        self.stats = RunStats()
        self.started_mono = 0.0
        self._epoch_offset = 0.0
        self._wake: asyncio.Event | None = None
        self._cooldown_timer: asyncio.TimerHandle | None = None
        self._ended = False
        self.over = False                   # ended and wound down: its summary says how it ended
        self._background: set[asyncio.Task[Any]] = set()   # every task the scheduler starts, awaited at the end

    # ── sinks ──────────────────────────────────────────────
    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            try:
                sink.handle(event)
            except Exception as e:   # a broken front end must not stop the run
                if not isinstance(event, Log):
                    self.emit(Log("error", f"a sink failed on {type(event).__name__}: {e}"))

    # ── the run ────────────────────────────────────────────
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    @property
    def closing(self) -> bool:
        """Stopping, or ended: no control adds work and no guard starts a probe."""
        return self.stopping or self._ended

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """A background task the scheduler owns: kept referenced, and awaited before the run ends."""
        t = asyncio.ensure_future(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)
        t.add_done_callback(lambda t: t.cancelled() or t.exception())
        return t

    def _writer(self, store: ResultsStore) -> RecordWriter:
        """A results.jsonl's one writer; a record the folder will not take trips the storage guard."""
        return RecordWriter(store, self, lambda problem: self.storage.fault(problem), lambda: bool(self.storage_error))

    def _load_queue(self) -> None:
        """Each lane resumes from its own folder; what is left is queued in the lanes' order (engine/lanes.py)."""
        for t in self.lanes.resume(self.ledger, lambda w: self.emit(Log("warning", w)), self.dispatch.task_units):
            self._enqueue(t)
        self.dispatch.sort_sites()
        self.stats.settled_before = len(self.ledger.settled_before)
        self.stats.total = len(self.tasks)

    async def run(self) -> RunStats:
        self._wake = asyncio.Event()
        self.started_mono = self.loop.time()
        self._epoch_offset = time.time() - self.started_mono
        for folder in {self.out, *(lane.out for lane in self.lanes.all)}:
            folder.mkdir(parents=True, exist_ok=True)
        self._load_queue()
        self.emit(RunStarted(self.stats.total, self.stats.settled_before, self.target_workers, str(self.out),
                             self.epoch()))
        for i in range(self.target_workers if self.pending() else 0):
            self._add_slot(i, start_worker=i < self.pending())
        try:
            while True:
                self._dispatch()
                if self._over():
                    break
                await self._wake.wait()
                self._wake.clear()
        finally:
            self._ended = True   # from here no control adds work or slots: the run is closing
            if self._cooldown_timer:
                self._cooldown_timer.cancel()
            await self._end_all()
        self.stats.unwritten = self.lanes.unwritten()
        for line in self.lanes.last_word():
            self.emit(Log("error", line))
        self.over = True
        self.emit(RunFinished(self.summary()))
        return self.stats

    def _over(self) -> bool:
        """The run ends when nothing runs and nothing is left to start (or it is stopping, or its model guard ends
        it), and every record is on disk; while the out folder is full it waits for space, unless it is stopped."""
        winding_down = self.stopping or (self.model_guard.holding and self.guard_ends_run)
        if self.running() or (self.dispatch.pending and not winding_down) or (
                self.lanes.waiting(self.guard_ends_run) and not self.stopping):
            return False
        if self.lanes.busy:
            return False
        return not self.lanes.unwritten() or self.stopping

    def epoch(self) -> float:
        """Wall-clock seconds for records, read off the loop's clock so that records and pacing agree."""
        return self.loop.time() + self._epoch_offset

    # the guards' state, as front ends and tests read it
    @property
    def breaker_open(self) -> bool:
        return self.breaker.open

    @property
    def breaker_reason(self) -> str:
        return self.breaker.reason

    @property
    def streak(self) -> list[Task]:
        return self.breaker.streak

    @property
    def storage_error(self) -> str:
        """What the out folder cannot take ("" while it can): dispatch waits until it can."""
        return self.storage.error

    @property
    def dispatch_paused(self) -> bool:
        return self.user_paused or self.breaker_open or bool(self.storage_error) or self.model_guard.holding

    def pending(self) -> int:
        return self.dispatch.pending + self.lanes.parked()   # held ones beside the queue too

    def running(self) -> list[Attempt]:
        return [s.episode for s in self.slots.values() if s.episode is not None]

    # ── where a task is: queued, running, settled (engine/ledger.py) ──
    def _enqueue(self, task: Task, front: bool = False) -> bool:
        """Queue a task that is neither queued, running nor settled; False (and nothing done) otherwise."""
        if not self.ledger.queue(task):
            return False
        lane = self.lanes.of(task)
        if lane.held and self.lanes.campaign:   # a plain run's guard holds the whole dispatch instead
            self.dispatch.place(task)
            lane.parked.append(task)
        else:
            self.dispatch.push(task, front)
        return True

    def _unsettle(self, task: Task) -> None:
        """A settled task goes back to being work: its counts (this run's, or a run before's) are given back."""
        before = task.key in self.ledger.settled_before
        if self.ledger.unsettle(task) and before:
            self.stats.settled_before -= 1

    def done_count(self) -> tuple[int, int]:
        """(tasks settled, of which errors) over the run's selection: the sums of the sites' counts, kept as they
        change (said with every finished episode: a sum over the sites each time costs ~1 ms at 1,000 sites)."""
        return self.ledger.done, self.ledger.errors

    # ── slots and their workers ────────────────────────────
    def _add_slot(self, i: int, start_worker: bool = True) -> Slot:
        slot = self.slots[i] = Slot(i, self.executor)
        if start_worker:   # a slot with nothing to do yet starts its worker on its first episode
            slot.ensure_worker()
        self.emit(SlotChanged(i, "idle"))
        return slot

    # ── dispatch (the policy is engine/dispatch.py's) ─────
    def _free_and_active(self) -> tuple[int, int]:
        free = sum(1 for s in self.slots.values() if s.episode is None and not s.retired)
        return free, sum(1 for s in self.slots.values() if not s.retired)

    def _pick_site(self, now: float) -> str | None:
        """Of the sites that may start now, the one with the longest chain left; None to keep the last free slot for a
        cooling site whose chain sets the run's length (`Dispatcher.pick`, `Dispatcher.keep_slot_for`)."""
        return self.dispatch.pick(now, self._free_and_active)

    def _dispatch(self) -> None:
        if self._cooldown_timer:
            self._cooldown_timer.cancel()
            self._cooldown_timer = None
        if self.stopping or self.dispatch_paused:
            return
        now = self.loop.time()
        free = sorted((s for s in self.slots.values() if s.episode is None and not s.retired), key=lambda s: s.id)
        for slot in free:
            site = self._pick_site(now)
            if site is None:
                break
            self._start(slot, self.dispatch.take(site), now)
        self.pacer.end_round()
        if any(s.episode is None and not s.retired for s in self.slots.values()):
            nxt = self.dispatch.next_ready(now)
            if nxt is not None:
                self._cooldown_timer = self.loop.call_at(nxt, self.wake)

    def _start(self, slot: Slot, task: Task, now: float) -> None:
        self.dispatch.acquire(task.site, now)
        attempt = self.ledger.start(task)
        ep = slot.episode = Attempt(task, attempt, slot.id, started_at=self.epoch(),
                                    folder=self.lanes.of(task).folder.task(task.task_id),
                                    timeout=self.cfg.timeout, grace=self.cfg.stop_grace, seat=slot,
                                    run=self)
        # said when decided, so that sinks see starts and ends in the order the pacer saw them
        self.emit(EpisodeStarted(slot.id, task.task_id, self.site_name(task.site), task.level, attempt, ep.started_at,
                                 task.max_steps, lane=task.lane))
        self.emit(SlotChanged(slot.id, "starting", task.task_id, lane=task.lane))
        self.spawn(self._episode(slot, ep))

    # ── one attempt (its life is engine/attempt.py's) ─────
    def spec_for(self, task: Task, folder: Path) -> WorkerSpec:
        lane = self.lanes.of(task)
        return lane.cfg.worker_spec(folder, base_url=lane.endpoint or self.endpoint, max_steps=task.max_steps)

    def model_called(self, slot: int, task_id: str, call: ModelCall) -> None:
        ep = self.episode_on(slot)
        if ep is not None and (lane := self.lanes.of(ep.task)).model is not self.model:   # its lane's meter too
            lane.model.call(self.loop.time(), slot, call)
        first = self.model.call(self.loop.time(), slot, call)
        if first is not None:   # said once a run: a kind seen for the first time
            self.emit(Log("warning", f"{task_id}: a model call failed: {call.kind}: {call.message}"))

    async def _episode(self, slot: Slot, ep: Attempt) -> None:
        """Run one attempt and settle it. Whatever raises, the site is released, the slot freed, the task either
        recorded or queued again, and the loop woken."""
        site = ep.task.site
        outcome: Outcome | None = None
        try:
            outcome = await ep.drive()
        finally:
            self.ledger.leave(ep.task)
            try:
                if outcome is None or ep.put_back:
                    self._put_back(ep, outcome)
                else:
                    self._settle(ep, outcome)
            finally:
                if not ep.site_released:   # settling failed before it released the site
                    ep.site_released = True
                    self.dispatch.release_without_cooldown(site)
                slot.episode = None
                if slot.retired:
                    self.spawn(self._retire(slot))
                else:
                    self.emit(SlotChanged(slot.id, "idle"))
                self.wake()

    def _put_back(self, ep: Attempt, outcome: Outcome | None) -> None:
        """The episode never reached its worker (stopped while the worker started, or the worker vanished before
        taking it): no record, no try used, no cooldown; the task goes back to the front of the queue. A task whose
        worker keeps vanishing is recorded as the harness's failure after a few free restarts."""
        tid = ep.task.task_id
        ep.site_released = True
        self.dispatch.release_without_cooldown(ep.task.site)
        if outcome is not None and not ep.stop_reason:   # its worker was lost
            if self.ledger.count_free_restart(ep.task) > FREE_RESTARTS:   # an infra error (its retries then apply)
                self._settle(ep, outcome)
                return
        self.ledger.leave(ep.task, ran=False)
        self._enqueue(ep.task, front=True)
        why = ep.stop_error or (outcome.error if outcome is not None else None) or "stopped"
        self.emit(EpisodePutBack(ep.slot, tid, ep.attempt, str(why), *self.done_count(), lane=ep.task.lane))

    def _record(self, ep: Attempt, outcome: Outcome) -> EpisodeRecord:
        """The record of an attempt, from its outcome."""
        rec = build_record(self.lanes.of(ep.task).cfg, ep.task, outcome, attempt=ep.attempt, slot=ep.slot,
                           started_at=ep.started_at, finished_at=self.epoch())
        if self.judge is None or not rec.settles:   # an attempt that does not settle its task has no verdict
            return rec
        return judged(rec, ep.task, self.judge, lambda message: self.emit(Log("warning", message)))

    # ── settling an attempt ────────────────────────────────
    def _settle(self, ep: Attempt, outcome: Outcome) -> None:
        """Record an attempt and decide what becomes of its task: settled, or queued again (interrupted, requeued by
        its user, or failed through the harness's fault within its retries). Pacing learns from it before the site
        is released, so a widened cooldown applies to the very next episode there."""
        task, site, lane = ep.task, ep.task.site, self.lanes.of(ep.task)
        rec = self._record(ep, outcome)
        lane.records.submit(rec)
        self.lanes.pairing.record(task.lane, rec)   # the gap between the settling attempts' starts
        self.dispatch.learn(task.key, rec.status, rec.duration_s)
        # the folder failed, not the task: it runs again, costing no try, once the folder can be written
        storage = storage_fault(rec)
        if storage:
            self.storage.fault(f"episode {task.task_id} could not write its folder: {rec.error}")
        if rec.status == "blocked":
            cooldown = self.dispatch.widen(site)
            self.emit(Log("warning", f"{site}: {rec.error}; its cooldown is now {cooldown:g} s"))
        elif rec.status in ("done", "out_of_steps"):   # the site served the episode to its end
            self.dispatch.relax(site)
        if not ep.site_released:
            ep.site_released = True
            if ep.sent:
                self.dispatch.release(site, self.loop.time())
            else:
                self.dispatch.release_without_cooldown(site)
        s = self.stats
        s.finished += 1
        s.by_status[rec.status] = s.by_status.get(rec.status, 0) + 1
        infra = retried_fault(rec)
        # the breaker watches the model endpoint: a run of its failures is the endpoint's, not the tasks'
        endpoint = endpoint_fault(rec)
        if self.breaker.note(task, endpoint, self.stopping):
            self._open_breaker(rec.error or "")
        self._note_model(ep, rec, outcome, harness=infra or storage or rec.requeued)
        free = endpoint and self.breaker_open   # a failure while the endpoint is known to be down costs no try
        retry = infra and (free or self.ledger.retried.get(task.key, 0) < self.cfg.retries)
        if retry:
            if not free:
                self.ledger.count_retry(task)
            self.emit(Log("warning", f"{task.task_id}: {rec.error} (the harness's fault): trying again"))
        requeued = rec.error in (INTERRUPTED, REQUEUED) or retry or storage
        if requeued:
            self._enqueue(task, front=True)
        else:   # its verdict counted once per task: its settling attempt's (the run's and its lane's, in the ledger)
            self.ledger.settle(task, rec.status == "error", correct=rec.correct)
        self.emit(EpisodeFinished(ep.slot, rec, requeued, *self.done_count(), lane=task.lane,
                                  judged=self.ledger.judged, correct=self.ledger.correct))

    def _note_model(self, ep: Attempt, rec: EpisodeRecord, outcome: Outcome, harness: bool) -> None:
        """The model's statistics and guard learn how the attempt ended (an attempt the harness failed, or its user
        stopped, says nothing of the model to the guard)."""
        lane = self.lanes.note_model(self.model, ep.task, ep.slot, rec, outcome, harness)
        if lane is not None and not self.stopping:
            lane.guard.trip(self.guard_ends_run)
            self.lanes.hold(lane, self.dispatch)
            self.wake()

    # ── the circuit breaker: a failing endpoint pauses dispatch instead of failing every task (engine/guards.py) ──
    def _open_breaker(self, error: str) -> None:
        """Pause dispatch and probe the endpoint. The failures that tripped it are the endpoint's, not the tasks':
        their tries are given back, and those already settled as errors go back in the queue (a streak task still
        queued or running stays where it is: it is never queued twice)."""
        def give_back(task: Task) -> None:
            self.ledger.retried.pop(task.key, None)
            if self.ledger.where(task.key) == "settled":
                self._unsettle(task)
                self._enqueue(task, front=True)

        self.breaker.trip(error, give_back)

    # ── control (called by front ends on the event loop) ──
    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        """Pause or resume dispatch; a resume also lets a held model guard go (the user decided to go on)."""
        self.user_paused = paused
        if not paused and self.model_guard.holding:
            self.model_guard.clear()
        if not paused:   # a resume lets every lane's model guard go too
            self.lanes.clear_guards(self.dispatch)
        if not paused and self.storage_error:
            self.storage.schedule_probe(0)
        self.emit(DispatchChanged(self.dispatch_paused, reason or (self.breaker_reason if self.breaker_open else "")))
        self.wake()

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        """Hold or let go a campaign's lane (its name, or an arm: every repeat of it): its queued units wait beside
        the queue, its running ones go on; a resume lets its model guard go too. False: no such lane."""
        found = self.lanes.pause(name, paused, self.dispatch)
        self.wake()
        return found

    def episode_on(self, slot_id: int) -> Attempt | None:
        slot = self.slots.get(slot_id)
        return slot.episode if slot else None

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        """End the slot's episode now, keeping its steps: recorded as killed, or put back in the queue."""
        ep = self.episode_on(slot_id)
        if ep is None or ep.stop_reason:
            return False
        ep.stop("killed", REQUEUED if requeue else "killed by user", USER_KILL_GRACE_S)
        return True

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        """Pause or resume one episode; its timeout does not run while it is paused."""
        ep = self.episode_on(slot_id)
        return ep is not None and ep.pause(paused)

    def set_workers(self, n: int) -> str:
        """Change the number of slots live: new slots start at once, surplus ones retire when their episode ends.
        No more are added than the machine's memory holds: -> why fewer than asked ('' when as asked)."""
        if self._ended:
            return ""
        n = clamp_workers(n)
        active = sorted((s for s in self.slots.values() if not s.retired), key=lambda s: s.id)
        room = self.slot_room() if self.slot_room is not None and n > len(active) else None
        n, note, surplus = resize(active, n, room)
        if note:
            self.emit(Log("warning", note))
        self.target_workers = n
        for _ in range(n - len(active)):
            self._add_slot(max(self.slots, default=-1) + 1)
        for slot in surplus:
            slot.retired = True
            if slot.episode is None:
                self.spawn(self._retire(slot))
        self.wake()
        return note

    def retry_errors(self) -> int:
        """Put the tasks whose latest attempt ended in error back in the queue."""
        if self._ended:
            return 0
        n = 0
        for task in list(self.ledger.errored.values()):
            self._unsettle(task)
            n += self._enqueue(task)
        self.wake()
        return n

    def stop(self, force: bool = False) -> None:
        """Stop the run gracefully: no new episodes; running ones end keeping their steps and run again next time.
        `force` (a second Ctrl-C) ends every worker's process group now; the steps on disk are kept all the same."""
        if force:
            for slot in list(self.slots.values()):
                if slot.worker is not None:
                    slot.kill_worker(slot.worker)
        if self.stopping:
            self.wake()
            return
        self.stopping = True
        for ep in self.running():
            ep.stop("killed", INTERRUPTED, self.cfg.stop_grace)
        self.wake()

    def interrupt(self) -> Interrupt:
        """Ctrl-C, SIGTERM: stop the run gracefully; when it is already stopping, end every episode's processes now."""
        if not self.stopping:
            self.stop()
            return "stopping"
        self.stop(force=True)
        return "forced"

    async def _retire(self, slot: Slot) -> None:
        self.slots.pop(slot.id, None)
        self.emit(SlotChanged(slot.id, "retired"))
        await slot.close_worker()

    async def _end_all(self) -> None:
        for ep in self.running():
            ep.stop("killed", INTERRUPTED, self.cfg.stop_grace)
        while self._background:   # episodes, sends, retirements, the record writer, probes
            await asyncio.gather(*list(self._background), return_exceptions=True)
        if self.records.unwritten and not self.storage_error:   # kept while stopping: one more try
            await self.records.write()
        self.storage.cancel()
        await asyncio.gather(*(s.close_worker() for s in list(self.slots.values())), return_exceptions=True)

    # ── what front ends show ───────────────────────────────
    def site_name(self, key: str) -> str:
        """A site as front ends show it (its key where it has no other name)."""
        return self.site_names.get(key, key)

    def summary(self) -> RunSummary:
        return run_summary(self)

    def snapshot(self) -> RunSnapshot:
        """The state front ends draw from (engine/snapshot.py)."""
        return run_snapshot(self)

    def _space_ok(self) -> bool:
        """The storage guard's probe (tests replace it)."""
        return space_ok(self.folder.space_probe)
