"""The dispatcher's index against a scan of every site: after any sequence of queue, pacer and learning changes, the
indexed choice, the critical site and the next cooldown's end are the ones the scan finds (ties included)."""

from __future__ import annotations

import random

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.dispatch import Dispatcher
from om2w_tui.engine.pacing import SitePacer


def make(rng: random.Random, sites: int, tasks: int, per_site: int, cooldown: float) -> tuple[Dispatcher, list[Task]]:
    ts = []
    for i in range(tasks):
        ref = rng.choice([None, 1, 2, 3, 5, 9, 20])   # repeated lengths make ties (with a cooldown of 20 s too)
        ts.append(Task(f"t{i}", "do", f"https://s{rng.randrange(sites)}.com/", "easy",
                       {"reference_length": ref} if ref else {}))
    d = Dispatcher(SitePacer(cooldown, per_site), ts)
    assert d.indexed
    return d, ts


def check(d: Dispatcher, now: float, slots: tuple[int, int]) -> None:
    assert d._best_ready(now) == d.scan_pick(now)
    crit, chain = d._best(d._all)
    assert (crit, chain) == d.scan_critical() or (chain == 0.0 and d.scan_critical()[0] is None)
    queued = [s for s, q in d.queue.items() if q]
    assert d.next_ready(now) == d.pacer.next_ready(queued, now)
    assert d.pick(now, lambda: slots) in (None, d.scan_pick(now))
    assert d.pending == sum(len(q) for q in d.queue.values())
    assert d.queued_units == pytest.approx(sum(d.site_units.values()))


@pytest.mark.parametrize("seed", range(16))
def test_the_index_chooses_as_the_scan_does(seed):
    rng = random.Random(seed)
    per_site = [1, 1, 2, 0][seed % 4]
    d, tasks = make(rng, sites=rng.choice([3, 12, 40]), tasks=rng.choice([30, 120]), per_site=per_site,
                    cooldown=rng.choice([0.0, 20.0, 20.0, 120.0]))
    for t in tasks:
        d.push(t)
    d.sort_sites()
    now, running = 0.0, []
    for _ in range(600):
        check(d, now, (rng.randint(0, 3), rng.randint(1, 4)))
        op = rng.random()
        if op < 0.35:
            site = d.scan_pick(now)
            if site is not None:
                t = d.take(site)
                d.acquire(site, now)
                running.append(t)
        elif op < 0.65 and running:
            t = running.pop(rng.randrange(len(running)))
            kind = rng.random()
            if kind < 0.15:
                d.widen(t.site)
            elif kind < 0.5:
                d.relax(t.site)
            if kind < 0.9:
                d.release(t.site, now)
            else:
                d.release_without_cooldown(t.site)
            if rng.random() < 0.3:
                d.push(t, front=True)   # retried: back at the front
            elif rng.random() < 0.5:   # learnt lengths: whole seconds keep chains tied across groups now and then
                d.learn(t.task_id, "done", rng.uniform(10, 900))
        elif op < 0.9:
            now += rng.choice([0.0, 0.0005, 1.0, 30.0, 119.9995, 120.0, 500.0])
        elif op < 0.95:
            d.push(Task(f"new{rng.randrange(10**6)}", "do", f"https://late{rng.randrange(3)}.com/", "easy", {}))
        else:
            d._rebuild()
    check(d, now, (1, 3))


def test_many_changes_keep_the_heaps_bounded():
    rng = random.Random(7)
    d, tasks = make(rng, sites=50, tasks=200, per_site=1, cooldown=10.0)
    for t in tasks:
        d.push(t)
    now = 0.0
    for _ in range(5000):
        site = d.scan_pick(now)
        if site is None:
            now += 11.0
            continue
        t = d.take(site)
        d.acquire(site, now)
        d.release(site, now)
        d.push(t)
    entries = sum(g.size() for g in d._all.values()) + len(d._cooling)
    assert entries <= 8 * (len(d.queue) + 8) + 2


@pytest.mark.parametrize("first", ["a.com", "b.com"])
def test_equal_chains_on_different_queue_lengths_go_to_the_site_queued_first(first):
    # a.com: one task of 3 units (60 s at the prior 20 s a unit); b.com: two of 1 unit and a 20 s cooldown between
    a = [Task("a0", "do", "https://a.com/", "easy", {"reference_length": 3})]
    b = [Task(f"b{i}", "do", "https://b.com/", "easy", {"reference_length": 1}) for i in range(2)]
    tasks = a + b if first == "a.com" else b + a
    d = Dispatcher(SitePacer(20.0, 1), tasks)
    for t in tasks:
        d.push(t)
    assert d.chain("a.com", 1) == d.chain("b.com", 2) == 60.0
    assert d._best_ready(0.0) == d.scan_pick(0.0) == first
    assert d._best(d._all)[0] == first
