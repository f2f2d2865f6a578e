"""quantile_surrogate.objectives.guarantees: thresholds with a held-out guarantee, coverage by simulation.

The rank they read their scores at is tested in tests/objectives/test_order_statistic_rank.py.
"""

import math

import numpy as np
import pytest
from scipy import stats

from quantile_surrogate._utils.checks import NUMBER_TYPE_MESSAGE, TARGET_RANGE_MESSAGE
from quantile_surrogate.objectives._order_statistic_rank import DELTA_MESSAGE, TOO_FEW_MESSAGE
from quantile_surrogate.objectives.guarantees import (
    BOUND_MESSAGE,
    SCORES_MESSAGE,
    fpr_threshold,
    guaranteed_rank,
    rate_threshold,
    recall_threshold,
)

from tests._messages import exact

DRAWS = 1000


def test_recall_threshold_is_just_below_the_kth_smallest():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=300)
    k = guaranteed_rank(300, 0.05, 0.05)
    kth = np.sort(scores)[k - 1]
    t = recall_threshold(rng.permutation(scores), 0.95, 0.05)
    assert t < kth and np.nextafter(t, np.inf) == kth
    # ">" and ">=" select the same held-out rows: exactly n - k + 1 of them.
    assert np.sum(scores > t) == np.sum(scores >= t) == 300 - k + 1


def test_fpr_threshold_is_just_above_the_jth_largest():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=500)
    j = guaranteed_rank(500, 0.02, 0.1)
    jth = np.sort(scores)[::-1][j - 1]
    t = fpr_threshold(scores, 0.02, 0.1)
    assert t > jth and np.nextafter(t, -np.inf) == jth
    assert np.sum(scores > t) == np.sum(scores >= t) == j - 1


def test_rate_bounds_are_fpr_and_recall_on_all_rows():
    scores = np.random.default_rng(2).normal(size=400)
    assert rate_threshold(scores, 0.1, 0.05, bound="upper") == fpr_threshold(scores, 0.1, 0.05)
    assert rate_threshold(scores, 0.1, 0.05, bound="lower") == recall_threshold(scores, 0.1, 0.05)
    # the upper bound on the rate flags fewer rows than the plain (1 - 0.1)-quantile, the lower bound more
    plain = np.sort(scores)[math.floor(0.9 * 400) - 1]
    assert rate_threshold(scores, 0.1, bound="upper") > plain > rate_threshold(scores, 0.1, bound="lower")


def _coverage_bounds(exact):
    """Three Monte-Carlo standard errors around the exact coverage."""
    se = math.sqrt(exact * (1 - exact) / DRAWS)
    return exact - 3 * se, exact + 3 * se


@pytest.mark.parametrize("target", [0.9, 0.95])
def test_recall_guarantee_holds_by_simulation_and_plain_quantile_does_not(target):
    # positives ~ N(2, 1), so the population recall of "score > t" is Phi(2 - t), exactly.
    n, delta = 200, 0.05
    rng = np.random.default_rng(10)
    samples = rng.normal(2.0, 1.0, size=(DRAWS, n))
    guaranteed = np.array([recall_threshold(row, target, delta) for row in samples])
    plain = np.sort(samples, axis=1)[:, math.floor((1 - target) * n) - 1]
    coverage = np.mean(stats.norm.sf(guaranteed - 2.0) >= target)
    exact = stats.binom.sf(guaranteed_rank(n, 1 - target, delta) - 1, n, 1 - target)
    low, high = _coverage_bounds(exact)
    assert exact >= 1 - delta
    assert low <= coverage <= high
    assert coverage >= 1 - delta - 3 * math.sqrt(delta * (1 - delta) / DRAWS)
    assert 0.4 < np.mean(stats.norm.sf(plain - 2.0) >= target) < 0.7


def test_fpr_and_rate_guarantees_hold_by_simulation():
    n, delta, target = 400, 0.05, 0.05
    rng = np.random.default_rng(11)
    negatives = rng.normal(size=(DRAWS, n))
    t_fpr = np.array([fpr_threshold(row, target, delta) for row in negatives])
    exact = stats.binom.sf(guaranteed_rank(n, target, delta) - 1, n, target)
    low, high = _coverage_bounds(exact)
    assert low <= np.mean(stats.norm.sf(t_fpr) <= target) <= high
    plain = np.sort(negatives, axis=1)[:, n - math.floor(target * n)]
    assert np.mean(stats.norm.sf(plain) <= target) < 0.7

    # mixture with prior 0.1: rate(t) = 0.1 Phi(2 - t) + 0.9 Phi(-t)
    labels = rng.random((DRAWS, n)) < 0.1
    rows = rng.normal(size=(DRAWS, n)) + 2.0 * labels
    def rate(t):
        return 0.1 * stats.norm.sf(t - 2.0) + 0.9 * stats.norm.sf(t)
    upper = np.array([rate_threshold(row, target, delta, bound="upper") for row in rows])
    lower = np.array([rate_threshold(row, target, delta, bound="lower") for row in rows])
    assert low <= np.mean(rate(upper) <= target) <= high
    exact_lower = stats.binom.sf(guaranteed_rank(n, 1 - target, delta) - 1, n, 1 - target)
    low_l, high_l = _coverage_bounds(exact_lower)
    assert low_l <= np.mean(rate(lower) >= target) <= high_l


def test_guarantees_hold_with_ties():
    # Scores uniform on {0, ..., 9}: heavy ties. Population recall of "score > t" is P(S > t).
    n, delta, target = 150, 0.05, 0.85
    rng = np.random.default_rng(12)
    samples = rng.integers(0, 10, size=(DRAWS, n)).astype(float)
    support = np.arange(10.0)

    def recall(t):
        return np.mean(support[None, :] > np.asarray(t)[:, None], axis=1)

    guaranteed = np.array([recall_threshold(row, target, delta) for row in samples])
    assert np.mean(recall(guaranteed) >= target) >= 1 - delta
    # Thresholding at the order statistic itself with ">" drops the tied atom; it fails.
    k = guaranteed_rank(n, 1 - target, delta)
    at_kth = np.sort(samples, axis=1)[:, k - 1]
    assert np.mean(recall(at_kth) >= target) < 1 - delta
    # FPR with ties: "score > t" must exclude the atom at the order statistic.
    fpr_t = np.array([fpr_threshold(row, 0.15, delta) for row in samples])
    assert np.mean(recall(fpr_t) <= 0.15) >= 1 - delta


def test_too_few_rows_says_how_many_are_needed():
    with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what="recall >= 0.95", confidence=0.95, needed=59,
                                               rows="positive rows", got=58)):
        recall_threshold(np.arange(58.0), 0.95, 0.05)
    recall_threshold(np.arange(59.0), 0.95, 0.05)
    with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what="FPR <= 0.01", confidence=0.95, needed=299,
                                               rows="negative rows", got=298)):
        fpr_threshold(np.arange(298.0), 0.01, 0.05)
    with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what="rate <= 0.01", confidence=0.95, needed=299,
                                               rows="rows", got=100)):
        rate_threshold(np.arange(100.0), 0.01, 0.05)
    with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what="rate >= 0.99", confidence=0.95, needed=299,
                                               rows="rows", got=100)):
        rate_threshold(np.arange(100.0), 0.99, 0.05, bound="lower")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: recall_threshold(np.arange(100.0), 1.0), ValueError,
         exact(TARGET_RANGE_MESSAGE, name="target", value=1.0)),
        (lambda: recall_threshold(np.arange(100.0), 0.0), ValueError, "`target`"),
        (lambda: recall_threshold(np.arange(100.0), 0.9, 1.0), ValueError, exact(DELTA_MESSAGE, value=1.0)),
        (lambda: fpr_threshold(np.arange(100.0), 0.1, 0.0), ValueError, "`delta`"),
        (lambda: recall_threshold(np.arange(100.0), 0.9, "0.05"), TypeError,
         exact(NUMBER_TYPE_MESSAGE, name="delta", type_name="str")),
        (lambda: recall_threshold([1.0, np.nan] * 50, 0.9), ValueError,
         exact(SCORES_MESSAGE, name="scores_pos", problem="50 NaN or inf of 100")),
        (lambda: recall_threshold(np.ones((10, 10)), 0.9), ValueError,
         exact(SCORES_MESSAGE, name="scores_pos", problem="shape (10, 10)")),
        (lambda: fpr_threshold([], 0.1), ValueError, exact(SCORES_MESSAGE, name="scores_neg", problem="no values")),
        (lambda: rate_threshold(np.arange(100.0), 0.5, bound="both"), ValueError, exact(BOUND_MESSAGE, value="both")),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()
