"""The import path ``quantile_surrogate.thresholds``, kept: the home of these names is
:mod:`quantile_surrogate.objectives.thresholds`."""

from .objectives.thresholds import TiedScoresWarning, constraint_threshold, group_constraint_thresholds

__all__ = ["TiedScoresWarning", "constraint_threshold", "group_constraint_thresholds"]
