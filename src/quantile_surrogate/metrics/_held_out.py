r"""The objectives' exact metrics on trusted arrays, for the selection loops that score many models.

:mod:`quantile_surrogate.metrics` checks its inputs and reads precision at recall and recall at
FPR off ``sklearn.metrics.precision_recall_curve`` and ``roc_curve``; those validate their
inputs again on every call (``type_of_target``, ``np.unique``, consistency checks), which is
about 90 % of a call at a few thousand rows. The K-fold selection scores every (restart, epoch
count) candidate on every fold, 75 calls per default fit, on labels and scores it made itself.
Here the same values come from one sort, with the curves' conventions:

- predicted positive iff ``score >= theta``, one threshold per distinct score, so tied scores
  switch together (sklearn's ``_binary_clf_curve``, ``drop_intermediate=False``);
- at threshold ``theta_j`` (scores in decreasing order), ``TP_j = sum_{s_i >= theta_j} y_i`` and
  ``FP_j = #{s_i >= theta_j} - TP_j``;
- precision at recall :math:`\max_j TP_j / (TP_j + FP_j)` over ``TP_j / P >= r - 10^{-12}``;
  recall at FPR :math:`\max(0, \max_j TP_j / P)` over ``FP_j / N <= f + 10^{-12}`` (the ROC
  curve's extra point (0, 0) is the 0); precision at a rate is
  :func:`quantile_surrogate.metrics.precision_at_k` at ``K = count_at_rate(n, rate)``.

The ratios are the same floating point divisions as sklearn's, so the values are equal, not
close (``tests/test_held_out_metrics.py`` checks that on random data with ties). A metric that is
undefined (no positive; no negative for the FPR) is NaN, without the public functions' warning.
"""

from __future__ import annotations

import math

import numpy as np

from ._top_k import count_at_rate, top_k_precision

__all__ = ["held_out_average_precision", "held_out_metric"]


def _counts_at_thresholds(positive: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(TP_j, FP_j)`` at each distinct score, highest first, as float64 (sklearn's ``_binary_clf_curve``)."""
    order = np.argsort(scores, kind="mergesort")[::-1]
    ordered = scores[order]
    last = np.r_[np.flatnonzero(np.diff(ordered)), ordered.size - 1]  # the last row of each distinct score
    true_positives = np.cumsum(positive[order], dtype=np.float64)[last]
    return true_positives, 1.0 + last - true_positives


def _precision_at_recall(positive, scores, recall: float) -> float:
    true_positives, false_positives = _counts_at_thresholds(positive, scores)
    if true_positives[-1] == 0:
        return math.nan
    reached = true_positives / true_positives[-1] >= recall - 1e-12
    return float((true_positives[reached] / (true_positives[reached] + false_positives[reached])).max())


def _recall_at_fpr(positive, scores, fpr: float) -> float:
    true_positives, false_positives = _counts_at_thresholds(positive, scores)
    if true_positives[-1] == 0 or false_positives[-1] == 0:
        return math.nan
    allowed = false_positives / false_positives[-1] <= fpr + 1e-12
    return float(max(0.0, (true_positives[allowed] / true_positives[-1]).max(initial=0.0)))


def _precision_at_rate(positive, scores, rate: float) -> float:
    return top_k_precision(positive, scores, count_at_rate(scores.size, rate))


_METRICS = {"precision_at_recall": _precision_at_recall, "precision_at_rate": _precision_at_rate,
            "recall_at_fpr": _recall_at_fpr}


def held_out_metric(positive: np.ndarray, scores: np.ndarray, objective: str, target: float) -> float:
    """The exact metric of ``objective`` at ``target``, unweighted and ungrouped, on trusted arrays.

    Parameters
    ----------
    positive : bool ndarray of shape (n,)
    scores : float64 ndarray of shape (n,), finite
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}
    target : float in (0, 1)

    Returns
    -------
    float
        What :func:`quantile_surrogate.objectives.objective_metric` returns on these arrays
        (NaN, without a warning, where it is undefined).
    """
    return _METRICS[objective](positive, scores, target)


def held_out_average_precision(positive: np.ndarray, scores: np.ndarray) -> float:
    r"""Average precision, :math:`\sum_j (R_j - R_{j-1}) P_j` over the distinct scores, highest first (:math:`R_0 = 0`).

    What ``sklearn.metrics.average_precision_score`` computes (the step-wise area under the
    precision-recall curve, no interpolation), from the same one sort as :func:`held_out_metric`;
    equal to it up to the order of the floating point sum. NaN without a positive.

    Parameters
    ----------
    positive : bool ndarray of shape (n,)
    scores : float64 ndarray of shape (n,), finite

    Returns
    -------
    float
    """
    true_positives, false_positives = _counts_at_thresholds(positive, scores)
    if true_positives[-1] == 0:
        return math.nan
    recall_steps = np.diff(true_positives, prepend=0.0) / true_positives[-1]
    return float(np.sum(recall_steps * (true_positives / (true_positives + false_positives))))
