r"""QuantileClassifier's K-fold rule: the exact metric where it can tell, the held-out loss where it cannot.

Every candidate (a restart after an epoch count, :mod:`._cross_fit`) has scored the rows of each
held-out fold; pooled, these are its *out-of-fold* scores, one per training row, and its
out-of-fold metric :math:`m(c)` is the objective's exact metric on all of them (one precision
over the top :math:`\lceil \tau n \rceil` of all ``n`` rows, not the mean of ``K`` precisions over
a third of them each). Its noise is measured by a *paired* bootstrap: ``B`` resamples of the rows,
the same resample for every candidate, give :math:`m_b(c)`, and

.. math::
    P(c \succ s) = \tfrac1B \#\{b : m_b(c) > m_b(s)\}

is how often candidate :math:`c` beats the logistic start :math:`s`. The choice:

1. **the metric decides** where it can: among the candidates with :math:`m(c) > m(s)` and
   :math:`P(c \succ s) \ge` ``win`` (default 0.9), the largest :math:`m(c)`;
2. otherwise the metric cannot tell them from the start, and **the held-out loss decides**: the
   candidate :math:`\ell` with the lowest mean held-out surrogate loss (the paper's objective at
   the operating point, eq. (9)-(10), with the held-out fold's own threshold), which is smooth and
   reads every held-out row;
3. **unless the start looks better**: the start stays when :math:`P(s \succ \ell) \ge` ``guard``
   (default 0.3), or when :math:`\ell` is the start.

Why (``docs/selection.md`` has the tables): the binomial bar of :func:`._start_rule.select_over_start`
treated the two metrics as independent and asked for a gain the folds could not show on small
data (105 rows of Ionosphere at 5 %: a bar of about 0.55), so the start was kept on the paper's
own sets; the paired bootstrap measures the noise of the *difference*, which is small for
candidates trained from the start, and it is an order statistic's noise at extreme levels (the
lowest positives or the top rows decide), not a binomial one.
"""

from __future__ import annotations

import numpy as np

from ..metrics._counting import OBJECTIVE_REDUCES, cumulative_counts, sort_rows
from ..metrics._resampled import resample_totals, resampled_metric
from ..objectives import get_objective
from ..objectives.bootstrap import _resample_counts

__all__ = ["GUARD", "N_RESAMPLES", "WIN", "paired_resamples", "select_out_of_fold"]

WIN = 0.9
"""A candidate replaces the start on the metric alone when it beats it in this share of the resamples."""

GUARD = 0.3
"""The held-out loss's choice is refused when the start beats it in this share of the resamples."""

N_RESAMPLES = 200
"""Bootstrap resamples of the rows: a share of 0.9 is then known to about +-0.02."""


def paired_resamples(positive, scores, objective: str, target: float, *, sample_weight=None,
                     n_resamples: int = N_RESAMPLES, seed: int = 0, select=None) -> tuple:
    r"""The exact metric of every candidate on all rows and on ``n_resamples`` shared bootstrap resamples.

    Parameters
    ----------
    positive : bool ndarray of shape (n,)
    scores : ndarray of shape (C, n)
        One row of scores per candidate; a row with a non-finite score gives ``-inf`` everywhere.
    objective, target
        The objective (a key of :data:`~quantile_surrogate.objectives.OBJECTIVES`) and its level.
    sample_weight : ndarray of shape (n,), optional
        Frequency weights: resample ``b`` weighs row ``i`` by ``count_bi * w_i``.
    n_resamples : int
    seed : int
        Seed of the resamples (``numpy.random.default_rng``).
    select : callable, optional
        From the point metrics (C,) to a bool mask of the candidates to resample (default: all);
        the others get NaN resamples. Each candidate is sorted once either way.

    Returns
    -------
    (metric, resampled) : tuple of ndarray of shapes (C,) and (B, C)
        ``resampled[b, c]`` is candidate ``c``'s metric on resample ``b`` (the same rows for every
        candidate: the bootstrap is paired); NaN where a resample has no positive.
    """
    name = get_objective(objective).name
    reduce = OBJECTIVE_REDUCES[name]
    n = positive.shape[0]
    weight = np.ones(n, dtype=np.int64) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    metric = np.full(scores.shape[0], -np.inf)
    sorted_rows = {}
    for c, row in enumerate(scores):
        if np.isfinite(row).all():
            order, last = sorted_rows[c] = sort_rows(row, stable=True)
            metric[c] = reduce(cumulative_counts(positive[order], last, weight[order]), target)
    chosen = np.ones(scores.shape[0], dtype=bool) if select is None else np.asarray(select(metric), dtype=bool)
    resampled = np.where(chosen, -np.inf, np.nan) * np.ones((n_resamples, 1))
    counts = _resample_counts(np.random.default_rng(seed), n, n_resamples, np.arange(n))
    if sample_weight is None:
        # multiplicities fit a byte: 8 times less to reorder per candidate
        counts = counts.astype(np.uint8) if counts.size and counts.max() < 256 else counts
        totals = resample_totals(positive, counts)  # shared by every candidate's ranking
    else:
        counts = counts * weight
    for c, (order, last) in sorted_rows.items():
        if not chosen[c]:
            continue
        if sample_weight is None:
            resampled[:, c] = resampled_metric(name, target, positive, order, last, counts, totals)
        else:
            resampled[:, c] = reduce(cumulative_counts(positive[order], last, np.take(counts, order, axis=1)), target)
    return metric, resampled


def _share(first, second) -> np.ndarray:
    """How often ``first`` beats ``second`` over the resamples (NaN, a candidate not resampled, never counts)."""
    with np.errstate(invalid="ignore"):
        valid = ~np.isnan(first - second)
        wins = valid & (first > second)
    return wins.sum(axis=0) / np.maximum(valid.sum(axis=0), 1)


def select_out_of_fold(oof_scores, fold_loss, positive, objective: str, target: float, start: tuple, *,
                       sample_weight=None, seed: int = 0, win: float = WIN, guard: float = GUARD,
                       n_resamples: int = N_RESAMPLES, label=None) -> tuple:
    r"""The candidate to keep: steps 1-3 of the module docstring.

    Parameters
    ----------
    oof_scores : ndarray of shape (..., n)
        Each candidate's out-of-fold scores (candidate axes first), NaN for a candidate that does
        not exist (a random restart before training).
    fold_loss : ndarray of shape (K, ...)
        Held-out surrogate loss per fold and candidate (NaN where none).
    positive : bool ndarray of shape (n,)
    objective, target
        The objective and its level.
    start : tuple of int
        The logistic start's index into the candidate axes.
    sample_weight : ndarray of shape (n,), optional
    seed : int
        Seed of the bootstrap.
    win, guard : float in [0, 1]
        :data:`WIN` and :data:`GUARD`.
    n_resamples : int
    label : callable, optional
        A candidate's name in ``rule`` from its index tuple (default ``"candidate (i, j)"``).

    Returns
    -------
    (index, record) : tuple
        The chosen candidate's index (a tuple) and a dict: ``pooled_metric``, ``win_share``
        (:math:`P(c \succ s)`), ``mean_loss`` (all of the candidate shape), ``decided_by``
        ("metric", "loss" or "start") and ``rule``, the decision in words.

    Examples
    --------
    >>> positive = np.array([True] * 10 + [False] * 90)
    >>> rng = np.random.default_rng(0)
    >>> start = rng.normal(size=100) + positive              # weak
    >>> trained = rng.normal(size=100) + 4 * positive        # far better
    >>> loss = np.array([[1.0, 0.5]] * 3)
    >>> index, record = select_out_of_fold(np.stack([start, trained]), loss, positive, "precision_at_rate", 0.1, (0,))
    >>> index, record["decided_by"]
    ((1,), 'metric')
    """
    shape = oof_scores.shape[:-1]
    flat = oof_scores.reshape(-1, oof_scores.shape[-1])
    exists = ~np.isnan(flat).all(axis=1)
    s = int(np.ravel_multi_index(start, shape))
    fold_loss = np.asarray(fold_loss, dtype=np.float64).reshape(-1, flat.shape[0])
    mean_loss = np.where(exists & ~np.isnan(fold_loss).any(axis=0), fold_loss.mean(axis=0), np.inf)
    lowest = int(np.argmin(mean_loss))  # ties: the first candidate (the start, then fewer epochs)
    index = np.arange(flat.shape[0])

    def needed(metric):  # only the start, the lowest loss and the candidates above the start's metric can matter
        return (metric > metric[s]) | (index == s) | (index == lowest)

    metric, resampled = paired_resamples(positive, np.where(exists[:, None], flat, -np.inf), objective, target,
                                         sample_weight=sample_weight, seed=seed, n_resamples=n_resamples,
                                         select=needed)
    win_share = _share(resampled, resampled[:, [s]])
    clear = exists & (metric > metric[s]) & (win_share >= win)
    clear[s] = False
    start_share = float(_share(resampled[:, [s]], resampled[:, [lowest]])[0])
    if clear.any():
        chosen, decided_by = int(np.argmax(np.where(clear, metric, -np.inf))), "metric"
    elif lowest != s and start_share < guard:
        chosen, decided_by = lowest, "loss"
    else:
        chosen, decided_by = s, "start"
    record = dict(pooled_metric=metric.reshape(shape), win_share=win_share.reshape(shape),
                  mean_loss=mean_loss.reshape(shape), decided_by=decided_by,
                  rule=_in_words(decided_by, _namer(shape, s, label), chosen, lowest, s, metric, mean_loss, win_share,
                                 start_share, objective, win, guard, n_resamples))
    return tuple(int(i) for i in np.unravel_index(chosen, shape)), record


def _namer(shape, s, label):
    def name(c):
        index = tuple(int(i) for i in np.unravel_index(c, shape))
        return "the logistic start" if c == s else label(index) if label is not None else f"candidate {index}"
    return name


def _in_words(decided_by, name, chosen, lowest, s, metric, mean_loss, win_share, start_share, objective, win, guard,
              n_resamples) -> str:
    """One sentence: which step decided, with the numbers that decided it."""
    if decided_by == "metric":
        return (f"metric: {name(chosen)} beats the logistic start on the out-of-fold {objective} "
                f"({metric[chosen]:.4g} against {metric[s]:.4g}) in {win_share[chosen]:.0%} of {n_resamples} "
                f"paired resamples (at least {win:.0%})")
    head = (f"no candidate beats the logistic start on the out-of-fold {objective} in {win:.0%} of {n_resamples} "
            "resamples; ")
    if decided_by == "loss":
        return (f"loss: {head}{name(chosen)} has the lowest held-out loss ({mean_loss[chosen]:.4g}, the start's "
                f"{mean_loss[s]:.4g}) and the start beats it in {start_share:.0%} of the resamples (under {guard:.0%})")
    if lowest == s:
        return f"start: {head}the start also has the lowest held-out loss ({mean_loss[s]:.4g})"
    return (f"start: {head}{name(lowest)} has the lowest held-out loss ({mean_loss[lowest]:.4g}) but the start "
            f"beats it in {start_share:.0%} of the resamples (at least {guard:.0%})")
