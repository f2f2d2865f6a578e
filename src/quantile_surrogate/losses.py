r"""Rate-constrained quantile surrogate losses (Mackey, Luo & Eban 2018, section 3).

A rate constraint "the predicted positive rate on the subset A is >= c" fixes the
decision threshold at ``theta = q(f(A), 1 - c)`` (Proposition 1). Substituting a
differentiable estimate of that quantile for the threshold turns the constrained problem
into an ordinary loss:

.. math::
    L(f) = \sum_{i \in P} l\big(\pm (f(x_i) - q(f(A), 1 - c))\big)

where ``P`` is the set of examples penalised (negatives above the threshold, the false
positive bound, or positives below it, the true positive bound) and ``l`` is the logistic
(softplus) or hinge upper bound of the 0-1 step.

:func:`rate_constrained_loss` is that general form. The named losses are calls to it with
a fixed subset (``subset=`` takes the same words):

==============================  =================  =========  ==================
loss                            subset A           penalised  paper
==============================  =================  =========  ==================
``precision_at_recall_loss``    ``"positives"``    negatives  eq. (7)
``precision_at_rate_loss`` fp   ``"all"``          negatives  eq. (9)
``precision_at_rate_loss`` tp   ``"all"``          positives  eq. (10)
``recall_at_fpr_loss``          ``"negatives"``    positives  Neyman-Pearson
``pr_auc_loss``                 ``"positives"``    negatives  eq. (7), Riemann sum
==============================  =================  =========  ==================

Inputs are torch tensors (a list or a NumPy array raises ``TypeError``). Float16 and
bfloat16 scores, with or without ``torch.autocast``, are supported: the quantile's ranks
and weights and the reduction's sums and counts are computed in float32, and the loss
has the scores' dtype. Under ``torch.compile`` the point and kernel estimators take a
torch path automatically, since NumPy cannot be compiled (:mod:`quantile_surrogate._selection`);
with ``validate_args=False`` the losses then compile into one graph. The input checks of
``validate_args=True``, ``groups=``, ``empty_subset="raise"`` and the other estimators read
data on the host and break the graph (the values stay those of eager mode): in a compiled
training step, check the data once and pass ``validate_args=False``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from ._validation import (
    check_bandwidth,
    check_bool,
    check_groups,
    check_mask,
    check_option,
    check_reduction,
    check_scores,
    check_scores_and_labels,
    check_weight_tensor,
    check_target,
    check_targets,
)
from ._rate_loss import EMPTY_SUBSET_MESSAGE, group_thresholds, is_scalar, penalty, subset_rows, thresholds
from .quantiles import QUANTILE_ESTIMATORS

__all__ = [
    "rate_constrained_loss",
    "precision_at_recall_loss",
    "precision_at_rate_loss",
    "recall_at_fpr_loss",
    "pr_auc_loss",
    "SURROGATES",
    "QuantileLossOutput",
]


def _logistic(z: torch.Tensor) -> torch.Tensor:
    # log(1 + exp(z)) overflows for large z; softplus(z) = max(z, 0) + log1p(exp(-|z|)) does not.
    return F.softplus(z)


def _hinge(z: torch.Tensor) -> torch.Tensor:
    return torch.clamp(1.0 + z, min=0.0)


#: Surrogates accepted by ``surrogate=``, name -> ``l(z)``: convex, non-decreasing upper bounds of
#: the 0-1 step up to a constant, ``"logistic"`` :math:`\log(1 + e^z) \ge \log 2 \cdot 1[z \ge 0]`
#: (computed as ``softplus``, which cannot overflow) and ``"hinge"`` :math:`\max(0, 1 + z) \ge 1[z \ge 0]`.
SURROGATES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "logistic": _logistic,
    "hinge": _hinge,
}

PENALIZE = ("negatives", "positives")
SUBSETS = ("positives", "negatives", "all")
EMPTY_SUBSET = ("zero", "raise")
NO_SUBSET_MESSAGE = (
    "Pass `subset=` (a bool row mask of A, or one of 'positives', 'negatives', 'all') or `threshold_scores=`."
)
QUANTILE_TYPE_MESSAGE = "`quantile` must be an estimator name such as 'kernel' or a callable f(scores, level); got {}."


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


def check_loss_settings(*, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                        empty_subset="zero") -> float:
    """Check the settings every loss shares (the loss modules call this in ``__init__``); returns the bandwidth."""
    if not callable(quantile):
        if not isinstance(quantile, str):
            raise TypeError(QUANTILE_TYPE_MESSAGE.format(type(quantile).__name__))
        check_option(quantile, QUANTILE_ESTIMATORS, "quantile")
    check_option(surrogate, SURROGATES, "surrogate")
    check_reduction(reduction)
    check_option(empty_subset, EMPTY_SUBSET, "empty_subset")
    return check_bandwidth(bandwidth)


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
        :mod:`quantile_surrogate._weighted`). With integer weights loss, threshold and
        gradient equal those of the batch with row ``i`` repeated ``w_i`` times.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores`` (the threshold is then their weighted quantile).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``. Default ``"kernel"`` (Gaussian), as in the paper.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`SURROGATES`).
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
    quantile_surrogate.modules.RateConstrainedLoss : The ``torch.nn.Module`` form.
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
        positive, rate, bandwidth = _check_arguments(
            scores, labels, rate, subset, penalize, threshold_scores, groups, threshold_groups,
            dict(quantile=quantile, bandwidth=bandwidth, surrogate=surrogate, reduction=reduction,
                 empty_subset=empty_subset), return_threshold,
        )
        if weight is not None:
            check_weight_tensor(weight, scores.numel(), "weight")
        if threshold_weight is not None:
            if threshold_scores is None:
                raise ValueError("`threshold_weight` weights `threshold_scores`; pass both, or use `weight=`.")
            check_weight_tensor(threshold_weight, threshold_scores.numel(), "threshold_weight")
        if (weight is not None or threshold_weight is not None) and callable(quantile):
            raise ValueError("Row weights need a named quantile estimator; a callable `quantile` cannot take "
                             "`weight=`. Pass quantile='kernel' (or another name) or drop the weights.")
    else:
        positive = labels if labels.dtype == torch.bool else labels == 1
    single = is_scalar(rate)
    rates = (float(rate),) if single else tuple(float(r) for r in rate)
    if threshold_scores is None:
        if subset is None:
            raise ValueError(NO_SUBSET_MESSAGE)
        subset = subset_rows(subset, positive)
    else:
        subset = None
    penalized = ~positive if penalize == "negatives" else positive
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
    live = penalized if live is True else penalized & live
    if weight is None:
        loss = penalty(scores, row_threshold, live, penalize, SURROGATES[surrogate], reduction)
    else:
        loss = penalty(scores, row_threshold, live, penalize, SURROGATES[surrogate], reduction, weight)
    return QuantileLossOutput(loss, threshold) if return_threshold else loss


def _check_arguments(scores, labels, rate, subset, penalize, threshold_scores, groups, threshold_groups,
                     settings, return_threshold):
    """Every check of :func:`rate_constrained_loss`; returns ``(positive rows, rate, bandwidth)``."""
    positive = check_scores_and_labels(scores, labels)  # one device sync for both
    n = scores.numel()
    rate = check_target(rate, "rate") if is_scalar(rate) else check_targets(rate, "rate")
    check_option(penalize, PENALIZE, "penalize")
    bandwidth = check_loss_settings(**settings)
    check_bool(return_threshold, "return_threshold")
    if threshold_scores is not None:
        if not isinstance(threshold_scores, torch.Tensor) or threshold_scores.numel():
            check_scores(threshold_scores, "threshold_scores")
    elif subset is None:
        raise ValueError(NO_SUBSET_MESSAGE)
    elif isinstance(subset, str):
        check_option(subset, SUBSETS, "subset")
    else:
        check_mask(subset, n, "subset")
    if groups is not None:
        check_groups(groups, n, "groups")
        if threshold_scores is not None:
            if threshold_groups is None:
                raise ValueError("With `groups=` and `threshold_scores=`, pass `threshold_groups=` too.")
            check_groups(threshold_groups, threshold_scores.numel(), "threshold_groups")
    return positive, rate, bandwidth


def _check_named_target(value, name: str, kwargs: dict):
    # The named losses pass their target on as `rate`; check it first under the name the user typed.
    if kwargs.get("validate_args", True):
        check_targets(value, name) if name == "recalls" else check_target(value, name)


def precision_at_recall_loss(scores, labels, recall: float, *, threshold_scores=None, **kwargs):
    r"""Precision at a fixed recall: the false positives above the positives' quantile (eq. (7)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    recall : float in (0, 1)
        The recall the threshold must keep on the positives.
    threshold_scores : Tensor of shape (M,), optional
        Scores of positives (a separate minibatch of them) to estimate the threshold from;
        by default the positives of this batch.
    **kwargs
        Any other keyword argument of :func:`rate_constrained_loss` (``quantile``,
        ``bandwidth``, ``surrogate``, ``reduction``, ``groups``, ``weight``,
        ``return_threshold``, ...).

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ````recall```` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.modules.PrecisionAtRecallLoss : The module form.
    quantile_surrogate.metrics.precision_at_recall : The exact metric.
    pr_auc_loss : The mean over a grid of recalls.

    Notes
    -----
    Eq. (7) of the paper (``\label{eq:unconstrained_fp_at_r}``):

    .. math::
        L(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - \text{recall})\big).

    Recall >= r on the positives fixes ``theta`` at their (1 - r)-quantile (Proposition 1);
    the loss bounds the false positives at that threshold, and fewer false positives at a
    fixed number of true positives is higher precision (eqs. (3) to (6)). It is
    :func:`rate_constrained_loss` with ``subset="positives"`` and ``penalize="negatives"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import precision_at_recall_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 1, 0])
    >>> # recall 2/3: threshold = q1 of {0, 1, 2} at level 1/3 = 0; negative at 0.5 costs softplus(0.5)
    >>> precision_at_recall_loss(scores, labels, recall=2 / 3, quantile="point")
    tensor(0.9741)
    """
    _check_named_target(recall, "recall", kwargs)
    return rate_constrained_loss(scores, labels, rate=recall, subset="positives", penalize="negatives",
                                 threshold_scores=threshold_scores, **kwargs)


PRECISION_FORMS = {"fp": "negatives", "tp": "positives"}


def precision_at_rate_loss(scores, labels, rate: float, *, form: str = "fp", threshold_scores=None, **kwargs):
    r"""Precision at a predicted positive rate, i.e. Precision@K with ``rate = K / N`` (eqs. (9), (10)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    rate : float in (0, 1)
        The predicted positive rate ``tau``: the fraction of all rows above the threshold.
    form : {"fp", "tp"}, default="fp"
        ``"fp"`` penalises negatives above the threshold (eq. (9)), ``"tp"`` positives
        below it (eq. (10)).
    threshold_scores : Tensor of shape (M,), optional
        Scores of any rows (a separate minibatch) to estimate the threshold from; by
        default every row of this batch.
    **kwargs
        Any other keyword argument of :func:`rate_constrained_loss` (``quantile``,
        ``bandwidth``, ``surrogate``, ``reduction``, ``groups``, ``weight``,
        ``return_threshold``, ...).

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` for an unknown ``form``, and names ````rate```` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.modules.PrecisionAtRateLoss : The module form.
    quantile_surrogate.metrics.precision_at_rate : The exact metric.

    Notes
    -----
    The FP form (eq. (9), ``\label{eq:unconstrained_fp_at_ppr}``) and the TP form
    (eq. (10), ``\label{eq:unconstrained_tp_at_ppr}``):

    .. math::
        L_{fp}(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X), 1 - \tau)\big), \qquad
        L_{tp}(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X), 1 - \tau) - f(x_i)\big).

    With ``tau N`` predicted positives ``TP + FP = tau N`` (eq. (8)), so fewer false positives
    and more true positives are the same goal; the two forms bound it from either side. It
    is :func:`rate_constrained_loss` with ``subset="all"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import precision_at_rate_loss
    >>> scores = torch.tensor([3.0, 2.0, 1.0, 0.0]); labels = torch.tensor([1, 0, 1, 0])
    >>> # rate 1/2: level 1/2, k = 2, threshold 1; the negatives at 2 and 0 cost softplus(1) + softplus(-1)
    >>> precision_at_rate_loss(scores, labels, rate=0.5, quantile="point", reduction="sum")
    tensor(1.6265)
    >>> # TP form: the positive at 1 sits on the threshold, softplus(0); the one at 3 softplus(-2)
    >>> precision_at_rate_loss(scores, labels, rate=0.5, form="tp", quantile="point", reduction="sum")
    tensor(0.8201)
    """
    check_option(form, PRECISION_FORMS, "form")
    _check_named_target(rate, "rate", kwargs)
    return rate_constrained_loss(scores, labels, rate=rate, subset="all", penalize=PRECISION_FORMS[form],
                                 threshold_scores=threshold_scores, **kwargs)


def recall_at_fpr_loss(scores, labels, fpr: float, *, threshold_scores=None, **kwargs):
    r"""Recall at a fixed false positive rate (the Neyman-Pearson case).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    fpr : float in (0, 1)
        The false positive rate not to exceed: the fraction of negatives above the threshold.
    threshold_scores : Tensor of shape (M,), optional
        Scores of negatives (a separate minibatch of them) to estimate the threshold from;
        by default the negatives of this batch.
    **kwargs
        Any other keyword argument of :func:`rate_constrained_loss` (``quantile``,
        ``bandwidth``, ``surrogate``, ``reduction``, ``groups``, ``weight``,
        ``return_threshold``, ...).

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ````fpr```` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.modules.RecallAtFPRLoss : The module form.
    quantile_surrogate.metrics.recall_at_fpr : The exact metric.

    Notes
    -----
    Not one of the paper's worked examples, but the same construction (eq. (2) with the
    "<=" form of Proposition 1): FPR <= alpha on the negatives fixes ``theta`` at their
    (1 - alpha)-quantile, and the loss bounds the positives missed below it:

    .. math::
        L(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X^-), 1 - \alpha) - f(x_i)\big).

    It is :func:`rate_constrained_loss` with ``subset="negatives"`` and
    ``penalize="positives"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import recall_at_fpr_loss
    >>> scores = torch.tensor([1.0, 0.0, 2.0, -1.0]); labels = torch.tensor([1, 1, 0, 0])
    >>> # fpr 1/2: level 1/2 of the negatives {2, -1}, k = 1, threshold -1; positives pay softplus(-2) + softplus(-1)
    >>> recall_at_fpr_loss(scores, labels, fpr=0.5, quantile="point", reduction="sum")
    tensor(0.4402)
    """
    _check_named_target(fpr, "fpr", kwargs)
    return rate_constrained_loss(scores, labels, rate=fpr, subset="negatives", penalize="positives",
                                 threshold_scores=threshold_scores, **kwargs)


DEFAULT_PR_AUC_RECALLS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def pr_auc_loss(scores, labels, recalls: Sequence[float] = DEFAULT_PR_AUC_RECALLS, *, threshold_scores=None,
                **kwargs):
    r"""Area under the precision-recall curve as a Riemann sum of precision-at-recall losses.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    recalls : sequence of float in (0, 1), default=(0.1, 0.2, ..., 0.9)
        The grid ``R`` of recalls (an equal-width Riemann sum by default).
    threshold_scores : Tensor of shape (M,), optional
        Scores of positives to estimate the thresholds from, as in
        :func:`precision_at_recall_loss`.
    **kwargs
        Any other keyword argument of :func:`rate_constrained_loss` (``quantile``,
        ``bandwidth``, ``surrogate``, ``reduction``, ``groups``, ``weight``,
        ``return_threshold``, ...).

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns. With ``reduction="none"`` the per-row
        losses are averaged over the grid, shape (N,); with ``return_threshold=True`` the
        threshold has shape (len(recalls),), and (len(recalls), G) with ``groups``.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ````recalls```` when it is empty or a
        recall is not strictly between 0 and 1.

    See Also
    --------
    precision_at_recall_loss : One term of the sum.
    quantile_surrogate.modules.PRAUCLoss : The module form.

    Notes
    -----
    End of section 3.1 of the paper, after Eban et al. (2017):

    .. math::
        L(f) = \frac{1}{|R|} \sum_{r \in R} L_{P@R}(f; r),

    each term :func:`precision_at_recall_loss` (eq. (7)) at recall ``r`` with the same
    keyword arguments; all of them share one selection or sort of the positives' scores.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import pr_auc_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 1, 0])
    >>> # thresholds 0 (recall 2/3) and 1 (recall 1/3): (softplus(0.5) + softplus(-0.5)) / 2
    >>> pr_auc_loss(scores, labels, recalls=(2 / 3, 1 / 3), quantile="point")
    tensor(0.7241)
    """
    _check_named_target(recalls, "recalls", kwargs)
    return rate_constrained_loss(scores, labels, rate=tuple(recalls), subset="positives", penalize="negatives",
                                 threshold_scores=threshold_scores, **kwargs)
