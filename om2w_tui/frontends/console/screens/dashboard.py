"""The dashboard: a header line and four panels (Slots, Sites, Steps, Episodes), refreshed live.

Engine events arrive as they are, each in one message (see `messages.py`), matched over the engine's `Event` union
and folded into a RunState; the panels are brought up to date by difference. Once a second the app pulls the
scheduler's snapshot (sites, cooldown deadlines, slots), which arrives as a message too; countdowns and elapsed times
are computed from stored deadlines and the clock.

What each event costs is bounded and proportional to what it changed (bench/scale.py measures it): a step redraws its
slot's row only; a burst of events redraws the rows of the slots it touched once (events redraw at most every
REDRAW_EVERY_S, every REDRAW_BUSY_S while the machine is busy: `redraw_pace.py`; the first after a quiet spell at
once), and adds its finished episodes' rows and step lines in one pass each; every slot's row and the Sites table are
redrawn from snapshots and the clock's tick only; the footer is rebuilt only when the set of allowed commands
changed, and finding that out reads the selected slot once."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, assert_never, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable

from om2w_tui.engine.control import RunControl
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodeModelCall,
    EpisodePutBack,
    EpisodeStarted,
    EpisodeStep,
    LaneRow,
    Log,
    RunFinished,
    RunStarted,
    SlotChanged,
)
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.host import ConsoleHost, SnapshotWanted
from om2w_tui.frontends.console.messages import EngineEvent, EpisodeChange, SnapshotTaken
from om2w_tui.frontends.console.redraw_pace import RedrawPace
from om2w_tui.frontends.console.screens.compare import ComparisonScreen
from om2w_tui.frontends.console.screens.dashboard_commands import RunCommands
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.keyed_table import KeyedTable
from om2w_tui.frontends.console.widgets.lanes_bar import LanesBar
from om2w_tui.frontends.console.widgets.model_bar import ModelBar
from om2w_tui.frontends.console.widgets.panels import EpisodesTable, SitesTable, SlotsTable, StepsLog, pacing_text
from om2w_tui.frontends.console.widgets.run_header import RunHeader
from om2w_tui.frontends.formatting import clip
from om2w_tui.frontends.run_state import ACTIVE_STATES, RunState, SlotView, finish_line
from om2w_tui.protocol.run_end import RunEnd
from om2w_tui.words import plural

WIDE = 120


class DashboardScreen(RunCommands, Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
    # the run's commands (commands.py): key, action, footer label, palette title and help, when it applies
    COMMAND_TABLE: ClassVar[CommandTable[DashboardScreen]] = CommandTable(
        Command("enter", "open_episode", "Open", "Open the selected episode",
                "Task, actions, thoughts, answer, files and screenshots", lambda s: s.can_open(),
                id="open-episode", key_display="⏎", priority=True),
        Command("p", "pause_dispatch", "Pause all", "Pause the run",
                "Start no new episode until resumed (running ones go on)", lambda s: s.live and not s.state.paused,
                id="pause-dispatch"),
        Command("p", "resume_dispatch", "Resume all", "Resume the run", "Start episodes again",
                lambda s: s.live and s.state.paused, id="resume-dispatch"),
        Command("space", "pause_episode", "Pause ep", "Pause the selected episode",
                "Its browser and its timeout stop until resumed",
                lambda s: s.live and s.selected_state() == "running", id="pause-episode", key_display="␣"),
        Command("space", "resume_episode", "Resume ep", "Resume the selected episode", "It goes on where it stopped",
                lambda s: s.live and s.selected_state() == "paused", id="resume-episode", key_display="␣"),
        Command("k", "kill", "Kill", "Kill the selected episode", "End it now, keeping its steps; recorded as killed",
                lambda s: s.live and s.selected_state() in ACTIVE_STATES, id="kill"),
        Command("K", "requeue", "Requeue", "Kill and requeue the selected episode",
                "End it now and put its task back in the queue",
                lambda s: s.live and s.selected_state() in ACTIVE_STATES, id="kill-requeue", key_display="K"),
        Command("plus", "more_slots", "Slot", "Add a slot", "Run one more episode at once", lambda s: s.live,
                id="slots-more", key_display="+"),
        Command("minus", "fewer_slots", "Slot", "Remove a slot",
                "Run one episode fewer at once (a busy slot retires when its episode ends)",
                lambda s: s.live and s.state.target_workers > 1, id="slots-fewer", key_display="-"),
        Command("r", "retry_errors", "Retry", "Retry errored tasks",
                "Put the tasks that ended in error back in the queue", lambda s: s.live and s.state.errored > 0,
                id="retry-errors"),
        Command("s", "steps_all", "All steps", "Show every slot's steps", "The Steps panel follows all slots",
                lambda s: s.steps_scope != "all", id="steps-all", show=False),
        Command("s", "steps_selected", "Slot steps", "Show the selected slot's steps",
                "The Steps panel follows the selected slot", lambda s: s.steps_scope == "all",
                id="steps-selected", show=False),
        Command("R", "open_report", "Report", "Open the report",
                "Success by level and site, statuses, medians, errors and failures", id="open-report",
                key_display="R", show=False),
        # a campaign's: its arms compared, and pausing one arm (the selected slot's lane) alone
        Command("c", "compare", "Compare", "Compare the arms",
                "Each arm's rate, the paired difference and McNemar, the tasks only one solved, the pairing gaps",
                lambda s: s.board.active, id="compare"),
        Command("a", "pause_lane", "Pause arm", "Pause the selected slot's arm",
                "Start none of its lane's units until resumed (its running episodes go on; the other arms go on)",
                lambda s: s.can_pause_lane(True), id="pause-lane"),
        Command("a", "resume_lane", "Resume arm", "Resume the selected slot's arm", "Start its lane's units again",
                lambda s: s.can_pause_lane(False), id="resume-lane"),
        Command("a", "choose_arm", "Arms", "Pause or resume an arm", "Each arm by name, each repeat alone",
                lambda s: s.can_choose_arm(), id="choose-arm"),
    )
    BINDINGS = COMMAND_TABLE.bindings()
    board: CampaignBoard

    def __init__(self, name: str, total: int, out: Path | None = None):
        super().__init__()
        self.state: RunState = RunState(name=name, total=total)
        # a campaign's lanes (nothing of it shows in a plain run); `out`: the campaign's folder, its lanes' beside
        self.board = CampaignBoard(campaign_out=Path(out) if out is not None else None)
        self._campaign_shown = False
        self._planned: list[LaneRow] = []     # a campaign's lanes as planned (campaign_planned), read when mounted
        self._record_lane: dict[str, str] = {}   # the lane of each finished attempt's row (EpisodesTable.key_of)
        self.steps_scope: str = "all"
        self._shown_task: str | None = None
        self._snapshot_timer: Timer | None = None
        self._tick_timer: Timer | None = None
        self._top_height: int | None = None
        self._render_due = False
        self._rendered_at = 0.0               # monotonic time of the last redraw
        self.redraw_pace = RedrawPace()
        self._sites_due = True
        self._slots_due: set[int] = set()      # slots whose row changed since the last redraw
        self._all_slots_due = True             # any slot's may have (a snapshot, the clock, a slot retired)
        self._slots: SlotsTable | None = None
        self._selected_memo: tuple[SlotView | None] | None = None   # the selected slot, while the footer is checked
        self._allowed: tuple[Any, ...] | None = None   # the allowed commands the footer shows now

    @property
    def host(self) -> ConsoleHost:
        return cast("ConsoleHost", self.app)

    # ── layout ─────────────────────────────────────────────
    def compose(self) -> ComposeResult:
        yield RunHeader(self.state.name, self.state.total, id="run-header")
        yield LanesBar(id="lanes-bar")
        yield ModelBar(id="model-bar")
        with Horizontal(id="top-row"):
            slots = SlotsTable(id="slots", classes="panel")
            slots.border_title = "Slots"
            yield slots
            sites = SitesTable(id="sites", classes="panel")
            sites.border_title = "Sites"
            yield sites
        steps = StepsLog(id="steps", classes="panel")
        steps.border_title = "Steps"
        steps.border_subtitle = "all slots"
        yield steps
        episodes = EpisodesTable(id="episodes", classes="panel")
        episodes.border_title = "Episodes"
        yield episodes
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self._tick_timer = self.set_interval(1.0, self._tick)
        self._slots = self.query_one(SlotsTable)
        self._slots.focus()
        self._read_lanes(self._planned)   # a campaign's, as planned (none in a plain run)
        self._campaign_seen()
        self.render_all()

    def on_unmount(self) -> None:
        self._slots = None
        for t in (self._tick_timer, self._snapshot_timer):
            if t is not None:
                t.stop()

    @property
    def wide(self) -> bool:
        return self.has_class("-wide")

    def now(self) -> float:
        return self.host.clock()

    def on_resize(self) -> None:
        self.call_after_refresh(self.render_all)

    def render_soon(self, slot: int | None = None, *, rows: bool = True) -> None:
        """Redraw after the next refresh, or the redraw pace after the last redraw, however many events arrive before
        it. `slot`: the event changed that slot's row only (None: any slot's); `rows`: False when it changed none (a
        line in the steps log, a finished episode's row)."""
        if rows and (slot is None or slot not in self.state.slots):   # any slot's, or a slot gone: its row goes too
            self._all_slots_due = True
        elif rows and slot is not None:
            self._slots_due.add(slot)
        if not self._render_due:
            self._render_due = True
            wait = self._rendered_at + self.redraw_pace.every - time.monotonic()
            if wait > 0:
                self.set_timer(wait, self._render_if_due)
            else:
                self.call_after_refresh(self._render_if_due)

    def _render_if_due(self) -> None:
        if not self._render_due:
            return
        if self._all_slots_due:
            self.render_all(sites=self._sites_due)
            return
        self._render_due = False
        self._rendered_at = time.monotonic()
        now = self.now()
        with self.app.batch_update():
            self._flush_panels()
            self.query_one(RunHeader).show(self.state, now, self.wide, campaign=self.board.active)
            self.query_one(LanesBar).show(self.board, self.wide)
            self.query_one(ModelBar).show(self.state.model, self.wide)
            slots = self.query_one(SlotsTable)
            for sid in sorted(self._slots_due):
                slots.show_slot(self.state, sid, now)
            self._slots_due.clear()
            if self._sites_due:
                self._show_sites(now)

    def render_all(self, sites: bool = True) -> None:
        """Redraw the panels; `sites`: the Sites table too (its rows change with snapshots and the clock only)."""
        self._render_due = False
        self._rendered_at = time.monotonic()
        self._all_slots_due = False
        self._slots_due.clear()
        now = self.now()
        with self.app.batch_update():
            self._flush_panels()
            for table in self.query(KeyedTable):
                table.set_wide(self.wide)
            self._fit_top_row()
            self.query_one(RunHeader).show(self.state, now, self.wide, campaign=self.board.active)
            self.query_one(LanesBar).show(self.board, self.wide)
            self.query_one(ModelBar).show(self.state.model, self.wide)
            slots = self.query_one(SlotsTable)
            slots.show(self.state, now)
            target = self.state.target_workers
            n = len(self.state.slots)
            slots.border_subtitle = f"{n} slots" + (f", target {target}" if target and target != n else "")
            if sites:
                self._show_sites(now)

    def _flush_panels(self) -> None:
        """The step lines and finished episodes taken since the last redraw, written in one pass each."""
        self.query_one(StepsLog).flush()
        episodes = self.query_one(EpisodesTable)
        episodes.flush()
        episodes.border_subtitle = f"{len(episodes.records)} finished"

    def _show_sites(self, now: float) -> None:
        self._sites_due = False
        sites_table = self.query_one(SitesTable)
        sites_table.show(self.state, now)
        sites_table.border_subtitle = pacing_text(self.state.pacing)

    def _fit_top_row(self) -> None:
        """Side by side, Slots and Sites get the height of the longer one (up to half the screen)."""
        height = None
        if self.wide:
            rows = max(len(self.state.slots), len(self.state.sites), 1)
            height = min(rows + 3, max(6, self.size.height // 2))
        if height != self._top_height:
            self._top_height = height
            self.query_one("#top-row").styles.height = height

    def refresh_commands(self) -> None:
        """Rebuild the footer only when a command became allowed or not (a rebuild remounts every key in it)."""
        self._selected_memo = (self._selected_slot(),)
        try:
            allowed = self.COMMAND_TABLE.gates(self)
        finally:
            self._selected_memo = None
        if allowed != self._allowed:
            self._allowed = allowed
            self.refresh_bindings()

    def _tick(self) -> None:
        self.redraw_pace.tick(time.monotonic())
        if self.control is None:
            self.render_all()
        else:     # the app posts the snapshot back (or, the run just over, redraws)
            self.post_message(SnapshotWanted())

    def snapshot_soon(self) -> None:
        """Pull a fresh snapshot shortly (coalescing a burst of events into one)."""
        if self._snapshot_timer is None:
            self._snapshot_timer = self.set_timer(0.1, self._snapshot_due)

    def _snapshot_due(self) -> None:
        self._snapshot_timer = None
        self.post_message(SnapshotWanted())

    # ── engine events ──────────────────────────────────────
    def on_engine_event(self, m: EngineEvent) -> None:
        ev = m.event
        match ev:
            case RunStarted():
                self._run_started(ev)
            case SlotChanged():
                self._slot_changed(ev)
            case EpisodeStarted():
                self._episode_started(ev)
            case EpisodeStep():
                self._step(ev)
            case EpisodeModelCall():
                self._model_call(ev)
            case EpisodeFinished():
                self._episode_finished(ev)
            case EpisodePutBack():
                self._put_back(ev)
            case DispatchChanged():
                self._dispatch_changed(ev)
            case Log():
                self._log(ev)
            case RunFinished():
                self._run_finished(ev)
            case _:
                assert_never(ev)

    def _run_started(self, ev: RunStarted) -> None:
        self.state.run_started(ev, self.now())
        self.render_all()
        self.refresh_commands()
        self.snapshot_soon()

    def _slot_changed(self, ev: SlotChanged) -> None:
        self.state.slot_changed(ev)
        if ev.state == "retired":
            self.board.slot_retired(ev.slot)
        else:
            self.board.slot_changed(ev.slot, ev.lane)
            self._campaign_seen()
        self.render_soon(ev.slot)
        self.refresh_commands()

    def _episode_started(self, ev: EpisodeStarted) -> None:
        self.state.episode_started(ev)
        self.board.slot_changed(ev.slot, ev.lane)
        self._campaign_seen()
        again = f" (attempt {ev.attempt})" if ev.attempt > 1 else ""
        self._log_all(ev.slot, ev.task_id, [f"▶ started on {ev.site}{again}"])
        if self.steps_scope == "selected" and self._selected_task() == ev.task_id:
            self._show_steps()
        self.render_soon(ev.slot)
        self.snapshot_soon()

    def _step(self, ev: EpisodeStep) -> None:
        lines = self.state.step(ev)
        self._log_all(ev.slot, ev.task_id, lines)
        if self.steps_scope == "selected" and self._shown_task == ev.task_id:
            self.query_one(StepsLog).add_lines(lines)
        self.render_soon(ev.slot)
        self.host.episode_signal.publish(EpisodeChange(ev.task_id, lane=self.board.slot_lane.get(ev.slot, "")))

    def _model_call(self, ev: EpisodeModelCall) -> None:
        before = self.state.slots.get(ev.slot)
        was = before.model_error if before is not None else ""
        self.state.model_call(ev)
        if before is not None and before.model_error != was:   # the slot's mark changed: its row only
            self.render_soon(ev.slot)

    def _episode_finished(self, ev: EpisodeFinished) -> None:
        rec = ev.record
        self.state.episode_finished(ev)
        if ev.lane:
            self.board.finished(ev.lane, rec)
            self._record_lane[EpisodesTable.key_of(rec)] = ev.lane
            self._campaign_seen()
        self._add_records([rec])
        self._log_all(ev.slot, rec.task_id, [finish_line(rec)])
        if self.steps_scope == "selected" and self._shown_task == rec.task_id:
            self.query_one(StepsLog).add_lines([finish_line(rec)])
        self.render_soon(ev.slot)
        self.refresh_commands()
        self.snapshot_soon()
        self.host.episode_signal.publish(EpisodeChange(rec.task_id, rec, ev.lane))

    def _put_back(self, ev: EpisodePutBack) -> None:
        self.state.episode_put_back(ev)
        line = f"= put back in the queue before it started ({ev.reason})"
        self._log_all(ev.slot, ev.task_id, [line])
        if self.steps_scope == "selected" and self._shown_task == ev.task_id:
            self.query_one(StepsLog).add_lines([line])
        self.render_soon(ev.slot)
        self.refresh_commands()
        self.snapshot_soon()

    def _dispatch_changed(self, ev: DispatchChanged) -> None:
        self.state.dispatch_changed(ev)
        self._log_all(None, None, [f"dispatch {'paused' if ev.paused else 'resumed'}"
                                   + (f": {ev.reason}" if ev.reason else "")])
        self.render_all()
        self.refresh_commands()

    def _log(self, ev: Log) -> None:
        if ev.level in ("warning", "error"):
            self._log_all(None, None, [f"! {ev.level}: {ev.message}"])
            self.render_soon(rows=False)
        if ev.level == "error":
            self.notify(ev.message, severity="error", timeout=8)

    def _run_finished(self, ev: RunFinished) -> None:
        self.state.run_finished(ev, self.now())
        # a campaign's lanes as it ended (one with nothing left ends before any snapshot)
        self._read_lanes(self.board.lanes_seen(ev.summary.lanes, ev.summary.pairing))
        self._campaign_seen()
        s, (kind, unit) = ev.summary, (("campaign", "unit") if self.board.active else ("run", "task"))
        line = (f"{kind} {s.end.words if s.end else 'over'}: {plural(s.finished, 'episode')} this run, "
                f"{plural(s.pending, unit)} left")
        if s.judged and not self.board.active:   # over every settled task (a campaign's: each lane's, on its line)
            line += f"; {s.correct} of {s.judged} tasks correct"
        self._log_all(None, None, [line])
        self.render_all()
        self.refresh_commands()

    def on_snapshot_taken(self, m: SnapshotTaken) -> None:
        self.state.apply_snapshot(m.snapshot, m.taken_at)
        self._read_lanes(self.board.snapshot(m.snapshot))
        self._campaign_seen()
        self._sites_due = True
        self.render_soon()

    def engine_stopped(self, end: RunEnd, why: str = "") -> None:
        """The engine worker is over (finished, failed or cancelled); nothing more will come."""
        if self.state.phase not in ("finished",):
            self.state.end = end
            self.state.phase = {RunEnd.ERROR: "failed", RunEnd.STOPPED: "stopped"}.get(end, "finished")
            if self.state.ended_at is None:
                self.state.ended_at = self.now()
        if why:
            self._log_all(None, None, [f"! {why}"])
        self.render_all()
        self.refresh_commands()

    def stopping(self) -> None:
        if self.state.phase == "running":
            self.state.phase = "stopping"
        self._log_all(None, None, ["stopping: running episodes end keeping their steps (ctrl+c: end them now)"])
        self.render_all()
        self.refresh_commands()

    def add_earlier_records(self, records: list[EpisodeRecord]) -> None:
        """Attempts finished in this folder before this run (the table skips any it has already)."""
        self._add_records(records)

    def known_records(self, lane: str = "") -> list[EpisodeRecord]:
        """The finished attempts the Episodes table holds (of `lane` only, where given: a campaign's)."""
        records = self.query_one(EpisodesTable).records
        return [r for k, r in records.items() if not lane or self._record_lane.get(k) == lane]

    def _add_records(self, records: list[EpisodeRecord]) -> None:
        table = self.query_one(EpisodesTable)
        records = sorted(records, key=lambda r: r.finished_at)
        table.add_records(records)
        self.render_soon(rows=False)

    # ── a campaign ─────────────────────────────────────────
    def _campaign_seen(self) -> None:
        """The first event or snapshot that names a lane turns the campaign's views on (the slots' lane column)."""
        if self._campaign_shown or not self.board.active:
            return
        self._campaign_shown = True
        if self._slots is not None:
            self._slots.show_lanes(self.board)
            self.query_one(EpisodesTable).show_lanes(self.board, self._record_lane)
        self.render_soon()
        self.refresh_commands()

    def campaign_planned(self, lanes: Sequence[LaneRow]) -> None:
        """A campaign's lanes as planned, before the engine's first word (with nothing left, no snapshot comes)."""
        self._planned = list(self.board.lanes_seen(lanes, self.board.pairing))

    def _read_lanes(self, rows: Sequence[LaneRow]) -> None:
        for row in rows:   # a resumed lane's attempts from before this run
            self._read_lane_records(row.name)

    @work(thread=True, group="lane-records", exit_on_error=False)
    def _read_lane_records(self, lane: str) -> None:
        if records := self.board.lane_records(lane):
            self.app.call_from_thread(self._lane_records_read, lane, records)

    def _lane_records_read(self, lane: str, records: list[EpisodeRecord]) -> None:
        self.board.earlier(lane, records)
        for rec in records:
            self._record_lane.setdefault(EpisodesTable.key_of(rec), lane)
        self._add_records(records)

    def action_compare(self) -> None:
        self.app.push_screen(ComparisonScreen(self.board, self.state.name))

    # ── steps panel ────────────────────────────────────────
    def _log_all(self, slot: int | None, task_id: str | None, lines: list[str]) -> None:
        if self.steps_scope != "all" or not lines:
            return
        lane = self.board.slot_lane.get(slot, "") if slot is not None else ""
        where = f"{slot} {self.board.label(lane)}" if lane else f"{slot}"   # a campaign's: which arm's run of the task
        prefix = f"[{where}] {clip(task_id, 32)} " if slot is not None else ""
        self.query_one(StepsLog).add_lines([prefix + lines[0], *lines[1:]])

    def _selected_slot(self) -> SlotView | None:
        if self._selected_memo is not None:
            return self._selected_memo[0]
        # the footer asks (check_action) while the screen is torn down too: no table, no selection
        table = self._slots
        key = table.cursor_key() if table is not None else None
        return self.state.slots.get(int(key)) if key is not None else None

    def _selected_task(self) -> str | None:
        s = self._selected_slot()
        return (s.task_id or s.last_task) if s else None

    def _show_steps(self) -> None:
        """Redraw the steps panel for its scope (on a change of scope or of the selected slot only)."""
        log = self.query_one(StepsLog)
        if self.steps_scope == "all":
            self._shown_task = None
            log.border_subtitle = "all slots"
            log.restart(["(every slot's steps from now on; s: the selected slot's)"])
            return
        slot = self._selected_slot()
        task = self._selected_task()
        self._shown_task = task
        log.border_subtitle = f"slot {slot.slot} · {clip(task, 40)}" if slot and task else "no slot selected"
        log.restart(list(self.state.steps.get(task, ())) if task else [])

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "slots":
            if self.steps_scope == "selected" and self._selected_task() != self._shown_task:
                self._show_steps()
            self.refresh_commands()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # a click on the highlighted row
        self._open(event.data_table)

    # ── controls ───────────────────────────────────────────
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    @property
    def live(self) -> bool:
        """The run takes commands: it runs (or starts) and the console is not stopping it."""
        return self.control is not None and not self.host.stopping and self.state.phase in ("starting", "running")

    def selected_state(self) -> str | None:
        """The state of the selected slot's episode (None: no slot selected, or it holds none)."""
        slot = self._selected_slot()
        return slot.state if slot and slot.task_id else None

    def can_open(self) -> bool:
        """A row to open: the Episodes table's finished one under the cursor, else the selected slot's task."""
        focused = self.focused
        if isinstance(focused, EpisodesTable):
            key = focused.cursor_key()
            return key is not None and key in focused.records
        return self._selected_task() is not None

    def _after_command(self, note: str = "") -> None:
        if note:
            self.notify(note, timeout=2.5)
        self.refresh_commands()
        self.snapshot_soon()

    def _warn(self, note: str) -> None:
        self.notify(note, severity="warning", timeout=8)

    @property
    def control(self) -> RunControl | None:
        """The live run's controls; None once it is over (or before it began)."""
        return self.host.control

    def _command(self) -> RunControl:
        # an action runs only when check_action allowed it, which it does only while the run is live
        assert self.control is not None
        return self.control

    def action_steps_all(self) -> None:
        self.steps_scope = "all"
        self._show_steps()
        self.refresh_commands()

    def action_steps_selected(self) -> None:
        self.steps_scope = "selected"
        self._show_steps()
        self.refresh_commands()
