"""`om2w-tui ctl` and `attach` on bad usage or a folder where no run listens: a clear message naming OUT and what
to do, exit code 2; a refusal of the run: exit 1 (against a stand-in run; a real one in tests/e2e/test_ctl.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from om2w_tui.cli.ctl import SENT
from om2w_tui.cli.main import main
from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer, request
from om2w_tui.engine.runlock import RunLock
from om2w_tui.protocol.control import COMMANDS, Done, Kill, Refused
from tests.fakes import FakeRun
from tests.unit.helpers import make_run, record


@pytest.mark.parametrize("argv, says", [
    (["workers", "x"], "workers N: x: not a whole number"),
    (["workers", "0"], "must be 1 to 512"),
    (["workers", "100000"], "must be 1 to 512"),
    (["workers", "nan"], "not a whole number"),
    (["kill"], "kill TASK: which task?"),
    (["status", "extra"], "status takes no argument"),
    (["pause", "--force"], "--force goes with stop only"),
])
def test_bad_usage_is_named_and_exits_2(tmp_path, capsys, argv, says):
    assert main(["ctl", str(tmp_path), *argv]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("command", [["ctl", "{out}", "status"], ["attach", "{out}"]])
def test_no_run_in_the_folder_names_it_and_exits_2(tmp_path, capsys, command):
    assert main([c.format(out=tmp_path) for c in command]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "no run is listening" in err and "om2w-tui run" in err


async def test_a_refusal_exits_1_and_an_answer_prints_a_line_or_json(tmp_path, capsys):
    with RunLock(tmp_path, info={"socket": SOCKET_NAME}):   # held as a run holds it, naming its socket
        await _refusal_and_answers(tmp_path, capsys)


async def _refusal_and_answers(tmp_path, capsys):
    async with ControlServer(tmp_path).serving(FakeRun()):
        assert await asyncio.to_thread(main, ["ctl", str(tmp_path), "requeue", "t-zzz"]) == 1
        assert "the run refused: no episode of task 't-zzz' is running" in capsys.readouterr().err
        assert await asyncio.to_thread(main, ["ctl", str(tmp_path), "workers", "3"]) == 0
        assert capsys.readouterr().out.strip() == "workers: 3"
        assert await asyncio.to_thread(main, ["ctl", str(tmp_path), "status", "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["running"][0]["task_id"] == "t-a" and status["target_workers"] == 3   # as `workers 3` left it
        # the keys the guide promises scripts (docs/clusters.md)
        assert {"ok", "done", "total", "pending", "paused", "breaker", "storage", "stopping", "target_workers",
                "errors", "running", "model", "snapshot", "run"} <= set(status)
        assert set(status["running"][0]) == {"slot", "task_id", "state", "step", "max_steps", "site", "model_error"}
        assert {"calls", "ok", "failures", "ended_on", "calls_per_min", "latency_p50_s", "latency_p95_s",
                "tokens_in_per_s", "tokens_out_per_s", "thinking_stripped", "last_error", "guard"} <= set(
                    status["model"])
        assert status["snapshot"]["slots"][0]["task_id"] == "t-a" and status["run"]["pid"] == status["pid"]
        assert await asyncio.to_thread(main, ["ctl", str(tmp_path), "status"]) == 0
        assert "slot 0  running  t-a  step 2" in capsys.readouterr().out


def test_the_commands_and_their_help_are_the_protocols_declarations(capsys):
    with pytest.raises(SystemExit):
        main(["ctl", "--help"])
    shown = capsys.readouterr().out
    for name, cls in COMMANDS.types.items():
        if cls.USAGE is None:        # subscribe: a console's, not a script's
            assert f"  {name} " not in shown
        else:
            assert cls.USAGE.help in shown and name in SENT
    assert "workers N         run N episodes at once from now on (1 to 512)" in shown   # the setting's bounds


async def test_json_answers_keep_the_keys_scripts_read(tmp_path, capsys):
    """`ctl ... --json`: `ok`, then `message` and the command's fields (`slot`, `task`, `paused`, `workers`,
    `queued`) or `error`, as the guide promises (docs/clusters.md); nothing unset."""
    with RunLock(tmp_path, info={"socket": SOCKET_NAME}):
        async with ControlServer(tmp_path).serving(FakeRun()):
            said = {}
            for argv in (["requeue", "t-a"], ["pause"], ["workers", "3"], ["retry"], ["stop", "--force"],
                         ["kill", "t-zzz"]):
                code = await asyncio.to_thread(main, ["ctl", str(tmp_path), *argv, "--json"])
                said[argv[0]] = (code, json.loads(capsys.readouterr().out))
    assert said["requeue"] == (0, {"ok": True, "slot": 0, "task": "t-a",
                                   "message": "killing t-a on slot 0: it goes back in the queue"})
    assert said["pause"] == (0, {"ok": True, "paused": True, "message": "dispatch paused (running episodes go on)"})
    assert said["workers"] == (0, {"ok": True, "workers": 3, "message": "workers: 3"})
    assert said["retry"][1]["queued"] == 3 and said["stop"][1]["ok"] is True
    code, refused = said["kill"]
    assert code == 1 and set(refused) == {"ok", "error"} and refused["ok"] is False and "t-zzz" in refused["error"]


def test_status_counts_this_runs_episodes_by_status_out_of_steps_among_them():
    from dataclasses import replace

    from om2w_tui.cli.ctl import status_json, status_lines
    from om2w_tui.engine.events import RunSnapshot, RunSummary
    from om2w_tui.protocol.control import RunInfo
    from om2w_tui.protocol.run_end import RunEnd

    snap = RunSnapshot(now=1.0, slots=[], target_workers=2,
                       summary=RunSummary(total=5, by_status={"timeout": 1, "out_of_steps": 2, "done": 1}))
    run = RunInfo(out="/runs/a", pid=1)
    assert "episodes this run: done 1, out_of_steps 2, timeout 1" in status_lines(run, snap)
    assert status_json(run, snap)["by_status"] == {"timeout": 1, "out_of_steps": 2, "done": 1}
    assert not any(line.startswith("run ") for line in status_lines(run, snap))   # still running: no end said
    assert status_lines(replace(run, end=RunEnd.STOPPED), snap)[1] == "run stopped"


@pytest.mark.parametrize("inside", ["t0", "t0/trajectory"])
def test_no_run_in_a_task_folder_names_the_run_folder_holding_it_the_out_run_takes(tmp_path, capsys, inside):
    """A task's folder is no run's --out (`run` refuses it, the official evaluator's rule): the hint names the run
    folder holding it, an --out `run` takes."""
    from om2w_tui.engine.out_folder import check_out

    run = make_run(tmp_path / "run", [record("t0")])
    (run / inside).mkdir(parents=True, exist_ok=True)
    assert main(["ctl", str(run / inside), "status"]) == 2
    err = capsys.readouterr().err
    assert f"it is inside the run folder {run}: give that folder" in err, err
    assert f"--out {run}`" in err and f"--out {run / inside}" not in err
    assert check_out(run) == "" and "inside the run folder" in check_out(run / inside)


def test_no_run_in_a_campaigns_folder_points_to_its_plan_not_to_a_run(tmp_path, capsys):
    """A stopped campaign's folder (or one of its lanes) is started again by its plan: `om2w-tui run ... --out` is
    refused there."""
    from om2w_tui.campaign_folder import PLAN_FILE

    (tmp_path / PLAN_FILE).write_text('{"format": 1, "lanes": []}')
    (tmp_path / "base-r2").mkdir()
    for out in (tmp_path, tmp_path / "base-r2"):
        assert main(["ctl", str(out), "status"]) == 2
        err = capsys.readouterr().err
        assert "no run is listening" in err and "`om2w-tui campaign PLAN.toml`" in err and "om2w-tui run" not in err
    assert f"a lane of the campaign in {tmp_path}" in err


def test_status_names_each_lane_as_a_lane_of_its_arm_with_its_verdicts(tmp_path):
    from om2w_tui.campaign_folder import PLAN_FILE
    from om2w_tui.cli.ctl import status_lines
    from om2w_tui.engine.events import LaneRow, RunSnapshot, RunSummary
    from om2w_tui.protocol.control import RunInfo

    lanes = (LaneRow("base", "base", 1, total=4, settled_before=1, done=3, correct=2, judged=3),
             LaneRow("base-r2", "base", 2, total=4, done=1, errors=1, paused=True))
    snap = RunSnapshot(now=1.0, slots=[], target_workers=2, summary=RunSummary(total=8, lanes=lanes), lanes=lanes)
    lines = status_lines(RunInfo(out="/runs/c", pid=1), snap)
    assert "lane base (arm base, repeat 1): 3/4 done (1 before), 0 errors, correct 2 of 3" in lines
    assert "lane base-r2 (arm base, repeat 2): 1/4 done (0 before), 1 errors, held" in lines
    assert not any(line.startswith("arm ") for line in lines)
    # asked through a lane's folder: the counts are the campaign's, and said so (they read as the lane's)
    (tmp_path / PLAN_FILE).write_text('{"format": 1, "lanes": []}')
    (tmp_path / "base-r2").mkdir()
    lines = status_lines(RunInfo(out=str(tmp_path / "base-r2"), pid=1), snap)
    assert lines[0].startswith(f"{tmp_path} (the campaign, through its lane base-r2): 0/8 done"), lines[0]


# ── a campaign: a command addressed to a lane's folder acts on that lane only ─────────────────────────────────────
def campaign_run(tmp_path, *running: tuple[str, str]) -> FakeRun:
    """A campaign's run in `tmp_path` (its plan there, a folder per lane: good, weak and weak-r2) whose slots run the
    (lane, task) units `running`, one a slot, and one more slot idle."""
    from om2w_tui.campaign_folder import PLAN_FILE
    from om2w_tui.engine.events import LaneRow, RunSnapshot, SlotRow

    (tmp_path / PLAN_FILE).write_text('{"format": 1, "lanes": []}')
    lanes = (LaneRow("good", "good", 1), LaneRow("weak", "weak", 1), LaneRow("weak-r2", "weak", 2))
    for lane in lanes:
        (tmp_path / lane.name).mkdir()
    slots = [SlotRow(k, "running", task, "shop", step=2, lane=lane) for k, (lane, task) in enumerate(running)]
    return FakeRun(base=RunSnapshot(now=1.0, slots=[*slots, SlotRow(len(slots), "idle")], target_workers=2,
                                    lanes=lanes))


def ctl_in(folder, *argv: str):
    """`om2w-tui ctl FOLDER ...` in a thread (the run's socket is served on the test's loop): its exit code."""
    return asyncio.to_thread(main, ["ctl", str(folder), *argv])


async def test_a_task_command_to_a_lanes_folder_never_touches_another_lanes_episode(tmp_path, capsys):
    """good runs X, weak's unit of X has not started: `ctl OUT/weak kill|requeue|pause X` is refused (exit 1) naming
    lane weak and what runs, and nothing is killed; `ctl OUT/good kill X` kills good's. (Before, the lane's folder
    only found the socket: weak's kill killed good's episode.)"""
    run = campaign_run(tmp_path, ("good", "X"))
    folders = [tmp_path, tmp_path / "good", tmp_path / "weak"]
    with contextlib.ExitStack() as locks:
        for folder in folders:   # each held as a campaign holds its folder and its lanes', naming its socket
            locks.enter_context(RunLock(folder, info={"socket": SOCKET_NAME}))
        async with contextlib.AsyncExitStack() as serving:
            for folder in folders:   # servers that know no lane: what the command carries decides
                await serving.enter_async_context(ControlServer(folder).serving(run))
            for verb in ("kill", "requeue", "pause", "resume"):
                assert await ctl_in(tmp_path / "weak", verb, "X") == 1, verb
                err = capsys.readouterr().err
                assert "lane weak runs no episode of task 'X' now (running: good/X on slot 0)" in err, err
            assert run.commands == []
            assert await ctl_in(tmp_path / "good", "kill", "X", "--json") == 0
            assert json.loads(capsys.readouterr().out) == {
                "ok": True, "slot": 0, "task": "X", "lane": "good",
                "message": "killing good/X on slot 0: recorded as killed, its steps kept"}
            assert run.commands == [("kill", 0, False)]
            assert await ctl_in(tmp_path, "requeue", "X") == 0   # the campaign's folder: only good runs X
            assert run.commands[-1] == ("kill", 0, True)
            # pause without a TASK in a lane's folder: that lane's arm (every repeat), as the console's `a` holds it
            assert await ctl_in(tmp_path / "weak", "pause") == 0
            said = capsys.readouterr().out
            assert said.endswith("arm weak (lanes weak, weak-r2): held (its running episodes go on)\n"), said
            assert await ctl_in(tmp_path / "weak", "resume", "--arm", "weak") == 0
            assert run.commands[-2:] == [("pause_lane", "weak", True), ("pause_lane", "weak", False)]
            assert await ctl_in(tmp_path / "weak", "pause", "--arm", "good") == 1   # not another lane's arm
            assert "addressed to lane weak (arm weak), it holds no other arm ('good')" in capsys.readouterr().err
            assert not run.dispatch_paused and len(run.commands) == 4


async def test_a_task_several_lanes_run_is_ambiguous_in_the_campaigns_folder_and_a_lanes_socket_scopes_old_clients(
        tmp_path, capsys):
    """good and weak both run X: `ctl OUT kill X` is refused naming both lanes and how to pick one; `ctl OUT/weak
    kill X` kills weak's. A lane's own socket scopes a task command that names no lane (an older client) to its lane;
    a command by slot (the console's keys) acts on that slot whatever the folder."""
    run = campaign_run(tmp_path, ("good", "X"), ("weak", "X"))
    folders = {"": tmp_path, "weak": tmp_path / "weak"}
    with contextlib.ExitStack() as locks:
        for folder in folders.values():
            locks.enter_context(RunLock(folder, info={"socket": SOCKET_NAME}))
        async with contextlib.AsyncExitStack() as serving:
            for lane, folder in folders.items():   # as campaign_launch serves them: a lane's knows its lane
                await serving.enter_async_context(ControlServer(folder, lane).serving(run))
            assert await ctl_in(tmp_path, "kill", "X") == 1
            err = capsys.readouterr().err
            assert "task 'X' is running in 2 lanes: good (slot 0), weak (slot 1); name one by its lane's folder" in err
            assert run.commands == []
            assert await ctl_in(tmp_path / "weak", "pause", "X") == 0
            assert capsys.readouterr().out == "weak/X on slot 1: paused\n"
            assert run.commands == [("pause_episode", 1, True)]
            # an older client: a kill by task with no lane, to weak's socket -> weak's episode; to the campaign's ->
            # still ambiguous
            old = await asyncio.to_thread(request, tmp_path / "weak", Kill(task="X"))
            assert isinstance(old, Done) and (old.slot, old.lane) == (1, "weak")
            assert run.commands[-1] == ("kill", 1, False)
            assert isinstance(await asyncio.to_thread(request, tmp_path, Kill(task="X")), Refused)
            by_slot = await asyncio.to_thread(request, tmp_path / "weak", Kill(slot=0))   # good's, by its slot
            assert isinstance(by_slot, Done) and by_slot.lane == "good" and run.commands[-1] == ("kill", 0, False)
            no_lane = await asyncio.to_thread(request, tmp_path, Kill(task="X", lane="nope"))
            assert isinstance(no_lane, Refused) and "no lane 'nope' in this run (its lanes: good, weak, weak-r2)" in \
                no_lane.error


def test_a_lanes_pause_of_its_arm_goes_to_every_shard_and_a_task_command_to_one():
    from om2w_tui.cli.ctl import for_every_shard
    from om2w_tui.protocol.control import Pause, Resume

    assert for_every_shard(Pause(lane="weak")) and for_every_shard(Resume(lane="weak"))
    assert not for_every_shard(Pause(task="X", lane="weak")) and not for_every_shard(Kill(task="X", lane="weak"))
