"""The ledger of where each task is: one place at a time, and the counts that go with it."""

from __future__ import annotations

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.ledger import Ledger

A, B = Task("a-0", "x", "https://a.com/", "easy"), Task("b-0", "y", "https://b.com/", "easy")


def test_a_task_is_in_one_place_at_a_time():
    led = Ledger()
    led.add(A)
    assert led.queue(A) and not led.queue(A)              # queued twice: refused
    assert led.start(A) == 1 and led.where("a-0") == "running"
    assert not led.queue(A)                               # queued while it runs: refused
    led.leave(A)
    assert led.where("a-0") is None
    led.settle(A, error=True)
    assert not led.queue(A) and (led.done, led.errors) == (1, 1) and led.errored == {"a-0": A}
    with pytest.raises(AssertionError):
        led.start(A)                                      # run after it settled: never
    assert led.unsettle(A) and not led.unsettle(A)
    assert (led.done, led.errors, led.sites["a.com"].done) == (0, 0, 0) and led.queue(A)


def test_an_attempt_that_never_reached_its_worker_is_not_counted():
    led = Ledger()
    led.add(B)
    led.attempts["b-0"] = 2                               # two attempts in an earlier run
    led.queue(B)
    assert led.start(B) == 3
    led.leave(B, ran=False)
    assert led.attempts["b-0"] == 2 and led.queue(B) and led.start(B) == 3


def test_settled_before_is_given_back_with_the_task():
    led = Ledger()
    led.add(A)
    led.settle(A, error=False, before=True)
    assert led.settled_before == {"a-0"} and led.sites["a.com"].done == 1
    led.unsettle(A)
    assert led.settled_before == set() and led.count_retry(A) == 1 and led.count_free_restart(A) == 1
