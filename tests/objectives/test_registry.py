"""The objective registry, the training threshold and its tie policy (quantile_surrogate.objectives)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn.exceptions import UndefinedMetricWarning

from quantile_surrogate import losses, metrics
from quantile_surrogate.objectives import (
    OBJECTIVES,
    get_objective,
    objective_loss,
    objective_metric,
    subset_mask,
)
from quantile_surrogate.objectives.thresholds import TiedScoresWarning, allowed_count, constraint_threshold

NAMES = sorted(OBJECTIVES)


# -- the registry ------------------------------------------------------------------------------


def test_registry_rows_match_the_losses_and_metrics_they_name():
    # The record must say what the loss does: A is the subset whose scores set the threshold.
    torch.manual_seed(0)
    scores = torch.randn(200, dtype=torch.float64)
    labels = torch.rand(200) < 0.3
    for name in NAMES:
        spec = OBJECTIVES[name]
        subset = spec.subset_mask(labels)
        direct = spec.loss(scores, labels, **{spec.target_keyword: 0.2}, return_threshold=True)
        explicit = spec.loss(scores, labels, **{spec.target_keyword: 0.2}, threshold_scores=scores[subset],
                             return_threshold=True)
        torch.testing.assert_close(direct.threshold, explicit.threshold)
        torch.testing.assert_close(direct.loss, explicit.loss)
        y = labels.numpy().astype(int)
        assert spec.metric(y, scores.numpy(), 0.2) == objective_metric(y, scores.numpy(), objective=name, target=0.2)


def test_subset_mask_is_the_same_in_numpy_and_torch():
    labels = np.array([1, 0, 1, 1, 0])
    for name in NAMES:
        from_numpy = subset_mask(labels, name)
        from_torch = subset_mask(torch.as_tensor(labels), name)
        np.testing.assert_array_equal(np.asarray(from_numpy), from_torch.numpy())
    np.testing.assert_array_equal(subset_mask(labels, "precision_at_recall"), labels == 1)
    np.testing.assert_array_equal(subset_mask(labels, "recall_at_fpr"), labels == 0)
    assert subset_mask(labels, "precision_at_rate").all()


@pytest.mark.parametrize("call", [
    lambda: get_objective("recall_at_precision"),
    lambda: objective_loss(torch.zeros(4), torch.tensor([0, 1, 0, 1]), objective="accuracy", target=0.5),
    lambda: objective_metric([0, 1], [0.1, 0.2], objective="accuracy", target=0.5),
    lambda: constraint_threshold([0.1, 0.2], [0, 1], objective="recall_at_fpr_typo", target=0.5),
])
def test_an_unknown_objective_is_an_error_everywhere(call):
    # objective_loss used to fall back to recall at FPR for any unknown name.
    with pytest.raises(ValueError, match="`objective` must be one of"):
        call()


def test_a_non_string_objective_is_a_type_error():
    with pytest.raises(TypeError, match="objective"):
        get_objective(3)


def test_form_reaches_the_rate_loss_only():
    scores = torch.linspace(-1, 1, 50, dtype=torch.float64)
    labels = torch.arange(50) % 3 == 0
    fp = objective_loss(scores, labels, objective="precision_at_rate", target=0.2, form="fp").loss
    tp = objective_loss(scores, labels, objective="precision_at_rate", target=0.2, form="tp").loss
    assert not torch.isclose(fp, tp)
    torch.testing.assert_close(tp, losses.precision_at_rate_loss(scores, labels, rate=0.2, form="tp"))


# -- allowed counts and the tie policy -----------------------------------------------------------


@pytest.mark.parametrize("size,target,expected", [
    (30, 0.1, {"precision_at_recall": 3, "precision_at_rate": 3, "recall_at_fpr": 3}),  # 0.1 * 30 = 3.0000000000000004
    (20, 0.07, {"precision_at_recall": 2, "precision_at_rate": 2, "recall_at_fpr": 1}),
    (10, 0.01, {"precision_at_recall": 1, "precision_at_rate": 1, "recall_at_fpr": 0}),
])
def test_allowed_count_rounding(size, target, expected):
    assert {name: allowed_count(name, size, target) for name in NAMES} == expected


def _rows_above(scores, labels, name, theta):
    return int(np.count_nonzero(scores[np.asarray(OBJECTIVES[name].subset_mask(labels == 1))] > theta))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(NAMES), st.integers(2, 8))
def test_heavy_ties_never_break_the_constraint(seed, name, distinct):
    """With only a few distinct scores: a floor is never missed and a ceiling never exceeded."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    scores = rng.integers(0, distinct, n).astype(float)
    labels = (rng.random(n) < 0.3).astype(int)
    labels[:2] = [1, 0]
    target = float(rng.choice([0.05, 0.1, 0.3, 0.5, 0.9]))
    size = int(np.count_nonzero(OBJECTIVES[name].subset_mask(labels == 1)))
    k = allowed_count(name, size, target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theta = constraint_threshold(scores, labels, objective=name, target=target)
    above = _rows_above(scores, labels, name, theta)
    if OBJECTIVES[name].bound == "at_least":
        assert above >= k
    else:
        assert above <= k
    # The warning is given exactly when the count asked for is impossible.
    tied_warnings = [w for w in caught if issubclass(w.category, TiedScoresWarning)]
    assert bool(tied_warnings) == (above != k)


def test_capacity_is_not_exceeded_with_eight_distinct_scores():
    # The case the issue found: rate 0.05 on eight distinct scores predicted 12.6 % of the rows.
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 8, 1000).astype(float)
    labels = (rng.random(1000) < 0.2).astype(int)
    with pytest.warns(TiedScoresWarning, match="at most 50"):
        theta = constraint_threshold(scores, labels, objective="precision_at_rate", target=0.05)
    assert np.mean(scores > theta) <= 0.05


def test_one_binary_feature_does_not_predict_every_row():
    scores = np.r_[np.zeros(90), np.ones(10)]
    labels = np.r_[np.zeros(85), np.ones(15)].astype(int)
    with pytest.warns(TiedScoresWarning):
        theta = constraint_threshold(scores, labels, objective="precision_at_rate", target=0.05)
    assert np.mean(scores > theta) == 0.0  # the ten tied rows exceed K = 5, so none of them is taken


def test_distinct_scores_meet_every_count_exactly_and_silently():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal(500)
    labels = (rng.random(500) < 0.2).astype(int)
    for name in NAMES:
        for target in (0.01, 0.05, 0.3, 0.9):
            with warnings.catch_warnings():
                warnings.simplefilter("error", TiedScoresWarning)
                theta = constraint_threshold(scores, labels, objective=name, target=target)
            size = int(np.count_nonzero(OBJECTIVES[name].subset_mask(labels == 1)))
            assert _rows_above(scores, labels, name, theta) == allowed_count(name, size, target)


@pytest.mark.parametrize("name", NAMES)
def test_threshold_sits_between_scores_not_on_one(name):
    scores = np.arange(40.0)
    labels = (np.arange(40) % 4 == 0).astype(int)
    theta = constraint_threshold(scores, labels, objective=name, target=0.3)
    assert not np.isin(theta, scores)
    assert math.isclose(theta % 1.0, 0.5)


def test_metric_is_the_exact_metric_at_the_boundary():
    # Recall targets drawn from achievable values j / n_pos: ">=" against ">" matters exactly there.
    y = np.array([1, 0, 1, 0, 1, 1, 0, 0])
    s = np.array([8, 7, 6, 5, 4, 3, 2, 1], dtype=float)
    assert objective_metric(y, s, objective="precision_at_recall", target=0.5) == metrics.precision_at_recall(y, s, 0.5)
    assert metrics.precision_at_recall(y, s, 0.5) == pytest.approx(2 / 3)


def test_grouped_metric_is_nan_with_a_warning_when_undefined():
    # No positive in y: recall at FPR is undefined, not 0.0.
    y = np.zeros(6, dtype=int)
    s = np.arange(6.0)
    groups = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(UndefinedMetricWarning, match="recall"):
        value = objective_metric(y, s, objective="recall_at_fpr", target=0.3, groups=groups)
    assert math.isnan(value)
