"""A campaign against its pacing bound and against today's way: arms and repeats on one queue and pacer.

    .venv/bin/python bench/campaign.py [--slots 4,12,32] [--arms 2] [--repeats 1,3] [--cooldown 120] [--limit N]
                                       [--slower 1,1.5] [--pair-hold 0]

The real `Scheduler` runs the campaign's units (one per arm, repeat and task of the real Online-Mind2Web file) in
virtual time on stand-in workers (bench/_common.py), each unit's episode its own draw of length (median ~2 min, p99
~15 min). Figures per configuration:

- makespan / bound, where the bound is the pacing bound of all units: the larger of the work per slot (every unit's
  length over the slots) and the busiest site's chain (its units' lengths and a cooldown between each two);
- the pairing gap by the campaign's one definition (engine/pairing.py: per compared pair, an arm's k-th repeat and
  the first arm's of a task, the later start minus the earlier): median, p90, worst, against one cooldown plus one
  median episode (a task's units one after another on its site), and the floor: the median of what each pair's gap
  would be with no wait for a slot (the lengths of the task's units from the earlier of the two up to the later, in
  the order they ran, and a cooldown after each); the busy floor: the median of what each pair's gap would be had its
  later unit taken the first slot to come free once its site allowed it (at that moment a slot was idle, or the wait
  until the first episode then under way ended); beside them the median span of a task (its first unit's start to
  its last's), which grows by an episode and a cooldown a unit;
- today's way, on the same lengths: one run per arm side by side, each with its share of the slots, sharing one pacer
  (as `--pace-dir` does: a site runs one episode whichever run holds it); repeats one after another. The ratios:
  makespan (campaign / today's) and median gap (today's / campaign).

`--today seed`: today's way as the seed's runner does it instead (../shared/seed: per arm one process a slot, each
with a fixed share of the file, `k % workers` in file order, taking the first pending task of its share whose site
is free and cooled down, polling every 15 s when none is), on the same lengths and one pacer.

`--slower F`: the arms after the first take F times as long per episode (the seed's `agent` arm, a planner delegating
to specialists, against one agent); rows for each value given, 1 the same speed. With the same speed two runs started
together on the same file walk it in step (the case most favourable to today's way); at different speeds they drift
apart. `--pair-hold S`: the campaign's `--pair-hold` (a free slot waits up to S s for a started task's next unit even
while every slot is needed), rows for each value: the trade-off of the makespan for the gap where the run is bound by
its work; the goals are judged on 0, the default.

Goals: makespan <= 1.02 x bound; median gap <= that reference; against today's way a makespan no longer and a median
gap at least 10 times smaller (`x max`: today's median over the busy floor, the most a busy schedule can make it).
A goal is `met`, `MISSED`, or `beyond` where even the busy floor misses it: no schedule that keeps every slot busy
and cannot see an episode's length before it ends can meet it, for which episode ends next does not depend on when a
task's site comes off its cooldown (where every slot is busy a next unit waits for that end; a slot kept idle for it
lengthens the run, `--pair-hold`). With no slot busy at all the floor is the lowest any schedule can reach: a site
runs one episode at a time and cools down after it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from _common import (
    MAX_EPISODE_S,
    SimExecutor,
    SimWorker,
    episode_lengths,
    median,
    om2w_tasks,
    pct,
    verdict,
    virtual_loop,
)

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.campaign_folder import LaneName, lane_name
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import EpisodeFinished, EpisodeStarted, PairingGaps, RunFinished
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.pacing import SitePacer, SiteState
from om2w_tui.engine.pairing import compared_pairs
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.protocol.worker import Command, Run

MAKESPAN_GOAL = 1.02
GAP_RATIO_GOAL = 10.0
ARMS = ("base", "agent", "c", "d")


# ── stand-in workers whose length is their unit's ─────────
class LaneSimExecutor(SimExecutor):
    """`length` by `LANE/task id` (the lane: the episode folder's parent, its run folder's name)."""

    async def start_worker(self, slot: int) -> SimWorker:
        w = LaneSimWorker(self, slot)
        self.workers.append(w)
        return w


class LaneSimWorker(SimWorker):
    async def send(self, cmd: Command) -> bool:
        if isinstance(cmd, Run):   # its length is its unit's: the task id seen here carries its lane
            cmd = Run({**cmd.task, "task_id": f"{Path(cmd.spec.folder).parent.name}/{cmd.task['task_id']}"},
                      cmd.spec)
        return await super().send(cmd)


class Starts:
    """A sink: each unit's first start (loop time) and the last episode's end; and every episode's site, start and end
    (for the busy floor)."""

    def __init__(self, lane: str = "") -> None:
        self.lane = lane            # the run's lane, for a plain run (its events carry none)
        self.first: dict[tuple[str, str], float] = {}
        self.end = 0.0
        self.finished = 0
        self.pairing = PairingGaps()   # the run's own measure, as its summary said at the end
        self.running: dict[int, tuple[str, float]] = {}        # slot -> (site, start)
        self.episodes: list[tuple[str, float, float]] = []     # (site, start, end), every episode

    def handle(self, ev: object) -> None:
        now = asyncio.get_running_loop().time()
        if isinstance(ev, EpisodeStarted):
            self.first.setdefault((ev.lane or self.lane, ev.task_id), now)
            self.running[ev.slot] = (ev.site, now)
        elif isinstance(ev, EpisodeFinished):
            self.end, self.finished = now, self.finished + 1
            site, start = self.running.pop(ev.slot)
            self.episodes.append((site, start, now))
        elif isinstance(ev, RunFinished):
            self.pairing = ev.summary.pairing


def busy_floor(first: dict[tuple[str, str], float], episodes: list[tuple[str, float, float]], site: dict[str, str],
               lanes: list[LaneName], slots: int, cooldown: float) -> list[float]:
    """Per compared pair, the gap it would have had if its later unit had taken the first slot that came free once its
    site allowed it (the site's last episode before it ended and cooled down): at that moment a slot was idle (no
    wait), or the wait is until the first episode then running ended. A schedule that keeps every slot busy and does
    not know how long an episode will take cannot do better than this wait: which episode ends next does not depend on
    when a task's site comes off its cooldown."""
    spans = sorted((s, e) for _, s, e in episodes)
    by_site: dict[str, list[float]] = {}
    for st, _, e in episodes:
        by_site.setdefault(st, []).append(e)
    for v in by_site.values():
        v.sort()

    def wait_from(ready: float) -> float:
        running = [e for s, e in spans if s <= ready < e]   # the episodes under way when the site allowed the unit
        if len(running) < slots:
            return 0.0
        return min(running) - ready

    out = []
    pairs = [(lanes[a].name, lanes[b].name) for a, b in compared_pairs(lanes)]
    for tid in {t for _, t in first}:
        for a, b in pairs:
            if (a, tid) not in first or (b, tid) not in first:
                continue
            early, late = sorted((first[(a, tid)], first[(b, tid)]))
            before = [e for e in by_site[site[tid]] if e <= late]   # the site's episodes ended before the later start
            ready = max(early, before[-1] + cooldown) if before else early
            out.append(ready - early + wait_from(ready))
    return out


def unit_lanes(arms: int, repeats: int) -> list[LaneName]:
    """The lanes as a campaign runs them (repeats interleaved, the first arm the baseline), as pairing names them."""
    return [LaneName(lane_name(arm, r), arm, r) for r in range(1, repeats + 1) for arm in ARMS[:arms]]


def gaps(first: dict[tuple[str, str], float], lanes: list[LaneName], length: dict[str, float] | None = None,
         cooldown: float = 0.0) -> tuple[list[float], list[float], list[float]]:
    """From each unit's first start, by the campaign's one definition (engine/pairing.py): per compared pair of each
    task both of whose units started, the later start minus the earlier; per task whose units all started, the span
    (the latest start minus the earliest); and with `length`, each pair's floor: its gap with no wait for a slot (the
    lengths of the task's units from the earlier of the two up to the later, in the order they ran, and a cooldown
    after each)."""
    pairs = [(lanes[a].name, lanes[b].name) for a, b in compared_pairs(lanes)]
    by_task: dict[str, dict[str, float]] = {}
    for (lane, tid), t in first.items():
        by_task.setdefault(tid, {})[lane] = t
    out, spans, floors = [], [], []
    for tid, at in by_task.items():
        if len(at) == len(lanes):
            spans.append(max(at.values()) - min(at.values()))
        ran = sorted(at, key=lambda lane: at[lane])
        for a, b in pairs:
            if a in at and b in at:
                out.append(abs(at[b] - at[a]))
                if length is not None:
                    i, j = sorted((ran.index(a), ran.index(b)))
                    floors.append(sum(length[f"{lane}/{tid}"] + cooldown for lane in ran[i:j]))
    return out, spans, floors


# ── today's way: runs side by side on one pacer ────────────
class PacerView(SitePacer):
    """One run's view of a pacer shared by several runs in one loop (as `--pace-dir` shares one across processes):
    the sites' states are the shared pacer's; a release wakes the other runs (they learn of it as a pace dir's runs
    do, when they look again); the dispatcher scans, as it does with a pace dir."""

    knows_all = False

    def __init__(self, shared: SitePacer, views: list[PacerView]):
        super().__init__(shared.cooldown, shared.per_site)
        self.shared, self.views = shared, views
        self.mine: dict[str, int] = {}
        self.wake: Callable[[], None] = lambda: None
        views.append(self)

    def state(self, site: str) -> SiteState:
        return self.shared.state(site)

    def acquire(self, site: str, now: float) -> None:
        super().acquire(site, now)
        self.mine[site] = self.mine.get(site, 0) + 1

    def release(self, site: str, now: float) -> None:
        super().release(site, now)
        self._left(site)

    def release_without_cooldown(self, site: str) -> None:
        super().release_without_cooldown(site)
        self._left(site)

    def _left(self, site: str) -> None:
        self.mine[site] = max(0, self.mine.get(site, 0) - 1)
        for v in self.views:
            if v is not self:
                v.wake()

    def held_elsewhere(self, site: str) -> bool:
        return self.state(site).running > self.mine.get(site, 0)


def today(tasks: list[Task], length: dict[str, float], arms: int, repeats: int, slots: int,
          cooldown: float) -> tuple[float, list[float], list[float]]:
    """Each repeat: one run per arm side by side (slots shared out); repeats one after another; one pacer and one
    clock throughout (a site's cooldown carries from one repeat to the next, as a pace dir's does)."""
    first: dict[tuple[str, str], float] = {}   # every unit's first start, over all runs
    sinks: list[Starts] = []

    def side(d: Path, r: int, k: int, arm: str, shared: SitePacer, views: list[PacerView]) -> Scheduler:
        name = lane_name(arm, r)
        share = slots // arms + (k < slots % arms)
        cfg = RunConfig(out=d / name, workers=max(1, share), pace_cooldown=cooldown, timeout=10 * 3600.0)
        sink = Starts(name)
        sink.first = first
        sinks.append(sink)
        sched = Scheduler(cfg, tasks, LaneSimExecutor(length, step_s=600.0), [sink])
        view = PacerView(shared, views)
        view.wake = sched.wake
        sched.pacer = view
        sched.dispatch = Dispatcher(view, sched.tasks)
        sched.queue = sched.dispatch.queue
        return sched

    async def repeats_in_turn(d: Path) -> None:
        shared, views = SitePacer(cooldown), []
        for r in range(1, repeats + 1):
            views.clear()
            await asyncio.gather(*(side(d, r, k, arm, shared, views).run() for k, arm in enumerate(ARMS[:arms])))

    with tempfile.TemporaryDirectory(prefix="om2w-campaign-") as d, virtual_loop() as loop:
        loop.run_until_complete(repeats_in_turn(Path(d)))
    if sum(x.finished for x in sinks) != arms * repeats * len(tasks):
        raise SystemExit("today's runs did not finish every task once")
    pairs, spans, _ = gaps(first, unit_lanes(arms, repeats))
    return max(x.end for x in sinks), pairs, spans


SEED_POLL_S = 15.0   # the seed's worker sleeps this long when no task of its share may start


def seed_today(tasks: list[Task], length: dict[str, float], arms: int, repeats: int, slots: int,
               cooldown: float) -> tuple[float, list[float], list[float]]:
    """Today's way as the seed runs it (../shared/seed, `worker`): per arm one process a slot, each with a fixed share
    of the file (`k % workers`, in file order), taking the first pending task of its share whose site is free and
    cooled down (a lock per site shared by every run on the node) and sleeping 15 s when none is; the arms side by
    side with the slots shared out, repeats one after another. -> makespan, the pairing gaps."""
    first: dict[tuple[str, str], float] = {}
    pacer = SitePacer(cooldown)
    end = 0.0

    async def worker(lane: str, share: list[Task]) -> None:
        nonlocal end
        loop = asyncio.get_running_loop()
        pending = list(share)
        while pending:
            t = next((x for x in pending if pacer.can_start(x.site, loop.time())), None)
            if t is None:
                await asyncio.sleep(SEED_POLL_S)
                continue
            pending.remove(t)
            pacer.acquire(t.site, loop.time())
            first[(lane, t.task_id)] = loop.time()
            await asyncio.sleep(length[f"{lane}/{t.task_id}"])
            pacer.release(t.site, loop.time())
            end = max(end, loop.time())

    async def repeats_in_turn() -> None:
        for r in range(1, repeats + 1):
            runs = []
            for k, arm in enumerate(ARMS[:arms]):
                workers = max(1, slots // arms + (k < slots % arms))
                runs += [worker(lane_name(arm, r), [t for i, t in enumerate(tasks) if i % workers == w])
                         for w in range(workers)]
            await asyncio.gather(*runs)

    with virtual_loop() as loop:
        loop.run_until_complete(repeats_in_turn())
    if len(first) != arms * repeats * len(tasks):
        raise SystemExit(f"the seed's runs started {len(first)} of {arms * repeats * len(tasks)} units")
    pairs, spans, _ = gaps(first, unit_lanes(arms, repeats))
    return end, pairs, spans


# ── the campaign ───────────────────────────────────────────
def campaign(tasks: list[Task], length: dict[str, float], arms: int, repeats: int, slots: int,
             cooldown: float, pair_hold: float = 0.0
             ) -> tuple[float, list[float], float, list[float], list[float], list[float]]:
    """-> makespan, the pairing gaps (each compared pair), the scheduler's own median gap (summary), each pair's floor
    (its gap with no wait for a slot), each task's span (all its units) and each pair's busy floor (its gap had its
    later unit taken the first slot to come free once its site allowed it)."""
    with tempfile.TemporaryDirectory(prefix="om2w-campaign-") as d, virtual_loop() as loop:
        shared = RunConfig(out=Path(d), workers=slots, pace_cooldown=cooldown, timeout=10 * 3600.0,
                           pair_hold=pair_hold)
        lanes = [Lane(u.name, u.arm, u.repeat, replace(shared, out=Path(d) / u.name), tuple(tasks))
                 for u in unit_lanes(arms, repeats)]
        sink = Starts()
        sched = Scheduler(shared, tasks, LaneSimExecutor(length, step_s=600.0), [sink], lanes=lanes)
        loop.run_until_complete(sched.run())
        if sink.finished != len(lanes) * len(tasks):
            raise SystemExit(f"the campaign finished {sink.finished} of {len(lanes) * len(tasks)} units")
        own = sink.pairing.pairs.median_s
        pairs, spans, floors = gaps(sink.first, unit_lanes(arms, repeats), length, cooldown)
        busy = busy_floor(sink.first, sink.episodes, {t.task_id: t.site for t in tasks}, unit_lanes(arms, repeats),
                          slots, cooldown)
        return sink.end, pairs, own if own is not None else float("nan"), floors, spans, busy


def unit_lengths(tasks: list[Task], arms: int, repeats: int, seed: int, slower: float = 1.0) -> dict[str, float]:
    """Each unit's own draw of length, by `LANE/task id`; the arms after the first `slower` times as long (a planner
    delegating to specialists against one agent), capped at the timeout as any episode is."""
    out = {}
    for r in range(1, repeats + 1):
        for k, arm in enumerate(ARMS[:arms]):
            draw = episode_lengths(tasks, seed=seed + 100 * r + k)
            factor = slower if k else 1.0
            out.update({f"{lane_name(arm, r)}/{tid}": min(MAX_EPISODE_S, s * factor) for tid, s in draw.items()})
    return out


def bound(tasks: list[Task], length: dict[str, float], slots: int, cooldown: float) -> float:
    """The pacing bound of all units: the larger of the work per slot and the busiest site's chain of units (their
    lengths and a cooldown between each two)."""
    site = {t.task_id: t.site for t in tasks}
    by_site: dict[str, list[float]] = {}
    for key, s in length.items():
        by_site.setdefault(site[key.split("/", 1)[1]], []).append(s)
    chain = max(sum(v) + (len(v) - 1) * cooldown for v in by_site.values())
    return max(sum(length.values()) / slots, chain)


def measure(tasks: list[Task], arms: int, repeats: int, slots: int, cooldown: float, seed: int = 1,
            slower: float = 1.0, pair_hold: float = 0.0, baseline: str = "runs") -> dict[str, float]:
    length = unit_lengths(tasks, arms, repeats, seed, slower)
    end, ours, own, floors, spans, busy = campaign(tasks, length, arms, repeats, slots, cooldown, pair_hold)
    base_end, theirs, their_spans = (seed_today if baseline == "seed" else today)(tasks, length, arms, repeats, slots,
                                                                                   cooldown)
    return {"bound": bound(tasks, length, slots, cooldown), "makespan": end, "today": base_end,
            "gap_median": median(ours), "gap_p90": pct(ours, 90), "gap_worst": max(ours, default=float("nan")),
            "gap_own": own, "gap_floor": median(floors), "gap_busy": median(busy), "span_median": median(spans),
            "today_median": median(theirs), "today_p90": pct(theirs, 90), "today_span": median(their_spans),
            "episode_median": median(list(length.values()))}


def reach(met: bool, reachable: bool) -> str:
    """`met`; `beyond` where even the busy floor misses the goal (no schedule that keeps every slot busy and cannot
    see an episode's length ahead can meet it); else `MISSED`."""
    return "met" if met else "MISSED" if reachable else "beyond"


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", default="4,12,32")
    ap.add_argument("--arms", type=int, default=2)
    ap.add_argument("--repeats", default="1,3")
    ap.add_argument("--cooldown", type=float, default=120.0)
    ap.add_argument("--slower", default="1,1.5", help="the arms after the first this many times as long (a list: "
                    "rows for each; 1: the same speed)")
    ap.add_argument("--pair-hold", default="0", help="the campaign's --pair-hold (a list: rows for each; the "
                    "goals are judged on 0, the default)")
    ap.add_argument("--today", choices=("runs", "seed"), default="runs", help="today's way: om2w-tui runs side by "
                    "side on one pace dir, or the seed's runner (fixed shares of the file, polling every 15 s)")
    ap.add_argument("--limit", type=int, default=0, help="the file's first N tasks (0: all)")
    args = ap.parse_args(argv)
    tasks = om2w_tasks()[: args.limit or None]
    t0 = time.monotonic()
    print(f"campaign of {args.arms} arms on {len(tasks)} Online-Mind2Web tasks "
          f"({len({t.site for t in tasks})} sites), cooldown {args.cooldown:g} s; today's way: one run per arm "
          f"side by side on one pacer, repeats one after another"
          + (" (the seed's runner: fixed shares of the file, polling)" if args.today == "seed" else ""))
    print(f"{'repeats':>7} {'slots':>5} {'slower':>6} {'hold':>4} {'bound h':>7} {'makespan/bound':>14} "
          f"{'vs today':>8} {'gap med s':>9} {'p90':>6} {'worst':>6} {'ref s':>7} {'floor':>6} {'busy':>6} "
          f"{'span':>6} {'today med':>9} {'p90':>6} {'span':>6} {'gap x':>6} {'x max':>6}  goals: makespan, gap, x10")
    rows, missed = 0, 0
    for repeats in (int(x) for x in args.repeats.split(",")):
        for slots in (int(x) for x in args.slots.split(",")):
            for slower in floats(args.slower):
                for hold in floats(args.pair_hold):
                    m = measure(tasks, args.arms, repeats, slots, args.cooldown, slower=slower, pair_hold=hold,
                                baseline=args.today)
                    ratio, vs = m["makespan"] / m["bound"], m["makespan"] / m["today"]
                    pair_ref = args.cooldown + m["episode_median"]
                    factor = m["today_median"] / m["gap_median"] if m["gap_median"] > 0 else float("inf")
                    most = m["today_median"] / m["gap_busy"] if m["gap_busy"] > 0 else float("inf")
                    goals = (verdict(ratio <= MAKESPAN_GOAL and vs <= 1.0),
                             reach(m["gap_median"] <= pair_ref, m["gap_busy"] <= pair_ref),
                             reach(factor >= GAP_RATIO_GOAL, most >= GAP_RATIO_GOAL))
                    if hold == 0:    # a hold the user chose trades the makespan for the gap: shown, not judged
                        rows += 1
                        missed += "MISSED" in goals
                    print(f"{repeats:>7} {slots:>5} {slower:>6g} {hold:>4g} {m['bound'] / 3600:>7.2f} {ratio:>14.3f} "
                          f"{vs:>8.3f} {m['gap_median']:>9.0f} {m['gap_p90']:>6.0f} {m['gap_worst']:>6.0f} "
                          f"{pair_ref:>7.0f} {m['gap_floor']:>6.0f} {m['gap_busy']:>6.0f} {m['span_median']:>6.0f} "
                          f"{m['today_median']:>9.0f} {m['today_p90']:>6.0f} {m['today_span']:>6.0f} {factor:>6.1f} "
                          f"{most:>6.1f}  {', '.join(goals) if hold == 0 else 'not judged'}")
    said = (f"{rows - missed} of {rows} rows with every goal met or beyond any schedule's reach, {missed} with a goal "
            "missed that a schedule could meet" if rows else "no goal judged (only with --pair-hold 0)")
    print(f"{said}; {time.monotonic() - t0:.0f} s of real time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
