"""What the ETA is told of the work left, in a snapshot: each episode under way's expected seconds left, and each
site's queued work in seconds. Learnt from the latest done episodes (their reference lengths and seconds): a length
is an overhead (the browser's start, the first page) and seconds per unit of reference length, fitted by least
squares; what a run's first hours hide is put back (the episodes that end first are the short ones, those still under
way the long ones: each under way counts at the length it is expected to reach). bench/eta.py measures the ETA built
on these against the time the run took. Pure functions of the numbers given."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Lengths:
    """An episode's expected seconds: `overhead + per_unit * units`, times `scale` (what the episodes under way say
    beyond the done ones); `ratios`: each done episode's seconds over what the fit expected of it."""
    overhead: float
    per_unit: float
    ratios: tuple[float, ...] = ()      # ascending
    scale: float = 1.0
    tails: tuple[float, ...] = field(default=(), repr=False, compare=False)   # tails[i] = sum(ratios[i:])

    def __post_init__(self) -> None:
        if self.ratios and not self.tails:
            ratios = tuple(sorted(self.ratios))
            object.__setattr__(self, "ratios", ratios)
            object.__setattr__(self, "tails", tuple(itertools.accumulate(reversed(ratios)))[::-1])

    def expected(self, units: float) -> float:
        return (self.overhead + self.per_unit * units) * self.scale

    def work(self, n: int, units: float) -> float:
        """The expected seconds of `n` episodes of `units` in all."""
        return (self.overhead * n + self.per_unit * units) * self.scale

    def seconds_left(self, units: float, elapsed: float) -> float:
        """Expected seconds left of an episode of `units` under way for `elapsed`: of the lengths the done episodes'
        ratios give it, those beyond `elapsed`, the mean of what they still take; where none is (it runs longer than
        any done so far would at its units), as long again as it has run, a long tail's way."""
        base = self.overhead + self.per_unit * units
        i = bisect.bisect_right(self.ratios, elapsed / base) if base > 0 else len(self.ratios)
        if i < len(self.ratios):   # a bisection and a sum kept: a snapshot of 1,000 slots asks it 1,000 times
            return base * self.tails[i] / (len(self.ratios) - i) - elapsed
        return max(elapsed, base)


def fit(done: Sequence[tuple[float, float]], prior_per_unit: float) -> Lengths:
    """Fit `overhead + per_unit * units` to the done episodes' (units, seconds) by least squares, neither below 0;
    with too few or all of the same units, seconds per unit alone (the prior before any is done)."""
    if not done:
        return Lengths(0.0, prior_per_unit)
    n = len(done)
    mu = sum(u for u, _ in done) / n
    md = sum(d for _, d in done) / n
    var = sum((u - mu) ** 2 for u, _ in done)
    slope = sum((u - mu) * (d - md) for u, d in done) / var if var > 0 else 0.0
    overhead = md - slope * mu
    if var <= 0 or slope <= 0 or overhead < 0:   # no line to fit: seconds per unit alone
        total_u = sum(u for u, _ in done)
        overhead, slope = (0.0, md / mu) if total_u > 0 else (md, 0.0)
    lengths = Lengths(overhead, slope)
    return Lengths(overhead, slope, tuple(d / lengths.expected(u) for u, d in done if lengths.expected(u) > 0))


def scaled(lengths: Lengths, done: Iterable[tuple[float, float]],
           under_way: Iterable[tuple[float, float, float]]) -> Lengths:
    """`lengths` scaled so that the done episodes (units, seconds) and those under way (units, seconds so far,
    expected seconds left), each at the length it is expected to reach, are as long in all as expected: counting
    only the done ones would take the short episodes that end first for the rule."""
    seconds = expected = 0.0
    for u, d in done:
        seconds, expected = seconds + d, expected + lengths.expected(u)
    for u, elapsed, left in under_way:
        seconds, expected = seconds + elapsed + left, expected + lengths.expected(u)
    scale = seconds / expected if expected > 0 and seconds > 0 else 1.0
    return Lengths(lengths.overhead, lengths.per_unit, lengths.ratios, scale, lengths.tails)


__all__ = ["Lengths", "fit", "scaled"]
