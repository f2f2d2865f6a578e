r"""Objectives for training and evaluation: the threshold subset, the loss, the exact metric.

Shared by :func:`~quantile_surrogate.training.train`, :class:`~quantile_surrogate.QuantileClassifier`
and the experiments, so that each objective's subset ``A``, its quantile loss and its exact
metric are named in one table (:data:`OBJECTIVES`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from . import metrics
from .losses import precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss

__all__ = [
    "OBJECTIVES",
    "subset_mask",
    "objective_loss",
    "objective_metric",
    "constraint_threshold",
    "predict_scores",
    "training_loss",
]

OBJECTIVES = {
    "precision_at_recall": {"subset": "positives", "metric": metrics.precision_at_recall},
    "precision_at_rate": {"subset": "all", "metric": metrics.precision_at_rate},
    "recall_at_fpr": {"subset": "negatives", "metric": metrics.recall_at_fpr},
}
"""Each objective's threshold subset ``A`` and its exact metric (higher is better)."""


def subset_mask(labels: torch.Tensor, objective: str) -> torch.Tensor:
    """The rows of ``A`` for ``objective``, as a bool tensor (``labels`` are bool or {0, 1})."""
    positive = labels if labels.dtype == torch.bool else labels == 1
    kind = OBJECTIVES[objective]["subset"]
    if kind == "positives":
        return positive
    if kind == "negatives":
        return ~positive
    return torch.ones_like(positive)


def objective_loss(scores, labels, *, objective, target, threshold_scores=None, form="fp",
                   quantile="kernel", bandwidth=0.05, surrogate="logistic", validate_args=False):
    """The objective's loss from :mod:`quantile_surrogate.losses`, as ``QuantileLossOutput(loss, threshold)``.

    ``threshold_scores`` are scores of rows of ``A``; if None the threshold is estimated from
    ``scores[A]`` (``A_b = X_b \\cap A``).
    """
    common = dict(threshold_scores=threshold_scores, quantile=quantile, bandwidth=bandwidth,
                  surrogate=surrogate, return_threshold=True, validate_args=validate_args)
    if objective == "precision_at_recall":
        return precision_at_recall_loss(scores, labels, recall=target, **common)
    if objective == "precision_at_rate":
        return precision_at_rate_loss(scores, labels, rate=target, form=form, **common)
    return recall_at_fpr_loss(scores, labels, fpr=target, **common)


def objective_metric(y_true, y_score, *, objective: str, target: float) -> float:
    """The exact metric of ``objective`` at ``target`` (:mod:`quantile_surrogate.metrics`)."""
    return OBJECTIVES[objective]["metric"](y_true, y_score, target)


def constraint_threshold(scores, labels, *, objective: str, target: float) -> float:
    """A threshold ``theta`` at which ``score > theta`` meets the constraint exactly on these rows.

    For "rate on A >= c" (precision at recall, precision at rate) ``theta`` sits just below
    ``u``, the ``m``-th largest score of ``A`` with ``m = ceil(c |A|)``, so that at least
    ``m`` rows of ``A`` score above it (all ties of ``u`` included), the point estimate
    ``q(f(A), 1 - c)`` of section 4. For "FPR <= c" (recall at FPR) it sits at or just above
    ``v``, the ``(j + 1)``-th largest negative score with ``j = floor(c |A|)``, so that at
    most ``j`` negatives score above it. "Just below/above" is the midpoint to the nearest
    other training score, so that recomputing the scores with rounding noise cannot move a
    row across the threshold.
    """
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels) == 1
    in_subset = {"positives": positive, "negatives": ~positive, "all": np.ones_like(positive)}[
        OBJECTIVES[objective]["subset"]]
    subset_scores = np.sort(scores[in_subset])[::-1]
    if subset_scores.size == 0:
        raise ValueError(f"The subset that sets the threshold for {objective!r} has no rows.")
    if objective == "recall_at_fpr":
        j = math.floor(round(target * subset_scores.size, 6))
        if j >= subset_scores.size:
            return float(np.min(scores) - 1.0)
        v = subset_scores[j]
        higher = scores[scores > v]
        return float((v + higher.min()) / 2 if higher.size else v + 1.0)
    m = min(max(math.ceil(round(target * subset_scores.size, 6)), 1), subset_scores.size)
    u = subset_scores[m - 1]
    lower = scores[scores < u]
    return float((u + lower.max()) / 2 if lower.size else u - 1.0)


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
def training_loss(model, X, y, *, objective, target, **settings) -> float:
    """Full-batch loss of ``model`` on ``(X, y)`` with the threshold from all of ``A`` (restart selection)."""
    scores = predict_scores(model, X, batch_size=None)
    labels = y.bool()
    return float(objective_loss(scores, labels, objective=objective, target=target,
                                threshold_scores=scores[subset_mask(labels, objective)], **settings).loss)
