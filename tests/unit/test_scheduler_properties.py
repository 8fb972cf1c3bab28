"""The scheduler's promises as invariants, searched by hypothesis over random interleavings in virtual time.

Each example is a random run: tasks on a few sites whose stand-in workers finish, crash, hang, hit bot walls, fail
as the endpoint's or the model's fault (the model guard holding dispatch, or ending a run without a screen) or
vanish on reading their task; starts that take time (and now and then fail) and kills whose exits are seen late
(tests/fakes.py); and a random script of user and world events at random times: kills, kill-and-requeues, episode
and dispatch pauses, slot changes, retrying errors, the model server going down and up, the disk filling and
freeing. The test grades the run by an oracle of its own, built from the run's events, its
settings and the guide's rules (docs/pacing.md); it never asks the pacer or the dispatcher what the right answer is:

- pacing (`PacingModel`): never more episodes of one site at once than `--site-slots` allows, and no start on a
  site before the last episode that reached it ended plus the cooldown it had then (doubled after a bot wall, at
  least 60 s and at most the cap; halved towards the default by each clean episode; nothing for an episode whose
  worker never had the task);
- no slot idles while a queued task's site may start by that model and dispatch is not paused (user, breaker,
  storage, model guard: that state is read off the scheduler), but for the dispatcher's one deliberate wait, which
  the model restates (`PacingModel.waits_for`) and holds to both ways;
- every record: status and fault kind agree, an answer only where the agent said done, out of steps only where the
  agent ran out, a killed one says why, a timeout lasted its timeout and no more than
  its grace past it (every record lasted no longer), its clock is the attempt's, its steps are the worker's, it
  settles exactly when the guide's rule says (and `results.settles` agrees);
- every task ends with at most one settling record, the last of its records (a settled error runs again only when
  its user retries errors); attempts count 1, 2, 3 ...; each run a worker was handed ended in exactly one record
  (or, for a worker that vanished on reading it, a put back), as its event said;
- the run ends only when every task is settled (or failed through the harness's fault past its retries), unless
  it was stopped or its model guard ended it; and nothing the scheduler started outlives it.

Each check was seen to fail on a deliberate mutation of the engine (made and reverted by hand; what caught it):
release with no cooldown, widen a no-op, relax to the default at once -> a start before its site was ready; the
per-site limit ignored -> two episodes at once on a site; relax a no-op, a cooldown twice as long, a put back
charged a cooldown, one start per dispatch round, the last slot kept whenever the longest chain's site cools -> a
slot idle while a site may start; the last-slot wait dropped -> a start where the last slot waits; a timeout
stopped as `killed` -> a killed record that does not say why; the timeout armed at twice its length -> a record
past its timeout and grace; `error_kind` on a timeout, `model_fault` dropped, `duration_s` off by a second, one
step too many, a requeued kill settling (`results.settles`) -> that record's check; a requeue or the run's stop
recorded as `killed by user` -> more user kills recorded than made. (The stand-in worker cannot fail to write its
own folder, so no `storage` record comes up here.) A defect it found (a worker that vanished on reading its task,
stopped before its exit was seen, was recorded as stopped and its site charged a cooldown) is pinned by
tests/unit/test_stopped_vanished_worker.py, and fixed.

A second search runs campaigns: units of 2-3 arms x 1-2 repeats of up to 16 tasks on one queue and pacer, their
workers finishing, hanging, crashing or failing on the model (a lane's guard holding that lane), with user kills,
requeues, dispatch and arm pauses and slot changes. Every unit is settled exactly once, in its own lane's results;
never two episodes on a site at once whatever their lane, and the cooldown after each that reached its worker;
nothing of a paused arm starts while it is paused; sampled, the Sites panel's rows (the snapshot) agree with the events
and with `ctl status`: a unit not started yet is left on its site, a site says done only with nothing left nor
running there, and the sites' left sum to the summary's pending (seen to fail with a held arm's units left out of
their sites' count); no slot idles while a unit may start but for the last slot's wait
or one slot kept for each started task's next unit coming off its cooldown within the hold's horizon (`--pair-hold`,
drawn; seen to fail with one slot more kept); and with no faults nor user, a task's units run one after another on
their site, the first arm turning from task to task (seen to fail with the first arm fixed, and with a pause that
held nothing).

`OM2W_PROPERTY_EXAMPLES` sets how many schedules are searched (CI runs the default, the same ones each time);
`OM2W_PROPERTY_RANDOM=1` searches new ones.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import looptime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import (
    EpisodeFinished,
    EpisodePutBack,
    EpisodeStarted,
    RunFinished,
    RunStarted,
    SlotChanged,
)
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.results import read_results, settles
from om2w_tui.engine.scheduler import Scheduler
from tests.fakes import Behaviour, FakeExecutor

EXAMPLES = int(os.environ.get("OM2W_PROPERTY_EXAMPLES", "1500"))
SCRIPT_END = 600.0          # the script's events fall before this; then the world heals
WORLD_HEALS = 700.0
RUN_LIMIT = 10 ** 7         # virtual seconds: a run still going then has hung
SAMPLE_EVERY = 3.7
# looptime lets this many idle loop cycles pass before it moves the clock (its default, 42, is 4x slower here)
NOOP_CYCLES = 2
# the same schedules every run (CI stays reproducible); OM2W_PROPERTY_RANDOM=1 searches new ones
RANDOM = os.environ.get("OM2W_PROPERTY_RANDOM") == "1"

OPS = ("kill", "requeue", "pause_ep", "resume_ep", "pause", "resume", "workers", "retry", "down", "up",
       "disk_full", "disk_ok", "fail_start")
MODEL_FAILURES = ("context_length", "images_refused", "truncated")   # a model that answers wrongly for the harness

# ── the oracle's rules, said here (docs/pacing.md: Pacing, resume and stopping; Faults), never read off the engine ──
# asyncio may run a timer up to its clock's resolution early: a start this close to a site's ready time is on time
CLOCK_SLACK_S = 1e-3
# a bot wall doubles the site's cooldown: at least 60 s, at most 16 times the default or 30 min if that is more
WIDEN_FLOOR_S, CAP_FACTOR, CAP_FLOOR_S = 60.0, 16, 1800.0
# a clean episode halves the excess over the default; an excess that would be under max(1 s, 5 % of the default) is
# gone (pacing.py's `relax`: the guide says only "halves"; without an end the halving would never reach it)
RELAX_FLOOR_S, RELAX_SHARE = 1.0, 0.05
# the dispatcher's guess at a unit of work before any episode finished (dispatch.py); the tasks here carry no
# reference length, so each is one unit
PRIOR_S_PER_UNIT = 20.0
USER_KILL_GRACE_S = 5.0      # a user's kill (`k`) gives the worker this long before its group is ended
SETTLES_NOT = {"interrupted", "requeued"}           # a kill for these runs again (docs/pacing.md)
HARNESS_KINDS = {"infra", "endpoint", "storage"}    # never the agent's: not settled (docs/pacing.md: Faults)
ERROR_KINDS = {"agent", "model"} | HARNESS_KINDS
STATUSES = {"done", "out_of_steps", "timeout", "killed", "error", "blocked"}
KILLED_BECAUSE = {"interrupted", "requeued", "killed by user"}
# a record's times are rounded (to 0.1 s and 1 ms), and a thread the attempt waits on (its folder kept, the folder
# read after a crash) moves looptime's clock by about the real time it took
RECORD_SLACK_S = 0.5         # measured: 0.011 s at most over 1,500 runs


@dataclass
class World:
    disk_full: bool = False
    stopped: bool = False
    kills: int = 0               # user kills the scheduler took (`kill` returned True)
    requeues: int = 0
    went_down: bool = False      # the model endpoint was down at some time
    retried_at: list[float] = field(default_factory=list)   # when the user's retry put errored tasks back


@st.composite
def runs(draw: Any) -> dict[str, Any]:
    n_sites = draw(st.integers(1, 4))
    tasks, behaviour = [], {}
    for s in range(n_sites):
        for i in range(draw(st.integers(1, 4))):
            t = Task(f"s{s}-{i}", f"task {i} on site {s}", f"https://s{s}.example/", "easy")
            tasks.append(t)
            behaviour[t.task_id] = Behaviour(
                steps=draw(st.integers(0, 4)), step_s=draw(st.sampled_from([1.0, 7.0, 40.0])),
                blocked=draw(st.integers(0, 7)) == 0, out_of_steps=draw(st.integers(0, 5)) == 0,
                die_at_step=draw(st.one_of(st.none(), st.integers(0, 2))) if draw(st.integers(0, 5)) == 0 else None,
                infra_failures=draw(st.sampled_from([0, 0, 0, 1, 3])),
                ignore_stop=draw(st.integers(0, 6)) == 0,
                stop_delay_s=draw(st.sampled_from([0.0, 0.0, 2.0, 30.0])),
                vanish_before_start=draw(st.sampled_from([1, 4])) if draw(st.integers(0, 11)) == 0 else 0,
                model_failure=draw(st.sampled_from(MODEL_FAILURES)) if draw(st.integers(0, 7)) == 0 else None)
    cfg = dict(workers=draw(st.integers(1, 4)), pace_cooldown=draw(st.sampled_from([0.0, 10.0, 60.0])),
               timeout=draw(st.sampled_from([25.0, 90.0, 1000.0])), retries=draw(st.integers(0, 2)),
               breaker_after=draw(st.integers(1, 4)), probe_interval=draw(st.sampled_from([5.0, 30.0])),
               stop_grace=draw(st.sampled_from([3.0, 20.0])), site_slots=draw(st.sampled_from([1, 1, 1, 2, 0])),
               model_guard=draw(st.sampled_from([0, 1, 3])))
    script = draw(st.lists(st.tuples(st.floats(0, SCRIPT_END, allow_nan=False), st.sampled_from(OPS),
                                     st.integers(0, 4)), max_size=14))
    return {"tasks": tasks, "behaviour": behaviour, "cfg": cfg, "script": sorted(script),
            "start_s": draw(st.sampled_from([0.5, 5.0, 40.0])), "exit_seen_s": draw(st.sampled_from([0.1, 3.0])),
            "stop_at": draw(st.one_of(st.none(), st.floats(1, SCRIPT_END))) if draw(st.integers(0, 4)) == 0 else None,
            "guard_ends_run": draw(st.integers(0, 2)) == 0}


# ── the oracle ─────────────────────────────────────────────
@dataclass
class SiteModel:
    cooldown: float          # the site's cooldown now (the run's default until a bot wall widens it)
    running: int = 0         # episodes on the site now
    ready_at: float = 0.0    # no episode may start here before this (loop time)


class PacingModel:
    """The pacing rules (docs/pacing.md) from from the run's events alone: one episode per site at a time (`--site-slots
    N`, 0: no limit), the next start at least the cooldown after the last episode there ended, the cooldown widened
    by a bot wall and relaxed by clean episodes; an episode whose worker never had the task costs none. With cooldown
    0 and no limit a run is unpaced (a bot wall still widens its site's cooldown: the Faults table says so for every
    run). It also restates the dispatcher's one deliberate idle slot (`waits_for`)."""

    def __init__(self, cooldown: float, per_site: int, tasks: list[Task]):
        self.default = cooldown
        self.per_site = per_site
        self.cap = max(cooldown * CAP_FACTOR, CAP_FLOOR_S)
        self.sites: dict[str, SiteModel] = {}
        self.rank = {site: i for i, site in enumerate(dict.fromkeys(t.site for t in tasks))}   # queued first: first
        self.done_s = self.done_units = 0.0      # the seconds and units of the done episodes so far

    def site(self, name: str) -> SiteModel:
        if name not in self.sites:
            self.sites[name] = SiteModel(self.default)
        return self.sites[name]

    def busy(self, name: str) -> bool:
        return bool(self.per_site) and self.site(name).running >= self.per_site

    def cooling(self, name: str, now: float) -> bool:
        return now < self.site(name).ready_at - CLOCK_SLACK_S

    def may_start(self, name: str, now: float) -> bool:
        return not self.busy(name) and not self.cooling(name, now)

    def start(self, name: str) -> None:
        self.site(name).running += 1

    def end(self, name: str, now: float, status: str | None, reached: bool) -> None:
        """An episode on the site ended (`status`: its record's; None: put back). The cooldown changes first, so the
        very next episode there waits the widened gap; only an episode whose worker had the task costs a gap."""
        s = self.site(name)
        if status == "blocked":
            s.cooldown = min(self.cap, max(s.cooldown * 2, WIDEN_FLOOR_S))
        elif status in ("done", "out_of_steps"):   # the site served the episode to its end
            excess = (s.cooldown - self.default) / 2
            s.cooldown = self.default + excess if excess >= max(RELAX_FLOOR_S, self.default * RELAX_SHARE) \
                else self.default
        s.running -= 1
        if reached:
            s.ready_at = max(s.ready_at, now + s.cooldown)

    def learn(self, status: str, duration_s: float) -> None:
        """A done episode teaches the seconds a unit of work takes (the others say little of a task's length)."""
        if status == "done" and duration_s > 0:
            self.done_units += 1.0
            self.done_s += duration_s

    def waits_for(self, now: float, free: int, active: int, queued: dict[str, int]) -> str | None:
        """The site the last free slot waits for, if it does (dispatch.py's docstring): when a site's chain of work
        left (its tasks' expected lengths and the cooldowns between them) is the longest and outlasts all the other
        queued work spread over the other slots, and that site is cooling, the last free slot waits for it rather
        than start something shorter. Only with a cooldown, two slots or more, exactly one of them free. The sums
        are written as the dispatcher writes them (the same floats, so ties fall the same way: the first site)."""
        if free != 1 or active < 2 or self.default <= 0:
            return None
        spu = self.done_s / self.done_units if self.done_units > 0 else PRIOR_S_PER_UNIT
        crit, crit_chain = None, 0.0
        for name in sorted(queued, key=self.rank.__getitem__):
            n = queued[name]
            chain = float(n) * spu + max(0, n - 1) * self.site(name).cooldown
            if chain > crit_chain:
                crit, crit_chain = name, chain
        if crit is None or self.busy(crit) or not self.cooling(crit, now):
            return None
        rest = (float(sum(queued.values())) - float(queued[crit])) * spu
        return crit if crit_chain >= rest / (active - 1) else None


def settles_by_the_readme(r: dict[str, Any]) -> bool:
    """An episode the run's stop interrupted or its user requeued runs again; so does a task the harness failed
    (infra, endpoint, storage: never the agent's). Anything else settles its task."""
    if r["status"] == "killed" and r["error"] in SETTLES_NOT:
        return False
    return not (r["status"] == "error" and r.get("error_kind") in HARNESS_KINDS)


# ── the watcher: a sink that keeps the events and checks each start as it happens ──
@dataclass
class Try:
    """One attempt as the events told it."""
    task_id: str
    attempt: int
    site: str
    slot: int
    t0: float                        # loop time of its start
    started_at: float                # epoch seconds, as its EpisodeStarted said
    runs0: int                       # runs the worker was handed for the task before it
    vanish0: int                     # the behaviour's vanishes left before it
    paused_s: float = 0.0
    paused_since: float | None = None
    t1: float | None = None          # loop time of its end
    record: dict[str, Any] | None = None
    put_back: bool = False
    ran: int = 0                     # runs the worker was handed during it
    vanished: bool = False           # its worker vanished on reading the task (before a word of it)


@dataclass
class Watcher:
    ex: FakeExecutor
    pacing: PacingModel
    sched: Scheduler | None = None
    live: bool = False
    tries: list[Try] = field(default_factory=list)
    open: dict[str, Try] = field(default_factory=dict)        # by task: its attempt running now
    on_slot: dict[int, Try] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    site_of: dict[str, str] = field(default_factory=dict)

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def handle(self, ev: object) -> None:
        if isinstance(ev, SlotChanged):
            self.slot_changed(ev)
        elif isinstance(ev, EpisodeStarted):
            self.started(ev)
        elif isinstance(ev, EpisodeFinished):
            self.ended(ev.record.task_id, ev.record.attempt, ev.record.to_json())
        elif isinstance(ev, EpisodePutBack):
            self.ended(ev.task_id, ev.attempt, None)
        elif isinstance(ev, RunStarted):
            self.live = True
        elif isinstance(ev, RunFinished):
            self.live = False

    def started(self, ev: EpisodeStarted) -> None:
        now, s = self.now(), self.sched
        assert s is not None
        if ev.task_id in self.open:
            self.problems.append(f"t={now:.2f}: {ev.task_id} started while its attempt {self.open[ev.task_id]} runs")
        # the moment before this start: its slot was free, its task queued
        free = sum(1 for x in s.slots.values() if x.episode is None and not x.retired) + 1
        active = sum(1 for x in s.slots.values() if not x.retired)
        queued = self.queued()
        queued[ev.site] = queued.get(ev.site, 0) + 1
        site = self.pacing.site(ev.site)
        if self.pacing.busy(ev.site):
            self.problems.append(f"t={now:.2f}: {ev.task_id} is episode {site.running + 1} at once on {ev.site} "
                                 f"(--site-slots {self.pacing.per_site})")
        elif self.pacing.cooling(ev.site, now):
            self.problems.append(f"t={now:.2f}: {ev.task_id} started on {ev.site}, ready only at {site.ready_at:.2f}")
        elif (waits := self.pacing.waits_for(now, free, active, queued)) is not None:
            self.problems.append(f"t={now:.2f}: {ev.task_id} started on {ev.site} where the last slot waits for "
                                 f"{waits} (queued {queued})")
        self.pacing.start(ev.site)
        b = self.ex.behaviour.get(ev.task_id, Behaviour())
        t = Try(ev.task_id, ev.attempt, ev.site, ev.slot, now, ev.started_at, self.runs_of(ev.task_id),
                b.vanish_before_start)
        self.tries.append(t)
        self.open[ev.task_id] = self.on_slot[ev.slot] = t

    def ended(self, task_id: str, attempt: int, record: dict[str, Any] | None) -> None:
        now = self.now()
        t = self.open.pop(task_id, None)
        if t is None or t.attempt != attempt:
            self.problems.append(f"t={now:.2f}: {task_id} attempt {attempt} ended, but {t} was running")
            return
        if self.on_slot.get(t.slot) is t:
            del self.on_slot[t.slot]
        self.unpause(t, now)
        t.t1, t.record, t.put_back = now, record, record is None
        t.ran = self.runs_of(task_id) - t.runs0
        t.vanished = self.ex.behaviour[task_id].vanish_before_start < t.vanish0
        reached = t.ran == 1 and not t.vanished
        self.pacing.end(t.site, now, record["status"] if record else None, reached=reached)
        if record is not None:
            self.pacing.learn(record["status"], record["duration_s"])

    def slot_changed(self, ev: SlotChanged) -> None:
        t = self.on_slot.get(ev.slot)
        if t is None or ev.task_id != t.task_id:
            return
        if ev.state == "paused" and t.paused_since is None:
            t.paused_since = self.now()
        elif ev.state != "paused":
            self.unpause(t, self.now())

    @staticmethod
    def unpause(t: Try, now: float) -> None:
        if t.paused_since is not None:
            t.paused_s += now - t.paused_since
            t.paused_since = None

    def runs_of(self, task_id: str) -> int:
        return sum(1 for tid, _ in self.ex.runs if tid == task_id)

    def queued(self) -> dict[str, int]:
        """Queued tasks by site: the queue's contents are state, read off the scheduler."""
        assert self.sched is not None
        return {site: len(q) for site, q in self.sched.queue.items() if q}

    def idle(self) -> str | None:
        """A free slot while a queued task's site may start by the model, dispatch is not paused and the dispatcher
        does not deliberately wait: what it is, or None."""
        seen = unexplained_idle(self.sched, self.pacing, self.live)
        if seen is None:
            return None
        now, free, ready, queued = seen
        return f"t={now:.2f}: slot {free[0]} idle while {ready} may start (queued {queued})"

    async def sample(self) -> None:
        """No slot idles while a task may start: a moment that shows one must be gone a moment later."""
        await sample_idle(self.idle, lambda: len(self.tries), self.problems)


def unexplained_idle(s: Scheduler | None, pacing: PacingModel, live: bool
                     ) -> tuple[float, list[int], list[str], dict[str, int]] | None:
    """Free slots while a queued task's site may start by the model, dispatch is not paused (by the user or a
    guard) and the last slot's wait does not explain them: (now, the free slots, the sites ready, queued by site),
    or None."""
    if s is None or not live or s.stopping or s.dispatch_paused:
        return None
    now = s.loop.time()
    free = [x.id for x in s.slots.values() if x.episode is None and not x.retired]
    queued = {site: len(q) for site, q in s.queue.items() if q}
    ready = [site for site in queued if pacing.may_start(site, now)]
    if not free or not ready:
        return None
    active = sum(1 for x in s.slots.values() if not x.retired)
    if pacing.waits_for(now, len(free), active, queued) is not None:
        return None
    return now, free, ready, queued


async def sample_idle(idle: Callable[[], str | None], progress: Callable[[], int], problems: list[str]) -> None:
    """Sampled: a moment that shows an unexplained idle slot (`idle`) must be gone a moment later, or something
    (`progress`: starts so far) must have started meanwhile."""
    while True:
        await asyncio.sleep(SAMPLE_EVERY)
        seen = idle()
        if seen is None:
            continue
        n = progress()
        await asyncio.sleep(0.01)
        if idle() is not None and progress() == n:
            problems.append(seen)


# ── a run ──────────────────────────────────────────────────
def drive(example: dict[str, Any], folder: Path) -> None:
    loop = looptime.new_event_loop(start=0, _enabled=True, noop_cycles=NOOP_CYCLES)
    try:
        loop.run_until_complete(asyncio.wait_for(_run(example, folder), RUN_LIMIT))
    finally:
        loop.close()


async def _run(example: dict[str, Any], folder: Path) -> None:
    loop = asyncio.get_running_loop()
    ours = asyncio.all_tasks()
    ex = FakeExecutor({k: Behaviour(**vars(b)) for k, b in example["behaviour"].items()},
                      start_s=example["start_s"], exit_seen_s=example["exit_seen_s"])
    world = World()
    cfg = RunConfig(out=folder, **example["cfg"])
    watcher = Watcher(ex, PacingModel(cfg.pace_cooldown, cfg.site_slots, example["tasks"]))

    async def probe() -> bool:
        return not ex.endpoint_down

    sched = Scheduler(cfg, example["tasks"], ex, [watcher], probe=probe, guard_ends_run=example["guard_ends_run"])
    watcher.sched = sched
    real_append = sched.store.append

    def append(record: dict[str, Any]) -> None:
        if world.disk_full:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(record)

    sched.store.append = append                       # type: ignore[method-assign]
    sched._space_ok = lambda: not world.disk_full     # type: ignore[method-assign]

    def act(op: str, arg: int) -> None:
        slot = sorted(sched.slots)[arg % len(sched.slots)] if sched.slots else 0
        if op == "kill":
            world.kills += sched.kill(slot)
        elif op == "requeue":
            world.requeues += sched.kill(slot, requeue=True)
        elif op == "pause_ep":
            sched.pause_episode(slot, True)
        elif op == "resume_ep":
            sched.pause_episode(slot, False)
        elif op == "pause":
            sched.pause_dispatch(True)
        elif op == "resume":
            sched.pause_dispatch(False)
        elif op == "workers":
            sched.set_workers(arg + 1)
        elif op == "retry":
            if sched.retry_errors():
                world.retried_at.append(loop.time())
        elif op == "down":
            ex.endpoint_down = world.went_down = True
        elif op == "up":
            ex.endpoint_down = False
        elif op == "disk_full":
            world.disk_full = True
        elif op == "disk_ok":
            world.disk_full = False
        elif op == "fail_start":
            ex.fail_starts += 1

    def heal() -> None:
        ex.endpoint_down = world.disk_full = False
        sched.pause_dispatch(False)
        for slot in list(sched.slots):
            sched.pause_episode(slot, False)

    def stop() -> None:
        world.stopped = True
        sched.stop()

    for at, op, arg in example["script"]:
        loop.call_at(at, act, op, arg)
    loop.call_at(WORLD_HEALS, heal)
    if example["stop_at"] is not None:
        loop.call_at(example["stop_at"], stop)
    ours_too = [asyncio.ensure_future(watcher.sample()), asyncio.ensure_future(user(sched))]
    try:
        await sched.run()
    finally:
        for t in ours_too:
            t.cancel()
        await asyncio.gather(*ours_too, return_exceptions=True)
    leftovers = [t for t in asyncio.all_tasks() - ours if not t.done()]
    assert leftovers == [], f"tasks outlive the run: {leftovers}"
    check(example, folder, ex, watcher, world, sched)


async def user(sched: Scheduler) -> None:
    """A console's user, once the world has healed: resumes a model guard that holds dispatch (it waits for them)."""
    await asyncio.sleep(WORLD_HEALS)
    while True:
        await asyncio.sleep(30.0)
        if sched.model_guard.holding:
            sched.pause_dispatch(False)


# ── the checks after the run ───────────────────────────────
def check(example: dict[str, Any], folder: Path, ex: FakeExecutor, w: Watcher, world: World,
          sched: Scheduler) -> None:
    assert w.problems == [], w.problems[:3]
    rows = read_results(folder).records + [r.to_json() for r in sched.records.unwritten]   # kept in memory: named
    check_attempts(rows, ex, w)
    for r, t in zip(rows, [attempt_of(w, r) for r in rows], strict=True):
        problems = record_problems(r, t, example, world)
        assert problems == [], (r["task_id"], r["attempt"], problems, r)
    check_tasks(rows, example, w, world, sched)


def attempt_of(w: Watcher, r: dict[str, Any]) -> Try:
    found = [t for t in w.tries if t.task_id == r["task_id"] and t.attempt == r["attempt"] and t.record is not None]
    assert len(found) == 1, (r["task_id"], r["attempt"], f"{len(found)} attempts ended in this record")
    return found[0]


def check_attempts(rows: list[dict[str, Any]], ex: FakeExecutor, w: Watcher) -> None:
    """Each attempt ended once, in a record (each written once, as its event said) or a put back; each run a worker
    was handed belongs to one attempt, which ended in a record unless its worker vanished on reading the task."""
    assert not w.open, f"attempts never ended: {list(w.open.values())[:3]}"
    written = [json.dumps(r, sort_keys=True, default=str) for r in rows]
    said = [json.dumps(t.record, sort_keys=True, default=str) for t in w.tries if t.record is not None]
    assert sorted(written) == sorted(said), "the records written are not the records the events said"
    assert sum(t.ran for t in w.tries) == len(ex.runs), "a worker was handed a task outside its attempt"
    for t in w.tries:
        assert t.ran in (0, 1), (t, "one attempt, several runs")
        if t.put_back:
            assert t.ran == 0 or t.vanished, (t, "put back after its worker had the task")
        elif t.ran == 0:   # recorded with no run: its worker failed to start
            assert t.record is not None and (t.record["status"], t.record["error_kind"]) == ("error", "infra"), t


def record_problems(r: dict[str, Any], t: Try, example: dict[str, Any], world: World) -> list[str]:
    """What is wrong with one record (of attempt `t`): nothing, for a right one."""
    b = example["behaviour"][r["task_id"]]
    status, kind, out = r["status"], r.get("error_kind"), []
    if status not in STATUSES:
        out.append(f"status {status!r}")
    if status == "error" and (kind not in ERROR_KINDS or not r["error"]):
        out.append(f"an error of kind {kind!r} saying {r['error']!r}")
    if status != "error" and kind is not None:
        out.append(f"error_kind {kind!r} on a {status} record")
    if status == "killed" and r["error"] not in KILLED_BECAUSE:
        out.append(f"killed, saying {r['error']!r}")
    if kind == "endpoint" and not r.get("model_fault"):
        out.append("an endpoint error with no model_fault")
    if settles(r) != settles_by_the_readme(r):
        out.append(f"results.settles says {settles(r)}, the guide's rule {not settles(r)}")
    if r["steps"] > b.steps or (status in ("done", "out_of_steps") and r["steps"] != b.steps):
        out.append(f"{r['steps']} steps of the worker's {b.steps} ({status})")
    if status == "blocked" and not b.blocked:
        out.append("blocked on a site that showed no wall")
    if status == "out_of_steps" and not b.out_of_steps:
        out.append("out of steps for an agent that said done")
    if r["answer"] and not (status == "done" and r["agent_done"]):
        out.append(f"the answer {r['answer']!r} of an agent that did not say done ({status})")
    if kind == "endpoint" and not (b.infra_failures or world.went_down):
        out.append("an endpoint error while the endpoint never failed")
    if kind == "model" and (not b.model_failure or r.get("model_fault") != b.model_failure):
        out.append(f"ended on the model's {r.get('model_fault')!r}; the model failed with {b.model_failure!r}")
    return out + clock_problems(r, t, example)


def clock_problems(r: dict[str, Any], t: Try, example: dict[str, Any]) -> list[str]:
    """The record's clock is its attempt's; a timeout lasted its timeout (and its pauses) and ended within the
    stop grace after; no record lasted longer than its timeout, its worker's start and a stop's grace allow (the
    record's clock starts when the attempt does, the timeout's when the worker has the task: attempt.py)."""
    cfg, out = example["cfg"], []
    duration, window = r["duration_s"], r["finished_at"] - r["started_at"]
    if abs(duration - window) > 0.05 + 2e-3:
        out.append(f"duration_s {duration} for a window of {window:.3f} s")
    assert t.t1 is not None
    if abs(r["started_at"] - round(t.started_at, 3)) > 1e-6 or abs(window - (t.t1 - t.t0)) > 2e-3:
        out.append(f"its window {r['started_at']}..{r['finished_at']} is not its attempt's ({t.t1 - t.t0:.3f} s)")
    longest = cfg["timeout"] + t.paused_s + example["start_s"] + example["exit_seen_s"] + RECORD_SLACK_S
    if duration > longest + max(cfg["stop_grace"], USER_KILL_GRACE_S):
        out.append(f"lasted {duration} s, past its timeout {cfg['timeout']} s (paused {t.paused_s:.1f} s)")
    if r["status"] == "timeout":
        if duration < cfg["timeout"] + t.paused_s - 0.1:
            out.append(f"timed out after {duration} s of {cfg['timeout']} s (paused {t.paused_s:.1f} s)")
        if duration > longest + cfg["stop_grace"]:
            out.append(f"timed out after {duration} s: past its timeout {cfg['timeout']} s and grace")
    return out


def check_tasks(rows: list[dict[str, Any]], example: dict[str, Any], w: Watcher, world: World,
                sched: Scheduler) -> None:
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_task[r["task_id"]].append(r)
    retries = example["cfg"]["retries"]
    # stopped, or its model guard ended it (a run without a screen): tasks may be left
    ended_early = world.stopped or (example["guard_ends_run"] and sched.model_guard.holding)
    for t in example["tasks"]:
        mine = by_task[t.task_id]
        trail = [(r["status"], r["error"], r["attempt"]) for r in mine]
        settling = [r for r in mine if settles_by_the_readme(r)]
        for r, later in zip(mine, mine[1:]):   # a task settled runs again only as an error its user retried
            if settles_by_the_readme(r):
                ended, starts = attempt_of(w, r).t1, attempt_of(w, later).t0
                assert r["status"] == "error" and any(ended <= x <= starts for x in world.retried_at), \
                    (t.task_id, "ran after it was settled", trail)
        assert [r["attempt"] for r in mine] == list(range(1, len(mine) + 1)), (t.task_id, trail)
        if not ended_early and sched.stats.unwritten == 0:
            retried = ("infra", "endpoint")   # the harness's faults that cost a try
            harness_gave_up = bool(mine) and mine[-1]["status"] == "error" and mine[-1]["error_kind"] in retried
            assert settling or harness_gave_up, (t.task_id, "the run ended with the task unsettled", trail)
            if harness_gave_up:
                assert len([r for r in mine if r["error_kind"] in retried]) >= retries + 1, (t.task_id, trail)
    killed = [r["error"] for r in rows if r["status"] == "killed"]
    assert killed.count("killed by user") <= world.kills and killed.count("requeued") <= world.requeues, killed
    assert world.stopped or "interrupted" not in killed, "interrupted, but the run was never stopped"
    if not world.stopped:
        assert sched.stats.unwritten == 0 and not sched.records.unwritten, "records left unwritten at the end"
        assert not sched.running() and (ended_early or sched.pending() == 0)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(runs())
def test_no_interleaving_loses_a_task_runs_it_twice_or_breaks_pacing(example):
    folder = Path(tempfile.mkdtemp(prefix="om2w-prop-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        drive(example, folder / "run")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ── a campaign: units of several lanes on one queue and pacer ──
LANE_EXAMPLES = max(1, EXAMPLES // 10)   # ~0.3 s an example
LANE_OPS = ("kill", "requeue", "pause", "resume", "pause_arm", "resume_arm", "workers")


@st.composite
def campaigns(draw: Any) -> dict[str, Any]:
    """Tasks on a few sites run by 2-3 arms and 1-2 repeats; each unit's worker may finish, hang, crash or fail on its
    model; a script of user events (kills, requeues, dispatch and arm pauses, slot changes), or none ("quiet")."""
    arms = ["a", "b", "c"][: draw(st.integers(2, 3))]
    repeats = draw(st.integers(1, 2))
    lanes = [(arm if r == 1 else f"{arm}-r{r}", arm) for r in range(1, repeats + 1) for arm in arms]
    tasks = [Task(f"s{s}-{i}", f"task {i} on site {s}", f"https://s{s}.example/", "easy")
             for s in range(draw(st.integers(1, 4))) for i in range(draw(st.integers(1, 4)))]
    quiet = draw(st.integers(0, 2)) == 0
    behaviour = {} if quiet else {
        f"{lane}/{t.task_id}": Behaviour(
            steps=draw(st.integers(0, 3)), step_s=draw(st.sampled_from([1.0, 7.0, 40.0])),
            ignore_stop=draw(st.integers(0, 8)) == 0,
            die_at_step=draw(st.integers(0, 2)) if draw(st.integers(0, 6)) == 0 else None,
            model_failure=draw(st.sampled_from(MODEL_FAILURES)) if draw(st.integers(0, 4)) == 0 else None)
        for lane, _ in lanes for t in tasks}
    cfg = dict(workers=draw(st.integers(1, 4)), pace_cooldown=draw(st.sampled_from([0.0, 10.0, 60.0])),
               timeout=draw(st.sampled_from([25.0, 1000.0])), retries=1, stop_grace=3.0,
               model_guard=draw(st.sampled_from([0, 1, 2])), pair_hold=draw(st.sampled_from([0.0, 0.0, 45.0])))
    script = [] if quiet else draw(st.lists(st.tuples(st.floats(0, SCRIPT_END, allow_nan=False),
                                                      st.sampled_from(LANE_OPS), st.integers(0, 5)), max_size=10))
    return {"lanes": lanes, "tasks": tasks, "behaviour": behaviour, "cfg": cfg, "script": sorted(script),
            "quiet": quiet, "guard_ends_run": draw(st.booleans())}


@dataclass
class LaneWatcher:
    """Each start and end as the events said them, checked as they happen: one episode a site at a time whatever
    its lane, the cooldown after every episode that reached its worker, nothing started of a paused arm. And,
    sampled, no slot idle while a queued unit may start, but for the last slot's wait (`PacingModel.waits_for`) or
    a slot kept for a started task's next unit (the guide's Campaigns, Speed): at most one free slot for each such
    unit whose site comes off its cooldown within the hold's horizon (the larger of `--pair-hold` and the
    cooldown), so a kept slot is never kept past its unit's start nor for a unit further off."""
    ex: FakeExecutor
    cooldown: float
    pacing: PacingModel
    pair_hold: float = 0.0
    sched: Scheduler | None = None
    live: bool = False
    begun: set[str] = field(default_factory=set)                          # tasks with a unit started
    paused: set[str] = field(default_factory=set)                         # arms the user holds now
    running: dict[str, str] = field(default_factory=dict)                 # site -> the unit on it
    ready_at: dict[str, float] = field(default_factory=dict)
    starts: list[tuple[str, str, str]] = field(default_factory=list)     # (site, lane, task) in start order
    runs0: dict[tuple[str, str], int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    units: dict[str, set[tuple[str, str]]] = field(default_factory=dict)   # site -> its (lane, task) units

    def handle(self, ev: object) -> None:
        now = asyncio.get_running_loop().time()
        if isinstance(ev, EpisodeStarted):
            arm = ev.lane.split("-r")[0]
            if ev.site in self.running:
                self.problems.append(f"t={now:.2f}: {ev.lane}/{ev.task_id} started on {ev.site} while "
                                     f"{self.running[ev.site]} runs there")
            if now < self.ready_at.get(ev.site, 0.0) - CLOCK_SLACK_S:
                self.problems.append(f"t={now:.2f}: {ev.lane}/{ev.task_id} started on {ev.site}, ready only at "
                                     f"{self.ready_at[ev.site]:.2f}")
            if arm in self.paused:
                self.problems.append(f"t={now:.2f}: {ev.lane}/{ev.task_id} started while arm {arm} is paused")
            self.running[ev.site] = f"{ev.lane}/{ev.task_id}"
            self.runs0[(ev.lane, ev.task_id)] = len(self.ex.runs)
            self.starts.append((ev.site, ev.lane, ev.task_id))
            self.begun.add(ev.task_id)
            self.pacing.start(ev.site)
        elif isinstance(ev, EpisodeFinished | EpisodePutBack):
            lane, tid = (ev.lane, ev.record.task_id) if isinstance(ev, EpisodeFinished) else (ev.lane, ev.task_id)
            site = next(s for s, unit in self.running.items() if unit == f"{lane}/{tid}")
            del self.running[site]
            reached = isinstance(ev, EpisodeFinished) and len(self.ex.runs) > self.runs0[(lane, tid)]
            if reached:   # an episode whose worker never had the task costs no cooldown
                self.ready_at[site] = now + self.cooldown
            status = ev.record.status if isinstance(ev, EpisodeFinished) else None
            self.pacing.end(site, now, status, reached=reached)
            if isinstance(ev, EpisodeFinished):
                self.pacing.learn(ev.record.status, ev.record.duration_s)
        elif isinstance(ev, RunStarted | RunFinished):
            self.live = isinstance(ev, RunStarted)

    def idle(self) -> str | None:
        """A free slot while a queued unit may start, dispatch is not paused and neither the last slot's wait nor
        a next unit coming explains it: what it is, or None."""
        seen = unexplained_idle(self.sched, self.pacing, self.live)
        if seen is None:
            return None
        now, free, ready, queued = seen
        s = self.sched
        assert s is not None
        horizon = max(self.pair_hold, self.cooldown)
        coming = [site for site in queued if s.queue[site][0].task_id in self.begun and not self.pacing.busy(site)
                  and now < self.pacing.site(site).ready_at - CLOCK_SLACK_S <= now + horizon]
        if len(free) <= len(coming):
            return None
        return f"t={now:.2f}: slots {free} idle while {ready} may start (next units coming: {coming})"

    def sites_problems(self) -> list[str]:
        """The Sites panel against the events: a unit never started is left on its site (queued, or its arm held), so
        a site's left is at least its units not started yet and says done only with nothing left and nothing running
        there; and the sites' left sum to the summary's pending (`ctl status`'s queued)."""
        s = self.sched
        if s is None or not self.live:
            return []
        now, snap = s.loop.time(), s.snapshot()
        out = []
        if sum(x.left for x in snap.sites) != snap.summary.pending:
            out.append(f"t={now:.2f}: the sites' left sum to {sum(x.left for x in snap.sites)}, "
                       f"pending {snap.summary.pending}")
        for x in snap.sites:
            unstarted = sum(1 for unit in self.units.get(x.site, ()) if unit not in self.runs0)
            if x.left < unstarted or (x.state == "done" and (x.left or x.site in self.running)):
                out.append(f"t={now:.2f}: {x.site} says {x.state}, {x.left} left, while {unstarted} of its units "
                           f"never started (paused arms: {sorted(self.paused)})")
        return out

    async def sample(self) -> None:
        async def sites() -> None:
            while True:
                await asyncio.sleep(SAMPLE_EVERY)
                self.problems += self.sites_problems()

        await asyncio.gather(sample_idle(self.idle, lambda: len(self.starts), self.problems), sites())


async def _run_campaign(example: dict[str, Any], folder: Path) -> None:
    ours = asyncio.all_tasks()
    loop = asyncio.get_running_loop()
    ex = FakeExecutor({k: Behaviour(**vars(b)) for k, b in example["behaviour"].items()})
    shared = RunConfig(out=folder, **example["cfg"])
    lanes = [Lane(name, arm, int(name.split("-r")[1]) if "-r" in name else 1,
                  RunConfig(**{**vars(shared), "out": folder / name}), tuple(example["tasks"]))
             for name, arm in example["lanes"]]
    w = LaneWatcher(ex, shared.pace_cooldown, PacingModel(shared.pace_cooldown, shared.site_slots, example["tasks"]),
                    shared.pair_hold)
    sched = w.sched = Scheduler(shared, example["tasks"], ex, [w], guard_ends_run=example["guard_ends_run"],
                                lanes=lanes)
    for t in example["tasks"]:
        w.units.setdefault(t.site, set()).update((name, t.task_id) for name, _ in example["lanes"])
    arms = sorted({arm for _, arm in example["lanes"]})

    def act(op: str, arg: int) -> None:
        slot = sorted(sched.slots)[arg % len(sched.slots)] if sched.slots else 0
        arm = arms[arg % len(arms)]
        if op == "kill":
            sched.kill(slot)
        elif op == "requeue":
            sched.kill(slot, requeue=True)
        elif op == "pause":
            sched.pause_dispatch(True)
        elif op == "resume":
            sched.pause_dispatch(False)
        elif op == "pause_arm":
            assert sched.pause_lane(arm, True)
            w.paused.add(arm)
        elif op == "resume_arm":
            assert sched.pause_lane(arm, False)
            w.paused.discard(arm)
        elif op == "workers":
            sched.set_workers(arg % 4 + 1)

    def heal() -> None:
        sched.pause_dispatch(False)   # lets every lane's model guard go too
        for arm in arms:
            sched.pause_lane(arm, False)
        w.paused.clear()

    async def console_user() -> None:   # resumes a held model guard now and then, as a console's user would
        await asyncio.sleep(WORLD_HEALS)
        while True:
            await asyncio.sleep(30.0)
            if sched.lanes.guard_reason() and not example["guard_ends_run"]:
                sched.pause_dispatch(False)

    for at, op, arg in example["script"]:
        loop.call_at(at, act, op, arg)
    loop.call_at(WORLD_HEALS, heal)
    ours_too = [asyncio.ensure_future(console_user()), asyncio.ensure_future(w.sample())]
    try:
        await sched.run()
    finally:
        for t in ours_too:
            t.cancel()
        await asyncio.gather(*ours_too, return_exceptions=True)
    assert [t for t in asyncio.all_tasks() - ours if not t.done()] == [], "tasks outlive the run"
    check_campaign(example, folder, w, sched)


def check_campaign(example: dict[str, Any], folder: Path, w: LaneWatcher, sched: Scheduler) -> None:
    assert w.problems == [], w.problems[:3]
    held = example["guard_ends_run"] and bool(sched.lanes.guard_reason())   # a guard ended it: held units left
    for name, _ in example["lanes"]:
        rows = read_results(folder / name).records
        assert all(r["task_id"] in {t.task_id for t in example["tasks"]} for r in rows)
        for t in example["tasks"]:
            mine = [r for r in rows if r["task_id"] == t.task_id]
            settling = [r for r in mine if settles_by_the_readme(r)]
            assert len(settling) <= 1 and (not settling or mine[-1] is settling[0]), (name, t.task_id, mine)
            assert [r["attempt"] for r in mine] == list(range(1, len(mine) + 1)), (name, t.task_id)
            if not held:   # settled exactly once, in its own lane's results
                harness = bool(mine) and mine[-1].get("error_kind") in HARNESS_KINDS
                assert settling or harness, (name, t.task_id, "unsettled at the end", mine)
    assert not (folder / "results.jsonl").exists()
    if example["quiet"]:   # no faults, no user: a task's units one after another on its site, the first arm turning
        n = len(example["lanes"])
        for site in {s for s, _, _ in w.starts}:
            order = [(lane, tid) for s, lane, tid in w.starts if s == site]
            groups = [order[i:i + n] for i in range(0, len(order), n)]
            assert all(len({tid for _, tid in g}) == 1 and len(g) == n for g in groups), (site, order)
            firsts = [g[0][0].split("-r")[0] for g in groups]
            assert all(a != b for a, b in zip(firsts, firsts[1:])), (site, "the same arm first twice", order)


def drive_campaign(example: dict[str, Any], folder: Path) -> None:
    loop = looptime.new_event_loop(start=0, _enabled=True, noop_cycles=NOOP_CYCLES)
    try:
        loop.run_until_complete(asyncio.wait_for(_run_campaign(example, folder), RUN_LIMIT))
    finally:
        loop.close()


@settings(max_examples=LANE_EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(campaigns())
def test_units_of_several_lanes_settle_once_each_share_the_pacer_and_pair_in_time(example):
    folder = Path(tempfile.mkdtemp(prefix="om2w-prop-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        drive_campaign(example, folder / "camp")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
