"""The machinery of :func:`quantile_surrogate.losses.rate_constrained_loss`: checks and steps.

The argument checks of the losses and their modules (:func:`check_loss_settings`,
``_check_arguments``) and the steps of one call: the subset, the
thresholds, the reduction. Private; the steps validate nothing (``rate_constrained_loss``
checks its arguments once, with ``_check_arguments``).
"""

from __future__ import annotations

import functools
import math
from numbers import Real
import torch

from .._utils.checks import (
    check_bandwidth,
    check_bool,
    check_groups,
    check_mask,
    check_option,
    check_reduction,
    check_scores,
    check_scores_and_targets,
    check_target,
    check_targets,
    check_weight_tensor,
)
from ..quantiles import ESTIMATOR_TYPE_MESSAGE, QUANTILE_ESTIMATORS, WEIGHTED_CALLABLE_MESSAGE, quantile_estimates
from .surrogates import SURROGATES

EMPTY_SUBSET_MESSAGE = (
    "The subset that sets the threshold is empty in this batch (no row of `subset` is True "
    "and no `threshold_scores` were given). Pass `threshold_scores=` from a separate "
    "minibatch of the subset (Algorithm 1, step 2), or use larger batches."
)

PENALIZE = ("negatives", "positives")
SUBSETS = ("positives", "negatives", "all")
EMPTY_SUBSET = ("zero", "raise")
NO_SUBSET_MESSAGE = (
    "Pass `subset=` (a bool row mask of A, or one of 'positives', 'negatives', 'all') or `threshold_scores=`."
)
THRESHOLD_GROUPS_MESSAGE = "With `groups=` and `threshold_scores=`, pass `threshold_groups=` too."
THRESHOLD_WEIGHT_MESSAGE = "`threshold_weight` weights `threshold_scores`; pass both, or use `weight=`."


def check_loss_settings(*, quantile="kernel", bandwidth=0.05, surrogate="logistic", reduction="mean",
                        empty_subset="zero") -> float:
    """Check the settings every loss shares (the loss modules call this in ``__init__``); returns the bandwidth."""
    if not callable(quantile):
        if not isinstance(quantile, str):
            raise TypeError(ESTIMATOR_TYPE_MESSAGE.format(type_name=type(quantile).__name__))
        check_option(quantile, QUANTILE_ESTIMATORS, "quantile")
    check_option(surrogate, SURROGATES, "surrogate")
    check_reduction(reduction)
    check_option(empty_subset, EMPTY_SUBSET, "empty_subset")
    return check_bandwidth(bandwidth)


def _check_arguments(scores, labels, rate, subset, penalize, threshold_scores, groups, threshold_groups,
                     settings, return_threshold):
    """Every check of :func:`rate_constrained_loss`; returns ``(targets, rate, bandwidth)``, targets as 0/1 floats."""
    targets = check_scores_and_targets(scores, labels)  # one device sync for both
    n = scores.numel()
    rate = check_target(rate, "rate") if is_scalar(rate) else check_targets(rate, "rate")
    subset_name = subset if threshold_scores is None and isinstance(subset, str) else None
    options = (penalize, subset_name, return_threshold, *settings.values())
    cacheable = type(settings["bandwidth"]) is float  # a tensor bandwidth could change in place: checked every time
    if cacheable:
        try:
            hash(options)
        except TypeError:  # an unhashable option (a list, say): checked every time, and its check names it
            cacheable = False
    bandwidth = (_checked_options if cacheable else _checked_options.__wrapped__)(*options)
    if threshold_scores is not None:
        if not isinstance(threshold_scores, torch.Tensor) or threshold_scores.numel():
            check_scores(threshold_scores, "threshold_scores")
    elif subset is None:
        raise ValueError(NO_SUBSET_MESSAGE)
    elif not isinstance(subset, str):
        check_mask(subset, n, "subset")
    if groups is not None:
        check_groups(groups, n, "groups")
        if threshold_scores is not None:
            if threshold_groups is None:
                raise ValueError(THRESHOLD_GROUPS_MESSAGE)
            check_groups(threshold_groups, threshold_scores.numel(), "threshold_groups")
    return targets, rate, bandwidth


def _check_weights(n: int, weight, threshold_scores, threshold_weight, quantile) -> None:
    """The checks of ``weight=`` and ``threshold_weight=`` of :func:`rate_constrained_loss`."""
    if weight is not None:
        check_weight_tensor(weight, n, "weight")
    if threshold_weight is not None:
        if threshold_scores is None:
            raise ValueError(THRESHOLD_WEIGHT_MESSAGE)
        check_weight_tensor(threshold_weight, threshold_scores.numel(), "threshold_weight")
    if (weight is not None or threshold_weight is not None) and callable(quantile):
        raise ValueError(WEIGHTED_CALLABLE_MESSAGE)


@functools.lru_cache(maxsize=256, typed=True)
def _checked_options(penalize, subset_name, return_threshold, quantile, bandwidth, surrogate, reduction,
                     empty_subset) -> float:
    """The checks of the options of :func:`rate_constrained_loss`, remembered: a training loop repeats them.

    Cached because after a large forward pass the interpreter's own code is out of the cache
    too, and a dozen checks that take microseconds alone then cost a noticeable share of a step.
    Exceptions are not cached (every bad call raises again).
    """
    check_option(penalize, PENALIZE, "penalize")
    check_bool(return_threshold, "return_threshold")
    if subset_name is not None:
        check_option(subset_name, SUBSETS, "subset")
    return check_loss_settings(quantile=quantile, bandwidth=bandwidth, surrogate=surrogate, reduction=reduction,
                               empty_subset=empty_subset)


def _check_named_target(value, name: str, validate_args) -> None:
    # The named losses pass their target on as `rate`; check it first under the name the user typed.
    if validate_args:
        check_targets(value, name) if name == "recalls" else check_target(value, name)


def is_scalar(rate) -> bool:
    """One rate (a number or a 0-d tensor), as opposed to a sequence of them."""
    return type(rate) is float or isinstance(rate, Real) or (isinstance(rate, torch.Tensor) and rate.ndim == 0)


def subset_rows(subset, targets):
    """The bool mask of ``A`` (None for every row) from a mask or one of "positives", "negatives", "all".

    ``targets`` are the labels as 0/1 floats (one pass each way, the mask only when it is used).
    """
    if not isinstance(subset, str):
        return subset
    if subset == "all":
        return None
    return targets != 0 if subset == "positives" else targets == 0


def penalized_rows(targets, penalize: str, live) -> torch.Tensor:
    """The 0/1 float weights of the penalised rows: the negatives or the positives, where ``live``.

    ``live`` is True, or a bool tensor (0-d, or a row mask) that is False where ``A`` is empty.
    """
    weight = torch.rsub(targets, 1.0) if penalize == "negatives" else targets
    return weight if live is True else weight * live


def thresholds(scores, rates, subset, threshold_scores, settings, weight=None, threshold_weight=None):
    """``(theta, row_theta, live)`` for one threshold per rate, ``theta_l = q(f(A), 1 - rate_l)``.

    ``theta`` has shape (L,) (NaN if ``A`` is empty), ``row_theta`` is ``theta`` with NaN kept
    out of the margins and their gradient, and ``live`` says whether ``A`` has a row (a bool,
    or a 0-d bool tensor that needs no host sync). With ``weight`` (or ``threshold_weight``
    for ``threshold_scores``) the threshold is the weighted quantile of
    :mod:`quantile_surrogate.quantiles._weighted`, and ``A`` is live when it holds positive weight.
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


def penalty(scores, row_threshold, penalized, penalize: str, surrogate, reduction: str, row_weight=None) -> torch.Tensor:
    """``sum_l sum_i p_i l(+-(s_i - theta_il)) / L``, reduced; ``row_threshold`` has a trailing level axis.

    One level at a time, with 1-D operations: nine levels cost nine times one level, where a
    (N, L) matrix of margins would cost twice that (its reductions and their backward are
    strided). A dot product with the 0/1 row weights masks and sums in one pass (its backward
    is one multiplication); sums and counts are taken in at least float32. ``penalized`` holds
    the 0/1 float weights ``p_i`` of the penalised rows (:func:`penalized_rows`). ``row_weight``
    multiplies them: the sum is ``sum_i w_i p_i l(...)`` and "mean" divides by
    ``sum_i w_i p_i``, so an integer weight counts a row that many times.
    """
    dtype = scores.dtype
    wide = penalized.dtype  # at least float32 (the targets')
    one_level = row_threshold.numel() == 1
    if (not one_level and row_weight is None and reduction != "none" and row_threshold.dim() == 1
            and scores.device.type == "cpu" and not torch.compiler.is_compiling()):
        return _penalty_of_rows(scores, row_threshold, penalized, penalize, surrogate, reduction, wide)
    weight = penalized if row_weight is None else penalized * row_weight.to(wide)
    # One threshold of shape (1,) broadcasts as it is; the hot path skips unbind and no-op casts,
    # because after a large forward pass each Python-level call costs several microseconds.
    columns = (row_threshold,) if one_level and row_threshold.dim() == 1 else row_threshold.unbind(-1)
    terms = []
    for threshold in columns:
        # s + (-theta), not s - theta: the backward of a subtraction negates the whole row-long
        # gradient for theta; negating theta first negates one value per row threshold instead.
        per_row = surrogate(scores + threshold.neg() if penalize == "negatives" else threshold - scores)
        if reduction != "none":
            per_row = torch.dot(per_row if per_row.dtype == wide else per_row.to(wide), weight)
        terms.append(per_row)
    total = terms[0] if len(terms) == 1 else torch.stack(terms).mean(dim=0)
    if reduction == "none":
        return (total * weight).to(dtype)
    if reduction == "mean":
        if row_weight is None:
            total = total / weight.sum().clamp(min=1.0)  # exact up to 2**24 rows in float32, and 1e-7 off beyond
        else:  # fractional weights may sum below 1; an all-zero sum leaves the zero total alone
            mass = weight.sum()
            total = total / torch.where(mass > 0, mass, 1.0)
    return total if total.dtype == dtype else total.to(dtype)


def _penalty_of_rows(scores, row_threshold, penalized, penalize, surrogate, reduction, wide) -> torch.Tensor:
    """:func:`penalty` for several levels sharing one threshold per level: the live rows gathered once.

    The masked dot product costs a row-long multiplication per level in its backward; with
    ``L`` levels (``pr_auc_loss``: 9) one gather of the live rows, whose backward is one
    scatter, and a plain sum per level cost less. The same sum, in another order. Only on the
    CPU: finding the live rows (``nonzero``) waits for a GPU.
    """
    rows = scores.index_select(0, torch.nonzero(penalized).reshape(-1))
    terms = []
    for threshold in row_threshold.unbind(-1):
        per_row = surrogate(rows + threshold.neg() if penalize == "negatives" else threshold - rows)
        terms.append((per_row if per_row.dtype == wide else per_row.to(wide)).sum())
    total = torch.stack(terms).mean(dim=0)
    if reduction == "mean":
        total = total / max(rows.numel(), 1)
    return total.to(scores.dtype)
