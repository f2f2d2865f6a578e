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

from .. import losses
from ._rate_loss import PENALIZE, check_loss_settings
from .named import DEFAULT_PR_AUC_RECALLS, PRECISION_FORMS
from .ranking import check_ranking_settings
from .._utils.checks import check_bool, check_option, check_target, check_targets

__all__ = [
    "RateConstrainedLoss",
    "PrecisionAtRecallLoss",
    "PrecisionAtRateLoss",
    "RecallAtFPRLoss",
    "PRAUCLoss",
    "PrecisionAtKLoss",
]


class _QuantileLoss(nn.Module):
    """Settings shared by every loss module; subclasses name the function and the target."""

    _function: Callable
    _target_name: str
    _extra_settings: tuple = ()  # names of the subclass's own settings, passed to the function

    def __init__(self, target, *, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                 empty_subset="zero", validate_args=True):
        super().__init__()
        self.bandwidth = check_loss_settings(quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
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
    r"""Precision at a fixed recall as a ``torch.nn.Module`` (eq. (7)).

    Called as ``loss_fn(scores, labels, threshold_scores=None, *, groups=None,
    threshold_groups=None, weight=None, threshold_weight=None)``, with the arguments of
    :func:`~quantile_surrogate.losses.precision_at_recall_loss`; returns the loss.

    Parameters
    ----------
    recall : float in (0, 1)
        The recall the threshold must keep on the positives.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    empty_subset : {"zero", "raise"}, default="zero"
        What a batch without a row of ``A`` gives: a zero loss and a NaN threshold, or ``ValueError``.
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores).

    Attributes
    ----------
    threshold : Tensor
        The threshold of the last call, detached (a non-persistent buffer: it follows
        ``.to(device)`` but is not saved in ``state_dict``); NaN before the first call.
        Every constructor argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for ``recall`` not strictly between 0 and 1 or an unknown option;
        in a call, for bad inputs (see :func:`~quantile_surrogate.losses.rate_constrained_loss`).

    See Also
    --------
    quantile_surrogate.losses.precision_at_recall_loss : The function it calls.

    Notes
    -----
    The loss of eq. (7), :math:`\sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - \text{recall})\big)`
    (divided by the number of negatives for ``reduction="mean"``).

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import PrecisionAtRecallLoss
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
    r"""Precision at a predicted positive rate (Precision@K) as a ``torch.nn.Module`` (eqs. (9), (10)).

    Called as ``loss_fn(scores, labels, threshold_scores=None, *, groups=None,
    threshold_groups=None, weight=None, threshold_weight=None)``, with the arguments of
    :func:`~quantile_surrogate.losses.precision_at_rate_loss`; returns the loss.

    Parameters
    ----------
    rate : float in (0, 1)
        The predicted positive rate ``tau = K / N``.
    form : {"fp", "tp"}, default="fp"
        Penalise negatives above the threshold (eq. (9)) or positives below it (eq. (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    empty_subset : {"zero", "raise"}, default="zero"
        What a batch without a row of ``A`` gives: a zero loss and a NaN threshold, or ``ValueError``.
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores).

    Attributes
    ----------
    threshold : Tensor
        The threshold of the last call, detached (a non-persistent buffer: it follows
        ``.to(device)`` but is not saved in ``state_dict``); NaN before the first call.
        Every constructor argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for ``rate`` not strictly between 0 and 1 or an unknown option;
        in a call, for bad inputs (see :func:`~quantile_surrogate.losses.rate_constrained_loss`).

    See Also
    --------
    quantile_surrogate.losses.precision_at_rate_loss : The function it calls.

    Notes
    -----
    The FP form (eq. (9)) :math:`\sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X), 1 - \tau)\big)`
    or the TP form (eq. (10)) :math:`\sum_{i: y_i = 1} l\big(\hat q(f(X), 1 - \tau) - f(x_i)\big)`.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import PrecisionAtRateLoss
    >>> loss_fn = PrecisionAtRateLoss(0.5, quantile="point", reduction="sum")
    >>> loss_fn(torch.tensor([3.0, 2.0, 1.0, 0.0]), torch.tensor([1, 0, 1, 0])), loss_fn.threshold
    (tensor(1.6265), tensor(1.))
    """

    _function = staticmethod(losses.precision_at_rate_loss)
    _target_name = "rate"
    _extra_settings = ("form",)

    def __init__(self, rate: float, *, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", empty_subset="zero", validate_args=True):
        form = check_option(form, PRECISION_FORMS, "form")
        super().__init__(check_target(rate, "rate"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)
        self.form = form


class RecallAtFPRLoss(_QuantileLoss):
    r"""Recall at a fixed false positive rate as a ``torch.nn.Module``.

    Called as ``loss_fn(scores, labels, threshold_scores=None, *, groups=None,
    threshold_groups=None, weight=None, threshold_weight=None)``, with the arguments of
    :func:`~quantile_surrogate.losses.recall_at_fpr_loss`; returns the loss.

    Parameters
    ----------
    fpr : float in (0, 1)
        The false positive rate not to exceed.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    empty_subset : {"zero", "raise"}, default="zero"
        What a batch without a row of ``A`` gives: a zero loss and a NaN threshold, or ``ValueError``.
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores).

    Attributes
    ----------
    threshold : Tensor
        The threshold of the last call, detached (a non-persistent buffer: it follows
        ``.to(device)`` but is not saved in ``state_dict``); NaN before the first call.
        Every constructor argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for ``fpr`` not strictly between 0 and 1 or an unknown option;
        in a call, for bad inputs (see :func:`~quantile_surrogate.losses.rate_constrained_loss`).

    See Also
    --------
    quantile_surrogate.losses.recall_at_fpr_loss : The function it calls.

    Notes
    -----
    The Neyman-Pearson form of eq. (2),
    :math:`\sum_{i: y_i = 1} l\big(\hat q(f(X^-), 1 - \text{fpr}) - f(x_i)\big)`.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import RecallAtFPRLoss
    >>> loss_fn = RecallAtFPRLoss(0.5, quantile="point")
    >>> loss_fn(torch.tensor([1.0, 0.0, 2.0, -1.0]), torch.tensor([1, 1, 0, 0])), loss_fn.threshold
    (tensor(0.2201), tensor(-1.))
    """

    _function = staticmethod(losses.recall_at_fpr_loss)
    _target_name = "fpr"

    def __init__(self, fpr: float, *, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                 empty_subset="zero", validate_args=True):
        super().__init__(check_target(fpr, "fpr"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)


class PRAUCLoss(_QuantileLoss):
    r"""Area under the precision-recall curve, a Riemann sum of precision-at-recall losses, as a module.

    Called as ``loss_fn(scores, labels, threshold_scores=None, *, groups=None,
    threshold_groups=None, weight=None, threshold_weight=None)``, with the arguments of
    :func:`~quantile_surrogate.losses.pr_auc_loss`; returns the loss.

    Parameters
    ----------
    recalls : sequence of float in (0, 1), default=(0.1, 0.2, ..., 0.9)
        The grid of recalls.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    empty_subset : {"zero", "raise"}, default="zero"
        What a batch without a row of ``A`` gives: a zero loss and a NaN threshold, or ``ValueError``.
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores).

    Attributes
    ----------
    threshold : Tensor
        The threshold of the last call, detached (a non-persistent buffer: it follows
        ``.to(device)`` but is not saved in ``state_dict``); one entry per recall; NaN before
        the first call.
        Every constructor argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for a recall not strictly between 0 and 1 or an unknown option;
        in a call, for bad inputs (see :func:`~quantile_surrogate.losses.rate_constrained_loss`).

    See Also
    --------
    quantile_surrogate.losses.pr_auc_loss : The function it calls.

    Notes
    -----
    :math:`\frac{1}{|R|} \sum_{r \in R} L_{P@R}(f; r)`, each term eq. (7) (end of section 3.1).

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import PRAUCLoss
    >>> loss_fn = PRAUCLoss(recalls=(2 / 3, 1 / 3), quantile="point")
    >>> loss_fn(torch.tensor([2.0, 1.0, 0.0, 0.5]), torch.tensor([1, 1, 1, 0])), loss_fn.threshold
    (tensor(0.7241), tensor([0., 1.]))
    """

    _function = staticmethod(losses.pr_auc_loss)
    _target_name = "recalls"

    def __init__(self, recalls=DEFAULT_PR_AUC_RECALLS, *, quantile="kernel", bandwidth=0.05,
                 surrogate="logistic", reduction="mean", empty_subset="zero", validate_args=True):
        super().__init__(check_targets(recalls, "recalls"), quantile=quantile, bandwidth=bandwidth,
                         surrogate=surrogate, reduction=reduction, empty_subset=empty_subset,
                         validate_args=validate_args)


class RateConstrainedLoss(_QuantileLoss):
    r"""Any rate-constrained quantile loss as a ``torch.nn.Module`` (eq. (2)).

    Called as ``loss_fn(scores, labels, subset=None, threshold_scores=None, *, groups=None,
    threshold_groups=None, weight=None, threshold_weight=None)``, with the subset ``A`` (a
    bool mask, or "positives", "negatives", "all") given per call; returns the loss.

    Parameters
    ----------
    rate : float in (0, 1)
        The constraint level ``c``: the fraction of ``A`` that must score above the threshold.
    penalize : {"negatives", "positives"}, default="negatives"
        The rows whose surrogate is summed.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    empty_subset : {"zero", "raise"}, default="zero"
        What a batch without a row of ``A`` gives: a zero loss and a NaN threshold, or ``ValueError``.
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores).

    Attributes
    ----------
    threshold : Tensor
        The threshold of the last call, detached (a non-persistent buffer: it follows
        ``.to(device)`` but is not saved in ``state_dict``); NaN before the first call.
        Every constructor argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for ``rate`` not strictly between 0 and 1 or an unknown option;
        in a call, for bad inputs (see :func:`~quantile_surrogate.losses.rate_constrained_loss`).

    See Also
    --------
    quantile_surrogate.losses.rate_constrained_loss : The function it calls.

    Notes
    -----
    With :math:`\theta = \hat q(f(A), 1 - c)`, the loss sums :math:`l(f(x_i) - \theta)` over the
    negatives or :math:`l(\theta - f(x_i))` over the positives (eq. (2)).

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import RateConstrainedLoss
    >>> loss_fn = RateConstrainedLoss(0.5, quantile="point")
    >>> loss_fn(torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1, 1, 0]), "positives"), loss_fn.threshold
    (tensor(0.6931), tensor(0.))
    """

    _function = staticmethod(losses.rate_constrained_loss)
    _target_name = "rate"
    _extra_settings = ("penalize",)

    def __init__(self, rate: float, *, penalize="negatives", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", empty_subset="zero", validate_args=True):
        penalize = check_option(penalize, PENALIZE, "penalize")
        super().__init__(check_target(rate, "rate"), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
                         reduction=reduction, empty_subset=empty_subset, validate_args=validate_args)
        self.penalize = penalize

    def forward(self, scores, labels, subset=None, threshold_scores=None, *, groups=None, threshold_groups=None,
                weight=None, threshold_weight=None):
        """The loss, with the subset ``A`` of this batch (a bool mask or "positives", "negatives", "all")."""
        return self._call(scores, labels, subset=subset, threshold_scores=threshold_scores, groups=groups,
                          threshold_groups=threshold_groups, weight=weight, threshold_weight=threshold_weight)


class PrecisionAtKLoss(_QuantileLoss):
    r"""Precision@K within each query (ranking) as a ``torch.nn.Module`` (eqs. (9), (10) per query).

    Called as ``loss_fn(scores, labels, query)``, with the arguments of
    :func:`~quantile_surrogate.losses.precision_at_k_loss`; returns the loss.

    Parameters
    ----------
    k : int >= 1
        How many top rows of each query count.
    form : {"fp", "tp"}, default="fp"
        Penalise each query's negatives above its threshold (eq. (9)) or its positives below it (eq. (10)).
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.segments.SEGMENT_ESTIMATORS`.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h``, on each query's own rank scale.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :func:`~quantile_surrogate.losses.precision_at_k_loss` ("mean" divides by the
        penalised rows of the queries that count).
    validate_args : bool, default=True
        Check the inputs of every call (types, shapes, binary labels, finite scores, query codes).

    Attributes
    ----------
    threshold : Tensor
        The per-query thresholds of the last call, shape (Q,), detached, NaN for the queries
        left out (a non-persistent buffer); NaN before the first call. Every constructor
        argument is kept too, as checked, under its own name.

    Raises
    ------
    TypeError
        In ``__init__``, for ``k`` not an integer, a setting of the wrong type or a misspelt keyword.
    ValueError
        In ``__init__``, for ``k < 1`` or an unknown option; in a call, for bad inputs (see
        :func:`~quantile_surrogate.losses.precision_at_k_loss`).

    See Also
    --------
    quantile_surrogate.losses.precision_at_k_loss : The function it calls, with the excluded queries.

    Notes
    -----
    :math:`\sum_q \sum_{i \in X_q: y_i = 0} l\big(f(x_i) - \hat q(f(X_q), 1 - k/n_q)\big)` (FP form)
    over the queries with more than ``k`` rows and both relevant and irrelevant rows.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.losses.modules import PrecisionAtKLoss
    >>> loss_fn = PrecisionAtKLoss(2, quantile="point", reduction="sum")
    >>> scores = torch.tensor([3.0, 2.0, 1.0, 0.0, 5.0, 6.0, 7.0, 8.0])
    >>> labels = torch.tensor([1, 0, 1, 0, 0, 0, 0, 0]); query = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    >>> loss_fn(scores, labels, query), loss_fn.threshold  # softplus(1) + softplus(-1); query 1 has no relevant row
    (tensor(1.6265), tensor([1., nan]))
    """

    _function = staticmethod(losses.precision_at_k_loss)
    _target_name = "k"
    _extra_settings = ("form",)

    def __init__(self, k: int, *, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                 reduction="mean", validate_args=True):
        bandwidth = check_ranking_settings(k, form, quantile, bandwidth, surrogate, reduction, False)
        super().__init__(int(k), quantile=quantile, bandwidth=bandwidth, surrogate=surrogate, reduction=reduction,
                         validate_args=validate_args)
        self.form = form

    @property
    def settings(self) -> dict:
        """The keyword arguments of :func:`~quantile_surrogate.losses.precision_at_k_loss` beyond the common four."""
        return {"form": self.form, "validate_args": self.validate_args}

    def forward(self, scores: torch.Tensor, labels: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """The loss of the batch, with each row's query code."""
        return self._call(scores, labels, query=query)
