"""A campaign's lanes in the scheduler, with a stand-in worker, in virtual time (looptime): one unit per lane and
task, each in its lane's folder; one queue and pacer; a task's units together on its site, the first arm turning;
per lane its model guard, its user's pause, its counts; the pairing gap measured live."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from om2w_tui.campaign_folder import LaneName
from om2w_tui.cli.main import main
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import apply
from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.events import EpisodeFinished, EpisodeStarted, Log
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.results import read_results
from om2w_tui.engine.runlock import RunLock
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.protocol.control import Done, Pause, Refused, Resume
from om2w_tui.protocol.run_end import RunEnd
from tests.fakes import Behaviour, FakeExecutor, Recorder
from tests.unit.helpers import campaign, config, make_tasks

pytestmark = pytest.mark.looptime


def lane_rows(shared: RunConfig, name: str) -> list[dict]:
    return read_results(shared.out / name).records


def order_on(ex: FakeExecutor, site: str) -> list[tuple[str, str]]:
    """(lane, task) of each run on `site`, in the order they started."""
    return [(lane, tid) for (tid, _), lane in zip(ex.runs, ex.lanes) if tid.startswith(site)]


async def test_every_unit_runs_once_into_its_own_lanes_folder(tmp_path):
    ex, rec = FakeExecutor(), Recorder()
    tasks = make_tasks({"x.com": 2, "y.com": 1})
    shared, lanes = campaign(tmp_path, tasks, workers=3)
    sched = Scheduler(shared, tasks, ex, [rec], lanes=lanes)
    stats = await sched.run()
    assert stats.total == 6 and stats.by_status == {"done": 6}
    for name in ("a", "b"):
        rows = lane_rows(shared, name)
        assert sorted(r["task_id"] for r in rows) == sorted(t.task_id for t in tasks)   # each unit once, its own
        assert all((shared.out / name / t.task_id / "trajectory").is_dir() for t in tasks)
        assert {r["model"] for r in rows} == {f"model-{name}"}                            # its lane's settings
    assert not (shared.out / "results.jsonl").exists()   # the campaign's folder holds no run of its own
    assert sorted(e.lane for e in rec.of(EpisodeFinished)) == ["a"] * 3 + ["b"] * 3
    assert all(e.lane for e in rec.of(EpisodeStarted))
    snap = sched.snapshot()
    assert [(r.name, r.total, r.done, r.errors) for r in snap.lanes] == [("a", 3, 3, 0), ("b", 3, 3, 0)]
    assert snap.summary.lanes == snap.lanes and snap.summary.pairing.pairs.n == 3


async def test_one_episode_a_site_at_a_time_whatever_its_lane(tmp_path):
    ex = FakeExecutor()
    tasks = make_tasks({"x.com": 3})
    shared, lanes = campaign(tmp_path, tasks, workers=4, pace_cooldown=100)
    await Scheduler(shared, tasks, ex, lanes=lanes).run()
    rows = sorted(lane_rows(shared, "a") + lane_rows(shared, "b"), key=lambda r: r["started_at"])
    assert len(rows) == 6
    for prev, nxt in zip(rows, rows[1:]):
        assert nxt["started_at"] >= prev["finished_at"] + 100 - 0.01


async def test_a_tasks_units_run_together_and_the_first_arm_turns(tmp_path):
    ex = FakeExecutor()
    tasks = make_tasks({"x.com": 4, "y.com": 1, "z.com": 1})
    shared, lanes = campaign(tmp_path, tasks, workers=3, pace_cooldown=60)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    await sched.run()
    x = order_on(ex, "x.com")
    assert [tid for _, tid in x] == ["x.com-0", "x.com-0", "x.com-1", "x.com-1", "x.com-2", "x.com-2",
                                     "x.com-3", "x.com-3"]                      # a task's units one after another
    assert [lane for lane, _ in x] == ["a", "b", "b", "a", "a", "b", "b", "a"]   # the first arm turns
    firsts = [order_on(ex, site)[0][0] for site in ("x.com", "y.com", "z.com")]
    assert firsts == ["a", "b", "a"]                                              # and from site to site
    gaps = sched.summary().pairing.pairs
    # each task's second unit starts one episode (30 s) and one cooldown after its first
    assert gaps.n == 6 and gaps.median_s == pytest.approx(90, abs=1.5) and gaps.worst_s == pytest.approx(90, abs=1.5)


async def test_repeats_interleave(tmp_path):
    ex = FakeExecutor()
    tasks = make_tasks({"x.com": 2})
    shared, lanes = campaign(tmp_path, tasks, repeats=2, workers=2, pace_cooldown=10)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    await sched.run()
    assert [lane for lane, _ in order_on(ex, "x.com")] == ["a", "b", "a-r2", "b-r2", "b", "a", "b-r2", "a-r2"]
    assert all(len(lane_rows(shared, name)) == 2 for name in ("a", "b", "a-r2", "b-r2"))
    # the compared units (b against a, b-r2 against a-r2) one episode (30 s) and a cooldown apart; a task's span three
    gaps = sched.summary().pairing
    assert (gaps.pairs.n, gaps.span.n, gaps.lanes, gaps.compared) == (4, 2, 4, 2)
    assert gaps.pairs.worst_s == pytest.approx(40, abs=1.5) and gaps.span.median_s == pytest.approx(120, abs=1.5)


async def test_each_lane_resumes_from_its_own_folder(tmp_path):
    tasks = make_tasks({"x.com": 2})
    shared, lanes = campaign(tmp_path, tasks, workers=2)
    await Scheduler(dataclasses.replace(lanes[0].config), tasks, FakeExecutor()).run()   # lane a's folder, complete
    ex = FakeExecutor()
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    stats = await sched.run()
    assert ex.lanes == ["b", "b"] and stats.settled_before == 2
    assert [(r.name, r.settled_before, r.done) for r in sched.snapshot().lanes] == [("a", 2, 2), ("b", 0, 2)]
    # each task's gap measured: lane a's settling start (its run before) to lane b's (this run), as `report` has it
    assert sched.summary().pairing.pairs.n == 2


async def test_a_model_guard_holds_its_lane_only_and_names_its_arm(tmp_path):
    tasks = make_tasks({"x.com": 2, "y.com": 2, "z.com": 2})
    ex, rec = FakeExecutor({f"b/{t.task_id}": Behaviour(model_failure="context_length") for t in tasks}), Recorder()
    shared, lanes = campaign(tmp_path, tasks, workers=2, model_guard=2)
    sched = Scheduler(shared, tasks, ex, [rec], lanes=lanes, guard_ends_run=True)
    await sched.run()
    assert len(lane_rows(shared, "a")) == 6                      # the other arm went on to its end
    b = lane_rows(shared, "b")
    assert 2 <= len(b) < 6                                       # arm b held once its guard tripped
    summary = sched.summary()
    assert summary.end == RunEnd.GUARD and summary.pending == 6 - len(b)
    assert "arm b" in summary.model_guard
    assert any("model guard, arm b" in e.message for e in rec.of(Log))
    [row_a, row_b] = summary.lanes
    assert not row_a.guard and row_b.guard and row_b.model_calls.get("context_length")


async def test_a_held_lane_keeps_a_console_run_open_until_resumed(tmp_path):
    tasks = make_tasks({"x.com": 2, "y.com": 2})
    ex = FakeExecutor({f"b/{t.task_id}": Behaviour(model_failure="context_length") for t in tasks[:2]})
    shared, lanes = campaign(tmp_path, tasks, workers=2, model_guard=2)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)   # a console: the guard waits for its user
    run = asyncio.ensure_future(sched.run())
    while len(lane_rows(shared, "a")) < 4 or sched.running():
        await asyncio.sleep(5)
    await asyncio.sleep(600)
    assert not run.done() and sched.snapshot().lanes[1].guard   # held, not ended
    assert isinstance(apply(sched, Resume(arm="b")), Done)
    await run
    assert len(lane_rows(shared, "b")) == 4 and sched.summary().end == RunEnd.FINISHED


async def test_pausing_an_arm_starts_none_of_its_units_until_it_goes_on(tmp_path):
    tasks = make_tasks({"x.com": 2, "y.com": 2})
    ex = FakeExecutor()
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=10)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    assert sched.pause_lane("b") and not sched.pause_lane("nope")   # before it starts: its units are queued held
    run = asyncio.ensure_future(sched.run())
    while len(lane_rows(shared, "a")) < 4 or sched.running():
        await asyncio.sleep(5)
    await asyncio.sleep(600)
    assert ex.lanes.count("b") == 0 and not run.done()
    assert sched.snapshot().lanes[1].paused and sched.summary().pending == 4
    assert sched.pause_lane("b", paused=False)
    await run
    assert ex.lanes.count("b") == 4 and len(lane_rows(shared, "b")) == 4


async def test_a_paused_arms_units_are_left_on_their_sites_which_say_held_not_done(tmp_path):
    """The Sites panel's left and `ctl status`'s queued are one count: a held arm's units are left on their sites,
    and a site whose only units left are held says so, never done."""
    tasks = make_tasks({"x.com": 2, "y.com": 1})
    ex = FakeExecutor()
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=10)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    run = asyncio.ensure_future(sched.run())
    await asyncio.sleep(0)
    assert sched.pause_lane("b")
    while len(lane_rows(shared, "a")) < 3 or sched.running():
        await asyncio.sleep(5)
    await asyncio.sleep(60)
    snap = sched.snapshot()
    sites = {s.site: (s.state, s.left, s.done) for s in snap.sites}
    # y.com's one task went to b first (the first arm turns), started before the pause: nothing is left there
    assert sites == {"x.com": ("held", 2, 2), "y.com": ("done", 0, 2)} and snap.summary.pending == 2
    assert sched.pause_lane("b", paused=False)
    await run
    snap = sched.snapshot()
    assert {s.site: (s.state, s.left) for s in snap.sites} == {"x.com": ("done", 0), "y.com": ("done", 0)}
    assert snap.summary.pending == 0


async def test_the_control_command_names_an_arm(tmp_path):
    tasks = make_tasks({"x.com": 1})
    shared, lanes = campaign(tmp_path, tasks, repeats=2)
    sched = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes)
    done = apply(sched, Pause(arm="a"))          # an arm: every repeat of it
    assert isinstance(done, Done) and done.arm == "a" and done.paused
    assert [lane.paused for lane in sched.lanes.all] == [True, False, True, False]
    refused = apply(sched, Pause(arm="c"))
    assert isinstance(refused, Refused) and "no arm 'c'" in refused.error
    plain = Scheduler(config(tmp_path), tasks, FakeExecutor())
    assert not plain.pause_lane("a")             # a plain run has no lanes


async def test_a_plain_run_is_one_lane_and_says_no_lanes(tmp_path):
    sched = Scheduler(config(tmp_path), make_tasks({"x.com": 2}), FakeExecutor())
    await sched.run()
    snap = sched.snapshot()
    assert snap.lanes == () and snap.summary.lanes == () and snap.summary.pairing.pairs.n == 0
    assert all(row.lane == "" for row in snap.slots)


def test_a_site_whose_task_has_started_goes_before_a_longer_chain():
    """The dispatcher's pairing in time: once one unit of a task starts, its task's next unit on that site goes
    before any other site's when it may start, the longest chain notwithstanding (while the other sites' work
    spread over the other slots outlasts that chain: below, the run's length is not that chain's)."""
    spec = {"w.com": 3, "x.com": 1, "y.com": 2, "z.com": 2}
    units = [dataclasses.replace(t, lane=lane) for t in make_tasks(spec) for lane in ("a", "b")]
    d = Dispatcher(SitePacer(0.0), units)
    for u in units:
        d.push(u)
    assert d.pick(0.0, lambda: (2, 2)) == "w.com"          # the longest chain first
    first = d.take("x.com")
    d.acquire("x.com", 0.0)
    d.release("x.com", 30.0)
    assert d.pick(30.0, lambda: (2, 2)) == "x.com"         # its partner before w.com's longer chain
    assert d.take("x.com") == dataclasses.replace(first, lane="b")
    assert d.pick(30.0, lambda: (2, 2)) == "w.com" and not d.open


def test_the_chain_that_sets_the_runs_length_goes_before_a_started_tasks_next_unit():
    """Where the longest chain outlasts all the other work spread over the other slots, the run's length is that
    chain's: it may start now, so it starts now, and the started task's next unit takes the next free slot (else
    each of its tasks would wait for an episode to end after its cooldown: bench/campaign.py, 3 repeats at 12
    slots, 1.022 x the bound before)."""
    units = [dataclasses.replace(t, lane=lane) for t in make_tasks({"w.com": 5, "x.com": 1}) for lane in ("a", "b")]
    d = Dispatcher(SitePacer(0.0), units)
    for u in units:
        d.push(u)
    d.take("x.com")
    d.acquire("x.com", 0.0)
    d.release("x.com", 30.0)
    assert d.pick(30.0, lambda: (2, 2)) == "w.com"         # 10 units of w.com against x.com's 1 over the other slot
    d.take("w.com")
    d.acquire("w.com", 30.0)
    assert d.pick(30.0, lambda: (1, 2)) == "x.com"         # the partner next, w.com busy


async def test_ctl_pauses_and_resumes_an_arm_through_the_control_socket(tmp_path, capsys):
    tasks = make_tasks({"x.com": 1})
    shared, lanes = campaign(tmp_path, tasks)
    sched = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes)
    with RunLock(tmp_path, info={"socket": SOCKET_NAME}):
        async with ControlServer(tmp_path).serving(sched):
            ctl = ["ctl", str(tmp_path)]
            assert await asyncio.to_thread(main, [*ctl, "pause", "--arm", "b", "--json"]) == 0
            assert json.loads(capsys.readouterr().out) == {
                "ok": True, "arm": "b", "paused": True, "message": "arm b: held (its running episodes go on)"}
            assert [lane.paused for lane in sched.lanes.all] == [False, True]
            assert await asyncio.to_thread(main, [*ctl, "resume", "--arm", "b"]) == 0
            assert not sched.lanes.all[1].paused
            assert await asyncio.to_thread(main, [*ctl, "pause", "--arm", "z"]) == 1   # refused: no such arm
            assert "no arm 'z' in this run (its lanes: a, b)" in capsys.readouterr().err
    assert main([*ctl, "kill", "t", "--arm", "b"]) == 2
    assert "--arm NAME goes with pause or resume only" in capsys.readouterr().err


async def test_a_plain_runs_model_guard_holds_dispatch_not_its_tasks(tmp_path):
    """A plain run is one lane whose guard is the run's: a task queued again while it holds goes in the queue (held
    beside it, no resume would ever let it go, and a console run would never end: the property test hung so)."""
    tasks = make_tasks({"x.com": 2})
    ex = FakeExecutor({tasks[0].task_id: Behaviour(model_failure="context_length")})
    sched = Scheduler(config(tmp_path, workers=1, model_guard=1), tasks, ex)
    run = asyncio.ensure_future(sched.run())
    while not sched.model_guard.holding:
        await asyncio.sleep(5)
    assert sched.retry_errors() == 1
    assert sched.dispatch.pending == sched.pending() == 2 and not sched.lanes.all[0].parked
    sched.stop()
    await run


def live_and_report(sched: Scheduler, shared: RunConfig, lanes: list[Lane]) -> tuple[tuple, tuple]:
    """The pairing gaps the console shows (the live summary) and `report` reads from the lanes' folders."""
    from om2w_tui.evaluation.campaign_report import pairing_gaps  # evaluation only for the comparison

    live = sched.summary().pairing
    report = pairing_gaps([(LaneName(lane.name, lane.arm, lane.repeat), lane.config.out) for lane in lanes])
    return (live.pairs, live.span), (report.pairs, report.span)


async def test_the_live_pairing_gap_is_the_reports_after_a_retry(tmp_path):
    """A unit's first attempt fails through the harness and runs again later: both count the start of the attempt
    whose outcome is the unit's (the retry's), not its first start."""
    tasks = make_tasks({"x.com": 2, "y.com": 1})
    ex = FakeExecutor({f"b/{tasks[0].task_id}": Behaviour(infra_failures=1)})
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=20, retries=1)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    await sched.run()
    assert ex.lanes.count("b") == 4   # the retry ran
    live, report = live_and_report(sched, shared, lanes)
    assert live == report and live[0].n == 3, (live, report)
    retried = [r for r in lane_rows(shared, "b") if r["task_id"] == tasks[0].task_id]
    first = next(r for r in lane_rows(shared, "a") if r["task_id"] == tasks[0].task_id)
    assert live[0].worst_s == pytest.approx(abs(retried[-1]["started_at"] - first["started_at"]))   # the retry's start


async def test_the_live_pairing_gap_is_the_reports_after_a_resume(tmp_path):
    """A campaign stopped with a task's first unit settled and run again: that task's gap runs from the unit's start in
    the first run to its partner's in the second, live as in `report`."""
    tasks = make_tasks({"x.com": 2, "y.com": 2})
    shared, lanes = campaign(tmp_path, tasks, workers=1, pace_cooldown=10)
    first = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes)
    run = asyncio.ensure_future(first.run())
    while sum(len(lane_rows(shared, lane.name)) for lane in lanes) < 3:
        await asyncio.sleep(1)
    first.stop()
    await run
    again = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes)
    await again.run()
    live, report = live_and_report(again, shared, lanes)
    assert live == report and live[0].n == 4, (live, report)   # the task split by the stop measured too


@pytest.mark.parametrize("when", ["before the start", "mid-run"])
async def test_a_paused_arms_units_go_back_beside_their_tasks_other_units(tmp_path, when):
    """Paused (before the run starts, or once its first unit runs) and resumed as the first unit runs, an arm's units
    go back where pairing wants them: a started task's next unit first on its site, the rest at their places; not
    behind the other arm's whole queue."""
    ex = FakeExecutor()
    tasks = make_tasks({"x.com": 3})
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=10)
    sched = Scheduler(shared, tasks, ex, lanes=lanes)
    if when == "before the start":     # its units queued held from the start
        assert sched.pause_lane("b")
    run = asyncio.ensure_future(sched.run())
    while not ex.lanes:
        await asyncio.sleep(1)
    if when == "mid-run":
        assert sched.pause_lane("b")
    assert sched.pause_lane("b", paused=False)
    await run
    assert order_on(ex, "x.com") == [("a", "x.com-0"), ("b", "x.com-0"), ("b", "x.com-1"), ("a", "x.com-1"),
                                     ("a", "x.com-2"), ("b", "x.com-2")]


def verdicts_on_disk(shared: RunConfig, name: str) -> tuple[int, int]:
    """(judged, correct) over a lane's folder as `report` counts it: each task's latest settling record."""
    latest = read_results(shared.out / name).latest_records().values()
    verdicts = [r.correct for r in latest if r.settles and r.correct is not None]
    return len(verdicts), sum(verdicts)


def answered_ok(task: dict, rec) -> bool:
    return rec.answer == "ok"


async def test_a_resumed_lanes_verdicts_count_every_settled_unit_its_earlier_ones_included(tmp_path):
    """A campaign stopped partway and run again: each lane's correct/judged (the console's lanes line, the headless
    end, `ctl status --json`) and the run's are over every settled unit, those settled before the resume included,
    as its folder has them (defect: only this session's were counted, `weak 6/6 · correct 2/2`)."""
    tasks = make_tasks({"x.com": 2, "y.com": 2})
    wrong = {f"b/{t.task_id}": Behaviour(answer="no") for t in tasks[:3]}
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=10)
    first = Scheduler(shared, tasks, FakeExecutor(dict(wrong)), lanes=lanes, judge=answered_ok)
    run = asyncio.ensure_future(first.run())
    while sum(1 for lane in lanes for r in lane_rows(shared, lane.name) if r["status"] == "done") < 4:
        await asyncio.sleep(1)
    first.stop()
    await run
    rec = Recorder()
    again = Scheduler(shared, tasks, FakeExecutor(dict(wrong)), [rec], lanes=lanes, judge=answered_ok)
    stats = await again.run()
    assert stats.settled_before >= 4 and stats.finished >= 2
    summary = again.summary()
    assert [(r.name, (r.judged, r.correct)) for r in summary.lanes] == \
        [("a", verdicts_on_disk(shared, "a")), ("b", verdicts_on_disk(shared, "b"))] == [("a", (4, 4)), ("b", (4, 1))]
    assert (summary.judged, summary.correct) == (8, 5)
    last = rec.of(EpisodeFinished)[-1]
    assert (last.judged, last.correct) == (8, 5)   # what a front end's header takes


async def test_a_unit_run_again_replaces_its_earlier_verdict_never_counted_twice(tmp_path):
    """A unit settled wrong (its model failed) in a run before, retried after the resume (`ctl retry`) and now right:
    its lane counts it once, right."""
    tasks = make_tasks({"x.com": 3})
    shared, lanes = campaign(tmp_path, tasks[:2], workers=2, pace_cooldown=0, model_guard=0)
    failing = FakeExecutor({f"b/{tasks[0].task_id}": Behaviour(model_failure="context_length", answer="")})
    await Scheduler(shared, tasks[:2], failing, lanes=lanes, judge=answered_ok).run()
    assert verdicts_on_disk(shared, "b") == (2, 1)
    lanes = [dataclasses.replace(lane, tasks=tuple(tasks)) for lane in lanes]   # a third task this time
    again = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes, judge=answered_ok)
    run = asyncio.ensure_future(again.run())
    await asyncio.sleep(5)   # the third task's units run
    assert [(r.judged, r.correct) for r in again.snapshot().lanes] == [(2, 2), (2, 1)]   # read on resume
    assert again.retry_errors() == 1
    await run
    assert verdicts_on_disk(shared, "b") == (3, 3)
    assert [(r.judged, r.correct) for r in again.summary().lanes] == [(3, 3), (3, 3)]
    assert (again.summary().judged, again.summary().correct) == (6, 6)


async def test_an_attempt_stopped_under_it_carries_no_verdict(tmp_path):
    """A stop interrupts an episode: its record says killed (interrupted) with no reference verdict, which only the
    attempt that settles the task has (defect: `killed (interrupted)  wrong  (will run again)`)."""
    tasks = make_tasks({"x.com": 1, "y.com": 1})
    shared, lanes = campaign(tmp_path, tasks, workers=2, pace_cooldown=0)
    sched = Scheduler(shared, tasks, FakeExecutor(), lanes=lanes, judge=lambda task, rec: False)
    asyncio.get_running_loop().call_later(15, sched.stop)
    await sched.run()
    rows = [r for lane in lanes for r in lane_rows(shared, lane.name)]
    assert rows and all(r["error"] == "interrupted" and "correct" not in r for r in rows)
    assert [(r.judged, r.correct) for r in sched.summary().lanes] == [(0, 0), (0, 0)]


async def test_a_resumed_plain_runs_verdicts_count_its_earlier_tasks_too(tmp_path):
    """A plain run is one lane: after a resume its header (RunState, from the engine's events and snapshots) and its
    summary count every settled task's verdict, as `report` does (defect: only this session's)."""
    import io

    from om2w_tui.frontends.headless import HeadlessLog

    tasks = make_tasks({"x.com": 3, "y.com": 3})
    wrong = {t.task_id: Behaviour(answer="no") for t in tasks[::2]}
    cfg = config(tmp_path, workers=2, pace_cooldown=10)
    first = Scheduler(cfg, tasks, FakeExecutor(dict(wrong)), judge=answered_ok)
    run = asyncio.ensure_future(first.run())
    while sum(r["status"] == "done" for r in read_results(cfg.out).records) < 3:
        await asyncio.sleep(1)
    first.stop()
    await run
    log = HeadlessLog(stream := io.StringIO())
    again = Scheduler(cfg, tasks, FakeExecutor(dict(wrong)), [log], judge=answered_ok)
    stats = await again.run()
    assert stats.settled_before >= 3
    latest = [r for r in read_results(cfg.out).latest_records().values() if r.settles]
    on_disk = (len(latest), sum(bool(r.correct) for r in latest))
    assert on_disk == (6, 3)
    assert (log.state.judged, log.state.correct) == on_disk                       # the header's
    assert (again.summary().judged, again.summary().correct) == on_disk
    assert "correct: 3 of 6 (reference judge, those done before included)" in stream.getvalue()
