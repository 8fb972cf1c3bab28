"""What the console knows of a campaign's lanes (each arm's repeat, a run folder of its own): which lane each slot's
episode belongs to, each lane's row of the latest snapshot (progress, paused, held by its model guard), each lane's
latest record per task, and the comparison of the arms computed from them. No Textual here: the headless log prints
the same comparison at the end of a campaign judged as it goes.

The comparison reads ONE measure on every lane (`evaluation/measure.py`'s `choose`: human labels, else a judge of
the same mode and model, else the reference answers' `correct`; with the campaign's live judge on, every lane has
its judge from the start, its tasks pending until their verdicts come), each lane's rates under both counting rules with
their Wilson intervals (`evaluation/outcomes.py`'s `count`), and each lane against the baseline lane of its repeat
task by task (`evaluation/agreement.py`'s `paired`, as `report` compares runs: the paired difference with its interval,
McNemar's exact p, the tasks only one solved). Events only store (a dict write per finished episode); the comparison
is computed when asked (the comparison panel asks once a second while it is shown) and only when something changed:
at 600 units it takes about a millisecond (measured in tests/ui/test_campaign_console.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from om2w_tui.campaign_folder import LaneName
from om2w_tui.engine.events import LaneRow, PairingGaps, RunSnapshot
from om2w_tui.engine.pairing import arm_groups, compared_pairs
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.agreement import paired, pooled
from om2w_tui.evaluation.judge_files import parse_output_name
from om2w_tui.evaluation.judge_settings import FILE_MODES
from om2w_tui.evaluation.labels import RunLabels, read_run_labels
from om2w_tui.evaluation.live_judge import VerdictTail
from om2w_tui.evaluation.measure import Measure, NoCommonMeasure, choose
from om2w_tui.evaluation.outcomes import RULES, count, label_outcome, run_outcome
from om2w_tui.evaluation.summary import Counts, PairedTest, Pooled
from om2w_tui.evaluation.task_outcome import Outcome

_MODE_OF_FILE = {file_mode: mode for mode, file_mode in FILE_MODES.items()}   # the file's spelling -> the mode
LABELS_EVERY_S = 10.0      # a lane's label files are read again at most this often (people label slowly)


@dataclass
class LaneSide:
    """One lane's measures of success, read from its folder as they grow: a judge file's verdicts, its labels."""

    out: Path
    verdicts: VerdictTail
    labels: RunLabels | None = None
    labels_read: float = float("-inf")

    def poll(self, now: float) -> None:
        self.verdicts.poll(now)
        if now - self.labels_read >= LABELS_EVERY_S:
            self.labels_read = now
            try:
                self.labels = read_run_labels(self.out) if self.out.is_dir() else None
            except (OSError, ValueError):   # a label file being written: read it next time
                pass

    def judge(self) -> Measure | None:
        if self.verdicts.name is not None:   # the live judge's: the lane's measure before its first verdict too
            return judge_measure(self.verdicts.name)
        path = self.verdicts.path
        return judge_measure(path.name) if path is not None and self.verdicts.verdicts else None


def judge_measure(file_name: str) -> Measure | None:
    """The measure a judge file gives (its mode and model, from its name; the mode as `report` names it), or None for
    another name."""
    name = parse_output_name(file_name)
    if name is None:
        return None
    return Measure("judge", _MODE_OF_FILE.get(name.mode, name.mode), name.model)


@dataclass(frozen=True)
class ArmRates:
    """One lane's outcomes counted (both rules' rates come from `counts.rate(rule)`)."""

    lane: str
    label: str
    counts: Counts


@dataclass(frozen=True)
class Comparison:
    """The arms compared now: by `measure` (None: no lane has one yet; `problem` says why none is common), each
    lane's counts, each lane against its repeat's baseline lane under each rule, the pairing gaps, and where an arm
    repeats each arm against the first over all its repeats (paired by task, as `report` has it)."""

    measure: Measure | None
    problem: str
    arms: tuple[ArmRates, ...]
    tests: tuple[PairedTest, ...]
    pairing: PairingGaps
    took_s: float = 0.0
    pooled: tuple[Pooled, ...] = ()     # where an arm repeats: each arm against the first over all its repeats
    not_started: tuple[str, ...] = ()   # lanes with no finished unit yet, left out (as people say them: `agent r2`)


@dataclass
class CampaignBoard:
    """The console's campaign state: empty (`active` False) in a plain run, where nothing of it shows."""

    rows: dict[str, LaneRow] = field(default_factory=dict)          # by lane name, in the plan's order
    slot_lane: dict[int, str] = field(default_factory=dict)         # the lane of each slot's episode (or last one)
    latest: dict[str, dict[str, EpisodeRecord]] = field(default_factory=dict)   # lane -> task -> latest record
    pairing: PairingGaps = field(default_factory=PairingGaps)
    campaign_out: Path | None = None     # where lanes' folders are when no snapshot said (OUT/<lane>)
    live_judge: str | None = None        # the campaign's live judge's file in each lane's folder (live_judge_file)
    wanted: str | None = None            # the measure's kind asked for (`--measure`'s); None: the best common one
    version: int = 0                     # bumped by every change the comparison reads
    _sides: dict[str, LaneSide] = field(default_factory=dict)
    _cached: tuple[tuple[object, ...], Comparison] | None = None

    @property
    def active(self) -> bool:
        """The run is a campaign (some event or snapshot named a lane)."""
        return bool(self.rows) or bool(self.latest) or any(self.slot_lane.values())

    # ── what the engine says ───────────────────────────────
    def slot_changed(self, slot: int, lane: str) -> None:
        if lane:
            self.slot_lane[slot] = lane

    def slot_retired(self, slot: int) -> None:
        self.slot_lane.pop(slot, None)

    def finished(self, lane: str, record: EpisodeRecord) -> None:
        """A lane's attempt recorded: the task's latest record, unless an earlier one arrived late."""
        if not lane:
            return
        tasks = self.latest.setdefault(lane, {})
        old = tasks.get(record.task_id)
        if old is None or (old.attempt, old.finished_at) <= (record.attempt, record.finished_at):
            tasks[record.task_id] = record
            self.version += 1

    def earlier(self, lane: str, records: list[EpisodeRecord]) -> None:
        """A lane's records from its folder before this run (a resumed campaign)."""
        for rec in records:
            self.finished(lane, rec)

    def snapshot(self, snap: RunSnapshot) -> list[LaneRow]:
        """Take the snapshot's lanes; -> the lanes seen for the first time (their folders' records to read)."""
        for s in snap.slots:
            if s.lane:
                self.slot_lane[s.slot] = s.lane
        return self.lanes_seen(snap.lanes, snap.summary.pairing)

    def lanes_seen(self, lanes: Sequence[LaneRow], pairing: PairingGaps) -> list[LaneRow]:
        """Take the lanes as a snapshot, the run's end or its plan says them; -> those seen for the first time."""
        new = [row for row in lanes if row.name not in self.rows]
        if lanes:
            if [r.name for r in lanes] != list(self.rows) or new:
                self.version += 1
            self.rows = {row.name: row for row in lanes}
        if lanes and pairing != self.pairing:
            self.pairing = pairing
            self.version += 1
        return new

    def lane_records(self, lane: str) -> list[EpisodeRecord]:
        """A lane's attempts in its folder, as the folder holds them now ([]: none, or no folder to read)."""
        out = self.out_of(lane)
        try:
            return read_results(out).episode_records() if out is not None and out.is_dir() else []
        except OSError:
            return []

    # ── names ──────────────────────────────────────────────
    def label(self, lane: str) -> str:
        """The lane as people say it: its arm, and its repeat when the campaign repeats (`agent r2`)."""
        row = self.rows.get(lane)
        if row is None:
            return lane
        repeated = any(r.repeat > 1 for r in self.rows.values())
        return f"{row.arm} r{row.repeat}" if repeated else row.arm

    def out_of(self, lane: str) -> Path | None:
        """A lane's run folder: as the snapshot says, else OUT/<lane>."""
        row = self.rows.get(lane)
        if row is not None and row.out:
            return Path(row.out)
        return self.campaign_out / lane if self.campaign_out is not None else None

    def lane_names(self) -> list[str]:
        return list(self.rows) or sorted(self.latest)

    def arm_of(self, lane: str) -> str:
        row = self.rows.get(lane)
        return row.arm if row is not None else lane

    def lanes_of_arm(self, arm: str) -> list[str]:
        """Every lane (repeat) of `arm`, in the plan's order."""
        return [name for name, row in self.rows.items() if row.arm == arm]

    # ── the comparison ─────────────────────────────────────
    def comparison(self, now: float | None = None) -> Comparison:
        """The arms compared now (computed again only when a record, a lane, a verdict or a label changed)."""
        now = time.monotonic() if now is None else now
        version = (self.version, *self._poll(now))
        if self._cached is not None and self._cached[0] == version:
            return self._cached[1]
        began = time.perf_counter()
        found = self._compare()
        found = replace(found, took_s=time.perf_counter() - began)
        self._cached = (version, found)
        return found

    def _poll(self, now: float) -> list[object]:
        """Read what the lanes' judge and label files added; -> what of them the comparison reads, to compare."""
        seen: list[object] = []
        for lane in self.lane_names():
            out = self.out_of(lane)
            if out is None:
                continue
            side = self._side(lane, out)
            side.poll(now)
            # a label file read again is a new object; verdicts only grow or change by their count of successes
            seen += [side.verdicts.path, len(side.verdicts.verdicts), sum(side.verdicts.verdicts.values()),
                     id(side.labels)]
        return seen

    def _side(self, lane: str, out: Path) -> LaneSide:
        side = self._sides.get(lane)
        if side is None:
            side = self._sides[lane] = LaneSide(out, VerdictTail(out, name=self.live_judge))
        return side

    def verdicts(self, lane: str, now: float | None = None) -> tuple[int, int]:
        """(successes, judged) in the lane's judge file as it stands now (the live judge's, else its newest)."""
        out = self.out_of(lane)
        if out is None:
            return 0, 0
        return self._side(lane, out).verdicts.poll(time.monotonic() if now is None else now)

    def _measures(self, lane: str) -> list[Measure]:
        has: list[Measure] = []
        side = self._sides.get(lane)
        if side is not None and side.labels is not None and side.labels.labelled():
            has.append(Measure("humans"))
        if side is not None and (judge := side.judge()) is not None:
            has.append(judge)
        if any(r.correct is not None for r in self.latest.get(lane, {}).values()):
            has.append(Measure("reference"))
        return has

    def outcomes(self, lane: str, measure: Measure) -> dict[str, Outcome | None]:
        """Each task's outcome in `lane` by `measure` (None: none yet)."""
        records = self.latest.get(lane, {})
        side = self._sides.get(lane)
        if measure.kind == "humans":
            labels = side.labels if side is not None else None
            return {t: label_outcome(labels.consensus(t)) if labels is not None else None for t in records}
        if measure.kind == "judge":
            verdicts = side.verdicts.verdicts if side is not None else {}
            return {t: run_outcome(r, verdicts.get(t), True) for t, r in records.items()}
        return {t: run_outcome(r, r.correct, True) for t, r in records.items()}

    def _compare(self) -> Comparison:
        """The lanes with a finished unit compared; a lane not started yet (a held arm, a repeat still queued) is left
        out, as `report` leaves it out, and named."""
        every = self.lane_names()
        lanes = [lane for lane in every if self.latest.get(lane)]
        waiting = tuple(self.label(lane) for lane in every if lane not in lanes)
        try:
            measure = choose([(lane, self._measures(lane)) for lane in lanes], self.wanted)
            problem = "" if measure is not None else "no measure of success yet"
        except NoCommonMeasure as e:
            measure, problem = None, str(e)
        if measure is None:
            return Comparison(None, problem, (), (), self.pairing, not_started=waiting)
        outcomes = {lane: self.outcomes(lane, measure) for lane in lanes}
        # pending: its units with no outcome yet, those not finished (running, queued, held) among them
        arms = tuple(ArmRates(lane, self.label(lane), count([*outcomes[lane].values(), *[None] * max(
            0, (self.rows[lane].total if lane in self.rows else 0) - len(outcomes[lane]))])) for lane in lanes)
        tests = [paired(outcomes[lane], outcomes[base], rule, self.label(lane), self.label(base))
                 for base, lane in self._pairs(every) if base in outcomes and lane in outcomes for rule in RULES]
        return Comparison(measure, "", arms, tuple(tests), self.pairing, pooled=self._pooled(every, outcomes),
                          not_started=waiting)

    def _pooled(self, lanes: list[str], outcomes: dict[str, dict[str, Outcome | None]]) -> tuple[Pooled, ...]:
        """Where an arm repeats: each arm against the first (the first lane's) over all its repeats that started,
        under each rule."""
        if not all(lane in self.rows for lane in lanes):
            return ()
        groups = arm_groups([LaneName(lane, self.rows[lane].arm, self.rows[lane].repeat) for lane in lanes])
        by_arm = [(arm, [lanes[k] for k in ks if lanes[k] in outcomes]) for arm, ks in groups]
        if len(by_arm) < 2 or all(len(v) < 2 for _, v in by_arm) or not by_arm[0][1]:
            return ()
        (base, base_lanes), *others = by_arm
        return tuple(pooled([outcomes[x] for x in arm_lanes], [outcomes[x] for x in base_lanes], rule, arm, base,
                            [self.label(x) for x in arm_lanes], [self.label(x) for x in base_lanes])
                     for arm, arm_lanes in others if arm_lanes for rule in RULES)

    def _pairs(self, lanes: list[str]) -> list[tuple[str, str]]:
        """(baseline, lane) for each lane compared: an arm's lane against the first arm's of the same repeat, the
        pairs `report` tests and the pairing gap measures (engine/pairing.py); lanes the snapshot has not named yet
        (an attached console's first look), each against the first."""
        if not all(lane in self.rows for lane in lanes):
            return [(lanes[0], lane) for lane in lanes[1:]]
        units = [LaneName(lane, self.rows[lane].arm, self.rows[lane].repeat) for lane in lanes]
        return [(lanes[a], lanes[b]) for a, b in compared_pairs(units)]
