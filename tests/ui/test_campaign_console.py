"""The console on a campaign (several arms, each a lane with its own run folder), driven by a recorded campaign and
the fake run: the slots' lane, the lanes' line under the header, pausing one arm, the comparison screen and its
numbers, the episode view of a lane; and a plain run, which shows none of it."""

from __future__ import annotations

import dataclasses
import io
import json
import time

from rich.console import Console

from om2w_tui.engine.events import (
    EpisodeFinished,
    GapFigures,
    LaneRow,
    PairingGaps,
    RunFinished,
    RunStarted,
    RunSummary,
    SlotRow,
)
from om2w_tui.engine.launch import LanePreflight
from om2w_tui.evaluation.outcomes import RULE_ALL, RULE_EXECUTABLE
from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.console.screens.compare import ComparisonScreen
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.widgets.comparison import ComparisonPanel, comparison_renderable
from om2w_tui.frontends.console.widgets.lanes_bar import LanesBar
from om2w_tui.frontends.console.widgets.panels import EpisodesTable, SlotsTable, StepsLog
from om2w_tui.protocol.run_end import RunEnd

from . import recorded as R
from . import recorded_campaign as C
from .pilots import build, cells, feed, shown_keys, until
from .pilots import settle_episode as settle


def text_of(widget) -> str:
    return str(widget.render())


def panel_text(screen) -> str:
    """The comparison panel's text as it shows it now (its last comparison drawn)."""
    panel = screen.query_one(ComparisonPanel)
    console = Console(width=200, file=io.StringIO())
    console.print(comparison_renderable(panel._shown))
    return console.file.getvalue()


def lane_part(app, name: str) -> str:
    """What the lanes' line says of one lane."""
    parts = [p.strip() for p in text_of(app.screen.query_one(LanesBar)).split("│")]
    return next(p for p in parts if p.startswith(f"{name} "))


async def test_slots_show_each_episodes_arm_and_the_header_each_lanes_progress(tmp_path):
    app, clock, _, out = C.build_campaign(tmp_path, guard="context_length: 3 of the last 4 calls failed")
    async with app.run_test(size=(160, 45)) as pilot:
        await C.feed_campaign(pilot, app, clock, out)
        slots = app.screen.query_one(SlotsTable)
        assert [c.label.plain for c in slots.columns.values()][:3] == ["slot", "arm", "task"]
        assert cells(slots, "0")[:2] == ["0", "base"] and cells(slots, "0")[-1] == "running"   # the state still shows
        assert cells(slots, "1")[:3] == ["1", "agent", C.BOOK_T]
        bar = app.screen.query_one(LanesBar)
        assert bar.display
        line = text_of(bar)
        assert "base 3/6" in line and "agent 2/6" in line
        assert "correct 2/3 67%" in line
        assert "HELD: context_length: 3 of the last 4 calls failed" in line
        episodes = app.screen.query_one(EpisodesTable)
        assert sorted((cells(episodes, k)[1], r.task_id) for k, r in episodes.records.items())[:2] == [
            ("agent", C.SHOP_T), ("agent", C.WIKI_T)]
        steps = "\n".join(app.screen.query_one(StepsLog).lines)   # which arm's run of a task each line is
        assert f"[1 agent] {C.SHOP_T} = done" in steps and f"[0 base] {C.SHOP_T} = done" in steps
        # the header's own rate would sum both arms' verdicts: it leaves them to the lanes' line
        assert "correct" not in text_of(app.screen.query_one("#run-stats"))


async def test_repeats_are_named_with_their_arm(tmp_path):
    board = CampaignBoard()
    board.rows = {"base": LaneRow("base", "base", 1), "base-r2": LaneRow("base-r2", "base", 2)}
    assert board.label("base") == "base r1" and board.label("base-r2") == "base r2"
    board.rows = {"base": LaneRow("base", "base", 1), "agent": LaneRow("agent", "agent", 1)}
    assert board.label("agent") == "agent"


async def test_a_pauses_and_resumes_the_selected_slots_arm(tmp_path):
    app, clock, stub, out = C.build_campaign(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await C.feed_campaign(pilot, app, clock, out)
        assert shown_keys(app)["pause_lane"] == "Pause arm" and "resume_lane" not in shown_keys(app)
        await pilot.press("down", "a")            # slot 1 runs agent's unit
        assert stub.commands == [("pause_lane", "agent", True)]
        for _ in range(40):       # the snapshot the key asked for says the lane is paused
            await pilot.pause(0.05)
            if lane_part(app, "agent").endswith("HELD"):
                break
        assert lane_part(app, "agent").endswith("· HELD") and "HELD" not in lane_part(app, "base")
        assert shown_keys(app)["resume_lane"] == "Resume arm"
        await pilot.press("up")                   # base's slot: its arm runs, `a` pauses it
        assert "pause_lane" in shown_keys(app)
        await pilot.press("down", "a")
        assert stub.commands[-1] == ("pause_lane", "agent", False)
        # the palette offers every lane by name
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Pause arm base" in titles and "Compare the arms" in titles
        assert "Pause the selected slot's arm" in titles or "Resume the selected slot's arm" in titles


async def test_a_on_a_slot_that_runs_nothing_offers_the_arms_by_name_never_its_last_ones(tmp_path):
    """An idle slot shows no arm: `a` there paused the arm of the slot's last episode, unseen. Now it opens the
    arms by name, and choosing one pauses that arm."""
    from textual.command import CommandPalette

    app, clock, stub, out = C.build_campaign(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await C.feed_campaign(pilot, app, clock, out)
        # slot 1 ends agent's unit and stays idle (the run's snapshots say so too)
        stub.base = dataclasses.replace(stub.base, slots=[stub.base.slots[0], SlotRow(1, "idle")])
        for ev in C.finished(1, "agent", C.BOOK_T, R.BOOKING, False, R.T0):
            app.sink.handle(ev)
        await pilot.pause()
        await pilot.press("down")
        assert app.screen.selected_lane() == "" and "choose_arm" in shown_keys(app)
        assert "pause_lane" not in shown_keys(app)
        await pilot.press("a")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette) and stub.commands == []
        await pilot.press(*"Pause arm agent")
        await until(pilot, "the arm's entry first", lambda: "Pause arm agent" in str(
            app.screen.query_one("CommandList").get_option_at_index(0).prompt))
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert stub.commands == [("pause_lane", "agent", True)]


async def test_a_pauses_every_repeat_of_the_arm_and_the_palette_each_repeat_alone(tmp_path):
    app, clock, stub, out = C.build_campaign(tmp_path)
    more = (LaneRow("base-r2", "base", 2, str(out / "base-r2"), total=6),
            LaneRow("agent-r2", "agent", 2, str(out / "agent-r2"), total=6))
    stub.base = dataclasses.replace(stub.base, lanes=stub.base.lanes + more)
    async with app.run_test(size=(160, 45)) as pilot:
        await C.feed_campaign(pilot, app, clock, out)
        assert cells(app.screen.query_one(SlotsTable), "1")[1] == "agent r1"
        await pilot.press("down", "a")
        assert stub.commands == [("pause_lane", "agent", True), ("pause_lane", "agent-r2", True)]
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Pause base r2 alone" in titles and "Pause arm base" in titles


async def test_the_comparison_screen_shows_both_rules_the_paired_test_and_follows_new_episodes(tmp_path):
    app, clock, _, out = C.build_campaign(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await C.open_comparison(pilot, app, clock, out)
        assert isinstance(screen, ComparisonScreen)
        c = screen.board.comparison()
        assert c.measure is not None and c.measure.kind == "reference"
        rates = {a.label: a.counts for a in c.arms}
        assert (rates["base"].success, rates["base"].failure) == (2, 1)
        assert (rates["agent"].success, rates["agent"].failure) == (1, 1)
        tests = {t.rule: t for t in c.tests}
        assert set(tests) == {RULE_ALL, RULE_EXECUTABLE}
        t = tests[RULE_ALL]
        # on the two tasks both arms have: agent solved the wiki one only, base the shop one only
        assert (t.a, t.b, t.difference.n) == ("agent", "base", 2)
        assert t.only_a_tasks == (C.WIKI_T,) and t.only_b_tasks == (C.SHOP_T,)
        assert t.difference.difference == 0.0 and t.difference.p == 1.0
        shown = panel_text(screen)
        assert "measure: reference answers" in shown
        assert "pairing gap over 2 tasks: median 1:35, p90 1:40, worst 1:40" in shown
        assert "2/3 67% [21-94]" in shown            # base's rate and its Wilson interval
        assert f"only agent solved (1): {C.WIKI_T}" in shown
        # a unit ends while the screen is shown: the next refresh counts it
        app.sink.handle(EpisodeFinished(1, C.rec("agent", C.BOOK_T, R.BOOKING, False, R.T0), lane="agent"))
        for _ in range(60):
            await pilot.pause(0.05)
            if "only base solved (2)" in panel_text(screen):
                break
        assert f"only base solved (2): {C.SHOP_T}, {C.BOOK_T}" in panel_text(screen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ComparisonScreen)


async def test_a_finished_campaign_reopened_is_a_campaigns_console_from_its_plan_and_its_end(tmp_path, monkeypatch):
    """`om2w-tui campaign PLAN` on a campaign with nothing left: the run ends before any snapshot, so the console
    knows its lanes from its plan (their folders' records read) and from the run's end, not from an event naming a
    lane: the lanes' line, the arm column, `c` and the header that leaves the arms' verdicts to the lanes."""
    plain = R.preflight_for

    def with_lanes(out):
        pre = plain(out)
        lanes = tuple(LanePreflight(name, name, 1, dataclasses.replace(pre, config=dataclasses.replace(
            pre.config, out=out / name, arm=name), settled=3)) for name in ("base", "agent"))
        return dataclasses.replace(pre, lanes=lanes)

    monkeypatch.setattr(R, "preflight_for", with_lanes)
    app, clock, _, out = C.build_campaign(tmp_path)
    for lane, solved in (("base", {C.SHOP_T, C.BOOK_T}), ("agent", {C.WIKI_T})):
        (out / lane / "results.jsonl").write_text("".join(
            json.dumps(C.rec(lane, t, R.SHOP, t in solved, R.T0 - 100 + k).to_json()) + "\n"
            for k, t in enumerate((C.SHOP_T, C.WIKI_T, C.BOOK_T))))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.screen.board.active and app.screen.query_one(LanesBar).display
        assert "base 3/6" in text_of(app.screen.query_one(LanesBar))
        app.sink.handle(RunStarted(total=12, settled=6, workers=2, out=str(out)))
        ended = C.lanes(out)
        app.sink.handle(RunFinished(RunSummary(total=12, settled_before=6, lanes=ended, end=RunEnd.FINISHED,
                                               correct=3, judged=5)))
        for _ in range(40):     # the lanes' records are read in a thread
            await pilot.pause(0.05)
            if len(app.screen.board.latest.get("agent", {})) == 3:
                break
        line = text_of(app.screen.query_one(LanesBar))
        assert "base 3/6" in line and "correct 2/3 67%" in line
        assert "correct" not in text_of(app.screen.query_one("#run-stats"))
        # its end line counts units, and leaves the verdicts to each lane's (summed, they were both arms')
        steps = "\n".join(app.screen.query_one(StepsLog).lines)
        assert "campaign finished: 0 episodes this run, 0 units left" in steps and "correct" not in steps
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ComparisonScreen)
        c = app.screen.board.comparison()
        assert {a.label: a.counts.success for a in c.arms} == {"base": 2, "agent": 1}


def test_a_runs_end_that_names_lanes_makes_the_board_a_campaigns():
    board = CampaignBoard()
    assert not board.active and board.lanes_seen((), PairingGaps()) == []
    gaps = PairingGaps(GapFigures(1, 5.0, 5.0, 5.0), GapFigures(1, 5.0, 5.0, 5.0), lanes=2, compared=1)
    new = board.lanes_seen((LaneRow("base", "base", 1), LaneRow("agent", "agent", 1)), gaps)
    assert [r.name for r in new] == ["base", "agent"] and board.active and board.pairing == gaps
    assert board.lanes_seen((LaneRow("base", "base", 1, done=1), LaneRow("agent", "agent", 1)), gaps) == []
    assert board.rows["base"].done == 1


async def test_the_episode_view_of_a_slot_reads_its_lanes_folder_and_says_its_arm(tmp_path):
    app, clock, _, out = C.build_campaign(tmp_path)
    R.write_episode(out / "agent", C.BOOK_T)
    async with app.run_test(size=(160, 45)) as pilot:
        await C.feed_campaign(pilot, app, clock, out)
        await pilot.press("down", "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EpisodeScreen)
        assert view.folder == out / "agent" / C.BOOK_T and view.running
        assert "· agent" in text_of(view.query_one("#ep-title"))
        # base's run of the same task ending does not change agent's view
        app.sink.handle(EpisodeFinished(0, C.rec("base", C.BOOK_T, R.BOOKING, False, R.T0 + 1), lane="base"))
        await settle(pilot)
        assert view.running and view.record is None


async def test_a_plain_run_shows_nothing_of_a_campaign(tmp_path):
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        assert not app.screen.query_one(LanesBar).display
        slots = app.screen.query_one(SlotsTable)
        assert "arm" not in [c.label.plain for c in slots.columns.values()]
        assert not {"compare", "pause_lane", "resume_lane"} & shown_keys(app).keys()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not [t for t in titles if "arm" in t]
        await pilot.press("c", "a")
        assert app.screen is app.dashboard


def test_the_comparison_of_600_units_is_cheap_and_computed_again_only_on_change():
    """2 arms x 300 tasks: what the panel costs a second while shown (measured on the CI machine: ~1-3 ms)."""
    board = CampaignBoard()
    board.rows = {"base": LaneRow("base", "base", 1), "agent": LaneRow("agent", "agent", 1)}
    for i in range(300):
        for lane, ok in (("base", i % 3 == 0), ("agent", i % 2 == 0)):
            board.finished(lane, dataclasses.replace(C.rec(lane, f"t{i:03}", R.SHOP, ok, R.T0 + i)))
    began = time.perf_counter()
    c = board.comparison()
    took = time.perf_counter() - began
    assert {a.label: a.counts.success for a in c.arms} == {"base": 100, "agent": 150}
    assert took < 0.25, f"the comparison of 600 units took {took * 1000:.0f} ms"
    assert board.comparison() is c            # nothing changed: not computed again
    comparison_renderable(c)
    board.finished("base", C.rec("base", "t000", R.SHOP, False, R.T0 + 999))
    assert board.comparison() is not c


def test_with_repeats_the_comparison_pools_each_arm_over_its_repeats_as_report_does():
    """2 arms x 2 repeats: besides each repeat's test, each arm against the first over both repeats, paired by task
    (agreement.pooled, report's), and the panel shows it."""
    board = CampaignBoard()
    board.rows = {name: LaneRow(name, arm, k) for name, arm, k in (("base", "base", 1), ("agent", "agent", 1),
                                                                    ("base-r2", "base", 2), ("agent-r2", "agent", 2))}
    solved = {"base": {"t1"}, "base-r2": set(), "agent": {"t1", "t2"}, "agent-r2": {"t1"}}
    for lane, tasks in solved.items():
        for t in ("t1", "t2"):
            board.finished(lane, C.rec(lane, t, R.SHOP, t in tasks, R.T0))
    c = board.comparison()
    assert [(t.a, t.b) for t in c.tests if t.rule == RULE_ALL] == [("agent r1", "base r1"), ("agent r2", "base r2")]
    p = next(p for p in c.pooled if p.rule == RULE_ALL)
    # per task agent - base: t1 1 - 1/2, t2 1/2 - 0
    assert (p.a, p.b, p.a_runs, p.difference.n, p.difference.mean, p.better) == (
        "agent", "base", ("agent r1", "agent r2"), 2, 0.5, 2)
    shown = Console(width=160, record=True)
    shown.print(comparison_renderable(c))
    text = shown.export_text()
    assert "over all repeats, paired by task" in text and "agent - base │ over all   │     2/2 │     2 │  +50" in text
    one = CampaignBoard()
    one.rows = {"base": LaneRow("base", "base", 1), "agent": LaneRow("agent", "agent", 1)}
    for lane in ("base", "agent"):
        one.finished(lane, C.rec(lane, "t1", R.SHOP, True, R.T0))
    assert one.comparison().pooled == ()            # one repeat: the repeat's own test says it


def test_a_lane_not_started_yet_is_left_out_and_named_not_a_reason_to_compare_nothing():
    """A held arm, or a repeat still queued, has no finished unit and so no measure: the comparison leaves it out
    (as `report` does) and names it, and the lanes that started are compared on their common measure."""
    board = CampaignBoard()
    board.rows = {name: LaneRow(name, arm, k) for name, arm, k in (("base", "base", 1), ("agent", "agent", 1),
                                                                    ("base-r2", "base", 2), ("agent-r2", "agent", 2))}
    assert board.comparison().problem == "no measure of success yet"
    for lane, ok in (("base", True), ("agent", False), ("base-r2", True)):
        board.finished(lane, C.rec(lane, "t1", R.SHOP, ok, R.T0))
    c = board.comparison()
    assert c.measure is not None and c.measure.kind == "reference" and c.not_started == ("agent r2",)
    assert [a.label for a in c.arms] == ["base r1", "agent r1", "base r2"]
    assert [(t.a, t.b) for t in c.tests if t.rule == RULE_ALL] == [("agent r1", "base r1")]
    p = next(p for p in c.pooled if p.rule == RULE_ALL)     # over the repeats that started, as report pools
    assert (p.a_runs, p.b_runs) == (("agent r1",), ("base r1", "base r2"))
    shown = Console(width=160, record=True)
    shown.print(comparison_renderable(c))
    assert "not started yet (left out): agent r2" in shown.export_text()
    board.finished("agent-r2", C.rec("agent-r2", "t1", R.SHOP, True, R.T0))
    c = board.comparison()
    assert c.not_started == () and next(p for p in c.pooled if p.rule == RULE_ALL).a_runs == ("agent r1", "agent r2")


async def test_the_comparison_screen_closed_at_once_draws_nothing_after(tmp_path):
    """`c` then `escape` before the screen's first drawing: its refresh finds no widgets and does nothing (it
    raised NoMatches and ended the console)."""
    app, clock, _, out = C.build_campaign(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await C.open_comparison(pilot, app, clock, out)
        await pilot.press("escape")
        await pilot.pause()
        screen.refresh_panel()           # its interval's call, after it was taken down
        orphan = ComparisonScreen(screen.board)
        orphan.refresh_panel()           # never composed: nothing to draw into
        await pilot.press("c", "escape")
        await pilot.pause(0.1)
        assert app.is_running and not isinstance(app.screen, ComparisonScreen)


def judge_file(folder, verdicts: dict[str, bool], model: str = "o4-mini") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"om2w-tui_WebJudge_Online_Mind2Web_eval_{model}_score_threshold_3_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": int(v)}) + "\n" for t, v in verdicts.items()))


def test_the_comparison_reads_one_measure_on_every_lane_a_live_judge_where_every_lane_has_the_same(tmp_path):
    board = CampaignBoard(campaign_out=tmp_path)
    board.rows = {"base": LaneRow("base", "base", 1), "agent": LaneRow("agent", "agent", 1)}
    for lane in ("base", "agent"):    # the reference answers: every task correct in both
        for t in ("t1", "t2"):
            board.finished(lane, C.rec(lane, t, R.SHOP, True, R.T0))
    assert board.comparison(now=0).measure.kind == "reference"
    judge_file(tmp_path / "base", {"t1": False, "t2": False})
    # one lane judged only: the judge is not common, both sides stay on the reference answers
    c = board.comparison(now=100)
    assert c.measure.kind == "reference" and {a.counts.success for a in c.arms} == {2}
    judge_file(tmp_path / "agent", {"t1": True, "t2": False}, model="gpt-4o")
    assert board.comparison(now=200).measure.kind == "reference"    # another judge model: not the same measure
    judge_file(tmp_path / "agent", {"t1": True, "t2": False})
    (tmp_path / "agent" / "om2w-tui_WebJudge_Online_Mind2Web_eval_gpt-4o_score_threshold_3_auto_eval_results.json"
     ).unlink()
    c = board.comparison(now=300)
    assert c.measure.kind == "judge" and c.measure.model == "o4-mini"
    assert {a.label: a.counts.success for a in c.arms} == {"base": 0, "agent": 1}
    assert next(t for t in c.tests if t.rule == RULE_ALL).only_a_tasks == ("t1",)


async def test_with_the_live_judge_on_the_arms_are_compared_on_its_verdicts_pending_until_they_come(tmp_path,
                                                                                                    monkeypatch):
    """A campaign with --judge-url: the comparison reads the judge from the start (every unit pending until its
    verdict), the judge's own file in each lane (not a newer one of another judge), and the lanes' line shows each
    lane's judge rate as a run's header shows its own."""
    plain = R.preflight_for
    monkeypatch.setattr(R, "preflight_for", lambda out: dataclasses.replace(plain(out), config=dataclasses.replace(
        plain(out).config, judge_url="http://127.0.0.1:9/v1", judge_model="o4-mini")))
    app, clock, _, out = C.build_campaign(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await C.open_comparison(pilot, app, clock, out)
        c = screen.board.comparison()
        assert c.measure is not None and c.measure.name == "judge webjudge/o4-mini"   # not the reference answers
        # pending: each lane's 6 units but those with a verdict (none yet), the unfinished ones too
        assert {a.label: (a.counts.success, a.counts.pending) for a in c.arms} == {"base": (0, 6), "agent": (0, 6)}
        assert "measure: judge webjudge/o4-mini" in panel_text(screen)
        # the live judge's verdicts come; another judge's newer file in base is not the measure
        judge_file(out / "base", {C.SHOP_T: True, C.WIKI_T: False, C.BOOK_T: True})
        judge_file(out / "agent", {C.SHOP_T: False, C.WIKI_T: True})
        judge_file(out / "base", {C.SHOP_T: False, C.WIKI_T: False, C.BOOK_T: False}, model="gpt-4o")
        for _ in range(60):
            await pilot.pause(0.05)
            if "only base solved (1)" in panel_text(screen):
                break
        shown = panel_text(screen)
        assert "measure: judge webjudge/o4-mini" in shown and "2/3 67% [21-94]" in shown
        assert f"only base solved (1): {C.SHOP_T}" in shown and f"only agent solved (1): {C.WIKI_T}" in shown
        await pilot.press("escape")
        app.screen.render_all()
        await pilot.pause()
        assert "judge 2/3 67%" in lane_part(app, "base") and "judge 1/2 50%" in lane_part(app, "agent")
