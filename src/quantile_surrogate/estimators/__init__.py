"""scikit-learn estimators: the thresholded classifiers built on :mod:`quantile_surrogate.training`.

- :class:`QuantileClassifier`: a linear model or MLP trained on the quantile surrogate loss
  (:mod:`quantile_surrogate.estimators.quantile_classifier`);
- :class:`QuantileClassifierCV`: the same with its regularisation chosen by cross-validation;
- :class:`QuantileBoostingClassifier`: gradient-boosted trees (LightGBM or XGBoost) trained
  on the same losses (:mod:`quantile_surrogate.estimators.boosted`);
- :class:`DaskQuantileBoostingClassifier`: the same trees (XGBoost) trained on Dask partitions, the
  threshold exact over every worker (:mod:`quantile_surrogate.estimators.dask_boosted`);
- :class:`QuantileRanker`: a ranker (LightGBM, XGBoost or linear) trained for precision@k within
  each query (:mod:`quantile_surrogate.estimators.ranker`);
- :class:`GuaranteedThresholdClassifier` and :func:`calibrate_threshold`: a threshold set on
  held-out rows so that the constraint holds on new data with probability ``1 - delta``
  (:mod:`quantile_surrogate.estimators.calibration`).

Each is also importable from the package root (``from quantile_surrogate import ...``).
:data:`~quantile_surrogate.estimators.quantile_classifier.DEFAULT_TARGETS` (each objective's
default ``target``) lives in :mod:`quantile_surrogate.estimators.quantile_classifier`.
"""

from . import calibration
from .calibration import GuaranteedThresholdClassifier, calibrate_threshold
from .boosted import QuantileBoostingClassifier
from .dask_boosted import DaskQuantileBoostingClassifier
from .quantile_classifier import DEFAULT_TARGETS, QuantileClassifier
from .cv import QuantileClassifierCV
from .ranker import QuantileRanker

__all__ = ["QuantileClassifier", "QuantileClassifierCV", "QuantileBoostingClassifier", "DaskQuantileBoostingClassifier",
           "QuantileRanker", "GuaranteedThresholdClassifier", "calibrate_threshold"]
