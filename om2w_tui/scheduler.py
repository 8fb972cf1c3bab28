"""The run's scheduler: one global queue, N slots, per-site pacing, per-episode timeouts, resume, live control.

It is event-driven: a slot is filled the moment an episode ends, a site's cooldown expires or a command arrives,
never by polling. Among the tasks it may start, it takes one of the site with the most work left (the pacing chain
of the busiest site bounds the run's length). All time goes through the event loop's clock, so tests run
cooldowns and timeouts in virtual time. It writes `results.jsonl` alone and reports to sinks; it knows no front end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from .config import RunConfig
from .events import (DispatchChanged, EpisodeFinished, EpisodeStarted, EpisodeStep, Log, RunFinished, RunStarted,
                     SlotChanged)
from .pacing import SitePacer
from .results import ENDPOINT_ERROR, INTERRUPTED, REQUEUED, ResultsStore, read_results
from .tasks import Task

Judge = Callable[[dict[str, Any], dict[str, Any]], "bool | None"]
Probe = Callable[[], Awaitable[bool]]
USER_KILL_GRACE_S = 5.0
STORAGE_PROBE_BYTES = 1 << 20     # dispatch resumes when the out folder takes this much again
_STORAGE_ERROR = re.compile(r"no space left on device|read-only file system|disk quota exceeded|errno 28\b", re.I)


@dataclass
class Episode:
    task: Task
    attempt: int
    slot: int
    started_at: float                  # epoch seconds, for the record
    deadline: float = 0.0              # loop time when the timeout fires (moved on by pauses)
    paused_at: float | None = None
    stop_reason: str | None = None
    stop_error: str | None = None
    steps: int = 0
    state: str = "starting"
    timer: asyncio.TimerHandle | None = None
    kill_timer: asyncio.TimerHandle | None = None


@dataclass
class Slot:
    id: int
    worker: Any = None
    worker_start: asyncio.Task[Any] | None = None
    episode: Episode | None = None
    retired: bool = False


@dataclass
class SiteCounts:
    total: int = 0
    done: int = 0
    errors: int = 0


@dataclass
class RunStats:
    total: int = 0
    settled_before: int = 0
    finished: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    correct: int = 0
    judged: int = 0


def prepare_folder(folder: Path) -> None:
    """Keep an earlier attempt's files in `<task>/attempts/<n>/` (inside the task's folder: every folder beside
    the task folders would count as a task for the evaluator)."""
    if not folder.exists():
        return
    leftovers = [p for p in folder.iterdir() if p.name != "attempts"]
    if not leftovers:
        return
    attempts = folder / "attempts"
    attempts.mkdir(exist_ok=True)
    n = 1 + max((int(p.name) for p in attempts.iterdir() if p.name.isdigit()), default=0)
    dest = attempts / str(n)
    dest.mkdir()
    for p in leftovers:
        shutil.move(str(p), dest / p.name)


def record_from_folder(folder: Path) -> dict[str, Any]:
    """What an episode whose worker died left on disk (its result.json is rewritten after every step)."""
    try:
        res = json.loads((folder / "result.json").read_text())
    except (OSError, ValueError):
        res = {}
    shots = folder / "trajectory"
    actions = res.get("action_history") or []
    if res.get("schema_version"):   # v2: entries, the last one possibly TASK_COMPLETE
        actions = [a for a in actions if not str(a.get("action", "")).startswith("TASK_COMPLETE")]
    return {"steps": len(actions), "actions": len(actions),
            "screenshots": len(list(shots.glob("*_full_screenshot.png"))) if shots.exists() else 0,
            "answer": (res.get("final_result_response") or res.get("agent_final_answer") or "")[:500],
            "agent_done": False}


class Scheduler:
    def __init__(self, config: RunConfig, tasks: list[Task], executor: Any, sinks: Iterable[Any] = (),
                 judge: Judge | None = None, spec_extra: dict[str, Any] | None = None, probe: Probe | None = None):
        self.cfg = config
        self.tasks = list(tasks)
        self.executor = executor
        self.sinks = list(sinks)
        self.judge = judge
        self.spec_extra = spec_extra or {}
        self.out = Path(config.out)
        self.store = ResultsStore(self.out)
        self.pacer = SitePacer(config.pace_cooldown)
        self.queue: dict[str, deque[Task]] = {}
        self.slots: dict[int, Slot] = {}
        self.target_workers = max(1, int(config.workers))
        self.user_paused = False
        self.breaker_open = False
        self.breaker_reason = ""
        self.probe = probe
        self.infra_in_a_row = 0
        self.streak: list[Task] = []       # the tasks of the current run of infra errors
        self.retried: dict[str, int] = {}
        self.storage_error = ""            # the out folder cannot be written: dispatch waits until it can
        self.unwritten: list[dict[str, Any]] = []
        self.stopping = False
        self.stats = RunStats()
        self.sites: dict[str, SiteCounts] = {}
        self.attempts: dict[str, int] = {}
        self.errored: dict[str, Task] = {}
        self.started_mono = 0.0
        self._epoch_offset = 0.0
        self._wake: asyncio.Event | None = None
        self._cooldown_timer: asyncio.TimerHandle | None = None
        self._episodes: set[asyncio.Task[None]] = set()

    # ── sinks ──────────────────────────────────────────────
    def emit(self, event: object) -> None:
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

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _load_queue(self) -> None:
        prior = read_results(self.out)
        for w in prior.warnings:
            self.emit(Log("warning", w))
        settled = prior.settled()
        self.attempts = prior.attempts()
        latest = prior.latest()
        for t in self.tasks:
            counts = self.sites.setdefault(t.site, SiteCounts())
            counts.total += 1
            if t.task_id in settled:
                self.stats.settled_before += 1
                counts.done += 1
                if latest[t.task_id].get("status") == "error":
                    counts.errors += 1
                    self.errored[t.task_id] = t
            else:
                self.queue.setdefault(t.site, deque()).append(t)
        self.stats.total = len(self.tasks)

    async def run(self) -> RunStats:
        self._wake = asyncio.Event()
        self.started_mono = self.loop.time()
        self._epoch_offset = time.time() - self.started_mono
        self.out.mkdir(parents=True, exist_ok=True)
        self._load_queue()
        self.emit(RunStarted(self.stats.total, self.stats.settled_before, self.target_workers, str(self.out),
                             self.epoch()))
        for i in range(self.target_workers if self.pending() else 0):
            self._add_slot(i, start_worker=i < self.pending())
        try:
            while True:
                self._dispatch()
                if not self.running() and (self.stopping or not self.pending()):
                    break
                await self._wake.wait()
                self._wake.clear()
        finally:
            if self._cooldown_timer:
                self._cooldown_timer.cancel()
            await self._end_all()
        for rec in self.unwritten:   # the last word on records the folder would not take
            self.emit(Log("error", f"record not written to {self.store.path}: {json.dumps(rec, default=str)}"))
        self.emit(RunFinished(self.summary()))
        return self.stats

    def epoch(self) -> float:
        """Wall-clock seconds for records, read off the loop's clock so that records and pacing agree."""
        return self.loop.time() + self._epoch_offset

    @property
    def dispatch_paused(self) -> bool:
        return self.user_paused or self.breaker_open or bool(self.storage_error)

    def pending(self) -> int:
        return sum(len(q) for q in self.queue.values())

    def running(self) -> list[Episode]:
        return [s.episode for s in self.slots.values() if s.episode is not None]

    def _add_slot(self, i: int, start_worker: bool = True) -> Slot:
        slot = self.slots[i] = Slot(i)
        if start_worker:   # a slot with nothing to do yet starts its worker on its first episode
            self._ensure_worker(slot)
        self.emit(SlotChanged(i, "idle"))
        return slot

    def _ensure_worker(self, slot: Slot) -> asyncio.Task[Any]:
        """The slot's worker, started once in the background (so imports overlap) and again if it died."""
        start = slot.worker_start
        usable = start is not None and (not start.done() or (
            not start.cancelled() and start.exception() is None and not getattr(start.result(), "exited", False)))
        if not usable:
            slot.worker = None
            slot.worker_start = asyncio.create_task(self.executor.start_worker(slot.id))
            slot.worker_start.add_done_callback(lambda t: t.cancelled() or t.exception())
        assert slot.worker_start is not None
        return slot.worker_start

    # ── dispatch ───────────────────────────────────────────
    def _pick_site(self, now: float) -> str | None:
        best, best_n = None, 0
        for site, q in self.queue.items():
            if q and len(q) > best_n and self.pacer.can_start(site, now):
                best, best_n = site, len(q)
        return best

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
            task = self.queue[site].popleft()
            self._start(slot, task, now)
        if any(s.episode is None and not s.retired for s in self.slots.values()):
            nxt = self.pacer.next_ready([s for s, q in self.queue.items() if q], now)
            if nxt is not None:
                self._cooldown_timer = self.loop.call_at(nxt, self._wake_up)

    def _start(self, slot: Slot, task: Task, now: float) -> None:
        self.pacer.acquire(task.site, now)
        attempt = self.attempts.get(task.task_id, 0) + 1
        self.attempts[task.task_id] = attempt
        ep = slot.episode = Episode(task, attempt, slot.id, started_at=self.epoch())
        t = asyncio.create_task(self._episode(slot, ep))
        self._episodes.add(t)
        t.add_done_callback(self._episodes.discard)

    # ── one episode ────────────────────────────────────────
    def _spec(self, folder: Path) -> dict[str, Any]:
        return {**self.cfg.worker_spec(folder), **self.spec_extra}

    async def _episode(self, slot: Slot, ep: Episode) -> None:
        site = ep.task.site
        reached = False
        try:
            self.emit(EpisodeStarted(slot.id, ep.task.task_id, site, ep.task.level, ep.attempt, ep.started_at))
            self.emit(SlotChanged(slot.id, "starting", ep.task.task_id))
            part, reached = await self._drive(slot, ep)
        except Exception as e:
            part = {"status": "error", "error": f"harness: {type(e).__name__}: {str(e)[:300]}", "error_kind": "infra"}
        finally:
            for h in (ep.timer, ep.kill_timer):
                if h:
                    h.cancel()
            if reached:
                self.pacer.release(site, self.loop.time())
            else:
                self.pacer.release_without_cooldown(site)
            slot.episode = None
        record = self._record(ep, part)
        self._settle(ep, record)
        if slot.retired:
            await self._retire(slot)
        else:
            self.emit(SlotChanged(slot.id, "idle"))
        self._wake_up()

    async def _drive(self, slot: Slot, ep: Episode) -> tuple[dict[str, Any], bool]:
        folder = self.out / ep.task.task_id
        prepare_folder(folder)
        folder.mkdir(parents=True, exist_ok=True)
        ep.deadline = self.loop.time() + self.cfg.timeout
        self._arm_timeout(ep)
        slot.worker = await self._ensure_worker(slot)
        if ep.stop_reason:   # stopped while its worker started
            return {"status": ep.stop_reason, "error": ep.stop_error}, False
        worker = slot.worker
        if not await worker.send({"cmd": "run", "task": ep.task.to_dict(), "spec": self._spec(folder)}):
            raise RuntimeError("the worker process is gone")
        while True:
            ev = await worker.next_event()
            kind = ev.get("ev")
            if kind == "step":
                ep.steps = int(ev.get("step") or ep.steps + 1)
                self.emit(EpisodeStep(slot.id, ep.task.task_id, ep.steps, list(ev.get("actions") or []),
                                      ev.get("url", ""), ev.get("thought", ""), ev.get("screenshot")))
            elif kind == "running":
                if ep.state == "starting":
                    self._set_state(ep, "running")
            elif kind == "log":
                self.emit(Log(ev.get("level", "info"), f"slot {slot.id}: {ev.get('message', '')}"))
            elif kind == "finished":
                part = dict(ev.get("record") or {})
                if ep.stop_reason and part.get("status") != "done":   # the scheduler's reason is the one recorded
                    part.update(status=ep.stop_reason, error=ep.stop_error, error_kind=None)
                return part, True
            elif kind == "exit":
                slot.worker = None
                part = record_from_folder(folder)
                if ep.stop_reason:
                    part.update(status=ep.stop_reason, error=ep.stop_error)
                else:
                    part.update(status="error", error=f"worker process exited (code {ev.get('rc')})",
                                error_kind="infra")
                return part, True

    def _set_state(self, ep: Episode, state: str) -> None:
        ep.state = state
        self.emit(SlotChanged(ep.slot, state, ep.task.task_id))

    def _arm_timeout(self, ep: Episode) -> None:
        if ep.timer:
            ep.timer.cancel()
        ep.timer = self.loop.call_at(ep.deadline, self._stop, ep, "timeout", "timeout", self.cfg.stop_grace)

    def _stop(self, ep: Episode, reason: str, error: str, grace: float) -> None:
        """Ask the episode's worker to stop (it keeps every finished step); end the worker if it does not in time."""
        if ep.stop_reason:
            return
        ep.stop_reason, ep.stop_error = reason, error
        self._set_state(ep, "stopping")
        slot = self.slots.get(ep.slot)
        worker = slot.worker if slot else None
        if worker is not None:
            asyncio.create_task(worker.send({"cmd": "stop", "reason": reason, "error": error}))
            ep.kill_timer = self.loop.call_at(self.loop.time() + grace, worker.kill_group)
        elif slot and slot.worker_start:
            slot.worker_start.add_done_callback(lambda t: t.cancelled() or t.exception() or t.result().kill_group())

    def _record(self, ep: Episode, part: dict[str, Any]) -> dict[str, Any]:
        t = ep.task
        finished = self.epoch()
        rec = {"task_id": t.task_id, "arm": self.cfg.arm, "website": t.website, "level": t.level,
               "model": self.cfg.model, "status": part.get("status", "error"), "error": part.get("error"),
               "error_kind": part.get("error_kind"), "steps": int(part.get("steps") or 0),
               "actions": int(part.get("actions") or 0), "screenshots": int(part.get("screenshots") or 0),
               "answer": part.get("answer") or "", "agent_done": bool(part.get("agent_done")),
               "prompt_tokens": int(part.get("prompt_tokens") or 0),
               "completion_tokens": int(part.get("completion_tokens") or 0),
               "duration_s": round(finished - ep.started_at, 1), "started_at": round(ep.started_at, 3),
               "finished_at": round(finished, 3), "attempt": ep.attempt, "slot": ep.slot}
        for key in ("rows", "hint_left"):   # with --record-rows
            if key in part:
                rec[key] = part[key]
        verdict = self.judge(t.to_dict(), rec) if self.judge is not None else None
        if verdict is not None:
            rec["correct"] = bool(verdict)
        return rec

    def _write_records(self, rec: dict[str, Any] | None = None) -> bool:
        """Append a record (and any kept before); when the out folder cannot take it (disk full, unwritable), keep
        it in memory and stop dispatching until it can (the storage probe, or the user resuming, tries again)."""
        if rec is not None:
            self.unwritten.append(rec)
        try:
            while self.unwritten:
                self.store.append(self.unwritten[0])
                self.unwritten.pop(0)
            return True
        except OSError as e:
            self._storage_fault(f"cannot write {self.store.path}: {e.strerror or e}")
            return False

    def _storage_fault(self, problem: str) -> None:
        first = not self.storage_error
        self.storage_error = (f"{problem}; free space or fix the folder: dispatch resumes when it can be written "
                              f"({len(self.unwritten)} record(s) kept in memory)")
        if first:
            self.emit(DispatchChanged(True, self.storage_error))
            self.loop.call_later(self.cfg.probe_interval, self._probe_storage)
        self.emit(Log("error", self.storage_error))

    def _probe_storage(self) -> None:
        """Dispatch waits while the out folder cannot take a record and a screenshot's worth of bytes."""
        if not self.storage_error or self.stopping:
            return
        probe = self.out / ".om2w-space-probe"
        try:
            with open(probe, "wb") as f:
                f.write(b"\0" * STORAGE_PROBE_BYTES)
                f.flush()
                os.fsync(f.fileno())
            writable = True
        except OSError:
            writable = False
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()
        if writable and self._write_records():
            self.storage_error = ""
            self.emit(DispatchChanged(self.dispatch_paused, "the out folder can be written again"))
            self._wake_up()
        else:
            self.loop.call_later(self.cfg.probe_interval, self._probe_storage)

    def _settle(self, ep: Episode, rec: dict[str, Any]) -> None:
        self._write_records(rec)
        # the folder failed, not the task: it runs again, costing no try, once the folder can be written
        storage = rec["status"] == "error" and bool(_STORAGE_ERROR.search(rec.get("error") or ""))
        if storage:
            self._storage_fault(f"episode {ep.task.task_id} could not write its folder: {rec['error']}")
        if rec["status"] == "blocked":
            cooldown = self.pacer.widen(ep.task.site)
            self.emit(Log("warning", f"{ep.task.site}: {rec['error']}; its cooldown is now {cooldown:g} s"))
        elif rec["status"] == "done":
            self.pacer.relax(ep.task.site)
        s = self.stats
        s.finished += 1
        s.by_status[rec["status"]] = s.by_status.get(rec["status"], 0) + 1
        counts = self.sites.setdefault(ep.task.site, SiteCounts())
        infra = rec["status"] == "error" and rec.get("error_kind") == "infra" and not storage
        # the breaker watches the model endpoint: a run of its failures is the endpoint's, not the tasks'
        endpoint = infra and str(rec.get("error") or "").startswith(ENDPOINT_ERROR)
        self.infra_in_a_row = self.infra_in_a_row + 1 if endpoint else 0
        self.streak = self.streak + [ep.task] if endpoint else []
        if endpoint and self.infra_in_a_row >= self.cfg.breaker_after and not self.breaker_open \
                and not self.stopping:
            self._open_breaker(rec["error"] or "")
        free = endpoint and self.breaker_open   # a failure while the endpoint is known to be down costs no try
        retry = infra and (free or self.retried.get(ep.task.task_id, 0) < self.cfg.retries)
        if retry:
            if not free:
                self.retried[ep.task.task_id] = self.retried.get(ep.task.task_id, 0) + 1
            self.emit(Log("warning", f"{ep.task.task_id}: {rec['error']} (the harness's fault): trying again"))
        requeued = rec["error"] in (INTERRUPTED, REQUEUED) or retry or storage
        if requeued:
            self.queue.setdefault(ep.task.site, deque()).appendleft(ep.task)
        else:
            if "correct" in rec:   # judged once per task: its final attempt
                s.judged += 1
                s.correct += rec["correct"]
            counts.done += 1
            if rec["status"] == "error":
                counts.errors += 1
                self.errored[ep.task.task_id] = ep.task
        self.emit(EpisodeFinished(ep.slot, rec, requeued))

    # ── the circuit breaker: a failing endpoint pauses dispatch instead of failing every task ──
    def _open_breaker(self, error: str) -> None:
        """Pause dispatch and probe the endpoint; the failures that tripped it are the endpoint's, not the tasks':
        their tries are given back and they run again when it answers."""
        self.breaker_open = True
        queued = {t.task_id for q in self.queue.values() for t in q}
        for task in self.streak:
            self.retried.pop(task.task_id, None)
            if task.task_id not in queued:
                queued.add(task.task_id)
                self.queue.setdefault(task.site, deque()).appendleft(task)
        self.breaker_reason = (f"{self.infra_in_a_row} infra errors in a row (last: {error[:160]}); "
                               f"probing every {self.cfg.probe_interval:g} s")
        self.emit(DispatchChanged(True, f"circuit breaker: {self.breaker_reason}"))
        self.loop.call_later(self.cfg.probe_interval, self._start_probe)

    def _start_probe(self) -> None:
        if self.breaker_open and not self.stopping:
            t = asyncio.create_task(self._probe_once())
            self._episodes.add(t)
            t.add_done_callback(self._episodes.discard)

    async def _probe_once(self) -> None:
        try:
            ok = await self.probe() if self.probe is not None else True
        except Exception:
            ok = False
        if not self.breaker_open:
            return
        if ok:
            self.breaker_open, self.breaker_reason, self.infra_in_a_row = False, "", 0
            self.emit(DispatchChanged(self.dispatch_paused, "circuit breaker closed: the endpoint answers again"))
            self._wake_up()
        else:
            self.loop.call_later(self.cfg.probe_interval, self._start_probe)

    # ── control (called by front ends on the event loop) ──
    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        self.user_paused = paused
        if not paused and self.storage_error:
            self._probe_storage()
        self.emit(DispatchChanged(self.dispatch_paused, reason or (self.breaker_reason if self.breaker_open else "")))
        self._wake_up()

    def episode_on(self, slot_id: int) -> Episode | None:
        slot = self.slots.get(slot_id)
        return slot.episode if slot else None

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        """End the slot's episode now, keeping its steps: recorded as killed, or put back in the queue."""
        ep = self.episode_on(slot_id)
        if ep is None or ep.stop_reason:
            return False
        self._stop(ep, "killed", REQUEUED if requeue else "killed by user", USER_KILL_GRACE_S)
        return True

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        """Pause or resume one episode; its timeout does not run while it is paused."""
        ep = self.episode_on(slot_id)
        slot = self.slots.get(slot_id)
        if ep is None or ep.stop_reason or slot is None or slot.worker is None or (ep.paused_at is not None) == paused:
            return False
        now = self.loop.time()
        if paused:
            ep.paused_at = now
            if ep.timer:
                ep.timer.cancel()
            self._set_state(ep, "paused")
        else:
            ep.deadline += now - (ep.paused_at or now)
            ep.paused_at = None
            self._arm_timeout(ep)
            self._set_state(ep, "running")
        asyncio.create_task(slot.worker.send({"cmd": "pause" if paused else "resume"}))
        return True

    def set_workers(self, n: int) -> None:
        """Change the number of slots live: new slots start at once, surplus ones retire when their episode ends."""
        n = max(1, int(n))
        self.target_workers = n
        active = sorted((s for s in self.slots.values() if not s.retired), key=lambda s: s.id)
        if n > len(active):
            for _ in range(n - len(active)):
                self._add_slot(max(self.slots, default=-1) + 1)
        else:
            surplus = sorted(active, key=lambda s: (s.episode is not None, -s.id))[: len(active) - n]
            for slot in surplus:
                slot.retired = True
                if slot.episode is None:
                    asyncio.create_task(self._retire(slot))
        self._wake_up()

    def retry_errors(self) -> int:
        """Put the tasks whose latest attempt ended in error back in the queue."""
        n = 0
        for tid, task in list(self.errored.items()):
            self.errored.pop(tid)
            counts = self.sites.setdefault(task.site, SiteCounts())
            counts.done -= 1
            counts.errors -= 1
            self.queue.setdefault(task.site, deque()).append(task)
            n += 1
        self._wake_up()
        return n

    def stop(self, force: bool = False) -> None:
        """Stop the run gracefully: no new episodes; running ones end keeping their steps and run again next time.
        `force` (a second Ctrl-C) ends every worker's process group now; the steps on disk are kept all the same."""
        if force:
            for slot in self.slots.values():
                if slot.worker is not None:
                    slot.worker.kill_group()
        if self.stopping:
            return
        self.stopping = True
        for ep in self.running():
            self._stop(ep, "killed", INTERRUPTED, self.cfg.stop_grace)
        self._wake_up()

    async def _retire(self, slot: Slot) -> None:
        self.slots.pop(slot.id, None)
        self.emit(SlotChanged(slot.id, "retired"))
        await self._close_worker(slot)

    async def _close_worker(self, slot: Slot) -> None:
        if slot.worker_start is not None and not slot.worker_start.done():
            with contextlib.suppress(BaseException):
                await slot.worker_start
        w = slot.worker
        if w is None and slot.worker_start is not None and slot.worker_start.done() \
                and not slot.worker_start.cancelled() and slot.worker_start.exception() is None:
            w = slot.worker_start.result()
        if w is not None:
            await w.close()

    async def _end_all(self) -> None:
        for ep in self.running():
            self._stop(ep, "killed", INTERRUPTED, self.cfg.stop_grace)
        if self._episodes:
            await asyncio.gather(*list(self._episodes), return_exceptions=True)
        await asyncio.gather(*(self._close_worker(s) for s in list(self.slots.values())), return_exceptions=True)

    # ── what front ends show ───────────────────────────────
    def summary(self) -> dict[str, Any]:
        s = self.stats
        out = {"total": s.total, "settled_before": s.settled_before, "finished": s.finished,
               "by_status": dict(s.by_status), "pending": self.pending(),
               "elapsed_s": round(self.loop.time() - self.started_mono, 1), "out": str(self.out)}
        if s.judged:
            out.update(correct=s.correct, judged=s.judged)
        return out

    def snapshot(self) -> dict[str, Any]:
        """The state front ends draw from: slots, sites with their cooldown deadlines, counts (loop-clock times)."""
        now = self.loop.time()
        slots = []
        for s in sorted(self.slots.values(), key=lambda s: s.id):
            ep = s.episode
            slots.append({"slot": s.id, "state": ep.state if ep else ("retiring" if s.retired else "idle"),
                          "task_id": ep.task.task_id if ep else None, "site": ep.task.site if ep else None,
                          "level": ep.task.level if ep else None, "step": ep.steps if ep else 0,
                          "started_at": ep.started_at if ep else None, "attempt": ep.attempt if ep else None})
        sites = []
        for name, c in self.sites.items():
            st = self.pacer.state(name)
            left = len(self.queue.get(name, ()))
            state = "running" if st.busy else ("cooling" if st.ready_at > now else ("free" if left else "done"))
            sites.append({"site": name, "state": state, "ready_at": st.ready_at, "left": left,
                          "done": c.done, "errors": c.errors, "total": c.total, "cooldown": st.cooldown})
        return {"now": now, "slots": slots, "sites": sites, "paused": self.dispatch_paused,
                "target_workers": self.target_workers, "errors": len(self.errored),
                "user_paused": self.user_paused, "breaker": self.breaker_reason if self.breaker_open else "",
                "stopping": self.stopping, "summary": self.summary()}
