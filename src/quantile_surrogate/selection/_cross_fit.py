r"""K-fold cross-fitting: every restart trained once per fold and scored at every epoch count of the grid.

Used by :class:`~quantile_surrogate.QuantileClassifier` on small data (:func:`cross_fit_selection`:
one setting, the out-of-fold rule of :mod:`._out_of_fold_rule`) and by
:class:`~quantile_surrogate.QuantileClassifierCV` (:func:`family_fold`: one task per (model family,
fold), the family rule of :mod:`._family_rule`). In both, restart ``r`` has the same start in every
fold and in the refit (:func:`build_start`, as :func:`~quantile_surrogate.training.train` makes it),
and one training run per (candidate, fold, restart) is scored on the held-out fold after each
epoch count of :func:`epoch_grid` (:func:`~._scorer.held_out_scores`); its held-out scores, pooled
over the folds, are its out-of-fold scores (:mod:`._out_of_fold_rule`). Why this design and the grid:
``docs/selection.md``.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from .._utils.seeding import restart_seeds, seed_torch
from ..objectives import predict_scores
from ..training import train
from ..training.models import fit_logistic
from ._family_rule import rank_candidates
from ._out_of_fold_rule import select_out_of_fold
from ._scorer import FoldData, held_out_scores
from ._splits import k_folds

__all__ = ["EPOCH_GRID", "build_start", "cross_fit_selection", "epoch_grid", "family_fold", "logistic_restarts",
           "scored_run", "train_from"]

EPOCH_GRID = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""Epoch counts compared by the K-fold selection (and ``max_epochs``), roughly geometric (``docs/selection.md``)."""


def epoch_grid(max_epochs: int) -> np.ndarray:
    """0 (the start), the entries of :data:`EPOCH_GRID` below ``max_epochs``, and ``max_epochs``.

    Examples
    --------
    >>> epoch_grid(30).tolist()
    [0, 1, 2, 5, 10, 20, 30]
    """
    return np.array(sorted({0, int(max_epochs), *(e for e in EPOCH_GRID if e < max_epochs)}))


def logistic_restarts(init: str, n_restarts: int) -> list:
    """Which restarts start from logistic regression (``init`` as in :class:`QuantileClassifier`)."""
    return [init == "logistic" or (init == "mixed" and r == 0) for r in range(n_restarts)]


def build_start(factory, data: FoldData, model_seed: int, logistic: bool):
    """Restart ``r``'s start on ``data``: the factory's model seeded ``model_seed``, by logistic regression if asked.

    As :func:`~quantile_surrogate.training.train` makes it (the same seed, and ``alpha = 1 / n``,
    or ``1 / sum(w)`` with weights), so the start is the same in every fold and in the refit.
    """
    with torch.random.fork_rng(devices=[]):
        seed_torch(model_seed)
        model = factory().to(device=data.X.device, dtype=data.X.dtype)
    if logistic:
        if data.weight is None:
            fit_logistic(model, data.X, data.y, alpha=1 / data.X.shape[0])
        else:
            fit_logistic(model, data.X, data.y, alpha=1 / float(data.weight.sum()), sample_weight=data.weight)
    return model


def train_from(start, data: FoldData, settings: dict, max_epochs: int, shuffle_seed: int, callback=None):
    """:func:`~quantile_surrogate.training.train` from ``start`` as it is (``init="model"``), one restart."""
    extra = {} if data.weight is None else {"sample_weight": data.weight}
    return train(start, data.X, data.y, groups=data.codes, max_epochs=max_epochs, n_restarts=1, init="model",
                 callback=callback, random_state=shuffle_seed, **extra, **settings)


def scored_run(start, fit: FoldData, held: FoldData, settings: dict, *, max_epochs, shuffle_seed, position,
               metric_row, loss_row, score_start: bool, ranking_row=None, scores_out=None):
    """Train ``start`` on ``fit`` and score it on ``held`` at every epoch count of ``position`` (epoch -> column).

    Fills ``metric_row`` and ``loss_row`` (views of length ``len(position)``), and ``ranking_row``
    with the average precision where given, with :func:`~._scorer.held_out_scores`; column 0, the
    start as it is, only with ``score_start`` (a logistic start is a candidate, a random one is not).
    ``scores_out`` (a callable ``(column, scores)``) receives the held-out scores themselves.
    """
    rows = (metric_row, loss_row) if ranking_row is None else (metric_row, loss_row, ranking_row)

    def fill(model, i):
        scores = predict_scores(model, held.X)  # without autograd
        for row, value in zip(rows, held_out_scores(scores, held, settings, average_precision=ranking_row is not None)):
            row[i] = value
        if scores_out is not None:
            scores_out(i, scores.double().cpu().numpy())

    if score_start:
        fill(start, 0)

    def record(info):
        i = position.get(int(info["epoch"]))
        if i is not None:
            fill(info["model"], i)

    train_from(start, fit, settings, max_epochs, shuffle_seed, record)


def family_fold(factory, candidates, fit: FoldData, held: FoldData, *, grid, seed, n_restarts, init, max_epochs):
    """Held-out (metric, loss, average precision) of shape (n_candidates, n_restarts, n_epochs) and seconds per candidate.

    ``candidates`` are train-settings dicts (without ``random_state``) of one model family. The
    logistic starts are built once per (family, fold): they do not depend on ``alpha`` or
    ``bandwidth``. Restart ``r`` has model seed ``restart_seeds(seed, n_restarts)[r][0]`` and trains
    with ``random_state`` its shuffling seed, in every fold and candidate (and in the refit).
    """
    seeds = restart_seeds(seed, n_restarts)
    logistic = logistic_restarts(init, n_restarts)
    position = {int(e): i for i, e in enumerate(grid)}
    starts = {r: build_start(factory, fit, seeds[r][0], True) for r in range(n_restarts) if logistic[r]}
    metric = np.full((len(candidates), n_restarts, len(grid)), np.nan)
    loss, ranking, seconds = np.full_like(metric, np.nan), np.full_like(metric, np.nan), np.zeros(len(candidates))
    for c, settings in enumerate(candidates):
        clock = time.perf_counter()
        for r in range(n_restarts):
            start = starts[r] if logistic[r] else build_start(factory, fit, seeds[r][0], False)
            scored_run(start, fit, held, settings, max_epochs=max_epochs, shuffle_seed=seeds[r][1], position=position,
                       metric_row=metric[c, r], loss_row=loss[c, r], score_start=logistic[r], ranking_row=ranking[c, r])
        seconds[c] = time.perf_counter() - clock
    return metric, loss, ranking, seconds


def cross_fit_selection(factory, Xt, yt, in_subset, *, folds, seed, settings, max_epochs, n_restarts, init,
                        sample_weight=None, plain: bool = False) -> dict:
    r"""Every (restart, epoch count) candidate scored on stratified K-fold, and the out-of-fold rule's choice.

    Each of the ``folds`` stratified folds (:func:`~._splits.k_folds`) trains every restart for
    ``max_epochs`` on the other folds and scores it after each count of :func:`epoch_grid`
    (:func:`scored_run`); a logistic start as it is (epoch 0) is a candidate, a random one is not.
    The held-out scores of the folds, pooled, are each candidate's out-of-fold scores. With
    ``sample_weight`` (frequency weights, one per row of ``Xt``) the training, the held-out
    metric, loss and bootstrap are weighted. The choice is
    :func:`~._out_of_fold_rule.select_out_of_fold`: a candidate that beats the logistic start on
    the out-of-fold exact metric in 90 % of paired bootstrap resamples, else the lowest mean
    held-out loss unless the start beats it in 30 % of them. Without a logistic restart
    (``init="random"``) the plain argmax of :func:`~._family_rule.rank_candidates` (the best mean
    fold metric, ties the lower mean loss). ``plain`` (``selection_se=0``) is the plain argmax of the
    out-of-fold metric (``win=0``: any gain over the start is enough; ``guard=0``: a tie keeps the start).

    Returns
    -------
    dict
        ``epochs`` (the grid), ``fold_metric`` and ``fold_loss`` of shape (folds, n_restarts,
        n_epochs) (NaN where not a candidate), ``mean_metric``, ``mean_loss``; with a logistic
        restart ``pooled_metric`` (the out-of-fold metric) and ``win_share`` (how often each
        candidate beats the start over the resamples), ``decided_by`` ("metric", "loss" or
        "start") and ``rule`` (the decision in words), else these are None; ``restart``,
        ``epochs_`` (the chosen count) and ``start`` ("logistic" or "random").
    """
    grid = epoch_grid(max_epochs)
    position = {int(e): i for i, e in enumerate(grid)}
    seeds = restart_seeds(seed, n_restarts)
    logistic = logistic_restarts(init, n_restarts)
    metric = np.full((folds, n_restarts, len(grid)), np.nan)
    loss = np.full_like(metric, np.nan)
    oof = np.full((n_restarts, len(grid), len(yt)), np.nan)
    y_np = yt.cpu().numpy()
    for k, (fit_rows, held_rows) in enumerate(k_folds(y_np, None, folds, seed)):
        fit = FoldData(Xt, yt, fit_rows, sample_weight)
        held = FoldData(Xt, yt, held_rows, sample_weight, in_subset=in_subset)
        for r in range(n_restarts):
            def keep_scores(column, scores, r=r, rows=held_rows):  # this fold's rows of the out-of-fold scores
                oof[r, column, rows] = scores

            start = build_start(factory, fit, seeds[r][0], logistic[r])
            scored_run(start, fit, held, settings, max_epochs=max_epochs, shuffle_seed=seeds[r][1], position=position,
                       metric_row=metric[k, r], loss_row=loss[k, r], score_start=logistic[r], scores_out=keep_scores)
    mean_metric, mean_loss = metric.mean(axis=0), loss.mean(axis=0)
    record = dict(pooled_metric=None, win_share=None, decided_by=None, rule=None)
    if any(logistic):
        start = (logistic.index(True), 0)
        (restart, column), record = select_out_of_fold(
            oof, loss, y_np == 1, settings["objective"], settings["target"], start,
            sample_weight=sample_weight, seed=seed, **({"win": 0.0, "guard": 0.0} if plain else {}),
            label=lambda index: f"restart {index[0]} after {grid[index[1]]} epochs")
        record.pop("mean_loss")
    else:  # one candidate axis: rank_candidates' candidate and start keys are constant
        first = rank_candidates(mean_metric[None], mean_loss[None], np.zeros(mean_metric.shape))[0]
        restart, column = np.unravel_index(first, mean_metric.shape)
    return dict(epochs=grid, fold_metric=metric, fold_loss=loss, mean_metric=mean_metric, mean_loss=mean_loss,
                **record, restart=int(restart), epochs_=int(grid[column]),
                start="logistic" if logistic[restart] else "random")
