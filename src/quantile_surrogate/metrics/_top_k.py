"""Precision among the top ``K`` rows (Precision@K, Precision@tau): the exact metrics of a capacity (private).

Public as :func:`quantile_surrogate.metrics.precision_at_k`, ``precision_at_rate`` and
``count_at_rate``. The value is read off the counting core (:mod:`._counting`): one sort, the
cumulative counts at each distinct score, and the tie group that holds the ``K``-th row shared
by its positive fraction; unweighted, its fast path finds the ``K``-th score by one partition.
"""

from __future__ import annotations

from .._utils.checks import check_target
from .._utils.counts import count
from ._checks import check_arrays, checked_weights
from ._counting import counts_at_thresholds, precision_at_k_from_counts, top_k_precision

__all__ = ["count_at_rate", "precision_at_k", "precision_at_rate"]

K_RANGE_MESSAGE = "`k` must be in [1, {n}]; got {k}."
K_WEIGHT_RANGE_MESSAGE = "`k` must be in [1, {total}] (the total `sample_weight`); got {k}."


def count_at_rate(n: int, rate: float, rounding: str = "ceil") -> int:
    r"""The number of rows ``K`` that a predicted positive rate selects out of ``n``.

    Parameters
    ----------
    n : int
        The number of rows.
    rate : float
        The predicted positive rate ``tau`` (not checked here).
    rounding : {"ceil", "floor"}, default="ceil"
        How ``tau n`` is rounded to a count.

    Returns
    -------
    int
        ``K`` in ``1..n``.

    Raises
    ------
    ValueError
        If ``rounding`` is neither "ceil" nor "floor".

    See Also
    --------
    precision_at_rate : Precision among the top ``K``.

    Notes
    -----
    .. math::
        K = \min\big(\max(\lceil \tau n \rceil, 1), n\big) \quad \text{or} \quad
        \min\big(\max(\lfloor \tau n \rfloor, 1), n\big),

    with ``tau n`` rounded to 6 decimals first so that float noise does not move ``K``
    (``0.07 * 100 = 7.000000000000001``): the one count rule of the package,
    :func:`quantile_surrogate._utils.counts.count`. The point-estimator threshold ``q(f(X), 1 - tau)``
    predicts ``ceil(tau n)`` positives, hence the default; the paper's Housing table looks
    like ``floor`` (docs/paper_notes.md).

    Examples
    --------
    >>> from quantile_surrogate.metrics import count_at_rate
    >>> count_at_rate(30, 0.1), count_at_rate(100, 0.015), count_at_rate(100, 0.015, "floor")
    (3, 2, 1)
    """
    return int(count(rate, n, rounding))


def precision_at_k(y_true, y_score, k: int, *, sample_weight=None) -> float:
    r"""Precision among the ``k`` highest scores, with ties at the k-th score shared fairly.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: {0, 1}, bool, or {-1, 1}; 1 (True) is positive.
    y_score : array-like of shape (n,)
        Finite scores, higher is more positive (any monotone scale: margins or probabilities).
    k : int or float
        How many top rows to count, ``1 <= k <= n``; with ``sample_weight`` a mass,
        ``1 <= k <= sum w``.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``w_i >= 0``, not all zero: an integer weight counts a row that many
        times, 0 drops it.

    Returns
    -------
    float
        The precision among the top ``k``.

    Raises
    ------
    ValueError
        For the bad arrays and weights of :func:`precision_at_recall`, or ``k`` out of range.

    See Also
    --------
    precision_at_rate : The same with ``k`` from a rate.

    Notes
    -----
    With ``s_k`` the k-th largest score, ``a`` the rows above it and ``T`` the rows tied
    with it:

    .. math::
        P@k = \frac{1}{k}\Big(\sum_{i \in a} y_i + (k - |a|)\, \frac{1}{|T|} \sum_{i \in T} y_i\Big),

    the expected precision under a random tie-break; it does not depend on the order of
    the rows. With ``sample_weight`` the counts are sums of weights: the weighted positives
    among the top weight ``k``, the tie at the score where the cumulative weight from the
    top reaches ``k`` shared by its weighted positive fraction; an integer weight equals
    repeating the row. Computed by the counting core (:mod:`._counting`): one partition
    unweighted, one sort weighted.

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_k
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 2)
    0.5
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1], 2)  # 1 + (2 - 1) * 1/2 hits out of 2
    0.75
    """
    positive, y_score = check_arrays(y_true, y_score)
    if sample_weight is None:
        n = y_score.shape[0]
        if not 1 <= k <= n:
            raise ValueError(K_RANGE_MESSAGE.format(n=n, k=k))
        return top_k_precision(positive, y_score, k)  # the counting core's fast path: a partition, not a sort
    weight = checked_weights(sample_weight, y_score.size)
    total = float(weight.sum())
    if not 1 <= k <= total * (1 + 1e-12):
        raise ValueError(K_WEIGHT_RANGE_MESSAGE.format(total=total, k=k))
    keep = weight > 0  # rows of weight 0 are absent
    return float(precision_at_k_from_counts(counts_at_thresholds(positive[keep], y_score[keep], weight[keep]), k))


def precision_at_rate(y_true, y_score, rate: float, rounding: str = "ceil", *, sample_weight=None) -> float:
    r"""Precision at a predicted positive rate (Precision@tau): precision among the top ``K`` scores.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: {0, 1}, bool, or {-1, 1}; 1 (True) is positive.
    y_score : array-like of shape (n,)
        Finite scores, higher is more positive (any monotone scale: margins or probabilities).
    rate : float in (0, 1)
        The predicted positive rate ``tau``.
    rounding : {"ceil", "floor"}, default="ceil"
        How ``K`` is counted, see :func:`count_at_rate`.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``w_i >= 0``, not all zero: an integer weight counts a row that many
        times, 0 drops it.

    Returns
    -------
    float
        :func:`precision_at_k` at ``K = count_at_rate(n, rate, rounding)``.

    Raises
    ------
    TypeError
        If ``rate`` is not a number, or ``sample_weight`` not numeric.
    ValueError
        If the arrays are not 1-D, of one length and non-empty, ``y_score`` holds NaN or inf,
        ``y_true`` is not binary, ``rate`` is not strictly between 0 and 1, or
        ``sample_weight`` has the wrong length, NaN, a negative value or a zero sum,
        or ``rounding`` is unknown.

    See Also
    --------
    quantile_surrogate.losses.precision_at_rate_loss : Its training surrogate (eqs. (9), (10)).

    Notes
    -----
    The objective of eq. (8), precision subject to :math:`r_X(f, \theta) = \tau`, evaluated
    exactly:

    .. math::
        P@\tau = P@K, \qquad K = \lceil \tau n \rceil,

    ties at the K-th score shared as in :func:`precision_at_k`. With ``sample_weight`` ``n`` is
    the total weight ``W`` and ``K = ceil(tau W)`` a mass.

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_rate
    >>> precision_at_rate([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.3)  # K = ceil(1.2) = 2
    0.5
    >>> precision_at_rate([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.3, "floor")  # K = 1
    1.0
    """
    rate = check_target(rate, "rate")
    if sample_weight is not None:
        weight = checked_weights(sample_weight, len(y_score))
        return precision_at_k(y_true, y_score, count(rate, float(weight.sum()), rounding), sample_weight=weight)
    return precision_at_k(y_true, y_score, count_at_rate(len(y_score), rate, rounding))
