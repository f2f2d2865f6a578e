"""The import path ``quantile_surrogate.guarantees``, kept: the home of these names is
:mod:`quantile_surrogate.objectives.guarantees`."""

from .objectives.guarantees import fpr_threshold, guaranteed_rank, min_calibration_size, rate_threshold, recall_threshold

__all__ = ["recall_threshold", "fpr_threshold", "rate_threshold", "guaranteed_rank", "min_calibration_size"]
