r"""Precision@K within each query (search and recommendation ranking): eqs. (9) and (10) per query.

:func:`precision_at_rate_loss` puts one threshold on the whole batch; in ranking, each query ``q``
shows its own top ``K`` rows, so each gets its own threshold ``theta_q = q(f(X_q), 1 - K/n_q)``,
all of them from one batched call of :func:`~quantile_surrogate.quantiles.segment_quantile` (no
loop over queries). The penalty and its reduction are those of every other loss
(:func:`~quantile_surrogate.losses._rate_loss.penalty`).
"""

from __future__ import annotations

import math

import torch

from .._utils.checks import (
    check_bandwidth,
    check_bool,
    check_groups,
    check_integer,
    check_option,
    check_reduction,
    check_scores_and_targets,
)
from ..quantiles.segments import SEGMENT_ESTIMATORS, segment_estimates
from ._rate_loss import penalized_rows, penalty
from .general import QuantileLossOutput
from .named import PRECISION_FORMS
from .surrogates import SURROGATES

__all__ = ["precision_at_k_loss"]


def precision_at_k_loss(scores, labels, k: int, *, query, form: str = "fp", quantile: str = "kernel",
                        bandwidth: float = 0.05, surrogate: str = "logistic", reduction: str = "mean",
                        return_threshold: bool = False, validate_args: bool = True):
    r"""Precision among the top ``k`` rows of each query: eq. (9) or (10) with one threshold per query.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)`` of the rows of every query in the batch.
    labels : Tensor of shape (N,)
        Binary relevance, {0, 1} of any numeric dtype, or bool.
    k : int >= 1
        How many top rows of each query count (the ``K`` of precision@K).
    query : integer Tensor of shape (N,)
        The query of each row, a code in ``0..Q-1``; rows may come in any order.
    form : {"fp", "tp"}, default="fp"
        ``"fp"`` penalises the query's negatives above its threshold (eq. (9)), ``"tp"`` its
        positives below it (eq. (10)).
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.segments.SEGMENT_ESTIMATORS`.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h``, on each query's own rank scale ``i*/n_q``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` gives the per-row loss, shape (N,), 0 on rows not penalised and on the rows of
        excluded queries; ``"sum"`` sums it; ``"mean"`` divides the sum by the number of penalised
        rows of the queries that count (see Notes), at least 1.
    return_threshold : bool, default=False
        Return :class:`~quantile_surrogate.losses.QuantileLossOutput` ``(loss, threshold)``, the
        threshold of shape (Q,), ``Q = query.max() + 1``: ``theta_q``, NaN for an excluded query
        (and for a code with no row).
    validate_args : bool, default=True
        Check the inputs (types, shapes, binary labels, finite scores, query codes); the
        settings are always checked.

    Returns
    -------
    Tensor or QuantileLossOutput
        The loss, in the scores' dtype, shape () (or (N,) for ``reduction="none"``).

    Raises
    ------
    TypeError
        If ``scores`` or ``labels`` is not a tensor, ``scores`` not floating point, ``query`` not
        an integer tensor, ``k`` not an integer, or an option not a string.
    ValueError
        If ``k < 1``, ``labels`` or ``query`` has not one entry per row, a label is not binary, a
        score is NaN or inf, a query code is negative, ``bandwidth`` is not > 0 or an option is unknown.

    See Also
    --------
    quantile_surrogate.losses.modules.PrecisionAtKLoss : The module form.
    quantile_surrogate.losses.precision_at_rate_loss : One threshold for the whole batch.
    quantile_surrogate.metrics.precision_at_k_per_query : The exact metric.

    Notes
    -----
    For query ``q`` with rows ``X_q`` (``n_q`` of them) the threshold is the
    ``(1 - k/n_q)``-quantile of its scores, and the FP form (eq. (9),
    ``\label{eq:unconstrained_fp_at_ppr}``) or TP form (eq. (10),
    ``\label{eq:unconstrained_tp_at_ppr}``) is summed over the queries that count, ``Q*``:

    .. math::
        \theta_q = \hat q\big(f(X_q), 1 - k/n_q\big), \qquad
        L_{fp} = \sum_{q \in Q^*} \sum_{i \in X_q: y_i = 0} l\big(f(x_i) - \theta_q\big), \qquad
        L_{tp} = \sum_{q \in Q^*} \sum_{i \in X_q: y_i = 1} l\big(\theta_q - f(x_i)\big).

    Per query this is :func:`precision_at_rate_loss` at ``rate = k/n_q`` on the query's rows
    (``reduction="sum"``; tested equal). ``"mean"`` divides by the number of penalised rows of
    ``Q*`` (negatives for "fp", positives for "tp"), as every loss of the package divides by its
    penalised rows: a row-weighted mean, not the mean of the per-query means.

    Excluded queries (no loss, no gradient, NaN threshold), where precision@k does not depend on
    the scores:

    - ``n_q <= k``: all the query's rows are in its top k whatever the scores (the level
      ``1 - k/n_q`` would be <= 0);
    - no relevant row: precision@k is 0 whatever the scores (the metric,
      :func:`~quantile_surrogate.metrics.precision_at_k_per_query`, leaves such queries out too);
    - every row relevant: precision@k is 1 whatever the scores (LambdaRank gives such a query no
      gradient either). In the FP form it has no penalised row anyway; this keeps the TP form
      from pushing its scores for nothing.

    A batch without a query that counts gives a zero loss, still on the graph, with a zero gradient.
    Cost: one sort of the batch for every threshold at once, and one host sync (the number of
    queries, ``query.max() + 1``); the threshold of a query and its gradient are those of
    :func:`~quantile_surrogate.quantiles.segment_quantile`.

    Examples
    --------
    Two queries of four rows, k = 2: each threshold is the query's 2nd smallest score
    (level 1/2, point estimate); query 0's negatives at 2 and 0 cost softplus(1) + softplus(-1),
    query 1 is all negatives and does not count:

    >>> import torch
    >>> from quantile_surrogate.losses import precision_at_k_loss
    >>> scores = torch.tensor([3.0, 2.0, 1.0, 0.0, 5.0, 6.0, 7.0, 8.0])
    >>> labels = torch.tensor([1, 0, 1, 0, 0, 0, 0, 0]); query = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    >>> loss, threshold = precision_at_k_loss(scores, labels, 2, query=query, quantile="point", reduction="sum",
    ...                                       return_threshold=True)
    >>> loss, threshold
    (tensor(1.6265), tensor([1., nan]))
    """
    bandwidth = check_ranking_settings(k, form, quantile, bandwidth, surrogate, reduction, return_threshold)
    if validate_args:
        targets = check_scores_and_targets(scores, labels)
        check_groups(query, scores.numel(), "query")
    else:
        targets = labels.to(torch.promote_types(scores.dtype, torch.float32))
    query = query.to(device=scores.device, dtype=torch.int64)
    threshold, live = query_thresholds(scores, targets, query, k, quantile, bandwidth)
    row_live = live[query]
    # the thresholds of excluded queries stay out of the margins and their gradient
    row_threshold = torch.where(row_live, threshold[query], 0.0).unsqueeze(1)
    penalize = PRECISION_FORMS[form]
    penalized = penalized_rows(targets, penalize, row_live)
    loss = penalty(scores, row_threshold, penalized, penalize, SURROGATES[surrogate], reduction)
    if return_threshold:
        return QuantileLossOutput(loss, torch.where(live, threshold, math.nan))
    return loss


def check_ranking_settings(k, form, quantile, bandwidth, surrogate, reduction, return_threshold) -> float:
    """The checks of every setting of :func:`precision_at_k_loss` (and its module); returns the bandwidth."""
    check_integer(k, "k", minimum=1)
    check_option(form, PRECISION_FORMS, "form")
    check_option(quantile, SEGMENT_ESTIMATORS, "quantile")
    check_option(surrogate, SURROGATES, "surrogate")
    check_reduction(reduction)
    check_bool(return_threshold, "return_threshold")
    return check_bandwidth(bandwidth)


def counting_queries(sizes, relevant, k: int):
    """Which queries count for precision@k: ``n_q > k`` and ``0 < relevant rows < n_q`` (NumPy or torch arrays).

    In the others precision@k does not depend on the scores (all rows are in the top k, or none or all
    are relevant). The one home of the rule: the loss, the boosting objective and the held-out
    selection of :class:`~quantile_surrogate.QuantileRanker` read it.
    """
    return (sizes > k) & (relevant > 0) & (relevant < sizes)


def query_thresholds(scores, targets, query, k: int, quantile: str, bandwidth: float):
    """``(theta, live)``, both of shape (Q,): each query's threshold at level ``1 - k/n_q``, and whether it counts.

    ``live`` is ``n_q > k`` and ``0 < (relevant rows) < n_q``; ``theta`` is finite but meaningless
    where ``live`` is False (those queries get level 1/2, so that no level leaves [0, 1]).
    """
    n_queries = int(query.max()) + 1
    sizes = torch.zeros(n_queries, dtype=torch.int64, device=query.device)
    sizes = sizes.index_add_(0, query, torch.ones_like(query))
    relevant = torch.zeros(n_queries, dtype=targets.dtype, device=targets.device).index_add_(0, query, targets)
    live = counting_queries(sizes, relevant, k)
    levels = torch.where(live, 1.0 - k / sizes.to(torch.float64).clamp(min=1.0), 0.5)
    return segment_estimates(scores, query, levels, quantile, bandwidth), live
