"""The frequency-weighted :func:`~quantile_surrogate.objectives.objective_metric` (its ``sample_weight=``).

Counts become sums of weights: an integer weight ``w`` is the row repeated ``w`` times, 0 is no
row. Kept apart so that ``objectives`` stays small; it imports this module lazily.
"""

from __future__ import annotations


import numpy as np

from ._validation import check_sample_weight
from .objectives import _rate_or_nan
from .thresholds import group_constraint_thresholds

__all__ = ["weighted_objective_metric"]


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
