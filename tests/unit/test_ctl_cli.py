"""`om2w-tui ctl` and `attach` on bad usage or a folder where no run listens: a clear message naming OUT and what
to do, exit code 2; a refusal of the run: exit 1 (against a stand-in run; a real one in tests/e2e/test_ctl.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from om2w_tui.cli.main import main
from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
from om2w_tui.engine.runlock import RunLock
from tests.unit.test_control_socket import FakeRun


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
        assert status["running"][0]["task_id"] == "t-a" and status["target_workers"] == 2
        assert await asyncio.to_thread(main, ["ctl", str(tmp_path), "status"]) == 0
        assert "slot 0  running  t-a  step 2" in capsys.readouterr().out
