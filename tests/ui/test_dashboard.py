"""The dashboard driven by a recorded run and a stand-in scheduler: what each key sends, what the footer and the
command palette offer, the panels, the quit dialog, the episode view. Fast: no browser (tests/ui/test_console_e2e.py
runs the real thing)."""

from __future__ import annotations

import asyncio
import dataclasses

from textual.command import CommandList

from om2w_tui.engine.events import DispatchChanged, EpisodeStep, RunFinished, RunSummary, SlotChanged
from om2w_tui.frontends.console.screens.dashboard import DashboardScreen
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.screens.quit import ConfirmQuit
from om2w_tui.frontends.console.widgets.panels import EpisodesTable, SitesTable, SlotsTable, StepsLog

from . import recorded as R
from .pilots import build, cells, feed, shown_keys
from .pilots import settle_episode as settle


async def test_panels_show_the_recorded_run(tmp_path):
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        slots = app.screen.query_one(SlotsTable)
        assert cells(slots, "0") == ["0", "offline_booking_rates_11", "127.0.0.1:41003", "easy", "1/30", "0:20",
                                     "running"]
        assert cells(slots, "1")[-1] == "!context"   # its last model call failed
        sites = app.screen.query_one(SitesTable)
        assert cells(sites, R.SHOP)[1] == "cooling 1:05"
        clock.advance(30.4)    # a skipped tick changes nothing: the countdown reads the deadline
        app.screen.render_all()
        assert cells(sites, R.SHOP)[1] == "cooling 0:35"
        assert cells(slots, "0")[5] == "0:50"
        clock.advance(40)
        app.screen.render_all()
        assert cells(sites, R.SHOP)[1] == "free"
        episodes = app.screen.query_one(EpisodesTable)
        assert [episodes.records[str(episodes.coordinate_to_cell_key((i, 0)).row_key.value)].task_id
                for i in range(episodes.row_count)] == ["offline_shop_search_01", "offline_longpage_automated_14"]
        titles = {w.border_title for w in app.screen.query(".panel")}
        assert titles == {"Slots", "Sites", "Steps", "Episodes"}
        log_text = "\n".join(app.screen.query_one(StepsLog).lines)
        assert "[0] offline_shop_search_01 #2 http://127.0.0.1:41001/search?q=kettle" in log_text
        assert "dispatch paused" in log_text


async def test_each_key_sends_its_command_to_the_selected_slot(tmp_path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(pilot, app, clock)
        keys = shown_keys(app)
        # dispatch is paused: p resumes; slot 0 runs: space pauses it
        assert keys["resume_dispatch"] == "Resume all" and "pause_dispatch" not in keys
        assert "pause_episode" in keys and "resume_episode" not in keys and "retry_errors" not in keys
        await pilot.press("p", "space", "k", "K", "plus", "minus")
        await pilot.press("down", "space")          # slot 1 is paused: space resumes it
        await pilot.pause(0.3)    # the snapshot the keys asked for (the stub's, which never changes) lands first
        assert stub.commands == [("pause_dispatch", False), ("pause_episode", 0, True), ("kill", 0, False),
                                 ("kill", 0, True), ("set_workers", 3), ("set_workers", 2),
                                 ("pause_episode", 1, False)]
        stub.commands.clear()
        stub.errored["x"] = object()
        stub.states[1] = "stopping"
        app.sink.handle(DispatchChanged(False, ""))
        app.sink.handle(SlotChanged(1, "stopping", "offline_wiki_port_06"))
        for _ in range(50):   # the footer follows on a later refresh: slower on a loaded machine
            await pilot.pause(0.05)
            keys = shown_keys(app)
            if "resume_episode" not in keys and "retry_errors" in keys:
                break
        assert keys["pause_dispatch"] == "Pause all" and "retry_errors" in keys
        assert not {"kill", "requeue", "pause_episode", "resume_episode"} & keys.keys()   # slot 1 is stopping
        await pilot.press("k", "r", "p")
        assert stub.commands == [("retry_errors",), ("pause_dispatch", True)]


async def test_one_slot_cannot_go_below_one_and_nothing_applies_once_the_run_is_over(tmp_path):
    app, clock, stub = build(tmp_path)
    stub.target_workers = 1
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(pilot, app, clock)
        assert "fewer_slots" not in shown_keys(app)
        await pilot.press("minus")
        assert stub.commands == []
        app.sink.handle(RunFinished(RunSummary(finished=1, pending=0)))
        await pilot.pause()
        keys = shown_keys(app)
        assert not {"pause_dispatch", "resume_dispatch", "kill", "more_slots"} & keys.keys()
        assert "quit_run" in keys


async def test_the_command_palette_offers_what_applies(tmp_path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(pilot, app, clock)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Resume the run" in titles and "Pause the run" not in titles
        assert "Kill the selected episode" in titles and "Retry errored tasks" not in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Add a slot")
        hits = app.screen.query_one(CommandList)
        for _ in range(100):     # the palette searches in the background
            if hits.option_count and "Add a slot" in str(hits.get_option_at_index(0).prompt):
                break
            await pilot.pause(0.05)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert stub.commands == [("set_workers", 3)]


async def test_the_steps_panel_follows_all_slots_or_the_selected_one(tmp_path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(pilot, app, clock)
        log = app.screen.query_one(StepsLog)
        await pilot.press("down", "s")
        assert log.border_subtitle == "slot 1 · offline_wiki_port_06"
        assert log.lines[:2] == ["#1 http://127.0.0.1:41002/", "    <a href=\"/docs/config\"> Configuration -> CLICK"]
        stub.steps.update({0: 2, 1: 3})     # the scheduler's state moves on with the steps it reports
        app.sink.handle(EpisodeStep(0, "offline_booking_rates_11", 2, ["TYPE: elsewhere"], "http://x/"))
        app.sink.handle(EpisodeStep(1, "offline_wiki_port_06", 3, ["GO BACK"], "http://y/"))
        for _ in range(40):    # events redraw the panels at most every REDRAW_EVERY_S
            await pilot.pause(0.05)
            if log.lines[-2:] == ["#3 http://y/", "    GO BACK"]:
                break
        assert log.lines[-2:] == ["#3 http://y/", "    GO BACK"] and "elsewhere" not in "\n".join(log.lines)
        assert app.screen.query_one(SlotsTable).get_row("0")[4] == "2/30"
        await pilot.press("s")
        assert log.border_subtitle == "all slots"


async def test_quit_asks_while_episodes_run_then_stops_and_waits_for_the_engine(tmp_path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(pilot, app, clock)
        engine_done = asyncio.Event()

        async def engine() -> None:
            await engine_done.wait()

        app.engine = app.run_worker(engine(), exit_on_error=False)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmQuit)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen) and stub.commands == []
        await pilot.press("q", "q")      # q twice: ask, then yes
        await pilot.pause()
        assert stub.commands == [("stop",)] and app.is_running
        assert "STOPPING" in str(app.screen.query_one("#run-badge").render())
        assert not {"pause_dispatch", "resume_dispatch", "kill", "more_slots"} & shown_keys(app).keys()
        engine_done.set()
        for _ in range(50):
            if not app.is_running:
                break
            await asyncio.sleep(0.05)
    assert app.return_code == 0


async def test_ctrl_c_stops_without_asking_and_exits_130(tmp_path):
    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(pilot, app, clock)
        engine_done = asyncio.Event()
        app.engine = app.run_worker(engine_done.wait(), exit_on_error=False)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert stub.commands == [("stop",)] and not isinstance(app.screen, ConfirmQuit)
        engine_done.set()
        for _ in range(50):
            if not app.is_running:
                break
            await asyncio.sleep(0.05)
    assert app.return_code == 130


async def test_the_episode_view_steps_through_screenshots_and_follows_a_running_episode(tmp_path):
    app, clock, _ = build(tmp_path)
    folder = R.write_episode(tmp_path / "demo", "offline_booking_rates_11")
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        await pilot.press("enter")       # slot 0 runs offline_booking_rates_11
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EpisodeScreen) and view.running
        assert view.shown == 3 and "4/4" in view.query_one("#ep-shot-box").border_subtitle
        await pilot.press("left", "left")
        assert view.shown == 1 and "2/4 · 1_full_screenshot.png · step 2" in view.query_one(
            "#ep-shot-box").border_subtitle
        await pilot.press("right", "right")
        assert view.shown == 3
        # a new step on disk and its event: the view follows the new last screenshot
        (folder / "trajectory" / "4_full_screenshot.png").write_bytes(R.png(64, 36, (0, 0, 0), (255, 0, 0)))
        app.sink.handle(EpisodeStep(0, "offline_booking_rates_11", 4, ["SCROLL DOWN"], "http://x/"))
        await settle(pilot)
        assert view.shown == 4 and "5/5" in view.query_one("#ep-shot-box").border_subtitle
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_footer_rebuilds_keep_no_removed_keys_alive(tmp_path):
    """Each change of the allowed commands rebuilds the footer; the keys it removed must be freed (Textual's Footer
    kept every one of them alive through a watcher: the console grew with every finished episode)."""
    import gc  # here: only this test counts live objects

    from textual.widgets._footer import FooterKey  # here: the private key widget is what leaked

    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        for i in range(6):
            app.sink.handle(DispatchChanged(i % 2 == 0, ""))
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        gc.collect()
        keys = [o for o in gc.get_objects() if isinstance(o, FooterKey)]
        assert keys and all(k.is_attached for k in keys), f"{sum(not k.is_attached for k in keys)} removed keys alive"


async def test_the_model_line_and_the_guards_banner(tmp_path):
    from om2w_tui.frontends.console.widgets.model_bar import ModelBar

    app, clock, stub = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        bar = app.screen.query_one(ModelBar)
        text = str(bar.render())
        assert "10.5 calls/min" in text and "p50 1.4s p95 2.9s" in text and "in 1.5k out 42" in text
        assert "1 of 9 failed: context length 1" in text and "last: context_length: This model's" in text
        assert bar.has_class("-failing")
        guard = ("3 episodes in a row ended on the model: context length exceeded (32768 tokens): This model's "
                 "maximum context length is 32768 tokens. Remedy: the prompt outgrew the model's context: raise "
                 "vLLM's --max-model-len")
        held = dataclasses.replace(R.snapshot(), model=dataclasses.replace(R.MODEL, guard=guard))
        # the run holds the guard: every snapshot the dashboard pulls from now on says so (a redraw pulls one, and
        # on a loaded machine it landed before the line was read, from a run that knew no guard)
        stub.snapshot = lambda: held   # type: ignore[method-assign]
        app.sink.snapshot(held, clock())
        await pilot.pause()
        app.screen.render_all()
        await pilot.pause()
        text = str(bar.render())
        assert bar.has_class("-guard") and text.startswith("MODEL GUARD · 3 episodes in a row")
        assert "--max-model-len" in text and "p: go on" in text
        await pilot.press("p")                         # the run is paused: p resumes it, which lets the guard go
        assert stub.commands[-1] == ("pause_dispatch", False)


async def test_plus_beyond_what_the_machine_holds_says_why_and_shows_the_slots_kept(tmp_path):
    """`+` asks the run for one slot more; a machine with no memory left keeps what it has and says why (issue 26
    item 13)."""
    app, clock, stub = build(tmp_path)
    note = "workers 3: 2 kept, as many as this machine holds: 0.9 GiB of memory available at 0.5 GiB a slot"

    def full(n: int) -> str:
        stub.commands.append(("set_workers", n))
        return note if n > 2 else ""

    stub.set_workers = full   # type: ignore[method-assign]
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        await pilot.press("plus")
        await pilot.pause()
        assert stub.commands[-1] == ("set_workers", 3)
        assert app.dashboard is not None and app.dashboard.state.target_workers == 2
        assert any(n.message == note and n.severity == "warning" for n in app._notifications)
