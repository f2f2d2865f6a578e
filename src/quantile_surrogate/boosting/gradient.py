r"""The maths of the boosting objectives: a row's gradient and a positive diagonal Hessian.

A boosting round fits a tree to every row's gradient ``g_i = dL/dF_i`` and Hessian
``h_i`` of a loss ``L`` of the raw scores ``F`` (the margins) and moves each leaf by
``-sum g / (sum h + lambda)``. :func:`objective_gradient_hessian` computes both for any
loss of :mod:`quantile_surrogate.objectives`, by autograd through
:func:`~quantile_surrogate.objectives.objective_loss` (so the loss has one home), with the
threshold ``theta = q(F_A, 1 - c)`` differentiated as a function of the scores of ``A``
(the paper's section 3). The Hessian is a diagonal majoriser of the Gauss-Newton matrix,
built from each surrogate's curvature. Neither tree library is imported here; the adapters
that hand this to LightGBM and XGBoost are in :mod:`quantile_surrogate.boosting.adapters`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .._utils.checks import all_finite, check_binary, check_sample_weight
from .._utils.errors import TrainingDivergedError
from ..objectives import get_objective, objective_loss

# SURROGATE_CURVATURES is a detail of the Hessian (documented in objective_gradient_hessian), not in __all__.
__all__ = [
    "GradientHessian",
    "objective_gradient_hessian",
]


def _logistic_curvature(z: torch.Tensor, out: torch.Tensor | None = None,
                        scratch: torch.Tensor | None = None) -> torch.Tensor:
    # d^2/dz^2 log(1 + e^z) = sigmoid(z) sigmoid(-z); the product form does not cancel for large |z|.
    # In place into the first factor: the same numbers, and on 5e5 rows about half the time (one array fewer).
    if out is None:
        return torch.sigmoid(z).mul_(torch.sigmoid(-z))
    return torch.sigmoid(z, out=out).mul_(torch.sigmoid(torch.neg(z, out=scratch), out=scratch))


def _hinge_curvature(z: torch.Tensor, out: torch.Tensor | None = None, scratch=None) -> torch.Tensor:
    # max(0, 1 + z) is piecewise linear: its second derivative is 0 almost everywhere. We use
    # the logistic's largest curvature, 1/4, on every penalised row instead, so the tree's
    # Newton step is a gradient step of size 4 * learning_rate, as it is for a linear loss.
    return torch.full_like(z, 0.25) if out is None else out.fill_(0.25)


#: ``l''(z)`` of each surrogate of :data:`~quantile_surrogate.losses.SURROGATES` as used in the Hessian; with
#: ``out=`` and ``scratch=`` (arrays shaped like ``z``) the same numbers are written into ``out``, using ``scratch``.
SURROGATE_CURVATURES = {"logistic": _logistic_curvature, "hinge": _hinge_curvature}

EMPTY_SUBSET_MESSAGE = (
    "No training row belongs to the subset A ({subset}) that sets the threshold of {objective!r}; "
    "the objective is undefined. Check the labels."
)
ZERO_WEIGHT_SUFFIX = " (every row of it has `sample_weight` 0)"
LABELS_LENGTH_MESSAGE = "`labels` has {got} entries but `scores` has {expected}; one label per row."


class GradientHessian(NamedTuple):
    """What a boosting round needs: the loss value and one gradient and Hessian entry per row.

    A named tuple of its four fields, in this order, returned by :func:`objective_gradient_hessian`.

    Attributes
    ----------
    loss : float
        The summed loss ``L(F)`` (plus the log-loss term).
    grad : ndarray of shape (n,)
        ``dL/dF``, float64.
    hess : ndarray of shape (n,)
        The diagonal curvature of :func:`objective_gradient_hessian`, float64, ``>= min_hessian``.
    threshold : ndarray
        The quantile threshold(s) used, shape () or (G,) with groups.

    Examples
    --------
    >>> from quantile_surrogate.boosting import objective_gradient_hessian
    >>> out = objective_gradient_hessian([0.0, 2.0, 0.0], [1, 1, 0], target=0.5, quantile="point")
    >>> out.grad.shape, out.hess.shape, float(out.threshold)
    ((3,), (3,), 0.0)
    """

    loss: float
    grad: np.ndarray
    hess: np.ndarray
    threshold: np.ndarray


def _check_scores_labels(scores, labels, labels_known=None):
    """``(scores, labels)`` as 1-D float64 / NumPy arrays of one length, finite scores, binary labels.

    NaN or inf scores mean that boosting diverged: :class:`~quantile_surrogate._utils.errors.TrainingDivergedError`.
    ``labels_known``: a :class:`~._workspace.Workspace` whose remembered labels, if they equal these, spare the
    binary check (XGBoost passes the same labels every round); labels that pass are remembered there.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(LABELS_LENGTH_MESSAGE.format(got=labels.size, expected=scores.size))
    if not all_finite(torch.from_numpy(np.ascontiguousarray(scores))):  # one sum, no array of flags
        finite = np.isfinite(scores)
        raise TrainingDivergedError("the boosting scores", f"in {int((~finite).sum())} of {scores.size} rows",
                                    remedy="raise `min_hessian`")
    if labels_known is None or not labels_known.known_labels(labels):
        check_binary(labels, "labels")
        if labels_known is not None:
            labels_known.keep_labels(labels)
    return scores, labels


def objective_gradient_hessian(scores, labels, *, objective="precision_at_recall", target=None, form="fp",
                               quantile="kernel", bandwidth=0.05, surrogate="logistic", groups=None,
                               logloss_weight=0.0, min_hessian=1e-6, sample_weight=None) -> GradientHessian:
    r"""Gradient and a positive diagonal Hessian of a quantile loss with respect to the raw scores.

    The loss is :func:`~quantile_surrogate.objectives.objective_loss` summed over its
    penalised rows ``P`` (eq. (7), (9)/(10) or the Neyman-Pearson form, by ``objective``):

    .. math::
        L(F) = \sum_{i \in P} l(z_i), \qquad z_i = \pm\big(F_i - \theta_{g(i)}(F)\big), \qquad
        \theta_g = \hat q\big(F_{A \cap G_g}, 1 - c\big) = \sum_{j \in A \cap G_g} w_j F_j,

    with ``+`` when negatives are penalised and ``-`` when positives are, ``g(i)`` the
    row's group (one group without ``groups``) and ``w`` the estimator's weights on the
    order statistics (eq. (13) for the kernel; ``w >= 0`` and ``sum w = 1`` for every
    built-in estimator). The gradient is computed by autograd through that function, so
    it includes the threshold's pull on the rows of ``A``:
    ``dL/dF_j = ±l'(z_j) 1[j in P] ∓ S_{g(j)} w_j`` with ``S_g = sum_{i in P ∩ G_g} l'(z_i)``.

    **Hessian.** ``theta`` is piecewise linear in ``F`` (the weights depend on ranks only),
    so away from ties the exact Hessian is the Gauss-Newton matrix
    ``M = sum_{i in P} d_i (e_i - w^{g(i)}) (e_i - w^{g(i)})^T`` with ``d_i = l''(z_i)``.
    Its diagonal is a poor curvature for trees: on a row of ``A`` it is ``T w_j^2``, but a
    leaf moves all its rows together, and the coupling terms ``T w_j w_k`` dominate.
    Instead we use the diagonal majoriser (``(a - b)(a - b)^T <= 2 a a^T + 2 b b^T`` and,
    for ``w >= 0`` with ``sum w = 1``, ``w w^T <= diag(w)`` by Cauchy-Schwarz):

    .. math::
        M \preceq 2\,\mathrm{diag}(h), \qquad
        h_j = d_j 1[j \in P] + T_{g(j)} w_j, \qquad T_g = \sum_{i \in P \cap G_g} d_i,

    then add the log-loss term and clip: ``hess = max(h + mu p(1 - p), min_hessian)`` with
    ``p = sigmoid(F)``, ``mu = logloss_weight``. So ``hess`` is positive, bounded by
    ``1/4 (1 + mu) + T_g``, and the tree's Newton step on a fixed partition is at most twice
    the Gauss-Newton one (a learning rate <= 1/2 cannot overshoot its quadratic model).
    For a window row of ``A`` the step ``S_g w_j / (T_g w_j) = S_g / T_g`` does not depend on
    how thinly the kernel spreads its weight. ``d`` is ``sigmoid(z) sigmoid(-z)`` for the
    logistic surrogate and ``1/4`` for the hinge (``SURROGATE_CURVATURES``).

    Parameters
    ----------
    scores : array-like of shape (n,)
        Raw scores (margins) ``F``, never probabilities.
    labels : array-like of shape (n,)
        Binary labels, 1 (or True) is positive.
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1) or None
        The recall, rate or FPR; None is the objective's ``default_target``.
    form, quantile, bandwidth, surrogate
        As in :func:`~quantile_surrogate.objectives.objective_loss`.
    groups : int array of shape (n,) or None
        Group codes 0..G-1: one threshold per group (the constraint in every group).
    logloss_weight : float >= 0, default=0.0
        ``mu``: adds ``mu`` times the summed log loss ``sum log(1 + e^{-y± F})`` to ``L``.
    min_hessian : float > 0, default=1e-6
        The floor of ``hess``.
    sample_weight : array of shape (n,), optional
        Frequency weights ``v_i >= 0``: ``L = sum_{i in P} v_i l(z_i)`` (plus ``v_i`` times the
        log-loss term) with the weighted quantile threshold of
        :mod:`quantile_surrogate.quantiles._weighted`; ``grad`` and ``hess`` are those of this sum (row
        curvatures times ``v_i``), so integer weights equal repeating rows. A row of weight 0
        gets ``grad = 0`` and ``hess = min_hessian``.

    Returns
    -------
    GradientHessian
        ``(loss, grad, hess, threshold)``, float64.

    Raises
    ------
    TrainingDivergedError
        If a score is NaN or inf (boosting diverged).
    ValueError
        If ``scores`` and ``labels`` differ in length, a label is not binary, the objective or
        ``form`` is unknown, no row (or no weight) is in the subset ``A``, or ``sample_weight``
        is invalid.

    See Also
    --------
    lightgbm_objective, xgboost_objective : The same maths as a custom objective.
    quantile_surrogate.objectives.objective_loss : The loss differentiated here.

    Notes
    -----
    Sums, not means: a row's gradient is on the same scale as the log loss's ``p - y``, so
    LightGBM's ``min_sum_hessian_in_leaf`` and ``lambda_l2`` mean what they mean for log
    loss. Rows outside the kernel's window and outside ``P`` get ``grad = 0`` and
    ``hess = min_hessian`` (plus the log-loss term).

    Examples
    --------
    Point threshold of positives {0, 2} at recall 1/2 is 0; the negative at 0 costs
    ``log 2`` and pulls with ``sigmoid(0) = 1/2``; the threshold passes ``-1/2`` to the
    positive that sets it:

    >>> from quantile_surrogate.boosting import objective_gradient_hessian
    >>> out = objective_gradient_hessian([0.0, 2.0, 0.0], [1, 1, 0], target=0.5, quantile="point")
    >>> round(out.loss, 4), out.grad.tolist(), out.hess.tolist()
    (0.6931, [-0.5, 0.0, 0.5], [0.25, 1e-06, 0.25])
    """
    spec = get_objective(objective)
    target = spec.default_target if target is None else target
    scores, labels = _check_scores_labels(scores, labels)
    F = torch.as_tensor(scores).clone().requires_grad_(True)
    positive = torch.as_tensor(labels == 1)
    in_subset = spec.subset_mask(positive)
    if not bool(in_subset.any()):
        raise ValueError(EMPTY_SUBSET_MESSAGE.format(subset=spec.subset, objective=spec.name))
    codes = None if groups is None else torch.as_tensor(np.asarray(groups, dtype=np.int64).reshape(-1))
    penalized = ~positive if spec.penalized[form] == "negatives" else positive
    weight = None if sample_weight is None else torch.as_tensor(check_sample_weight(sample_weight, F.numel()))
    weighted = {} if weight is None else {"weight": weight, "threshold_weight": None}
    if weight is not None and not bool((weight[in_subset] > 0).any()):
        raise ValueError(EMPTY_SUBSET_MESSAGE.format(subset=spec.subset, objective=spec.name) + ZERO_WEIGHT_SUFFIX)
    loss_mean, threshold = objective_loss(F, positive, objective=spec.name, target=target, form=form,
                                          quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                                          groups=codes, **weighted)
    # objective_loss averages over the penalised rows; the sum is that mean times their count (or weight).
    if weight is None:
        loss = loss_mean * max(int(penalized.sum()), 1)
    else:
        mass = float(weight[penalized].sum())
        loss = loss_mean * (mass if mass > 0 else 1.0)
    row_threshold = threshold if codes is None else threshold[codes]
    curvature = row_curvature(F, row_threshold, penalized, spec.penalized[form] == "negatives", surrogate, weight)
    return majorised_gradient_hessian(loss, F, threshold, codes, curvature, positive, logloss_weight=logloss_weight,
                                      min_hessian=min_hessian, weight=weight)


def row_curvature(F, row_threshold, penalized, negatives: bool, surrogate: str, weight=None) -> torch.Tensor:
    """``d_i = l''(z_i)`` on the penalised rows (times ``v_i`` with weights), 0 elsewhere and where ``theta`` is NaN.

    ``z_i = F_i - theta_{g(i)}`` when negatives are penalised, ``theta_{g(i)} - F_i`` when positives
    are; ``row_threshold`` is each row's threshold (NaN for a group whose threshold is undefined).
    """
    z = (F - row_threshold if negatives else row_threshold - F).detach()
    curvature = torch.where(penalized & ~torch.isnan(z), SURROGATE_CURVATURES[surrogate](z), 0.0)
    return curvature if weight is None else curvature * weight


def majorised_gradient_hessian(loss, F, threshold, codes, curvature, positive, *, logloss_weight=0.0,
                               min_hessian=1e-6, weight=None) -> GradientHessian:
    r"""The :class:`GradientHessian` of a summed loss ``loss(F)`` whose thresholds ``theta`` are quantiles of ``F``.

    The one home of the diagonal majoriser of :func:`objective_gradient_hessian` (its Notes have
    the proof), shared by every boosting objective whose loss is ``sum_{i in P} l(z_i)`` with one
    threshold per group: ``grad`` is autograd's ``dL/dF``, and

    .. math::
        h_j = d_j 1[j \in P] + T_{g(j)} |w_j|, \qquad T_g = \sum_{i \in P \cap G_g} d_i,

    with ``d`` = ``curvature`` (:func:`row_curvature`) and ``w_j = d theta_{g(j)} / dF_j``, read
    off autograd as the gradient of ``sum_g T_g theta_g`` (NaN thresholds, groups that do not
    count, are left out). Then the log-loss term ``mu`` and the floor ``min_hessian``.
    ``codes`` None means one threshold (shape ()), else the group of each row (threshold (G,)).
    """
    grad, = torch.autograd.grad(loss, F, retain_graph=True)
    if codes is None:
        coupling = curvature.sum()
    else:
        n_groups = threshold.numel()
        coupling = torch.zeros(n_groups, dtype=F.dtype).index_add_(0, codes, curvature)
    # d/dF of sum_g T_g theta_g is T_{g(j)} w_j on row j: the threshold's curvature share (w >= 0 assumed;
    # abs() keeps the Hessian positive for a user estimator whose weights are not).
    subset_term, = torch.autograd.grad(torch.nansum(coupling * threshold), F, allow_unused=True)
    subset_term = torch.zeros_like(F) if subset_term is None else subset_term.abs()
    hess = curvature + subset_term
    total = float(loss.detach())
    if logloss_weight:
        grad_term, hess_term, value = logloss_terms(F, positive, logloss_weight, weight)
        grad, hess, total = grad + grad_term, hess + hess_term, total + value
    hess = hess.clamp(min=min_hessian)
    return GradientHessian(total, grad.numpy(), hess.numpy(), threshold.detach().numpy())


def logloss_terms(F, positive, logloss_weight: float, weight=None):
    r"""``(grad, hess, loss)`` of the added log loss ``mu sum_i v_i log(1 + e^{-y±_i F_i})`` (``mu = logloss_weight``).

    ``grad_i = mu v_i (p_i - y_i)``, ``hess_i = mu v_i p_i (1 - p_i)`` with ``p = sigmoid(F)`` and
    ``v`` the row weights (1 without ``weight``); the one home of the log-loss term of every
    boosting objective (single machine and distributed).
    """
    sign = positive.to(F.dtype) * 2 - 1
    probability = torch.sigmoid(F.detach())
    row = torch.ones_like(F.detach()) if weight is None else weight.to(F.dtype)
    grad = logloss_weight * row * (probability - positive.to(F.dtype))
    hess = logloss_weight * row * probability * (1 - probability)
    return grad, hess, logloss_weight * float((row * torch.nn.functional.softplus(-sign * F.detach())).sum())
