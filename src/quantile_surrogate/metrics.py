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
    """The highest precision over thresholds whose recall is at least ``recall``.

    Read off ``sklearn.metrics.precision_recall_curve``, so tied scores are one threshold
    (all of them are predicted positive together). Without a positive in ``y_true`` the
    recall is undefined: NaN, with an ``UndefinedMetricWarning``. With ``sample_weight``
    precision and recall are weighted sums of true and false positives (sklearn's curve).

    Examples
    --------
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
    """``K`` for a predicted positive rate: ``ceil(rate n)`` (default) or ``floor(rate n)``, at least 1.

    ``rate * n`` is rounded to 6 decimals first so float noise does not move ``K``. The
    point-estimator threshold ``q(f(X), 1 - rate)`` predicts ``ceil(rate n)`` positives,
    hence the default; the paper's Housing table looks like ``floor`` (docs/paper_notes.md).
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
    """Precision among the ``k`` highest scores, with ties at the k-th score shared fairly.

    Rows tied with the k-th score count with the fraction of positives among the tie,
    which is the expected precision under a random tie-break; it does not depend on the
    order of the rows. With ``sample_weight`` (frequency weights) ``k`` is a mass: the
    weighted positives among the top weight ``k`` (``1 <= k <= sum w``), the tie at the
    score where the cumulative weight from the top reaches ``k`` shared by its weighted
    positive fraction; an integer weight equals repeating the row.
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
    """Precision@tau: precision among the top ``K = ceil(rate n)`` scores (see :func:`count_at_rate`).

    With ``sample_weight`` ``n`` is the total weight ``W`` and ``K = ceil(rate W)`` a mass
    (``count_at_rate`` on ``W``; see :func:`precision_at_k`).
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
    """The highest recall (TPR) over thresholds whose false positive rate is at most ``fpr``.

    Read off ``sklearn.metrics.roc_curve``. Without a positive (recall is 0/0) or a negative
    (the FPR is 0/0) the value is undefined: NaN, with an ``UndefinedMetricWarning``.

    Examples
    --------
    >>> recall_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], 0.5)  # threshold 0.7: FPR 1/2, recall 2/2
    1.0
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
    """``r_A = |{x in A : f(x) > threshold}| / |A|`` (Definition 3.1), on the rows where ``subset`` is True.

    With ``sample_weight`` the counts are sums of weights: ``sum_{A, f > theta} w / sum_A w``.
    """
    y_score = np.asarray(y_score, dtype=np.float64)
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
