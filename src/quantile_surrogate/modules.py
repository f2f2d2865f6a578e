"""The import path ``quantile_surrogate.modules``, kept: the home of these names is
:mod:`quantile_surrogate.losses.modules`."""

from .losses.modules import PRAUCLoss, PrecisionAtRateLoss, PrecisionAtRecallLoss, RateConstrainedLoss, RecallAtFPRLoss

__all__ = ["RateConstrainedLoss", "PrecisionAtRecallLoss", "PrecisionAtRateLoss", "RecallAtFPRLoss", "PRAUCLoss"]
