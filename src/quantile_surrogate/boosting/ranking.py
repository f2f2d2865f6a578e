r"""Precision@K within each query as a boosting objective: a row's gradient and a positive diagonal Hessian.

Each query ``q`` is a group whose threshold is its own segment quantile
``theta_q = q(F_q, 1 - k/n_q)`` (:func:`~quantile_surrogate.losses.precision_at_k_loss`, one batched
:func:`~quantile_surrogate.quantiles.segment_quantile`), so the maths is that of
:func:`~quantile_surrogate.boosting.objective_gradient_hessian` with one threshold per group: the
gradient is autograd's through the loss, and the Hessian is the same diagonal majoriser
(:func:`~quantile_surrogate.boosting.gradient.majorised_gradient_hessian`, its one home). The
LightGBM and XGBoost callables that read the queries off the library's data are in
:mod:`quantile_surrogate.boosting.adapters`.
"""

from __future__ import annotations

import numpy as np
import torch

from .._utils.checks import check_integer
from .._utils.group_checks import check_group_array
from ..losses.named import PRECISION_FORMS
from ..losses.ranking import check_ranking_settings, precision_at_k_loss
from .gradient import GradientHessian, _check_scores_labels, majorised_gradient_hessian, row_curvature

__all__ = ["precision_at_k_gradient_hessian", "query_codes", "RANKING_OBJECTIVES"]

#: The objective names of the boosting adapters whose thresholds are per query (need query groups).
RANKING_OBJECTIVES = ("precision_at_k",)

#: ``ValueError`` of :func:`precision_at_k_gradient_hessian` when no query can change its precision@k.
NO_LIVE_QUERY_MESSAGE = (
    "No query counts for precision@{k}: a query needs more than k={k} rows and both relevant and irrelevant "
    "rows ({n_queries} queries, {mixed} with both kinds, {large} with more than k rows). Check the labels and "
    "the query sizes, or use a smaller k."
)
#: ``ValueError`` of :func:`query_codes` for sizes that do not cover the rows.
QUERY_SIZES_MESSAGE = (
    "`{name}` must hold the sizes of consecutive queries, integers >= 1 summing to the number of rows ({n}); "
    "got {count} sizes summing to {total}{smallest}. LightGBM's Dataset(group=...) and XGBoost's "
    "DMatrix.set_group take the same sizes."
)


def query_codes(sizes, n: int, name: str = "group") -> np.ndarray:
    """The query code of each row, ``0..Q-1``, from the sizes of consecutive queries (LightGBM's ``group``).

    Parameters
    ----------
    sizes : array-like of int, shape (Q,)
        Rows per query, in row order; each >= 1, summing to ``n``.
    n : int
        The number of rows.
    name : str, default="group"
        The argument's name, for the message.

    Returns
    -------
    ndarray of int64, shape (n,)

    Raises
    ------
    ValueError
        :data:`QUERY_SIZES_MESSAGE` if a size is not an integer >= 1 or the sizes do not sum to ``n``.

    Examples
    --------
    >>> query_codes([2, 3], 5).tolist()
    [0, 0, 1, 1, 1]
    """
    values = np.asarray(sizes).reshape(-1) if np.ndim(sizes) <= 1 else np.asarray(sizes)
    integral = values.dtype.kind in "iu" or (values.dtype.kind == "f" and np.all(np.isfinite(values))
                                             and np.all(values == np.round(values)))
    smallest = f", the smallest {values.min()}" if values.size and integral and values.min() < 1 else ""
    if values.ndim != 1 or not integral or values.size == 0 or values.min() < 1 or values.sum() != n:
        total = values.sum() if integral and values.size else "?"
        raise ValueError(QUERY_SIZES_MESSAGE.format(name=name, n=n, count=values.size, total=total,
                                                    smallest=smallest))
    values = values.astype(np.int64)
    return np.repeat(np.arange(values.size, dtype=np.int64), values)


def precision_at_k_gradient_hessian(scores, labels, k: int, *, query, form="fp", quantile="kernel",
                                    bandwidth=0.05, surrogate="logistic", logloss_weight=0.0,
                                    min_hessian=1e-6) -> GradientHessian:
    r"""Gradient and a positive diagonal Hessian of the per-query precision@k loss with respect to the raw scores.

    The loss is :func:`~quantile_surrogate.losses.precision_at_k_loss` with ``reduction="sum"``
    (eq. (9), ``\label{eq:unconstrained_fp_at_ppr}``, or eq. (10),
    ``\label{eq:unconstrained_tp_at_ppr}``, in every query that counts, ``Q*``):

    .. math::
        L(F) = \sum_{q \in Q^*} \sum_{i \in P_q} l(z_i), \qquad
        z_i = \pm\big(F_i - \theta_q(F)\big), \qquad \theta_q = \hat q(F_q, 1 - k/n_q),

    ``P_q`` the query's negatives (``"fp"``, sign ``+``) or positives (``"tp"``, sign ``-``).
    ``grad`` is autograd's ``dL/dF`` (the threshold's pull on the query's rows included), and
    ``hess`` the diagonal majoriser of
    :func:`~quantile_surrogate.boosting.objective_gradient_hessian` with each query as a group:

    .. math::
        h_j = d_j 1[j \in P] + T_{q(j)} w_j, \qquad T_q = \sum_{i \in P_q} d_i, \qquad
        w_j = \partial \theta_{q(j)} / \partial F_j,

    plus ``mu p (1 - p)`` for ``logloss_weight = mu``, clipped at ``min_hessian``.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Raw scores (margins) ``F``.
    labels : array-like of shape (n,)
        Binary relevance, 1 (or True) is relevant.
    k : int >= 1
        The ``K`` of precision@K.
    query : array-like of int, shape (n,)
        The query of each row, codes ``0..Q-1`` (any order of rows).
    form : {"fp", "tp"}, default="fp"
        Penalise each query's irrelevant rows above its threshold (eq. (9)) or its relevant rows below it (eq. (10)).
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.segments.SEGMENT_ESTIMATORS`.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth, on each query's own rank scale.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    logloss_weight : float >= 0, default=0.0
        ``mu``: adds ``mu`` times the summed log loss.
    min_hessian : float > 0, default=1e-6
        The floor of ``hess``.

    Returns
    -------
    GradientHessian
        ``(loss, grad, hess, threshold)``, float64; ``threshold`` of shape (Q,), NaN for a query
        that does not count.

    Raises
    ------
    TrainingDivergedError
        If a score is NaN or inf.
    ValueError
        If the lengths differ, a label is not binary, a query code is negative, a setting is
        unknown, or no query counts (:data:`NO_LIVE_QUERY_MESSAGE`).

    See Also
    --------
    quantile_surrogate.losses.precision_at_k_loss : The loss differentiated here.
    lightgbm_objective : ``lightgbm_objective("precision_at_k", k=...)`` hands this to LightGBM.

    Notes
    -----
    A query counts when ``n_q > k`` and it has relevant and irrelevant rows (the loss's rule);
    the rows of the others get ``grad = 0`` and ``hess = min_hessian`` (plus the log-loss term).
    Sums, not means, as in :func:`~quantile_surrogate.boosting.objective_gradient_hessian`.

    Examples
    --------
    One query of four rows, k = 2, point threshold 1 (the 2nd smallest score); the negative at 2
    costs softplus(1) and pulls with sigmoid(1), the negative at 0 softplus(-1), and the
    threshold passes minus their sum to the row that sets it:

    >>> from quantile_surrogate.boosting import precision_at_k_gradient_hessian
    >>> out = precision_at_k_gradient_hessian([3.0, 2.0, 1.0, 0.0], [1, 0, 1, 0], 2, query=[0, 0, 0, 0],
    ...                                       quantile="point")
    >>> round(out.loss, 4), out.grad.round(4).tolist(), out.threshold.tolist()
    (1.6265, [0.0, 0.7311, -1.0, 0.2689], [1.0])
    """
    k = check_integer(k, "k", minimum=1)
    bandwidth = check_ranking_settings(k, form, quantile, bandwidth, surrogate, "sum", False)
    scores, labels = _check_scores_labels(scores, labels)
    codes = torch.as_tensor(check_group_array(query, scores.size, "query"), dtype=torch.int64)
    F = torch.as_tensor(scores).clone().requires_grad_(True)
    positive = torch.as_tensor(labels == 1)
    loss, threshold = precision_at_k_loss(F, positive, k, query=codes, form=form, quantile=quantile,
                                          bandwidth=bandwidth, surrogate=surrogate, reduction="sum",
                                          return_threshold=True, validate_args=False)
    if bool(torch.isnan(threshold).all()):
        _raise_no_live_query(positive, codes, k)
    negatives = PRECISION_FORMS[form] == "negatives"
    penalized = ~positive if negatives else positive
    curvature = row_curvature(F, threshold[codes], penalized, negatives, surrogate)
    return majorised_gradient_hessian(loss, F, threshold, codes, curvature, positive,
                                      logloss_weight=logloss_weight, min_hessian=min_hessian)


def _raise_no_live_query(positive, codes, k):
    sizes = np.bincount(codes.numpy())
    relevant = np.bincount(codes.numpy(), weights=positive.numpy().astype(np.float64), minlength=sizes.size)
    present = sizes > 0
    mixed = int(((relevant > 0) & (relevant < sizes) & present).sum())
    raise ValueError(NO_LIVE_QUERY_MESSAGE.format(k=k, n_queries=int(present.sum()), mixed=mixed,
                                                  large=int((sizes > k).sum())))
