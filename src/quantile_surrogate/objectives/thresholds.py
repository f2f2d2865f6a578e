r"""Exact decision thresholds on given scores, and the tie policy.

The exact (non-smoothed) threshold of Proposition 1, :math:`\hat\theta = q(f(A), 1 - c)`, at which
``score > theta`` meets a rate constraint on the rows it is computed on, ties included: a floor
(a recall) is never missed, a ceiling (a predicted positive rate, a false positive rate) is never
exceeded, and :class:`TiedScoresWarning` says which rate was achieved where tied scores make the
exact count of rows of ``A`` impossible. The objectives (the subset ``A``, the bound, the rounding
of ``c |A|``) come from :data:`~quantile_surrogate.objectives.OBJECTIVES`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._utils.checks import LENGTH_MISMATCH_MESSAGE, check_binary, check_sample_weight, check_target
from .._utils.counts import count
from .._utils.group_checks import check_group_array
from ._registry import get_objective

# allowed_count, boundary_ties and the message constants stay importable from here for the
# estimators, but they are plumbing, not the public surface.
__all__ = [
    "constraint_threshold",
    "TiedScoresWarning",
    "group_constraint_thresholds",
]


TIED_SCORES_MESSAGE = (
    "Tied scores: {above} of the {size} rows of A ({subset}) score above the threshold, a rate of {achieved:.4g}, "
    "where target={target:g} asks for {bound} {wanted}; the rows tied at the threshold cannot be split by a "
    "threshold. {policy}"
)
EMPTY_CONSTRAINT_MESSAGE = "The subset that sets the threshold for {objective!r} has no rows{weighted}."
GROUP_ERROR_MESSAGE = "Group {name!r}: {error} Each group needs a row of A ({subset})."
TIE_POLICY = {
    "at_least": "The floor is kept (never fewer); more distinct scores (more features) reduce the overshoot.",
    "at_most": "The ceiling is kept (never more); more distinct scores (more features) reduce the shortfall.",
}


class TiedScoresWarning(UserWarning):
    """The exact rate a constraint asks for is impossible on these rows because scores tie at the threshold.

    Issued by :func:`constraint_threshold`, with the rate achieved. A floor (recall) is kept
    by taking every tied row, a ceiling (a rate, an FPR) by taking none.

    Examples
    --------
    >>> import warnings
    >>> from quantile_surrogate.objectives.thresholds import TiedScoresWarning, constraint_threshold
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     theta = constraint_threshold([1.0, 1.0, 1.0, 0.0], [1, 1, 1, 0],
    ...                                  objective="precision_at_recall", target=0.5)
    >>> theta, caught[0].category is TiedScoresWarning  # recall 3/3 where 2/3 was asked
    (0.5, True)
    """


def allowed_count(objective, size: int, target: float) -> int:
    """The number of rows of ``A`` (of ``size``) the constraint asks for above the threshold (internal).

    ``ceil(c |A|)`` (at least 1) for a floor such as recall and for a capacity such as the
    predicted positive rate (``K = ceil(c n)``, as :func:`~quantile_surrogate.metrics.count_at_rate`);
    ``floor(c |A|)`` for a false positive rate that must not exceed ``c``. ``c |A|`` is rounded
    to 6 decimals first so that float noise (0.07 * 100 = 7.000000000000001) cannot move it: the
    package's one count rule, :func:`quantile_surrogate._utils.counts.count`. With frequency weights ``size`` is the weight of ``A`` (a float), and so is the count.

    Parameters
    ----------
    objective : str or Objective
    size : int or float
        ``|A|``, or its weight.
    target : float

    Returns
    -------
    int or float
        At most ``size``.
    """
    spec = get_objective(objective)
    return count(target, size, spec.rounding, at_least_one=spec.rounding == "ceil")


def constraint_threshold(scores, labels, *, objective: str, target: float, sample_weight=None) -> float:
    r"""A threshold ``theta`` at which ``score > theta`` meets the constraint on these rows, ties included.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Scores of the rows (training or held-out).
    labels : array-like of shape (n,)
        Binary labels, 1 is positive.
    objective : str or Objective
        A key of :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float
        The recall, predicted positive rate or false positive rate.
    sample_weight : array-like of shape (n,), optional
        Frequency weights ``>= 0``: counts become sums of weights, and rows of weight 0
        are absent; with integer weights it is the threshold of the rows repeated.

    Returns
    -------
    float
        Predict positive iff ``score > theta``.

    Raises
    ------
    ValueError
        If no row of ``A`` (the subset that sets the threshold) is present, or holds weight;
        for a ``target`` outside (0, 1), labels that are not binary or not one per score, or a
        bad ``sample_weight``.
    TypeError
        For a ``target`` that is not a number.

    Warns
    -----
    TiedScoresWarning
        Where ties make the asked count of rows of ``A`` above the threshold impossible.

    See Also
    --------
    group_constraint_thresholds : One threshold per group.
    quantile_surrogate.objectives.guarantees.recall_threshold : A threshold that holds on new data.

    Notes
    -----
    The exact (non-smoothed) threshold of Proposition 1, :math:`\hat\theta = q(f(A), 1 - c)`.
    With :math:`k` rows of ``A`` asked for above it (``ceil(c |A|)`` or ``floor(c |A|)``, by
    the objective's ``rounding``) and :math:`s_{[j]}` the j-th largest score of ``A``, the
    tie policy is that a floor is never missed and a ceiling never exceeded:

    .. math::
        \theta = \begin{cases}
            \tfrac12\big(s_{[k]} + \max\{s < s_{[k]}\}\big) & \text{bound = "at\_least" (recall)} \\
            \tfrac12\big(s_{[k+1]} + \min\{s > s_{[k+1]}\}\big) & \text{bound = "at\_most" (a rate, an FPR)}
        \end{cases}

    where the max and min run over every row's score. So at least ``k`` rows of ``A`` score
    above a floor's threshold (all ties of :math:`s_{[k]}` included), selecting the rows that
    the point estimate of section 4 selects, and at most ``k`` above a ceiling's (the ties of
    :math:`s_{[k+1]}` excluded). The midpoint to the nearest other score keeps rounding noise
    in recomputed scores from moving a row across the threshold. A ceiling that allows every
    row of ``A`` gives ``min(scores) - 1``.

    With ``sample_weight``, ``k`` is :func:`allowed_count` of the mass ``W_A`` of ``A``, and
    :math:`s_{[k]}` the score at which the weight of ``A`` from the top first reaches ``k``
    (:math:`s_{[k+1]}`: first exceeds it).

    Examples
    --------
    >>> from quantile_surrogate.objectives.thresholds import constraint_threshold
    >>> y, s = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]
    >>> round(constraint_threshold(s, y, objective="precision_at_recall", target=0.5), 3)  # 1 of 2 positives
    0.85
    >>> round(constraint_threshold(s, y, objective="precision_at_rate", target=0.5), 3)  # 2 of 4 rows
    0.75
    """
    spec = get_objective(objective)
    target = check_target(target, "target")
    scores, positive = _scores_and_positives(scores, labels)
    weight = None  # unweighted: every row's weight is 1
    if sample_weight is not None:  # rows of weight 0 are absent
        weight = check_sample_weight(sample_weight, scores.shape[0])
        keep = weight > 0
        scores, weight, positive = scores[keep], weight[keep], positive[keep]
    in_subset = spec.subset_mask(positive)
    subset = scores[in_subset]
    if subset.size == 0:
        raise ValueError(EMPTY_CONSTRAINT_MESSAGE.format(
            objective=objective, weighted="" if sample_weight is None else " of positive `sample_weight`"))
    # Unweighted, the cumulative weights are 1, 2, ... (exact in float64) in any order, and with finite scores the
    # boundary is an order statistic: one selection (O(n)) gives the value the sort gives (NaN sorts differently).
    select = weight is None and bool(np.isfinite(subset).all())
    if not select:
        order = np.argsort(-subset, kind="stable")
        subset_scores = subset[order]
    cumulative = np.arange(1.0, subset.size + 1.0) if weight is None else np.cumsum(weight[in_subset][order])
    total = float(cumulative[-1])
    k = allowed_count(spec, total, target)
    slack = 1e-9 * total  # cumulative weights are sums of floats
    if spec.bound == "at_most":
        index = int(np.searchsorted(cumulative, k + slack, side="right"))  # the first score whose mass exceeds k
        if index >= subset.size:
            return float(np.min(scores) - 1.0)
    else:
        index = min(int(np.searchsorted(cumulative, k - slack)), subset.size - 1)
    # The (index + 1)-th largest score of A.
    boundary = np.partition(subset, subset.size - 1 - index)[subset.size - 1 - index] if select else \
        subset_scores[index]
    if spec.bound == "at_most":
        higher = scores[scores > boundary]
        theta = float((boundary + higher.min()) / 2 if higher.size else boundary + 1.0)
    else:
        lower = scores[scores < boundary]
        theta = float((boundary + lower.max()) / 2 if lower.size else boundary - 1.0)
    above = float(np.count_nonzero(subset > theta) if weight is None else weight[in_subset][subset > theta].sum())
    # Only rows tied at the boundary are the warning's subject: a single row's weight cannot be split either.
    if abs(above - k) > slack and int(np.count_nonzero(subset == boundary)) > 1:
        warnings.warn(TIED_SCORES_MESSAGE.format(
            above=f"{above:g}", size=f"{total:g}", subset=spec.subset, achieved=above / total, target=target,
            bound="at least" if spec.bound == "at_least" else "at most", wanted=f"{k:g}",
            policy=TIE_POLICY[spec.bound]), TiedScoresWarning, stacklevel=2)
    return theta


def _scores_and_positives(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, positive)``: float64 scores and the bool mask of binary ``labels``, one per score."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(check_binary(labels, "labels"))
    if positive.shape != scores.shape:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name="labels", got=positive.size, expected=scores.size))
    return scores, positive


def boundary_ties(scores, labels, *, objective: str, target: float) -> tuple[float, float]:
    """``(tie_score, fraction)``: the scores tied at the constraint's boundary, and the share of them it asks for.

    The boundary is the ``k``-th largest score of ``A`` for a floor and the ``(k + 1)``-th for a
    ceiling (``k`` = :func:`allowed_count`). With ``a`` rows of ``A`` strictly above it and ``t``
    tied at it, ``fraction = (k - a) / t``: predicting each tied row positive with that
    probability meets the count ``k`` in expectation, where :func:`constraint_threshold` (which
    takes all tied rows for a floor and none for a ceiling) cannot. ``(nan, 0.0)`` when no row
    of ``A`` is at the boundary (a ceiling that allows every row). Internal: the estimators'
    randomised tie-break uses it.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
    objective : str or Objective
    target : float

    Returns
    -------
    tie_score : float
    fraction : float in [0, 1]

    Examples
    --------
    >>> import numpy as np
    >>> boundary_ties(np.array([3.0, 2.0, 2.0, 2.0, 1.0]), np.ones(5), objective="precision_at_rate", target=0.4)
    (2.0, 0.3333333333333333)
    """
    spec = get_objective(objective)
    subset_scores = np.sort(np.asarray(scores, dtype=np.float64)[spec.subset_mask(np.asarray(labels) == 1)])[::-1]
    k = allowed_count(spec, subset_scores.size, target)
    index = k - 1 if spec.bound == "at_least" else k
    if index >= subset_scores.size:
        return math.nan, 0.0
    boundary = subset_scores[index]
    above = int(np.count_nonzero(subset_scores > boundary))
    tied = int(np.count_nonzero(subset_scores == boundary))
    return float(boundary), min(max((k - above) / tied, 0.0), 1.0)


def group_constraint_thresholds(scores, labels, groups, *, objective: str, target: float,
                                n_groups: int | None = None, names=None, sample_weight=None) -> np.ndarray:
    r""":func:`constraint_threshold` on each group's rows: one threshold ``theta_g`` per group.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
        As in :func:`constraint_threshold`.
    groups : array-like of int of shape (n,)
        Group codes ``0..G-1``, one per row.
    objective : str or Objective
        A key of :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float
        The recall, predicted positive rate or false positive rate, in every group.
    n_groups : int, optional
        ``G``; by default ``max(groups) + 1``.
    names : sequence, optional
        The group labels, indexed by code, for error messages.
    sample_weight : array-like of shape (n,), optional
        Frequency weights, each group's threshold weighted as in :func:`constraint_threshold`.

    Returns
    -------
    ndarray of shape (n_groups,)
        ``theta_g``; NaN for a code with no row at all.

    Raises
    ------
    ValueError
        If a group has rows but none of ``A``; the message names it (``names[g]`` if given,
        else its code). For ``groups`` not one per score, negative or ``>= n_groups``, and
        the arguments :func:`constraint_threshold` refuses.
    TypeError
        For ``groups`` that are not integer codes (strings, floats: encode them first).

    See Also
    --------
    quantile_surrogate.objectives.objective_metric : The metric at these thresholds.

    Notes
    -----
    Each group's threshold meets the constraint exactly on that group's rows:

    .. math::
        \theta_g = \text{constraint\_threshold}(f(X \cap G_g)), \qquad g = 0, \dots, G - 1,

    so recall >= target among its positives (equal opportunity), the same predicted positive
    rate ``ceil(target n_g) / n_g`` (demographic parity), or FPR <= target among its negatives.

    Examples
    --------
    >>> from quantile_surrogate.objectives.thresholds import group_constraint_thresholds
    >>> thetas = group_constraint_thresholds([0.9, 0.8, 0.7, 0.1], [1, 0, 1, 0], [0, 0, 1, 1],
    ...                                      objective="precision_at_rate", target=0.5)
    >>> [round(float(t), 3) for t in thetas]  # the top row of each group
    [0.85, 0.4]
    """
    target = check_target(target, "target")
    scores, labels = _scores_and_positives(scores, labels)
    groups = check_group_array(groups, scores.shape[0], "groups", n_groups)
    n_groups = int(groups.max()) + 1 if n_groups is None else int(n_groups)
    thresholds = np.full(n_groups, np.nan)
    for g in range(n_groups):
        rows = groups == g
        if not rows.any():
            continue
        try:
            extra = {} if sample_weight is None else {"sample_weight": np.asarray(sample_weight)[rows]}
            thresholds[g] = constraint_threshold(scores[rows], labels[rows], objective=objective, target=target,
                                                 **extra)
        except ValueError as error:
            name = g if names is None else names[g]
            raise ValueError(GROUP_ERROR_MESSAGE.format(name=name, error=error,
                                                        subset=get_objective(objective).subset)) from error
    return thresholds
