"""The dashboard's four panels. Each renders from the RunState it is given; none talks to the scheduler."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textual.widgets import Log

from om2w_tui.engine.events import Pacing
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.engine.settings import unpaced
from om2w_tui.frontends.answer import shown_answer
from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.widgets.keyed_table import Col, KeyedTable, Styled
from om2w_tui.frontends.formatting import clip, clip_left, clock_text, countdown_text
from om2w_tui.frontends.run_state import RunState, verdict_text
from om2w_tui.protocol.model import kind_short

STATE_STYLE = {"running": "green", "starting": "cyan", "paused": "yellow", "stopping": "magenta",
               "idle": "dim", "retiring": "dim", "cooling": "yellow", "free": "cyan", "done": "dim",
               "held": "yellow",             # every unit left on the site is a held arm's
               "held elsewhere": "magenta"}   # a site another run holds through the shared --pace-dir
STATUS_STYLE = {"done": "green", "out_of_steps": "yellow", "error": "red", "killed": "yellow", "timeout": "magenta",
                "blocked": "red"}


def styled(text: str, style_for: dict[str, str], key: str | None = None) -> Styled:
    return Styled(text, style_for.get(key or text, ""))


class SlotsTable(KeyedTable):
    DEFAULT_CSS = """
    SlotsTable { height: auto; max-height: 12; }
    """
    LAZY = True
    COLUMNS: Sequence[Col] = (Col("slot", "slot", 4), Col("task", "task", 21, 30), Col("site", "site", 13, 20),
               Col("level", "level", 6), Col("step", "step", 5, 7), Col("elapsed", "time", 5, 7),
               Col("state", "state", 8))
    LANE = Col("lane", "arm", 8, 10)     # a campaign's: the lane of the slot's episode
    # its room (with a cell's padding) taken from the task's and the site's, so the table stays as wide
    NARROWER = {"task": (5, 6), "site": (5, 6)}

    lanes: CampaignBoard | None = None

    def show_lanes(self, board: CampaignBoard) -> None:
        """A campaign: the slots show their episode's lane (its arm, and its repeat where there are several)."""
        if self.lanes is None:
            self.lanes = board
            cut = self.NARROWER
            self.COLUMNS = (self.COLUMNS[0], self.LANE, *[
                Col(c.key, c.label, c.width - cut[c.key][0], (c.wide or c.width) - cut[c.key][1])
                if c.key in cut else c for c in self.COLUMNS[1:]])
            self.clear(columns=True)
            self._cells.clear()
            self._wanted.clear()
            self._add_columns()

    def show(self, state: RunState, now: float) -> None:
        self.sync({str(sid): self._slot_cells(state, sid, now) for sid in sorted(state.slots)})

    def show_slot(self, state: RunState, sid: int, now: float) -> None:
        """One slot's row only (a step changes nothing else)."""
        if sid in state.slots and not self.sync_row(str(sid), self._slot_cells(state, sid, now)):
            self.show(state, now)

    def _slot_cells(self, state: RunState, sid: int, now: float) -> tuple[Any, ...]:
        s = state.slots[sid]
        busy = s.task_id is not None
        task_w, site_w = self.width_of("task"), self.width_of("site")
        # a slot whose last model call failed says so in its state, in red: `!context`
        shown = styled(s.state, STATE_STYLE)
        if busy and s.model_error:
            shown = Styled(f"!{kind_short(s.model_error)}", "red")
        step = (f"{s.step}/{s.max_steps}" if s.max_steps else str(s.step)) if busy else ""
        if self.lanes is not None:
            lane = self.lanes.slot_lane.get(sid, "")
            return (str(sid), clip(self.lanes.label(lane), self.width_of("lane")) if busy and lane else "",
                    clip(s.task_id, task_w) if busy else "-", clip_left(s.site, site_w) if busy else "",
                    (s.level or "") if busy else "", step,
                    clock_text(now - s.started_at) if busy and s.started_at else "", shown)
        return (str(sid), clip(s.task_id, task_w) if busy else "-", clip_left(s.site, site_w) if busy else "",
                (s.level or "") if busy else "", step,
                clock_text(now - s.started_at) if busy and s.started_at else "", shown)


def pacing_text(pacing: Pacing | None) -> str:
    """How the run paces its sites, for the Sites panel: episodes at once per site and the cooldown."""
    if pacing is None:
        return ""
    per_site, cooldown = pacing.per_site, pacing.cooldown
    if unpaced(per_site, cooldown):
        return "unpaced"
    return f"{per_site or 'any'} per site, cooldown {cooldown:g} s"


class SitesTable(KeyedTable):
    DEFAULT_CSS = """
    SitesTable { height: auto; max-height: 12; }
    """
    LAZY = True
    COLUMNS = (Col("site", "site", 15, 20), Col("state", "state", 12, 14), Col("left", "left", 4),
               Col("done", "done", 4), Col("errors", "err", 3))

    def show(self, state: RunState, now: float) -> None:
        rows = {}
        for name, v in state.sites.items():
            if v.state == "cooling" and v.ready_at > now:
                shown = Styled(f"cooling {countdown_text(v.ready_at - now)}", STATE_STYLE["cooling"])
            elif v.state == "running" and v.limit != 1:   # several at once: how many, of how many
                shown = Styled(f"running {v.running}" + (f"/{v.limit}" if v.limit else ""), STATE_STYLE["running"])
            else:
                # a cooldown that ran out between two snapshots is free (or done) already
                st = v.state if v.state != "cooling" else ("free" if v.left else "done")
                shown = styled(st, STATE_STYLE)
            rows[name] = (clip_left(name, self.width_of("site")), shown, str(v.left), str(v.done),
                          Styled(str(v.errors), "red" if v.errors else ""))
        self.sync(rows)


class EpisodesTable(KeyedTable):
    """Finished attempts, newest first, numbered in the order they finished; a window of the latest MAX_ROWS.

    Records are taken at once (`records`, what the episode view reads) and their rows are added when the owner calls
    `flush` (the dashboard, when it redraws), in one pass and one sort however many arrived: a wave of episodes
    ending together costs one sort of the window, not one per episode."""

    DEFAULT_CSS = """
    EpisodesTable { height: 1fr; }
    """
    COLUMNS: Sequence[Col] = (
        Col("n", "#", 3, 4), Col("task", "task", 22, 34), Col("status", "status", 7, 11), Col("ok", "ok", 2),
        Col("steps", "steps", 5), Col("actions", "acts", 4), Col("shots", "shots", 5), Col("secs", "secs", 5),
        Col("answer", "answer", 60, 68))
    MAX_ROWS = 2000

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.records: dict[str, EpisodeRecord] = {}   # the window: shown, or shown after the next refresh
        self._order: list[str] = []                   # its keys, oldest first
        self._number: dict[str, int] = {}             # each key's "#": its place among every attempt taken
        self._taken = 0
        self._pending: list[str] = []                 # keys taken, their rows not added yet
        self.lane_of: dict[str, str] | None = None   # a campaign's: each key's lane (its arm column)
        self._board: CampaignBoard | None = None

    def show_lanes(self, board: CampaignBoard, lane_of: dict[str, str]) -> None:
        """A campaign: an arm column, each row's from `lane_of` (key -> lane), named as `board` names lanes."""
        if self.lane_of is None:
            self.lane_of, self._board = lane_of, board
            lane = SlotsTable.LANE    # its room taken from the answer's, so the table stays as wide
            self.COLUMNS = (self.COLUMNS[0], lane, *[
                Col(c.key, c.label, c.width - lane.width, (c.wide or c.width) - (lane.wide or lane.width))
                if c.key == "answer" else c for c in self.COLUMNS[1:]])
            self.wide = not self.wide      # rebuilt as a change of width rebuilds it, at the width it has
            self.set_wide(not self.wide)

    @staticmethod
    def key_of(rec: EpisodeRecord) -> str:
        return f"{rec.task_id}#{rec.attempt}@{rec.finished_at}"

    def set_wide(self, wide: bool) -> bool:
        if not super().set_wide(wide):
            return False
        self._pending.clear()
        for key in self._order:
            self.add_row(*self._cells_of(self.records[key], self._number[key]), key=key)
        self._sort()
        if self._keep_cursor is not None:
            self.move_to_key(self._keep_cursor)
            self._keep_cursor = None
        return True

    def add_records(self, records: Iterable[EpisodeRecord]) -> None:
        """Take finished attempts, oldest first (one already taken is skipped); their rows come with `flush`."""
        for rec in records:
            key = self.key_of(rec)
            if key in self.records:
                continue
            self._taken += 1
            self.records[key] = rec
            self._number[key] = self._taken
            self._order.append(key)
            self._pending.append(key)
        if len(self._order) > self.MAX_ROWS:
            for key in self._order[:-self.MAX_ROWS]:
                del self.records[key], self._number[key]
            del self._order[:-self.MAX_ROWS]

    def flush(self) -> None:
        """Add the rows of the records taken since the last flush and drop those that left the window."""
        pending = [k for k in self._pending if k in self.records]   # a burst larger than the window skips some
        self._pending.clear()
        if not pending:
            return
        # a cursor on the top row stays on top (the newest); one the reader moved stays on its episode
        kept = self.cursor_key() if self.cursor_row > 0 else None
        self.remove_rows([str(k.value) for k in self.rows if k.value not in self.records])
        for key in pending:
            self.add_row(*self._cells_of(self.records[key], self._number[key]), key=key)
        self._sort()
        if kept is not None and kept in self.records:
            self.move_to_key(kept)

    def _sort(self) -> None:
        self.sort("n", key=lambda n: int(n), reverse=True)

    def _cells_of(self, rec: EpisodeRecord, n: int) -> tuple[Any, ...]:
        wide = self.wide
        status = rec.status
        why = rec.error or ""
        if rec.requeued:
            status = why if wide else why[:7]
        task_w, answer_w = self.width_of("task"), self.width_of("answer")
        ok: str | Styled = ""
        if verdict_text(rec):   # the one rule: a verdict only for an attempt that settles its task
            ok = Styled("✓", "green") if rec.correct else Styled("✗", "red")
        if self.lane_of is not None and self._board is not None:
            lane = self.lane_of.get(self.key_of(rec), "")
            return (str(n), clip(self._board.label(lane), self.width_of("lane")), clip(rec.task_id, task_w),
                    styled(status, STATUS_STYLE, rec.status), ok, str(rec.steps), str(rec.actions),
                    str(rec.screenshots), f"{rec.duration_s:.0f}",
                    clip(shown_answer("", rec).text, answer_w))
        return (str(n), clip(rec.task_id, task_w), styled(status, STATUS_STYLE, rec.status), ok,
                str(rec.steps), str(rec.actions), str(rec.screenshots),
                f"{rec.duration_s:.0f}", clip(shown_answer("", rec).text, answer_w))


class StepsLog(Log):
    """The live step log: every slot's steps, or the selected slot's. Bounded; plain lines are cheap to add.

    Lines added are written when the owner calls `flush` (the dashboard, when it redraws), all at once: Textual's
    Log measures each write's lines in a thread worker of its own (a worker, its state messages and a call back
    into the loop), which at hundreds of slots was one worker per step."""

    DEFAULT_CSS = """
    StepsLog { height: 1fr; overflow: auto auto; }
    """
    MAX_LINES = 1000

    def __init__(self, **kw: Any):
        super().__init__(max_lines=self.MAX_LINES, highlight=False, auto_scroll=False, **kw)
        self._following = True
        self._scroll_due = False
        self._pending: list[str] = []

    def add_lines(self, lines: list[str]) -> None:
        """Append lines (written by the next `flush`, with any others added before it)."""
        self._pending.extend(lines)
        del self._pending[:-self.MAX_LINES]

    def flush(self) -> None:
        """Write the lines added since the last flush; follow the end unless the reader scrolled up (judged after
        layout, not before it)."""
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        if not self._scroll_due:
            self._following = self.is_vertical_scroll_end or self.size.height == 0
        self.write_lines(lines)
        if self._following:
            self._follow()

    def restart(self, lines: list[str]) -> None:
        self._pending.clear()
        self.clear()
        self._following = True
        self.add_lines(lines)
        self.flush()

    def _follow(self) -> None:
        if not self._scroll_due:
            self._scroll_due = True
            self.call_after_refresh(self._to_end)

    def _to_end(self) -> None:
        self._scroll_due = False
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_resize(self) -> None:
        if self._following:
            self._follow()
