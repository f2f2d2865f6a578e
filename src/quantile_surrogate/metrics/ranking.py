r"""Ranking metrics within each query: precision@k and NDCG@k, averaged over queries, and their query bootstrap.

Each metric is a mean over queries of a per-query value that depends on the query's rows alone,
so resampling whole queries (:func:`bootstrap_over_queries`) needs the per-query values only:
``return_per_query=True`` gives them (:class:`QueryScores`). Queries without a relevant row
(precision@k 0 and NDCG 0/0 whatever the y_score) are left out of the mean and counted in
:attr:`QueryScores.n_left_out`. Departure: LightGBM's ``ndcg@k`` and XGBoost's ``ndcg`` count such a
query as 1 (XGBoost's ``ndcg-`` as 0); with ``m`` the mean here, ``Q`` queries and ``L`` left out,
theirs are ``(m (Q - L) + L) / Q`` and ``m (Q - L) / Q``. Leaving them out keeps the mean from
moving with the share of such queries in a split.

All rows are sorted once by (query, decreasing score); ties are shared fairly, as in
:func:`~quantile_surrogate.metrics.precision_at_k`: the value is the expectation under a random
order of the tied rows.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .._utils.checks import check_binary, check_finite_number, check_integer
from .._utils.group_checks import check_group_array
from ._checks import undefined

__all__ = ["precision_at_k_per_query", "ndcg_at_k", "bootstrap_over_queries", "QueryScores", "QueryInterval"]

#: ``ValueError`` for ``y_true``, ``y_score`` and ``query`` of different lengths, or not 1-D.
RANKING_ARRAYS_MESSAGE = (
    "`y_true`, `y_score` and `query` must be 1-D with one entry per row; got shapes {true_shape}, {score_shape} "
    "and {query_shape}."
)
#: ``ValueError`` for no row at all.
RANKING_EMPTY_MESSAGE = "`y_true` is empty; pass at least one row."
#: ``ValueError`` for NaN or inf y_score.
RANKING_SCORES_MESSAGE = "`y_score` contains NaN or inf ({count} of {total} values); pass finite y_score."
#: ``ValueError`` (``TypeError`` if not numeric) for graded relevance that is negative or not finite.
RELEVANCE_MESSAGE = (
    "`y_true` must hold graded relevance labels, finite numbers >= 0 (e.g. 0, 1, 2, 3); got {values}."
)
#: ``TypeError`` of :func:`bootstrap_over_queries` for a metric that does not return :class:`QueryScores`.
METRIC_RESULT_MESSAGE = (
    "`metric` must be a per-query metric such as precision_at_k_per_query or ndcg_at_k (bind k with "
    "functools.partial): called with return_per_query=True it must return QueryScores; got {type_name}."
)

MAX_CELLS = 2_000_000
"""Resamples are drawn in chunks of at most this many (resample, query) cells, which bounds memory."""


class QueryScores(NamedTuple):
    """A per-query metric with its per-query values (``return_per_query=True``).

    Attributes
    ----------
    mean : float
        The mean over the queries that count (NaN if none does).
    per_query : ndarray of float64, shape (Q,)
        The value of each query, in the order of ``queries``; NaN for a query left out.
    queries : ndarray, shape (Q,)
        The distinct query codes, ascending.
    n_left_out : int
        How many queries were left out of the mean (no relevant row).

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_k_per_query
    >>> precision_at_k_per_query([1, 0, 0, 0], [2.0, 1.0, 2.0, 1.0], [0, 0, 1, 1], 1, return_per_query=True)
    QueryScores(mean=1.0, per_query=array([ 1., nan]), queries=array([0, 1]), n_left_out=1)
    """

    mean: float
    per_query: np.ndarray
    queries: np.ndarray
    n_left_out: int


class QueryInterval(NamedTuple):
    """The value of a per-query metric and its percentile-bootstrap interval over queries.

    Attributes
    ----------
    value : float
        The metric on the given queries.
    low, high : float
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles over the resamples.
    n_used : int
        Resamples with at least one query that counts (the others have no value).

    Examples
    --------
    >>> from functools import partial
    >>> from quantile_surrogate.metrics import bootstrap_over_queries, precision_at_k_per_query
    >>> metric = partial(precision_at_k_per_query, k=1)
    >>> bootstrap_over_queries(metric, [1, 0, 1, 0], [2.0, 1.0, 2.0, 1.0], [0, 0, 1, 1], n_resamples=10)
    QueryInterval(value=1.0, low=1.0, high=1.0, n_used=10)
    """

    value: float
    low: float
    high: float
    n_used: int


class _Grouped(NamedTuple):
    """Rows sorted by (query, decreasing score), with the runs of tied scores within each query."""

    order: np.ndarray  # the permutation that sorts the rows
    queries: np.ndarray  # the distinct query codes, ascending
    code: np.ndarray  # each sorted row's query, as 0..Q-1
    sizes: np.ndarray  # rows per query
    starts: np.ndarray  # each query's first sorted row
    run_first: np.ndarray  # the first sorted row of each run of tied scores
    run_id: np.ndarray  # each sorted row's run


def _checked(y_true, y_score, query, k, *, graded: bool):
    """``(relevance, y_score, query, k)``: the arrays checked, relevance as float64 (graded) or bool."""
    values = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = values.shape[0] if values.ndim == 1 else -1
    if values.ndim != 1 or y_score.ndim != 1 or y_score.shape[0] != n or np.shape(query) != (n,):
        raise ValueError(RANKING_ARRAYS_MESSAGE.format(true_shape=values.shape, score_shape=y_score.shape,
                                                       query_shape=np.shape(query)))
    if n == 0:
        raise ValueError(RANKING_EMPTY_MESSAGE)
    query = check_group_array(query, n, "query")
    k = check_integer(k, "k", minimum=1)
    if not np.isfinite(y_score).all():
        raise ValueError(RANKING_SCORES_MESSAGE.format(count=int((~np.isfinite(y_score)).sum()), total=n))
    if not graded:
        return check_binary(values, "y_true", signed=True), y_score, query, k
    try:
        relevance = values.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(RELEVANCE_MESSAGE.format(values=list(values[:6]))) from None
    if not (np.isfinite(relevance).all() and (relevance >= 0).all()):
        raise ValueError(RELEVANCE_MESSAGE.format(values=np.unique(relevance)[:6].tolist()))
    return relevance, y_score, query, k


def _group(y_score: np.ndarray, query: np.ndarray) -> _Grouped:
    """One sort by (query, decreasing score) and the tie runs, in O(n) after the sort."""
    queries, code = np.unique(query, return_inverse=True)
    order = np.lexsort((-y_score, code))
    code, ordered = code[order], y_score[order]
    sizes = np.bincount(code, minlength=queries.size)
    starts = np.cumsum(sizes) - sizes
    new_run = np.r_[True, (code[1:] != code[:-1]) | (ordered[1:] != ordered[:-1])]
    return _Grouped(order, queries, code, sizes, starts, np.flatnonzero(new_run), np.cumsum(new_run) - 1)


def _result(per_query: np.ndarray, counts: np.ndarray, queries: np.ndarray, metric: str, return_per_query: bool):
    """The mean over the queries that count (``counts``), warned NaN if none does; or :class:`QueryScores`."""
    per_query = np.where(counts, per_query, np.nan)
    mean = float(per_query[counts].mean()) if counts.any() else undefined(metric, "query with a relevant row")
    if return_per_query:
        return QueryScores(mean, per_query, queries, int((~counts).sum()))
    return mean


def precision_at_k_per_query(y_true, y_score, query, k: int, *, return_per_query: bool = False):
    r"""Precision among the top ``k`` rows of each query, averaged over the queries with a relevant row.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary relevance: {0, 1}, bool, or {-1, 1}; 1 (True) is relevant.
    y_score : array-like of shape (n,)
        Finite scores, higher ranks first.
    query : array-like of int, shape (n,)
        The query of each row, codes >= 0 (any order of rows, gaps allowed).
    k : int >= 1
        How many top rows of each query count.
    return_per_query : bool, default=False
        Return :class:`QueryScores` (the mean, each query's value, and how many were left out).

    Returns
    -------
    float or QueryScores
        The mean precision@k over the queries with at least one relevant row; NaN with an
        ``UndefinedMetricWarning`` if no query has one.

    Raises
    ------
    TypeError
        If ``query`` does not hold integers or ``k`` is not an integer.
    ValueError
        If the arrays are not 1-D of one length and non-empty, ``y_score`` holds NaN or inf,
        ``y_true`` is not binary, a query code is negative or ``k < 1``.

    See Also
    --------
    precision_at_k : The same over the whole data set.
    quantile_surrogate.losses.precision_at_k_loss : Its training surrogate.

    Notes
    -----
    For query ``q`` with ``n_q`` rows, ``k_q = min(k, n_q)``, ``s_q`` its ``k_q``-th largest
    score, ``a_q`` its rows above ``s_q`` and ``T_q`` those tied with it:

    .. math::
        P@k(q) = \frac{1}{k_q}\Big(\sum_{i \in a_q} y_i + (k_q - |a_q|) \frac{1}{|T_q|}
        \sum_{i \in T_q} y_i\Big), \qquad
        \overline{P@k} = \frac{1}{|Q^*|} \sum_{q \in Q^*} P@k(q),

    the rule of :func:`precision_at_k` (the tied rows at the k-th score share the places left by
    their relevant fraction) within each query, by the same operations on the same integers
    (equal bit for bit; tested). A query with fewer than ``k`` rows divides by its ``n_q``, so
    it scores its relevant fraction. ``Q*`` holds the queries with a relevant row: in the others
    precision@k is 0 whatever the scores, and they are left out (:attr:`QueryScores.n_left_out`
    counts them; see :mod:`quantile_surrogate.metrics.ranking` for the conventions of other
    libraries). A query whose rows are all relevant counts, with precision 1.

    Examples
    --------
    >>> from quantile_surrogate.metrics import precision_at_k_per_query
    >>> y = [1, 0, 1, 0, 0, 1, 0, 0, 0]
    >>> s = [0.9, 0.8, 0.7, 0.1, 0.5, 0.5, 0.6, 0.2, 0.1]
    >>> q = [0, 0, 0, 0, 1, 1, 1, 2, 2]
    >>> precision_at_k_per_query(y, s, q, 2)  # query 0: 1/2; query 1: (0 + 1 * 1/2) / 2; query 2 left out
    0.375
    """
    positive, y_score, query, k = _checked(y_true, y_score, query, k, graded=False)
    rows = _group(y_score, query)
    positive = positive[rows.order]
    k_q = np.minimum(k, rows.sizes)
    run = rows.run_id[rows.starts + k_q - 1]  # the run of tied scores that holds each query's k-th row
    first = rows.run_first[run]
    run_size = np.r_[rows.run_first[1:], positive.size][run] - first
    before = np.r_[0, np.cumsum(positive, dtype=np.int64)]  # relevant rows before each sorted position
    above = first - rows.starts
    hits_above = before[first] - before[rows.starts]
    hits_tied = before[first + run_size] - before[first]
    hits = hits_above + (k_q - above) * (hits_tied / run_size)  # top_k_precision's operations, per query
    relevant = before[rows.starts + rows.sizes] - before[rows.starts]
    return _result(hits / k_q, relevant > 0, rows.queries, "Precision@k per query", return_per_query)


def ndcg_at_k(y_true, y_score, query, k: int, *, return_per_query: bool = False):
    r"""Normalised discounted cumulative gain of the top ``k`` rows of each query, averaged over queries.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Graded relevance ``rel_i >= 0`` (e.g. 0 to 4); binary labels are the grades 0 and 1.
    y_score : array-like of shape (n,)
        Finite scores, higher ranks first.
    query : array-like of int, shape (n,)
        The query of each row, codes >= 0 (any order of rows, gaps allowed).
    k : int >= 1
        The depth of the ranking that counts.
    return_per_query : bool, default=False
        Return :class:`QueryScores` (the mean, each query's value, and how many were left out).

    Returns
    -------
    float or QueryScores
        The mean NDCG@k over the queries with a nonzero ideal DCG (a relevant row); NaN with an
        ``UndefinedMetricWarning`` if none has one.

    Raises
    ------
    TypeError
        If ``y_true`` is not numeric, ``query`` does not hold integers or ``k`` is not an integer.
    ValueError
        If the arrays are not 1-D of one length and non-empty, ``y_score`` holds NaN or inf,
        a relevance is negative or not finite, a query code is negative or ``k < 1``.

    See Also
    --------
    precision_at_k_per_query : Binary relevance, no discount.
    sklearn.metrics.ndcg_score : The same per query with ``y_true = 2**rel - 1`` (see Notes).

    Notes
    -----
    Exponential gain and a log2 discount (Burges et al. 2005; the default gain of LightGBM's and
    XGBoost's ``ndcg@k``), with rows at positions ``i = 1..n_q`` by decreasing score:

    .. math::
        DCG@k(q) = \sum_{i=1}^{\min(k, n_q)} \frac{2^{rel_{(i)}} - 1}{\log_2(i + 1)}, \qquad
        NDCG@k(q) = \frac{DCG@k(q)}{IDCG@k(q)},

    ``IDCG`` the DCG of the rows sorted by relevance. Ties: each position of a run of tied
    scores gets the run's mean gain (the expected DCG under a random order of the tied rows;
    McSherry & Najork 2008, ``ignore_ties=False`` of scikit-learn). The mean is over the
    queries with ``IDCG > 0``; the others (no relevant row) score 0/0 and are left out, as in
    :func:`precision_at_k_per_query` (LightGBM and XGBoost count them as 1 and break ties by
    their sort instead; see :mod:`quantile_surrogate.metrics.ranking`). ``sklearn.metrics.ndcg_score``
    uses the linear gain ``rel``: it gives this value when passed ``2**rel - 1`` as its ``y_true``
    (tested).

    Examples
    --------
    >>> from quantile_surrogate.metrics import ndcg_at_k
    >>> # gains 2^2 - 1 = 3 and 1 ranked 2nd and 1st: (1 + 3 / log2(3)) / (3 + 1 / log2(3))
    >>> round(ndcg_at_k([2, 1, 0], [0.5, 0.9, 0.1], [0, 0, 0], 3), 4)
    0.7967
    """
    relevance, y_score, query, k = _checked(y_true, y_score, query, k, graded=True)
    rows = _group(y_score, query)
    gain = np.exp2(relevance) - 1.0
    position = np.arange(y_score.size) - rows.starts[rows.code]  # 0-based within the query
    discount = np.where(position < k, 1.0 / np.log2(position + 2.0), 0.0)
    run_gain = np.add.reduceat(gain[rows.order], rows.run_first) / np.diff(np.r_[rows.run_first, y_score.size])
    dcg = np.bincount(rows.code[rows.run_first], weights=run_gain * np.add.reduceat(discount, rows.run_first),
                      minlength=rows.queries.size)
    ideal = np.lexsort((-gain, rows.code[np.argsort(rows.order)]))  # by (query, decreasing gain)
    idcg = np.bincount(rows.code, weights=gain[ideal] * discount, minlength=rows.queries.size)
    counts = idcg > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return _result(dcg / idcg, counts, rows.queries, "NDCG@k", return_per_query)


def bootstrap_over_queries(metric: Callable, y_true, y_score, query, *, n_resamples: int = 1000,
                           confidence: float = 0.95, random_state: int = 0) -> QueryInterval:
    r"""A percentile-bootstrap interval of a per-query metric, resampling whole queries with replacement.

    Parameters
    ----------
    metric : callable
        A per-query metric, ``metric(y_true, y_score, query, return_per_query=True) -> QueryScores``:
        :func:`precision_at_k_per_query` or :func:`ndcg_at_k` with ``k`` bound, e.g.
        ``functools.partial(ndcg_at_k, k=10)``.
    y_true, y_score, query : array-like of shape (n,)
        As the metric takes them.
    n_resamples : int >= 1, default=1000
        How many bootstrap resamples to draw.
    confidence : float in (0, 1), default=0.95
        The coverage of the interval.
    random_state : int, default=0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    QueryInterval
        ``(value, low, high, n_used)``: the metric, the ``(1 - confidence)/2`` and
        ``(1 + confidence)/2`` percentiles over the resamples (NaN if none has a value), and the
        number of resamples with a query that counts.

    Raises
    ------
    TypeError
        If ``metric`` is not callable or does not return :class:`QueryScores`.
    ValueError
        If ``n_resamples < 1``, ``confidence`` is not in (0, 1), or the metric refuses its input.

    See Also
    --------
    quantile_surrogate.objectives.bootstrap.bootstrap_metrics : Resampling rows, for row-level metrics.

    Notes
    -----
    Rows of one query are not independent (they share the query), so the resampling unit is
    the query: a resample draws ``Q`` of the ``Q`` queries with replacement, each with all its
    rows. A query's value depends on its own rows only, so the metric of a resample is the mean
    of the per-query values ``v_q`` of the drawn queries that count, with multiplicities ``m_q``:

    .. math::
        \bar v^{(b)} = \frac{\sum_q m^{(b)}_q v_q [q \in Q^*]}{\sum_q m^{(b)}_q [q \in Q^*]},

    computed from one call of the metric: the same value as the metric on the resampled rows
    (tested). A resample without a query that counts has no value and is not used.
    :mod:`quantile_surrogate.objectives.bootstrap` resamples rows and reads an objective's
    metric from row counts; it sits a layer above the metrics and has no notion of a query,
    hence this separate, smaller function.

    Examples
    --------
    >>> from functools import partial
    >>> import numpy as np
    >>> from quantile_surrogate.metrics import bootstrap_over_queries, precision_at_k_per_query
    >>> rng = np.random.default_rng(0)
    >>> query = np.repeat(np.arange(50), 10); y = rng.random(500) < 0.3
    >>> out = bootstrap_over_queries(partial(precision_at_k_per_query, k=3), y, y + rng.normal(size=500), query,
    ...                              n_resamples=200)
    >>> bool(out.low <= out.value <= out.high), out.n_used
    (True, 200)
    """
    n_resamples = check_integer(n_resamples, "n_resamples", minimum=1)
    confidence = check_finite_number(confidence, "confidence", low=0.0, low_inclusive=False, high=1.0)
    if not callable(metric):
        raise TypeError(METRIC_RESULT_MESSAGE.format(type_name=type(metric).__name__))
    point = metric(y_true, y_score, query, return_per_query=True)
    if not isinstance(point, QueryScores):
        raise TypeError(METRIC_RESULT_MESSAGE.format(type_name=type(point).__name__))
    rng = np.random.default_rng(random_state)
    n_queries = point.per_query.size
    chunk = max(1, MAX_CELLS // n_queries)
    sizes = [min(chunk, n_resamples - start) for start in range(0, n_resamples, chunk)]
    draws = np.concatenate([resampled_means(point.per_query, rng.integers(0, n_queries, (size, n_queries)))
                            for size in sizes])
    draws = draws[np.isfinite(draws)]
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(draws, [tail, 100.0 - tail]) if draws.size else (np.nan, np.nan)
    return QueryInterval(point.mean, float(low), float(high), int(draws.size))


def resampled_means(per_query: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The metric of each resample, shape (B,): the mean of the drawn queries' values that count (NaN if none).

    ``drawn`` (B, Q) holds the drawn query positions; ``per_query`` is NaN for a query left out.
    """
    counts = np.isfinite(per_query)
    values = np.where(counts, per_query, 0.0)
    used = counts[drawn].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(used > 0, values[drawn].sum(axis=1) / used, np.nan)
