r"""Objectives for training and evaluation: the threshold subset, the loss, the exact metric.

Shared by :func:`~quantile_surrogate.training.train`, :class:`~quantile_surrogate.QuantileClassifier`
and the experiments, so that each objective's subset ``A``, its quantile loss and its exact
metric are named in one table (:data:`OBJECTIVES`). The exact threshold on given scores, and the
tie policy, are in :mod:`quantile_surrogate.thresholds`.
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
from .losses import precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss

# subset_mask and training_loss stay importable from here for the training loop and the
# estimators, but they are plumbing, not the public surface.
__all__ = [
    "Objective",
    "OBJECTIVES",
    "get_objective",
    "objective_loss",
    "objective_metric",
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
    quantile_surrogate.thresholds.constraint_threshold, quantile_surrogate.thresholds.group_constraint_thresholds

    Notes
    -----
    Without ``groups`` it is the objective's metric, the best over every threshold that
    meets the constraint. With ``groups`` each group's rows are thresholded at
    :func:`~quantile_surrogate.thresholds.constraint_threshold` on that group, and the metric is read off the pooled
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
    from .thresholds import group_constraint_thresholds  # noqa: PLC0415 (it imports this module)

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
