"""The dashboard's model: folding events and snapshots, countdowns from deadlines."""

from __future__ import annotations

import dataclasses

from om2w_tui.engine.events import EpisodeFinished, RunStarted
from om2w_tui.frontends.formatting import clip_left, clock_text, countdown_text
from om2w_tui.frontends.run_state import RunState

from . import recorded as R


def fold(state: RunState) -> RunState:
    for ev in R.events():
        name = {"RunStarted": "run_started", "SlotChanged": "slot_changed", "EpisodeStarted": "episode_started",
                "EpisodeStep": "step", "EpisodeModelCall": "model_call", "EpisodeFinished": "episode_finished",
                "DispatchChanged": "dispatch_changed"}[type(ev).__name__]
        getattr(state, name)(*((ev, R.T0 - 40) if name == "run_started" else (ev,)))
    return state


def test_events_give_slots_steps_and_counts():
    st = fold(RunState())
    assert {s: (v.state, v.task_id, v.step) for s, v in st.slots.items()} == {
        0: ("running", "offline_booking_rates_11", 1), 1: ("paused", "offline_wiki_port_06", 2)}
    assert st.done == 2 and st.running == 2 and st.paused and st.finished_here == 1 and st.correct == 1
    assert list(st.steps["offline_shop_search_01"])[-1].startswith("= done after 3 steps")
    assert st.elapsed(R.T0) == 40


def test_a_cooldown_counts_down_from_its_deadline_whatever_the_ticks():
    st = fold(RunState())
    st.apply_snapshot(R.snapshot(), taken_at=R.T0)
    shop = st.sites[R.SHOP]
    assert shop.state == "cooling" and shop.ready_at == R.T0 + 65
    assert countdown_text(shop.ready_at - (R.T0 + 0.2)) == "1:05"
    assert countdown_text(shop.ready_at - (R.T0 + 64.5)) == "0:01"
    assert countdown_text(shop.ready_at - (R.T0 + 70)) == "0:00"
    assert st.done == 2 and st.errors == 0


def test_the_snapshot_is_the_truth_for_which_slots_exist():
    st = fold(RunState())
    snap = R.snapshot()
    st.apply_snapshot(dataclasses.replace(snap, slots=snap.slots[:1]), R.T0)
    assert list(st.slots) == [0]


def test_requeued_and_interrupted_attempts_do_not_count_as_done():
    st = RunState()
    st.run_started(RunStarted(3, 0, 1, "/o"), 0)
    st.episode_finished(EpisodeFinished(0, R.record("a", R.SHOP, status="killed", error="requeued")))
    st.episode_finished(EpisodeFinished(0, R.record("b", R.SHOP, status="error", error="boom")))
    assert st.done == 1 and st.errors == 1


def test_formatting():
    assert clock_text(65) == "1:05" and clock_text(3725) == "1:02:05" and clock_text(None) == "-"
    assert clip_left("127.0.0.1:41003", 10) == "…0.1:41003"


def test_a_duration_reads_the_same_on_the_console_as_in_the_report():
    """The console's clock rounds whole seconds as the report does (56.8 s is 0:57 and 57 s, not 0:56)."""
    from om2w_tui.evaluation.text_formats import fmt_seconds

    for seconds, clock, words in ((56.8, "0:57", "57 s"), (11.72, "0:12", "12 s"), (40.6, "0:41", "41 s"),
                                  (40.4, "0:40", "40 s"), (-0.3, "0:00", "0 s")):
        assert (clock_text(seconds), fmt_seconds(seconds)) == (clock, words)
    assert clock_text(3599.6) == "1:00:00"


def test_the_headless_pairing_gap_reads_as_the_reports():
    import io

    from om2w_tui.engine.events import GapFigures, LaneRow, PairingGaps, RunFinished, RunSummary
    from om2w_tui.frontends.headless import HeadlessLog

    log = HeadlessLog(stream := io.StringIO(), [("a", 3, 0), ("b", 3, 0)])
    gaps = PairingGaps(GapFigures(3, 11.72, 40.6, 56.8), lanes=2, compared=1)
    log.handle(RunFinished(RunSummary(lanes=(LaneRow("a", "a", 1), LaneRow("b", "b", 1)), pairing=gaps)))
    assert stream.getvalue().splitlines()[-1] == "pairing gap over 3 tasks: median 12 s, p90 41 s, worst 57 s"


def test_a_console_attached_late_counts_from_the_runs_start_and_its_rate_from_every_task_it_settled():
    """The run began 600 s before this console attached, with 5 of 20 tasks settled from earlier runs; it has settled
    9 more since, the console saw one of them finish: elapsed is 600 s, the rate 10 an hour's worth over those 600 s."""
    from om2w_tui.engine.results import EpisodeRecord

    now = 1_800_000_000.0
    st = RunState()
    st.run_started(RunStarted(total=20, settled=5, workers=2, out="o", started_at=now - 600), now)
    assert st.elapsed(now) == 600
    st.episode_finished(EpisodeFinished(0, EpisodeRecord(task_id="t", status="done", steps=3), done=15, errors=0))
    assert st.finished_here == 1 and st.finished_this_run == 10
    # a clock behind the engine's (a test's frozen clock): the run counts from when it was seen to start
    frozen = RunState()
    frozen.run_started(RunStarted(total=20, settled=0, workers=2, out="o", started_at=now), 1000.0)
    assert frozen.elapsed(1010.0) == 10


# ── the ETA, against simulated paced runs ─────────────────────────────────────────────────────────────────────────
def simulate(tasks: dict[str, int], slots: int, length: float, cooldown: float, upto: float,
             limit: int = 1) -> tuple[RunState, float]:
    """A paced run as the engine paces it (`limit` episodes at once a site, `cooldown` from one's end to the next
    one's start there, the site with the most left first), every episode `length` seconds: -> (what the console
    knows at `upto`, as its events and a snapshot tell it; the time the run ends)."""
    from om2w_tui.engine.events import Pacing, RunSnapshot, SiteRow, SlotRow
    from om2w_tui.engine.results import EpisodeRecord

    left = dict(tasks)
    ready = dict.fromkeys(tasks, 0.0)
    running: dict[int, tuple[str, float]] = {}      # slot -> (site, start)
    finished: list[tuple[float, str]] = []
    t, state_at = 0.0, None
    while True:
        for slot in range(slots):
            if slot in running:
                continue
            busy = {s: sum(1 for site, _ in running.values() if site == s) for s in tasks}
            free = [s for s in tasks if left[s] and busy[s] < limit and ready[s] <= t]
            if not free:
                break
            site = max(free, key=lambda s: left[s])
            left[site] -= 1
            running[slot] = (site, t)
        ends = [start + length for _, start in running.values()]
        waits = [ready[s] for s in tasks if left[s] and ready[s] > t]
        nxt = min(ends + waits, default=None)
        if state_at is None and (nxt is None or nxt > upto):
            state_at = (dict(left), dict(ready), dict(running), list(finished))
        if nxt is None:
            end = t
            break
        t = nxt
        for slot, (site, start) in list(running.items()):
            if start + length <= t:
                del running[slot]
                finished.append((t, site))
                ready[site] = t + cooldown
    assert state_at is not None
    left_then, ready_then, running_then, done_then = state_at
    st = RunState()
    st.run_started(RunStarted(sum(tasks.values()), 0, slots, "o", started_at=1.0), upto)
    for i, (_, site) in enumerate(done_then):
        st.episode_finished(EpisodeFinished(0, EpisodeRecord(task_id=f"{site}-{i}", status="done", steps=3,
                                                             duration_s=length), done=i + 1, errors=0))
    snap = RunSnapshot(
        now=upto, target_workers=slots, pacing=Pacing(limit, cooldown),
        slots=[SlotRow(slot, "running", f"{site}-now", site, started_at=start)
               for slot, (site, start) in sorted(running_then.items())],
        sites=[SiteRow(s, "running" if any(site == s for site, _ in running_then.values()) else
                       "cooling" if ready_then[s] > upto else "free" if left_then[s] else "done",
                       ready_then[s], left_then[s], sum(1 for _, site in done_then if site == s), 0, tasks[s], cooldown,
                       sum(1 for site, _ in running_then.values() if site == s), limit) for s in tasks])
    st.apply_snapshot(snap, taken_at=upto)
    return st, end


OFFLINE = {"shop": 6, "wiki": 5, "booking": 4, "longpage": 2, "studio": 2}   # 19 tasks on five sites


def test_the_eta_is_the_busiest_sites_chain_under_its_cooldown_not_the_rate_so_far():
    """The offline suite on two slots with 120 s cooldowns and 8 s episodes: the first minute finishes a task on
    every site, then the shop's chain (6 tasks, 120 s apart) sets the end. The rate so far (the old ETA) said a
    fraction of what was left; the paced ETA is within 10% of it all along."""
    for upto in (20.0, 150.0, 300.0, 500.0):
        st, end = simulate(OFFLINE, slots=2, length=8.0, cooldown=120.0, upto=upto)
        truth = end - upto
        eta = st.eta(upto)
        assert eta is not None and abs(eta - truth) <= 0.1 * truth + 8, (upto, eta, truth)
        if upto == 20.0:   # what the rate so far gave: tasks left times the seconds per task so far
            old = (st.total - st.done) * st.elapsed(upto) / st.finished_this_run
            assert old < 0.2 * truth


def test_the_eta_of_an_unpaced_run_is_the_work_spread_over_the_slots():
    for upto in (10.0, 40.0):
        st, end = simulate(OFFLINE, slots=2, length=8.0, cooldown=0.0, upto=upto, limit=19)
        truth = end - upto
        eta = st.eta(upto)
        assert eta is not None and abs(eta - truth) <= 0.1 * truth + 8, (upto, eta, truth)


def test_the_eta_waits_for_the_first_episode_and_is_nothing_when_all_is_done():
    st = RunState()
    st.run_started(RunStarted(3, 0, 2, "o", started_at=1.0), 10.0)
    assert st.eta(10.0) is None
    st.reported = (3, 0)
    assert st.eta(10.0) == 0.0


def test_a_console_attached_after_episodes_ended_takes_the_eta_from_the_engines_lengths():
    """`attach` (or a lane's folder's) sees no episode end before its first snapshot: the engine's expected lengths
    of the work left give the ETA at once (it said `-` until an episode ended under it)."""
    from om2w_tui.engine.events import RunSnapshot, SiteRow

    st = RunState()
    st.run_started(RunStarted(4, 0, 1, "o", started_at=1.0), 10.0)
    st.apply_snapshot(RunSnapshot(target_workers=1, sites=[SiteRow(R.SHOP, "free", 0.0, 2, 2, 0, 4, work_s=90.0)]),
                      taken_at=10.0)
    assert st.done == 2 and st.eta(10.0) == 90.0


def test_an_attempt_that_does_not_settle_its_task_shows_no_verdict():
    """An attempt stopped under it (or requeued, or failed by the harness) runs again: no `wrong` in its lines, even
    from a record that carries a verdict (an older file's); the attempt that settles says its verdict."""
    import io

    from om2w_tui.frontends.headless import HeadlessLog
    from om2w_tui.frontends.run_state import episode_line, finish_line, verdict_text

    stopped = R.record("a", R.SHOP, status="killed", correct=False)
    for error in ("interrupted", "requeued"):
        rec = dataclasses.replace(stopped, error=error)
        assert verdict_text(rec) == "" and "wrong" not in finish_line(rec) and "wrong" not in episode_line(0, rec)
    harness = dataclasses.replace(R.record("a", R.SHOP, status="error", correct=False), error="boom",
                                  error_kind="infra")
    assert verdict_text(harness) == ""
    settled = R.record("a", R.SHOP, status="killed", correct=False)
    assert verdict_text(dataclasses.replace(settled, error="killed by user")) == "wrong"
    assert finish_line(R.record("a", R.SHOP, correct=True)).endswith(", correct")
    log = HeadlessLog(stream := io.StringIO())
    log.handle(EpisodeFinished(1, dataclasses.replace(stopped, error="interrupted"), requeued=True, lane="base"))
    line = stream.getvalue().splitlines()[0]
    assert "killed (interrupted)" in line and "wrong" not in line and line.endswith("(will run again)")


def test_the_headless_start_line_counts_a_campaigns_tasks_and_lanes():
    import io

    from om2w_tui.frontends.headless import HeadlessLog

    camp = HeadlessLog(stream := io.StringIO(), [(name, 4, 0) for name in ("a", "a-r2", "b", "b-r2")])
    camp.handle(RunStarted(16, 3, 2, "/c"))
    assert stream.getvalue().splitlines() == [
        "campaign: 4 tasks x 4 lanes = 16 units, 2 workers, out /c, resuming: 3 of 16 units already done"]
    plain = HeadlessLog(stream := io.StringIO())
    plain.handle(RunStarted(4, 1, 2, "/o"))
    assert stream.getvalue().splitlines() == ["run: 4 tasks, 2 workers, out /o, resuming: 1 of 4 already done"]
    # a shard's says which: its counts are its share's, not the whole run's
    shard = HeadlessLog(stream := io.StringIO(), [("good", 3, 0), ("weak", 3, 0)], shard="0/2")
    shard.handle(RunStarted(6, 0, 1, "runs/shard"))
    assert stream.getvalue().splitlines() == [
        "campaign (shard 0/2): 3 tasks x 2 lanes = 6 units, 1 worker, out runs/shard"]
    plain = HeadlessLog(stream := io.StringIO(), shard="1:3/4")
    plain.handle(RunStarted(4, 0, 2, "/o"))
    assert stream.getvalue().splitlines() == ["run (shard 1:3/4): 4 tasks, 2 workers, out /o"]


def test_a_campaigns_headless_end_leaves_the_verdicts_to_each_lane_never_both_arms_summed():
    import io

    from om2w_tui.engine.events import LaneRow, RunFinished, RunSummary
    from om2w_tui.frontends.headless import HeadlessLog
    from om2w_tui.protocol.run_end import RunEnd

    lanes = (LaneRow("good", "good", 1, "/c/good", total=3, done=3, correct=3, judged=3),
             LaneRow("weak", "weak", 1, "/c/weak", total=3, done=3, correct=1, judged=3))
    camp = HeadlessLog(stream := io.StringIO(), [("good", 3, 0), ("weak", 3, 0)])
    camp.handle(RunFinished(RunSummary(total=6, finished=6, correct=4, judged=6, lanes=lanes, end=RunEnd.FINISHED)))
    said = stream.getvalue()
    assert "correct: 4 of 6" not in said and "lane weak (arm weak, repeat 1): 3/3 done" in said
    plain = HeadlessLog(stream := io.StringIO())
    plain.handle(RunFinished(RunSummary(total=6, finished=6, correct=4, judged=6, end=RunEnd.FINISHED)))
    assert "correct: 4 of 6 (reference judge)" in stream.getvalue()


def test_the_eta_says_held_while_a_held_arm_has_units_left_and_paused_while_dispatch_is():
    """Held units start only once their arm is resumed (paused dispatch: once it is), so no time can be counted
    down; the word is the one `ctl`, the Sites panel and the lanes line say for the state."""
    from om2w_tui.engine.events import LaneRow, RunSnapshot, SlotRow
    from om2w_tui.engine.results import EpisodeRecord

    st = RunState()
    st.run_started(RunStarted(4, 0, 1, "o", started_at=1.0), 10.0)
    st.episode_finished(EpisodeFinished(0, EpisodeRecord(task_id="t0", status="done", steps=3, duration_s=8.0),
                                        done=1, errors=0))

    def snap(agent: LaneRow, running: str = "", paused: bool = False) -> None:
        slots = [SlotRow(0, "running", "t1", "shop", started_at=9.0, lane=running)] if running else []
        st.apply_snapshot(RunSnapshot(now=10.0, target_workers=1, slots=slots, paused=paused,
                                      lanes=(LaneRow("base", "base", 1, total=2, done=1), agent)), taken_at=10.0)

    snap(LaneRow("agent", "agent", 1, total=2, done=0, paused=True))
    assert st.waits() == "held"
    snap(LaneRow("agent", "agent", 1, total=2, done=0, guard="context_length: 3 of the last 4 calls failed"))
    assert st.waits() == "held"
    snap(LaneRow("agent", "agent", 1, total=2, done=1, paused=True), running="agent")   # its last unit runs on
    assert st.waits() == "" and st.eta(10.0) is not None
    snap(LaneRow("agent", "agent", 1, total=2, done=0))                                 # resumed: it counts again
    assert st.waits() == "" and st.eta(10.0) is not None
    snap(LaneRow("agent", "agent", 1, total=2, done=0), paused=True)                    # the whole dispatch paused
    assert st.waits() == "paused"


def test_the_headless_progress_line_says_the_eta_from_the_engines_lengths():
    """A cluster log's progress line ends in the ETA the console's header shows, from the run's snapshot: here 100 s
    of work left on one site (the engine's lengths), not the 14 s mean of the episodes done."""
    import io

    from om2w_tui.engine.events import RunSnapshot, SiteRow
    from om2w_tui.frontends.headless import HeadlessLog

    stream = io.StringIO()
    log = HeadlessLog(stream)
    log.handle(RunStarted(3, 0, 1, "/o"))
    log.handle(EpisodeFinished(0, R.record("a", R.SHOP)))
    assert ", ETA" not in stream.getvalue()                    # no run to ask: no ETA
    log.snapshot = lambda: RunSnapshot(target_workers=1, sites=[SiteRow(R.SHOP, "free", 0.0, 1, 2, 0, 3,
                                                                        work_s=100.0)])
    log.handle(EpisodeFinished(0, R.record("b", R.SHOP)))
    line = stream.getvalue().splitlines()[-1]
    assert line.startswith("progress: 2/3 done") and line.endswith(", ETA 1:40"), line
