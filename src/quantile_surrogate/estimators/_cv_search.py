"""The fold fits of :class:`~quantile_surrogate.QuantileClassifierCV` (private).

One task per (model family, fold): the family's starts are built once on the fold's training
rows (the logistic start by L-BFGS is about half the cost of a 200-epoch full-batch run of the
MLP, and it does not depend on ``alpha`` or ``bandwidth``), then every ``alpha`` x
``bandwidth`` candidate trains each restart from those starts for ``max_epochs`` epochs and is
scored on the held-out fold after each epoch count of :func:`~._quantile_fit.epoch_grid`. So one
training run per (candidate, fold, restart) scores every epoch count; no candidate is fitted
twice and no inner selection runs inside a fold.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ..objectives import objective_loss, objective_metric, predict_scores
from ..training import train
from ..training._loop import restart_seeds
from ..training.models import fit_logistic

__all__ = ["FoldData", "build_start", "family_fold", "logistic_restarts", "rank_candidates"]


class FoldData:
    """Rows of one side of a fold as tensors (weights and group codes optional), with NumPy copies for the metric."""

    def __init__(self, Xt, yt, rows, weight=None, codes=None, in_subset=None):
        index = torch.as_tensor(rows, device=Xt.device)
        self.X, self.y = Xt[index], yt[index]
        self.y_np = self.y.cpu().numpy()
        self.weight_np = None if weight is None else np.asarray(weight)[rows]
        self.weight = None if weight is None else torch.as_tensor(self.weight_np, dtype=Xt.dtype, device=Xt.device)
        self.codes_np = None if codes is None else np.asarray(codes)[rows]
        self.codes = None if codes is None else torch.as_tensor(self.codes_np, device=Xt.device)
        self.in_subset = None if in_subset is None else in_subset[index]


def logistic_restarts(init: str, n_restarts: int) -> list:
    """Which restarts start from logistic regression (``init`` as in :class:`QuantileClassifier`)."""
    return [init == "logistic" or (init == "mixed" and r == 0) for r in range(n_restarts)]


def build_start(factory, data: FoldData, model_seed: int, logistic: bool):
    """Restart ``r``'s start on ``data``: the factory's model seeded ``model_seed``, by logistic regression if asked.

    As :func:`~quantile_surrogate.training.train` makes it (the same seed, and ``alpha = 1 / n``,
    or ``1 / sum(w)`` with weights), so the start is the same in every fold and in the refit.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(model_seed)
        model = factory().to(device=data.X.device, dtype=data.X.dtype)
    if logistic:
        if data.weight is None:
            fit_logistic(model, data.X, data.y, alpha=1 / data.X.shape[0])
        else:
            fit_logistic(model, data.X, data.y, alpha=1 / float(data.weight.sum()), sample_weight=data.weight)
    return model


def held_out_value(model, held: FoldData, settings: dict) -> tuple:
    """(exact metric, surrogate loss) on the held-out rows, weighted and per group where given."""
    with torch.no_grad():
        scores = predict_scores(model, held.X)
        if not bool(torch.isfinite(scores).all()):
            return -np.inf, np.inf
        extra = {}
        if held.codes is not None:
            extra.update(groups=held.codes, threshold_groups=held.codes[held.in_subset])
        if held.weight is not None:
            extra.update(weight=held.weight, threshold_weight=held.weight[held.in_subset])
        loss = objective_loss(scores, held.y, objective=settings["objective"], target=settings["target"],
                              threshold_scores=scores[held.in_subset], form=settings["form"],
                              quantile=settings["quantile"], bandwidth=settings["bandwidth"],
                              surrogate=settings["surrogate"], **extra).loss
    metric = objective_metric(held.y_np, scores.double().cpu().numpy(), objective=settings["objective"],
                              target=settings["target"], groups=held.codes_np, sample_weight=held.weight_np)
    return float(metric), float(loss)


def train_from(start, data: FoldData, settings: dict, max_epochs: int, shuffle_seed: int, callback=None):
    """:func:`~quantile_surrogate.training.train` from ``start`` as it is (``init="model"``), one restart."""
    extra = {} if data.weight is None else {"sample_weight": data.weight}
    return train(start, data.X, data.y, groups=data.codes, max_epochs=max_epochs, n_restarts=1, init="model",
                 callback=callback, random_state=shuffle_seed, **extra, **settings)


def family_fold(factory, candidates, fit: FoldData, held: FoldData, *, grid, seed, n_restarts, init, max_epochs):
    """Held-out (metric, loss) of shape (n_candidates, n_restarts, n_epochs) and seconds per candidate.

    ``candidates`` are train-settings dicts (without ``random_state``) of one model family.
    Restart ``r`` has model seed ``restart_seeds(seed, n_restarts)[r][0]`` and trains with
    ``random_state`` its shuffling seed, in every fold and candidate (and in the refit).
    """
    seeds = restart_seeds(seed, n_restarts)
    logistic = logistic_restarts(init, n_restarts)
    position = {int(e): i for i, e in enumerate(grid)}
    starts = {r: build_start(factory, fit, seeds[r][0], True) for r in range(n_restarts) if logistic[r]}
    metric = np.full((len(candidates), n_restarts, len(grid)), np.nan)
    loss, seconds = np.full_like(metric, np.nan), np.zeros(len(candidates))
    for c, settings in enumerate(candidates):
        clock = time.perf_counter()
        for r in range(n_restarts):
            start = starts[r] if logistic[r] else build_start(factory, fit, seeds[r][0], False)
            if logistic[r]:  # epoch 0 of a logistic restart, the start as it is, is a candidate
                metric[c, r, 0], loss[c, r, 0] = held_out_value(start, held, settings)

            def record(info, c=c, r=r, settings=settings):
                i = position.get(int(info["epoch"]))
                if i is not None:
                    metric[c, r, i], loss[c, r, i] = held_out_value(info["model"], held, settings)

            train_from(start, fit, settings, max_epochs, seeds[r][1], record)
        seconds[c] = time.perf_counter() - clock
    return metric, loss, seconds


def rank_candidates(mean_metric, mean_loss, is_start) -> np.ndarray:
    """Flat indices of (candidate, restart, epoch) from best to worst.

    Best mean held-out metric first; ties go to a logistic start as it is (a tie says nothing
    against it), then to the earlier candidate of the grid, then to the lower mean held-out
    loss. NaN (a value that is not a candidate, or an undefined metric) sorts last.
    """
    shape = mean_metric.shape
    candidate = np.broadcast_to(np.arange(shape[0])[:, None, None], shape)
    start = np.broadcast_to(is_start[None], shape)
    return np.lexsort((np.nan_to_num(mean_loss, nan=np.inf).ravel(), candidate.ravel(), -start.ravel(),
                       -np.nan_to_num(mean_metric, nan=-np.inf).ravel()))
