"""The dashboard's model: folding events and snapshots, countdowns from deadlines."""

from __future__ import annotations

import dataclasses

from om2w_tui.engine.events import EpisodeFinished, RunStarted
from om2w_tui.frontends.formatting import clip_left, clock_text, countdown_text, eta_seconds
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
    st = fold(RunState(max_steps=30))
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
    assert eta_seconds(2, 4, 100) == 200 and eta_seconds(0, 4, 100) is None and eta_seconds(3, 0, 9) == 0


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
