"""`om2w-tui ctl` and `attach` on bad usage or a folder where no run listens: a clear message naming OUT and what
to do, exit code 2; a refusal of the run: exit 1 (against a stand-in run; a real one in tests/e2e/test_ctl.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from om2w_tui.cli.ctl import SENT
from om2w_tui.cli.main import main
from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
from om2w_tui.engine.runlock import RunLock
from om2w_tui.protocol.control import COMMANDS
from tests.fakes import FakeRun


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


def test_status_names_each_lane_as_a_lane_of_its_arm_with_its_verdicts():
    from om2w_tui.cli.ctl import status_lines
    from om2w_tui.engine.events import LaneRow, RunSnapshot, RunSummary
    from om2w_tui.protocol.control import RunInfo

    lanes = (LaneRow("base", "base", 1, total=4, settled_before=1, done=3, correct=2, judged=3),
             LaneRow("base-r2", "base", 2, total=4, done=1, errors=1, paused=True))
    snap = RunSnapshot(now=1.0, slots=[], target_workers=2, summary=RunSummary(total=8, lanes=lanes), lanes=lanes)
    lines = status_lines(RunInfo(out="/runs/c", pid=1), snap)
    assert "lane base (arm base, repeat 1): 3/4 done (1 before), 0 errors, correct 2 of 3" in lines
    assert "lane base-r2 (arm base, repeat 2): 1/4 done (0 before), 1 errors, paused" in lines
    assert not any(line.startswith("arm ") for line in lines)
