r"""Tree-boosting objectives for rate-constrained operating points (LightGBM and XGBoost).

A boosting round fits a tree to every row's gradient ``g_i = dL/dF_i`` and Hessian
``h_i`` of a loss ``L`` of the raw scores ``F`` (the margins) and moves each leaf by
``-sum g / (sum h + lambda)``. Any loss of :mod:`quantile_surrogate.objectives` is a loss
of the score vector, so the paper's argument (section 3) carries over unchanged: the
threshold ``theta = q(F_A, 1 - c)`` is a differentiable function of the scores of the
subset ``A``, and its dependence on them is part of the gradient.

:func:`objective_gradient_hessian` is the maths (autograd through
:func:`~quantile_surrogate.objectives.objective_loss`, so the loss has one home);
:func:`lightgbm_objective` and :func:`xgboost_objective` wrap it in a callable each library
accepts as its custom objective. Neither library is imported here::

    fn = lightgbm_objective("precision_at_recall", target=0.9)
    booster = lgb.train({"objective": fn}, lgb.Dataset(X, y))
    clf = lgb.LGBMClassifier(objective=fn).fit(X, y)
    scores = clf.predict(X, raw_score=True)  # margins: a custom objective has no link
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from ._validation import check_bandwidth, check_number, check_option, check_sample_weight, check_target
from .losses import SURROGATES
from .objectives import get_objective, objective_loss
from .quantiles import resolve_quantile

# SURROGATE_CURVATURES is a detail of the Hessian (documented in objective_gradient_hessian), not in __all__.
__all__ = [
    "BoostingObjective",
    "GradientHessian",
    "lightgbm_objective",
    "xgboost_objective",
    "objective_gradient_hessian",
]


def _logistic_curvature(z: torch.Tensor) -> torch.Tensor:
    # d^2/dz^2 log(1 + e^z) = sigmoid(z) sigmoid(-z); the product form does not cancel for large |z|.
    return torch.sigmoid(z) * torch.sigmoid(-z)


def _hinge_curvature(z: torch.Tensor) -> torch.Tensor:
    # max(0, 1 + z) is piecewise linear: its second derivative is 0 almost everywhere. We use
    # the logistic's largest curvature, 1/4, on every penalised row instead, so the tree's
    # Newton step is a gradient step of size 4 * learning_rate, as it is for a linear loss.
    return torch.full_like(z, 0.25)


#: ``l''(z)`` of each surrogate of :data:`~quantile_surrogate.losses.SURROGATES` as used in the Hessian.
SURROGATE_CURVATURES = {"logistic": _logistic_curvature, "hinge": _hinge_curvature}

NONFINITE_SCORES_MESSAGE = (
    "The boosting scores contain NaN or inf ({count} of {total}); training diverged. Lower the learning "
    "rate or raise `min_hessian`."
)
EMPTY_SUBSET_MESSAGE = (
    "No training row belongs to the subset A ({subset}) that sets the threshold of {objective!r}; "
    "the objective is undefined. Check the labels."
)


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


def _check_scores_labels(scores, labels):
    """``(scores, labels)`` as 1-D float64 / NumPy arrays of one length, finite scores, binary labels."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"`labels` has {labels.size} entries but `scores` has {scores.size}; one label per row.")
    finite = np.isfinite(scores)
    if not finite.all():
        raise ValueError(NONFINITE_SCORES_MESSAGE.format(count=int((~finite).sum()), total=scores.size))
    if labels.dtype != bool and not np.all((labels == 0) | (labels == 1)):
        shown = np.unique(labels)[:6].tolist()
        raise ValueError(f"`labels` must be binary, 0/1 or bool; got values {shown}. Map the positive class to 1.")
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
        :mod:`quantile_surrogate._weighted`; ``grad`` and ``hess`` are those of this sum (row
        curvatures times ``v_i``), so integer weights equal repeating rows. A row of weight 0
        gets ``grad = 0`` and ``hess = min_hessian``.

    Returns
    -------
    GradientHessian
        ``(loss, grad, hess, threshold)``, float64.

    Raises
    ------
    ValueError
        If ``scores`` and ``labels`` differ in length, a score is NaN or inf (training
        diverged), a label is not binary, the objective or ``form`` is unknown, no row (or no
        weight) is in the subset ``A``, or ``sample_weight`` is invalid.

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
        raise ValueError(EMPTY_SUBSET_MESSAGE.format(subset=spec.subset, objective=spec.name)
                         + " (every row of it has `sample_weight` 0)")
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
    z = (F - row_threshold if spec.penalized[form] == "negatives" else row_threshold - F).detach()
    curvature = torch.where(penalized & ~torch.isnan(z), SURROGATE_CURVATURES[surrogate](z), 0.0)
    if weight is not None:
        curvature = curvature * weight
    if codes is None:
        coupling = curvature.sum()
    else:
        n_groups = threshold.numel()
        coupling = torch.zeros(n_groups, dtype=F.dtype).index_add_(0, codes, curvature)
    grad, = torch.autograd.grad(loss, F, retain_graph=True)
    # d/dF of sum_g T_g theta_g is T_{g(j)} w_j on row j: the threshold's curvature share (w >= 0 assumed;
    # abs() keeps the Hessian positive for a user estimator whose weights are not).
    subset_term, = torch.autograd.grad(torch.nansum(coupling * threshold), F, allow_unused=True)
    subset_term = torch.zeros_like(F) if subset_term is None else subset_term.abs()
    hess = curvature + subset_term
    total = float(loss.detach())
    if logloss_weight:
        sign = positive.to(F.dtype) * 2 - 1
        probability = torch.sigmoid(F.detach())
        row = torch.ones_like(F.detach()) if weight is None else weight.to(F.dtype)
        grad = grad + logloss_weight * row * (probability - positive.to(F.dtype))
        hess = hess + logloss_weight * row * probability * (1 - probability)
        total += logloss_weight * float((row * torch.nn.functional.softplus(-sign * F.detach())).sum())
    hess = hess.clamp(min=min_hessian)
    return GradientHessian(total, grad.numpy(), hess.numpy(), threshold.detach().numpy())


def _dataset_labels_and_weights(data):
    """``(labels, weights)`` of a LightGBM Dataset or an XGBoost DMatrix (weights None if unset)."""
    labels = np.asarray(data.get_label())
    weights = data.get_weight()
    if weights is not None and np.size(weights) == 0:
        weights = None
    return labels, weights


@dataclass(frozen=True)
class BoostingObjective:
    """A custom objective for LightGBM and XGBoost, built by :func:`lightgbm_objective` / :func:`xgboost_objective`.

    Called as ``fn(preds, dataset)`` (``lgb.train``: a ``lightgbm.Dataset``; ``xgb.train``:
    an ``xgboost.DMatrix``) or ``fn(y_true, y_pred, sample_weight=None)`` (``LGBMClassifier``,
    ``XGBClassifier``); returns ``(grad, hess)`` shaped like the predictions. The library's
    row weights, if any and not all 1, become frequency weights of the loss. Build it with
    the factories, which check the settings; a frozen dataclass, so it pickles with the model.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1), default=0.9
        The recall, rate or FPR.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Attributes
    ----------
    objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian
        As in Parameters (checked by the factories).

    See Also
    --------
    objective_gradient_hessian : The maths of each call.

    Examples
    --------
    >>> from quantile_surrogate.boosting import lightgbm_objective
    >>> fn = lightgbm_objective("recall_at_fpr", target=0.1)
    >>> fn.objective, fn.target, fn.quantile
    ('recall_at_fpr', 0.1, 'kernel')
    >>> out = fn.gradient_hessian([0.5, -0.5, 0.0], [1, 0, 0])  # the GradientHessian of one round
    >>> out.grad.shape
    (3,)
    """

    objective: str = "precision_at_recall"
    target: float = 0.9
    form: str = "fp"
    quantile: object = "kernel"
    bandwidth: float = 0.05
    surrogate: str = "logistic"
    groups: np.ndarray | None = None
    logloss_weight: float = 0.0
    min_hessian: float = 1e-6

    def gradient_hessian(self, scores, labels, sample_weight=None) -> GradientHessian:
        """:func:`objective_gradient_hessian` with these settings (and the library's row weights)."""
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        if self.groups is not None and np.shape(self.groups) != scores.shape:
            raise ValueError(f"`groups` has {np.size(self.groups)} codes but the library passed {scores.size} "
                             "rows; build the objective with one group code per training row.")
        return objective_gradient_hessian(
            scores, labels, objective=self.objective, target=self.target, form=self.form, quantile=self.quantile,
            bandwidth=self.bandwidth, surrogate=self.surrogate, groups=self.groups,
            logloss_weight=self.logloss_weight, min_hessian=self.min_hessian, sample_weight=sample_weight)

    def __call__(self, first, second, sample_weight=None):
        """``(grad, hess)`` for ``(preds, dataset)`` (``lgb.train``, ``xgb.train``) or ``(y_true, y_pred[, weight])``."""
        if hasattr(second, "get_label"):  # lgb.train / xgb.train: (preds, Dataset or DMatrix)
            preds = first
            labels, sample_weight = _dataset_labels_and_weights(second)
        else:  # the scikit-learn wrappers: (y_true, y_pred[, weight])
            labels, preds = first, second
        if sample_weight is not None and np.all(np.asarray(sample_weight) == 1):
            sample_weight = None  # unit weights: the unweighted path, bit for bit
        preds = np.asarray(preds)
        out = self.gradient_hessian(preds, labels, sample_weight)
        return out.grad.reshape(preds.shape), out.hess.reshape(preds.shape)


def _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian):
    spec = get_objective(objective)
    target = spec.default_target if target is None else check_target(target, spec.target_keyword)
    check_option(form, spec.forms(), "form")
    resolve_quantile(quantile, bandwidth)  # a TypeError / ValueError for a bad name, here and not mid-training
    bandwidth = check_bandwidth(bandwidth)
    check_option(surrogate, SURROGATES, "surrogate")
    logloss_weight = check_number(logloss_weight, "logloss_weight")
    if not (math.isfinite(logloss_weight) and logloss_weight >= 0):
        raise ValueError(f"`logloss_weight` must be a finite number >= 0; got {logloss_weight!r}. "
                         "0 is the pure quantile loss.")
    min_hessian = check_number(min_hessian, "min_hessian")
    if not (math.isfinite(min_hessian) and min_hessian > 0):
        raise ValueError(f"`min_hessian` must be a finite number > 0; got {min_hessian!r}, e.g. 1e-6.")
    if groups is not None:
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.dtype.kind not in "iu" or (groups.size and groups.min() < 0):
            raise ValueError("`groups` must be a 1-D array of integer codes 0..G-1, one per training row; "
                             "encode labels with numpy.unique(..., return_inverse=True).")
    return BoostingObjective(spec.name, target, form, quantile, bandwidth, surrogate, groups, logloss_weight,
                             min_hessian)


def lightgbm_objective(objective="precision_at_recall", target=0.9, *, form="fp", quantile="kernel",
                       bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                       min_hessian=1e-6) -> BoostingObjective:
    r"""A LightGBM custom objective for ``objective`` at ``target``.

    Pass it as ``lgb.train(params={"objective": fn, ...})`` or ``LGBMClassifier(objective=fn)``.
    With a custom objective LightGBM returns raw margins: use ``predict(..., raw_score=True)``
    and threshold them yourself (e.g. with :func:`~quantile_surrogate.objectives.constraint_threshold`),
    or use :class:`~quantile_surrogate.estimators.QuantileBoostingClassifier`, which does. To start
    from a log-loss model pass its margins as ``init_score`` or the model as ``init_model``.
    Arguments are checked here, not mid-training.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Returns
    -------
    BoostingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``,
        returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, or ``groups`` is not 1-D of codes >= 0.

    See Also
    --------
    xgboost_objective : The same for XGBoost.
    objective_gradient_hessian : The maths.

    Notes
    -----
    Each round gets the gradient and a positive diagonal Hessian of

    .. math::
        L(F) = \sum_{i \in P} l\big(\pm(F_i - \theta(F))\big), \qquad \theta = \hat q(F_A, 1 - c),

    the objective's loss (eq. (7), (9)/(10) or the Neyman-Pearson form) summed over its
    penalised rows, through the threshold (:func:`objective_gradient_hessian`).

    Examples
    --------
    The objective as the scikit-learn wrappers call it, ``fn(y_true, y_pred)``:

    >>> from quantile_surrogate.boosting import lightgbm_objective
    >>> fn = lightgbm_objective("precision_at_recall", target=0.5, quantile="point")
    >>> grad, hess = fn([1, 1, 0], [0.0, 2.0, 0.0])
    >>> grad.tolist(), hess.tolist()
    ([-0.5, 0.0, 0.5], [0.25, 1e-06, 0.25])

    Training a booster (needs the ``boost`` extra):

    >>> import lightgbm as lgb
    >>> import numpy as np
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    >>> params = {"objective": lightgbm_objective(target=0.8), "verbose": -1, "num_threads": 1}
    >>> booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=10)
    >>> margins = booster.predict(X, raw_score=True)
    >>> bool(precision_at_recall(y, margins, 0.8) > y.mean())  # better than flagging every row
    True
    """
    return _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)


def xgboost_objective(objective="precision_at_recall", target=0.9, *, form="fp", quantile="kernel",
                      bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                      min_hessian=1e-6) -> BoostingObjective:
    r"""An XGBoost custom objective, for ``xgb.train(params, dtrain, obj=fn)`` or ``XGBClassifier(objective=fn)``.

    The same maths as :func:`lightgbm_objective`. XGBoost passes margins to a custom
    objective; predict with ``output_margin=True``. Start from a log-loss model with
    ``base_margin=`` or ``xgb_model=``. Arguments are checked here, not mid-training.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Returns
    -------
    BoostingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``,
        returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, or ``groups`` is not 1-D of codes >= 0.

    See Also
    --------
    lightgbm_objective : The same for LightGBM.
    objective_gradient_hessian : The maths.

    Notes
    -----
    Each round gets the gradient and a positive diagonal Hessian of

    .. math::
        L(F) = \sum_{i \in P} l\big(\pm(F_i - \theta(F))\big), \qquad \theta = \hat q(F_A, 1 - c),

    the objective's loss (eq. (7), (9)/(10) or the Neyman-Pearson form) summed over its
    penalised rows, through the threshold (:func:`objective_gradient_hessian`).

    Examples
    --------
    >>> import numpy as np
    >>> import xgboost as xgb
    >>> from quantile_surrogate.boosting import xgboost_objective
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    >>> fn = xgboost_objective("precision_at_recall", target=0.8)
    >>> booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=y), num_boost_round=10, obj=fn)
    >>> margins = booster.predict(xgb.DMatrix(X), output_margin=True)
    >>> bool(precision_at_recall(y, margins, 0.8) > y.mean())
    True
    """
    return _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)
