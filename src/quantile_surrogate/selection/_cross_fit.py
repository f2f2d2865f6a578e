"""The fold fits of :class:`~quantile_surrogate.QuantileClassifierCV` (private).

One task per (model family, fold): the family's starts are built once on the fold's training
rows (the logistic start by L-BFGS is about half the cost of a 200-epoch full-batch run of the
MLP, and it does not depend on ``alpha`` or ``bandwidth``), then every ``alpha`` x
``bandwidth`` candidate trains each restart from those starts for ``max_epochs`` epochs and is
scored on the held-out fold after each epoch count of :func:`~._quantile_fit.epoch_grid`. So one
training run per (candidate, fold, restart) scores every epoch count; no candidate is fitted
twice and no inner selection runs inside a fold. The choice from those held-out values is
:func:`select_by_family`: the start rule of :mod:`._start_rule` inside each model family, then the
family with the higher mean where the difference is larger than its noise, else the one with the
higher held-out average precision.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from sklearn.metrics import average_precision_score

from ..metrics._held_out import held_out_average_precision, held_out_metric
from ..objectives import get_objective, objective_loss, objective_metric, predict_scores
from ..training import train
from .._utils.seeding import restart_seeds, seed_torch
from ..training.models import fit_logistic
from ._start_rule import metric_noises, select_over_start

__all__ = ["FoldData", "build_start", "family_fold", "logistic_restarts", "rank_candidates", "scored_run",
           "select_by_family", "select_entries"]


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
        seed_torch(model_seed)
        model = factory().to(device=data.X.device, dtype=data.X.dtype)
    if logistic:
        if data.weight is None:
            fit_logistic(model, data.X, data.y, alpha=1 / data.X.shape[0])
        else:
            fit_logistic(model, data.X, data.y, alpha=1 / float(data.weight.sum()), sample_weight=data.weight)
    return model


def held_out_value(model, held: FoldData, settings: dict, *, average_precision: bool = False) -> tuple:
    """(exact metric, surrogate loss) on the held-out rows, weighted and per group where given.

    With ``average_precision=True`` a third value, the held-out average precision (weighted,
    over all rows; the family comparison of :func:`select_by_family` reads it).
    """
    with torch.no_grad():
        scores = predict_scores(model, held.X)
        if not bool(torch.isfinite(scores).all()):
            return (-np.inf, np.inf, -np.inf)[:3 if average_precision else 2]
        extra = {}
        if held.codes is not None:
            extra.update(groups=held.codes, threshold_groups=held.codes[held.in_subset])
        if held.weight is not None:
            extra.update(weight=held.weight, threshold_weight=held.weight[held.in_subset])
        loss = objective_loss(scores, held.y, objective=settings["objective"], target=settings["target"],
                              threshold_scores=scores[held.in_subset], form=settings["form"],
                              quantile=settings["quantile"], bandwidth=settings["bandwidth"],
                              surrogate=settings["surrogate"], **extra).loss
    scores = scores.double().cpu().numpy()
    if held.codes_np is None and held.weight_np is None:  # one sort, not sklearn's checked curve (many calls)
        metric = held_out_metric(held.y_np == 1, scores, get_objective(settings["objective"]).name, settings["target"])
    else:
        metric = objective_metric(held.y_np, scores, objective=settings["objective"], target=settings["target"],
                                  groups=held.codes_np, sample_weight=held.weight_np)
    if not average_precision:
        return float(metric), float(loss)
    if held.weight_np is None:
        ranking = held_out_average_precision(held.y_np == 1, scores)
    elif held.weight_np[held.y_np == 1].sum() > 0:
        ranking = average_precision_score(held.y_np, scores, sample_weight=held.weight_np)
    else:
        ranking = np.nan
    return float(metric), float(loss), float(ranking)


def train_from(start, data: FoldData, settings: dict, max_epochs: int, shuffle_seed: int, callback=None):
    """:func:`~quantile_surrogate.training.train` from ``start`` as it is (``init="model"``), one restart."""
    extra = {} if data.weight is None else {"sample_weight": data.weight}
    return train(start, data.X, data.y, groups=data.codes, max_epochs=max_epochs, n_restarts=1, init="model",
                 callback=callback, random_state=shuffle_seed, **extra, **settings)


def scored_run(start, fit: FoldData, held: FoldData, settings: dict, *, max_epochs, shuffle_seed, position,
               metric_row, loss_row, score_start: bool, ranking_row=None):
    """Train ``start`` on ``fit`` and score it on ``held`` at every epoch count of ``position`` (epoch -> column).

    Fills ``metric_row`` and ``loss_row`` (views of length ``len(position)``), and ``ranking_row``
    with the average precision where given, with :func:`held_out_value`; column 0, the start as it
    is, only with ``score_start`` (a logistic start is a candidate, a random one is not).
    """
    rows = (metric_row, loss_row) if ranking_row is None else (metric_row, loss_row, ranking_row)

    def fill(model, i):
        for row, value in zip(rows, held_out_value(model, held, settings, average_precision=ranking_row is not None)):
            row[i] = value

    if score_start:
        fill(start, 0)

    def record(info):
        i = position.get(int(info["epoch"]))
        if i is not None:
            fill(info["model"], i)

    train_from(start, fit, settings, max_epochs, shuffle_seed, record)


def family_fold(factory, candidates, fit: FoldData, held: FoldData, *, grid, seed, n_restarts, init, max_epochs):
    """Held-out (metric, loss, average precision) of shape (n_candidates, n_restarts, n_epochs) and seconds per candidate.

    ``candidates`` are train-settings dicts (without ``random_state``) of one model family.
    Restart ``r`` has model seed ``restart_seeds(seed, n_restarts)[r][0]`` and trains with
    ``random_state`` its shuffling seed, in every fold and candidate (and in the refit).
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


def select_entries(metric, loss, is_start, reference, held_labels, objective, target, n_se, held_weights=None) -> tuple:
    """The chosen (candidate, restart, epoch) and each candidate's own entry, by the start rule.

    ``metric`` and ``loss`` have the shape (candidates, folds, restarts, epochs), ``is_start``
    (restarts, epochs) marks the logistic starts as they are (epoch 0 of a logistic restart); ``reference``
    is the (candidate, restart, epoch) of the start that is kept unless beaten (a family's
    logistic start as it is, in :func:`select_by_family`), or None (no logistic restart: the
    plain argmax of :func:`rank_candidates`). An entry is *eligible* when its mean held-out gain over the
    reference passes :func:`~._start_rule.select_over_start` with ``z = n_se`` and the
    reference's and the entry's binomial noise on each held-out fold (:func:`~._start_rule.metric_noises` of
    ``held_labels[k]``); the first eligible entry in the order of :func:`rank_candidates` (so the
    largest gain, ties to a logistic start as it is, the earlier candidate, the lower loss) wins,
    and with none eligible the reference stays. A candidate's own entry is its first eligible
    entry in that order, else its first logistic start as it is (the reference for the
    reference's candidate).

    Returns
    -------
    (chosen, entries, record) : tuple
        ``chosen`` a candidate index, ``entries`` a list of (restart, epoch) per candidate, and
        ``record`` the rule's dict (``mean_gain``, ``gain_se``, ``bar``, ``eligible`` of shape
        (candidates, restarts, epochs), ``noise_floor``, ``noise`` per fold), None without a reference.
    """
    mean_metric, mean_loss = metric.mean(axis=1), loss.mean(axis=1)
    order = rank_candidates(mean_metric, mean_loss, is_start)
    per = int(np.prod(mean_metric.shape[1:]))
    if reference is None:  # no logistic start to keep: the best mean, as the ranking orders it
        entries = {}
        for flat in order:
            entries.setdefault(int(flat // per), np.unravel_index(flat % per, mean_metric.shape[1:]))
        entries = [tuple(int(i) for i in entries[c]) for c in range(metric.shape[0])]
        return int(order[0] // per), entries, None
    weights = held_weights if held_weights is not None else [None] * len(held_labels)
    folds_first = np.moveaxis(metric, 1, 0)
    own = np.stack([metric_noises(objective, target, labels, folds_first[k], weights[k])
                    for k, labels in enumerate(held_labels)])
    noise = own[(slice(None), *reference)]  # the reference's own noise on each fold
    _, record = select_over_start(folds_first, np.moveaxis(loss, 1, 0), reference, noise, n_se, own)
    eligible = record["eligible"].ravel()
    ranked = [int(flat) for flat in order if eligible[flat]]
    first_logistic = int(reference[1])
    entries = [(first_logistic, 0)] * metric.shape[0]
    for flat in reversed(ranked):  # reversed, so that each candidate keeps its first eligible entry
        entries[flat // per] = tuple(int(i) for i in np.unravel_index(flat % per, mean_metric.shape[1:]))
    chosen = ranked[0] // per if ranked else int(reference[0])
    return int(chosen), entries, dict(record, noise=noise)


def select_by_family(metric, loss, is_start, families, held_labels, objective, target, n_se, held_weights=None,
                     ranking=None) -> tuple:
    r"""The start rule inside each model family, then the family whose entry is clearly better, else the better ranked.

    ``families`` lists the candidate indices of each family (linear first). Family ``f``'s
    reference is its own logistic start as it is (its first candidate, first logistic restart,
    epoch 0), and :func:`select_entries` picks its entry :math:`x_f` among its own candidates
    alone. Between the families, with :math:`m_k(x)` the held-out metric on fold :math:`k` and
    :math:`b` the family with the highest mean (the earliest of equal means):

    - a family :math:`f` is *within noise* of :math:`b` when
      :math:`\bar m(x_b) - \bar m(x_f) \le z \max(\hat\sigma_{bf},\ \sigma_{0,b},\ \sigma_{0,f})`, with
      :math:`\hat\sigma_{bf}` the standard error of the :math:`K` paired fold differences and
      :math:`\sigma_{0,f}` family ``f``'s binomial noise floor (``noise_floor``; :math:`z` = ``n_se``);
    - among :math:`b` and the families within noise of it, the one whose entry has the highest
      mean held-out average precision (``ranking``) wins, a tie going to the earlier family.

    So the exact metric decides when it can tell the families apart, and a difference of a
    row or two among the few held-out rows at the operating point does not: average precision
    ranks every held-out positive, so its noise is far smaller. ``ranking`` has the shape of
    ``metric``; without it the earliest family within noise wins. With ``n_se=0`` only exact ties
    are within noise. Without a logistic restart, :func:`select_entries` over all candidates.

    Returns
    -------
    (chosen, entries, record) : tuple
        As :func:`select_entries`; ``record`` holds ``mean_gain``, ``gain_se``, ``bar`` and
        ``eligible`` (each entry against its own family's start), ``noise`` (families, folds),
        ``noise_floor`` and ``references`` (one per family), ``family_means`` and
        ``family_average_precision`` (the mean held-out metric and average precision of each
        family's entry), ``family_bar`` (each family's bar against :math:`b`) and
        ``family_within_noise`` (:math:`b` and the families within noise of it); None without a
        logistic restart.
    """
    if not is_start.any():
        return select_entries(metric, loss, is_start, None, held_labels, objective, target, n_se, held_weights)
    first = int(np.flatnonzero(is_start[:, 0])[0])
    entries, winners, record = [None] * metric.shape[0], [], {}
    keys = ("mean_gain", "gain_se", "bar", "eligible")
    for members in families:
        members = [int(c) for c in members]
        own = np.full_like(metric, np.nan)
        own[members] = metric[members]  # the other families' entries do not exist here
        reference = (members[0], first, 0)
        c, found, part = select_entries(own, loss, is_start, reference, held_labels, objective, target, n_se,
                                        held_weights)
        for m in members:
            entries[m] = found[m]
        for key in keys:
            record.setdefault(key, np.zeros_like(part[key]))[members] = part[key][members]
        for key, value in (("noise", part["noise"]), ("noise_floor", part["noise_floor"]),
                           ("references", reference)):
            record.setdefault(key, []).append(value)
        winners.append(c)
    folds = np.array([metric[(c, slice(None), *entries[c])] for c in winners])  # (families, folds)
    with np.errstate(invalid="ignore"):
        means = np.where(np.isfinite(folds).all(axis=1), folds.mean(axis=1), -np.inf)  # a diverged start never wins
    ranks = (np.full(len(winners), -np.inf) if ranking is None else
             np.nan_to_num([np.mean(ranking[(c, slice(None), *entries[c])]) for c in winners], nan=-np.inf))
    best = int(np.argmax(means))
    floors = np.asarray(record["noise_floor"], dtype=np.float64)
    bars, within = np.zeros(len(winners)), np.zeros(len(winners), dtype=bool)
    for f in (f for f in range(len(winners)) if f != best):
        gaps = folds[best] - folds[f]
        spread = gaps.std(ddof=1) / np.sqrt(gaps.size) if gaps.size > 1 and np.isfinite(gaps).all() else 0.0
        bars[f] = n_se * max(spread, floors[best], floors[f])
        within[f] = np.isfinite(means[f]) and means[best] - means[f] <= bars[f]
    within[best] = True
    contenders = np.flatnonzero(within)
    chosen = winners[int(contenders[np.argmax(ranks[contenders])])]  # argmax: the earliest of equal ranks
    record.update(family_means=means, family_average_precision=ranks, family_bar=bars, family_within_noise=within)
    return int(chosen), entries, {k: (np.asarray(v) if k in ("noise", "noise_floor") else v)
                                 for k, v in record.items()}
