"""``torch.nn.Module`` wrappers for the losses in :mod:`quantile_surrogate.losses`.

Each module only holds its settings; ``forward`` is one call to the functional loss (the
PyTorch ``nn.functional`` pattern), so the two forms cannot drift apart. The settings are
keyword-only after the target and are checked in ``__init__`` (as torchmetrics does), so a
wrong value fails where it is written, and a misspelt one is a ``TypeError`` there. After
every call the threshold used is kept, detached, in ``module.threshold`` so that a training
loop can log it. See the functional versions for the formulas.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from . import losses
from ._validation import check_bool, check_option, check_target, check_targets

__all__ = [
    "RateConstrainedLoss",
    "PrecisionAtRecallLoss",
    "PrecisionAtRateLoss",
    "RecallAtFPRLoss",
    "PRAUCLoss",
]


class _QuantileLoss(nn.Module):
    """Settings shared by every loss module; subclasses name the function and the target."""

    _function: Callable
    _target_name: str
    _extra_settings: tuple = ()  # names of the subclass's own settings, passed to the function

    def __init__(self, target, *, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                 empty_subset="zero", validate_args=True):
        super().__init__()
        self.bandwidth = losses.check_loss_settings(quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                                                    reduction=reduction, empty_subset=empty_subset)
        self.target = target
        self.quantile = quantile
        self.surrogate = surrogate
        self.reduction = reduction
        self.empty_subset = empty_subset
        self.validate_args = check_bool(validate_args, "validate_args")
        self.register_buffer("threshold", torch.tensor(float("nan")), persistent=False)

    @property
    def settings(self) -> dict:
        """The keyword arguments of the functional loss other than the target and the common four."""
        own = {name: getattr(self, name) for name in self._extra_settings}
        return {**own, "empty_subset": self.empty_subset, "validate_args": self.validate_args}

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, threshold_scores: torch.Tensor | None = None, *,
                groups: torch.Tensor | None = None, threshold_groups: torch.Tensor | None = None,
                weight: torch.Tensor | None = None, threshold_weight: torch.Tensor | None = None) -> torch.Tensor:
        """The loss; ``weight`` (per row of ``scores``) and ``threshold_weight`` (per row of
        ``threshold_scores``) are frequency weights of the penalised sum and of the weighted
        quantile threshold, as in :func:`~quantile_surrogate.losses.rate_constrained_loss`."""
        return self._call(scores, labels, threshold_scores=threshold_scores, groups=groups,
                          threshold_groups=threshold_groups, weight=weight, threshold_weight=threshold_weight)

    def _call(self, scores, labels, **per_call):
        output = type(self)._function(
            scores, labels, **{self._target_name: self.target}, quantile=self.quantile, bandwidth=self.bandwidth,
            surrogate=self.surrogate, reduction=self.reduction, return_threshold=True, **self.settings, **per_call,
        )
        self.threshold = output.threshold.detach()
        return output.loss

    def extra_repr(self) -> str:
        extra = "".join(f", {name}={getattr(self, name)!r}" for name in self._extra_settings)
        return (f"{self._target_name}={self.target!r}, quantile={self.quantile!r}, "
                f"bandwidth={self.bandwidth!r}, surrogate={self.surrogate!r}, "
                f"reduction={self.reduction!r}{extra}")


class PrecisionAtRecallLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.precision_at_recall_loss` (eq. (7)).

    Called as ``loss_fn(scores, labels, threshold_scores=None, *, groups=None, threshold_groups=None, weight=None, threshold_weight=None)``.

    Examples
    --------
    >>> loss_fn = PrecisionAtRecallLoss(recall=0.5, quantile="point")
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5], requires_grad=True); labels = torch.tensor([1, 1, 0, 0])
    >>> loss = loss_fn(scores, labels)  # threshold = 1.0; (softplus(-1) + softplus(-0.5)) / 2
    >>> loss.backward(); loss, loss_fn.threshold
    (tensor(0.3937, grad_fn=<DivBackward0>), tensor(1.))
    """

    _function = staticmethod(losses.precision_at_recall_loss)
    _target_name = "recall"

    def __init__(self, recall: float, *, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                 empty_subset="zero", validate_args=True):
        super().__init__(check_target(recall, "recall"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)


class PrecisionAtRateLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.precision_at_rate_loss` (eqs. (9), (10)).

    ``form`` is "fp" (eq. (9)) or "tp" (eq. (10)); the other settings are those of :class:`PrecisionAtRecallLoss`.
    """

    _function = staticmethod(losses.precision_at_rate_loss)
    _target_name = "rate"
    _extra_settings = ("form",)

    def __init__(self, rate: float, *, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", empty_subset="zero", validate_args=True):
        form = check_option(form, losses.PRECISION_FORMS, "form")
        super().__init__(check_target(rate, "rate"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)
        self.form = form


class RecallAtFPRLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.recall_at_fpr_loss`; settings as :class:`PrecisionAtRecallLoss`."""

    _function = staticmethod(losses.recall_at_fpr_loss)
    _target_name = "fpr"

    def __init__(self, fpr: float, *, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                 empty_subset="zero", validate_args=True):
        super().__init__(check_target(fpr, "fpr"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)


class PRAUCLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.pr_auc_loss`; ``threshold`` has one entry per recall."""

    _function = staticmethod(losses.pr_auc_loss)
    _target_name = "recalls"

    def __init__(self, recalls=losses.DEFAULT_PR_AUC_RECALLS, *, quantile="kernel", bandwidth=0.05,
                 surrogate="logistic", reduction="mean", empty_subset="zero", validate_args=True):
        super().__init__(check_targets(recalls, "recalls"), quantile=quantile, bandwidth=bandwidth,
                         surrogate=surrogate, reduction=reduction, empty_subset=empty_subset,
                         validate_args=validate_args)


class RateConstrainedLoss(_QuantileLoss):
    """Module form of :func:`~quantile_surrogate.losses.rate_constrained_loss`.

    Called as ``loss_fn(scores, labels, subset=None, threshold_scores=None, *, groups=None, threshold_groups=None, weight=None, threshold_weight=None)``,
    with the subset (a bool mask, or "positives", "negatives", "all") given per call.
    """

    _function = staticmethod(losses.rate_constrained_loss)
    _target_name = "rate"
    _extra_settings = ("penalize",)

    def __init__(self, rate: float, *, penalize="negatives", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", empty_subset="zero", validate_args=True):
        penalize = check_option(penalize, losses.PENALIZE, "penalize")
        super().__init__(check_target(rate, "rate"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)
        self.penalize = penalize

    def forward(self, scores, labels, subset=None, threshold_scores=None, *, groups=None, threshold_groups=None,
                weight=None, threshold_weight=None):
        return self._call(scores, labels, subset=subset, threshold_scores=threshold_scores, groups=groups,
                          threshold_groups=threshold_groups, weight=weight, threshold_weight=threshold_weight)
