"""The steps of :func:`quantile_surrogate.losses.rate_constrained_loss`: the subset, the thresholds, the reduction.

Private; nothing here validates its input (``rate_constrained_loss`` does, once).
"""

from __future__ import annotations

import math
from numbers import Real

import torch

from .quantiles import quantile_estimates

EMPTY_SUBSET_MESSAGE = (
    "The subset that sets the threshold is empty in this batch (no row of `subset` is True "
    "and no `threshold_scores` were given). Pass `threshold_scores=` from a separate "
    "minibatch of the subset (Algorithm 1, step 2), or use larger batches."
)


def is_scalar(rate) -> bool:
    """One rate (a number or a 0-d tensor), as opposed to a sequence of them."""
    return isinstance(rate, Real) or (isinstance(rate, torch.Tensor) and rate.ndim == 0)


def subset_rows(subset, positive):
    """The bool mask of ``A`` (None for every row) from a mask or one of "positives", "negatives", "all"."""
    if not isinstance(subset, str):
        return subset
    if subset == "all":
        return None
    return positive if subset == "positives" else ~positive


def thresholds(scores, rates, subset, threshold_scores, settings, weight=None, threshold_weight=None):
    """``(theta, row_theta, live)`` for one threshold per rate, ``theta_l = q(f(A), 1 - rate_l)``.

    ``theta`` has shape (L,) (NaN if ``A`` is empty), ``row_theta`` is ``theta`` with NaN kept
    out of the margins and their gradient, and ``live`` says whether ``A`` has a row (a bool,
    or a 0-d bool tensor that needs no host sync). With ``weight`` (or ``threshold_weight``
    for ``threshold_scores``) the threshold is the weighted quantile of
    :mod:`quantile_surrogate._weighted`, and ``A`` is live when it holds positive weight.
    """
    quantile, bandwidth, empty_subset = settings
    levels = [1.0 - r for r in rates]
    if threshold_scores is not None:
        reference, live = threshold_scores, threshold_scores.numel() > 0
        weight = threshold_weight
        if weight is not None:
            live = bool((weight > 0).any())
    else:
        reference, live = scores, True if subset is None else subset.any()
        if weight is not None:
            live = (weight > 0).any() if subset is None else (subset & (weight > 0)).any()
    if empty_subset == "raise" and not bool(live):
        raise ValueError(EMPTY_SUBSET_MESSAGE)
    if live is False:
        threshold = scores.new_full((len(levels),), math.nan)
        return threshold, torch.zeros_like(threshold), False
    if weight is not None:
        threshold = quantile_estimates(quantile, reference, levels, bandwidth=bandwidth,
                                       subset=None if threshold_scores is not None else subset, weight=weight)
    else:
        threshold = quantile_estimates(quantile, reference, levels, bandwidth=bandwidth, subset=subset)
    # An empty subset gives a NaN threshold; where() keeps NaN out of the margins and their gradient.
    row_threshold = threshold if live is True else torch.where(live, threshold, 0.0)
    return threshold, row_threshold, live


def group_thresholds(scores, groups, rates, subset, threshold_scores, threshold_groups, settings, weight=None,
                     threshold_weight=None):
    """Per group ``g``: ``theta_gl = q(f(A & G_g), 1 - rate_l)``, shape (G, L).

    Returns ``(theta, row_theta, live)`` as :func:`thresholds` does, with ``row_theta`` of shape
    (N, L) (each row's group's thresholds) and ``live`` False on the rows of a group without A
    (or, with weights, without weight in A).
    """
    quantile, bandwidth, empty_subset = settings
    reference_weight = threshold_weight if threshold_scores is not None else weight
    if threshold_scores is not None:
        reference, reference_groups = threshold_scores, threshold_groups
    elif subset is None:
        reference, reference_groups = scores, groups
    else:
        reference, reference_groups = scores[subset], groups[subset]
        reference_weight = None if weight is None else weight[subset]
    if reference_weight is not None:  # rows without weight are absent from A
        present = reference_weight > 0
        reference, reference_groups, reference_weight = (
            reference[present], reference_groups[present], reference_weight[present])
    n_groups = int(max(groups.max(), reference_groups.max() if reference_groups.numel() else 0)) + 1
    levels = [1.0 - r for r in rates]
    thresholds = []
    for g in range(n_groups):
        members = reference[reference_groups == g]
        if members.numel() == 0 and empty_subset == "raise":
            raise ValueError(f"Group {g}: " + EMPTY_SUBSET_MESSAGE)
        member_weight = None if reference_weight is None else reference_weight[reference_groups == g]
        thresholds.append(quantile_estimates(quantile, members, levels, bandwidth=bandwidth, weight=member_weight)
                          if members.numel() else scores.new_full((len(levels),), math.nan))
    thresholds = torch.stack(thresholds)
    row_threshold = thresholds[groups]
    defined = ~torch.isnan(row_threshold[:, 0])
    row_threshold = torch.where(torch.isnan(row_threshold), 0.0, row_threshold)
    return thresholds, row_threshold, defined


def penalty(scores, row_threshold, live, penalize: str, surrogate, reduction: str, row_weight=None) -> torch.Tensor:
    """``sum_l sum_i live_i l(+-(s_i - theta_il)) / L``, reduced; ``row_threshold`` has a trailing level axis.

    One level at a time, with 1-D operations: nine levels cost nine times one level, where a
    (N, L) matrix of margins would cost twice that (its reductions and their backward are
    strided). A dot product with the 0/1 row weights masks and sums in one pass (its backward
    is one multiplication); sums and counts are taken in at least float32. ``row_weight``
    multiplies the 0/1 weights: the sum is ``sum_i w_i live_i l(...)`` and "mean" divides by
    ``sum_i w_i live_i``, so an integer weight counts a row that many times.
    """
    dtype = scores.dtype
    wide = torch.promote_types(dtype, torch.float32)
    if (row_weight is None and reduction != "none" and row_threshold.dim() == 1 and row_threshold.numel() > 1
            and scores.device.type == "cpu" and not torch.compiler.is_compiling()):
        return _penalty_of_rows(scores, row_threshold, live, penalize, surrogate, reduction, wide)
    weight = live.to(wide)
    if row_weight is not None:
        weight = weight * row_weight.to(wide)
    columns = row_threshold.unbind(-1)
    terms = []
    for threshold in columns:
        # s + (-theta), not s - theta: the backward of a subtraction negates the whole row-long
        # gradient for theta; negating theta first negates one value per row threshold instead.
        per_row = surrogate(scores + threshold.neg() if penalize == "negatives" else threshold - scores)
        terms.append(per_row if reduction == "none" else torch.dot(per_row.to(wide), weight))
    total = terms[0] if len(terms) == 1 else torch.stack(terms).mean(dim=0)
    if reduction == "none":
        return (total * weight).to(dtype)
    if reduction == "mean":
        if row_weight is None:
            total = total / weight.sum().clamp(min=1.0)  # exact up to 2**24 rows in float32, and 1e-7 off beyond
        else:  # fractional weights may sum below 1; an all-zero sum leaves the zero total alone
            mass = weight.sum()
            total = total / torch.where(mass > 0, mass, 1.0)
    return total.to(dtype)


def _penalty_of_rows(scores, row_threshold, live, penalize, surrogate, reduction, wide) -> torch.Tensor:
    """:func:`penalty` for several levels sharing one threshold per level: the live rows gathered once.

    The masked dot product costs a row-long multiplication per level in its backward; with
    ``L`` levels (``pr_auc_loss``: 9) one gather of the live rows, whose backward is one
    scatter, and a plain sum per level cost less. The same sum, in another order. Only on the
    CPU: finding the live rows (``nonzero``) waits for a GPU.
    """
    rows = scores.index_select(0, torch.nonzero(live).reshape(-1))
    terms = []
    for threshold in row_threshold.unbind(-1):
        per_row = surrogate(rows + threshold.neg() if penalize == "negatives" else threshold - rows)
        terms.append(per_row.to(wide).sum())
    total = torch.stack(terms).mean(dim=0)
    if reduction == "mean":
        total = total / max(rows.numel(), 1)
    return total.to(scores.dtype)
