"""The maths of the boosting objectives (quantile_surrogate.boosting.gradient).

Checked against independent references: central finite differences for the gradient, a NumPy
formula for the Hessian (kernel weights rebuilt from ranks), and the majorisation claim
``2 diag(h) >= exact Hessian`` against torch's full Hessian.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from quantile_surrogate._utils.errors import DIVERGED_MESSAGE, TrainingDivergedError
from quantile_surrogate.boosting import objective_gradient_hessian
from quantile_surrogate._utils.checks import NOT_BINARY_MESSAGE
from quantile_surrogate.boosting.gradient import (EMPTY_SUBSET_MESSAGE, LABELS_LENGTH_MESSAGE, SURROGATE_CURVATURES,
                                                  ZERO_WEIGHT_SUFFIX)
from quantile_surrogate.objectives import get_objective, objective_loss
from quantile_surrogate.quantiles._rank_selection import floor_rank
from tests._messages import exact, prefix

CASES = [  # (objective, target, form)
    ("precision_at_recall", 0.8, "fp"),
    ("precision_at_rate", 0.2, "fp"),
    ("precision_at_rate", 0.2, "tp"),
    ("recall_at_fpr", 0.1, "fp"),
]


def _problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.4).astype(np.int64)
    labels[:2] = [0, 1]
    scores = rng.standard_normal(n) + labels  # distinct with probability 1
    return scores, labels


def _summed_loss(scores, labels, objective, target, form, **settings):
    """The loss straight from objective_loss (mean times the number of penalised rows), float64."""
    spec = get_objective(objective)
    positive = torch.as_tensor(labels == 1)
    penalized = ~positive if spec.penalized[form] == "negatives" else positive
    out = objective_loss(torch.as_tensor(scores, dtype=torch.float64), positive, objective=objective, target=target,
                         form=form, **settings)
    return float(out.loss) * int(penalized.sum())


# -- gradient ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,target,form", CASES)
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
def test_gradient_matches_central_finite_differences(objective, target, form, quantile):
    scores, labels = _problem()
    settings = dict(quantile=quantile, bandwidth=0.1)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form, **settings)
    assert out.loss == pytest.approx(_summed_loss(scores, labels, objective, target, form, **settings), rel=1e-12)
    eps = 1e-6
    numeric = np.empty_like(scores)
    for i in range(len(scores)):
        up, down = scores.copy(), scores.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (_summed_loss(up, labels, objective, target, form, **settings)
                      - _summed_loss(down, labels, objective, target, form, **settings)) / (2 * eps)
    np.testing.assert_allclose(out.grad, numeric, rtol=1e-5, atol=1e-7)


def test_gradient_carries_the_thresholds_pull_on_the_subset():
    # A detached threshold would leave the positives (the subset A) with no gradient at all. Their
    # total is minus the sum of l'(z) over the penalised negatives, since the weights sum to 1.
    scores, labels = _problem(200)
    out = objective_gradient_hessian(scores, labels, objective="precision_at_recall", target=0.8)
    z = scores[labels == 0] - out.threshold
    pull = (1 / (1 + np.exp(-z))).sum()
    assert out.grad[labels == 1].sum() == pytest.approx(-pull, rel=1e-10)
    np.testing.assert_allclose(out.grad[labels == 0], 1 / (1 + np.exp(-z)), rtol=1e-12)


def test_gradient_on_the_fast_kernel_path_matches_finite_differences():
    # 3000 rows: the kernel quantile sorts only its window (_kernel_window); check a few rows in and out of it.
    scores, labels = _problem(3000, seed=1)
    out = objective_gradient_hessian(scores, labels, objective="precision_at_rate", target=0.1)
    positive_window = np.argsort(np.abs(scores - out.threshold))[:5]
    far = np.argsort(scores)[:3]
    settings = dict(quantile="kernel", bandwidth=0.05)
    for i in np.concatenate([positive_window, far]):
        up, down = scores.copy(), scores.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        numeric = (_summed_loss(up, labels, "precision_at_rate", 0.1, "fp", **settings)
                   - _summed_loss(down, labels, "precision_at_rate", 0.1, "fp", **settings)) / 2e-6
        assert out.grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


# -- Hessian ----------------------------------------------------------------------------------------
def _reference_hessian(scores, labels, objective, target, form, bandwidth, groups=None, min_hessian=1e-6):
    """h_j = l''(z_j) 1[j in P] + T_g w_j, from ranks and the normalised Gaussian kernel (eq. (13)) in NumPy."""
    spec = get_objective(objective)
    positive = labels == 1
    subset = spec.subset_mask(positive)
    penalized = ~positive if spec.penalized[form] == "negatives" else positive
    groups = np.zeros(len(scores), dtype=np.int64) if groups is None else groups
    hess = np.zeros(len(scores))
    for g in np.unique(groups):
        members = np.flatnonzero(subset & (groups == g))
        order = members[np.argsort(scores[members])]
        n = len(order)
        ranks = np.arange(1, n + 1)  # distinct scores: i* = i
        w = np.exp(-0.5 * ((ranks / n - (1 - target)) / bandwidth) ** 2)
        w /= w.sum()
        theta = float(w @ scores[order])
        rows = penalized & (groups == g)
        z = scores[rows] - theta if spec.penalized[form] == "negatives" else theta - scores[rows]
        d = 1 / (1 + np.exp(-z)) * (1 / (1 + np.exp(z)))
        hess[rows] += d
        hess[order] += d.sum() * w
    return np.maximum(hess, min_hessian)


@pytest.mark.parametrize("objective,target,form", CASES)
def test_hessian_is_its_stated_formula(objective, target, form):
    scores, labels = _problem(80, seed=3)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form, bandwidth=0.1)
    np.testing.assert_allclose(out.hess, _reference_hessian(scores, labels, objective, target, form, 0.1),
                               rtol=1e-10, atol=1e-14)


def test_hessian_with_groups_uses_each_groups_coupling():
    scores, labels = _problem(120, seed=4)
    groups = np.arange(120) % 3
    out = objective_gradient_hessian(scores, labels, objective="precision_at_recall", target=0.7, bandwidth=0.1,
                                     groups=groups)
    assert out.threshold.shape == (3,)
    expected = _reference_hessian(scores, labels, "precision_at_recall", 0.7, "fp", 0.1, groups=groups)
    np.testing.assert_allclose(out.hess, expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("objective,target,form", CASES)
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
def test_twice_the_diagonal_majorises_the_exact_hessian(objective, target, form, quantile):
    scores, labels = _problem(40, seed=5)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form,
                                     quantile=quantile, bandwidth=0.1, min_hessian=1e-300)
    exact = torch.autograd.functional.hessian(
        lambda f: objective_loss(f, torch.as_tensor(labels == 1), objective=objective, target=target, form=form,
                                 quantile=quantile, bandwidth=0.1).loss,
        torch.as_tensor(scores)).numpy()
    n_penalized = (labels == 0).sum() if get_objective(objective).penalized[form] == "negatives" else labels.sum()
    exact *= n_penalized  # objective_loss is the mean over the penalised rows
    assert np.linalg.eigvalsh(exact).min() >= -1e-10  # the Gauss-Newton matrix is positive semi-definite
    assert np.linalg.eigvalsh(2 * np.diag(out.hess) - exact).min() >= -1e-10
    # ... while with weights spread over several rows the plain diagonal of the exact Hessian does not
    # majorise it (why the coupling term is T w_j and not T w_j^2); one-hot point weights make them equal.
    if quantile != "point":
        assert np.linalg.eigvalsh(2 * np.diag(np.diag(exact)) - exact).min() < -1e-6


def test_point_estimator_puts_the_whole_coupling_on_one_row():
    scores, labels = np.array([0.0, 2.0, 0.0]), np.array([1, 1, 0])
    out = objective_gradient_hessian(scores, labels, target=0.5, quantile="point")
    assert out.loss == pytest.approx(math.log(2))
    np.testing.assert_allclose(out.grad, [-0.5, 0.0, 0.5])
    np.testing.assert_allclose(out.hess, [0.25, 1e-6, 0.25])
    assert floor_rank(2, 0.5) == 1  # the selected positive is the lower one, score 0


def test_hinge_uses_a_constant_curvature_and_logloss_weight_adds_the_log_loss():
    scores, labels = _problem(50, seed=6)
    hinge = objective_gradient_hessian(scores, labels, surrogate="hinge", target=0.8, bandwidth=0.1)
    assert np.all(hinge.hess[labels == 0] >= 0.25)
    plain = objective_gradient_hessian(scores, labels, target=0.8, min_hessian=1e-300)
    mixed = objective_gradient_hessian(scores, labels, target=0.8, logloss_weight=0.5)
    p = 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(mixed.grad - plain.grad, 0.5 * (p - labels), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(mixed.hess, np.maximum(plain.hess + 0.5 * p * (1 - p), 1e-6), rtol=1e-12)
    logloss = np.sum(np.logaddexp(0, -(2 * labels - 1) * scores))
    assert mixed.loss == pytest.approx(plain.loss + 0.5 * logloss, rel=1e-12)


def test_logistic_curvature_is_the_second_derivative_without_cancellation():
    # l''(z) = e^{-|z|} / (1 + e^{-|z|})^2 in float64, out to |z| = 700 (e^-700 is still a normal float);
    # the input is left as it is.
    z = torch.linspace(-700.0, 700.0, 20001, dtype=torch.float64)
    kept = z.clone()
    e = np.exp(-np.abs(z.numpy()))
    np.testing.assert_allclose(SURROGATE_CURVATURES["logistic"](z).numpy(), e / (1 + e) ** 2, rtol=1e-14, atol=0)
    assert torch.equal(z, kept)


@pytest.mark.parametrize("surrogate", ["logistic", "hinge"])
def test_each_curvature_into_kept_arrays_is_the_same_bits(surrogate):
    # The distributed objective's workspace passes `out` and `scratch`: the same numbers, in `out`, z untouched.
    z = torch.cat([torch.linspace(-800.0, 800.0, 4001, dtype=torch.float64),
                   torch.tensor([0.0, -0.0, 20.0, -20.0, 1e-300, -745.0, 745.0], dtype=torch.float64)])
    kept = z.clone()
    out, scratch = torch.full_like(z, float("nan")), torch.full_like(z, float("nan"))
    got = SURROGATE_CURVATURES[surrogate](z, out=out, scratch=scratch)
    assert got is out and torch.equal(out, SURROGATE_CURVATURES[surrogate](z)) and torch.equal(z, kept)


# -- refused inputs -----------------------------------------------------------------------------------
def test_nonfinite_scores_are_the_one_divergence_error():
    with pytest.raises(TrainingDivergedError, match=exact(DIVERGED_MESSAGE, what="the boosting scores", where="in 2 of 3 rows",
                                                          rate="", smaller="", remedy="raise `min_hessian`")) as info:
        objective_gradient_hessian(np.array([0.0, np.nan, np.inf]), np.array([0, 1, 1]))
    assert (info.value.what, info.value.where, info.value.learning_rate) == ("the boosting scores", "in 2 of 3 rows",
                                                                            None)
    assert isinstance(info.value, FloatingPointError)


def test_mismatched_lengths_labels_that_are_not_binary_and_an_empty_subset_are_refused():
    with pytest.raises(ValueError, match=exact(LABELS_LENGTH_MESSAGE, got=2, expected=3)):
        objective_gradient_hessian(np.zeros(3), np.array([0, 1]))
    with pytest.raises(ValueError, match=prefix(NOT_BINARY_MESSAGE, name="labels")):
        objective_gradient_hessian(np.array([0.0, 1.0]), np.array([0, 2]))
    empty = exact(EMPTY_SUBSET_MESSAGE, subset=get_objective("precision_at_recall").subset,
                  objective="precision_at_recall")
    with pytest.raises(ValueError, match=empty + "$"):
        objective_gradient_hessian(np.array([0.0, 1.0]), np.array([0, 0]))
    with pytest.raises(ValueError, match=empty + exact(ZERO_WEIGHT_SUFFIX)):
        objective_gradient_hessian(np.array([0.0, 1.0]), np.array([0, 1]), sample_weight=np.array([1.0, 0.0]))
