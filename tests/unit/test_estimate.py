"""The lengths the ETA is told (engine/estimate.py): the fit of the done episodes, the seconds left of one under way,
and the scale the episodes under way put back."""

from __future__ import annotations

import pytest

from om2w_tui.engine.estimate import Lengths, fit, scaled


def test_the_fit_finds_the_overhead_and_the_seconds_per_unit():
    done = [(u, 10.0 + 17.0 * u) for u in range(2, 13)]
    got = fit(done, prior_per_unit=20.0)
    assert got.overhead == pytest.approx(10.0) and got.per_unit == pytest.approx(17.0)
    assert got.ratios == pytest.approx([1.0] * len(done))
    assert got.work(3, 30.0) == pytest.approx(3 * 10.0 + 17.0 * 30.0)


def test_with_nothing_done_or_one_length_of_task_the_fit_is_seconds_per_unit_alone():
    assert fit([], prior_per_unit=20.0) == Lengths(0.0, 20.0)
    same = fit([(1.0, 100.0), (1.0, 300.0)], prior_per_unit=20.0)   # WebVoyager: no reference lengths
    assert (same.overhead, same.per_unit) == (0.0, pytest.approx(200.0))
    assert same.ratios == pytest.approx([0.5, 1.5])
    falling = fit([(2.0, 300.0), (10.0, 100.0)], prior_per_unit=20.0)   # no line with a positive slope
    assert falling.overhead == 0.0 and falling.per_unit == pytest.approx(400.0 / 12.0)


def test_an_episode_under_way_has_what_the_done_ones_longer_than_it_still_took():
    lengths = Lengths(0.0, 10.0, ratios=(2.0, 0.5, 1.0))    # 10 units: done ones as long would take 200, 50, 100 s
    assert lengths.seconds_left(10.0, 0.0) == pytest.approx(350.0 / 3)
    assert lengths.seconds_left(10.0, 120.0) == pytest.approx(80.0)     # only the 200 s one outlasts 120 s
    assert lengths.seconds_left(10.0, 300.0) == pytest.approx(300.0)    # beyond them all: as long again


def test_the_episodes_under_way_put_back_what_the_done_ones_hide():
    lengths = Lengths(0.0, 10.0)
    done = [(10.0, 100.0)] * 3                         # as expected
    assert scaled(lengths, done, []).scale == pytest.approx(1.0)
    long_one = [(10.0, 250.0, 150.0)]                  # under way for 250 s, 150 s more expected: 400 s
    got = scaled(lengths, done, long_one)
    assert got.scale == pytest.approx((300.0 + 400.0) / 400.0)
    assert got.expected(10.0) == pytest.approx(175.0) and got.work(2, 20.0) == pytest.approx(350.0)
