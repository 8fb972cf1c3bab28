"""engine/machine.py: no more worker slots than the machine's memory holds, and no more starting at once than its
cores take (issue 26 item 13: `ctl workers 120` on a 2-core, 24 GiB machine started 116 workers within 10 s)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import apply
from om2w_tui.engine.machine import Room, available_bytes, slot_room, too_many_workers
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.engine.start_rate import PacedStarts
from om2w_tui.protocol.control import Done, Workers
from tests.fakes import FakeExecutor

REPO = Path(__file__).resolve().parents[2]


def meminfo(tmp_path: Path, gib: float) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       25165824 kB\nMemFree:         1000000 kB\n"
                    f"MemAvailable:   {int(gib * (1 << 20))} kB\nBuffers:          100000 kB\n")
    return path


def test_the_room_is_the_available_memory_over_a_slots_share(tmp_path):
    assert available_bytes(meminfo(tmp_path, 12)) == 12 << 30
    room = slot_room(0.5, meminfo(tmp_path, 12))
    assert room is not None and room.slots == 24 and "12.0 GiB of memory available at 0.5 GiB a slot" in room.why
    assert slot_room(0, meminfo(tmp_path, 12)) is None              # --slot-memory 0: the user knows better
    assert slot_room(0.5, tmp_path / "no-such-file") is None        # a machine that does not say: no bound
    problem = too_many_workers(120, 0.5, meminfo(tmp_path, 12))
    assert problem.startswith("--workers 120: this machine holds 24: 12.0 GiB") and "--workers 24 or fewer" in problem
    assert too_many_workers(24, 0.5, meminfo(tmp_path, 12)) == ""


def test_a_slot_smaller_than_a_byte_is_a_byte_not_an_overflow(tmp_path):
    """--slot-memory 1E-307 (found by the flag fuzz): the quotient was inf and int() raised; now every byte is a
    slot, a bound no --workers reaches."""
    room = slot_room(1e-307, meminfo(tmp_path, 12))
    assert room is not None and room.slots == 12 << 30
    assert too_many_workers(1024, 1e-307, meminfo(tmp_path, 12)) == ""


def test_a_run_asking_more_workers_than_memory_holds_is_refused(tmp_path):
    """As a process: exit 2 before anything is written, saying how many fit and why (a slot of 1024 GiB: no test
    machine holds two)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model",
                           "oracle", "--workers", "2", "--slot-memory", "1024", "--out", str(tmp_path / "run")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--workers 2: this machine holds 0: " in proc.stderr and "at 1024 GiB a slot" in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.looptime
async def test_slots_added_live_stop_at_what_the_memory_holds_and_say_why(tmp_path):
    """`ctl workers 120` (through the control socket's `apply`, as `ctl` and the console's + reach the run) on a
    machine with room for 10 more: 11 kept, the reply says why."""
    tasks = [Task(f"t{i}", "do", f"https://s{i}.com/", "easy") for i in range(40)]
    room = Room(10, "5.0 GiB of memory available at 0.5 GiB a slot")
    sched = Scheduler(RunConfig(out=tmp_path / "run", workers=1, pace_cooldown=0), tasks, FakeExecutor(),
                      slot_room=lambda: room)
    running = asyncio.ensure_future(sched.run())
    await asyncio.sleep(5)             # the first worker is up
    reply = apply(sched, Workers(120))
    assert isinstance(reply, Done) and reply.workers == 11 and sched.target_workers == 11
    assert reply.message == "workers 120: 11 kept, as many as this machine holds: 5.0 GiB of memory available at " \
                            "0.5 GiB a slot"
    assert sum(not s.retired for s in sched.slots.values()) == 11
    # the ten new workers are not up yet: they count against the memory still shown as available
    assert sched.set_workers(12) != "" and sched.target_workers == 11
    assert sched.set_workers(3) == "" and sched.target_workers == 3   # fewer is always taken
    sched.stop(force=True)
    await running


@pytest.mark.looptime
async def test_workers_start_no_more_at_once_than_the_cores_take():
    """Each start (browser-use's import, a Chromium) takes 3 s here; two cores: two under way at once, the next
    when one said ready; the rate alone (8 a second) let all six start in the first second."""
    inner = FakeExecutor(start_s=3.0)
    paced = PacedStarts(inner, rate=8, at_once=2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    ready: list[float] = []

    async def start(slot: int) -> None:
        await paced.start_worker(slot)
        ready.append(round(loop.time() - t0, 3))

    await asyncio.gather(*(start(i) for i in range(6)))
    assert ready == [3.0, 3.0, 6.0, 6.0, 9.0, 9.0]
    assert inner.started == list(range(6))


def test_a_ray_node_on_this_machine_is_held_to_its_memory_too(tmp_path, monkeypatch):
    """`--executor ray` on this machine's loopback (a one-machine cluster): the actors' workers and browsers share
    its memory, so the preflight refuses what does not fit, as for local workers; a cluster elsewhere is not."""
    import socket

    pytest.importorskip("ray")
    from om2w_tui.engine.launch import _check_settings

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with socket.socket() as listening:   # stands for the head's GCS port: check_address only connects
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        here = f"127.0.0.1:{listening.getsockname()[1]}"
        cfg = RunConfig(out=tmp_path / "run", executor="ray", ray_address=here, workers=2, slot_memory=1024)
        assert _check_settings(cfg).startswith("--workers 2: this machine holds 0: ")
        assert _check_settings(RunConfig(out=tmp_path / "run", executor="ray", ray_address="auto", workers=2,
                                         slot_memory=1024)) == ""
