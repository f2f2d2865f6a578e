r"""Objectives for training and evaluation: the threshold subset, the loss, the exact metric.

Shared by :func:`~quantile_surrogate.training.train`, :class:`~quantile_surrogate.QuantileClassifier`
and the experiments, so that each objective's subset ``A``, its quantile loss and its exact
metric are named in one table (:data:`OBJECTIVES`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from sklearn.exceptions import UndefinedMetricWarning
from torch import nn

from . import metrics
from ._validation import check_sample_weight
from .losses import precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss

# subset_mask, allowed_count, boundary_ties and training_loss stay importable from here for the
# training loop and the estimators, but they are plumbing, not the public surface.
__all__ = [
    "Objective",
    "OBJECTIVES",
    "get_objective",
    "objective_loss",
    "objective_metric",
    "constraint_threshold",
    "TiedScoresWarning",
    "group_constraint_thresholds",
    "predict_scores",
]

SUBSETS = ("positives", "negatives", "all")


@dataclass(frozen=True)
class Objective:
    r"""One rate-constrained objective: what sets the threshold, what is penalised, how it is scored.

    A frozen record; every parameter is kept as an attribute of the same name (documented
    below each field). Use the entries of :data:`OBJECTIVES` rather than building one.

    Parameters
    ----------
    name : str
        The objective's name, as ``objective=`` takes it.
    subset : {"positives", "negatives", "all"}
        The rows of ``A``, whose rate the constraint is on.
    penalized : dict
        ``form -> rows`` whose surrogate the loss sums.
    loss : callable
        The functional loss of :mod:`quantile_surrogate.losses`.
    target_keyword : str
        The keyword under which ``loss`` takes the target.
    metric : callable
        The exact metric ``metric(y_true, y_score, target)``, higher is better.
    metric_name : str
        A label for reports, formatted with ``target``.
    constraint : str
        The constraint a held-out guarantee is about.
    bound : {"at_least", "at_most"}
        Whether the rate on ``A`` is a floor or a ceiling.
    rounding : {"ceil", "floor"}
        How the target becomes a count of rows of ``A`` above the threshold.
    default_target : float
        The target when none is given.
    equation : str
        Where the loss is in the paper.

    See Also
    --------
    get_objective : Look one up by name.

    Notes
    -----
    The constraint is on the rate of a subset ``A`` (Definition 3.1),

    .. math::
        r_A(f, \theta) = \frac{|\{x \in A : f(x) > \theta\}|}{|A|},

    and the threshold is the quantile :math:`\theta = q(f(A), 1 - c)` of Proposition 1: with
    ``bound="at_least"`` (the rate is a floor, e.g. recall) at least ``ceil(c |A|)`` rows of
    ``A`` score above it; with ``bound="at_most"`` (a ceiling) at most ``ceil(c |A|)`` rows
    (``rounding="ceil"``: a capacity of ``K`` rows, Precision@K) or ``floor(c |A|)`` rows
    (``rounding="floor"``: a false positive rate that must not exceed ``c``).

    Examples
    --------
    >>> from quantile_surrogate.objectives import OBJECTIVES
    >>> spec = OBJECTIVES["precision_at_recall"]
    >>> spec.subset, spec.bound, spec.target_keyword, spec.equation
    ('positives', 'at_least', 'recall', 'eq. (7)')
    """

    name: str
    """The objective's name, as ``objective=`` takes it."""
    subset: str
    """The rows of ``A``: ``"positives"``, ``"negatives"`` or ``"all"``."""
    penalized: dict
    """``form -> rows`` whose surrogate is summed (``"negatives"``: false positives, ``"positives"``:
    missed true positives); one entry unless the objective has several forms."""
    loss: Callable
    """The functional loss of :mod:`quantile_surrogate.losses`."""
    target_keyword: str
    """The keyword under which :attr:`loss` takes the target (``recall``, ``rate``, ``fpr``)."""
    metric: Callable
    """The exact metric ``metric(y_true, y_score, target)`` of :mod:`quantile_surrogate.metrics` (higher is better)."""
    metric_name: str
    """A label for reports, formatted with ``target``."""
    constraint: str
    """The constraint a held-out guarantee is about (:mod:`quantile_surrogate.estimators.calibration`)."""
    bound: str
    """``"at_least"``: the rate on ``A`` is a floor never missed; ``"at_most"``: a ceiling never exceeded."""
    rounding: str
    """How many rows of ``A`` the target allows above the threshold: ``"ceil"`` (``ceil(c |A|)``: at least
    that many for a floor, at most that many, K, for a capacity) or ``"floor"`` (``floor(c |A|)``: an FPR
    that must not exceed ``c``)."""
    default_target: float
    """The target when none is given."""
    equation: str
    """Where the loss is in the paper."""

    def subset_mask(self, positive):
        """The rows of ``A`` as a bool array of ``positive``'s kind (NumPy or torch)."""
        if self.subset == "positives":
            return positive
        if self.subset == "negatives":
            return ~positive
        return positive | ~positive

    def forms(self) -> tuple:
        """The forms ``form=`` accepts for this objective."""
        return tuple(self.penalized)


#: Every objective, by name (``"precision_at_recall"``, ``"precision_at_rate"``, ``"recall_at_fpr"``)
#: -> :class:`Objective`: the one table the estimators, the command line and the baselines read.
OBJECTIVES = {objective.name: objective for objective in (
    Objective("precision_at_recall", subset="positives", penalized={"fp": "negatives"},
              loss=precision_at_recall_loss, target_keyword="recall", metric=metrics.precision_at_recall,
              metric_name="precision at recall {target:g}", constraint="recall", bound="at_least",
              rounding="ceil", default_target=0.95, equation="eq. (7)"),
    Objective("precision_at_rate", subset="all", penalized={"fp": "negatives", "tp": "positives"},
              loss=precision_at_rate_loss, target_keyword="rate", metric=metrics.precision_at_rate,
              metric_name="precision at predicted positive rate {target:g}", constraint="rate",
              bound="at_most", rounding="ceil", default_target=0.05, equation="eqs. (9) and (10)"),
    Objective("recall_at_fpr", subset="negatives", penalized={"fp": "positives"},
              loss=recall_at_fpr_loss, target_keyword="fpr", metric=metrics.recall_at_fpr,
              metric_name="recall at FPR {target:g}", constraint="fpr", bound="at_most",
              rounding="floor", default_target=0.05, equation="Neyman-Pearson form of eq. (2)"),
)}

UNKNOWN_OBJECTIVE_MESSAGE = "`objective` must be one of {names}; got {value!r}."


def get_objective(name) -> Objective:
    """The :class:`Objective` called ``name`` (an :class:`Objective` passes through).

    Parameters
    ----------
    name : str or Objective
        A key of :data:`OBJECTIVES`.

    Returns
    -------
    Objective

    Raises
    ------
    TypeError
        If ``name`` is neither a string nor an :class:`Objective`.
    ValueError
        If ``name`` is not a key of :data:`OBJECTIVES`; the message names the valid ones.

    Examples
    --------
    >>> from quantile_surrogate.objectives import get_objective
    >>> get_objective("recall_at_fpr").metric_name.format(target=0.05)
    'recall at FPR 0.05'
    """
    if isinstance(name, Objective):
        return name
    if not isinstance(name, str):
        raise TypeError(f"`objective` must be a string such as 'precision_at_recall'; got {type(name).__name__}.")
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(UNKNOWN_OBJECTIVE_MESSAGE.format(names=sorted(OBJECTIVES), value=name)) from None


def subset_mask(labels, objective) -> torch.Tensor:
    """The rows of ``A`` for ``objective``, as a bool array (internal).

    Parameters
    ----------
    labels : Tensor or ndarray of shape (n,)
        Bool or {0, 1} labels.
    objective : str or Objective

    Returns
    -------
    Tensor or ndarray of bool, shape (n,)
        Of the kind of ``labels``.
    """
    positive = labels if labels.dtype in (torch.bool, np.bool_) else labels == 1
    return get_objective(objective).subset_mask(positive)


def objective_loss(scores, labels, *, objective, target, threshold_scores=None, form="fp",
                   quantile="kernel", bandwidth=0.05, surrogate="logistic", validate_args=False,
                   groups=None, threshold_groups=None, weight=None, threshold_weight=None):
    r"""The objective's quantile loss, with the threshold it used.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)`` of a batch.
    labels : Tensor of shape (N,)
        Bool or {0, 1} labels.
    objective : str or Objective
        A key of :data:`OBJECTIVES`.
    target : float in (0, 1)
        The recall, predicted positive rate or false positive rate.
    threshold_scores : Tensor of shape (M,), optional
        Scores of rows of ``A`` to estimate the threshold from; None estimates it from
        ``scores[A]`` (``A_b = X_b \cap A``).
    form : {"fp", "tp"}, default="fp"
        The form of an objective with several (``precision_at_rate``); ignored otherwise.
    quantile, bandwidth, surrogate
        As in :func:`~quantile_surrogate.losses.rate_constrained_loss`.
    validate_args : bool, default=False
        Off by default: the training loop checks its data once.
    groups : integer Tensor of shape (N,), optional
        Group codes of ``scores``' rows: every group gets its own threshold.
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``.
    weight, threshold_weight : Tensor, optional
        Frequency weights of the rows and of ``threshold_scores``.

    Returns
    -------
    QuantileLossOutput
        ``(loss, threshold)``, the loss reduced by its mean over the penalised rows; the
        threshold has shape () or (G,) with ``groups``.

    Raises
    ------
    TypeError, ValueError
        For an unknown objective (:func:`get_objective`), and with ``validate_args=True``
        as :func:`~quantile_surrogate.losses.rate_constrained_loss`.

    See Also
    --------
    quantile_surrogate.losses.rate_constrained_loss : The general loss.

    Notes
    -----
    The loss named by the objective's ``equation``: eq. (7) for ``precision_at_recall``,
    eqs. (9) and (10) for ``precision_at_rate`` and the Neyman-Pearson form of eq. (2) for
    ``recall_at_fpr``, all of the form

    .. math::
        \theta = \hat q(f(A), 1 - c), \qquad
        L = \frac{1}{|P|} \sum_{i \in P} l\big(\pm (f(x_i) - \theta)\big).

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.objectives import objective_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 0, 0])
    >>> objective_loss(scores, labels, objective="precision_at_recall", target=0.5, quantile="point")
    QuantileLossOutput(loss=tensor(0.3937), threshold=tensor(1.))
    """
    spec = get_objective(objective)
    common = dict(threshold_scores=threshold_scores, quantile=quantile, bandwidth=bandwidth,
                  surrogate=surrogate, return_threshold=True, validate_args=validate_args)
    if groups is not None:
        common["groups"] = groups
        if threshold_scores is not None:
            common["threshold_groups"] = threshold_groups
    if weight is not None or threshold_weight is not None:  # frequency weights (losses.rate_constrained_loss)
        common.update(weight=weight, threshold_weight=threshold_weight)
    if len(spec.forms()) > 1:
        common["form"] = form
    return spec.loss(scores, labels, **{spec.target_keyword: target}, **common)


def objective_metric(y_true, y_score, *, objective: str, target: float, groups=None, names=None,
                     sample_weight=None) -> float:
    r"""The exact metric of ``objective`` at ``target`` (:mod:`quantile_surrogate.metrics`), overall or in every group.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels, 1 is positive.
    y_score : array-like of shape (n,)
        Scores.
    objective : str or Objective
        A key of :data:`OBJECTIVES`.
    target : float in (0, 1)
        The recall, predicted positive rate or false positive rate.
    groups : array-like of int of shape (n,), optional
        Group codes ``0..G-1``: the constraint is then met in every group (see Notes).
    names : sequence, optional
        The group labels, indexed by code; only for error messages.
    sample_weight : array-like of shape (n,), optional
        Frequency weights: counts become sums of weights, in the metric and in the group
        thresholds.

    Returns
    -------
    float
        Higher is better; NaN (with an ``UndefinedMetricWarning``) where it is undefined.

    Raises
    ------
    ValueError
        For bad arrays (see :mod:`quantile_surrogate.metrics`), an unknown objective, or a
        group with rows but none of ``A``.

    See Also
    --------
    constraint_threshold, group_constraint_thresholds

    Notes
    -----
    Without ``groups`` it is the objective's metric, the best over every threshold that
    meets the constraint. With ``groups`` each group's rows are thresholded at
    :func:`constraint_threshold` on that group, and the metric is read off the pooled
    predictions :math:`\hat y_i = [f(x_i) > \theta_{g(i)}]`: precision for
    ``precision_at_recall`` and ``precision_at_rate``, recall for ``recall_at_fpr`` (NaN
    with an ``UndefinedMetricWarning`` if nothing is predicted positive, or no row is
    positive). Unlike the ungrouped metric this is the value at the constraint thresholds,
    not the best over all thresholds that meet it: with several groups the best joint
    choice is a combinatorial problem.

    Examples
    --------
    >>> from quantile_surrogate.objectives import objective_metric
    >>> y, s = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]
    >>> objective_metric(y, s, objective="precision_at_rate", target=0.5)  # top 2 of all rows
    0.5
    >>> objective_metric(y, s, objective="precision_at_rate", target=0.5, groups=[0, 0, 1, 1])  # top 1 per group
    1.0
    """
    spec = get_objective(objective)
    if sample_weight is not None:
        from ._weighted_threshold import weighted_objective_metric  # noqa: PLC0415 (it imports this module)

        return weighted_objective_metric(spec, y_true, y_score, target, groups, names, sample_weight)
    if groups is None:
        return spec.metric(y_true, y_score, target)
    y_true = np.asarray(y_true) == 1
    y_score = np.asarray(y_score, dtype=np.float64)
    groups = np.asarray(groups)
    thresholds = group_constraint_thresholds(y_score, y_true, groups, objective=objective, target=target,
                                             n_groups=None if names is None else len(names), names=names)
    predicted = y_score > thresholds[groups]
    if spec.subset == "negatives":  # the metric is a recall
        return _rate_or_nan(predicted[y_true], "recall: no row is positive")
    return _rate_or_nan(y_true[predicted], "precision: no row is predicted positive")


def _rate_or_nan(hits: np.ndarray, why: str) -> float:
    """The mean of ``hits``; NaN with scikit-learn's UndefinedMetricWarning when there is none, never a silent 0."""
    if hits.size == 0:
        warnings.warn(f"Undefined {why}; returning NaN.", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    return float(hits.mean())


TIED_SCORES_MESSAGE = (
    "Tied scores: {above} of the {size} rows of A ({subset}) score above the threshold, a rate of {achieved:.4g}, "
    "where target={target:g} asks for {bound} {wanted}; the rows tied at the threshold cannot be split by a "
    "threshold. {policy}"
)
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
    >>> from quantile_surrogate.objectives import TiedScoresWarning, constraint_threshold
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
    to 6 decimals first so that float noise (0.1 * 30 = 3.0000000000000004) cannot move it.
    With frequency weights ``size`` is the weight of ``A`` (a float), and so is the count.

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
    exact = round(target * size, 6)
    if spec.rounding == "floor":
        return min(math.floor(exact), size)
    return min(max(math.ceil(exact), 1), size)


def constraint_threshold(scores, labels, *, objective: str, target: float, sample_weight=None) -> float:
    r"""A threshold ``theta`` at which ``score > theta`` meets the constraint on these rows, ties included.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Scores of the rows (training or held-out).
    labels : array-like of shape (n,)
        Binary labels, 1 is positive.
    objective : str or Objective
        A key of :data:`OBJECTIVES`.
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
        for a bad ``sample_weight``.

    Warns
    -----
    TiedScoresWarning
        Where ties make the asked count of rows of ``A`` above the threshold impossible.

    See Also
    --------
    group_constraint_thresholds : One threshold per group.
    quantile_surrogate.guarantees.recall_threshold : A threshold that holds on new data.

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
    >>> from quantile_surrogate.objectives import constraint_threshold
    >>> y, s = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]
    >>> round(constraint_threshold(s, y, objective="precision_at_recall", target=0.5), 3)  # 1 of 2 positives
    0.85
    >>> round(constraint_threshold(s, y, objective="precision_at_rate", target=0.5), 3)  # 2 of 4 rows
    0.75
    """
    spec = get_objective(objective)
    scores = np.asarray(scores, dtype=np.float64)
    if sample_weight is None:
        weight = np.ones(scores.shape[0])
    else:  # rows of weight 0 are absent
        weight = check_sample_weight(sample_weight, scores.shape[0])
        keep = weight > 0
        scores, weight, labels = scores[keep], weight[keep], np.asarray(labels)[keep]
    in_subset = spec.subset_mask(np.asarray(labels) == 1)
    order = np.argsort(-scores[in_subset], kind="stable")
    subset_scores, cumulative = scores[in_subset][order], np.cumsum(weight[in_subset][order])
    if subset_scores.size == 0:
        raise ValueError(f"The subset that sets the threshold for {objective!r} has no rows"
                         + ("." if sample_weight is None else " of positive `sample_weight`."))
    total = float(cumulative[-1])
    k = allowed_count(spec, total, target)
    slack = 1e-9 * total  # cumulative weights are sums of floats
    if spec.bound == "at_most":
        index = int(np.searchsorted(cumulative, k + slack, side="right"))  # the first score whose mass exceeds k
        if index >= subset_scores.size:
            return float(np.min(scores) - 1.0)
        boundary = subset_scores[index]
        higher = scores[scores > boundary]
        theta = float((boundary + higher.min()) / 2 if higher.size else boundary + 1.0)
    else:
        boundary = subset_scores[min(int(np.searchsorted(cumulative, k - slack)), subset_scores.size - 1)]
        lower = scores[scores < boundary]
        theta = float((boundary + lower.max()) / 2 if lower.size else boundary - 1.0)
    above = float(weight[in_subset][scores[in_subset] > theta].sum())
    # Only rows tied at the boundary are the warning's subject: a single row's weight cannot be split either.
    if abs(above - k) > slack and int(np.count_nonzero(subset_scores == boundary)) > 1:
        warnings.warn(TIED_SCORES_MESSAGE.format(
            above=f"{above:g}", size=f"{total:g}", subset=spec.subset, achieved=above / total, target=target,
            bound="at least" if spec.bound == "at_least" else "at most", wanted=f"{k:g}",
            policy=TIE_POLICY[spec.bound]), TiedScoresWarning, stacklevel=2)
    return theta


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
        A key of :data:`OBJECTIVES`.
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
        else its code).

    See Also
    --------
    objective_metric : The metric at these thresholds.

    Notes
    -----
    Each group's threshold meets the constraint exactly on that group's rows:

    .. math::
        \theta_g = \text{constraint\_threshold}(f(X \cap G_g)), \qquad g = 0, \dots, G - 1,

    so recall >= target among its positives (equal opportunity), the same predicted positive
    rate ``ceil(target n_g) / n_g`` (demographic parity), or FPR <= target among its negatives.

    Examples
    --------
    >>> from quantile_surrogate.objectives import group_constraint_thresholds
    >>> thetas = group_constraint_thresholds([0.9, 0.8, 0.7, 0.1], [1, 0, 1, 0], [0, 0, 1, 1],
    ...                                      objective="precision_at_rate", target=0.5)
    >>> [round(float(t), 3) for t in thetas]  # the top row of each group
    [0.85, 0.4]
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    groups = np.asarray(groups)
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
            raise ValueError(f"Group {name!r}: {error} Each group needs a row of A "
                             f"({get_objective(objective).subset}).") from error
    return thresholds


@torch.no_grad()
def predict_scores(model: nn.Module, X: torch.Tensor, batch_size: int | None = 65536) -> torch.Tensor:
    """Raw scores ``f(X)`` of shape (n,), in eval mode and without autograd, in chunks of ``batch_size``.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of shape (b, d) to scores of shape (b,) or (b, 1).
    X : Tensor of shape (n, d)
        Features, on the model's device.
    batch_size : int or None, default=65536
        Rows per forward pass; None scores every row at once.

    Returns
    -------
    Tensor of shape (n,)
        The scores; the model's train/eval mode is restored afterwards.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.objectives import predict_scores
    >>> model = torch.nn.Linear(2, 1)
    >>> _ = torch.nn.init.ones_(model.weight), torch.nn.init.zeros_(model.bias)
    >>> predict_scores(model, torch.tensor([[1.0, 2.0], [3.0, 4.0]]), batch_size=1)
    tensor([3., 7.])
    """
    was_training = model.training
    model.eval()
    if batch_size is None or X.shape[0] <= batch_size:
        out = model(X).reshape(-1)
    else:
        out = torch.cat([model(chunk).reshape(-1) for chunk in X.split(batch_size)])
    model.train(was_training)
    return out


@torch.no_grad()
def training_loss(model, X, y, *, objective, target, groups=None, sample_weight=None, **settings) -> float:
    """Full-batch loss of ``model`` on ``(X, y)`` with the threshold from all of ``A`` (restart selection; internal).

    The scores are computed in chunks (:func:`predict_scores`), so no activation of the
    whole data set is held at once.

    Parameters
    ----------
    model : torch.nn.Module
    X : Tensor of shape (n, d)
    y : Tensor of shape (n,)
        Labels in {0, 1}.
    objective : str or Objective
    target : float
    groups : integer Tensor of shape (n,), optional
        Group codes, one per row (each group gets its own threshold from its rows of ``A``).
    sample_weight : float Tensor of shape (n,), optional
        Frequency weights.
    **settings
        ``form``, ``quantile``, ``bandwidth``, ``surrogate`` of :func:`objective_loss`.

    Returns
    -------
    float
    """
    scores = predict_scores(model, X)
    labels = y.bool()
    in_subset = subset_mask(labels, objective)
    extra = {} if groups is None else dict(groups=groups, threshold_groups=groups[in_subset])
    if sample_weight is not None:  # a float tensor of frequency weights, one per row
        extra.update(weight=sample_weight, threshold_weight=sample_weight[in_subset])
    return float(objective_loss(scores, labels, objective=objective, target=target,
                                threshold_scores=scores[in_subset], **extra, **settings).loss)
