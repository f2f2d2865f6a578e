r"""The one counting core of the exact metrics: counts at each distinct score, then one reduce per objective.

As torchmetrics splits a metric into ``_update`` and ``_compute``, every exact metric here is two stages:

1. **Counts** (:func:`sort_rows`, :func:`cumulative_counts`, or both at once :func:`counts_at_thresholds`):
   with the rows sorted once by decreasing score and :math:`e_j` the last row of the j-th group
   of tied scores, the weight of the positives and of the negatives predicted positive at threshold
   :math:`\theta_j` (predict positive iff ``score >= theta_j``: tied rows switch together)

   .. math::
       TP_j = \sum_{i \le e_j} w_i [y_i = 1], \qquad FP_j = \sum_{i \le e_j} w_i [y_i = 0],

   with :math:`w_i = 1` unweighted (then ``FP_j = e_j + 1 - TP_j``, scikit-learn's form), a
   frequency weight, or a bootstrap resample's multiplicity. A leading axis holds many
   resamples at once: ``w`` of shape (B, n) gives counts of shape (B, T). With float weights
   the sort is stable (tied rows keep their order, as in scikit-learn's ``_binary_clf_curve``,
   so the float sums are the same sums); with integer counts the order inside a tie group
   cannot change a count at its end, and the faster unstable sort is used.
2. **One reduce per objective**, on counts of shape (..., T), with :math:`P = TP_T` and
   :math:`N = FP_T`:

   - :func:`precision_at_recall_from_counts`: :math:`\max_j TP_j / (TP_j + FP_j)` over
     :math:`TP_j / P \ge r - 10^{-12}`, and the curve's end point (recall 0, precision 1);
   - :func:`recall_at_fpr_from_counts`: :math:`\max(0, \max_j TP_j / P)` over
     :math:`FP_j / N \le f + 10^{-12}` (the ROC curve's point (0, 0) is the 0);
   - :func:`precision_at_k_from_counts`: with :math:`g` the first group whose mass from the top
     reaches ``k``, :math:`(TP_{g-1} + (k - S_{g-1}) \cdot \frac{TP_g - TP_{g-1}}{S_g - S_{g-1}}) / k`,
     :math:`S_j = TP_j + FP_j`: the k-th score's ties shared by their positive fraction;
   - :func:`average_precision_from_counts`: :math:`\sum_j (TP_j - TP_{j-1}) / P \cdot TP_j / S_j`.

   :data:`OBJECTIVE_REDUCES` names the reduce of each objective (precision at a rate is
   precision at ``K = count(rate, n)``).

The ratios are the divisions of ``sklearn.metrics.precision_recall_curve`` and ``roc_curve``, so the
values equal theirs bit for bit (tests/metrics/test_counting.py). The public metrics
(:mod:`quantile_surrogate.metrics`), the selection's held-out scorer (:mod:`._held_out`) and the
bootstrap (:mod:`quantile_surrogate.objectives.bootstrap`) all read their values here, so they
agree exactly. One fast path: the unweighted public :func:`~quantile_surrogate.metrics.precision_at_k`
finds the k-th score by a partition instead of a sort (:func:`top_k_precision`, tested equal to
:func:`precision_at_k_from_counts` bit for bit). A reduce returns NaN where the metric is undefined (no positive; no negative for
the FPR), without a warning: the public functions warn before calling it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._utils.counts import count

__all__ = [
    "Counts",
    "sort_rows",
    "cumulative_counts",
    "counts_at_thresholds",
    "integer_sum_dtype",
    "precision_at_recall_from_counts",
    "recall_at_fpr_from_counts",
    "precision_at_k_from_counts",
    "top_k_precision",
    "precision_at_rate_from_counts",
    "average_precision_from_counts",
    "OBJECTIVE_REDUCES",
]

TOLERANCE = 1e-12
"""Slack on a rate constraint (recall ``>= r - 1e-12``, FPR ``<= f + 1e-12``) for float noise."""


class Counts(NamedTuple):
    """Cumulative weights at each distinct score, highest score first, shape (..., T), float64."""

    tp: np.ndarray
    """``TP_j``: the weight of the positives scoring at least the j-th distinct score."""
    fp: np.ndarray
    """``FP_j``: the weight of the negatives scoring at least the j-th distinct score."""


def sort_rows(scores: np.ndarray, *, stable: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(order, last)``: a permutation by decreasing score (``stable``: ties in row order), and the last sorted row of each tie group."""
    order = np.argsort(-scores, kind="stable" if stable else None)
    ordered = scores[order]
    last = np.r_[np.flatnonzero(ordered[1:] != ordered[:-1]), ordered.size - 1]
    return order, last


def cumulative_counts(positive: np.ndarray, last: np.ndarray, weight: np.ndarray | None = None) -> Counts:
    """:class:`Counts` of rows already sorted by decreasing score; ``weight`` None, (n,) or (B, n) in that order.

    Integer weights (bootstrap multiplicities) are summed as integers, exactly, and may be stored small (uint8).
    """
    if weight is None:  # scikit-learn's unweighted form: FP_j = e_j + 1 - TP_j
        tp = np.cumsum(positive, dtype=np.float64)[last]
        return Counts(tp, 1.0 + last - tp)
    if np.issubdtype(weight.dtype, np.integer):  # bootstrap multiplicities: exact integer sums, small arrays
        wide = integer_sum_dtype(weight)
        tp = np.cumsum(weight * positive, axis=-1, dtype=wide)[..., last]
        total = np.cumsum(weight, axis=-1, dtype=wide)[..., last]
        return Counts(tp.astype(np.float64), (total - tp).astype(np.float64))
    y = positive.astype(np.float64)
    tp = np.cumsum(y * weight, axis=-1, dtype=np.float64)[..., last]
    fp = np.cumsum((1 - y) * weight, axis=-1, dtype=np.float64)[..., last]
    return Counts(tp, fp)


def integer_sum_dtype(weight: np.ndarray):
    """int32 where no sum of integer ``weight`` along its last axis can overflow it (several times faster than
    int64), else int64."""
    return np.int32 if np.iinfo(weight.dtype).max * weight.shape[-1] < 2**31 else np.int64


def counts_at_thresholds(positive: np.ndarray, scores: np.ndarray, weight: np.ndarray | None = None) -> Counts:
    """:class:`Counts` of checked 1-D arrays in row order: one sort, then :func:`cumulative_counts`."""
    order, last = sort_rows(scores, stable=weight is not None)
    return cumulative_counts(positive[order], last, None if weight is None else weight[order])


def _totals(counts: Counts):
    return counts.tp[..., -1], counts.fp[..., -1]


def precision_at_recall_from_counts(counts: Counts, recall: float):
    """The best precision over thresholds with recall ``>= recall - 1e-12``; NaN without a positive."""
    tp, fp = counts
    positives, _ = _totals(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        reached = tp / positives[..., None] >= recall - TOLERANCE
        best = np.where(reached, tp / (tp + fp), -np.inf).max(axis=-1)
    if recall - TOLERANCE <= 0:  # the curve's end point, recall 0 at precision 1, meets the constraint
        best = np.maximum(best, 1.0)
    return np.where(positives > 0, best, np.nan)


def recall_at_fpr_from_counts(counts: Counts, fpr: float):
    """The best recall over thresholds with FPR ``<= fpr + 1e-12``, at least 0; NaN without a positive or negative."""
    tp, fp = counts
    positives, negatives = _totals(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        allowed = fp / negatives[..., None] <= fpr + TOLERANCE
        best = np.where(allowed, tp / positives[..., None], 0.0).max(axis=-1)
    return np.where((positives > 0) & (negatives > 0), best, np.nan)


def precision_at_k_from_counts(counts: Counts, k):
    """Precision among the top mass ``k`` (scalar or shape (...,)), the k-th score's tie group shared by its positive fraction.

    The tie group ``g`` is the first whose mass from the top reaches ``k (1 - 1e-12)`` (the
    last if none does: ``k`` may exceed a float total by rounding).
    """
    tp, fp = counts
    k = np.asarray(k, dtype=np.float64)
    seen = tp + fp
    reached = seen >= (k * (1 - TOLERANCE))[..., None]
    g = np.where(reached.any(axis=-1), reached.argmax(axis=-1), seen.shape[-1] - 1)[..., None]
    seen_g, tp_g = np.take_along_axis(seen, g, axis=-1)[..., 0], np.take_along_axis(tp, g, axis=-1)[..., 0]
    before = np.where(g[..., 0] > 0, np.take_along_axis(seen, np.maximum(g - 1, 0), axis=-1)[..., 0], 0.0)
    tp_before = np.where(g[..., 0] > 0, np.take_along_axis(tp, np.maximum(g - 1, 0), axis=-1)[..., 0], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN for counts without any mass (k = 0)
        tie_precision = (tp_g - tp_before) / (seen_g - before)
        return (tp_before + (k - before) * tie_precision) / k


def top_k_precision(positive: np.ndarray, scores: np.ndarray, k: int) -> float:
    """:func:`precision_at_k_from_counts` of unweighted rows, by one partition instead of a sort (the fast path).

    ``kth`` is the k-th highest score; the ``a`` rows above it count whole and the ``k - a``
    places left go to the tied rows at their positive fraction: the same operations on the
    same integers as the reduce, so the same float.
    """
    n = scores.shape[0]
    kth = np.partition(scores, n - k)[n - k]
    above = scores > kth
    tied = scores == kth
    hits = positive[above].sum() + (k - above.sum()) * positive[tied].mean()
    return float(hits / k)


def precision_at_rate_from_counts(counts: Counts, rate: float, rounding: str = "ceil"):
    """:func:`precision_at_k_from_counts` at ``K = count(rate, n)``, ``n`` the total mass of each row of counts."""
    totals = counts.tp[..., -1] + counts.fp[..., -1]
    if totals.ndim == 0:
        return precision_at_k_from_counts(counts, count(rate, float(totals), rounding))
    values, inverse = np.unique(totals, return_inverse=True)
    k = np.array([count(rate, float(total), rounding) for total in values], dtype=np.float64)[inverse]
    return precision_at_k_from_counts(counts, k.reshape(totals.shape))


def average_precision_from_counts(counts: Counts):
    """:math:`\\sum_j (TP_j - TP_{j-1}) / P \\cdot TP_j / (TP_j + FP_j)`, ``TP_0 = 0``; NaN without a positive."""
    tp, fp = counts
    positives, _ = _totals(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        steps = np.diff(tp, axis=-1, prepend=0.0) / positives[..., None]
        value = np.sum(steps * (tp / (tp + fp)), axis=-1)
    return np.where(positives > 0, value, np.nan)


#: Objective name -> ``reduce(counts, target)``: the exact metric of each objective of
#: :data:`~quantile_surrogate.objectives.OBJECTIVES` read off :class:`Counts` (NaN where undefined).
OBJECTIVE_REDUCES = {
    "precision_at_recall": precision_at_recall_from_counts,
    "precision_at_rate": precision_at_rate_from_counts,
    "recall_at_fpr": recall_at_fpr_from_counts,
}
