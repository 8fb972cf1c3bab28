"""Comparing raters and arms on the same tasks, from each task's outcome (`evaluation/outcomes.py`):

- `agreement`: a judge against human labels (or one annotator against another): the confusion matrix, Cohen's
  kappa, both rates on the tasks both rated and their gap, per level, and the tasks where they disagree;
- `paired`: two arms (two runs, two label columns) on the tasks both have an outcome for: both rates, the
  difference with its paired interval, McNemar's exact test, the tasks only one solved, per site;
- `repeats`: several runs of one configuration: each run's rate, their mean and spread, each task solved
  always, sometimes or never, and pass^k / pass@k (tau-bench's: solved in all k of k tries / in at least one);
- `pooled`: two arms over all their repeats, paired by task: each task's share of repeats solved, A's minus B's,
  averaged over the tasks with its t interval.

Each is computed under one counting rule: over all tasks (not executable counted as a failure) or over the
executable ones (a task either side calls not executable is left out). The numbers are the typed values of
`evaluation/summary.py`; the formulas are `evaluation/stats.py`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from om2w_tui.evaluation.outcomes import succeeded
from om2w_tui.evaluation.stats import PairedDifference, cohen_kappa, mean_interval, paired_difference, spread
from om2w_tui.evaluation.summary import Agreement, Confusion, Disagreement, PairedTest, Pooled, Rate, Repeats
from om2w_tui.evaluation.task_outcome import Outcome

Outcomes = Mapping[str, "Outcome | None"]
GroupOf = Callable[[str], str]


def _none(_: str) -> str:
    return "-"


def _pairs(a: Outcomes, b: Outcomes, rule: str) -> tuple[dict[str, tuple[bool, bool]], int]:
    """task -> (A succeeded, B succeeded) on the tasks both count under `rule`, in A's order; and how many tasks
    one of them has an outcome for but that do not count (rated by one only, or not executable)."""
    both: dict[str, tuple[bool, bool]] = {}
    left_out = 0
    for tid in dict.fromkeys([*a, *b]):
        x, y = succeeded(a.get(tid), rule), succeeded(b.get(tid), rule)
        if x is None or y is None:
            left_out += a.get(tid) is not None or b.get(tid) is not None
            continue
        both[tid] = (x, y)
    return both, left_out


def confusion(pairs: Mapping[str, tuple[bool, bool]]) -> Confusion:
    values = list(pairs.values())
    return Confusion(sum(1 for x, y in values if x and y), sum(1 for x, y in values if x and not y),
                     sum(1 for x, y in values if y and not x), sum(1 for x, y in values if not x and not y))


def agreement(a: Outcomes, b: Outcomes, rule: str, a_name: str, b_name: str, level_of: GroupOf = _none,
              site_of: GroupOf = _none, level_order: Sequence[str] = ()) -> Agreement:
    """Rater A against rater B (B is the reference: a judge against humans), under `rule`."""
    pairs, left_out = _pairs(a, b, rule)
    c = confusion(pairs)
    n = c.n
    a_rate, b_rate = Rate.of(c.both + c.only_a, n), Rate.of(c.both + c.only_b, n)
    gap = None if n == 0 else 100.0 * (c.only_a - c.only_b) / n
    levels: dict[str, dict[str, tuple[bool, bool]]] = {}
    for tid, v in pairs.items():
        levels.setdefault(level_of(tid), {})[tid] = v
    order = {k: i for i, k in enumerate(level_order)}
    names = sorted(levels, key=lambda k: (order.get(k, len(order)), k))
    by_level = {k: confusion(levels[k]) for k in names}
    disagree = tuple(Disagreement(tid, _word(a.get(tid)), _word(b.get(tid)), level_of(tid), site_of(tid))
                     for tid, (x, y) in pairs.items() if x != y)
    return Agreement(a_name, b_name, rule, c, cohen_kappa(c.table), a_rate, b_rate, gap, by_level,
                     {k: cohen_kappa(v.table) for k, v in by_level.items()}, disagree, left_out)


def _word(o: Outcome | None) -> str:
    return o or "-"


def paired(a: Outcomes, b: Outcomes, rule: str, a_name: str, b_name: str, site_of: GroupOf = _none) -> PairedTest:
    """Arm A against arm B on the tasks both have an outcome for under `rule`."""
    pairs, left_out = _pairs(a, b, rule)
    c = confusion(pairs)
    sites: dict[str, dict[str, tuple[bool, bool]]] = {}
    for tid, v in pairs.items():
        sites.setdefault(site_of(tid), {})[tid] = v
    by_site = {k: _difference(confusion(v)) for k, v in sorted(sites.items(), key=lambda kv: (-len(kv[1]), kv[0]))}
    return PairedTest(a_name, b_name, rule, Rate.of(c.both + c.only_a, c.n), Rate.of(c.both + c.only_b, c.n),
                      _difference(c), tuple(t for t, (x, y) in pairs.items() if x and not y),
                      tuple(t for t, (x, y) in pairs.items() if y and not x), by_site, left_out)


def _difference(c: Confusion) -> PairedDifference:
    return paired_difference(c.both, c.only_a, c.only_b, c.neither)


def repeats(runs: Sequence[Outcomes], names: Sequence[str], rule: str, arm: str = "") -> Repeats:
    """Several runs of one configuration under `rule`: every run's own rate (over its own tasks), and on the tasks
    every run counts, how many were solved always, sometimes, never, and pass^j / pass@j for j = 1..k (k runs)."""
    rates = tuple(_rate(r, rule) for r in runs)
    common: list[str] = []
    if runs:
        common = [t for t in runs[0] if all(succeeded(r.get(t), rule) is not None for r in runs)]
    solved = {t: sum(1 for r in runs if succeeded(r.get(t), rule)) for t in common}
    always = sum(1 for v in solved.values() if v == len(runs))
    never = sum(1 for v in solved.values() if v == 0)
    sometimes = tuple(t for t, v in solved.items() if 0 < v < len(runs))
    hat, at = pass_k(list(solved.values()), len(runs))
    return Repeats(tuple(names), rule, rates, spread([r.rate for r in rates if r.rate is not None]), len(common),
                   always, len(sometimes), never, sometimes, arm=arm, pass_hat=hat, pass_at=at)


def pooled(a_runs: Sequence[Outcomes], b_runs: Sequence[Outcomes], rule: str, a: str, b: str,
           a_names: Sequence[str], b_names: Sequence[str]) -> Pooled:
    """Arm A's repeats against arm B's, paired by task, under `rule`: on the tasks every repeat of both counts, each
    task's share of A's repeats that solved it minus B's share; their mean with its 95% t interval over the tasks,
    clipped to [-1, 1] (a difference of two rates lies there; with few tasks the t interval alone reaches past it).
    Why per task, not per repeat pair: a task's repeats share its difficulty, so the tasks are the independent unit,
    and averaging a task's repeats first takes their own noise out of the difference (Miller 2024)."""
    runs = [*a_runs, *b_runs]
    common = [t for t in (a_runs[0] if a_runs else {}) if all(succeeded(r.get(t), rule) is not None for r in runs)]

    def share(side: Sequence[Outcomes], t: str) -> float:
        return sum(1 for r in side if succeeded(r.get(t), rule)) / len(side)

    diffs = [share(a_runs, t) - share(b_runs, t) for t in common]
    a_mean = sum(share(a_runs, t) for t in common) / len(common) if common else None
    b_mean = sum(share(b_runs, t) for t in common) / len(common) if common else None
    return Pooled(a, b, rule, tuple(a_names), tuple(b_names), a_mean, b_mean, mean_interval(diffs, (-1.0, 1.0)),
                  sum(1 for d in diffs if d > 0), sum(1 for d in diffs if d < 0))


def pass_k(solved: Sequence[int], n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """pass^j and pass@j for j = 1..n over tasks each tried `n` times, `solved[i]` of them solved (tau-bench's
    unbiased estimates): pass^j = mean C(c, j) / C(n, j), the chance that j tries all succeed; pass@j = mean
    1 - C(n - c, j) / C(n, j), that at least one does. () for no task."""
    if not solved or n < 1:
        return (), ()
    hat = tuple(sum(math.comb(c, j) for c in solved) / (math.comb(n, j) * len(solved)) for j in range(1, n + 1))
    at = tuple(1 - sum(math.comb(n - c, j) for c in solved) / (math.comb(n, j) * len(solved))
               for j in range(1, n + 1))
    return hat, at


def _rate(outcomes: Outcomes, rule: str) -> Rate:
    counted = [v for v in (succeeded(o, rule) for o in outcomes.values()) if v is not None]
    return Rate.of(sum(counted), len(counted))


def judge_outcomes(verdicts: Mapping[str, bool]) -> dict[str, Outcome | None]:
    """A judge's raw verdicts as outcomes (a judge says success or failure, never not executable)."""
    return {t: ("success" if v else "failure") for t, v in verdicts.items()}

