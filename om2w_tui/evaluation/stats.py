"""The statistics of a benchmark's success rates, in plain `math`: the Wilson score interval of a rate, Cohen's kappa
of two raters, McNemar's exact test of two arms on the same tasks, the interval of their paired difference, the
mean and spread of several runs, and a mean's t interval (two arms' difference over their repeats, paired by task).

Why these: a rate over a few hundred tasks moves by several points from run to run, so every rate is shown with its
95% interval (Wilson's: right near 0% and 100%, where the textbook one says nonsense such as [-3%, 9%]); two arms
run on the same tasks are compared on the tasks only one of them solved (McNemar), not as two independent rates; a
judge's agreement with humans is read beside kappa, which discounts the agreement two raters reach by chance.
No scipy: the engine stays light to import, and each formula is a few lines.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054   # the standard normal's 97.5th percentile: a two-sided 95% interval


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of `successes` out of `n` (None when n is 0). Unlike the normal approximation it
    stays inside [0, 1] and is not empty at 0 or n successes."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # exactly 0 and 1 at the ends (the subtraction leaves a rounding crumb there)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def cohen_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of a square table of counts (rows: one rater's category, columns: the other's, in the same
    order): (observed agreement - chance agreement) / (1 - chance agreement). None for an empty table; 1.0 when
    both raters put everything in one category (they agree, and chance would too)."""
    n = sum(sum(row) for row in table)
    if n == 0:
        return None
    k = len(table)
    observed = sum(table[i][i] for i in range(k)) / n
    rows = [sum(table[i]) / n for i in range(k)]
    cols = [sum(table[i][j] for i in range(k)) / n for j in range(k)]
    chance = sum(r * c for r, c in zip(rows, cols))
    if chance >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return float((observed - chance) / (1 - chance))


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact test (two-sided): the chance, if both arms were equally good, of a split of the discordant
    tasks at least as lopsided as `b` solved only by the first arm against `c` only by the second. It is the binomial
    test of min(b, c) in b + c tries at one half; 1.0 when there are no discordant tasks."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / (1 << n))


@dataclass(frozen=True)
class PairedDifference:
    """Two arms on the same `n` tasks: `both` solved by both, `only_a`, `only_b`, `neither`; `difference` is A's
    rate minus B's (in [-1, 1]) with its 95% interval (Newcombe's hybrid score interval for paired data), and `p`
    McNemar's exact p."""

    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    difference: float | None
    low: float | None
    high: float | None
    p: float


def paired_difference(both: int, only_a: int, only_b: int, neither: int, z: float = Z95) -> PairedDifference:
    """A's rate minus B's on paired tasks, with Newcombe's interval (his method 10, 1998: the two rates' Wilson
    intervals combined with the correlation of the pairs), which keeps its coverage where a difference of proportions
    by the normal approximation does not (few tasks, rates near 0% or 100%)."""
    n = both + only_a + only_b + neither
    p = mcnemar_exact(only_a, only_b)
    if n == 0:
        return PairedDifference(0, 0, 0, 0, 0, None, None, None, p)
    pa, pb = (both + only_a) / n, (both + only_b) / n
    la, ua = wilson(both + only_a, n, z) or (0.0, 1.0)
    lb, ub = wilson(both + only_b, n, z) or (0.0, 1.0)
    phi = _pair_correlation(both, only_a, only_b, neither)
    d = pa - pb
    below = math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    above = math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    return PairedDifference(n, both, only_a, only_b, neither, d, max(-1.0, d - below), min(1.0, d + above), p)


def _pair_correlation(both: int, only_a: int, only_b: int, neither: int) -> float:
    """Newcombe's estimate of the correlation between the two rates, continuity-corrected: a positive
    cross-product difference shrinks by n/2 (to 0 when it is at most n/2), a negative one is kept."""
    n = both + only_a + only_b + neither
    product = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if product == 0:
        return 0.0
    cross = both * neither - only_a * only_b
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(product)
    return cross / math.sqrt(product) if cross < 0 else 0.0


@dataclass(frozen=True)
class Spread:
    """Several runs' rates: their mean, sample standard deviation (None for one run), lowest and highest."""

    runs: int
    mean: float | None
    stdev: float | None
    low: float | None
    high: float | None


def spread(rates: Sequence[float]) -> Spread:
    values = [float(r) for r in rates]
    if not values:
        return Spread(0, None, None, None, None)
    sd = statistics.stdev(values) if len(values) > 1 else None
    return Spread(len(values), statistics.fmean(values), sd, min(values), max(values))


# Student's t, two-sided 95% (its 97.5th percentile), for 1..30 degrees of freedom (the published table's values)
_T975 = (12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041, 2.2621572,
         2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053, 2.1098156, 2.1009220,
         2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986, 2.0595386, 2.0555294, 2.0518305,
         2.0484071, 2.0452296, 2.0422725)


def t975(df: int) -> float:
    """Student's t 97.5th percentile with `df` degrees of freedom: the table to 30, above it the Cornish-Fisher
    expansion of Abramowitz & Stegun 26.7.5 in powers of 1/df (its error below 1e-6 there)."""
    if df < 1:
        raise ValueError(f"{df} degrees of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    g = ((z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
         (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
         (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(gk / float(df) ** (k + 1) for k, gk in enumerate(g))


@dataclass(frozen=True)
class MeanInterval:
    """The mean of `n` values with its standard error and 95% interval (Student's t with n - 1 degrees of freedom;
    None with fewer than two values)."""

    n: int
    mean: float | None
    se: float | None
    low: float | None
    high: float | None


def mean_interval(values: Sequence[float], within: tuple[float, float] | None = None) -> MeanInterval:
    """The mean of `values` and its 95% t interval. For a paired difference over tasks (each task's difference of
    two arms' means over their repeats): the interval Miller (2024, "Adding Error Bars to Evals") gives, the tasks
    the unit resampled, so the repeats narrow it only as far as they steady each task's own rate.
    `within` (low, high) clips the interval to where the mean can lie: a difference of two rates is in [-1, 1],
    and the t interval of a few tasks can reach past it (3 tasks: t is 4.3)."""
    v = [float(x) for x in values]
    if not v:
        return MeanInterval(0, None, None, None, None)
    mean = statistics.fmean(v)
    if len(v) < 2:
        return MeanInterval(1, mean, None, None, None)
    se = statistics.stdev(v) / math.sqrt(len(v))
    half = t975(len(v) - 1) * se
    low, high = mean - half, mean + half
    if within is not None:
        low, high = max(within[0], low), min(within[1], high)
    return MeanInterval(len(v), mean, se, low, high)
