r"""The exact threshold of :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold` on Dask (private).

:class:`~quantile_surrogate.estimators.dask_boosted.DaskQuantileBoostingClassifier` sets
``threshold_`` from its training scores, which stay on the workers, one block per partition. The
threshold is, with ``k`` rows of ``A`` allowed above it
(:func:`~quantile_surrogate.objectives.thresholds.allowed_count`),

.. math::
    \theta = \tfrac12\big(s_{[k]} + \max\{s < s_{[k]}\}\big) \ (\text{a floor}), \qquad
    \theta = \tfrac12\big(s_{[k+1]} + \min\{s > s_{[k+1]}\}\big) \ (\text{a ceiling}),

``s_[j]`` the j-th largest score of ``A`` and the max and min over every row (``constraint_threshold``'s
Notes give the tie policy and the degenerate cases, followed here one for one). Only two things cross
the partitions:

1. **The order statistic**, by the histogram refinement of
   :func:`~quantile_surrogate.boosting._collective.select_ranks` (the same order-preserving uint64
   keys, the same bin edges ``_edges`` and counts ``_bin_counts``, the same interval update), driven
   from the client: each round is one Dask computation in which every partition returns its bins'
   counts and the smallest and largest key in each bin (at most ``3 x 1024`` numbers); the client sums
   and takes the extremes and picks the bin holding the rank. ``select_ranks`` spends two allreduces a
   round (counts, then the chosen bin's extremes) because inside XGBoost's communicator a reduction is
   cheap; through the scheduler a round trip costs more than the bytes, so both go in one. At most 8
   rounds, 1 to 3 in practice.
2. **The neighbours**: one more computation gives ``max{s < s_[k]}``, ``min{s > s_[k]}`` and the
   counts of ``A`` at the boundary (a third, ``#{A: s > theta}``, only when rows of ``A`` tie at it,
   for :class:`~quantile_surrogate.objectives.TiedScoresWarning`).

With row weights (frequency weights, ``constraint_threshold``'s ``sample_weight``) rows of weight 0 are
absent, the count ``k`` is a weight, and the order statistic is found by weight: each partition's bins
carry their rows' weight (from the sorted keys' cumulative weights, kept beside them), and the boundary
is the smallest value whose cumulative weight from below reaches ``W - k`` (or exceeds it), which is
where the weight of ``A`` from the top first passes ``k`` (or reaches it), with ``constraint_threshold``'s
slack of ``1e-9 W``.

The sorted keys of each partition's rows of ``A`` are computed once and kept on their worker as
futures; nothing of size ``n`` reaches the client. tests/estimators/test_dask_estimator.py holds the
result equal, bit for bit and warning for warning, to ``constraint_threshold`` on the gathered scores.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._utils.checks import check_target
from ..boosting._collective import _TOP, SELECTION_BINS, _bin_bounds, float_keys, key_values, rank_bin, refine_ranks
from ..objectives import get_objective
from ..objectives.thresholds import (EMPTY_CONSTRAINT_MESSAGE, TIE_POLICY, TIED_SCORES_MESSAGE, TiedScoresWarning,
                                     allowed_count)

__all__ = ["dask_constraint_threshold", "dask_select_keys"]


# -- what each partition computes (on its worker) ---------------------------------------------------
def _present(scores, labels, weights):
    """``(scores, labels)`` as float64 and bool positives, rows of weight 0 dropped (``weights`` None: every row)."""
    scores, positive = np.asarray(scores, dtype=np.float64), np.asarray(labels) == 1
    if weights is None:
        return scores, positive
    keep = np.asarray(weights) > 0
    return scores[keep], positive[keep]


def _subset_keys(scores, labels, objective: str, weights=None):
    """The ascending keys of this partition's rows of ``A``; with ``weights``, ``(keys, cumulative weights, 0 first)``."""
    in_subset = get_objective(objective).subset_mask(np.asarray(labels) == 1)
    if weights is None:
        return np.sort(float_keys(np.asarray(scores, dtype=np.float64)[in_subset]))
    in_subset = in_subset & (np.asarray(weights) > 0)
    keys = float_keys(np.asarray(scores, dtype=np.float64)[in_subset])
    order = np.argsort(keys, kind="stable")
    return keys[order], np.concatenate([[0.0], np.cumsum(np.asarray(weights, dtype=np.float64)[in_subset][order])])


def _key_span(block) -> tuple:
    """``(rows of A, smallest key, largest key, weight of A)``; an empty partition gives ``(0, TOP, 0, 0.0)``."""
    keys, prefix = block if isinstance(block, tuple) else (block, None)
    mass = float(keys.size) if prefix is None else float(prefix[-1])
    return (int(keys.size), int(keys[0]), int(keys[-1]), mass) if keys.size else (0, _TOP, 0, 0.0)


def _bin_stats(block, edges: list) -> list:
    """Per rank sought: the counts of ``_bin_counts`` (with weights: the bins' weights) and each bin's smallest and
    largest key (TOP, 0 if empty)."""
    keys, prefix = block if isinstance(block, tuple) else (block, None)
    out = []
    for edge in edges:
        bounds = _bin_bounds(keys, edge)
        counts = np.diff(bounds)
        filled = counts > 0
        lows = np.full(counts.size, _TOP, dtype=np.uint64)
        highs = np.zeros(counts.size, dtype=np.uint64)
        lows[filled], highs[filled] = keys[bounds[:-1][filled]], keys[bounds[1:][filled] - 1]
        out.append((counts.astype(np.int64) if prefix is None else np.diff(prefix[bounds]), lows, highs))
    return out


def _neighbours(scores, labels, objective: str, boundary: float, weights=None) -> tuple:
    """``(max{s < b}, min{s > b}, #{A: s == b}, min s)`` over this partition (``-inf`` / ``inf`` when none)."""
    scores, positive = _present(scores, labels, weights)
    below, above = scores[scores < boundary], scores[scores > boundary]
    in_subset = get_objective(objective).subset_mask(positive)
    return (float(below.max()) if below.size else -np.inf, float(above.min()) if above.size else np.inf,
            int(np.count_nonzero(scores[in_subset] == boundary)), float(scores.min()) if scores.size else np.inf)


def _subset_above(scores, labels, objective: str, theta: float, weights=None) -> float:
    """``#{A: s > theta}`` in this partition (with weights: their sum)."""
    in_subset = get_objective(objective).subset_mask(np.asarray(labels) == 1)
    above = in_subset & (np.asarray(scores, dtype=np.float64) > theta)
    return float(np.count_nonzero(above) if weights is None else np.asarray(weights, dtype=np.float64)[above].sum())


# -- the client's side ----------------------------------------------------------------------------
def dask_select_keys(client, key_blocks, ranks, span, bins: int = SELECTION_BINS, side: str = "left") -> list[int]:
    """The keys of the global order statistics of the 1-based ``ranks`` over ``key_blocks`` (futures of sorted keys).

    ``span`` is the global ``(smallest, largest)`` key. The interval loop of
    :func:`~quantile_surrogate.boosting._collective.refine_ranks`, one Dask computation a round.
    Blocks of ``(keys, cumulative weights)`` make the ranks masses: the smallest value whose cumulative
    weight reaches each (``side="right"``: exceeds it).
    """
    def one_round(edges, belows, targets):
        parts = client.gather(client.map(_bin_stats, key_blocks, edges=edges, pure=False))
        updated = []
        for slot, (below, rank) in enumerate(zip(belows, targets)):
            counts = np.sum([part[slot][0] for part in parts], axis=0)
            lows = np.minimum.reduce([part[slot][1] for part in parts])
            highs = np.maximum.reduce([part[slot][2] for part in parts])
            j, under = rank_bin(counts, below, rank, side)
            updated.append((int(lows[j]), int(highs[j]), under))
        return updated

    return refine_ranks(ranks, span, bins, one_round)


def _per_partition(function, scores, labels, weights, *args) -> list:
    """Delayed ``function(score block, label block, *args[, weights=block])``, one per partition."""
    from dask import delayed

    blocks = [None] * scores.numblocks[0] if weights is None else weights.to_delayed().ravel()
    return [delayed(function, pure=True)(s, y, *args, **({} if w is None else {"weights": w}))
            for s, y, w in zip(scores.to_delayed().ravel(), labels.to_delayed().ravel(), blocks)]


def _boundary(client, key_blocks, spans, spec, total: float, k, weighted: bool) -> float | None:
    """``s_[k]`` (a floor) or ``s_[k+1]`` (a ceiling) of ``A``, by count or by weight (module docstring); None when a
    ceiling allows every row of ``A``.

    From below: the first value whose cumulative count (weight) reaches ``W - k`` for a ceiling, or exceeds
    it for a floor; with weights ``constraint_threshold``'s slack moves the mass (sums of floats), counts are
    exact.
    """
    span = (min(s[1] for s in spans), max(s[2] for s in spans))
    slack = 1e-9 * total if weighted else 0.0
    if spec.bound == "at_most":  # from the top, the weight first exceeds k + slack
        mass = total - k - slack
        if mass <= 0:
            return None
        return float(key_values(dask_select_keys(client, key_blocks, [mass], span))[0])
    mass = min(total - k + slack, total)  # from the top, the weight first reaches k - slack
    return float(key_values(dask_select_keys(client, key_blocks, [mass], span, side="right"))[0])


def dask_constraint_threshold(client, scores, labels, *, objective: str, target: float, weights=None) -> float:
    """:func:`~quantile_surrogate.objectives.thresholds.constraint_threshold` of Dask arrays, computed on their workers.

    Parameters
    ----------
    client : distributed.Client
    scores : dask.array.Array of shape (n,), float
        Finite scores; persist them first if they are expensive (they are read 2 or 3 times).
    labels : dask.array.Array of shape (n,)
        Labels in {0, 1}, chunked as ``scores``.
    objective : str
    target : float
    weights : dask.array.Array of shape (n,) or None
        Checked frequency weights (``constraint_threshold``'s ``sample_weight``), chunked as ``scores``.

    Returns
    -------
    float
        Equal to ``constraint_threshold`` of the gathered arrays, with the same
        :class:`~quantile_surrogate.objectives.TiedScoresWarning`.
    """
    spec = get_objective(objective)
    target = check_target(target, "target")
    key_blocks = client.compute(_per_partition(_subset_keys, scores, labels, weights, spec.name))  # on the workers
    spans = client.gather(client.map(_key_span, key_blocks))
    total = float(sum(s[3] for s in spans))
    if total == 0:
        raise ValueError(EMPTY_CONSTRAINT_MESSAGE.format(
            objective=objective, weighted="" if weights is None else " of positive `sample_weight`"))
    k = allowed_count(spec, total, target)
    boundary = _boundary(client, key_blocks, spans, spec, total, k, weights is not None)
    if boundary is None:  # every row of A allowed: below every score
        found = client.gather(client.compute(_per_partition(_neighbours, scores, labels, weights, spec.name, 0.0)))
        return float(min(f[3] for f in found) - 1.0)
    found = client.gather(client.compute(_per_partition(_neighbours, scores, labels, weights, spec.name, boundary)))
    lower, higher = max(f[0] for f in found), min(f[1] for f in found)
    tied = sum(f[2] for f in found)
    if spec.bound == "at_most":
        theta = float((boundary + higher) / 2 if np.isfinite(higher) else boundary + 1.0)
    else:
        theta = float((boundary + lower) / 2 if np.isfinite(lower) else boundary - 1.0)
    if tied > 1:  # only rows tied at the boundary are the warning's subject (constraint_threshold's rule)
        counts = client.compute(_per_partition(_subset_above, scores, labels, weights, spec.name, theta))
        above = float(sum(client.gather(counts)))
        if abs(above - k) > 1e-9 * total:
            warnings.warn(TIED_SCORES_MESSAGE.format(
                above=f"{above:g}", size=f"{total:g}", subset=spec.subset, achieved=above / total, target=target,
                bound="at least" if spec.bound == "at_least" else "at most", wanted=f"{k:g}",
                policy=TIE_POLICY[spec.bound]), TiedScoresWarning, stacklevel=2)
    return theta
