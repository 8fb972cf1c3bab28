"""The statistics against hand computations and published figures: Wilson intervals (the formula written out here),
both counting rules on ABP's published counts (258 success, 27 failure, 15 not executable: 86.00% over all, 90.53%
executable only), Cohen's kappa (Wikipedia's worked example), McNemar's exact p (the binomial sum by hand), the
paired interval on the published example of Fagerland, Lydersen & Laake (Cavo et al. 2012), and the outcome rules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.outcomes import count, label_outcome, run_outcome
from om2w_tui.evaluation.stats import (
    Z95,
    MeanInterval,
    cohen_kappa,
    mcnemar_exact,
    mean_interval,
    paired_difference,
    spread,
    t975,
    wilson,
)
from om2w_tui.evaluation.summary import Counts, Rate


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    z = 1.96          # the textbook's rounded z: the bounds agree to 4 decimals
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = (z / (1 + z * z / n)) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_z_is_the_normal_975th_percentile():
    assert 0.5 * math.erfc(-Z95 / math.sqrt(2)) == pytest.approx(0.975, abs=1e-12)


@pytest.mark.parametrize("k,n", [(258, 300), (258, 285), (184, 300), (1, 7), (50, 100)])
def test_wilson_is_the_formula(k, n):
    low, high = wilson(k, n)
    hand = wilson_by_hand(k, n)
    assert low == pytest.approx(hand[0], abs=1e-4) and high == pytest.approx(hand[1], abs=1e-4)


def test_wilson_at_the_edges():
    assert wilson(0, 0) is None
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(wilson_by_hand(0, 10)[1], abs=1e-4)
    low, high = wilson(10, 10)
    assert high == pytest.approx(1.0) and low == pytest.approx(wilson_by_hand(10, 10)[0], abs=1e-4)
    with pytest.raises(ValueError):
        wilson(11, 10)


@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_holds_the_rate_and_is_symmetric(kn):
    k, n = kn
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    mirror_low, mirror_high = wilson(n - k, n)
    assert low == pytest.approx(1 - mirror_high, abs=1e-12) and high == pytest.approx(1 - mirror_low, abs=1e-12)


def test_both_counting_rules_give_the_published_figures():
    c = Counts(success=258, failure=27, not_executable=15)
    assert f"{100 * c.overall.rate:.2f}%" == "86.00%" and c.overall == Rate(258, 300, 0.86)
    assert f"{100 * c.executable.rate:.2f}%" == "90.53%" and c.executable.tasks == 285
    assert c.overall.interval == pytest.approx(wilson_by_hand(258, 300), abs=1e-4)
    assert c.executable.interval == pytest.approx(wilson_by_hand(258, 285), abs=1e-4)
    # the same counts from labels: "1" x258, "0" x27, "2" x15, and 4 unlabelled tasks, which count as neither
    labels = ["1"] * 258 + ["0"] * 27 + ["2"] * 15 + [None] * 4
    assert count(label_outcome(v) for v in labels) == Counts(258, 27, 15, pending=4)


def test_cohen_kappa_by_hand():
    # Wikipedia's example: 50 proposals, both yes 20, A yes B no 5, A no B yes 10, both no 15
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)
    table = [[30, 4, 1], [6, 40, 2], [0, 3, 14]]
    n = 100
    po = (30 + 40 + 14) / n
    rows, cols = [35, 48, 17], [36, 47, 17]
    pe = sum(r * c for r, c in zip(rows, cols)) / n / n
    assert cohen_kappa(table) == pytest.approx((po - pe) / (1 - pe))
    assert cohen_kappa([[0, 0], [0, 0]]) is None
    assert cohen_kappa([[7, 0], [0, 0]]) == 1.0          # both put everything in one category
    assert cohen_kappa([[0, 5], [5, 0]]) == pytest.approx(-1.0)


@pytest.mark.parametrize("b,c", [(6, 16), (10, 104), (0, 0), (3, 3), (0, 7), (12, 2)])
def test_mcnemar_exact_is_the_binomial_sum(b, c):
    n = b + c
    hand = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n)
    assert mcnemar_exact(b, c) == pytest.approx(hand, rel=1e-12)
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


def test_the_paired_interval_is_newcombes_on_the_published_example():
    # complete response before and after consolidation therapy (Cavo et al. 2012), as Fagerland, Lydersen and
    # Laake give it: estimate -0.0621, Newcombe's square-and-add interval -0.1186 to -0.0046
    d = paired_difference(both=59, only_a=6, only_b=16, neither=80)
    assert d.n == 161 and d.difference == pytest.approx(-0.0621, abs=5e-5)
    assert d.low == pytest.approx(-0.1186, abs=5e-5) and d.high == pytest.approx(-0.0046, abs=5e-5)
    assert d.p == pytest.approx(mcnemar_exact(6, 16))


@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_the_paired_interval_holds_the_difference_and_mirrors(both, only_a, only_b, neither):
    d = paired_difference(both, only_a, only_b, neither)
    if d.n == 0:
        assert d.difference is None and d.p == 1.0
        return
    assert -1.0 <= d.low <= d.difference <= d.high <= 1.0
    m = paired_difference(both, only_b, only_a, neither)
    assert m.low == pytest.approx(-d.high, abs=1e-12) and m.high == pytest.approx(-d.low, abs=1e-12)


def test_the_spread_of_several_runs():
    s = spread([0.5, 0.6, 0.7])
    assert s.mean == pytest.approx(0.6) and s.stdev == pytest.approx(0.1) and (s.low, s.high) == (0.5, 0.7)
    assert spread([0.4]).stdev is None and spread([]).mean is None


# ── where an outcome comes from ──────────────────────────────────────────────────────────────────────────────


def rec(status: str, error: str | None = None, kind: str | None = None) -> EpisodeRecord:
    return EpisodeRecord.from_json({"task_id": "t", "status": status, "error": error, "error_kind": kind})


@pytest.mark.parametrize("record,verdict,expected", [
    (rec("done"), True, "success"),
    (rec("done"), False, "failure"),
    (rec("done"), None, None),                                   # finished, not judged yet: no outcome
    (rec("timeout", "timeout"), False, "failure"),
    (rec("error", "the model failed 5 times", "model"), True, "failure"),   # the model's fault: a failure
    (rec("error", "agent crashed", "agent"), None, "failure"),
    (rec("error", "browser crashed", "infra"), True, "not_executable"),       # the harness's fault
    (rec("error", "model endpoint: HTTP 502", "endpoint"), None, "not_executable"),
    (rec("error", "no space left on device", "storage"), None, "not_executable"),
    (rec("blocked", "Cloudflare challenge"), False, "not_executable"),       # the site's bot wall
    (rec("killed", "interrupted"), True, None),                 # stopped under it: it runs again
    (rec("killed", "requeued"), None, None),
    (rec("killed", "killed by its user"), False, "failure"),
    (rec("out_of_steps"), True, "failure"),                     # no `done`, no answer: the agent's failure
    (rec("out_of_steps"), None, "failure"),
])
def test_a_run_outcome_reads_the_record_beside_the_verdict(record, verdict, expected):
    assert run_outcome(record, verdict, keeps_records=True) == expected


def test_a_task_with_no_record_is_still_to_run_unless_the_folder_keeps_none():
    assert run_outcome(None, True, keeps_records=True) is None       # queued or running: neither
    assert run_outcome(None, True, keeps_records=False) == "success"  # another harness's folder: its verdicts
    assert run_outcome(None, None, keeps_records=False) is None


@pytest.mark.parametrize(("df", "t"), [(1, 12.7062), (2, 4.3027), (5, 2.5706), (10, 2.2281), (30, 2.0423),
                                       (31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799), (299, 1.9680),
                                       (100_000, 1.9600)])
def test_t975_is_student_s_975th_percentile(df, t):
    # the values of any t table (R's qt(0.975, df)), on both sides of the table's end at 30
    assert t975(df) == pytest.approx(t, abs=1e-4)


def test_t975_refuses_no_degrees_of_freedom():
    with pytest.raises(ValueError):
        t975(0)


def test_mean_interval_is_the_t_interval_of_the_mean():
    m = mean_interval([0.0, 0.5, 0.5, 0.5])
    assert (m.n, m.mean, m.se) == (4, 0.375, pytest.approx(0.125))
    assert (m.low, m.high) == pytest.approx((0.375 - 3.1824463 * 0.125, 0.375 + 3.1824463 * 0.125))
    assert mean_interval([0.25]) == MeanInterval(1, 0.25, None, None, None) and mean_interval([]).mean is None


def test_mean_interval_is_clipped_to_where_the_mean_can_lie():
    free = mean_interval([0.0, -1.0, -1.0])
    assert free.low is not None and free.high is not None and free.low < -1.0 < free.high < 1.0
    m = mean_interval([0.0, -1.0, -1.0], within=(-1.0, 1.0))
    assert (m.n, m.mean, m.se, m.low, m.high) == (3, free.mean, free.se, -1.0, free.high)


@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), min_size=2, max_size=60))
def test_mean_interval_holds_its_mean_and_narrows_with_the_spread(values):
    m = mean_interval(values)
    assert m.low is not None and m.high is not None and m.se is not None
    assert m.low <= m.mean <= m.high
    assert m.high - m.low == pytest.approx(2 * t975(len(values) - 1) * m.se)
