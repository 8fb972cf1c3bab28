"""A campaign's lanes: each arm's repeat is a run of its own (its settings, its run folder, its records, its model's
health) whose episodes share the campaign's one queue, slots and pacer with every other lane's.

A lane is declared here so that the plan (which makes them), launch (which checks and starts them) and the scheduler
(which runs their units: one (lane, task) each) name one type. A run that is not a campaign is one lane. Here too
the lanes' run-time state the scheduler keeps (`LaneRun`, `LaneSet`: each lane's writer, model meter and guard,
pause, held units; the units' order in the queue) and the pairing gap measured live (engine/pairing.py's
`Pairing`, fed every attempt's record, and each lane's records already there on a resume)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from om2w_tui.benchmarks.episode_folder import started_attempts
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.campaign_folder import LaneName
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import Event, LaneRow
from om2w_tui.engine.ledger import Ledger, SiteCounts
from om2w_tui.engine.model_health import ModelGuard, ModelMeter
from om2w_tui.engine.pairing import Pairing
from om2w_tui.engine.record_writer import RecordWriter
from om2w_tui.engine.records import model_fault
from om2w_tui.engine.results import EpisodeRecord, ResultsStore, read_results
from om2w_tui.protocol.worker import Outcome
from om2w_tui.run_folder import RunFolder


@dataclass(frozen=True)
class Lane:
    name: str                 # its run folder's name in the campaign's out folder (campaign_folder.lane_name)
    arm: str                  # the plan's arm it repeats
    repeat: int               # from 1
    config: RunConfig         # the run as this lane runs it: its model settings, out = the campaign's out / name
    tasks: tuple[Task, ...]   # the campaign's selection, loaded with this lane's settings (its step budget)
    endpoint: str | None = None   # the base URL its workers use, where launch serves one (the oracle's)


# ── a lane as the scheduler runs it ────────────────────────
class LaneRun:
    """A lane at run time: its units (its tasks tagged with its name: `Task.lane`, `Task.key`), its run folder, its
    results.jsonl and their one writer, its model's meter and guard, its user's pause, and its units held beside the
    queue while it is held (`parked`: still "queued" for the ledger). A plain run is one lane named "" whose parts
    are the scheduler's own (its writer, its meter, its guard: that guard holds the whole dispatch, as before)."""

    def __init__(self, name: str, arm: str, repeat: int, config: RunConfig, tasks: Iterable[Task],
                 endpoint: str | None, records: Callable[[ResultsStore], RecordWriter], model: ModelMeter,
                 guard: ModelGuard):
        self.name, self.arm, self.repeat = name, arm, repeat
        self.cfg = config
        self.endpoint = endpoint
        self.tasks = [replace(t, lane=name) for t in tasks] if name else list(tasks)
        self.out = Path(config.out)
        self.folder = RunFolder(self.out, config.shard)   # every file name the lane writes
        self.store = ResultsStore(self.out, self.folder.results.name)
        self.records = records(self.store)
        self.model = model
        self.guard = guard
        self.paused = False               # held by its user (`pause_lane`)
        self.parked: list[Task] = []      # its queued units, out of the dispatcher while it is held

    @property
    def held(self) -> bool:
        return self.paused or self.guard.holding


class LaneSet:
    """The run's lanes at run time (one implicit lane in a plain run) and the campaign's order of units in the queue.

    The circuit breaker (the endpoint down) and the storage guard (the out folder full) stay campaign-wide: both
    pause dispatch for every lane. A lane's model guard and its user's pause hold that lane's units only."""

    def __init__(self, lanes: list[LaneRun], campaign: bool):
        self.all = lanes
        self.campaign = campaign        # False: a plain run's one lane
        self.by_name = {lane.name: lane for lane in lanes}
        # a plain run's one lane pairs nothing
        self.pairing = Pairing(LaneName(lane.name, lane.arm, lane.repeat) for lane in lanes)

    @classmethod
    def build(cls, lanes: Sequence[Lane], config: RunConfig, tasks: Iterable[Task],
              writer: Callable[[ResultsStore], RecordWriter], meter: ModelMeter, guard: ModelGuard,
              emit: Callable[[Event], None]) -> LaneSet:
        """A campaign's lanes, each with its own meter and guard; or a plain run's one lane, with the run's."""
        if not lanes:
            return cls([LaneRun("", "", 1, config, tasks, None, writer, meter, guard)], campaign=False)
        return cls([LaneRun(x.name, x.arm, x.repeat, x.config, x.tasks, x.endpoint, writer, ModelMeter(),
                            ModelGuard(x.config.model_guard, emit, x.name)) for x in lanes], campaign=True)

    def of(self, task: Task) -> LaneRun:
        return self.by_name[task.lane]

    def named(self, name: str) -> list[LaneRun]:
        """The lanes a user's name means: an arm's, every repeat of it; else the lane of that name (`a-r2`)."""
        if not self.campaign:
            return []
        arm = [x for x in self.all if x.arm == name]
        return arm or [x for x in self.all if x.name == name]

    def parked(self) -> int:
        return sum(len(lane.parked) for lane in self.all)

    def parked_on(self) -> Counter[str]:
        """Each site's units held beside the queue (still left on it: its left count, `run_snapshot`'s)."""
        return Counter(t.site for lane in self.all for t in lane.parked)

    def waiting(self, guard_ends_run: bool) -> bool:
        """Held units keep the run going: a user's pause always; a model guard's in a console (headless, a guard
        ends the campaign once only held units are left)."""
        return any(lane.parked and (lane.paused or not guard_ends_run) for lane in self.all)

    def guard_reason(self) -> str:
        """Why a model guard holds work ("" when none does): the run's, or each held lane's, naming its arm."""
        if not self.campaign:
            return self.all[0].guard.reason
        return "; ".join(f"arm {lane.name}: {lane.guard.reason}" for lane in self.all if lane.guard.holding)

    def note_model(self, meter: ModelMeter, task: Task, slot: int, rec: EpisodeRecord, outcome: Outcome,
                   harness: bool) -> LaneRun | None:
        """The model's statistics (the run's and its lane's) and its lane's guard learn how an attempt ended (one the
        harness failed, or its user stopped, says nothing of the model to the guard): -> the lane whose guard
        trips now, if one does."""
        calls, lane = outcome.model, self.of(task)
        for m in {id(m): m for m in (meter, lane.model)}.values():
            m.episode_ended(slot, rec.model_fault, calls.thinking_stripped if calls else 0)
        if harness:
            return None
        kind = model_fault(rec)
        message = calls.first.get(kind, "") if calls is not None and kind else ""
        return lane if lane.guard.note(kind, message) else None

    # ── holding a lane: its queued units wait beside the dispatcher's queue ──
    def hold(self, lane: LaneRun, dispatch: Dispatcher) -> None:
        if self.campaign:   # a plain run's guard holds the whole dispatch instead
            lane.parked += dispatch.pull(lambda t: t.lane == lane.name)

    def release(self, lane: LaneRun, dispatch: Dispatcher) -> None:
        if not lane.held:   # back where pairing wants them: a started task's next unit first on its site
            dispatch.restore(lane.parked)
            lane.parked.clear()

    def pause(self, name: str, paused: bool, dispatch: Dispatcher) -> bool:
        """Its user holds or lets go the lanes `name` means (a resume lets their model guards go too); False: none."""
        lanes = self.named(name)
        for lane in lanes:
            lane.paused = paused
            if paused:
                self.hold(lane, dispatch)
            else:
                lane.guard.clear()
                self.release(lane, dispatch)
        return bool(lanes)

    def clear_guards(self, dispatch: Dispatcher) -> None:
        """The user resumed the whole run: every lane's model guard lets go."""
        for lane in self.all if self.campaign else ():
            if lane.guard.holding:
                lane.guard.clear()
                self.release(lane, dispatch)

    # ── resume ─────────────────────────────────────────────
    def resume(self, ledger: Ledger, warn: Callable[[str], None], units: Callable[[Task], float]) -> list[Task]:
        """Each lane's folder read (its settled units settled in `ledger` with their verdicts, its attempts counted): ->
        the units left, in the order they are queued (`order`); the pairing gap learns what each lane settled before
        (its share's)."""
        queued = []
        for lane in self.all:
            prior = read_results(lane.out)
            for w in prior.warnings:
                warn(w)
            attempts, latest = prior.attempts(), prior.latest_records()
            if self.campaign:
                self.pairing.read(lane.name, prior.episode_records(), {t.task_id for t in lane.tasks})
            for t in lane.tasks:
                ledger.add(t)
                # an attempt cut with its console has no record but its folder: the next one's number is past it
                if began := max(attempts.get(t.task_id, 0), started_attempts(lane.folder.task(t.task_id))):
                    ledger.attempts[t.key] = began
                rec = latest.get(t.task_id)
                if rec is not None and rec.settles:
                    ledger.settle(t, rec.status == "error", correct=rec.correct, before=True)
                else:
                    queued.append(t)
        return self.order(queued, units)

    # ── the writers, together (the storage guard is the campaign's) ──
    @property
    def busy(self) -> bool:
        return any(lane.records.busy for lane in self.all)

    def unwritten(self) -> int:
        return sum(len(lane.records.unwritten) for lane in self.all)

    async def write_kept(self) -> None:
        for lane in self.all:
            await lane.records.write_kept()

    def last_word(self) -> list[str]:
        return [line for lane in self.all for line in lane.records.last_word()]

    # ── the queue's order ──────────────────────────────────
    def order(self, queued: list[Task], units: Callable[[Task], float]) -> list[Task]:
        """The campaign's units in the order they are queued: on each site its tasks longest first (file order
        otherwise), each task's units together; the arm that goes first turns from task to task on a site (and from
        site to site), and repeats interleave (a1 b1 a2 b2). A plain run's order is its tasks'."""
        if not self.campaign:
            return queued
        arms = list(dict.fromkeys(lane.arm for lane in self.all))
        rank = {lane.name: (lane.repeat, arms.index(lane.arm)) for lane in self.all}
        by_task: dict[str, list[Task]] = {}
        for u in queued:
            by_task.setdefault(u.task_id, []).append(u)
        sites: dict[str, list[list[Task]]] = {}
        for group in by_task.values():
            sites.setdefault(group[0].site, []).append(group)
        out: list[Task] = []
        for s, (_, groups) in enumerate(sites.items()):
            groups.sort(key=lambda g: -units(g[0]))
            for k, group in enumerate(groups):
                turn = (s + k) % len(arms)
                out += sorted(group, key=lambda u: (rank[u.lane][0], (rank[u.lane][1] - turn) % len(arms)))
        return out

    def rows(self, ledger: Ledger) -> tuple[LaneRow, ...]:
        if not self.campaign:
            return ()
        rows = []
        for lane in self.all:
            c = ledger.lanes.get(lane.name, SiteCounts())
            calls = {**({"ok": lane.model.ok} if lane.model.ok else {}), **lane.model.failures}
            rows.append(LaneRow(lane.name, lane.arm, lane.repeat, str(lane.out), c.total, c.before, c.done,
                                c.errors, c.correct, c.judged, lane.paused, lane.guard.reason, calls))
        return tuple(rows)
