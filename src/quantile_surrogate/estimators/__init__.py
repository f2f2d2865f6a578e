"""scikit-learn estimators: the thresholded classifiers built on :mod:`quantile_surrogate.training`."""

from . import calibration
from .calibration import GuaranteedThresholdClassifier, calibrate_threshold
from .boosted import QuantileBoostingClassifier
from .quantile_classifier import DEFAULT_TARGETS, QuantileClassifier
from .cv import QuantileClassifierCV

__all__ = ["QuantileClassifier", "QuantileClassifierCV", "QuantileBoostingClassifier", "GuaranteedThresholdClassifier",
           "calibrate_threshold", "calibration", "DEFAULT_TARGETS"]
