"""Where each task of the run is, kept in one place: queued, running, or settled (its record written or waiting to
be), never two at once, with what goes with it: its attempts so far, its retries and free restarts used, whether it
ended in error, its reference verdict (the one its settling record carries), and each site's counts (tasks, settled,
errored, judged and correct) and their sums, kept as they change. A task is known by its `Task.key`: its id, with its
lane in a campaign (one unit per lane and task), and each lane has its counts too. The counts are over every settled
task, those settled by an earlier run (resume) included: a task run again gives its earlier counts back first.

Pure bookkeeping: no clock, no I/O, no events. The scheduler decides what happens to a task and tells the ledger;
the ledger refuses a move that would put a task in two places (a task queued twice, or run after it settled), which
is the run's first promise. The order of the queue is the dispatcher's (engine/dispatch.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from om2w_tui.benchmarks.tasks import Task

Place = Literal["queued", "running", "settled"]


@dataclass
class SiteCounts:
    total: int = 0
    done: int = 0
    errors: int = 0
    before: int = 0           # of those settled, settled in the out folder before this run
    judged: int = 0           # of those settled, with a reference verdict (their settling record's `correct`)
    correct: int = 0          # of those judged, correct


class Ledger:
    def __init__(self) -> None:
        self.place: dict[str, Place] = {}
        self.sites: dict[str, SiteCounts] = {}
        self.lanes: dict[str, SiteCounts] = {}     # a campaign's lane -> its units' counts ("" in a plain run)
        self.errored: dict[str, Task] = {}         # settled tasks whose latest attempt ended in error
        self.settled_before: set[str] = set()      # settled in the out folder before this run
        self.attempts: dict[str, int] = {}         # attempts made so far, this run's and earlier runs'
        self.retried: dict[str, int] = {}          # tries used on the harness's faults (--retries)
        self.free_restarts: dict[str, int] = {}    # times its worker vanished before taking it
        self.verdicts: dict[str, bool] = {}        # settled tasks' reference verdicts (their settling record's)
        self.done = 0                              # the sums of the sites' counts
        self.errors = 0
        self.judged = 0
        self.correct = 0

    def add(self, task: Task) -> None:
        """A task of the run's selection (counted on its site; it is nowhere yet)."""
        self.sites.setdefault(task.site, SiteCounts()).total += 1
        self.lanes.setdefault(task.lane, SiteCounts()).total += 1

    def where(self, key: str) -> Place | None:
        """Where the task with this `Task.key` is."""
        return self.place.get(key)

    def queue(self, task: Task) -> bool:
        """Queue a task that is neither queued, running nor settled; False (and nothing done) otherwise."""
        if task.key in self.place:
            return False
        self.place[task.key] = "queued"
        return True

    def start(self, task: Task) -> int:
        """A queued task starts on a slot: -> its attempt's number."""
        assert self.place.get(task.key) == "queued", (task.key, self.place.get(task.key))
        self.place[task.key] = "running"
        self.attempts[task.key] = self.attempts.get(task.key, 0) + 1
        return self.attempts[task.key]

    def leave(self, task: Task, *, ran: bool = True) -> None:
        """A running task's attempt is over (it is nowhere until it is queued again or settled); `ran` False: it
        never reached its worker, so the attempt is not counted."""
        if self.place.get(task.key) == "running":
            del self.place[task.key]
        if not ran:
            self.attempts[task.key] = self.attempts.get(task.key, 1) - 1

    def settle(self, task: Task, error: bool, *, correct: bool | None = None, before: bool = False) -> None:
        """The task is finished for this run (`before`: by an earlier run, found in the out folder); `correct`: the
        reference verdict of its settling record, when it has one."""
        assert task.key not in self.place, (task.key, self.place[task.key])
        self.place[task.key] = "settled"
        counts = self.sites.setdefault(task.site, SiteCounts())
        lane = self.lanes.setdefault(task.lane, SiteCounts())
        counts.done += 1
        lane.done += 1
        self.done += 1
        if correct is not None:
            self.verdicts[task.key] = correct
            self._count_verdict(task, correct, +1)
        if before:
            self.settled_before.add(task.key)
            lane.before += 1
        if error:
            counts.errors += 1
            lane.errors += 1
            self.errors += 1
            self.errored[task.key] = task

    def unsettle(self, task: Task) -> bool:
        """A settled task goes back to being work (its counts, this run's or a run before's, are given back); False
        when it was not settled."""
        tid = task.key
        if self.place.get(tid) != "settled":
            return False
        del self.place[tid]
        counts = self.sites.setdefault(task.site, SiteCounts())
        lane = self.lanes.setdefault(task.lane, SiteCounts())
        counts.done -= 1
        lane.done -= 1
        self.done -= 1
        if self.errored.pop(tid, None) is not None:
            counts.errors -= 1
            lane.errors -= 1
            self.errors -= 1
        if tid in self.settled_before:
            self.settled_before.discard(tid)
            lane.before -= 1
        if (correct := self.verdicts.pop(tid, None)) is not None:   # its next settling record's verdict replaces it
            self._count_verdict(task, correct, -1)
        return True

    def _count_verdict(self, task: Task, correct: bool, sign: int) -> None:
        for counts in (self.sites[task.site], self.lanes[task.lane]):
            counts.judged += sign
            counts.correct += sign * correct
        self.judged += sign
        self.correct += sign * correct

    def count_retry(self, task: Task) -> int:
        """One more try used on the harness's faults: -> how many now."""
        self.retried[task.key] = self.retried.get(task.key, 0) + 1
        return self.retried[task.key]

    def count_free_restart(self, task: Task) -> int:
        self.free_restarts[task.key] = self.free_restarts.get(task.key, 0) + 1
        return self.free_restarts[task.key]
