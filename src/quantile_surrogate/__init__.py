"""quantile-surrogate: train classifiers for the operating point you use.

Implements "Constrained Classification and Ranking via Quantiles" (Mackey, Luo & Eban
2018): a rate constraint fixes the decision threshold at a quantile of the model's own
scores, and a differentiable quantile estimate turns the constrained problem into an
ordinary loss.
"""

from importlib.metadata import PackageNotFoundError, version

from . import losses, metrics, quantiles
from .estimators import (
    GuaranteedThresholdClassifier,
    QuantileBoostingClassifier,
    QuantileClassifier,
    QuantileClassifierCV,
    calibrate_threshold,
    calibration,
)
from .losses import (
    pr_auc_loss,
    precision_at_rate_loss,
    precision_at_recall_loss,
    rate_constrained_loss,
    recall_at_fpr_loss,
)
from .modules import (
    PRAUCLoss,
    PrecisionAtRateLoss,
    PrecisionAtRecallLoss,
    RateConstrainedLoss,
    RecallAtFPRLoss,
)
from .training import SubsetBatchSampler, TrainingDivergedError, TrainResult, train
from .quantiles import (
    harrell_davis_quantile,
    interval_quantile,
    kernel_quantile,
    lower_mean_quantile,
    point_quantile,
)

try:
    __version__ = version("quantile-surrogate")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "QuantileClassifier",
    "QuantileClassifierCV",
    "QuantileBoostingClassifier",
    "train",
    "TrainResult",
    "TrainingDivergedError",
    "SubsetBatchSampler",
    "GuaranteedThresholdClassifier",
    "calibrate_threshold",
    "calibration",
    "losses",
    "metrics",
    "quantiles",
    "rate_constrained_loss",
    "precision_at_recall_loss",
    "precision_at_rate_loss",
    "recall_at_fpr_loss",
    "pr_auc_loss",
    "RateConstrainedLoss",
    "PrecisionAtRecallLoss",
    "PrecisionAtRateLoss",
    "RecallAtFPRLoss",
    "PRAUCLoss",
    "point_quantile",
    "kernel_quantile",
    "lower_mean_quantile",
    "interval_quantile",
    "harrell_davis_quantile",
]
