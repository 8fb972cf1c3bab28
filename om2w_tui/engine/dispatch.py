"""Which site starts next: the run's queue and its dispatch policy, pure bookkeeping on a clock the caller gives.

The rule: among the sites that may start now, the one with the longest chain of work left (its queued tasks'
expected lengths and the cooldowns between them; ties go to the site queued first), and on a site the longest task
first. In a campaign a site whose next unit belongs to a task another unit of which has started goes before any
(the one opened first), so a task's units run one after another on their site, but for the site whose chain sets
the run's length (`_critical_ready`); and a free slot the work left does not need waits for such a next unit coming
off its cooldown rather than start a fresh task (`hold_for_next`; `--pair-hold` lets a needed one wait too). When
one site's chain outlasts the other sites' work spread over the other slots, the last free slot waits for that
site's cooldown to end (`keep_slot_for`).

A chain is `units * s_per_unit + (n - 1) * cooldown`: `units` is the site's queued reference lengths, `s_per_unit`
the seconds a unit took in the episodes finished so far (learnt, the same for every site), `n` its queued tasks.
Choosing must not scan every site (1,000 sites cost ~3 ms a start): the sites are indexed by `extra = (n - 1) *
cooldown`, a heap per value ordered by units. Within one value of `extra` the order by units holds whatever
`s_per_unit` is (it is > 0), so learning moves no entry: the best site is the best head over the few distinct
values of `extra` (the distinct queue lengths, times the distinct cooldowns). Sites cooling down wait in a heap by
the time they are ready. Entries are invalidated lazily: each change to a site (its queue, units, cooldown,
running count or ready time) gives it a new version, and an entry with an older one is dropped when it surfaces.
Every change to the queue or the pacer goes through this class, so the index is never stale.

A pacer shared across runs (`--pace-dir`) learns of other runs only when asked (`can_start` tries their lock
files), so with one the choice scans every site as before (`scan_pick`); such a run paces a node's sites, a few
hundred at most.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.pacing import CLOCK_SLACK_S, SitePacer

# an episode's expected length before any has finished: seconds per unit of a task's reference length
PRIOR_S_PER_UNIT = 20.0
RECENT_DONE = 200        # the latest done episodes the ETA's lengths are learnt from (engine/estimate.py)
_COMPACT_FACTOR = 8      # heaps are rebuilt when they hold this many entries per queued site (dead ones, mostly)


def task_units(task: Task) -> float | None:
    """A task's expected length in units: its reference length (Online-Mind2Web's human step count), if it has one."""
    try:
        ref = float((task.raw or {}).get("reference_length") or 0)
    except (TypeError, ValueError, OverflowError):   # a Task built in code (a file's is checked at load)
        return None
    return ref if ref > 0 else None


# a cooling site: (ready_at, rank, version, site); a site in a group's bucket: (rank, version, site)
_Entry = tuple[float, int, int, str]
_Member = tuple[int, int, str]


class _Group:
    """The sites with one value of `extra`: a bucket per exact value of units (its sites by the order they were
    queued in), and a heap of those values, largest first. Entries die lazily (see `Dispatcher.touch`)."""

    __slots__ = ("buckets", "values")

    def __init__(self) -> None:
        self.buckets: dict[float, list[_Member]] = {}
        self.values: list[float] = []   # -units, one per bucket

    def add(self, units: float, member: _Member) -> None:
        bucket = self.buckets.get(units)
        if bucket is None:
            bucket = self.buckets[units] = []
            heapq.heappush(self.values, -units)
        heapq.heappush(bucket, member)

    def first(self, units: float, version: dict[str, int]) -> _Member | None:
        """The live site queued first among those with these units, dead entries dropped; None if none."""
        bucket = self.buckets.get(units)
        while bucket and version.get(bucket[0][2]) != bucket[0][1]:
            heapq.heappop(bucket)
        return bucket[0] if bucket else None

    def size(self) -> int:
        return sum(len(b) for b in self.buckets.values())

    def head(self, extra: float, spu: float, version: dict[str, int]) -> tuple[str, float, int] | None:
        """The group's best site: the largest units, ties to the site queued first; also a site with units smaller
        in their last bits (adding and taking tasks leaves such residues) whose chain rounds to the same sum, as a
        scan would see it. Only values whose chain equals the head's are visited (below a shorter one, every chain
        is shorter): a few at most."""
        values = self.values
        while values:
            member = self.first(-values[0], version)
            if member is not None:
                break
            del self.buckets[-heapq.heappop(values)]
        else:
            return None
        rank, _, site = member
        chain = -values[0] * spu + extra   # the same sum as `Dispatcher.chain`, so that ties fall as a scan's would
        stack = [1, 2]
        while stack:
            i = stack.pop()
            if i >= len(values) or -values[i] * spu + extra < chain:
                continue
            stack += [2 * i + 1, 2 * i + 2]
            other = self.first(-values[i], version)
            if other is not None and other[0] < rank:
                rank, site = other[0], other[2]
        return site, chain, rank


class Dispatcher:
    """The queue (per site, longest task first) and the choice of the next site. The scheduler owns one and
    routes every queue and pacer change through it."""

    def __init__(self, pacer: SitePacer, tasks: Iterable[Task], hold_s: float = 0.0):
        self.pacer = pacer
        tasks = list(tasks)
        self.queue: dict[str, deque[Task]] = {}
        known = [u for t in tasks if (u := task_units(t)) is not None]
        self.default_units = sum(known) / len(known) if known else 1.0
        self.units: dict[str, float] = {t.key: task_units(t) or self.default_units for t in tasks}   # by Task.key
        self.site_units: dict[str, float] = {}
        self.queued_units = 0.0   # the sum of site_units, kept as they change
        self.done_units = self.done_s = 0.0
        self.done_n = 0           # the done episodes learnt from
        self.recent: deque[tuple[float, float]] = deque(maxlen=RECENT_DONE)   # the latest done: (units, seconds)
        self.pending = 0
        # the index works only with a pacer whose answers change through the calls made here
        self.indexed = pacer.knows_all   # the pacer says whether its own state decides every start
        self._rank: dict[str, int] = {}          # the order sites were first queued in (ties go to the first)
        self._version: dict[str, int] = {}
        self._all: dict[float, _Group] = {}      # extra -> sites with queued work
        self._ready: dict[float, _Group] = {}    # extra -> those of them that may start (not busy, cooled)
        self._cooling: list[_Entry] = []               # not busy, maybe still cooling: by ready_at
        self._entries = 0
        # a campaign's sites whose queue's head is a unit of a task another unit of which has started: site -> (the
        # order it opened in, the task); they go first when they may start, so a task's units run close in time
        self.open: dict[str, tuple[int, str]] = {}
        self._opened = 0
        # how far ahead a free slot is kept for a started task's next unit even while every slot is needed (`pair_hold`)
        self.hold_s = hold_s
        self._place: dict[str, int] = {}   # Task.key -> its place in the queue's first order (`restore`)
        self._started: set[str] = set()    # a campaign's tasks a unit of which has been taken

    # ── the queue ──────────────────────────────────────────
    def task_units(self, task: Task) -> float:
        units = self.units.get(task.key)
        if units is None:   # a task added after the start (none today): its own reference length, or the mean
            units = self.units[task.key] = task_units(task) or self.default_units
        return units

    def push(self, task: Task, front: bool = False) -> None:
        q = self._site_queue(task.site)
        q.appendleft(task) if front else q.append(task)
        self.place(task)
        self._queued(task)

    def _site_queue(self, site: str) -> deque[Task]:
        q = self.queue.get(site)
        if q is None:   # a site first queued: ties between chains go to the site queued first
            q = self.queue[site] = deque()
            self._rank[site] = len(self._rank)
        return q

    def place(self, task: Task) -> None:
        """Note the task's place in the queue's first order (one queued held beside the queue too)."""
        self._place.setdefault(task.key, len(self._place))

    def _queued(self, task: Task) -> None:
        self.pending += 1
        self._set_units(task.site, self.site_units.get(task.site, 0.0) + self.task_units(task))
        self.touch(task.site)

    def restore(self, tasks: Iterable[Task]) -> None:
        """Put back the units a held lane kept beside the queue (engine/lanes.py) where pairing wants them, not
        behind everything queued since: a unit whose task has started goes first on its site (its task's next unit:
        the site opens, as `take` opens it; several by their first order), any other back at its place in the
        queue's first order, after the started tasks' units."""
        def place(t: Task) -> int:
            return self._place.get(t.key, len(self._place))

        touched: set[str] = set()
        for task in sorted(tasks, key=place):
            q = self._site_queue(task.site)
            i, started = 0, task.task_id in self._started
            while i < len(q) and q[i].task_id in self._started and (not started or place(q[i]) < place(task)):
                i += 1
            while not started and i < len(q) and place(q[i]) < place(task):
                i += 1
            q.insert(i, task)
            self._queued(task)
            touched.add(task.site)
        for site in touched:
            head = self.queue[site][0]
            if head.task_id in self._started and self.open.get(site, (0, ""))[1] != head.task_id:
                self.open[site] = (self._opened, head.task_id)
                self._opened += 1

    def sort_sites(self) -> None:
        """On each site the longest task first (a stable sort: file order otherwise)."""
        for q in self.queue.values():
            q_sorted = sorted(q, key=lambda t: -self.units.get(t.key, self.default_units))
            q.clear()
            q.extend(q_sorted)

    def take(self, site: str) -> Task:
        q = self.queue[site]
        task = q.popleft()
        if task.lane:
            self._started.add(task.task_id)
        if task.lane and q and q[0].task_id == task.task_id:   # its task's next unit goes next there
            self.open[site] = (self._opened, task.task_id)
            self._opened += 1
        else:
            self.open.pop(site, None)
        self.pending -= 1
        self._set_units(site, max(0.0, self.site_units.get(site, 0.0) - self.task_units(task)))
        self.touch(site)
        return task

    def pull(self, which: Callable[[Task], bool]) -> list[Task]:
        """Take the queued tasks `which` says out of the queue, in queue order (a campaign's lane held: its units
        wait beside the queue, engine/lanes.py, and are pushed back when it goes on)."""
        out: list[Task] = []
        for site, q in self.queue.items():
            gone = [t for t in q if which(t)]
            if not gone:
                continue
            kept = [t for t in q if not which(t)]
            q.clear()
            q.extend(kept)
            self.pending -= len(gone)
            self._set_units(site, max(0.0, self.site_units.get(site, 0.0) - sum(map(self.task_units, gone))))
            self.touch(site)
            out += gone
        return out

    def _set_units(self, site: str, units: float) -> None:
        self.queued_units += units - self.site_units.get(site, 0.0)
        self.site_units[site] = units

    # ── the pacer, through here so the index follows ──────
    def acquire(self, site: str, now: float) -> None:
        self.pacer.acquire(site, now)
        self.touch(site)

    def release(self, site: str, now: float) -> None:
        self.pacer.release(site, now)
        self.touch(site)

    def release_without_cooldown(self, site: str) -> None:
        self.pacer.release_without_cooldown(site)
        self.touch(site)

    def widen(self, site: str) -> float:
        cooldown = self.pacer.widen(site)
        self.touch(site)
        return cooldown

    def relax(self, site: str) -> None:
        self.pacer.relax(site)
        self.touch(site)

    # ── learnt lengths ─────────────────────────────────────
    def s_per_unit(self) -> float:
        return self.done_s / self.done_units if self.done_units > 0 else PRIOR_S_PER_UNIT

    def learn(self, key: str, status: str, duration_s: float) -> None:
        """A finished episode's length teaches the seconds per unit of reference length (done episodes only: an
        error or a kill says little about how long a task takes). Every chain changes; no entry moves."""
        units = self.units.get(key)
        if status == "done" and units and duration_s > 0:
            self.done_units += units
            self.done_s += duration_s
            self.done_n += 1
            self.recent.append((units, duration_s))

    def chain(self, site: str, n: int) -> float:
        """The site's chain of work left in seconds: its queued tasks' expected lengths and the cooldowns between."""
        return self.site_units.get(site, 0.0) * self.s_per_unit() + self._extra(site, n)

    def _extra(self, site: str, n: int) -> float:
        return max(0, n - 1) * self.pacer.state(site).cooldown

    # ── the choice ─────────────────────────────────────────
    def pick(self, now: float, slots: Callable[[], tuple[int, int]]) -> str | None:
        """Of the sites that may start now, the one with the longest chain left (in a campaign a started task's next
        unit first, after the chain that sets the run's length); None when there is none, to keep the last free slot
        for a cooling site whose chain sets the run's length (`keep_slot_for`), or to keep the free slots for next
        units coming off their cooldown (`hold_for_next`). `slots` counts the free slots and those not retiring."""
        opened = (self._critical_ready(now, slots) if self.open else None) or self._open_ready(now)
        best = opened or (self._best_ready(now) if self.indexed else self.scan_pick(now))
        if best is None:
            return None
        free, active = slots()
        if self.keep_slot_for(now, free, active) is not None or (
                opened is None and self.hold_for_next(now, free, active, best)):
            return None
        return best

    def _critical_ready(self, now: float, slots: Callable[[], tuple[int, int]]) -> str | None:
        """The site with the longest chain left, where it may start now and that chain sets the run's length (it
        outlasts the other sites' work spread over the other slots, as `keep_slot_for` judges it): it goes before a
        started task's next unit, or each of its tasks would wait for a slot after its cooldown and the run end late
        (bench/campaign.py, 3 repeats at 12 slots: 1.022 x the bound, 1.014 with this)."""
        crit, crit_chain = self._best(self._all) if self.indexed else self.scan_critical()
        if crit is None or crit_chain <= 0.0 or not self.pacer.can_start(crit, now):
            return None
        _, active = slots()
        rest = (self.queued_units - self.site_units.get(crit, 0.0)) * self.s_per_unit()
        return crit if crit_chain >= rest / max(1, active - 1) else None

    def _open_ready(self, now: float) -> str | None:
        """The site opened first whose task's next unit may start now (a campaign's pairing in time)."""
        best: tuple[int, str] | None = None
        for site, (order, tid) in list(self.open.items()):
            q = self.queue.get(site)
            if not q or q[0].task_id != tid:   # its units were taken, pulled or put behind another's
                del self.open[site]
            elif (best is None or order < best[0]) and self.pacer.can_start(site, now):
                best = (order, site)
        return best[1] if best else None

    def coming(self, now: float, horizon: float) -> list[float]:
        """When the sites of the started tasks' next units end their cooldown, for those that end it within
        `horizon` (not yet ready, not busy)."""
        out = []
        for site, (_, tid) in self.open.items():
            q = self.queue.get(site)
            if q and q[0].task_id == tid:
                st = self.pacer.state(site)
                if not st.busy and now < st.ready_at - CLOCK_SLACK_S <= now + horizon:
                    out.append(st.ready_at)
        return out

    def spare(self, active: int, best: str, horizon: float) -> int:
        """The slots the work left does not need, while the run's length is the longest chain left rather than the
        work per slot: the queued work spread over the other slots still ends within that chain. None (0) while `best`
        (the fresh site that would start) could not wait `horizon` without its own chain becoming the longest, nor
        before episodes are done for half the slots (the first to end are the short ones: the seconds per unit learnt
        from the very first are too few; bench/campaign.py: waiting for all the slots' first ones lost the first
        tasks' pairing, waiting for none lengthened the run at 12 slots)."""
        if 2 * self.done_n < active:
            return 0
        _, crit_chain = self._best(self._all) if self.indexed else self.scan_critical()
        if crit_chain <= 0.0 or self.chain(best, len(self.queue[best])) + horizon > crit_chain:
            return 0
        return max(0, active - math.ceil(self.queued_units * self.s_per_unit() / crit_chain))

    def hold_for_next(self, now: float, free: int, active: int, best: str) -> bool:
        """Whether the free slots are kept for started tasks' next units rather than given to a fresh task's first
        (`best`): each next unit whose site comes off its cooldown soon keeps one free slot, so it starts when its
        cooldown ends instead of waiting for an episode to end. Soon is within `hold_s` (`--pair-hold`: a shorter
        gap for a longer run, as the user chose), and within the run's cooldown for as many units as the slots the
        work does not need (`spare`: the idle slot costs the run's length nothing). A decision holds until the next
        event: what it counts only grows with the clock, and the next cooldown's end wakes dispatch."""
        if not self.open:
            return False
        horizon = max(self.hold_s, self.pacer.cooldown)
        coming = self.coming(now, horizon)
        if not coming:
            return False
        kept = sum(1 for ready_at in coming if ready_at - CLOCK_SLACK_S <= now + self.hold_s)
        if free > kept and len(coming) > kept:
            kept += min(len(coming) - kept, self.spare(active, best, horizon))
        return free <= kept

    def scan_pick(self, now: float) -> str | None:
        """The choice by a scan of every site (a shared pacer's, and the reference the index is tested against)."""
        best, best_chain = None, -1.0
        for site, q in self.queue.items():
            if q and self.pacer.can_start(site, now):
                chain = self.chain(site, len(q))
                if chain > best_chain:
                    best, best_chain = site, chain
        return best

    def scan_critical(self) -> tuple[str | None, float]:
        crit, crit_chain = None, 0.0
        for site, q in self.queue.items():
            if q and (chain := self.chain(site, len(q))) > crit_chain:
                crit, crit_chain = site, chain
        return crit, crit_chain

    def keep_slot_for(self, now: float, free: int, active: int) -> str | None:
        """The cooling site the last free slot waits for, if any. When one site's chain (its tasks' expected lengths
        and the cooldowns between) outlasts the other sites' work spread over the other slots, that chain is the run's
        length: were the slot filled, the site would wait for an episode to end each time its cooldown ran out
        (measured: 7-8% longer runs at 4 slots, bench/makespan.py). Idling one slot costs nothing the chain does not
        cover."""
        if free != 1 or active < 2 or self.pacer.cooldown <= 0:
            return None
        # only quantities that change at events (never with the clock alone): a decision taken at one dispatch holds
        # until the next event wakes dispatch again (the cooldown's end among them)
        crit, crit_chain = self._best(self._all) if self.indexed else self.scan_critical()
        if crit is None or crit_chain <= 0.0 or self.pacer.can_start(crit, now) or self.pacer.state(crit).busy \
                or self.pacer.held_elsewhere(crit):   # another run's episode there may last any time: not waited for
            return None
        rest = (self.queued_units - self.site_units.get(crit, 0.0)) * self.s_per_unit()
        return crit if crit_chain >= rest / (active - 1) else None

    def next_ready(self, now: float) -> float | None:
        """The earliest time a site with queued work, not busy, ends its cooldown; None if none is cooling."""
        if not self.indexed:
            return self.pacer.next_ready([s for s, q in self.queue.items() if q], now)
        self._drain(now)
        return self._cooling[0][0] if self._cooling else None

    # ── the index ──────────────────────────────────────────
    def touch(self, site: str) -> None:
        """The site changed (queue, units, cooldown, running, ready time): file it afresh, the old entries dead."""
        if not self.indexed:
            return
        v = self._version[site] = self._version.get(site, 0) + 1
        q = self.queue.get(site)
        if not q:
            return
        st = self.pacer.state(site)
        extra, units, rank = self._extra(site, len(q)), self.site_units.get(site, 0.0), self._rank[site]
        self._group(self._all, extra).add(units, (rank, v, site))
        if not st.busy:   # a busy site is filed again when an episode there ends
            heapq.heappush(self._cooling, (st.ready_at, rank, v, site))
        self._entries += 2
        if self._entries > _COMPACT_FACTOR * (len(self.queue) + 8):
            self._rebuild()

    def _rebuild(self) -> None:
        self._all.clear()
        self._ready.clear()
        self._cooling.clear()
        self._entries = 0
        for site in self.queue:
            self.touch(site)

    def _drain(self, now: float) -> None:
        """Sites whose cooldown has ended (within the clock's slack, as `can_start` says) move to the ready heaps."""
        cooling = self._cooling
        while cooling:
            ready_at, rank, v, site = cooling[0]
            if self._version.get(site) != v:
                heapq.heappop(cooling)
            elif now >= ready_at - CLOCK_SLACK_S:
                heapq.heappop(cooling)
                extra = self._extra(site, len(self.queue[site]))
                self._group(self._ready, extra).add(self.site_units.get(site, 0.0), (rank, v, site))
            else:
                break

    def _best_ready(self, now: float) -> str | None:
        self._drain(now)
        return self._best(self._ready)[0]

    @staticmethod
    def _group(groups: dict[float, _Group], extra: float) -> _Group:
        group = groups.get(extra)
        if group is None:
            group = groups[extra] = _Group()
        return group

    def _best(self, groups: dict[float, _Group]) -> tuple[str | None, float]:
        """The longest chain over the groups' heads (ties: the site queued first); empty groups are dropped."""
        spu = self.s_per_unit()
        best: str | None = None
        best_chain, best_rank = 0.0, 0
        for extra in list(groups):
            head = groups[extra].head(extra, spu, self._version)
            if head is None:
                del groups[extra]
                continue
            site, chain, rank = head
            if best is None or chain > best_chain or (chain == best_chain and rank < best_rank):
                best, best_chain, best_rank = site, chain, rank
        return best, best_chain
