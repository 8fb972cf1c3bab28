"""The console on a real campaign: the lanes scheduler with two arms (two model names the oracle serves), the offline
sites, worker processes and Chromium, in this process. The launch for a campaign (the plan) is another piece: the
scheduler is built here as launch builds a run's (the offline suite, the oracle, the local executor, the reference
judge), with its lanes. The slots show each unit's arm, `a`/the palette hold one arm while the other goes on, and the
comparison reads both lanes' records."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeStarted, RunFinished
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.launch import live_offline_task, make_executor, preflight, reference_judge
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.frontends.console.app import make_app
from om2w_tui.frontends.console.screens.compare import ComparisonScreen
from om2w_tui.frontends.console.widgets.panels import SlotsTable
from om2w_tui.offline import OfflineSuite, OracleServer
from om2w_tui.secret import EndpointURL
from tests.fakes import Recorder

from .pilots import app_exits, cells, records, stays, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
ARMS = {"base": "oracle-slow-1", "agent": "oracle-slow-1"}   # two lanes of the oracle, a second a call


async def test_a_real_campaign_shows_its_arms_holds_one_and_compares_them(tmp_path):
    ids = ["offline_shop_search_01", "offline_wiki_port_06"]
    camp = tmp_path / "study"
    pre = preflight(RunConfig(out=camp, bench="offline", model="oracle-slow-1", task_ids=ids, workers=1,
                              pace_cooldown=0))
    rec = Recorder()
    app = make_app(pre, image_renderer="unicode", last_launch=None, sinks=[rec], start_engine=False)
    with contextlib.ExitStack() as stack:
        suite = stack.enter_context(OfflineSuite())
        oracle = EndpointURL(stack.enter_context(OracleServer(suite.tasks())).url).for_client()
        tasks = [live_offline_task(t, suite.base_urls) for t in pre.tasks]
        shared = pre.run_config
        lanes = [Lane(arm, arm, 1, dataclasses.replace(shared, out=camp / arm, model=model), tuple(tasks), oracle)
                 for arm, model in ARMS.items()]
        sched = Scheduler(shared, tasks, make_executor(shared, stack), [app.sink, rec], judge=reference_judge,
                          endpoint=oracle, lanes=lanes)
        async with app.run_test(size=(160, 45)) as pilot:
            app.control = sched
            app.engine = app.run_worker(sched.run(), exit_on_error=False)
            first = (await until(pilot, "the first unit", lambda: rec.of(EpisodeStarted)))[0]
            held, other = first.lane, next(a for a in ARMS if a != first.lane)
            await until(pilot, "the slot's arm shown",
                        lambda: cells(app.screen.query_one(SlotsTable), "0")[1] == held)
            await pilot.press("a")            # the selected slot's arm: none of its units starts from now on
            await until(pilot, "its lane paused", lambda: any(r.paused for r in sched.snapshot().lanes))
            await until(pilot, "the other arm's units done",
                        lambda: len([r for r in records(camp / other) if r["status"] == "done"]) == 2)
            await stays(pilot, "the held arm starts nothing",
                        lambda: [e.lane for e in rec.of(EpisodeStarted)].count(held) == 1, 2.0)
            assert "HELD" in str(app.screen.query_one("#lanes-bar").render())   # the word ctl and Sites say
            assert "ETA held" in str(app.screen.query_one("#run-stats").render())   # no count: its end waits
            resume = next(c for c in app.get_system_commands(app.screen) if c.title == f"Resume arm {held}")
            resume.callback()
            await until(pilot, "the campaign's end", lambda: rec.of(RunFinished))
            assert sorted(r["task_id"] for r in records(camp / held)) == ids   # each unit once, in its own folder
            await pilot.press("c")
            await pilot.pause()
            assert isinstance(app.screen, ComparisonScreen)
            c = app.screen.board.comparison()
            assert c.measure is not None and c.measure.kind == "reference"
            assert {a.label: (a.counts.success, a.counts.tasks) for a in c.arms} == {"base": (2, 2), "agent": (2, 2)}
            assert [t.difference.n for t in c.tests] == [2, 2] and c.pairing.pairs.n == 2
            await pilot.press("escape", "q")
            await app_exits(app)
