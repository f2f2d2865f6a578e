r"""The general rate-constrained loss (eq. (2)) and what it returns; the named losses are special cases.

:func:`rate_constrained_loss` takes any subset ``A`` and any rate; the machinery (thresholds per
level and group, the penalty, the argument checks) is in :mod:`quantile_surrogate.losses._rate_loss`.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import torch

from ._rate_loss import (
    NO_SUBSET_MESSAGE,
    _check_arguments,
    _check_weights,
    group_thresholds,
    is_scalar,
    penalized_rows,
    penalty,
    subset_rows,
    thresholds,
)
from .surrogates import SURROGATES

__all__ = ["rate_constrained_loss", "QuantileLossOutput"]


class QuantileLossOutput(NamedTuple):
    """A loss together with the threshold it used (returned when ``return_threshold=True``).

    A named tuple of its two fields, in this order: it unpacks as ``loss, threshold = ...``.

    Attributes
    ----------
    loss : Tensor
        The loss, reduced (shape ()) or not (shape (N,) for ``reduction="none"``).
    threshold : Tensor
        The quantile estimate used as the threshold, part of the autograd graph: shape () for
        one rate, (len(rate),) for a sequence of rates, with a trailing group axis (G,) with
        ``groups=``; NaN where the subset ``A`` had no row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import precision_at_recall_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 0, 0])
    >>> loss, threshold = precision_at_recall_loss(scores, labels, 0.5, quantile="point", return_threshold=True)
    >>> round(loss.item(), 4), threshold.item()
    (0.3937, 1.0)
    """

    loss: torch.Tensor
    threshold: torch.Tensor


def rate_constrained_loss(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    rate: float | Sequence[float],
    subset: torch.Tensor | str | None = None,
    penalize: str = "negatives",
    threshold_scores: torch.Tensor | None = None,
    groups: torch.Tensor | None = None,
    threshold_groups: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
    threshold_weight: torch.Tensor | None = None,
    quantile: str | Callable = "kernel",
    bandwidth: float = 0.05,
    surrogate: str = "logistic",
    reduction: str = "mean",
    empty_subset: str = "zero",
    return_threshold: bool = False,
    validate_args: bool = True,
):
    r"""Loss for any rate constraint "predicted positive rate on A >= rate" (eq. (2), section 3).

    The threshold is a differentiable quantile estimate of the scores of ``A``, so gradients
    flow through it to every score that the estimator weights; penalising negatives above
    it bounds the false positives, penalising positives below it the false negatives.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)`` (never passed through a sigmoid).
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    rate : float in (0, 1), or a sequence of them
        The constraint level ``c``: the fraction of ``A`` that must score above the threshold.
        With a sequence the loss is the mean over the rates of the loss at each rate (the
        Riemann sum of :func:`pr_auc_loss`), and every rate shares one selection or sort.
    subset : bool Tensor of shape (N,), or {"positives", "negatives", "all"}, optional
        The rows of ``A`` in this batch. Ignored when ``threshold_scores`` is given;
        otherwise required.
    penalize : {"negatives", "positives"}, default="negatives"
        The rows whose surrogate is summed: negatives above the threshold (a false
        positive bound) or positives below it (a false negative bound).
    threshold_scores : Tensor of shape (M,), optional
        Scores of a separate minibatch drawn from ``A`` (Algorithm 1, step 2); the threshold
        is estimated from them instead of from ``scores[subset]``.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1. Each group gets its own threshold ``q(f(A & G_g), 1 - rate)``
        and each row is compared with its group's threshold, so the constraint holds in
        every group: with ``subset="all"`` it is the same predicted positive rate in
        every group (demographic parity); with the positives, recall >= rate in every
        group (equal opportunity). The returned threshold then has shape (G,); a group
        with no row of ``A`` gets a NaN threshold and its rows no loss.
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    weight : floating point Tensor of shape (N,), optional
        Row weights ``w_i >= 0`` (frequency weights: an integer weight counts a row that
        many times, 0 drops it). They weight both the penalised sum,
        ``sum_i w_i l(...)`` ("mean" divides by ``sum_i w_i`` over the penalised rows), and
        the threshold, which becomes the weighted quantile of ``f(A)``: the estimator's
        formula on the weighted empirical distribution ``F_w(s) = sum_{s_i <= s} w_i / W``
        (counts ``N`` replaced by the mass ``W``, ranks by cumulative weights; see
        :mod:`quantile_surrogate.quantiles._weighted`). With integer weights loss, threshold and
        gradient equal those of the batch with row ``i`` repeated ``w_i`` times.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores`` (the threshold is then their weighted quantile).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``. Default ``"kernel"`` (Gaussian), as in the paper.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns the per-row loss of shape (N,), 0 on rows that are not penalised;
        ``"mean"`` divides the sum by the number of penalised rows (as ``ignore_index`` does
        in ``torch.nn.functional.cross_entropy``), ``"sum"`` does not divide.
    empty_subset : {"zero", "raise"}, default="zero"
        What to do when ``A`` has no row in this batch: ``"zero"`` returns a zero loss that is
        still connected to the graph (its gradient is zero, so an optimiser step only applies
        momentum and weight decay) and a NaN threshold; ``"raise"`` raises ``ValueError``.
    return_threshold : bool, default=False
        Return :class:`QuantileLossOutput` ``(loss, threshold)`` instead of the loss alone.
    validate_args : bool, default=True
        Check the arguments and the inputs: types and shapes, binary labels, and finite
        scores (one fused reduction, one device sync). The training loop turns this off
        after checking once.

    Returns
    -------
    Tensor or QuantileLossOutput
        The loss, in the scores' dtype, of shape () (or (N,) for ``reduction="none"``); with
        ``return_threshold=True`` a :class:`QuantileLossOutput` whose threshold has shape ()
        for one rate, (len(rate),) for a sequence, and a trailing group axis (G,) with ``groups``.

    Raises
    ------
    TypeError
        If ``scores``, ``labels`` or a mask is not a tensor (a list or a NumPy array is
        refused, not guessed), ``scores`` is not floating point, ``quantile`` is neither a
        name nor callable, or an option is not a string.
    ValueError
        If a shape or length does not match, a label is not binary, a score is NaN or inf,
        a rate is not strictly between 0 and 1, an option is unknown, ``bandwidth`` is not
        > 0, a group code is negative, row weights are negative (or come with a callable
        ``quantile``), or ``A`` is empty with ``empty_subset="raise"``.

    See Also
    --------
    precision_at_recall_loss, precision_at_rate_loss, recall_at_fpr_loss, pr_auc_loss :
        The named losses, each with its subset fixed.
    quantile_surrogate.losses.modules.RateConstrainedLoss : The ``torch.nn.Module`` form.
    quantile_surrogate.quantiles.QUANTILE_ESTIMATORS : The estimators ``quantile=`` names.

    Notes
    -----
    Proposition 1 replaces the threshold of a constraint "rate on A >= c" by the quantile
    ``q(f(A), 1 - c)``, which turns the constrained problem (eq. (1)) into the loss of eq. (2):

    .. math::
        \theta = \hat q(f(A), 1 - c), \qquad
        \ell_i = \begin{cases}
            l(f(x_i) - \theta) & y_i = 0, \text{ if penalize = "negatives"} \\
            l(\theta - f(x_i)) & y_i = 1, \text{ if penalize = "positives"} \\
            0 & \text{otherwise,}
        \end{cases}

    and the loss is :math:`\sum_i \ell_i` (``"sum"``) or that sum over the number of
    penalised rows (``"mean"``). Penalising negatives is the false positive bound of
    eqs. (7) and (9); penalising positives the true positive bound of eq. (10).

    If no row is penalised (a batch without negatives, say), the loss is 0 and so is its
    gradient. The "mean" divisor counts penalised rows in this batch, so the loss scale
    does not depend on the class balance of the batch. Sums and counts are accumulated in
    float32 for half precision scores (a float16 count overflows above 65504 rows).

    Examples
    --------
    Scores 0 and 1 for the positives; the point threshold at level ``1 - 0.5`` is their 1st
    order statistic, 0; the one negative, at 0, costs ``log 2``:

    >>> import torch
    >>> from quantile_surrogate import rate_constrained_loss
    >>> scores = torch.tensor([0.0, 1.0, 0.0]); labels = torch.tensor([1, 1, 0])
    >>> rate_constrained_loss(scores, labels, rate=0.5, subset="positives", quantile="point")
    tensor(0.6931)

    One threshold per group (here a predicted positive rate of 1/2 in each of two groups):

    >>> scores = torch.tensor([3.0, 1.0, 2.0, 0.0]); groups = torch.tensor([0, 0, 1, 1])
    >>> out = rate_constrained_loss(scores, torch.tensor([1, 0, 0, 1]), rate=0.5, subset="all", groups=groups,
    ...                             quantile="point", return_threshold=True)
    >>> out.threshold
    tensor([1., 0.])
    """
    if validate_args:
        targets, rate, bandwidth = _check_arguments(
            scores, labels, rate, subset, penalize, threshold_scores, groups, threshold_groups,
            dict(quantile=quantile, bandwidth=bandwidth, surrogate=surrogate, reduction=reduction,
                 empty_subset=empty_subset), return_threshold,
        )
        _check_weights(scores.numel(), weight, threshold_scores, threshold_weight, quantile)
    else:
        targets = labels.to(torch.promote_types(scores.dtype, torch.float32))
    single = is_scalar(rate)
    rates = (float(rate),) if single else tuple(float(r) for r in rate)
    if threshold_scores is None:
        if subset is None:
            raise ValueError(NO_SUBSET_MESSAGE)
        subset = subset_rows(subset, targets)
    else:
        subset = None
    settings = (quantile, bandwidth, empty_subset)
    weights = () if weight is None and threshold_weight is None else (weight, threshold_weight)
    if groups is None:
        threshold, row_threshold, live = thresholds(scores, rates, subset, threshold_scores, settings, *weights)
        threshold = threshold.reshape(()) if single else threshold
    else:
        threshold, row_threshold, live = group_thresholds(
            scores, groups, rates, subset, threshold_scores, threshold_groups, settings, *weights
        )
        threshold = threshold[:, 0] if single else threshold.T
    penalized = penalized_rows(targets, penalize, live)
    if weight is None:
        loss = penalty(scores, row_threshold, penalized, penalize, SURROGATES[surrogate], reduction)
    else:
        loss = penalty(scores, row_threshold, penalized, penalize, SURROGATES[surrogate], reduction, weight)
    return QuantileLossOutput(loss, threshold) if return_threshold else loss


class _FixedLabelsLoss:
    """:func:`rate_constrained_loss` for many calls on one set of rows: the label work done once.

    Full-batch training calls the loss on the same labels every epoch; the float targets, the
    mask of ``A`` and the 0/1 weights of the penalised rows are computed here once, and a call
    runs only the threshold and the penalty, the same functions in the same order as
    :func:`rate_constrained_loss` (so the same values and gradients, bit for bit; tested). No
    argument checks (the caller checked its data); one rate, no groups, no row weights,
    ``reduction="mean"``, ``empty_subset="zero"``.
    """

    def __init__(self, labels, dtype, *, rate, subset, penalize, quantile, bandwidth, surrogate):
        targets = labels.to(torch.promote_types(dtype, torch.float32))
        self.subset = subset_rows(subset, targets)
        self.penalize = penalize
        self.penalized = penalized_rows(targets, penalize, True)
        self.rates = (float(rate),)
        self.settings = (quantile, bandwidth, "zero")
        self.surrogate = SURROGATES[surrogate]

    def __call__(self, scores) -> QuantileLossOutput:
        threshold, row_threshold, live = thresholds(scores, self.rates, self.subset, None, self.settings)
        penalized = self.penalized if live is True else self.penalized * live
        loss = penalty(scores, row_threshold, penalized, self.penalize, self.surrogate, "mean")
        return QuantileLossOutput(loss, threshold.reshape(()))
