"""Every event the engine declares (`engine/events.py: Event`, the one vocabulary) is handled by each of its
consumers at run time: the console's dashboard, the run state both front ends fold, the headless log, the control
socket's replay memory, and the remote run that carries events to an attached console. mypy's exhaustiveness check
(`assert_never` in each `match`) covers the code; this covers a run, where an event type without a case raises."""

from __future__ import annotations

import io
import typing
from pathlib import Path

from om2w_tui.engine.control_socket import ControlServer
from om2w_tui.engine.events import (
    EpisodeFinished,
    EpisodePutBack,
    EpisodeStarted,
    Event,
    Log,
    RunFinished,
    RunStarted,
    RunSummary,
)
from om2w_tui.engine.wire import line, read
from om2w_tui.frontends.console.widgets.panels import StepsLog
from om2w_tui.frontends.headless import HeadlessLog
from om2w_tui.frontends.remote import RemoteRun
from om2w_tui.frontends.run_state import RunState
from om2w_tui.protocol.run_end import RunEnd
from tests.fakes import Recorder

from . import recorded as R
from .pilots import build

PUT_BACK = EpisodePutBack(1, "offline_wiki_wal_07", 1, "the worker vanished before it took the task")
SAMPLES: list[Event] = [*R.events(), PUT_BACK, Log("warning", "the disk is nearly full"),
                        Log("error", "the model endpoint is down"),
                        RunFinished(RunSummary(total=6, finished=1, end=RunEnd.FINISHED))]


def test_the_samples_hold_every_event_type():
    assert {type(ev) for ev in SAMPLES} == set(typing.get_args(Event))


def test_the_run_state_folds_every_event():
    state = RunState()
    for ev in SAMPLES:
        state.apply(ev, R.T0)
    assert state.phase == "finished" and state.total == 6 and state.finished_here == 1
    assert state.paused and list(state.steps["offline_wiki_wal_07"]) == [
        f"= put back in the queue before it started ({PUT_BACK.reason})"]


def test_the_headless_log_handles_every_event():
    out = io.StringIO()
    log = HeadlessLog(out)
    for ev in SAMPLES:
        log.handle(ev)
    text = out.getvalue()
    for said in ("run: 6 tasks, 2 workers", "offline_shop_search_01", "put back in the queue", "dispatch paused",
                 "warning: the disk is nearly full", "error: the model endpoint is down", "summary: 1 episodes"):
        assert said in text


def test_the_control_socket_remembers_every_event_and_a_remote_run_relays_each(tmp_path: Path):
    server = ControlServer(tmp_path)
    for ev in SAMPLES:
        server.handle(ev)
    replay = server.replay()
    assert isinstance(replay[0], RunStarted) and isinstance(replay[-1], RunFinished)
    assert not any(isinstance(ev, EpisodeStarted) for ev in replay)   # the run is over: nothing runs
    sink = Recorder()
    remote = RemoteRun(tmp_path, sinks=[sink])
    for ev in SAMPLES:
        remote._take(read(line(ev)))
    assert sink.events == SAMPLES and remote.end is RunEnd.FINISHED
    assert [ev.record.extra for ev in sink.events if isinstance(ev, EpisodeFinished)] == \
        [ev.record.extra for ev in SAMPLES if isinstance(ev, EpisodeFinished)]


async def test_the_dashboard_handles_every_event(tmp_path: Path):
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        clock.t = R.T0
        for ev in SAMPLES:
            app.sink.handle(ev)
        await pilot.pause()
        assert app.dashboard is not None
        app.dashboard.render_all()
        await pilot.pause()
        shown = "\n".join(app.screen.query_one(StepsLog).lines)
        assert app.dashboard.state.phase == "finished" and app.dashboard.state.paused
        for said in ("put back in the queue", "! warning: the disk is nearly full", "dispatch paused",
                     "run finished: 1 episode this run"):
            assert said in shown, shown
