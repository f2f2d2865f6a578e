"""Exact, non-differentiable evaluation metrics on NumPy arrays.

Each function takes ``y_true`` (binary: {0, 1}, bool, or {-1, 1} with 1 positive) and
``y_score`` (higher means more positive), as array-likes (lists, NumPy arrays, CPU
tensors), and returns a float. The estimator's ``score`` and the experiments use these,
so training and evaluation speak the same language.

A metric that cannot be computed (a recall without positives, a false positive rate
without negatives) returns NaN with an ``UndefinedMetricWarning``, as scikit-learn does,
never a silent 0.0: average such values with ``np.nanmean`` or drop the split.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import precision_recall_curve, roc_curve

from ._validation import check_sample_weight, check_target

__all__ = [
    "precision_at_recall",
    "precision_at_rate",
    "precision_at_k",
    "recall_at_fpr",
    "predicted_positive_rate",
    "count_at_rate",
]


UNDEFINED_MESSAGE = "{metric} is undefined: `y_true` has no {missing}. Returning NaN."


def _undefined(metric: str, missing: str) -> float:
    warnings.warn(UNDEFINED_MESSAGE.format(metric=metric, missing=missing), UndefinedMetricWarning, stacklevel=3)
    return math.nan


def _check_arrays(y_true, y_score):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_score.ndim != 1:
        raise ValueError(f"`y_true` and `y_score` must be 1-D; got shapes {y_true.shape} and {y_score.shape}.")
    if y_true.shape[0] != y_score.shape[0]:
        raise ValueError(f"`y_true` has {y_true.shape[0]} entries but `y_score` has {y_score.shape[0]}.")
    if y_true.shape[0] == 0:
        raise ValueError("`y_true` is empty.")
    if not np.isfinite(y_score).all():
        raise ValueError("`y_score` contains NaN or inf.")
    values = set(np.unique(y_true).tolist())
    if not values <= {0, 1, -1, True, False}:
        raise ValueError(f"`y_true` must be binary (0/1, bool, or -1/1); got values {sorted(values)[:6]}.")
    return (y_true == 1), y_score


def _weights(sample_weight, n: int):
    """``None``, or the checked float64 frequency weights (one per row; see ``check_sample_weight``)."""
    return None if sample_weight is None else check_sample_weight(sample_weight, n)


def precision_at_recall(y_true, y_score, recall: float, *, sample_weight=None) -> float:
    r"""The highest precision over thresholds whose recall is at least ``recall``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: {0, 1}, bool, or {-1, 1}; 1 (True) is positive.
    y_score : array-like of shape (n,)
        Finite scores, higher is more positive (any monotone scale: margins or probabilities).
    recall : float in (0, 1)
        The recall to reach.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``w_i >= 0``, not all zero: an integer weight counts a row that many
        times, 0 drops it.

    Returns
    -------
    float
        The precision, or NaN (with an ``UndefinedMetricWarning``) when ``y_true`` has no
        positive, so that recall is 0/0.

    Raises
    ------
    TypeError
        If ``recall`` is not a number, or ``sample_weight`` not numeric.
    ValueError
        If the arrays are not 1-D, of one length and non-empty, ``y_score`` holds NaN or inf,
        ``y_true`` is not binary, ``recall`` is not strictly between 0 and 1, or
        ``sample_weight`` has the wrong length, NaN, a negative value or a zero sum.

    See Also
    --------
    quantile_surrogate.losses.precision_at_recall_loss : Its training surrogate (eq. (7)).

    Notes
    -----
    The objective of eq. (3), evaluated exactly:

    .. math::
        \max_\theta \frac{TP(\theta)}{TP(\theta) + FP(\theta)} \quad \text{subject to} \quad
        \frac{TP(\theta)}{|X^+|} \ge r,

    over the thresholds of ``sklearn.metrics.precision_recall_curve`` (predict positive iff
    ``score >= theta``), so tied scores are one threshold: all of them are predicted positive
    together. The constraint has a slack of ``1e-12`` for float noise. With
    ``sample_weight`` ``TP`` and ``FP`` are sums of weights (sklearn's curve).

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> precision_at_recall([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.5)  # the top score alone: 1/1
    1.0
    >>> precision_at_recall([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.75)  # both positives: 2/3
    0.6666666666666666
    """
    recall = check_target(recall, "recall")
    positive, y_score = _check_arrays(y_true, y_score)
    weight = _weights(sample_weight, y_score.size)
    if weight is not None:  # rows of weight 0 are absent (sklearn's curve would keep their thresholds)
        positive, y_score, weight = positive[weight > 0], y_score[weight > 0], weight[weight > 0]
    if not positive.any():
        return _undefined("precision_at_recall", "positive (recall is 0/0)")
    precision, achieved, _ = precision_recall_curve(positive, y_score, sample_weight=weight)
    return float(precision[achieved >= recall - 1e-12].max())


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
    (``0.1 * 30 = 3.0000000000000004``). The point-estimator threshold ``q(f(X), 1 - tau)``
    predicts ``ceil(tau n)`` positives, hence the default; the paper's Housing table looks
    like ``floor`` (docs/paper_notes.md).

    Examples
    --------
    >>> from quantile_surrogate.metrics import count_at_rate
    >>> count_at_rate(30, 0.1), count_at_rate(100, 0.015), count_at_rate(100, 0.015, "floor")
    (3, 2, 1)
    """
    exact = round(rate * n, 6)
    if rounding == "ceil":
        k = math.ceil(exact)
    elif rounding == "floor":
        k = math.floor(exact)
    else:
        raise ValueError(f"`rounding` must be 'ceil' or 'floor'; got {rounding!r}.")
    return int(min(max(k, 1), n))


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
    repeating the row.

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_k
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 2)
    0.5
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1], 2)  # 1 + (2 - 1) * 1/2 hits out of 2
    0.75
    """
    positive, y_score = _check_arrays(y_true, y_score)
    if sample_weight is not None:
        return _weighted_precision_at_k(positive, y_score, k, _weights(sample_weight, y_score.size))
    n = y_score.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"`k` must be in [1, {n}]; got {k}.")
    kth = np.partition(y_score, n - k)[n - k]
    above = y_score > kth
    tied = y_score == kth
    hits = positive[above].sum() + (k - above.sum()) * positive[tied].mean()
    return float(hits / k)


def _weighted_precision_at_k(positive, y_score, k, weight) -> float:
    total = float(weight.sum())
    if not 1 <= k <= total * (1 + 1e-12):
        raise ValueError(f"`k` must be in [1, {total}] (the total `sample_weight`); got {k}.")
    keep = weight > 0
    positive, y_score, weight = positive[keep], y_score[keep], weight[keep]
    order = np.argsort(-y_score, kind="stable")
    cum = np.cumsum(weight[order])
    kth = y_score[order][min(np.searchsorted(cum, k * (1 - 1e-12)), cum.size - 1)]
    above, tied = y_score > kth, y_score == kth
    mass_above = weight[above].sum()
    tie_precision = weight[tied & positive].sum() / weight[tied].sum()
    hits = weight[above & positive].sum() + (k - mass_above) * tie_precision
    return float(hits / k)


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
        weight = _weights(sample_weight, len(y_score))
        total = float(weight.sum())
        exact = round(rate * total, 6)
        k = math.ceil(exact) if rounding == "ceil" else math.floor(exact)
        if rounding not in ("ceil", "floor"):
            raise ValueError(f"`rounding` must be 'ceil' or 'floor'; got {rounding!r}.")
        return precision_at_k(y_true, y_score, min(max(k, 1), total), sample_weight=weight)
    return precision_at_k(y_true, y_score, count_at_rate(len(y_score), rate, rounding))


def recall_at_fpr(y_true, y_score, fpr: float, *, sample_weight=None) -> float:
    r"""The highest recall (TPR) over thresholds whose false positive rate is at most ``fpr``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: {0, 1}, bool, or {-1, 1}; 1 (True) is positive.
    y_score : array-like of shape (n,)
        Finite scores, higher is more positive (any monotone scale: margins or probabilities).
    fpr : float in (0, 1)
        The false positive rate not to exceed.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``w_i >= 0``, not all zero: an integer weight counts a row that many
        times, 0 drops it.

    Returns
    -------
    float
        The recall, or NaN (with an ``UndefinedMetricWarning``) when ``y_true`` has no
        positive (recall is 0/0) or no negative (the FPR is 0/0).

    Raises
    ------
    TypeError
        If ``fpr`` is not a number, or ``sample_weight`` not numeric.
    ValueError
        If the arrays are not 1-D, of one length and non-empty, ``y_score`` holds NaN or inf,
        ``y_true`` is not binary, ``fpr`` is not strictly between 0 and 1, or
        ``sample_weight`` has the wrong length, NaN, a negative value or a zero sum.

    See Also
    --------
    quantile_surrogate.losses.recall_at_fpr_loss : Its training surrogate.

    Notes
    -----
    The Neyman-Pearson objective, evaluated exactly:

    .. math::
        \max_\theta \frac{TP(\theta)}{|X^+|} \quad \text{subject to} \quad
        \frac{FP(\theta)}{|X^-|} \le \alpha,

    over the thresholds of ``sklearn.metrics.roc_curve`` (``drop_intermediate=False``: the
    collinear points of ties across classes are valid operating points), with a slack of
    ``1e-12``. With ``sample_weight`` the rates are weighted.

    Examples
    --------
    >>> from quantile_surrogate.metrics import recall_at_fpr
    >>> recall_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.5)  # threshold 0.7: FPR 1/2, recall 2/2
    1.0
    >>> recall_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.4)  # no negative above: 0.9 alone
    0.5
    """
    fpr = check_target(fpr, "fpr")
    positive, y_score = _check_arrays(y_true, y_score)
    weight = _weights(sample_weight, y_score.size)
    if weight is not None:  # weighted TPR and FPR (sklearn's curve); rows of weight 0 are absent
        positive, y_score, weight = positive[weight > 0], y_score[weight > 0], weight[weight > 0]
    if not positive.any():
        return _undefined("recall_at_fpr", "positive (recall is 0/0)")
    if positive.all():
        return _undefined("recall_at_fpr", "negative (the false positive rate is 0/0)")
    # drop_intermediate=False: collinear ROC points (ties across classes) are still valid operating points.
    false_rate, true_rate, _ = roc_curve(positive, y_score, drop_intermediate=False, sample_weight=weight)
    return float(true_rate[false_rate <= fpr + 1e-12].max())


def predicted_positive_rate(y_score, threshold: float, subset=None, *, sample_weight=None) -> float:
    r"""The predicted positive rate ``r_A``: the fraction of the rows of ``A`` that score above ``threshold``.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        The scores.
    threshold : float
        The decision threshold ``theta``; a row is predicted positive iff its score is ``> theta``.
    subset : array-like of bool of shape (n,), optional
        The rows of ``A``; None is every row.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``w_i >= 0``, not all zero.

    Returns
    -------
    float
        The rate, in [0, 1].

    Raises
    ------
    ValueError
        If ``y_score`` is not 1-D or holds NaN or inf, ``threshold`` is NaN, ``subset`` has
        another shape than ``y_score`` or selects no row (or no weight), or ``sample_weight``
        is invalid.

    See Also
    --------
    quantile_surrogate.guarantees.rate_threshold : A threshold that bounds the rate on new data.

    Notes
    -----
    Definition 3.1 of the paper:

    .. math::
        r_A(f, \theta) = \frac{|\{x_i \in A : f(x_i) > \theta\}|}{|A|},

    with sums of weights for counts when ``sample_weight`` is given,
    :math:`\sum_{i \in A,\, f(x_i) > \theta} w_i / \sum_{i \in A} w_i`. Recall is the rate on
    the positives, the false positive rate the rate on the negatives.

    Examples
    --------
    >>> from quantile_surrogate.metrics import predicted_positive_rate
    >>> predicted_positive_rate([0.9, 0.8, 0.7, 0.1], 0.75)
    0.5
    >>> predicted_positive_rate([0.9, 0.8, 0.7, 0.1], 0.75, subset=[True, False, True, False])  # a recall
    0.5
    """
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_score.ndim != 1:
        raise ValueError(f"`y_score` must be 1-D; got shape {y_score.shape}.")
    if not np.isfinite(y_score).all():  # a NaN compares False with every threshold: it would count as negative
        raise ValueError("`y_score` contains NaN or inf.")
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("`threshold` is NaN; every row would count as negative.")
    if sample_weight is not None:
        weight = _weights(sample_weight, y_score.size)
        if subset is not None:
            subset = np.asarray(subset, dtype=bool)
            if subset.shape != y_score.shape:
                raise ValueError(f"`subset` has shape {subset.shape} but `y_score` has {y_score.shape}.")
            y_score, weight = y_score[subset], weight[subset]
        if not weight.sum() > 0:
            raise ValueError("`subset` holds no weight; the rate on an empty set is undefined.")
        return float(weight[y_score > threshold].sum() / weight.sum())
    if subset is not None:
        subset = np.asarray(subset, dtype=bool)
        if subset.shape != y_score.shape:
            raise ValueError(f"`subset` has shape {subset.shape} but `y_score` has {y_score.shape}.")
        y_score = y_score[subset]
    if y_score.size == 0:
        raise ValueError("`subset` selects no row; the rate on an empty set is undefined.")
    return float(np.mean(y_score > threshold))
