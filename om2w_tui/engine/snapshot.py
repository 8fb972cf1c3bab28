"""What front ends see of a running run, read off the scheduler's parts when asked: `run_summary` (its counts, the
model's calls, where its records went; a campaign's lanes and pairing gaps) and `run_snapshot` (slots, sites with
their cooldown deadlines, guards and counts, in loop-clock times), with `RunStats`, the counts the scheduler keeps as
attempts settle. Pure reading: nothing here changes the run (a front end pulls a snapshot about once a second, as
Inspect's display does)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.estimate import fit, scaled
from om2w_tui.engine.events import Pacing, RunSnapshot, RunSummary, SiteRow, SiteState, SlotRow
from om2w_tui.engine.lanes import LaneSet
from om2w_tui.engine.ledger import Ledger
from om2w_tui.engine.model_health import ModelGuard, ModelMeter
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.results import ResultsStore
from om2w_tui.engine.slot import Slot
from om2w_tui.protocol.run_end import decide


@dataclass
class RunStats:
    total: int = 0
    settled_before: int = 0
    finished: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    unwritten: int = 0                 # records the out folder never took (the run was stopped while it was full)


class ObservedRun(Protocol):
    """What a summary and a snapshot read of the run (the scheduler is one)."""
    cfg: RunConfig
    out: Path
    store: ResultsStore
    lanes: LaneSet
    stats: RunStats
    started_mono: float
    slots: dict[int, Slot]
    ledger: Ledger
    pacer: SitePacer
    queue: dict[str, deque[Task]]
    dispatch: Dispatcher
    model: ModelMeter
    model_guard: ModelGuard
    user_paused: bool
    stopping: bool
    guard_ends_run: bool
    target_workers: int
    over: bool                          # the run has ended: every episode ended, its last record written or lost

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def dispatch_paused(self) -> bool: ...

    def epoch(self) -> float: ...

    @property
    def breaker_open(self) -> bool: ...

    @property
    def breaker_reason(self) -> str: ...

    @property
    def storage_error(self) -> str: ...

    def pending(self) -> int: ...

    def site_name(self, key: str) -> str: ...


def run_summary(run: ObservedRun) -> RunSummary:
    s = run.stats
    return RunSummary(total=s.total, settled_before=s.settled_before, finished=s.finished,
                      by_status=dict(s.by_status), pending=run.pending(),
                      elapsed_s=round(run.loop.time() - run.started_mono, 1), out=str(run.out),
                      correct=run.ledger.correct if run.ledger.judged else None,
                      judged=run.ledger.judged or None,
                      unwritten=run.lanes.unwritten(), results=str(run.store.path),
                      model_guard=run.lanes.guard_reason(),
                      model_calls={**({"ok": run.model.ok} if run.model.ok else {}), **run.model.failures},
                      model_ended=dict(run.model.ended_on),
                      end=decide(failed=bool(run.lanes.unwritten()), stopped=run.stopping,
                                 guard_ended=bool(run.lanes.guard_reason()) and run.guard_ends_run)
                      if run.over else None,   # a summary taken while the run goes on says no end
                      lanes=run.lanes.rows(run.ledger), pairing=run.lanes.pairing.summary())


def run_snapshot(run: ObservedRun) -> RunSnapshot:
    """The state front ends draw from: slots, sites with their cooldown deadlines, counts (loop-clock times)."""
    now = run.loop.time()
    summary = run_summary(run)
    slots = []
    d = run.dispatch
    learnt = fit(d.recent, d.s_per_unit())
    under_way = {}    # slot -> (its task's units, its seconds so far, its expected seconds left)
    for s in run.slots.values():
        if s.episode is not None:
            units, elapsed = d.task_units(s.episode.task), max(0.0, run.epoch() - s.episode.started_at)
            under_way[s.id] = (units, elapsed, learnt.seconds_left(units, elapsed))
    lengths = scaled(learnt, d.recent, under_way.values())
    for s in sorted(run.slots.values(), key=lambda s: s.id):
        ep = s.episode
        if ep is None:
            slots.append(SlotRow(s.id, "retiring" if s.retired else "idle"))
            continue
        slots.append(SlotRow(s.id, ep.state, ep.task.task_id, run.site_name(ep.task.site), ep.task.level, ep.steps,
                             ep.started_at, ep.attempt, ep.task.max_steps,
                             run.model.slot_error(s.id), lane=ep.task.lane, left_s=round(under_way[s.id][2], 1)))
    sites = []
    held = run.lanes.parked_on()
    for name, c in run.ledger.sites.items():
        st = run.pacer.state(name)
        queued = len(run.queue.get(name, ()))
        left = queued + held[name]   # a held arm's units are left too: the sites' left sum to the summary's pending
        # a site with no unit left is done, whatever its cooldown: it waits for nothing; one whose units left are all
        # a held arm's waits for its user (or its model guard)
        state: SiteState = "running" if st.running else (
            "done" if not left else "held" if not queued else "cooling" if st.ready_at > now else "free")
        if state == "free" and run.pacer.held_elsewhere(name):
            state = "held elsewhere"   # by another run pacing through the same --pace-dir
        work = lengths.work(queued, d.site_units.get(name, 0.0))
        sites.append(SiteRow(run.site_name(name), state, st.ready_at, left, c.done, c.errors, c.total,
                             st.cooldown, st.running, st.limit, round(work, 1)))
    return RunSnapshot(now=now, slots=slots, sites=sites, paused=run.dispatch_paused,
                       user_paused=run.user_paused, breaker=run.breaker_reason if run.breaker_open else "",
                       storage=run.storage_error, stopping=run.stopping,
                       pacing=Pacing(run.pacer.per_site, run.pacer.cooldown),
                       target_workers=run.target_workers, errors=len(run.ledger.errored), summary=summary,
                       model=run.model.stats(now, run.lanes.guard_reason()), lanes=summary.lanes)
