"""om2w_tui.engine.shared_pacing: pacing shared across runs through lock files, as the seed runner's --pace-dir.

Real files in tmp_path; "another run" is a second open file description (a second pacer) or another process holding
the flock, exactly what the kernel sees from a second om2w-tui or a seed runner."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import time

import pytest

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import EpisodeStarted, Log
from om2w_tui.engine.pacing import SitePacer
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.engine.shared_pacing import RETRY_S, SharedSitePacer, lock_names, make_pacer, seed_domain
from tests.fakes import FakeExecutor, Recorder


class Wall:
    """A wall clock the test moves (the `.last` stamps are real files with real mtimes)."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize("url, seed, key", [
    ("https://www.example.com/a/b", "example.com", "example.com"),
    ("http://127.0.0.1:8123/", "127.0.0.1:8123", "127.0.0.1:8123"),    # the offline suite: one name for both
    ("https://Shop.Example.org?q=1", "shop.example.org?q=1", "shop.example.org"),
    ("https://example.com:443/x", "example.com:443", "example.com"),
])
def test_the_seeds_name_and_the_site_key(url, seed, key):
    assert seed_domain(url) == seed
    assert site_key(url) == key
    assert set(lock_names(key, [url])) == {seed, key}


def test_credentials_never_name_a_file():
    names = lock_names("example.com", ["https://bob:hunter2@example.com/"])
    assert names == ("example.com",)
    assert not any("hunter2" in n for n in names)


def test_a_site_held_by_another_run_waits_then_its_cooldown_is_kept(tmp_path):
    wall = Wall()
    notes: list[str] = []
    a = SharedSitePacer(tmp_path, 60, wall=wall)
    b = SharedSitePacer(tmp_path, 60, wall=wall, note=notes.append)
    assert a.can_start("x.com", 0.0)
    a.acquire("x.com", 0.0)
    a.end_round()
    assert (tmp_path / "x.com.lock").exists()
    assert not b.can_start("x.com", 5.0) and b.held_elsewhere("x.com")
    assert not b.can_start("x.com", 6.0)
    assert len(notes) == 1 and "x.com" in notes[0] and "another run" in notes[0]   # said once per site
    assert b.next_ready(["x.com"], 6.0) == 6.0 + RETRY_S                            # tried again soon, not polled
    assert b.can_start("y.com", 6.0)                                                # other sites are not held
    b.end_round()

    a.release("x.com", 100.0)
    assert (tmp_path / "x.com.last").exists()
    assert a.can_start("y.com", 100.0) and a.cooling_until("x.com", 100.0) == 160.0   # its own stamp: no wall clock
    # the other run's cooldown becomes an ordinary deadline of this pacer (no retry timer for it)
    assert not b.can_start("x.com", 100.0) and not b.held_elsewhere("x.com")
    assert b.cooling_until("x.com", 100.0) == pytest.approx(160.0, abs=1.0)
    assert b.next_ready(["x.com"], 100.0) == pytest.approx(160.0, abs=1.0)
    wall.t += 61
    assert b.can_start("x.com", 161.0)
    b.acquire("x.com", 161.0)
    assert not a.can_start("x.com", 1e6)   # now b holds it


def test_a_lock_held_by_another_process_the_seed_way(tmp_path):
    """A seed-style holder: open(<dir>/<domain>.lock, 'a+') and flock(LOCK_EX), in another process."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); "
        "sys.stdin.read()"), str(tmp_path / "127.0.0.1:8123.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        p = SharedSitePacer(tmp_path, 0, names={"127.0.0.1:8123": lock_names("127.0.0.1:8123",
                                                                             ["http://127.0.0.1:8123/"])})
        assert not p.can_start("127.0.0.1:8123", 0.0) and p.held_elsewhere("127.0.0.1:8123")
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert p.can_start("127.0.0.1:8123", 1.0)


def test_the_seed_sees_our_episode_and_our_cooldown(tmp_path):
    """What the seed's Pacer.try_acquire does, step by step, against a site this pacer holds and then releases."""
    p = SharedSitePacer(tmp_path, 0)
    p.acquire("x.com", 0.0)

    def seed_try(cooldown: float) -> bool:
        with open(tmp_path / "x.com.lock", "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            stamp = tmp_path / "x.com.last"
            return not (stamp.exists() and time.time() - stamp.stat().st_mtime < cooldown)

    assert not seed_try(0)           # held while our episode runs
    before = time.time()
    p.release("x.com", 10.0)
    assert (tmp_path / "x.com.last").stat().st_mtime >= before - 1
    assert not seed_try(120)         # our episode's end starts the seed's cooldown
    assert seed_try(0)


def test_a_round_that_does_not_start_a_site_leaves_it_free(tmp_path):
    a, b = SharedSitePacer(tmp_path, 0), SharedSitePacer(tmp_path, 0)
    assert a.can_start("x.com", 0.0)     # considered, not started
    assert not b.can_start("x.com", 0.0)
    a.end_round()
    assert b.can_start("x.com", 0.0)


def test_several_episodes_on_a_site_share_its_lock(tmp_path):
    a, b = SharedSitePacer(tmp_path, 0, per_site=2), SharedSitePacer(tmp_path, 0)
    a.acquire("x.com", 0.0)
    a.acquire("x.com", 0.0)
    a.end_round()
    a.release("x.com", 1.0)
    assert not b.can_start("x.com", 1.0)   # one still runs: still held
    a.release("x.com", 2.0)
    assert b.can_start("x.com", 2.0)


def test_an_episode_that_never_reached_the_site_stamps_nothing(tmp_path):
    a = SharedSitePacer(tmp_path, 60)
    a.acquire("x.com", 0.0)
    a.release_without_cooldown("x.com")
    assert not (tmp_path / "x.com.last").exists()
    assert SharedSitePacer(tmp_path, 60).can_start("x.com", 0.0)


def test_a_cooldown_widened_by_one_run_holds_the_next_run_too(tmp_path):
    """A bot wall seen by run a widens the site's cooldown for run b as well: b adopts it when it takes the site, so
    a's stamp is waited out with the widened cooldown, and so are b's own episodes; relaxing shares back down."""
    wall = Wall()
    notes: list[str] = []
    a = SharedSitePacer(tmp_path, 10, wall=wall)
    b = SharedSitePacer(tmp_path, 10, wall=wall, note=notes.append)
    a.acquire("x.com", 0.0)
    a.end_round()
    assert a.widen("x.com") == 60.0
    assert (tmp_path / "x.com.cooldown").read_text() == "60\n"
    a.release("x.com", 1.0)
    wall.t += 11                                  # past the run's own 10 s, within the widened 60 s
    assert not b.can_start("x.com", 11.0)
    assert b.state("x.com").cooldown == 60.0
    assert b.cooling_until("x.com", 11.0) == pytest.approx(60.0, abs=1.0)
    assert [n for n in notes if "widened" in n] == ["x.com: another run widened its cooldown; it is now 60 s here too"]
    wall.t += 50
    assert b.can_start("x.com", 61.0)
    b.acquire("x.com", 61.0)
    b.release("x.com", 62.0)
    assert b.cooling_until("x.com", 62.0) == 122.0  # b's own episode keeps the widened cooldown
    assert b.relax("x.com") == 35.0               # a clean episode: the excess halves, shared at once
    assert (tmp_path / "x.com.cooldown").read_text() == "35\n"
    while b.relax("x.com") > 10.0:
        pass
    assert not (tmp_path / "x.com.cooldown").exists()   # back to the default: nothing left to share
    assert len([n for n in notes if "widened" in n]) == 1


@pytest.mark.parametrize("text", ["", "soon", "-5", "inf", "nan"])
def test_a_cooldown_file_that_is_not_a_number_is_ignored(tmp_path, text):
    (tmp_path / "x.com.cooldown").write_text(text)
    p = SharedSitePacer(tmp_path, 10)
    assert p.can_start("x.com", 0.0) and p.state("x.com").cooldown == 10.0


def test_a_shared_cooldown_never_exceeds_the_cap(tmp_path):
    (tmp_path / "x.com.cooldown").write_text("1e9\n")
    p = SharedSitePacer(tmp_path, 10)
    assert p.can_start("x.com", 0.0) and p.state("x.com").cooldown == p.cap


def test_without_a_pace_dir_the_pacer_is_the_in_process_one(tmp_path):
    t = Task("t1", "do", "https://www.a.com/", "easy")
    assert type(make_pacer(None, 10, 1, [t])) is SitePacer
    shared = make_pacer(tmp_path / "pace", 10, 1, [t])
    assert isinstance(shared, SharedSitePacer) and shared.names("a.com") == ("a.com",)


@pytest.mark.looptime
async def test_the_scheduler_waits_for_another_run_and_starts_within_the_retry(tmp_path):
    """A site held by another run: the rest of the run goes on, the site shows as held elsewhere, and the moment
    the other run lets go an episode starts there (within RETRY_S); meanwhile dispatch wakes every RETRY_S at most."""
    pace = tmp_path / "pace"
    pace.mkdir()
    fd = os.open(pace / "a.com.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    tasks = [Task("a-0", "do", "https://www.a.com/", "easy"), Task("b-0", "do", "https://b.com/", "easy")]
    rec = Recorder()
    events = rec.timed

    cfg = RunConfig(out=tmp_path / "run", workers=2, pace_cooldown=0, pace_dir=pace)
    sched = Scheduler(cfg, tasks, FakeExecutor(), [rec])
    loop = asyncio.get_running_loop()
    seen: dict[str, str] = {}

    def look() -> None:
        seen.update({s.site: s.state for s in sched.snapshot().sites})

    def let_go() -> None:
        look()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    rounds = 0
    dispatch = sched._dispatch

    def counted() -> None:
        nonlocal rounds
        rounds += 1
        dispatch()

    sched._dispatch = counted   # type: ignore[method-assign]
    t0 = loop.time()
    loop.call_at(t0 + 100.0, let_go)
    await sched.run()
    assert rounds <= 100.0 / RETRY_S + 20
    starts = {ev.task_id: t for t, ev in events if isinstance(ev, EpisodeStarted)}
    assert starts["b-0"] - t0 < 1.0
    assert t0 + 100.0 <= starts["a-0"] <= t0 + 100.0 + RETRY_S + 0.01
    assert seen["a.com"] == "held elsewhere"
    held = [ev for _, ev in events if isinstance(ev, Log) and "held by another run" in ev.message]
    assert len(held) == 1 and held[0].level == "warning"


@pytest.mark.looptime
async def test_no_slot_is_kept_idle_for_a_site_another_run_holds(tmp_path):
    """The last free slot may wait for the cooldown of the site whose chain sets the run's length; it does not wait
    for a site another run holds (that may last any time)."""
    pace = tmp_path / "pace"
    pace.mkdir()
    fd = os.open(pace / "a.com.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    tasks = [Task(f"{s}-{i}", "do", f"https://{s}/", "easy") for s, n in (("a.com", 5), ("c.com", 2), ("b.com", 1))
             for i in range(n)]
    rec = Recorder()
    cfg = RunConfig(out=tmp_path / "run", workers=2, pace_cooldown=60, pace_dir=pace)
    sched = Scheduler(cfg, tasks, FakeExecutor(), [rec])
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    loop.call_at(t0 + 300.0, lambda: (fcntl.flock(fd, fcntl.LOCK_UN), os.close(fd)))
    await sched.run()
    starts = {ev.task_id: t for t, ev in rec.timed if isinstance(ev, EpisodeStarted)}
    assert starts["c.com-0"] - t0 < 1.0 and starts["b.com-0"] - t0 < 1.0
    a_starts = sorted(t for tid, t in starts.items() if tid.startswith("a.com"))
    assert a_starts[0] >= t0 + 300.0
    # its own stamps in the directory do not count twice: one episode every 30 s + 60 s of cooldown
    assert all(nxt - prev == pytest.approx(90.0, abs=1.5) for prev, nxt in zip(a_starts, a_starts[1:]))
