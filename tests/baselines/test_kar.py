"""quantile_surrogate.baselines.kar: Kar et al.'s average surrogate for precision at k, and its fit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from quantile_surrogate import metrics
from quantile_surrogate.baselines import KarAverageSurrogate, prec_at_k_avg_surrogate
from quantile_surrogate._utils.checks import (
    BINARY_01,
    INTEGER_RANGE_MESSAGE,
    INTEGER_TYPE_MESSAGE,
    LENGTH_MISMATCH_MESSAGE,
    NOT_BINARY_MESSAGE,
)
from tests._messages import exact, prefix
from tests.baselines._data import separable


def brute_force_avg_surrogate(scores, positive, k):
    best = 0.0
    pos = np.flatnonzero(positive)
    for S in itertools.combinations(range(len(scores)), k):
        S = set(S)
        negatives = [i for i in S if not positive[i]]
        left_out = [i for i in pos if i not in S]
        if negatives:
            value = sum(1 + scores[i] - scores[left_out].mean() for i in negatives)
            best = max(best, value)
    return best / k


@pytest.mark.parametrize("seed", range(15))
def test_kar_surrogate_matches_enumeration_and_bounds_precision(seed):
    rng = np.random.default_rng(seed)
    n = 9
    scores = rng.standard_normal(n)
    positive = rng.random(n) < 0.5
    positive[:3] = [True, True, False]
    for k in range(1, int(positive.sum()) + 1):
        loss, _ = prec_at_k_avg_surrogate(scores, positive, k)
        assert loss == pytest.approx(brute_force_avg_surrogate(scores, positive, k), abs=1e-12)
        assert loss >= 1 - metrics.precision_at_k(positive, scores, k) - 1e-12


def test_kar_subgradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    scores, positive = rng.standard_normal(12), np.arange(12) % 3 == 0
    loss, grad = prec_at_k_avg_surrogate(scores, positive, 3)
    assert loss > 0
    for i in range(12):
        step = np.zeros(12)
        step[i] = 1e-7
        numeric = (prec_at_k_avg_surrogate(scores + step, positive, 3)[0] - loss) / 1e-7
        assert numeric == pytest.approx(grad[i], abs=1e-5)


def test_kar_drives_the_surrogate_to_zero_on_separable_data():
    X, y = separable()
    clf = KarAverageSurrogate(target=0.05, max_iter=100, random_state=0).fit(X, y)
    k = metrics.count_at_rate(len(y), 0.05)
    assert prec_at_k_avg_surrogate(np.zeros(len(y)), y == 1, k)[0] == 1.0  # the value at w = 0
    assert min(clf.loss_curve_) < 0.05 + 0.5 * clf.alpha * np.sum(clf.coef_**2)
    assert clf.n_iter_ > 0
    minibatch = KarAverageSurrogate(target=0.05, max_iter=20, batch_size=50, random_state=0).fit(X, y)
    assert minibatch.score(X, y) == 1.0


def test_kar_surrogate_refuses_k_outside_one_to_n():
    scores, positive = np.array([3.0, 2.0, 1.0, 0.0]), np.array([True, False, True, False])
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="k", wanted="an integer >= 1", value=0)):
        prec_at_k_avg_surrogate(scores, positive, 0)
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="k", value=5,
                                               wanted="an integer in [1, 4] (at most the number of rows)")):
        prec_at_k_avg_surrogate(scores, positive, 5)
    with pytest.raises(TypeError, match=prefix(INTEGER_TYPE_MESSAGE, name="k", wanted="an integer >= 1")):
        prec_at_k_avg_surrogate(scores, positive, 1.5)
    assert prec_at_k_avg_surrogate(scores, positive, 4)[0] == prec_at_k_avg_surrogate(scores, positive, 2)[0]  # min(k, n+)


def test_kar_surrogate_refuses_labels_that_are_not_one_binary_label_per_score():
    scores = np.array([3.0, 2.0, 1.0, 0.0])
    with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="positive", accepted=BINARY_01,
                                               values=[-1, 1])):
        prec_at_k_avg_surrogate(scores, np.array([1, -1, 1, -1]), 1)
    with pytest.raises(ValueError, match=exact(LENGTH_MISMATCH_MESSAGE, name="positive", got=3, expected=4)):
        prec_at_k_avg_surrogate(scores, np.array([True, False, True]), 1)
