"""The import path ``quantile_surrogate.bootstrap``, kept: the home of these names is
:mod:`quantile_surrogate.objectives.bootstrap`."""

from .objectives.bootstrap import REPORTED_METRICS, bootstrap_metrics

__all__ = ["bootstrap_metrics", "REPORTED_METRICS"]
