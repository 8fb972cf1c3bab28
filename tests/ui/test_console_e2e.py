"""The console on a real run: the offline sites, the oracle model, worker processes and Chromium. Each control is
checked by its effect on the run (results.jsonl, the task folders, the engine's events, the processes), not only on
the screen. A few tasks each, one or two slots: the machine may have two cores."""

from __future__ import annotations

import json

import pytest

from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodeStarted,
    EpisodeStep,
    RunFinished,
    SlotChanged,
)
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.screens.quit import ConfirmQuit
from om2w_tui.frontends.console.widgets.panels import EpisodesTable, SlotsTable

from .pilots import app_exits, console, our_chromium, records, stays, still_alive, task_folders, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
async def test_p_stops_dispatch_and_space_pauses_one_episode(tmp_path):
    # different sites, four and five steps: a pause in either shows
    ids = ["offline_shop_compare_04", "offline_wiki_port_06"]
    app, rec, out = console(tmp_path, ids)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await until(pilot, "the first episode", lambda: rec.of(EpisodeStarted))
        await pilot.press("p")
        await until(pilot, "dispatch paused", lambda: rec.of(DispatchChanged, paused=True))
        assert "PAUSED" in str(app.screen.query_one("#run-badge").render())
        await until(pilot, "the first episode's end", lambda: rec.of(EpisodeFinished))
        # with no cooldown and a free slot, an unpaused run starts the next task at once: nothing may start now
        await stays(pilot, "no episode starts while dispatch is paused",
                    lambda: len(rec.of(EpisodeStarted)) == 1 and task_folders(out) == {first[0].task_id}, 3.0)

        await pilot.press("p")
        second = await until(pilot, "the second episode", lambda: rec.of(EpisodeStarted)[1:])
        tid = second[0].task_id
        await until(pilot, "a step of the second episode", lambda: rec.of(EpisodeStep, task_id=tid))
        await pilot.press("space")
        await until(pilot, "the episode paused", lambda: rec.of(SlotChanged, state="paused", task_id=tid))
        steps = len(rec.of(EpisodeStep, task_id=tid))
        # a step already under way may still land; a running episode would make several in this window
        await stays(pilot, "no new step while the episode is paused",
                    lambda: len(rec.of(EpisodeStep, task_id=tid)) <= steps + 1 and len(rec.of(EpisodeFinished)) == 1,
                    5.0)
        await pilot.press("space")
        await until(pilot, "the run's end", lambda: rec.of(RunFinished))
        assert len(rec.of(EpisodeStep, task_id=tid)) > steps
        assert sorted((r["task_id"], r["status"]) for r in records(out)) == [(t, "done") for t in ids]
        assert app.screen.query_one(EpisodesTable).row_count == 2
        await pilot.press("q")
        await app_exits(app)
    assert app.return_code == 0


async def test_k_kills_keeping_steps_and_shift_k_runs_it_again(tmp_path):
    tid = "offline_wiki_admin_10"     # eight steps: time to act on each attempt
    app, rec, out = console(tmp_path, [tid], model="oracle-slow-2")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "a first step", lambda: rec.of(EpisodeStep))
        await pilot.press("K")
        first = await until(pilot, "the requeued attempt's record", lambda: rec.of(EpisodeFinished))
        assert first[0].record.status == "killed" and first[0].record.error == "requeued"

        again = (await until(pilot, "the second attempt", lambda: rec.of(EpisodeStarted, attempt=2)))[0]
        await until(pilot, "a step of the second attempt", lambda: rec.after(again, EpisodeStep))
        # the episode view of the running episode follows its steps
        await pilot.press("enter")
        view = await until(pilot, "the episode view", lambda: isinstance(app.screen, EpisodeScreen) and app.screen)
        assert view.task_id == tid and view.running
        shots = await until(pilot, "a screenshot in the view", lambda: len(view.files.shots))
        await until(pilot, "the view following a new step", lambda: len(view.files.shots) > shots)
        await pilot.press("escape")
        await pilot.press("k")
        await until(pilot, "the run's end", lambda: rec.of(RunFinished))
        assert not isinstance(app.screen, EpisodeScreen)
        # the requeued attempt's row opens its own files, kept in <task>/attempts/1
        table = app.screen.query_one(EpisodesTable)
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("enter")
        view = await until(pilot, "the first attempt's view", lambda: isinstance(app.screen, EpisodeScreen)
                           and app.screen)
        assert view.folder == out / tid / "attempts" / "1" and view.record.attempt == 1
        await until(pilot, "its screenshots", lambda: view.files.shots)
        await pilot.press("escape")
        await pilot.press("q")
        await app_exits(app)

    got = [(r["task_id"], r["attempt"], r["status"], r["error"]) for r in records(out)]
    assert got == [(tid, 1, "killed", "requeued"), (tid, 2, "killed", "killed by user")]
    last = records(out)[-1]
    assert last["actions"] >= 1 and last["screenshots"] >= 1
    folder = out / tid
    result = json.loads((folder / "result.json").read_text())
    assert len(result["action_history"]) == last["actions"]
    assert len(list((folder / "trajectory").glob("*_full_screenshot.png"))) == last["screenshots"]
    assert (folder / "attempts" / "1" / "result.json").exists()     # the first attempt's partial folder, kept


async def test_plus_runs_another_episode_at_once_and_q_stops_the_run_gracefully(tmp_path):
    ids = ["offline_wiki_admin_10", "offline_shop_cart_05"]     # long ones: the second slot's worker starts first
    app, rec, out = console(tmp_path, ids, model="oracle-slow-2")
    seen: dict[int, tuple[float, str]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "the first episode", lambda: rec.of(EpisodeStarted))
        await pilot.press("plus")
        await until(pilot, "a second episode on a new slot", lambda: rec.of(EpisodeStarted, slot=1))
        assert not rec.of(EpisodeFinished)           # both at once
        assert len(app.control.running()) == 2
        await until(pilot, "both episodes stepping", lambda: {e.slot for e in rec.of(EpisodeStep)} == {0, 1})
        await until(pilot, "both browsers", lambda: seen.update(our_chromium()) or len(
            {profile for _, profile in seen.values()}) == 2)
        slots = app.screen.query_one(SlotsTable)
        assert slots.row_count == 2 and all(str(slots.get_row(k)[-1]) == "running" for k in ("0", "1"))

        await pilot.press("q")
        await until(pilot, "the question", lambda: isinstance(app.screen, ConfirmQuit))
        await pilot.press("y")
        await app_exits(app)
    assert app.return_code == 0
    assert sorted((r["task_id"], r["status"], r["error"]) for r in records(out)) == [
        (t, "killed", "interrupted") for t in sorted(ids)]
    assert rec.of(RunFinished)
    assert still_alive(seen) == [] and our_chromium() == {}
