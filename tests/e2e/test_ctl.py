"""`om2w-tui ctl` steers a real headless run (a subprocess: the offline sites, the slow oracle, workers, Chromium)
through its control socket, in an out folder too deep for a plain unix socket address; each command is checked by
its effect on the run (its events, results.jsonl, its exit), not only by its answer."""

from __future__ import annotations

import json

import pytest

from om2w_tui.engine.control_socket import SOCKET_NAME
from om2w_tui.engine.events import DispatchChanged, EpisodeFinished, EpisodeStarted, EpisodeStep, RunFinished
from tests.e2e.control import Follower, wait_listening
from tests.e2e.helpers import chromium_left, cli, popen, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
IDS = ["offline_wiki_admin_10", "offline_shop_cart_05"]   # eight and seven steps: time to act on them
# five seconds a reply: an episode outlasts the ctl calls made while it runs (each a Python start, seconds on a loaded
# machine; a stop that races the agent's own end keeps its `done`)
SLOW = "oracle-slow-5"


def ctl(out, *args):
    r = cli("ctl", str(out), *args, timeout=60)
    return r.returncode, (json.loads(r.stdout) if "--json" in args and r.stdout.strip() else r.stdout), r.stderr


def test_ctl_pauses_resumes_adds_a_worker_requeues_and_stops_a_headless_run(tmp_path):
    out = tmp_path / ("deep" * 15) / ("er" * 25) / "run"
    assert len(str(out / SOCKET_NAME)) > 120
    p = popen("run", "--no-ui", "--bench", "offline", "--model", SLOW, "--task-ids", ",".join(IDS),
              "--workers", "1", "--pace-cooldown", "0", "--out", str(out))
    try:
        wait_listening(out, p)
        run = Follower(out)
        first = run.wait("a first episode", lambda: run.of(EpisodeStarted))[0]
        x = first.task_id
        (y,) = set(IDS) - {x}

        rc, status, _ = ctl(out, "status", "--json")
        assert rc == 0 and status["total"] == 2 and status["target_workers"] == 1 and not status["paused"]
        assert [r["task_id"] for r in status["running"]] == [x]
        rc, text, _ = ctl(out, "status")
        assert rc == 0 and "0/2 done, 1 running" in text and x in text

        assert ctl(out, "pause")[0] == 0
        run.wait("dispatch paused", lambda: run.of(DispatchChanged, paused=True))
        assert ctl(out, "workers", "2")[0] == 0
        rc, status, _ = ctl(out, "status", "--json")
        assert status["paused"] and status["target_workers"] == 2 and len(status["snapshot"]["slots"]) == 2
        assert [r["task_id"] for r in status["running"]] == [x]          # paused: the new slot waits
        assert not run.of(EpisodeStarted, task_id=y)

        assert ctl(out, "resume")[0] == 0
        run.wait("the second task on the new slot", lambda: run.of(EpisodeStarted, task_id=y, slot=1))

        rc, _, err = ctl(out, "kill", "no_such_task")
        assert rc == 1 and "no_such_task" in err and x in err                # refused, naming what runs
        # its worker has it (a step taken): a requeue while the worker still starts puts the task back unrun
        run.wait("x's first step", lambda: run.of(EpisodeStep, task_id=x))
        rc, answer, _ = ctl(out, "requeue", x, "--json")
        assert rc == 0 and answer["ok"] and answer["task"] == x and answer["slot"] == 0
        ended = run.wait("the requeued attempt", lambda: run.of(EpisodeFinished))[0]
        assert (ended.record.task_id, ended.record.status, ended.record.error) == (x, "killed", "requeued")
        run.wait("its second attempt", lambda: run.of(EpisodeStarted, task_id=x, attempt=2))

        assert ctl(out, "stop")[0] == 0
        run.wait("the run's end", lambda: run.of(RunFinished))
        assert p.wait(timeout=60) == 0, p.stderr.read()[-3000:]
        run.close()
    finally:
        if p.poll() is None:
            p.kill()
    got = [(r["task_id"], r["attempt"], r["status"], r["error"]) for r in records(out)]
    assert got[0] == (x, 1, "killed", "requeued")
    # the stop ended both episodes, to run again next time (x's second one, if its worker had not taken it yet, went
    # back in the queue with no record)
    assert (y, 1, "killed", "interrupted") in got[1:]
    assert set(got[1:]) <= {(y, 1, "killed", "interrupted"), (x, 2, "killed", "interrupted")}
    assert not (out / SOCKET_NAME).exists() and chromium_left(out) == []
    rc, _, err = ctl(out, "status")
    assert rc == 2 and str(out) in err and "no run is listening" in err


CAMPAIGN = """\
bench = "offline"
task-ids = ["{task}"]
out = "{out}"
workers = 1
pace_cooldown = 0
retries = 0

[arms.good]
model = "{model}"

[arms.weak]
model = "{model}"
"""


def test_ctl_given_a_lanes_folder_acts_on_that_lanes_episode_only(tmp_path):
    """A two-arm campaign on one task and one slot: while one lane runs the task and the other's unit waits,
    `ctl OUT/<waiting lane> kill TASK` is refused naming the lane and what runs, and the running lane's episode goes
    on (its requeue, from its own folder, is what ends it); nothing is written in the waiting lane."""
    task = IDS[1]
    out = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(CAMPAIGN.format(task=task, out=out, model=SLOW))
    p = popen("campaign", str(plan), "--no-ui")
    try:
        wait_listening(out, p)
        run = Follower(out)
        first = run.wait("a first unit", lambda: run.of(EpisodeStarted))[0]
        # its worker has the task (a step taken): a requeue while the worker still starts puts the task back unrun,
        # with no record (the run's first worker waits for its zygote's imports)
        run.wait("its first step", lambda: run.of(EpisodeStep, task_id=task))
        (waiting,) = {"good", "weak"} - {first.lane}
        rc, _, err = ctl(out / waiting, "kill", task)
        assert rc == 1, err
        assert f"lane {waiting} runs no episode of task '{task}' now (running: {first.lane}/{task} on slot 0)" in err
        rc, answer, err = ctl(out / first.lane, "requeue", task, "--json")
        assert rc == 0 and (answer["lane"], answer["task"], answer["slot"]) == (first.lane, task, 0), err
        ended = run.wait("the requeued attempt", lambda: run.of(EpisodeFinished))[0]
        assert (ended.lane, ended.record.status, ended.record.error) == (first.lane, "killed", "requeued")
        assert ctl(out, "stop")[0] == 0
        run.wait("the campaign's end", lambda: run.of(RunFinished))
        assert p.wait(timeout=60) == 0, p.stderr.read()[-3000:]
        run.close()
    finally:
        if p.poll() is None:
            p.kill()
    assert [(r["task_id"], r["status"], r["error"]) for r in records(out / first.lane)][0] == (task, "killed",
                                                                                               "requeued")
    assert not [r for r in records(out / waiting) if r["error"] in ("requeued", "killed by user")]
    assert chromium_left(out) == []
