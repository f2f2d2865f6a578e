"""``torch.nn.Module`` wrappers for the losses in :mod:`quantile_surrogate.losses`.

Each module only holds its settings; ``forward`` is one call to the functional loss (the
PyTorch ``nn.functional`` pattern), so the two forms cannot drift apart. After every call
the threshold used is kept, detached, in ``module.threshold`` so that a training loop can
log it. See the functional versions for the formulas.
"""

from __future__ import annotations

import torch
from torch import nn

from . import losses

__all__ = [
    "RateConstrainedLoss",
    "PrecisionAtRecallLoss",
    "PrecisionAtRateLoss",
    "RecallAtFPRLoss",
    "PRAUCLoss",
]


class _QuantileLoss(nn.Module):
    _function = None
    _target_name = None

    def __init__(self, target, *, quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", **settings):
        super().__init__()
        self.target = target
        self.quantile = quantile
        self.bandwidth = bandwidth
        self.surrogate = surrogate
        self.reduction = reduction
        self.settings = settings
        self.register_buffer("threshold", torch.tensor(float("nan")), persistent=False)

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, threshold_scores=None, **kwargs):
        output = type(self)._function(
            scores, labels, **{self._target_name: self.target},
            threshold_scores=threshold_scores, quantile=self.quantile, bandwidth=self.bandwidth,
            surrogate=self.surrogate, reduction=self.reduction, return_threshold=True,
            **self.settings, **kwargs,
        )
        self.threshold = output.threshold.detach()
        return output.loss

    def extra_repr(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.settings.items())
        return (f"{self._target_name}={self.target!r}, quantile={self.quantile!r}, "
                f"bandwidth={self.bandwidth!r}, surrogate={self.surrogate!r}, "
                f"reduction={self.reduction!r}{extra}")


class PrecisionAtRecallLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.precision_at_recall_loss` (eq. (7)).

    Examples
    --------
    >>> loss_fn = PrecisionAtRecallLoss(recall=0.95)
    >>> scores = torch.randn(100, requires_grad=True); labels = torch.rand(100) < 0.3
    >>> loss_fn(scores, labels).backward(); bool(torch.isfinite(loss_fn.threshold))
    True
    """

    _function = staticmethod(losses.precision_at_recall_loss)
    _target_name = "recall"

    def __init__(self, recall: float, **kwargs):
        super().__init__(recall, **kwargs)


class PrecisionAtRateLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.precision_at_rate_loss` (eqs. (9), (10))."""

    _function = staticmethod(losses.precision_at_rate_loss)
    _target_name = "rate"

    def __init__(self, rate: float, *, form: str = "fp", **kwargs):
        super().__init__(rate, form=form, **kwargs)


class RecallAtFPRLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.recall_at_fpr_loss`."""

    _function = staticmethod(losses.recall_at_fpr_loss)
    _target_name = "fpr"

    def __init__(self, fpr: float, **kwargs):
        super().__init__(fpr, **kwargs)


class PRAUCLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.pr_auc_loss`; ``threshold`` has one entry per recall."""

    _function = staticmethod(losses.pr_auc_loss)
    _target_name = "recalls"

    def __init__(self, recalls=losses.DEFAULT_PR_AUC_RECALLS, **kwargs):
        super().__init__(tuple(recalls), **kwargs)


class RateConstrainedLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.rate_constrained_loss`.

    ``forward(scores, labels, subset=None, threshold_scores=None)`` takes the subset mask per call.
    """

    _function = staticmethod(losses.rate_constrained_loss)
    _target_name = "rate"

    def __init__(self, rate: float, *, penalize: str = "negatives", **kwargs):
        super().__init__(rate, penalize=penalize, **kwargs)
