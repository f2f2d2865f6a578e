r"""Percentile-bootstrap intervals of the metrics at a deployed threshold, from row counts.

A bootstrap resample of ``n`` rows is the original rows with multiplicities
:math:`w_i \in \{0, 1, \dots\}`, :math:`\sum_i w_i = n`. Its rows sort in the original
order, so with the rows sorted once by decreasing score the weighted counts

.. math::
    TP_j = \sum_{i \le e_j} w_i [y_i = 1], \qquad FP_j = \sum_{i \le e_j} w_i [y_i = 0]

at the last row :math:`e_j` of each group of tied scores give every threshold's confusion
counts of every resample at once (one cumulative sum over a (B, n) array). From them:

- precision, recall and predicted positive rate at the deployed threshold (``score > 0``);
- the objective's exact metric (:mod:`quantile_surrogate.metrics`), read off the counts by the
  objective's reduce in the metrics' counting core
  (:data:`quantile_surrogate.metrics._counting.OBJECTIVE_REDUCES`, the same code as the public
  metric and the selection's held-out scorer): the best precision over the thresholds whose
  recall is at least the target; the best recall over the thresholds whose FPR is at most the
  target; or the precision among the top :math:`k = \lceil \tau n \rceil` rows, rows tied with
  the k-th shared fairly.

The values equal :mod:`quantile_surrogate.metrics` on the explicitly resampled arrays (tested).
"""

from __future__ import annotations

import numpy as np

from .._utils.checks import check_binary, check_integer, check_target
from ..metrics._checks import SCORES_NONFINITE_MESSAGE
from ..metrics._counting import OBJECTIVE_REDUCES, cumulative_counts, sort_rows
from ._registry import get_objective

# SortedScores and metrics_from_counts are the counting machinery of bootstrap_metrics (tested
# directly): importable from here, but not the public surface.
__all__ = ["bootstrap_metrics", "REPORTED_METRICS"]

#: The names of the first three rows of :func:`bootstrap_metrics` (precision, recall and predicted
#: positive rate at ``score > 0``); the fourth row is the objective's metric.
REPORTED_METRICS = ("precision at the deployed threshold", "recall at the deployed threshold",
                    "predicted positive rate at the deployed threshold")

ARRAYS_MESSAGE = (
    "`positive` and `score` must be 1-D, non-empty and of one length; got shapes {positive_shape} and {score_shape}."
)
NO_COUNTING_RULE_MESSAGE = (
    "The bootstrap has no counting rule for objective {objective!r}; add its reduce to "
    "quantile_surrogate.metrics._counting.OBJECTIVE_REDUCES."
)

MAX_CELLS = 2_000_000
"""Resamples are drawn in chunks of at most this many (resample, row) cells, which bounds memory."""


class SortedScores:
    """Rows sorted by decreasing score (stable), with the last index of each group of tied scores (internal).

    The sort of the metrics' counting core (:func:`quantile_surrogate.metrics._counting.sort_rows`).

    Parameters
    ----------
    positive : array-like of bool of shape (n,)
        True on the positive rows.
    score : array-like of shape (n,)
        Finite scores; the deployed threshold is ``score > 0``.

    Attributes
    ----------
    order : ndarray of int
        The permutation that sorts the rows.
    score, positive : ndarray
        In that order.
    last : ndarray of int
        The index of the last row of each tie group.
    flagged : ndarray of bool
        ``score > 0``, the deployed threshold.

    Raises
    ------
    ValueError
        If the arrays are not 1-D, non-empty and of one length, or a score is NaN or inf.
    """

    def __init__(self, positive, score):
        positive = np.asarray(positive, dtype=bool)
        score = np.asarray(score, dtype=np.float64)
        if positive.shape != score.shape or positive.ndim != 1 or positive.size == 0:
            raise ValueError(ARRAYS_MESSAGE.format(positive_shape=positive.shape, score_shape=score.shape))
        if not np.isfinite(score).all():
            raise ValueError(SCORES_NONFINITE_MESSAGE.format(name="score"))
        order, self.last = sort_rows(score)
        self.order, self.score, self.positive = order, score[order], positive[order]
        self.flagged = self.score > 0


def _count_metric(objective):
    spec = get_objective(objective)
    try:
        return OBJECTIVE_REDUCES[spec.name]
    except KeyError:
        raise ValueError(NO_COUNTING_RULE_MESSAGE.format(objective=spec.name)) from None


def metrics_from_counts(data: SortedScores, counts, objective, target: float) -> np.ndarray:
    """The four reported metrics of resamples given as row counts, shape (B, 4) (internal).

    Parameters
    ----------
    data : SortedScores
        The rows, sorted once.
    counts : array-like of shape (B, n)
        How often each row (in ``data``'s sorted order) is in each resample.
    objective : str or Objective
    target : float

    Returns
    -------
    ndarray of shape (B, 4)
        Columns: precision, recall and predicted positive rate at ``score > 0``, and the
        objective's metric at ``target``. A resample without a predicted positive has
        precision NaN; one without a positive (or negative) row gives NaN or inf where a rate
        is undefined (the objective's metric: NaN).
    """
    counts = np.asarray(counts, dtype=np.float64)
    metric = _count_metric(objective)
    n = counts.shape[1]
    cumulative = cumulative_counts(data.positive, data.last, counts)
    n_pos = cumulative.tp[:, -1]
    flagged = counts[:, data.flagged].sum(axis=1)
    hits = (counts * data.positive)[:, data.flagged].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.column_stack([hits / flagged, hits / n_pos, flagged / n, metric(cumulative, target)])


def _resample_counts(rng, n: int, size: int, order) -> np.ndarray:
    """(size, n) multiplicities of ``size`` resamples of ``n`` rows drawn with replacement, in ``order``."""
    rows = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
    return np.bincount(rows.ravel(), minlength=size * n).reshape(size, n)[:, order]


def bootstrap_metrics(positive, score, objective, target: float, *, n_resamples: int = 1000, random_state: int = 0):
    r"""Point values and 95 % percentile-bootstrap intervals of the four reported metrics.

    Parameters
    ----------
    positive : array-like of bool of shape (n,)
        True on the positive rows.
    score : array-like of shape (n,)
        Finite scores relative to the deployed threshold: a row is flagged iff ``score > 0``
        (pass ``decision_function`` values, or scores minus the threshold).
    objective : str or Objective
        A key of :data:`~quantile_surrogate.objectives.OBJECTIVES`: the fourth row is its
        exact metric at ``target``.
    target : float
        The objective's recall, predicted positive rate or false positive rate.
    n_resamples : int >= 1, default=1000
        How many bootstrap resamples to draw.
    random_state : int, default=0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    rows : list of (name, value, low, high)
        :data:`REPORTED_METRICS` and the objective's metric name, each with its value on the
        given rows and the 2.5 % and 97.5 % percentiles over the resamples (NaN if none is finite).
    n_used : int
        Resamples that had both classes.

    Raises
    ------
    ValueError
        If ``n_resamples`` is not an integer >= 1, the objective is unknown, ``target`` is not
        in (0, 1), ``positive`` is not binary, or the arrays are not 1-D, non-empty and of one
        length, or a score is NaN or inf.

    See Also
    --------
    quantile_surrogate.metrics : The metrics, on explicitly resampled arrays.

    Notes
    -----
    Rows are resampled with replacement ``n_resamples`` times; resamples with a single class
    are skipped (recall and the objective are undefined there), and a resample with no
    predicted positive has no precision (left out of that interval). A resample is a vector of
    multiplicities :math:`w_i`, :math:`\sum_i w_i = n`; with the rows sorted once by decreasing
    score, the counts at the last row :math:`e_j` of each tie group,

    .. math::
        TP_j = \sum_{i \le e_j} w_i [y_i = 1], \qquad FP_j = \sum_{i \le e_j} w_i [y_i = 0],

    give every threshold's confusion counts of every resample in one cumulative sum, from
    which the metrics are read by the rule of the objective (see the module docstring).
    The values equal those of :mod:`quantile_surrogate.metrics` on the resampled arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.objectives.bootstrap import bootstrap_metrics
    >>> positive = np.array([True, True, False, False])
    >>> rows, used = bootstrap_metrics(positive, np.array([2.0, 1.0, -1.0, -2.0]), "precision_at_recall", 0.5,
    ...                                n_resamples=20)
    >>> [(name.split(" at ")[0], value, low, high) for name, value, low, high in rows][:2]
    [('precision', 1.0, 1.0, 1.0), ('recall', 1.0, 1.0, 1.0)]

    On noisier scores each interval brackets its point value:

    >>> rng = np.random.default_rng(0)
    >>> positive = rng.random(200) < 0.3
    >>> rows, used = bootstrap_metrics(positive, positive + rng.normal(size=200) - 0.8, "precision_at_recall", 0.8,
    ...                                n_resamples=200)
    >>> [(round(value, 3), bool(low <= value <= high)) for _, value, low, high in rows], used
    ([(0.474, True), (0.509, True), (0.285, True), (0.478, True)], 200)
    """
    n_resamples = check_integer(n_resamples, "n_resamples", minimum=1)
    spec = get_objective(objective)
    target = check_target(target, "target")
    data = SortedScores(check_binary(positive, "positive"), score)
    n = data.score.size
    point = metrics_from_counts(data, np.ones((1, n)), spec, target)[0]
    rng = np.random.default_rng(random_state)
    chunk = max(1, MAX_CELLS // n)
    draws = []
    for start in range(0, n_resamples, chunk):
        counts = _resample_counts(rng, n, min(chunk, n_resamples - start), data.order)
        n_pos = counts[:, data.positive].sum(axis=1)
        draws.append(metrics_from_counts(data, counts[(n_pos > 0) & (n_pos < n)], spec, target))
    draws = np.concatenate(draws)
    names = [*REPORTED_METRICS, spec.metric_name.format(target=target) + " (the objective)"]
    table = []
    for j, name in enumerate(names):
        column = draws[:, j][np.isfinite(draws[:, j])]
        low, high = np.percentile(column, [2.5, 97.5]) if column.size else (np.nan, np.nan)
        table.append((name, float(point[j]), float(low), float(high)))
    return table, int(draws.shape[0])
