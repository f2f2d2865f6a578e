r"""One ranking's exact metric under many bootstrap resamples, read only at the tie groups that can decide it.

The paired bootstrap of the K-fold rule (:mod:`quantile_surrogate.selection._out_of_fold_rule`) scores
each candidate on ``B`` resamples of its ``n`` rows: :func:`._counting.cumulative_counts` with
multiplicities of shape (B, n) gives counts at every tie group, (B, T), and the objective's reduce reads
them. Most of those columns cannot decide the metric (:math:`e_j` the last row of tie group ``j`` in
decreasing score, as in :mod:`._counting`):

- **precision at recall** :math:`r > 0`, :math:`\max_j TP_j / (TP_j + FP_j)` over the groups with
  :math:`TP_j \ge (r - 10^{-12}) P`: a group without a positive row has the :math:`TP` of the last group
  above it that has one (so the same recall) and no smaller :math:`FP`, so its precision is no higher.
  The groups holding a positive row give the same maximum; the last group is kept for :math:`P`.
- **precision at a rate**: reads the first group whose mass reaches :math:`K = \lceil \tau n \rceil` and
  the group before it: a prefix of the groups that reaches ``K`` in every resample, then the last group
  (for ``n``). The prefix is taken with a margin of six standard deviations of a resample's mass and
  checked; where a resample has not reached ``K`` inside it, every group is read.
- **recall at an FPR** :math:`f`, :math:`\max_j TP_j / P` over :math:`FP_j \le (f + 10^{-12}) N`: the
  largest such ``j`` (TP never falls), which is the last group or one followed by a group holding a
  negative row.

The sums are the same integers as the full computation's, so the reduce returns the same floats
(``tests/metrics/test_resampled.py`` checks equality with :func:`._counting.cumulative_counts`).
The true-positive sums run over the positive rows alone, and a rate reorders only the prefix.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils.counts import count
from ._counting import OBJECTIVE_REDUCES, TOLERANCE, Counts, integer_sum_dtype

__all__ = ["resample_totals", "resampled_metric"]


def resample_totals(positive: np.ndarray, multiplicity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mass, positive mass)`` of each resample, shape (B,) each: the same for every ranking of the rows."""
    wide = integer_sum_dtype(multiplicity)
    return (multiplicity.sum(axis=-1, dtype=wide),
            np.take(multiplicity, np.flatnonzero(positive), axis=1).sum(axis=-1, dtype=wide))


def resampled_metric(objective: str, target: float, positive: np.ndarray, order: np.ndarray, last: np.ndarray,
                     multiplicity: np.ndarray, totals: tuple | None = None) -> np.ndarray:
    """The exact metric of ``objective`` at ``target`` on each resample: shape (B,).

    Parameters
    ----------
    objective : str
        A key of :data:`._counting.OBJECTIVE_REDUCES`.
    target : float
        Its recall, rate or false positive rate.
    positive : bool ndarray of shape (n,)
        In row order.
    order, last : ndarray
        :func:`._counting.sort_rows` of the candidate's scores.
    multiplicity : integer ndarray of shape (B, n)
        How often each row (in row order) is drawn in each resample; unsigned 8-bit storage is fine
        (sums are taken in 32 or 64 bits).
    totals : tuple, optional
        :func:`resample_totals` of ``positive`` and ``multiplicity``, computed once for many rankings
        (a rate reads them); computed here when not given.

    Returns
    -------
    ndarray of shape (B,)
        Equal to ``OBJECTIVE_REDUCES[objective](cumulative_counts(positive[order], last,
        multiplicity[:, order]), target)``.
    """
    reduce = OBJECTIVE_REDUCES[objective]
    ranked = positive[order]
    if objective == "precision_at_rate":
        counts = _rate_prefix(ranked, order, last, multiplicity, target,
                              resample_totals(positive, multiplicity) if totals is None else totals)
        if counts is not None:
            return reduce(counts, target)
    groups = np.arange(last.size)
    if objective == "precision_at_recall" and target - TOLERANCE > 0:
        holds = np.logical_or.reduceat(ranked, np.r_[0, last[:-1] + 1])
        groups = np.flatnonzero(np.r_[holds[:-1], True])
    elif objective == "recall_at_fpr":
        holds = np.logical_or.reduceat(~ranked, np.r_[0, last[:-1] + 1])
        groups = np.flatnonzero(np.r_[holds[1:], True])
    return reduce(_counts_at(ranked, last[groups], np.take(multiplicity, order, axis=1)), target)


def _counts_at(ranked: np.ndarray, ends: np.ndarray, ranked_multiplicity: np.ndarray) -> Counts:
    """:class:`Counts` of shape (B, len(ends)) at the sorted row positions ``ends`` (increasing, not empty)."""
    wide = integer_sum_dtype(ranked_multiplicity)
    rows = ends[-1] + 1
    total = np.cumsum(ranked_multiplicity[:, :rows], axis=-1, dtype=wide)[:, ends]
    # TP from the positive rows alone: a cumulative sum over fewer columns, read at the positives above each end.
    positive_rows = np.flatnonzero(ranked[:rows])
    tp = np.zeros_like(total)
    if positive_rows.size:
        running = np.cumsum(np.take(ranked_multiplicity, positive_rows, axis=1), axis=-1, dtype=wide)
        seen = np.searchsorted(positive_rows, ends, side="right")
        tp[:, seen > 0] = running[:, seen[seen > 0] - 1]
    return Counts(tp.astype(np.float64), (total - tp).astype(np.float64))


def _rate_prefix(ranked, order, last, multiplicity, rate, totals) -> Counts | None:
    """Counts at the groups of a prefix that reaches ``K`` in every resample, then at the last group.

    None where the resamples' masses differ, or no group ends early enough, or a resample has not reached ``K``.
    """
    mass, positive_mass = totals
    if (mass != mass[0]).any():
        return None
    k = count(rate, float(mass[0]))
    # A resample's mass over its first L rows has mean L and a variance below L: six standard deviations of margin.
    groups = np.flatnonzero(last < min(last[-1], k + 6 * math.sqrt(k) + 16))
    if groups.size == 0:
        return None
    ends = last[groups]
    head = _counts_at(ranked, ends, np.take(multiplicity, order[: ends[-1] + 1], axis=1))
    if (head.tp[:, -1] + head.fp[:, -1] < k * (1 - TOLERANCE)).any():
        return None
    return Counts(np.c_[head.tp, positive_mass.astype(np.float64)],
                  np.c_[head.fp, (mass - positive_mass).astype(np.float64)])
