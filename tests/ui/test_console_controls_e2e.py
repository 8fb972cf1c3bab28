"""The console's remaining controls on a real run (offline sites, the oracle, worker processes, Chromium): `-` retires
a slot and its worker, `r` runs the errored tasks again, and a second ctrl+c ends a stuck episode's processes at
once. Each is checked by its effect on the run: records, processes, the engine's events."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from om2w_tui.engine.events import EpisodeFinished, EpisodeStarted, EpisodeStep, RunFinished, SlotChanged

from .pilots import app_exits, console, our_chromium, records, still_alive, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def test_minus_retires_a_slot_after_its_episode_and_ends_its_worker(tmp_path):
    ids = ["offline_shop_compare_04", "offline_wiki_port_06", "offline_booking_rates_11"]
    app, rec, out = console(tmp_path, ids, workers=2)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "two episodes stepping", lambda: {e.slot for e in rec.of(EpisodeStep)} == {0, 1})
        workers = {s.id: s.worker.pid for s in app.control.slots.values() if s.worker is not None}
        assert set(workers) == {0, 1}
        pressed = len(rec.events)
        await pilot.press("minus")
        retired = await until(pilot, "a slot retired", lambda: rec.of(SlotChanged, state="retired"))
        gone = retired[0].slot
        assert rec.of(EpisodeFinished, slot=gone)            # only once its episode ended
        await until(pilot, "the retired slot's worker ended", lambda: not alive(workers[gone]))
        await until(pilot, "the run's end", lambda: rec.of(RunFinished))
        later = rec.events[pressed:]
        assert [e.slot for e in later if isinstance(e, EpisodeStarted)] and all(
            e.slot != gone for e in later if isinstance(e, EpisodeStarted))
        await pilot.press("q")
        await app_exits(app)
    assert sorted((r["task_id"], r["status"]) for r in records(out)) == sorted((t, "done") for t in ids)


async def test_r_runs_the_errored_tasks_again(tmp_path):
    tid, other = "offline_shop_cart_05", "offline_wiki_admin_10"   # seven and eight slow steps
    app, rec, out = console(tmp_path, [tid, other], model="oracle-slow-2", workers=2, retries=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "both episodes stepping", lambda: {e.task_id for e in rec.of(EpisodeStep)} == {tid, other})
        slot = next(s for s in app.control.slots.values() if s.episode and s.episode.task.task_id == tid)
        victims = [p for p in psutil.Process(slot.worker.pid).children(recursive=True) if "chrom" in p.name()]
        assert victims
        for p in victims:
            p.kill()
        failed = await until(pilot, "the crashed attempt's record", lambda: rec.of(EpisodeFinished, slot=slot.id))
        assert (failed[0].record.status, failed[0].record.error_kind) == ("error", "infra")
        assert not failed[0].requeued and (failed[0].done, failed[0].errors) == (1, 1)   # no retries left
        await pilot.pause(1.0)
        assert not rec.of(EpisodeStarted, attempt=2)                                     # nothing runs it again
        await pilot.press("r")
        again = await until(pilot, "the second attempt", lambda: rec.of(EpisodeStarted, attempt=2))
        assert again[0].task_id == tid
        await until(pilot, "the run's end", lambda: rec.of(RunFinished))
        assert (rec.of(EpisodeFinished)[-1].done, rec.of(EpisodeFinished)[-1].errors) == (2, 0)
        await pilot.press("q")
        await app_exits(app)
    mine = [(r["attempt"], r["status"]) for r in records(out) if r["task_id"] == tid]
    assert mine == [(1, "error"), (2, "done")]


async def test_a_second_ctrl_c_ends_a_stuck_episode_at_once_keeping_its_steps(tmp_path):
    tid = "offline_wiki_admin_10"
    app, rec, out = console(tmp_path, [tid], model="oracle-slow-2", stop_grace=120)
    seen: dict[int, tuple[float, str]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, "a first step", lambda: rec.of(EpisodeStep))
        await until(pilot, "its browser", lambda: seen.update(our_chromium()) or seen)
        worker = app.control.slots[0].worker
        os.kill(worker.pid, signal.SIGSTOP)                  # stuck: it will not answer the graceful stop
        try:
            await pilot.press("ctrl+c")
            await until(pilot, "the episode asked to stop", lambda: rec.of(SlotChanged, state="stopping"))
            await pilot.pause(2.0)
            assert not rec.of(EpisodeFinished)              # a stuck worker: the graceful stop waits (120 s)
            t0 = time.monotonic()
            await pilot.press("ctrl+c")
            await app_exits(app, timeout=60)
            assert time.monotonic() - t0 < 30
        finally:
            if alive(worker.pid):
                os.killpg(worker.pid, signal.SIGKILL)
    assert app.return_code == 130
    (r,) = records(out)
    assert (r["status"], r["error"]) == ("killed", "interrupted")
    assert r["actions"] >= 1 and r["screenshots"] >= 1       # its steps, read back from the folder it left
    assert still_alive(seen) == [] and not alive(worker.pid)
