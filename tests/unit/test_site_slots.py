"""Several episodes at once on one site (`--site-slots N`), and no pacing at all (`--no-pacing`): the scheduler in
virtual time, the command line, and what the Sites panel says."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from om2w_tui.cli.main import build_parser, config_from_args, main
from om2w_tui.engine.events import EpisodeFinished, EpisodeStarted, Pacing, RunSnapshot, SiteRow
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.frontends.console.widgets.panels import pacing_text
from om2w_tui.frontends.run_state import RunState, SiteView
from tests.fakes import FakeExecutor, Recorder
from tests.unit.helpers import config, make_tasks, records


def most_at_once(rec: Recorder) -> dict[str, int]:
    now, most = defaultdict(int), defaultdict(int)
    for ev in rec.events:
        if isinstance(ev, EpisodeStarted):
            now[ev.site] += 1
            most[ev.site] = max(most[ev.site], now[ev.site])
        elif isinstance(ev, EpisodeFinished):
            now[ev.record.website.split("//www.")[1].split("/")[0]] -= 1
    return dict(most)


def test_the_pacer_counts_episodes_per_site():
    p = SitePacer(cooldown=10, per_site=2)
    p.acquire("a", 0)
    assert p.can_start("a", 0)
    p.acquire("a", 0)
    assert not p.can_start("a", 0) and p.state("a").busy
    p.release("a", 5)
    assert not p.can_start("a", 14) and p.can_start("a", 15)   # the cooldown runs from the end
    unlimited = SitePacer(cooldown=0, per_site=0)
    for _ in range(50):
        unlimited.acquire("a", 0)
    assert unlimited.can_start("a", 0) and unlimited.state("a").running == 50


@pytest.mark.looptime
async def test_two_slots_per_site_run_two_episodes_of_a_site_at_once_never_three(tmp_path):
    rec = Recorder()
    tasks = make_tasks({"a.com": 6})
    await Scheduler(config(tmp_path, workers=4, site_slots=2, pace_cooldown=0), tasks, FakeExecutor(), [rec]).run()
    assert most_at_once(rec) == {"a.com": 2}
    assert sorted(r["task_id"] for r in records(tmp_path)) == sorted(t.task_id for t in tasks)


@pytest.mark.looptime
async def test_unpaced_fills_every_slot_with_one_site(tmp_path):
    rec = Recorder()
    tasks = make_tasks({"a.com": 4})
    sched = Scheduler(config(tmp_path, workers=4, site_slots=0, pace_cooldown=0), tasks, FakeExecutor(), [rec])
    loop = asyncio.get_running_loop()
    seen = {}
    loop.call_at(loop.time() + 5, lambda: seen.update(snap=sched.snapshot()))
    await sched.run()
    assert most_at_once(rec) == {"a.com": 4}
    site = seen["snap"].sites[0]
    assert (site.state, site.running, site.limit) == ("running", 4, 0)
    assert seen["snap"].pacing == Pacing(0, 0.0)


def test_the_flags(tmp_path):
    args = build_parser().parse_args(["run", "--no-pacing", "--out", str(tmp_path)])
    cfg = config_from_args(args)
    assert (cfg.site_slots, cfg.pace_cooldown) == (0, 0.0)
    args = build_parser().parse_args(["run", "--site-slots", "3", "--out", str(tmp_path)])
    assert config_from_args(args).site_slots == 3
    assert config_from_args(build_parser().parse_args(["run", "--out", str(tmp_path)])).site_slots == 1


def test_a_negative_site_slots_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--no-ui", "--bench", "offline", "--model", "oracle", "--site-slots", "-1",
              "--out", str(tmp_path / "x")])
    assert e.value.code == 2
    assert "--site-slots" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_sites_panel_says_how_the_run_is_paced():
    assert pacing_text(Pacing(1, 120.0)) == "1 per site, cooldown 120 s"
    assert pacing_text(Pacing(3, 0.0)) == "3 per site, cooldown 0 s"
    assert pacing_text(Pacing(0, 0.0)) == "unpaced"
    state = RunState()
    state.apply_snapshot(RunSnapshot(now=0, pacing=Pacing(2, 60),
                                     sites=[SiteRow("a.com", "running", running=2, limit=2, left=3)]), 0)
    assert state.sites["a.com"] == SiteView("a.com", "running", 0.0, 3, 0, 0, 0, 2, 2)
    assert state.pacing == Pacing(2, 60)
