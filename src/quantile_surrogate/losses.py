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
a fixed subset:

==============================  =================  =========  ==================
loss                            subset A           penalised  paper
==============================  =================  =========  ==================
``precision_at_recall_loss``    positives          negatives  eq. (7)
``precision_at_rate_loss`` fp   every row          negatives  eq. (9)
``precision_at_rate_loss`` tp   every row          positives  eq. (10)
``recall_at_fpr_loss``          negatives          positives  Neyman-Pearson
``pr_auc_loss``                 positives          negatives  eq. (7), Riemann sum
==============================  =================  =========  ==================
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from ._validation import (
    check_bandwidth,
    check_labels,
    check_mask,
    check_option,
    check_reduction,
    check_scores,
    check_target,
)
from .quantiles import resolve_quantile

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


SURROGATES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "logistic": _logistic,
    "hinge": _hinge,
}
"""Upper bounds ``l(z) >= c 1[z > 0]`` of the step: logistic ``log(1 + e^z)``, hinge ``max(0, 1 + z)``."""

PENALIZE = ("negatives", "positives")
EMPTY_SUBSET = ("zero", "raise")
EMPTY_SUBSET_MESSAGE = (
    "The subset that sets the threshold is empty in this batch (no row of `subset` is True "
    "and no `threshold_scores` were given). Pass `threshold_scores=` from a separate "
    "minibatch of the subset (Algorithm 1, step 2), or use larger batches."
)


class QuantileLossOutput(NamedTuple):
    """A loss together with the threshold it used (returned when ``return_threshold=True``)."""

    loss: torch.Tensor
    """The reduced (or unreduced) loss."""
    threshold: torch.Tensor
    """The quantile estimate used as the threshold, a 0-d tensor (NaN if the subset was empty)."""


def rate_constrained_loss(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    rate: float,
    subset: torch.Tensor | None = None,
    penalize: str = "negatives",
    threshold_scores: torch.Tensor | None = None,
    groups: torch.Tensor | None = None,
    threshold_groups: torch.Tensor | None = None,
    quantile: str | Callable = "kernel",
    bandwidth: float = 0.05,
    surrogate: str = "logistic",
    reduction: str = "mean",
    empty_subset: str = "zero",
    return_threshold: bool = False,
    validate_args: bool = True,
):
    r"""Loss for any rate constraint "predicted positive rate on A >= rate" (eq. (2), section 3).

    .. math::
        \theta = \hat q(f(A), 1 - \text{rate}), \qquad
        \ell_i = \begin{cases}
            l(f(x_i) - \theta) & y_i = 0, \text{ if penalize = "negatives"} \\
            l(\theta - f(x_i)) & y_i = 1, \text{ if penalize = "positives"} \\
            0 & \text{otherwise}
        \end{cases}

    Penalising negatives above the threshold bounds the false positives (eqs. (7), (9));
    penalising positives below it bounds the false negatives (eq. (10)). The threshold is
    part of the graph, so gradients flow through the quantile estimate to every score that
    the estimator weights.

    Parameters
    ----------
    scores : Tensor of shape (N,)
        Raw scores ``f(x)`` (never passed through a sigmoid).
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} or bool.
    rate : float in (0, 1)
        The constraint level ``c``: the fraction of ``A`` that must score above the threshold.
    subset : bool Tensor of shape (N,), optional
        The rows of ``A`` in this batch. Ignored when ``threshold_scores`` is given;
        otherwise required.
    penalize : {"negatives", "positives"}
    threshold_scores : Tensor of shape (M,), optional
        Scores of a separate minibatch drawn from ``A`` (Algorithm 1, step 2); the threshold
        is estimated from them instead of from ``scores[subset]``.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1. Each group gets its own threshold ``q(f(A & G_g), 1 - rate)``
        and each row is compared with its group's threshold, so the constraint holds in
        every group: with ``subset`` every row it is the same predicted positive rate in
        every group (demographic parity); with the positives, recall >= rate in every
        group (equal opportunity). The returned threshold then has shape (G,); a group
        with no row of ``A`` gets a NaN threshold and its rows no loss.
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    quantile : str or callable
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``. Default ``"kernel"`` (Gaussian), as in the paper.
    bandwidth : float > 0
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}
    reduction : {"mean", "sum", "none"}
        ``"none"`` returns the per-row loss of shape (N,), 0 on rows that are not penalised;
        ``"mean"`` divides the sum by the number of penalised rows (as ``ignore_index`` does
        in ``torch.nn.functional.cross_entropy``), ``"sum"`` does not divide.
    empty_subset : {"zero", "raise"}
        What to do when ``A`` has no row in this batch: ``"zero"`` returns a zero loss that is
        still connected to the graph (its gradient is zero, so an optimiser step only applies
        momentum and weight decay) and a NaN threshold; ``"raise"`` raises ``ValueError``.
    return_threshold : bool
        Return :class:`QuantileLossOutput` ``(loss, threshold)`` instead of the loss alone.
    validate_args : bool
        Check the inputs (a device sync for the finiteness check). The training loop turns
        this off after checking once.

    Returns
    -------
    Tensor, of shape () or (N,) for ``reduction="none"``; or :class:`QuantileLossOutput`.

    Notes
    -----
    If no row is penalised (a batch without negatives, say), the loss is 0 and so is its
    gradient. The "mean" divisor counts penalised rows in this batch, so the loss scale
    does not depend on the class balance of the batch.

    Examples
    --------
    Scores 0 and 1 for the positives, point threshold at level 0.5 is their 1st order
    statistic, 0; the one negative at 0 costs ``log 2``:

    >>> scores = torch.tensor([0.0, 1.0, 0.0]); labels = torch.tensor([1, 1, 0])
    >>> rate_constrained_loss(scores, labels, rate=0.5, subset=labels == 1, quantile="point")
    tensor(0.6931)
    """
    if validate_args:
        check_scores(scores)
        positive = check_labels(labels, scores.numel())
        rate = check_target(rate, "rate")
        check_option(penalize, PENALIZE, "penalize")
        check_option(surrogate, SURROGATES, "surrogate")
        check_option(empty_subset, EMPTY_SUBSET, "empty_subset")
        check_reduction(reduction)
        bandwidth = check_bandwidth(bandwidth)
        if threshold_scores is not None:
            if threshold_scores.numel() > 0:
                check_scores(threshold_scores, "threshold_scores")
        elif subset is None:
            raise ValueError("Pass `subset=` (a bool row mask of A) or `threshold_scores=`.")
        else:
            check_mask(subset, scores.numel(), "subset")
        if groups is not None:
            _check_groups(groups, scores.numel(), "groups")
            if threshold_scores is not None:
                if threshold_groups is None:
                    raise ValueError("With `groups=` and `threshold_scores=`, pass `threshold_groups=` too.")
                _check_groups(threshold_groups, threshold_scores.numel(), "threshold_groups")
    else:
        positive = labels if labels.dtype == torch.bool else labels == 1

    penalized = ~positive if penalize == "negatives" else positive
    estimate = resolve_quantile(quantile, bandwidth)
    if groups is None:
        reference = threshold_scores if threshold_scores is not None else scores[subset]
        if reference.numel() == 0 and empty_subset == "raise":
            raise ValueError(EMPTY_SUBSET_MESSAGE)
        threshold = _estimate_or_nan(estimate, reference, 1.0 - rate, scores)
        row_threshold = threshold
        live = penalized if reference.numel() else torch.zeros_like(penalized)
    else:
        threshold, row_threshold, live = _group_thresholds(
            estimate, scores, groups, subset, threshold_scores, threshold_groups, rate, empty_subset
        )
        live = penalized & live
    margin = scores - row_threshold if penalize == "negatives" else row_threshold - scores
    # Rows whose threshold is undefined (empty subset) get 0, not NaN: where() keeps NaN out of the graph.
    per_row = torch.where(live, SURROGATES[surrogate](torch.where(live, margin, 0.0)), 0.0)
    if reduction == "none":
        loss = per_row
    elif reduction == "sum":
        loss = per_row.sum()
    else:
        loss = per_row.sum() / live.sum().clamp(min=1).to(scores.dtype)
    return QuantileLossOutput(loss, threshold) if return_threshold else loss


def _estimate_or_nan(estimate, reference, level, like):
    if reference.numel() == 0:
        return torch.full((), float("nan"), dtype=like.dtype, device=like.device)
    return estimate(reference, level)


def _group_thresholds(estimate, scores, groups, subset, threshold_scores, threshold_groups, rate, empty_subset):
    """One threshold per group code ``g``: ``q(f(A & G_g), 1 - rate)``; rows of groups with no reference row are dropped."""
    if threshold_scores is not None:
        reference, reference_groups = threshold_scores, threshold_groups
    else:
        reference, reference_groups = scores[subset], groups[subset]
    n_groups = int(max(groups.max(), reference_groups.max() if reference_groups.numel() else 0)) + 1
    thresholds = []
    for g in range(n_groups):
        members = reference[reference_groups == g]
        if members.numel() == 0 and empty_subset == "raise":
            raise ValueError(f"Group {g}: " + EMPTY_SUBSET_MESSAGE)
        thresholds.append(_estimate_or_nan(estimate, members, 1.0 - rate, scores))
    thresholds = torch.stack(thresholds)
    row_threshold = thresholds[groups]
    return thresholds, row_threshold, ~torch.isnan(row_threshold)


def _check_groups(groups, n, name):
    if not isinstance(groups, torch.Tensor) or groups.dtype in (torch.bool,) or groups.is_floating_point():
        raise TypeError(f"`{name}` must be an integer tensor of group codes 0..G-1; encode labels with "
                        "numpy.unique(..., return_inverse=True).")
    if groups.ndim != 1 or groups.numel() != n:
        raise ValueError(f"`{name}` has shape {tuple(groups.shape)}; it needs one group code per row ({n}).")
    if groups.numel() and int(groups.min()) < 0:
        raise ValueError(f"`{name}` must hold codes >= 0; got {int(groups.min())}.")


def precision_at_recall_loss(scores, labels, recall: float, *, threshold_scores=None, **kwargs):
    r"""Precision at a fixed recall (eq. (7), ``\label{eq:unconstrained_fp_at_r}``).

    .. math::
        L(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - \text{recall})\big)

    Recall >= r on the positives fixes ``theta`` at their (1 - r)-quantile; the loss bounds
    the false positives at that threshold, and fewer false positives at a fixed number of
    true positives is higher precision. It is :func:`rate_constrained_loss` with
    ``subset=labels == 1`` and ``penalize="negatives"``; ``threshold_scores`` are then
    scores of positives. Other keyword arguments are those of :func:`rate_constrained_loss`.

    Examples
    --------
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 1, 0])
    >>> # recall 2/3: threshold = q1 of {0, 1, 2} at level 1/3 = 0; negative at 0.5 costs softplus(0.5)
    >>> precision_at_recall_loss(scores, labels, recall=2 / 3, quantile="point")
    tensor(0.9741)
    """
    labels_bool = labels if labels.dtype == torch.bool else labels == 1
    return rate_constrained_loss(
        scores, labels, rate=recall, subset=labels_bool, penalize="negatives",
        threshold_scores=threshold_scores, **kwargs,
    )


PRECISION_FORMS = {"fp": "negatives", "tp": "positives"}


def precision_at_rate_loss(scores, labels, rate: float, *, form: str = "fp", threshold_scores=None, **kwargs):
    r"""Precision at a predicted positive rate, i.e. Precision@K with ``rate = K / N``.

    FP form (eq. (9), ``\label{eq:unconstrained_fp_at_ppr}``) and TP form (eq. (10),
    ``\label{eq:unconstrained_tp_at_ppr}``):

    .. math::
        L_{fp}(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X), 1 - \tau)\big), \qquad
        L_{tp}(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X), 1 - \tau) - f(x_i)\big).

    With ``tau N`` predicted positives, ``TP + FP = tau N``, so fewer false positives and more
    true positives are the same goal; the two forms bound it from either side. The subset is
    every row; ``threshold_scores`` are scores of any rows.
    """
    check_option(form, PRECISION_FORMS, "form")
    groups = kwargs.get("groups")
    if threshold_scores is None:
        # A is every row: the scores themselves set the threshold (no all-True mask to index with).
        threshold_scores = scores
        if groups is not None:
            kwargs["threshold_groups"] = groups
    return rate_constrained_loss(
        scores, labels, rate=rate, penalize=PRECISION_FORMS[form], threshold_scores=threshold_scores, **kwargs,
    )


def recall_at_fpr_loss(scores, labels, fpr: float, *, threshold_scores=None, **kwargs):
    r"""Recall at a fixed false positive rate (the Neyman-Pearson case).

    .. math::
        L(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X^-), 1 - \text{fpr}) - f(x_i)\big)

    FPR <= alpha on the negatives fixes ``theta`` at their (1 - alpha)-quantile (section 3,
    the "<=" form of Proposition 1); the loss bounds the positives missed below it. It is
    :func:`rate_constrained_loss` with ``subset=labels == 0`` and ``penalize="positives"``;
    ``threshold_scores`` are then scores of negatives.
    """
    labels_bool = labels if labels.dtype == torch.bool else labels == 1
    return rate_constrained_loss(
        scores, labels, rate=fpr, subset=~labels_bool, penalize="positives",
        threshold_scores=threshold_scores, **kwargs,
    )


DEFAULT_PR_AUC_RECALLS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def pr_auc_loss(
    scores,
    labels,
    recalls: Sequence[float] = DEFAULT_PR_AUC_RECALLS,
    *,
    threshold_scores=None,
    reduction: str = "mean",
    return_threshold: bool = False,
    **kwargs,
):
    r"""Area under the precision-recall curve as a Riemann sum of precision-at-recall losses.

    .. math::
        L(f) = \frac{1}{|R|} \sum_{r \in R} L_{P@R}(f; r)

    (end of section 3.1, after Eban et al. 2017). ``recalls`` is the grid ``R`` (default
    0.1, 0.2, ..., 0.9, an equal-width Riemann sum); each term is
    :func:`precision_at_recall_loss` with the same keyword arguments. With
    ``reduction="none"`` the per-row losses are averaged over the grid, shape (N,). With
    ``return_threshold=True`` the threshold is a tensor of shape (len(recalls),).
    """
    if len(recalls) == 0:
        raise ValueError("`recalls` is empty; pass a grid such as (0.1, 0.2, ..., 0.9).")
    outputs = [
        precision_at_recall_loss(
            scores, labels, recall=r, threshold_scores=threshold_scores,
            reduction=reduction, return_threshold=True, **kwargs,
        )
        for r in recalls
    ]
    loss = torch.stack([o.loss for o in outputs]).mean(dim=0)
    if return_threshold:
        return QuantileLossOutput(loss, torch.stack([o.threshold for o in outputs]))
    return loss
