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

__all__ = [
    "Objective",
    "OBJECTIVES",
    "get_objective",
    "subset_mask",
    "objective_loss",
    "objective_metric",
    "constraint_threshold",
    "allowed_count",
    "boundary_ties",
    "TiedScoresWarning",
    "group_constraint_thresholds",
    "predict_scores",
    "training_loss",
]

SUBSETS = ("positives", "negatives", "all")


@dataclass(frozen=True)
class Objective:
    r"""One rate-constrained objective: what sets the threshold, what is penalised, how it is scored.

    The constraint is on the rate :math:`r_A(f, \theta) = |\{x \in A : f(x) > \theta\}| / |A|`
    of a subset ``A`` (Definition 3.1); the threshold is the quantile
    :math:`\theta = q(f(A), 1 - c)` (``bound="at_least"``: the rate is a floor, e.g. recall) or
    the level at which at most ``floor(c |A|)`` rows of ``A`` score above it (``bound="at_most"``:
    the rate is a ceiling, e.g. a false positive rate or an alert capacity).
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
"""Every objective, by name: the one table the estimators, the command line and the baselines read."""

UNKNOWN_OBJECTIVE_MESSAGE = "`objective` must be one of {names}; got {value!r}."


def get_objective(name) -> Objective:
    """The :class:`Objective` called ``name``; ``ValueError`` naming the valid ones otherwise (an Objective passes through)."""
    if isinstance(name, Objective):
        return name
    if not isinstance(name, str):
        raise TypeError(f"`objective` must be a string such as 'precision_at_recall'; got {type(name).__name__}.")
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(UNKNOWN_OBJECTIVE_MESSAGE.format(names=sorted(OBJECTIVES), value=name)) from None


def subset_mask(labels, objective) -> torch.Tensor:
    """The rows of ``A`` for ``objective``, as a bool array (``labels`` are bool or {0, 1}; NumPy or torch)."""
    positive = labels if labels.dtype in (torch.bool, np.bool_) else labels == 1
    return get_objective(objective).subset_mask(positive)


def objective_loss(scores, labels, *, objective, target, threshold_scores=None, form="fp",
                   quantile="kernel", bandwidth=0.05, surrogate="logistic", validate_args=False,
                   groups=None, threshold_groups=None, weight=None, threshold_weight=None):
    """The objective's loss from :mod:`quantile_surrogate.losses`, as ``QuantileLossOutput(loss, threshold)``.

    ``threshold_scores`` are scores of rows of ``A``; if None the threshold is estimated from
    ``scores[A]`` (``A_b = X_b \\cap A``). With ``groups`` (integer codes of ``scores``' rows)
    and ``threshold_groups`` (codes of ``threshold_scores``), every group gets its own
    threshold and the returned threshold has shape (G,) (see
    :func:`~quantile_surrogate.losses.rate_constrained_loss`).
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
    """The exact metric of ``objective`` at ``target`` (:mod:`quantile_surrogate.metrics`).

    With ``groups`` (integer codes, one per row) the constraint is met in every group: each
    group's rows are thresholded at :func:`constraint_threshold` on that group, and the metric
    is read off the pooled predictions ``score > theta_g``: precision for
    ``precision_at_recall`` and ``precision_at_rate``, recall for ``recall_at_fpr`` (NaN with an
    ``UndefinedMetricWarning`` if
    nothing is predicted positive, or no row is positive). Unlike the ungrouped metrics this
    is the value at the constraint thresholds, not the best over all thresholds that meet it:
    with several groups the best joint choice is a combinatorial problem. ``names`` (the
    group labels, indexed by code) are only for error messages. ``sample_weight``: frequency
    weights (counts become sums of weights, in the metric and in the group thresholds).
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
    """The exact rate a constraint asks for is impossible on these rows because scores tie at the threshold."""


def allowed_count(objective, size: int, target: float) -> int:
    """The number of rows of ``A`` (of ``size``) the constraint asks for above the threshold.

    ``ceil(c |A|)`` (at least 1) for a floor such as recall and for a capacity such as the
    predicted positive rate (``K = ceil(c n)``, as :func:`~quantile_surrogate.metrics.count_at_rate`);
    ``floor(c |A|)`` for a false positive rate that must not exceed ``c``. ``c |A|`` is rounded
    to 6 decimals first so that float noise (0.1 * 30 = 3.0000000000000004) cannot move it.
    With frequency weights ``size`` is the weight of ``A`` (a float), and so is the count.
    """
    spec = get_objective(objective)
    exact = round(target * size, 6)
    if spec.rounding == "floor":
        return min(math.floor(exact), size)
    return min(max(math.ceil(exact), 1), size)


def constraint_threshold(scores, labels, *, objective: str, target: float, sample_weight=None) -> float:
    """A threshold ``theta`` at which ``score > theta`` meets the constraint on these rows, ties included.

    With ``k`` = :func:`allowed_count`, the tie policy is: a floor is never missed, a ceiling
    never exceeded.

    - ``bound="at_least"`` (precision at recall): ``theta`` sits just below ``u``, the ``k``-th
      largest score of ``A``, so that at least ``k`` rows of ``A`` score above it (all ties of
      ``u`` included): the point estimate ``q(f(A), 1 - c)`` of section 4.
    - ``bound="at_most"`` (precision at a rate: a capacity of ``K = ceil(c n)`` rows; recall at
      FPR: at most ``floor(c |A|)`` negatives): ``theta`` sits just above ``v``, the
      ``(k + 1)``-th largest score of ``A``, so that at most ``k`` rows of ``A`` score above it
      (the ties of ``v`` excluded).

    Where ties make exactly ``k`` impossible, a :class:`TiedScoresWarning` says so with the rate
    achieved. "Just below/above" is the midpoint to the nearest other training score, so that
    recomputing the scores with rounding noise cannot move a row across the threshold.

    ``sample_weight`` (frequency weights, >= 0): counts become sums of weights, ``k`` is
    :func:`allowed_count` of the mass ``W_A`` of ``A`` (``ceil(c W_A)``, ...), ``u`` the score at
    which the weight of ``A`` from the top first reaches ``k`` (``v``: first exceeds it), and
    rows of weight 0 are absent; with integer weights it is the threshold of the rows repeated.
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
    """``(tie_score, fraction)``: the tied scores at the constraint's boundary, and the share of them it asks for.

    The boundary is the ``k``-th largest score of ``A`` for a floor and the ``(k + 1)``-th for a
    ceiling (``k`` = :func:`allowed_count`). With ``a`` rows of ``A`` strictly above it and ``t``
    tied at it, ``fraction = (k - a) / t``: predicting each tied row positive with that
    probability meets the count ``k`` in expectation, where :func:`constraint_threshold` (which
    takes all tied rows for a floor and none for a ceiling) cannot. ``(nan, 0.0)`` when no row
    of ``A`` is at the boundary (a ceiling that allows every row).

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
    """:func:`constraint_threshold` on each group's rows: ``theta_g``, shape (n_groups,).

    ``groups`` are integer codes 0..G-1, one per row. Each group's threshold meets the
    constraint exactly on that group's rows (recall >= target among its positives, the same
    predicted positive rate ``ceil(target n_g) / n_g``, or FPR <= target among its
    negatives). A code with no row at all gets NaN; a group with rows but none of ``A``
    raises ``ValueError`` naming it (``names[g]`` if given, else its code). ``sample_weight``:
    frequency weights, each group's threshold weighted as in :func:`constraint_threshold`.
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
    """Raw scores ``f(X)`` of shape (n,), in eval mode and without autograd, in chunks of ``batch_size``."""
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
    """Full-batch loss of ``model`` on ``(X, y)`` with the threshold from all of ``A`` (restart selection).

    The scores are computed in chunks (:func:`predict_scores`), so no activation of the
    whole data set is held at once. ``groups``: integer group codes, one per row (each
    group gets its own threshold from its rows of ``A``).
    """
    scores = predict_scores(model, X)
    labels = y.bool()
    in_subset = subset_mask(labels, objective)
    extra = {} if groups is None else dict(groups=groups, threshold_groups=groups[in_subset])
    if sample_weight is not None:  # a float tensor of frequency weights, one per row
        extra.update(weight=sample_weight, threshold_weight=sample_weight[in_subset])
    return float(objective_loss(scores, labels, objective=objective, target=target,
                                threshold_scores=scores[in_subset], **extra, **settings).loss)
