"""The exact metrics at a recall, a false positive rate and a predicted positive rate (see :mod:`quantile_surrogate.metrics`)."""

from __future__ import annotations

import math

import numpy as np
from ._checks import SCORES_NONFINITE_MESSAGE, check_arrays, checked_weights, undefined
from ._counting import counts_at_thresholds, precision_at_recall_from_counts, recall_at_fpr_from_counts
from .._utils.checks import check_target

__all__ = ["precision_at_recall", "recall_at_fpr", "predicted_positive_rate"]

SCORE_NOT_1D_MESSAGE = "`y_score` must be 1-D; got shape {shape}."
THRESHOLD_NAN_MESSAGE = "`threshold` is NaN; every row would count as negative."
SUBSET_SHAPE_MESSAGE = "`subset` has shape {shape} but `y_score` has {expected}."
SUBSET_NO_WEIGHT_MESSAGE = "`subset` holds no weight; the rate on an empty set is undefined."
SUBSET_EMPTY_MESSAGE = "`subset` selects no row; the rate on an empty set is undefined."


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
    ``sample_weight`` ``TP`` and ``FP`` are sums of weights (sklearn's curve). Computed from one
    sort by the counting core (:mod:`._counting`), equal to sklearn's curve bit for bit.

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> precision_at_recall([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.5)  # the top score alone: 1/1
    1.0
    >>> precision_at_recall([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.75)  # both positives: 2/3
    0.6666666666666666
    """
    recall = check_target(recall, "recall")
    positive, y_score = check_arrays(y_true, y_score)
    weight = checked_weights(sample_weight, y_score.size)
    if weight is not None:  # rows of weight 0 are absent (sklearn's curve would keep their thresholds)
        positive, y_score, weight = positive[weight > 0], y_score[weight > 0], weight[weight > 0]
    if not positive.any():
        return undefined("precision_at_recall", "positive (recall is 0/0)")
    return float(precision_at_recall_from_counts(counts_at_thresholds(positive, y_score, weight), recall))


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
    ``1e-12``. With ``sample_weight`` the rates are weighted. Computed from one sort by the
    counting core (:mod:`._counting`), equal to sklearn's curve bit for bit.

    Examples
    --------
    >>> from quantile_surrogate.metrics import recall_at_fpr
    >>> recall_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.5)  # threshold 0.7: FPR 1/2, recall 2/2
    1.0
    >>> recall_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.4)  # no negative above: 0.9 alone
    0.5
    """
    fpr = check_target(fpr, "fpr")
    positive, y_score = check_arrays(y_true, y_score)
    weight = checked_weights(sample_weight, y_score.size)
    if weight is not None:  # weighted TPR and FPR (sklearn's curve); rows of weight 0 are absent
        positive, y_score, weight = positive[weight > 0], y_score[weight > 0], weight[weight > 0]
    if not positive.any():
        return undefined("recall_at_fpr", "positive (recall is 0/0)")
    if positive.all():
        return undefined("recall_at_fpr", "negative (the false positive rate is 0/0)")
    # Every distinct score is a threshold: collinear ROC points (ties across classes) are valid operating points.
    return float(recall_at_fpr_from_counts(counts_at_thresholds(positive, y_score, weight), fpr))


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
    quantile_surrogate.objectives.guarantees.rate_threshold : A threshold that bounds the rate on new data.

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
        raise ValueError(SCORE_NOT_1D_MESSAGE.format(shape=y_score.shape))
    if not np.isfinite(y_score).all():  # a NaN compares False with every threshold: it would count as negative
        raise ValueError(SCORES_NONFINITE_MESSAGE.format(name="y_score"))
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError(THRESHOLD_NAN_MESSAGE)
    if sample_weight is not None:
        weight = checked_weights(sample_weight, y_score.size)
        if subset is not None:
            subset = np.asarray(subset, dtype=bool)
            if subset.shape != y_score.shape:
                raise ValueError(SUBSET_SHAPE_MESSAGE.format(shape=subset.shape, expected=y_score.shape))
            y_score, weight = y_score[subset], weight[subset]
        if not weight.sum() > 0:
            raise ValueError(SUBSET_NO_WEIGHT_MESSAGE)
        return float(weight[y_score > threshold].sum() / weight.sum())
    if subset is not None:
        subset = np.asarray(subset, dtype=bool)
        if subset.shape != y_score.shape:
            raise ValueError(SUBSET_SHAPE_MESSAGE.format(shape=subset.shape, expected=y_score.shape))
        y_score = y_score[subset]
    if y_score.size == 0:
        raise ValueError(SUBSET_EMPTY_MESSAGE)
    return float(np.mean(y_score > threshold))
