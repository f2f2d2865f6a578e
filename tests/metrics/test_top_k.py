"""quantile_surrogate.metrics._top_k: Precision@K, Precision@tau and the count K a rate selects."""

import numpy as np
import pytest

from quantile_surrogate import metrics as M
from quantile_surrogate._utils.checks import TARGET_RANGE_MESSAGE
from quantile_surrogate._utils.counts import ROUNDING_MESSAGE
from quantile_surrogate.metrics._top_k import K_RANGE_MESSAGE, K_WEIGHT_RANGE_MESSAGE

from tests._messages import exact


def brute_force_precision_at_k(y, s, k):
    """The mean over all orders of the tied rows of the positives among the first k: each tie group
    at the k-th row counts with its positive fraction."""
    y, s = np.asarray(y, dtype=float), np.asarray(s, dtype=float)
    kth = np.sort(s)[::-1][k - 1]
    above = s > kth
    tied = s == kth
    return (y[above].sum() + (k - above.sum()) * y[tied].mean()) / k


def test_precision_at_k_shares_ties_fairly():
    y = np.array([1, 0, 1, 0, 0, 1])
    s = np.array([5.0, 3.0, 3.0, 3.0, 1.0, 0.0])
    # Top 2: the 5.0 (positive) plus one of three tied 3.0s, of which 1 in 3 is positive.
    assert M.precision_at_k(y, s, 2) == pytest.approx((1 + 1 / 3) / 2)
    rng = np.random.default_rng(0)
    draws = [y[np.lexsort((rng.random(6), -s))][:2].mean() for _ in range(4000)]
    assert M.precision_at_k(y, s, 2) == pytest.approx(np.mean(draws), abs=0.02)


def test_precision_at_rate_rounding():
    y = np.array([1] * 3 + [0] * 97)
    s = np.arange(100.0)[::-1]  # the three positives score highest
    assert M.count_at_rate(100, 0.029) == 3
    assert M.count_at_rate(100, 0.029, "floor") == 2
    assert M.count_at_rate(100, 0.07) == 7  # 0.07 * 100 = 7.000000000000001
    assert M.count_at_rate(50, 0.001) == 1  # never 0
    assert M.precision_at_rate(y, s, 0.03) == 1.0
    assert M.precision_at_rate(y, s, 0.06) == 0.5
    with pytest.raises(ValueError, match=exact(ROUNDING_MESSAGE, value="round")):
        M.count_at_rate(10, 0.1, "round")


@pytest.mark.parametrize("seed", range(5))
def test_precision_at_k_and_rate_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 50)
    s = rng.integers(0, 8, 50).astype(float)  # many ties
    for k in (1, 3, 10, 50):
        assert M.precision_at_k(y, s, k) == pytest.approx(brute_force_precision_at_k(y, s, k))
    assert M.precision_at_rate(y, s, 0.2) == pytest.approx(brute_force_precision_at_k(y, s, M.count_at_rate(50, 0.2)))


def test_integer_weights_are_the_rows_repeated():
    y, s, w = np.array([1, 0, 1, 0]), np.array([0.9, 0.8, 0.8, 0.1]), np.array([1, 2, 1, 3])
    repeated = np.repeat(np.arange(4), w)
    assert M.precision_at_k(y, s, 3, sample_weight=w) == pytest.approx(M.precision_at_k(y[repeated], s[repeated], 3))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: M.precision_at_rate([0, 1], [0.1, 0.2], 0.0), exact(TARGET_RANGE_MESSAGE, name="rate", value=0.0)),
        (lambda: M.precision_at_k([0, 1], [0.1, 0.2], 3), exact(K_RANGE_MESSAGE, n=2, k=3)),
        (lambda: M.precision_at_k([0, 1], [0.1, 0.2], 0), exact(K_RANGE_MESSAGE, n=2, k=0)),
        (lambda: M.precision_at_k([0, 1], [0.1, 0.2], 4, sample_weight=[1.0, 2.0]),
         exact(K_WEIGHT_RANGE_MESSAGE, total=3.0, k=4)),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
