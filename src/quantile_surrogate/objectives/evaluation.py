r"""An objective's loss, exact metric and scores: what training and evaluation call by name.

:func:`objective_loss` is the quantile loss of :data:`~quantile_surrogate.objectives.OBJECTIVES`'s
record; :func:`objective_metric` its exact metric, overall or at per-group constraint thresholds
(:func:`~quantile_surrogate.objectives.thresholds.group_constraint_thresholds`), with or without
frequency weights; :func:`predict_scores` the model's scores in eval mode.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from sklearn.exceptions import UndefinedMetricWarning
from torch import nn

from .._utils.checks import check_sample_weight
from .._utils.sparse import as_rows, row_chunks
from ._registry import get_objective, subset_mask
from .thresholds import group_constraint_thresholds

__all__ = ["objective_loss", "objective_metric", "predict_scores"]

UNDEFINED_RATE_MESSAGE = "Undefined {why}; returning NaN."


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
    quantile_surrogate.objectives.thresholds.constraint_threshold, quantile_surrogate.objectives.thresholds.group_constraint_thresholds

    Notes
    -----
    Without ``groups`` it is the objective's metric, the best over every threshold that
    meets the constraint. With ``groups`` each group's rows are thresholded at
    :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold` on that group, and the metric is read off the pooled
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
    if groups is None:
        return spec.metric(y_true, y_score, target, sample_weight=sample_weight)
    y_true = np.asarray(y_true) == 1
    y_score = np.asarray(y_score, dtype=np.float64)
    groups = np.asarray(groups)
    # An integer weight w is the row repeated w times; no weight is a weight of one (the counts).
    weight = (np.ones(y_score.shape[0]) if sample_weight is None
              else check_sample_weight(sample_weight, y_score.shape[0]))
    thresholds = group_constraint_thresholds(y_score, y_true, groups, objective=objective, target=target,
                                             n_groups=None if names is None else len(names), names=names,
                                             sample_weight=sample_weight if sample_weight is None else weight)
    predicted = y_score > thresholds[groups]
    if spec.subset == "negatives":  # the metric is a recall
        return _weighted_rate(predicted[y_true], weight[y_true], "recall: no row is positive")
    return _weighted_rate(y_true[predicted], weight[predicted], "precision: no row is predicted positive")


def _weighted_rate(hits: np.ndarray, weight: np.ndarray, why: str) -> float:
    """The weighted mean of ``hits``; NaN with scikit-learn's UndefinedMetricWarning when its denominator
    has no weight, never a silent 0."""
    total = weight.sum()
    if not total > 0:
        warnings.warn(UNDEFINED_RATE_MESSAGE.format(why=why), UndefinedMetricWarning, stacklevel=3)
        return math.nan
    return float(weight[hits].sum() / total)


@torch.no_grad()
def predict_scores(model: nn.Module, X: torch.Tensor, batch_size: int | None = 65536) -> torch.Tensor:
    """Raw scores ``f(X)`` of shape (n,), in eval mode and without autograd, in chunks of ``batch_size``.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of shape (b, d) to scores of shape (b,) or (b, 1).
    X : Tensor of shape (n, ...) or dict of such Tensors
        Features, on the model's device: a matrix, images, sequences, or a dict of tensors whose
        first dimension is the rows (what the model takes).
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
    X = as_rows(X)  # a dict of tensors becomes rows that slice together
    was_training = model.training
    model.eval()
    if batch_size is None or X.shape[0] <= batch_size:
        out = model(X).reshape(-1)
    else:
        out = torch.cat([model(chunk).reshape(-1) for chunk in row_chunks(X, batch_size)])
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
