"""quantile_surrogate.metrics._exact: precision at a recall, recall at an FPR and the predicted positive rate.

Against brute-force loops over thresholds; Precision@K and @tau are in tests/metrics/test_top_k.py.
"""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning

from quantile_surrogate import metrics as M
from quantile_surrogate._utils.checks import BINARY_SIGNED, NOT_BINARY_MESSAGE, TARGET_RANGE_MESSAGE
from quantile_surrogate.metrics._checks import ARRAYS_LENGTH_MESSAGE, SCORES_NONFINITE_MESSAGE, UNDEFINED_MESSAGE
from quantile_surrogate.metrics._exact import (
    SCORE_NOT_1D_MESSAGE,
    SUBSET_EMPTY_MESSAGE,
    SUBSET_NO_WEIGHT_MESSAGE,
    SUBSET_SHAPE_MESSAGE,
    THRESHOLD_NAN_MESSAGE,
)

from tests._messages import exact, prefix


def brute_force_curve(y, s):
    """(precision, recall, fpr) for every threshold 'predict s >= t' over the distinct scores."""
    rows = []
    for t in np.unique(s):
        predicted = s >= t
        tp = np.sum(predicted & (y == 1))
        fp = np.sum(predicted & (y == 0))
        rows.append((tp / max(tp + fp, 1), tp / max(np.sum(y == 1), 1), fp / max(np.sum(y == 0), 1)))
    return rows


labelled_scores = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(-5, 5), min_size=n, max_size=n),  # many ties
    )
)


@settings(max_examples=100, deadline=None)
@given(data=labelled_scores, target=st.floats(0.05, 0.95))
def test_precision_at_recall_and_recall_at_fpr_match_brute_force(data, target):
    y, s = map(np.array, data)
    curve = brute_force_curve(y, s.astype(float))
    if y.sum() > 0:
        expected = max(p for p, r, _ in curve if r >= target)
        assert M.precision_at_recall(y, s, target) == pytest.approx(expected)
    if 0 < y.sum() < len(y):
        feasible = [r for _, r, f in curve if f <= target] + [0.0]
        assert M.recall_at_fpr(y, s, target) == pytest.approx(max(feasible))


@settings(max_examples=150, deadline=None)
@given(data=labelled_scores, j=st.integers(1, 40), ties=st.booleans())
def test_targets_on_the_boundary_of_an_achievable_rate(data, j, ties):
    # A recall target equal to an achievable recall j / n_pos (an FPR target equal to j / n_neg)
    # is met with equality: a ">" where ">=" belongs (or "<" for "<=") drops that operating point.
    # Continuous random targets almost never land there, so draw them from the achievable values.
    y, s = map(np.array, data)
    s = s.astype(float) if ties else s + np.arange(len(s)) * 1e-3  # with and without tied scores
    curve = brute_force_curve(y, s)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if n_pos >= 2 and j < n_pos:
        target = j / n_pos
        expected = max(p for p, r, _ in curve if r >= target)
        assert M.precision_at_recall(y, s, target) == pytest.approx(expected)
    if n_pos >= 1 and n_neg >= 2 and j < n_neg:
        target = j / n_neg
        feasible = [r for _, r, f in curve if f <= target] + [0.0]
        assert M.recall_at_fpr(y, s, target) == pytest.approx(max(feasible))


@pytest.mark.parametrize(
    "call, metric, missing",
    [
        (lambda: M.precision_at_recall([0, 0, 0], [0.1, 0.2, 0.3], 0.5), "precision_at_recall",
         "positive (recall is 0/0)"),
        (lambda: M.recall_at_fpr([0, 0, 0], [0.1, 0.2, 0.3], 0.5), "recall_at_fpr", "positive (recall is 0/0)"),
        (lambda: M.recall_at_fpr([1, 1, 1], [0.1, 0.2, 0.3], 0.5), "recall_at_fpr",
         "negative (the false positive rate is 0/0)"),
    ],
)
def test_undefined_metrics_are_nan_with_a_warning(call, metric, missing):
    with pytest.warns(UndefinedMetricWarning, match=exact(UNDEFINED_MESSAGE, metric=metric, missing=missing)):
        assert math.isnan(call())


def test_defined_metrics_do_not_warn_and_accept_array_likes():
    y, s = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = [M.precision_at_recall(container(y), container(s), 0.75) for container in (list, np.array, torch.tensor)]
    assert values == [pytest.approx(2 / 3)] * 3


def test_predicted_positive_rate_refuses_nan_scores_and_thresholds():
    # A NaN score compares False with the threshold: it would silently count as a negative.
    with pytest.raises(ValueError, match=exact(SCORES_NONFINITE_MESSAGE, name="y_score")):
        M.predicted_positive_rate([0.9, float("nan"), 0.1], 0.5)
    with pytest.raises(ValueError, match=exact(THRESHOLD_NAN_MESSAGE)):
        M.predicted_positive_rate([0.9, 0.2, 0.1], float("nan"))
    with pytest.raises(ValueError, match=exact(SCORE_NOT_1D_MESSAGE, shape=(1, 2))):
        M.predicted_positive_rate([[0.9, 0.2]], 0.5)


def test_predicted_positive_rate_on_a_subset():
    s = np.array([0.1, 0.5, 0.9, 0.7])
    assert M.predicted_positive_rate(s, 0.5) == 0.5  # strictly above
    assert M.predicted_positive_rate(s, 0.5, subset=[True, True, False, False]) == 0.0
    with pytest.raises(ValueError, match=exact(SUBSET_EMPTY_MESSAGE)):
        M.predicted_positive_rate(s, 0.5, subset=[False] * 4)
    with pytest.raises(ValueError, match=exact(SUBSET_SHAPE_MESSAGE, shape=(3,), expected=(4,))):
        M.predicted_positive_rate(s, 0.5, subset=[True] * 3)
    # Weighted, a subset is its rows' weights: the rate of rows 1 and 2 with weights 1 and 3 is 3 / 4.
    assert M.predicted_positive_rate(s, 0.5, subset=[False, True, True, False], sample_weight=[5, 1, 3, 5]) == 0.75
    with pytest.raises(ValueError, match=exact(SUBSET_NO_WEIGHT_MESSAGE)):
        M.predicted_positive_rate(s, 0.5, subset=[True, True, False, False], sample_weight=[0, 0, 1, 1])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: M.precision_at_recall([0, 1], [0.1, 0.2], 1.2), exact(TARGET_RANGE_MESSAGE, name="recall", value=1.2)),
        (lambda: M.recall_at_fpr([0, 1], [0.1, 0.2], -0.1), exact(TARGET_RANGE_MESSAGE, name="fpr", value=-0.1)),
        (lambda: M.precision_at_recall([0, 2], [0.1, 0.2], 0.5),
         prefix(NOT_BINARY_MESSAGE, name="y_true", accepted=BINARY_SIGNED)),
        (lambda: M.precision_at_recall([0, 1, 1], [0.1, 0.2], 0.5), exact(ARRAYS_LENGTH_MESSAGE, n_true=3, n_score=2)),
        (lambda: M.precision_at_recall([0, 1], [0.1, np.nan], 0.5), exact(SCORES_NONFINITE_MESSAGE, name="y_score")),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_recall_at_fpr_keeps_collinear_roc_points():
    # Every ROC point here is on one line; sklearn's drop_intermediate would keep only the ends.
    y = [1, 0, 1, 0, 1, 0, 0]
    s = [3, 3, 2, 2, 1, 1, 0]
    assert M.recall_at_fpr(y, s, 0.5) == pytest.approx(2 / 3)
