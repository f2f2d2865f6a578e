"""Frequency-weighted versions of :func:`~quantile_surrogate.objectives.constraint_threshold` and
:func:`~quantile_surrogate.objectives.objective_metric` (their ``sample_weight=``).

Counts become sums of weights: an integer weight ``w`` is the row repeated ``w`` times, 0 is no
row. Kept apart so that ``objectives`` stays small; it imports this module lazily.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._validation import check_sample_weight
from .objectives import (TIE_POLICY, TIED_SCORES_MESSAGE, TiedScoresWarning, _rate_or_nan, get_objective,
                         group_constraint_thresholds)

__all__ = ["weighted_constraint_threshold", "weighted_objective_metric"]


def weighted_constraint_threshold(scores, labels, objective, target, sample_weight) -> float:
    """:func:`~quantile_surrogate.objectives.constraint_threshold` with frequency weights (see its docstring).

    ``k`` = ``allowed_count`` of the mass ``W_A`` of ``A`` (the same rounding, on weights), ``u``
    (``v``) the score at which the weight of ``A`` from the top first reaches (exceeds) ``k``,
    and the midpoint to the nearest other score of positive weight, as unweighted. Rows of
    weight 0 are absent; with integer weights it is the unweighted threshold of the repeated
    rows. It warns (:class:`TiedScoresWarning`) only where rows are tied at the boundary: a
    single row's weight cannot be split either, but that is the weights' granularity.
    """
    weight = check_sample_weight(sample_weight, np.asarray(scores).shape[0])
    keep = weight > 0
    scores, weight = np.asarray(scores, dtype=np.float64)[keep], weight[keep]
    spec = get_objective(objective)
    in_subset = spec.subset_mask(np.asarray(labels)[keep] == 1)
    order = np.argsort(-scores[in_subset], kind="stable")
    subset_scores, cum = scores[in_subset][order], np.cumsum(weight[in_subset][order])
    if subset_scores.size == 0:
        raise ValueError(f"The subset that sets the threshold for {objective!r} has no rows of positive "
                         "`sample_weight`.")
    total = float(cum[-1])
    exact = round(target * total, 6)
    k = min(math.floor(exact), total) if spec.rounding == "floor" else min(max(math.ceil(exact), 1.0), total)
    slack = 1e-9 * total
    if spec.bound == "at_most":
        index = int(np.searchsorted(cum, k + slack, side="right"))  # the first score whose mass exceeds k
        if index >= subset_scores.size:
            return float(np.min(scores) - 1.0)
        v = subset_scores[index]
        higher = scores[scores > v]
        theta = float((v + higher.min()) / 2 if higher.size else v + 1.0)
    else:
        u = subset_scores[min(int(np.searchsorted(cum, k - slack)), subset_scores.size - 1)]
        lower = scores[scores < u]
        theta = float((u + lower.max()) / 2 if lower.size else u - 1.0)
    above = float(weight[in_subset][scores[in_subset] > theta].sum())
    boundary = v if spec.bound == "at_most" else u
    # A row's weight cannot be split either; only a tie between rows is the warning's subject.
    if abs(above - k) > slack and int(np.count_nonzero(subset_scores == boundary)) > 1:
        warnings.warn(TIED_SCORES_MESSAGE.format(
            above=above, size=total, subset=spec.subset, achieved=above / total, target=target,
            bound="at least" if spec.bound == "at_least" else "at most", wanted=k,
            policy=TIE_POLICY[spec.bound]), TiedScoresWarning, stacklevel=3)
    return theta


def weighted_objective_metric(spec, y_true, y_score, target, groups, names, sample_weight) -> float:
    """``objective_metric`` with frequency weights: the weighted metric, or per group the weighted
    thresholds and the pooled weighted precision (recall for ``recall_at_fpr``)."""
    if groups is None:
        return spec.metric(y_true, y_score, target, sample_weight=sample_weight)
    weight = check_sample_weight(sample_weight, np.asarray(y_score).shape[0])
    y_true, y_score, groups = np.asarray(y_true) == 1, np.asarray(y_score, dtype=np.float64), np.asarray(groups)
    thresholds = group_constraint_thresholds(y_score, y_true, groups, objective=spec.name, target=target,
                                             n_groups=None if names is None else len(names), names=names,
                                             sample_weight=weight)
    predicted = y_score > thresholds[groups]
    rows = (predicted & y_true) if spec.subset == "negatives" else predicted
    hits = y_true if spec.subset != "negatives" else predicted
    base = weight[y_true] if spec.subset == "negatives" else weight[predicted]
    if not base.sum() > 0:
        return _rate_or_nan(np.array([]), "weighted rate: no weight in its denominator")
    return float(weight[rows & hits].sum() / base.sum())
