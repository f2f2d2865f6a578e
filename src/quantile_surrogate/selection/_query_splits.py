"""Held-out selection for rankers: splits that keep every query whole, and the held-out precision@k curve.

The rows of a query are scored together (precision@k is a property of a query's ranking), so a
held-out split draws *queries*, never rows: :func:`query_shuffle_splits`. It is the query-level
twin of :func:`~quantile_surrogate.selection._splits.shuffle_splits` (which stratifies rows by
class): here the strata are the queries that count for precision@k (:func:`live_queries`) and the
others, so that both sides of every split hold queries the loss can learn from.
:class:`QueryCurve` is the ranking twin of :class:`~quantile_surrogate.selection._scorer.HeldOutCurve`:
called after each round with the held-out scores, it records the held-out mean precision@k per
query and the surrogate loss, and says when to stop; the number of rounds is then chosen by
:func:`~quantile_surrogate.selection._start_rule.select_rounds`, as for every boosted estimator.
"""

from __future__ import annotations

import numpy as np
import torch

from ..losses.ranking import counting_queries, precision_at_k_loss
from ..metrics.ranking import precision_at_k_per_query

__all__ = ["QueryCurve", "live_queries", "query_shuffle_splits"]


def live_queries(relevant, codes, k: int) -> np.ndarray:
    """Whether each query ``0..Q-1`` counts for precision@k: ``n_q > k`` and ``0 < relevant rows < n_q``.

    The rule of :func:`~quantile_surrogate.losses.precision_at_k_loss` (elsewhere the metric does
    not depend on the scores). ``relevant`` is a bool array, ``codes`` integer codes, one per row.

    Examples
    --------
    >>> live_queries(np.array([1, 0, 0, 1, 1, 0]), np.array([0, 0, 0, 1, 1, 2]), 1).tolist()
    [True, False, False]
    """
    sizes = np.bincount(codes)
    hits = np.bincount(codes, weights=np.asarray(relevant, dtype=np.float64), minlength=sizes.size)
    return counting_queries(sizes, hits, k)


def query_shuffle_splits(codes, live, *, fraction: float, n_splits: int, seed: int) -> list:
    """``n_splits`` (fit, held-out) row-index pairs that hold out whole queries, or [] with fewer than 2 live queries.

    Each split holds out ``round(fraction m)`` of the ``m`` live queries (at least 1, at most
    ``m - 1``) and ``round(fraction m')`` of the ``m'`` others, drawn from
    ``numpy.random.default_rng(seed)``; a query's rows are all on one side. The indices are
    ascending, so rows sorted by query stay sorted (and each query's rows consecutive).

    Examples
    --------
    >>> codes = np.repeat(np.arange(5), 3)
    >>> fit, held = query_shuffle_splits(codes, np.ones(5, bool), fraction=0.4, n_splits=1, seed=0)[0]
    >>> len(held), sorted(set(codes[fit]) & set(codes[held]))  # two queries of 3 rows, none on both sides
    (6, [])
    """
    codes = np.asarray(codes)
    live = np.asarray(live, dtype=bool)
    live_ids, other_ids = np.flatnonzero(live), np.flatnonzero(~live)
    if live_ids.size < 2:
        return []
    n_live = int(min(max(round(fraction * live_ids.size), 1), live_ids.size - 1))
    n_other = int(round(fraction * other_ids.size))
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n_splits):
        held = np.zeros(live.size, dtype=bool)
        held[rng.permutation(live_ids)[:n_live]] = True
        held[rng.permutation(other_ids)[:n_other]] = True
        rows = held[codes]
        pairs.append((np.flatnonzero(~rows), np.flatnonzero(rows)))
    return pairs


class QueryCurve:
    """After each round: the held-out mean precision@k per query and the surrogate loss, and when to stop.

    Called with the held-out scores; returns True once ``patience`` rounds have passed since the
    first round that reached the best metric (never with ``patience=None``), as
    :class:`~quantile_surrogate.selection._scorer.HeldOutCurve`. The metric is
    :func:`~quantile_surrogate.metrics.precision_at_k_per_query` (the queries with a relevant row);
    the loss is :func:`~quantile_surrogate.losses.precision_at_k_loss` (``reduction="mean"``,
    the tie-break of :func:`~quantile_surrogate.selection._start_rule.select_rounds`). Non-finite
    scores (a diverged model) record ``(-inf, inf)``.
    """

    def __init__(self, relevant, codes, k: int, loss_settings: dict, patience):
        self.relevant, self.codes, self.k = np.asarray(relevant, dtype=bool), np.asarray(codes), k
        self.loss_settings, self.patience = loss_settings, patience
        self.rows = []

    def score(self, scores) -> tuple:
        """``(metric, loss)`` of held-out ``scores``."""
        scores = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(scores).all():
            return -np.inf, np.inf
        metric = precision_at_k_per_query(self.relevant, scores, self.codes, self.k)
        with torch.no_grad():
            loss = precision_at_k_loss(torch.as_tensor(scores), torch.as_tensor(self.relevant), self.k,
                                       query=torch.as_tensor(self.codes), **self.loss_settings)
        return float(metric), float(loss)

    def __call__(self, scores) -> bool:
        self.rows.append(self.score(scores))
        first_best = int(np.argmax([m for m, _ in self.rows]))
        return self.patience is not None and len(self.rows) - 1 - first_best >= self.patience

    def values(self) -> np.ndarray:
        """The recorded ``(metric, loss)`` rows, shape (rounds + 1, 2): round 0 is the start."""
        return np.array(self.rows, dtype=np.float64).reshape(-1, 2)
