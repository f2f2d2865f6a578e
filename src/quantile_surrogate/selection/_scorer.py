"""The one held-out scorer: a model's (or margins') exact metric, surrogate loss and average precision on held-out rows.

Every held-out comparison of the package scores through :func:`held_out_scores`: the K-fold
selection and the validation split of :class:`~quantile_surrogate.QuantileClassifier`, the folds of
:class:`~quantile_surrogate.QuantileClassifierCV` and the validation curve of
:class:`~quantile_surrogate.QuantileBoostingClassifier`. The held-out rows are a :class:`FoldData`
(labels, and optionally frequency weights, group codes and the subset ``A`` of the whole data).

One switch: unweighted and ungrouped rows take the metric from one sort of the counting core
(:func:`~quantile_surrogate.metrics._held_out.held_out_metric`, equal to the bit to
:func:`~quantile_surrogate.objectives.objective_metric`, which tests/metrics/test_held_out.py
checks), and the average precision likewise (equal to scikit-learn's up to the order of the sum).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import average_precision_score

from .._utils.sparse import take_rows
from ..metrics._held_out import held_out_average_precision, held_out_metric
from ..objectives import get_objective, objective_loss, objective_metric, predict_scores

__all__ = ["FoldData", "HeldOutCurve", "held_out_loss", "held_out_scores", "held_out_value"]

LOSS_KEYS = ("form", "quantile", "bandwidth", "surrogate")


class FoldData:
    """Rows of one side of a fold as tensors (weights and group codes optional), with NumPy copies for the metric.

    ``in_subset`` (bool, over all rows of ``Xt``) marks ``A``: the held-out loss then takes its
    threshold from these rows of ``A``; None takes it from the scored rows' own ``A`` inside the loss.
    """

    def __init__(self, Xt, yt, rows, weight=None, codes=None, in_subset=None):
        index = torch.as_tensor(rows, device=Xt.device)
        self.X, self.y = take_rows(Xt, index), yt[index]
        self.y_np = self.y.cpu().numpy()
        self.weight_np = None if weight is None else np.asarray(weight)[rows]
        self.weight = None if weight is None else torch.as_tensor(self.weight_np, dtype=Xt.dtype, device=Xt.device)
        self.codes_np = None if codes is None else np.asarray(codes)[rows]
        self.codes = None if codes is None else torch.as_tensor(self.codes_np, device=Xt.device)
        self.in_subset = None if in_subset is None else in_subset[index]

    @classmethod
    def from_labels(cls, y01, codes=None, weight=None) -> "FoldData":
        """Held-out rows known by their labels alone (scored from margins, no features)."""
        y = torch.as_tensor(np.asarray(y01))
        return cls(torch.zeros((len(y), 0), dtype=torch.float64), y, np.arange(len(y)), weight, codes)


def held_out_loss(scores, held: FoldData, settings: dict) -> float:
    """The surrogate loss of ``scores`` (a tensor) on the held-out rows, without gradients (see :func:`held_out_scores`)."""
    extra = {}
    if held.codes is not None:
        extra["groups"] = held.codes
        if held.in_subset is not None:
            extra["threshold_groups"] = held.codes[held.in_subset]
    if held.weight is not None:
        extra["weight"] = held.weight
        if held.in_subset is not None:
            extra["threshold_weight"] = held.weight[held.in_subset]
    if held.in_subset is not None:
        extra["threshold_scores"] = scores[held.in_subset]
    with torch.no_grad():
        out = objective_loss(scores, held.y, objective=settings["objective"], target=settings["target"],
                             **{k: settings[k] for k in LOSS_KEYS}, **extra)
    return float(out.loss)


def held_out_scores(scores, held: FoldData, settings: dict, *, loss: bool = True,
                    average_precision: bool = False) -> tuple:
    """(exact metric, surrogate loss[, average precision]) of ``scores`` (a tensor) on the held-out rows.

    Weighted and per group where ``held`` has weights and codes; the loss uses the objective,
    target, form, quantile, bandwidth and surrogate of ``settings``. Non-finite scores (a diverged
    model) give ``(-inf, inf[, -inf])``. ``loss=False`` skips the loss (NaN). The average precision is
    over all rows, weighted (scikit-learn's) with weights, NaN without a positive of weight > 0.
    """
    if not bool(torch.isfinite(scores).all()):
        return (-np.inf, np.inf, -np.inf)[:3 if average_precision else 2]
    value = held_out_loss(scores, held, settings) if loss else np.nan
    scores = scores.double().cpu().numpy()
    if held.codes_np is None and held.weight_np is None:  # one sort, not sklearn's checked curve (many calls)
        metric = held_out_metric(held.y_np == 1, scores, get_objective(settings["objective"]).name, settings["target"])
    else:
        metric = objective_metric(held.y_np, scores, objective=settings["objective"], target=settings["target"],
                                  groups=held.codes_np, sample_weight=held.weight_np)
    if not average_precision:
        return float(metric), float(value)
    if held.weight_np is None:
        ranking = held_out_average_precision(held.y_np == 1, scores)
    elif held.weight_np[held.y_np == 1].sum() > 0:
        ranking = average_precision_score(held.y_np, scores, sample_weight=held.weight_np)
    else:
        ranking = np.nan
    return float(metric), float(value), float(ranking)


def held_out_value(model, held: FoldData, settings: dict, *, average_precision: bool = False) -> tuple:
    """:func:`held_out_scores` of ``model``'s scores on ``held.X`` (in eval mode, without gradients)."""
    with torch.no_grad():
        scores = predict_scores(model, held.X)
    return held_out_scores(scores, held, settings, average_precision=average_precision)


class HeldOutCurve:
    """After each boosting round: :func:`held_out_scores` of the held-out margins, and when to stop.

    Called with the held-out margins; returns True once ``patience`` rounds have passed since the
    first round that reached the best metric (never with ``patience=None``). With ``lazy_loss`` the
    loss is computed only where the metric reaches the best so far (the only rounds a tie can
    concern), NaN elsewhere. ``settings["bandwidth"]`` is set by the caller once known.
    """

    def __init__(self, held: FoldData, settings: dict, patience, lazy_loss: bool):
        self.held, self.settings, self.patience, self.lazy_loss = held, settings, patience, lazy_loss
        self.rows = []

    def __call__(self, margins) -> bool:
        scores = torch.as_tensor(margins)
        metric, _ = held_out_scores(scores, self.held, self.settings, loss=False)
        best = max((m for m, _ in self.rows), default=-np.inf)
        loss = held_out_loss(scores, self.held, self.settings) if metric >= best or not self.lazy_loss else np.nan
        self.rows.append((metric, loss))
        first_best = int(np.argmax([m for m, _ in self.rows]))
        return self.patience is not None and len(self.rows) - 1 - first_best >= self.patience

    def values(self) -> np.ndarray:
        return np.array(self.rows, dtype=np.float64)
