"""The zygote (episode/zygote.py, executors/local.py): a run's workers are forked from one process that imported
browser-use once. Real processes throughout: each forked worker is its own session and process group with its own
temp folder, says ready and exits as a started one does, its end seen with its code; a zygote that dies leaves its
workers' ends seen (lost, no code) and the next worker started plainly; one that cannot start is given up at once;
the executor's close ends it and leaves nothing in the temp folder. (The worker contract, tests/e2e/
test_worker_contract.py, runs real episodes in a forked worker; every run of the suite forks its workers.)"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from om2w_tui.executors.local import LocalExecutor, WorkerProcess, Zygote, python_module
from om2w_tui.protocol.worker import Exit, Exited, Ready

pytestmark = [pytest.mark.timeout(300)]


async def ended(worker: WorkerProcess) -> Exited:
    while not isinstance(ev := await asyncio.wait_for(worker.next_event(), 60), Exited):
        pass
    return ev


async def gone(pid: int) -> None:
    """Until `pid` is no process (a zombie still awaiting its reaper counts as gone)."""
    for _ in range(600):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still running")


@pytest.fixture
def own_temp(monkeypatch):
    """A temp folder of this test's own (the suite's other processes make theirs in the system's meanwhile), short
    as the system's: the executor makes the zygote's and the workers' folders in it, and they inherit it."""
    import shutil
    import tempfile

    temp = Path(tempfile.mkdtemp(prefix="z-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    yield temp
    shutil.rmtree(temp, ignore_errors=True)


async def test_workers_are_forked_from_one_zygote_each_its_own_group_and_end_as_started_ones(tmp_path, own_temp):
    ex = LocalExecutor(tmp_path)
    assert ex.zygote is not None
    try:
        a, b = await asyncio.gather(ex.start_worker(0), ex.start_worker(1))
        zygote = ex.zygote.proc
        assert zygote is not None and a.pid and b.pid and a.pid != b.pid
        assert ex.zygote.scratch is not None and ex.zygote.scratch.parent == own_temp
        for w in (a, b):
            p = psutil.Process(w.pid)
            assert p.ppid() == zygote.pid                     # forked, not started by us
            assert os.getsid(w.pid) == w.pid == os.getpgid(w.pid)   # a session and group of its own
            assert w.scratch is not None and w.scratch.is_dir() and w.scratch != ex.zygote.scratch
        assert await a.send(Exit())
        assert (await ended(a)).rc == 0                      # the zygote's report: the code it exited with
        b.kill_group()
        assert (await ended(b)).rc == -signal.SIGKILL
        assert not a.scratch.exists() and not b.scratch.exists()   # type: ignore[union-attr]
    finally:
        await ex.aclose()
    await gone(zygote.pid)
    assert list(own_temp.iterdir()) == []   # the zygote's folder too


async def test_a_zygote_that_dies_leaves_its_workers_ends_seen_and_the_next_started_plainly(tmp_path):
    ex = LocalExecutor(tmp_path)
    assert ex.zygote is not None
    try:
        a = await ex.start_worker(0)
        assert ex.zygote.proc is not None
        os.killpg(ex.zygote.proc.pid, signal.SIGKILL)
        await gone(ex.zygote.proc.pid)
        a.kill_group()
        assert (await ended(a)).rc is None                   # seen, by its pidfd; its code died with the zygote
        b = await ex.start_worker(1)
        assert ex.zygote.failed and psutil.Process(b.pid).ppid() == os.getpid()   # started plainly
        assert await b.send(Exit()) and (await ended(b)).rc == 0
    finally:
        await ex.aclose()


async def test_a_zygote_that_cannot_start_is_given_up_and_workers_start_plainly(tmp_path, monkeypatch):
    monkeypatch.setattr(Zygote, "command", (sys.executable, "-c", "import sys; sys.exit(3)"))
    ex = LocalExecutor(tmp_path)
    try:
        w = await ex.start_worker(0)
        assert ex.zygote is not None and ex.zygote.failed
        assert psutil.Process(w.pid).ppid() == os.getpid()
        assert await w.send(Exit()) and (await ended(w)).rc == 0
    finally:
        await ex.aclose()


async def test_a_forked_worker_says_ready_with_its_own_pid(tmp_path):
    ex = LocalExecutor(tmp_path)
    try:
        w = WorkerProcess(0, tmp_path / "worker_0.log", ex.env, (), ex.zygote)
        assert ex.zygote is not None and await ex.zygote.start(tmp_path / "worker_0.log")
        real_next = w.next_event
        seen: list[object] = []

        async def spy() -> object:
            ev = await real_next()
            seen.append(ev)
            return ev

        w.next_event = spy   # type: ignore[method-assign]
        await w.start()
        assert seen == [Ready(w.pid)]   # type: ignore[list-item]
        await w.kill()
    finally:
        await ex.aclose()


def test_the_zygote_starts_as_a_worker_does():
    assert Zygote.command == python_module("om2w_tui.episode.zygote")   # -P: never the user's folder on its path

