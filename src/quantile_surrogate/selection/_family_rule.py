r"""The family rule of :class:`~quantile_surrogate.QuantileClassifierCV`: the start rule in each model family, then between families.

Variants of the one core of :mod:`._start_rule` (:func:`~._start_rule.clears_bar`) over held-out
values of shape (candidates, folds, restarts, epoch counts): :func:`rank_candidates` orders the
entries (the plain argmax, the variant without a reference), :func:`select_entries` applies the
start rule against one reference, :func:`select_by_family` does so inside each family and then
compares the families. Why, with the measurements: ``docs/selection.md``.
"""

from __future__ import annotations

import numpy as np

from ._start_rule import clears_bar, metric_noises, paired_se, select_over_start

__all__ = ["describe_choice", "rank_candidates", "select_by_family", "select_entries"]


def rank_candidates(mean_metric, mean_loss, is_start) -> np.ndarray:
    """Flat indices of (candidate, restart, epoch) from best to worst: the plain argmax order.

    Best mean held-out metric first; ties go to a logistic start as it is (a tie says nothing
    against it), then to the earlier candidate of the grid, then to the lower mean held-out
    loss. NaN (a value that is not a candidate, or an undefined metric) sorts last.

    Examples
    --------
    >>> mean_metric = np.array([[[0.5, 0.7]], [[0.7, 0.6]]])  # (candidates, restarts, epochs); epoch 0 a start
    >>> rank_candidates(mean_metric, np.zeros((2, 1, 2)), np.array([[1.0, 0.0]])).tolist()  # the 0.7 tie: the start
    [2, 1, 3, 0]
    """
    shape = mean_metric.shape
    candidate = np.broadcast_to(np.arange(shape[0])[:, None, None], shape)
    start = np.broadcast_to(is_start[None], shape)
    return np.lexsort((np.nan_to_num(mean_loss, nan=np.inf).ravel(), candidate.ravel(), -start.ravel(),
                       -np.nan_to_num(mean_metric, nan=-np.inf).ravel()))


def _entries(order, per, inner_shape, n_candidates, default=None) -> list:
    """Each candidate's first entry (restart, epoch) in ``order`` (flat indices), else ``default``."""
    entries = [default] * n_candidates
    for flat in reversed(order):  # reversed, so that each candidate keeps its first entry
        entries[flat // per] = tuple(int(i) for i in np.unravel_index(flat % per, inner_shape))
    return entries


def select_entries(metric, loss, is_start, reference, held_labels, objective, target, n_se, held_weights=None) -> tuple:
    """The chosen (candidate, restart, epoch) and each candidate's own entry, by the start rule.

    ``metric`` and ``loss`` have the shape (candidates, folds, restarts, epochs), ``is_start``
    (restarts, epochs) marks the logistic starts as they are; ``reference`` is the (candidate,
    restart, epoch) kept unless beaten, or None (no logistic restart: the plain argmax of
    :func:`rank_candidates`). An entry is *eligible* when it passes
    :func:`~._start_rule.select_over_start` against the reference with ``z = n_se`` and both
    models' binomial noise on each held-out fold (:func:`~._start_rule.metric_noises` of
    ``held_labels[k]``, weighted with ``held_weights[k]``); the first eligible entry in the order of
    :func:`rank_candidates` wins, and with none the reference stays. A candidate's own entry is its
    first eligible entry in that order, else the reference's restart at epoch 0.

    Returns
    -------
    (chosen, entries, record) : tuple
        ``chosen`` a candidate index, ``entries`` a list of (restart, epoch) per candidate, and
        ``record`` the rule's dict (``mean_gain``, ``gain_se``, ``bar``, ``eligible`` of shape
        (candidates, restarts, epochs), ``noise_floor``, ``noise`` per fold), None without a reference.
    """
    mean_metric, mean_loss = metric.mean(axis=1), loss.mean(axis=1)
    order = rank_candidates(mean_metric, mean_loss, is_start)
    inner = mean_metric.shape[1:]
    per = int(np.prod(inner))
    if reference is None:  # no logistic start to keep: the best mean, as the ranking orders it
        return int(order[0] // per), _entries([int(f) for f in order], per, inner, metric.shape[0]), None
    weights = held_weights if held_weights is not None else [None] * len(held_labels)
    folds_first = np.moveaxis(metric, 1, 0)
    own = np.stack([metric_noises(objective, target, labels, folds_first[k], weights[k])
                    for k, labels in enumerate(held_labels)])
    noise = own[(slice(None), *reference)]  # the reference's own noise on each fold
    _, record = select_over_start(folds_first, np.moveaxis(loss, 1, 0), reference, noise, n_se, own)
    eligible = record["eligible"].ravel()
    ranked = [int(flat) for flat in order if eligible[flat]]
    entries = _entries(ranked, per, inner, metric.shape[0], default=(int(reference[1]), 0))
    chosen = ranked[0] // per if ranked else int(reference[0])
    return int(chosen), entries, dict(record, noise=noise)


def _family_entries(metric, loss, is_start, families, held_labels, objective, target, n_se, held_weights):
    """:func:`select_entries` inside each family against its own logistic start: (winners, entries, record)."""
    first = int(np.flatnonzero(is_start[:, 0])[0])
    entries, winners, record = [None] * metric.shape[0], [], {}
    for members in families:
        members = [int(c) for c in members]
        own = np.full_like(metric, np.nan)
        own[members] = metric[members]  # the other families' entries do not exist here
        reference = (members[0], first, 0)
        c, found, part = select_entries(own, loss, is_start, reference, held_labels, objective, target, n_se,
                                        held_weights)
        for m in members:
            entries[m] = found[m]
        for key in ("mean_gain", "gain_se", "bar", "eligible"):
            record.setdefault(key, np.zeros_like(part[key]))[members] = part[key][members]
        for key, value in (("noise", part["noise"]), ("noise_floor", part["noise_floor"]),
                           ("references", reference)):
            record.setdefault(key, []).append(value)
        winners.append(c)
    return winners, entries, record


def select_by_family(metric, loss, is_start, families, held_labels, objective, target, n_se, held_weights=None,
                     ranking=None) -> tuple:
    r"""The start rule inside each model family, then the family whose entry is clearly better, else the better ranked.

    ``families`` lists the candidate indices of each family (linear first). Family ``f``'s
    reference is its own logistic start as it is (its first candidate, first logistic restart,
    epoch 0), and :func:`select_entries` picks its entry :math:`x_f` among its own candidates.
    Between the families, with :math:`m_k(x)` the held-out metric on fold :math:`k` and :math:`b`
    the family with the highest mean (the earliest of equal means), a family :math:`f` is *within
    noise* of :math:`b` unless its deficit clears the core's bar (:func:`~._start_rule.clears_bar`):

    .. math::
        \bar m(x_b) - \bar m(x_f) > z \max(\hat\sigma_{bf},\ \sigma_{0,b},\ \sigma_{0,f}),

    :math:`\hat\sigma_{bf}` the standard error of the :math:`K` paired fold differences (0 where one
    is not finite), :math:`\sigma_{0,f}` family ``f``'s ``noise_floor`` and :math:`z` = ``n_se``. Among
    :math:`b` and the families within noise of it, the highest mean held-out average precision
    (``ranking``, of the shape of ``metric``) wins, a tie going to the earlier family; without
    ``ranking``, the earliest family within noise. Without a logistic restart,
    :func:`select_entries` over all candidates.

    Returns
    -------
    (chosen, entries, record) : tuple
        As :func:`select_entries`; ``record`` holds ``mean_gain``, ``gain_se``, ``bar`` and
        ``eligible`` (each entry against its own family's start), ``noise`` (families, folds),
        ``noise_floor`` and ``references`` (one per family), ``family_entries`` (the candidate of
        each family's entry), ``family_means`` and ``family_average_precision`` (of each family's
        entry), ``family_bar`` (each family's bar against :math:`b`) and ``family_within_noise``;
        None without a logistic restart.
    """
    if not is_start.any():
        return select_entries(metric, loss, is_start, None, held_labels, objective, target, n_se, held_weights)
    winners, entries, record = _family_entries(metric, loss, is_start, families, held_labels, objective, target,
                                               n_se, held_weights)
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
        spread = paired_se(gaps) if gaps.size > 1 and np.isfinite(gaps).all() else 0.0
        bars[f] = n_se * max(spread, floors[best], floors[f])
        within[f] = np.isfinite(means[f]) and not clears_bar(means[best] - means[f], bars[f])
    within[best] = True
    contenders = np.flatnonzero(within)
    chosen = winners[int(contenders[np.argmax(ranks[contenders])])]  # argmax: the earliest of equal ranks
    record.update(family_means=means, family_average_precision=ranks, family_bar=bars, family_within_noise=within,
                  family_entries=np.asarray(winners, dtype=np.intp))
    return int(chosen), entries, {k: (np.asarray(v) if k in ("noise", "noise_floor") else v)
                                 for k, v in record.items()}


def describe_choice(names, record, chosen: int) -> str:
    """One line on why family ``chosen`` (an index into ``names``) won, from :func:`select_by_family`'s ``record``.

    Examples
    --------
    >>> record = dict(family_means=np.array([0.27, 0.97]), family_bar=np.array([0.05, 0.0]),
    ...               family_within_noise=np.array([False, True]), family_average_precision=np.array([0.3, 0.9]))
    >>> describe_choice(["linear", "boosted"], record, 1)
    'boosted: the best held-out mean, 0.970; the others are below it by more than their noise bar (linear 0.270, bar 0.050)'
    >>> describe_choice(["linear"], dict(family_means=np.array([0.5]), family_bar=np.array([0.0]),
    ...                 family_within_noise=np.array([True]), family_average_precision=np.array([0.6])), 0)
    'linear: the only family, held-out mean 0.500'
    """
    means, bars = record["family_means"], record["family_bar"]
    within, ranks = record["family_within_noise"], record["family_average_precision"]
    best = int(np.argmax(means))
    if len(names) == 1:
        return f"{names[chosen]}: the only family, held-out mean {means[chosen]:.3f}"
    clear = ", ".join(f"{names[f]} {means[f]:.3f}, bar {bars[f]:.3f}" for f in range(len(names)) if not within[f])
    if within.sum() == 1:
        return (f"{names[chosen]}: the best held-out mean, {means[chosen]:.3f}; the others are below it by more "
                f"than their noise bar ({clear})")
    tied = ", ".join(f"{names[f]} mean {means[f]:.3f}, AP {ranks[f]:.3f}" for f in np.flatnonzero(within))
    line = (f"{names[chosen]}: the highest held-out average precision among the families within noise of the best "
            f"mean ({names[best]}): {tied}")
    return line + (f"; more than noise below: {clear}" if clear else "")

