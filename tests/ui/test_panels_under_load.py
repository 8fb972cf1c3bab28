"""The dashboard's panels under many events: what a burst costs is bounded by what it changed (bench/scale.py
measures the time; these check the behaviour that makes it so). Fast: widgets in a bare app, or the dashboard fed
by hand."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult

from om2w_tui.engine.events import EpisodeStep
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.frontends.console.widgets.keyed_table import Col, KeyedTable
from om2w_tui.frontends.console.widgets.panels import EpisodesTable, SlotsTable, StepsLog

from .pilots import build, feed


def rec(i: int) -> EpisodeRecord:
    return EpisodeRecord(task_id=f"t{i:03d}", status="done", steps=3, finished_at=1000.0 + i)


def shown_numbers(table: EpisodesTable) -> list[str]:
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


class Letters(KeyedTable):
    COLUMNS = (Col("name", "name", 6), Col("value", "value", 6))


class LongTable(KeyedTable):
    COLUMNS = (Col("name", "name", 6), Col("value", "value", 6))
    LAZY = True
    DEFAULT_CSS = "LongTable { height: 8; }"


class Holder(App[None]):
    """A bare app holding one widget of the class given (a widget is built inside its app)."""

    def __init__(self, cls: type):
        super().__init__()
        self.cls = cls

    def compose(self) -> ComposeResult:
        yield self.cls()


async def test_the_episodes_window_keeps_the_latest_numbered_in_order_and_sorts_once_per_flush(monkeypatch):
    monkeypatch.setattr(EpisodesTable, "MAX_ROWS", 5)
    sorts = []
    original_sort = EpisodesTable.sort
    monkeypatch.setattr(EpisodesTable, "sort",
                        lambda self, *a, **kw: (sorts.append(1), original_sort(self, *a, **kw))[1])
    app = Holder(EpisodesTable)
    async with app.run_test() as pilot:
        table = app.query_one(EpisodesTable)
        table.add_records([rec(i) for i in range(1, 4)])
        assert table.row_count == 0 and len(table.records) == 3      # taken, shown at the next flush
        table.flush()
        assert shown_numbers(table) == ["3", "2", "1"]
        for i in range(4, 12):                                        # a wave: eight at once, past the window
            table.add_records([rec(i)])
        table.flush()
        await pilot.pause()
        # the newest first, each numbered by when it finished (the window's first rows are gone)
        assert shown_numbers(table) == ["11", "10", "9", "8", "7"]
        assert sorted(table.records) == sorted(EpisodesTable.key_of(rec(i)) for i in range(7, 12))
        assert len(sorts) == 2                                        # one sort per flush, not one per episode


async def test_removing_many_rows_at_once_keeps_the_others_in_order():
    app = Holder(Letters)
    async with app.run_test() as pilot:
        table = app.query_one(Letters)
        table.sync({k: (k, str(i)) for i, k in enumerate("abcdefgh")})
        table.move_cursor(row=7)
        table.remove_rows(["b", "c", "f", "h"])
        await pilot.pause()
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == ["a", "d", "e", "g"]
        assert table.get_row_index("g") == 3 and table.cursor_row == 3     # the cursor past the end comes back
        table.sync({"a": ("a", "A"), "g": ("g", "G"), "z": ("z", "Z")})     # synced by difference afterwards
        assert [str(c) for c in table.get_row("g")] == ["g", "G"] and table.row_count == 3


async def test_a_long_table_writes_rows_out_of_view_when_they_come_into_view():
    app = Holder(LongTable)
    async with app.run_test(size=(40, 20)) as pilot:
        table = app.query_one(LongTable)
        table.sync({str(i): (str(i), "old") for i in range(50)})
        await pilot.pause()
        table.sync({str(i): (str(i), "new") for i in range(50)})
        assert str(table.get_row("1")[1]) == "new"            # in view: written at once
        assert str(table.get_row("40")[1]) == "old"           # out of view: not yet
        table.move_cursor(row=40)                              # scrolled to it
        await pilot.pause()
        assert str(table.get_row("40")[1]) == "new"
        assert table.scroll_y > 0


async def test_step_lines_are_written_in_one_pass():
    app = Holder(StepsLog)
    async with app.run_test() as pilot:
        log = app.query_one(StepsLog)
        await pilot.pause()
        writes = []
        original = log.write_lines
        log.write_lines = lambda lines, *a, **kw: (writes.append(list(lines)), original(lines, *a, **kw))[1]
        for i in range(300):
            log.add_lines([f"#{i}", "    CLICK"])
        assert log.line_count == 0
        log.flush()
        assert len(writes) == 1 and log.line_count == 600 and log.lines[-2] == "#299"


async def test_a_burst_of_steps_redraws_each_slot_once(tmp_path: Path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        await pilot.pause(0.3)
        slots = app.screen.query_one(SlotsTable)
        drawn: list[int] = []
        original = slots.show_slot
        slots.show_slot = lambda state, sid, now: (drawn.append(sid), original(state, sid, now))[1]
        stub.steps.update({0: 40, 1: 40})
        for step in range(2, 41):
            app.sink.handle(EpisodeStep(0, "offline_booking_rates_11", step, ["SCROLL DOWN"], "http://x/"))
            app.sink.handle(EpisodeStep(1, "offline_wiki_port_06", step, ["GO BACK"], "http://y/"))
        for _ in range(40):
            await pilot.pause(0.05)
            if slots.get_row("0")[4] == "40/30" and slots.get_row("1")[4] == "40/30":
                break
        assert slots.get_row("0")[4] == "40/30" and slots.get_row("1")[4] == "40/30"
        assert len(drawn) <= 6, drawn      # 78 steps: a redraw or two of each slot's row, not one per step
        assert "[1] offline_wiki_port_06 #40 http://y/" in "\n".join(app.screen.query_one(StepsLog).lines)


async def test_the_console_lets_short_lived_objects_die_young_and_freezes_what_it_keeps(tmp_path: Path):
    import gc  # here: only this test reads the collector's settings

    from om2w_tui.frontends.console.collector import GC_THRESHOLDS

    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert gc.get_threshold() == GC_THRESHOLDS != before
        assert gc.get_freeze_count() > 10_000        # Textual, the DOM and the modules, out of the collector's reach
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_redraw_pace_slows_while_the_ticks_come_late_and_recovers():
    """Events redraw at most every 0.2 s on a machine with a core to spare; when the once-a-second tick comes late
    (the loop waits for a core), every 1 s, for BUSY_HOLD_S after the last late tick."""
    from om2w_tui.frontends.console.redraw_pace import (
        BUSY_HOLD_S,
        LATE_TICK_S,
        REDRAW_BUSY_S,
        REDRAW_EVERY_S,
        RedrawPace,
    )

    pace = RedrawPace()
    t = 100.0
    assert pace.tick(t) == REDRAW_EVERY_S                   # the first tick has nothing to be late against
    t += 1.0 + LATE_TICK_S / 2
    assert pace.tick(t) == REDRAW_EVERY_S                   # a little late: not busy
    t += 1.0 + LATE_TICK_S * 3
    assert pace.tick(t) == REDRAW_BUSY_S                    # late: the machine is busy
    late_at = t
    while t + 1.0 < late_at + BUSY_HOLD_S:                  # on time again, but held busy for a while
        t += 1.0
        assert pace.tick(t) == REDRAW_BUSY_S and pace.every == REDRAW_BUSY_S
    t += 1.0
    assert pace.tick(t) == REDRAW_EVERY_S                   # quiet for BUSY_HOLD_S: back to the quick pace
