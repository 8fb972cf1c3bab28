"""The dashboard's commands on a live run, each through `RunControl`: dispatch, the selected slot's episode, the
slots, the errored tasks, a campaign's arms (pause and resume one, from its key or the palette); and opening the
report or the row under the cursor. A mixin the dashboard screen takes (`DashboardScreen(RunCommands, Screen)`);
what the commands ask of the screen is `DashboardHost`, so they read its state and never build its widgets."""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol

from textual.app import App, SystemCommand
from textual.command import SimpleCommand
from textual.message import Message
from textual.widget import Widget

from om2w_tui.engine.control import RunControl
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.engine.settings import clamp_workers
from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.host import OpenEpisode, OpenReport
from om2w_tui.frontends.console.widgets.panels import EpisodesTable
from om2w_tui.frontends.run_state import RunState, SlotView


class DashboardHost(Protocol):
    """What the commands ask of the dashboard screen."""

    board: CampaignBoard
    state: RunState

    @property
    def live(self) -> bool: ...

    @property
    def control(self) -> RunControl | None: ...

    def _selected_slot(self) -> SlotView | None: ...

    def _command(self) -> RunControl: ...

    def _after_command(self, note: str = "") -> None: ...

    def _warn(self, note: str) -> None: ...

    # the mixin's own, called from one another
    def selected_lane(self) -> str: ...

    def _pause_lanes(self, lanes: list[str], paused: bool, label: str) -> None: ...

    def _pause_arm(self, paused: bool) -> None: ...

    def _set_workers(self, n: int) -> None: ...

    def lane_commands(self) -> list[SystemCommand]: ...

    @property
    def app(self) -> App[Any]: ...

    _record_lane: dict[str, str]   # the lane of each finished attempt's row (EpisodesTable.key_of)

    @property
    def focused(self) -> Widget | None: ...

    def post_message(self, message: Message) -> bool: ...

    def _selected_task(self) -> str | None: ...

    def selected_state(self) -> str | None: ...

    def _row_task(self, widget: Any) -> tuple[str, EpisodeRecord | None, str] | None: ...

    def _open(self, widget: Any) -> None: ...


class RunCommands:
    def action_pause_dispatch(self: DashboardHost) -> None:
        self._command().pause_dispatch(True, "")
        self._after_command("dispatch paused")

    def action_resume_dispatch(self: DashboardHost) -> None:
        self._command().pause_dispatch(False, "")
        self._after_command("dispatch resumed")

    def action_pause_episode(self: DashboardHost) -> None:
        slot = self._selected_slot()
        if slot is not None and self._command().pause_episode(slot.slot, True):
            self._after_command(f"slot {slot.slot}: paused")

    def action_resume_episode(self: DashboardHost) -> None:
        slot = self._selected_slot()
        if slot is not None and self._command().pause_episode(slot.slot, False):
            self._after_command(f"slot {slot.slot}: resumed")

    def action_kill(self: DashboardHost) -> None:
        slot = self._selected_slot()
        if slot is not None and self._command().kill(slot.slot):
            self._after_command(f"slot {slot.slot}: killing")

    def action_requeue(self: DashboardHost) -> None:
        slot = self._selected_slot()
        if slot is not None and self._command().kill(slot.slot, requeue=True):
            self._after_command(f"slot {slot.slot}: killing, requeued")

    def action_more_slots(self: DashboardHost) -> None:
        self._set_workers(self.state.target_workers + 1)

    def action_fewer_slots(self: DashboardHost) -> None:
        self._set_workers(self.state.target_workers - 1)

    def _set_workers(self: DashboardHost, n: int) -> None:
        n = clamp_workers(n)
        note = self._command().set_workers(n)
        if note:   # fewer than asked: as many as the machine's memory holds
            self.state.target_workers = self._command().snapshot().target_workers
            self._warn(note)
            self._after_command()
            return
        self.state.target_workers = n   # until the next snapshot says so: a second press counts from here
        self._after_command(f"slots: {n}")

    def action_retry_errors(self: DashboardHost) -> None:
        n = self._command().retry_errors()
        self.state.errored = 0
        self._after_command(f"{n} errored back in the queue")

    def selected_lane(self: DashboardHost) -> str:
        """The lane of the selected slot's episode; "" when it runs none (an idle slot's last lane is not shown, so
        `a` there would act on an arm the user cannot see)."""
        slot = self._selected_slot()
        return self.board.slot_lane.get(slot.slot, "") if slot is not None and slot.busy else ""

    def can_choose_arm(self: DashboardHost) -> bool:
        """`a` on a slot that runs no episode: the arms to pause or resume are offered by name."""
        return self.live and self.board.active and not self.selected_lane()

    def action_choose_arm(self: DashboardHost) -> None:
        self.app.search_commands([SimpleCommand(c.title, c.callback, c.help) for c in self.lane_commands()],
                                 placeholder="Pause or resume an arm…")

    def can_pause_lane(self: DashboardHost, paused: bool) -> bool:
        """`a` pauses (resumes) the selected slot's arm, every repeat of it: the run is live, takes lane commands,
        and a lane of that arm runs (is paused)."""
        lane = self.selected_lane()
        if not lane or not self.live:
            return False
        rows = [self.board.rows[n] for n in self.board.lanes_of_arm(self.board.arm_of(lane))]
        # before the first snapshot names the lanes: its lane runs (the events said so), so it may be paused
        return any(row.paused != paused for row in rows) if rows else paused

    def _pause_lanes(self: DashboardHost, lanes: list[str], paused: bool, label: str) -> None:
        if not lanes or self.control is None:
            return
        if all([self.control.pause_lane(lane, paused) for lane in lanes]):   # each lane asked, whatever the others said
            self._after_command(f"{label}: {'held: none of its units starts until resumed' if paused else 'resumed'}")
        else:
            self._warn(f"{label}: not a lane of this run")

    def _pause_arm(self: DashboardHost, paused: bool) -> None:
        lane = self.selected_lane()
        arm = self.board.arm_of(lane)
        self._pause_lanes(self.board.lanes_of_arm(arm) or [lane], paused, arm)

    def action_pause_lane(self: DashboardHost) -> None:
        self._pause_arm(True)

    def action_resume_lane(self: DashboardHost) -> None:
        self._pause_arm(False)

    def lane_commands(self: DashboardHost) -> list[SystemCommand]:
        """The palette's entries to pause or resume each arm by name (any, not only the selected slot's), and each
        repeat alone where the arms repeat."""
        if not self.live:
            return []
        found = []
        arms = {row.arm: self.board.lanes_of_arm(row.arm) for row in self.board.rows.values()}
        for arm, lanes in arms.items():
            paused = all(self.board.rows[n].paused for n in lanes)
            found.append(SystemCommand(f"{'Resume' if paused else 'Pause'} arm {arm}",
                                       f"{'Start' if paused else 'Hold'} its units (every repeat)"
                                       + ("" if paused else "; its running episodes go on"),
                                       partial(self._pause_lanes, lanes, not paused, arm)))
            for name in lanes if len(lanes) > 1 else ():
                paused = self.board.rows[name].paused
                found.append(SystemCommand(f"{'Resume' if paused else 'Pause'} {self.board.label(name)} alone",
                                           f"{'Start' if paused else 'Hold'} the units of lane {name} only",
                                           partial(self._pause_lanes, [name], not paused, self.board.label(name))))
        return found

    # ── opening what a row shows ───────────────────────────
    def action_open_report(self: DashboardHost) -> None:
        self.post_message(OpenReport())

    def action_open_episode(self: DashboardHost) -> None:
        self._open(self.focused)

    def _row_task(self: DashboardHost, widget: Any) -> tuple[str, EpisodeRecord | None, str] | None:
        """(task id, its record if finished, its lane) of the row under the cursor of `widget` (else of the Slots
        table)."""
        if isinstance(widget, EpisodesTable):
            key = widget.cursor_key()
            rec = widget.records.get(key) if key else None
            return (rec.task_id, rec, self._record_lane.get(key or "", "")) if rec else None
        task = self._selected_task()
        if not task:
            return None
        lane = self.selected_lane()
        if lane:
            latest = self.board.latest.get(lane, {}).get(task)
            running = self.selected_state() is not None
        else:
            latest = next((r for r in reversed(self.state.records) if r.task_id == task), None)
            running = any(s.task_id == task for s in self.state.slots.values())
        return task, (None if running else latest), lane

    def _open(self: DashboardHost, widget: Any) -> None:
        found = self._row_task(widget)
        if found is not None:
            self.post_message(OpenEpisode(*found))
