"""quantile_surrogate.metrics.ranking: precision@k and NDCG@k per query, and the query bootstrap."""

import itertools
import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import ndcg_score

from quantile_surrogate import metrics as M
from quantile_surrogate._utils.checks import (
    FINITE_NUMBER_MESSAGE,
    GROUPS_NEGATIVE_MESSAGE,
    INTEGER_RANGE_MESSAGE,
    NOT_BINARY_MESSAGE,
)
from quantile_surrogate._utils.group_checks import GROUP_ARRAY_TYPE_MESSAGE
from quantile_surrogate.metrics._counting import top_k_precision
from quantile_surrogate.metrics.ranking import (
    METRIC_RESULT_MESSAGE,
    RANKING_ARRAYS_MESSAGE,
    RANKING_SCORES_MESSAGE,
    RELEVANCE_MESSAGE,
    resampled_means,
)

from tests._messages import exact, prefix


# --- brute-force references: every order of the tied rows, averaged ---------------------------------


def orders(scores):
    """Every ranking of the rows by decreasing score, ties in every order (small inputs only: a run of r tied rows
    has r! orders)."""
    runs = [list(np.flatnonzero(scores == value)) for value in sorted(set(scores.tolist()), reverse=True)]
    for choice in itertools.product(*[itertools.permutations(run) for run in runs]):
        yield [row for run in choice for row in run]


def brute_precision(y, s, k):
    k = min(k, len(s))
    return float(np.mean([np.sum(y[list(order[:k])]) / k for order in orders(s)]))


def brute_dcg(rel, order, k):
    return sum((2.0 ** rel[row] - 1) / math.log2(i + 2) for i, row in enumerate(order[:k]))


def brute_ndcg(rel, s, k):
    ideal = brute_dcg(rel, list(np.argsort(-rel, kind="stable")), k)
    return float(np.mean([brute_dcg(rel, order, k) for order in orders(s)])) / ideal


def per_query_mean(reference, y, s, q, k):
    values = [reference(y[q == c], s[q == c], k) for c in np.unique(q) if y[q == c].sum() > 0]
    return float(np.mean(values))


def random_queries(seed, n_queries=12, max_rows=7, grades=2, ties=True):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_rows + 1, n_queries)
    q = rng.permutation(np.repeat(np.arange(n_queries) * 3, sizes))  # codes with gaps, rows in any order
    s = rng.integers(0, 4, q.size) / 2.0 if ties else rng.normal(size=q.size)
    y = rng.integers(0, grades, q.size)
    return y, s, q


# --- precision@k per query ----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 10])
@pytest.mark.parametrize("seed", range(4))
def test_precision_equals_the_brute_force_reference_with_ties(k, seed):
    y, s, q = random_queries(seed)
    assert M.precision_at_k_per_query(y, s, q, k) == pytest.approx(per_query_mean(brute_precision, y, s, q, k),
                                                                   abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_precision_equals_top_k_precision_per_query_bit_for_bit(seed):
    y, s, q = random_queries(seed, max_rows=30)
    out = M.precision_at_k_per_query(y, s, q, 5, return_per_query=True)
    for code, value in zip(out.queries, out.per_query):
        rows = q == code
        if y[rows].any():
            assert value == top_k_precision(y[rows] == 1, s[rows], min(5, rows.sum()))
        else:
            assert math.isnan(value)
    assert out.n_left_out == sum(not y[q == code].any() for code in np.unique(q))


def test_precision_shares_ties_and_leaves_out_queries_without_a_relevant_row():
    y = [1, 0, 1, 0, 0, 1, 0, 0, 0]
    s = [0.9, 0.8, 0.7, 0.1, 0.5, 0.5, 0.6, 0.2, 0.1]
    q = [0, 0, 0, 0, 1, 1, 1, 2, 2]
    out = M.precision_at_k_per_query(y, s, q, 2, return_per_query=True)
    assert out.mean == 0.375 and out.n_left_out == 1
    np.testing.assert_array_equal(out.per_query, [0.5, 0.25, np.nan])
    # a query with fewer than k rows scores its relevant fraction; {-1, 1} and bool labels are accepted
    assert M.precision_at_k_per_query([1, -1], [0.1, 0.2], [0, 0], 5) == 0.5
    assert M.precision_at_k_per_query([True, False], [0.1, 0.2], [4, 4], 1) == 0.0


def test_no_query_with_a_relevant_row_is_nan_with_a_warning():
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(M.precision_at_k_per_query([0, 0, 0], [1.0, 2.0, 3.0], [0, 1, 1], 1))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(M.ndcg_at_k([0, 0], [1.0, 2.0], [0, 0], 1))


# At most 8 rows: the references enumerate every order of tied rows, and a query of 14 rows on 4 score values
# could tie 14 rows (14! orders): a run that drew one hung the suite for minutes with 5 GB resident (2026-11-27).
@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 8), k=st.integers(1, 5))
def test_hypothesis_precision_and_ndcg_equal_the_references_and_ignore_the_row_order(data, n, k):
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    s = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=float)
    q = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    perm = np.array(data.draw(st.permutations(range(n))))
    if not y.any():
        return
    for metric, reference in ((M.precision_at_k_per_query, brute_precision), (M.ndcg_at_k, brute_ndcg)):
        value = metric(y, s, q, k)
        assert 0.0 <= value <= 1.0 + 1e-12
        assert value == pytest.approx(per_query_mean(reference, y, s, q, k), abs=1e-12)
        assert metric(y[perm], s[perm], q[perm], k) == pytest.approx(value, abs=1e-12)


# --- NDCG@k -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_ndcg_equals_sklearn_with_the_exponential_gain_per_query(k, ties, seed):
    y, s, q = random_queries(seed, max_rows=9, grades=4, ties=ties)
    out = M.ndcg_at_k(y, s, q, k, return_per_query=True)
    expected = []
    for code, value in zip(out.queries, out.per_query):
        rows = q == code
        if not y[rows].any():
            assert math.isnan(value)
            continue
        if rows.sum() == 1:  # sklearn needs two documents; one relevant row is a perfect ranking
            reference = 1.0
        else:
            reference = ndcg_score([2.0 ** y[rows] - 1], [s[rows]], k=k)
        assert value == pytest.approx(reference, abs=1e-12)
        expected.append(reference)
    assert out.mean == pytest.approx(np.mean(expected), abs=1e-12)


def test_ndcg_equals_the_brute_force_reference_with_graded_ties():
    y, s, q = random_queries(7, max_rows=6, grades=4, ties=True)
    for k in (1, 2, 4):
        assert M.ndcg_at_k(y, s, q, k) == pytest.approx(per_query_mean(brute_ndcg, y, s, q, k), abs=1e-12)


def test_ndcg_hand_computed():
    # grades 2, 1, 0 ranked 2nd, 1st, 3rd: DCG = 1 + 3 / log2(3), IDCG = 3 + 1 / log2(3)
    expected = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert M.ndcg_at_k([2, 1, 0], [0.5, 0.9, 0.1], [0, 0, 0], 3) == pytest.approx(expected, abs=1e-15)
    assert M.ndcg_at_k([2, 1, 0], [0.5, 0.9, 0.1], [0, 0, 0], 1) == pytest.approx(1 / 3, abs=1e-15)
    assert M.ndcg_at_k([0.5, 0.0], [0.9, 0.1], [0, 0], 1) == 1.0  # fractional grades are accepted


# --- the query bootstrap ------------------------------------------------------------------------------


def explicit_resample(y, s, q, drawn):
    """The rows of the drawn queries, each draw a new query (a query drawn twice appears twice)."""
    codes = np.unique(q)
    rows = [np.flatnonzero(q == codes[d]) for d in drawn]
    new_query = np.concatenate([np.full(r.size, j) for j, r in enumerate(rows)])
    rows = np.concatenate(rows)
    return y[rows], s[rows], new_query


@pytest.mark.parametrize("metric", [partial(M.precision_at_k_per_query, k=2), partial(M.ndcg_at_k, k=3)])
def test_resampled_values_equal_the_metric_on_the_resampled_rows(metric):
    y, s, q = random_queries(3, n_queries=15)
    point = metric(y, s, q, return_per_query=True)
    drawn = np.random.default_rng(0).integers(0, point.per_query.size, (20, point.per_query.size))
    fast = resampled_means(point.per_query, drawn)
    for value, draw in zip(fast, drawn):
        resampled = explicit_resample(y, s, q, draw)
        if np.isnan(value):
            with pytest.warns(UndefinedMetricWarning):
                assert math.isnan(metric(*resampled))
        else:
            assert value == pytest.approx(metric(*resampled), abs=1e-12)


def test_bootstrap_interval_brackets_the_value_is_reproducible_and_narrows_with_confidence():
    rng = np.random.default_rng(1)
    q = np.repeat(np.arange(80), 8)
    y = rng.random(q.size) < 0.3
    s = y + rng.normal(size=q.size)
    metric = partial(M.ndcg_at_k, k=5)
    wide = M.bootstrap_over_queries(metric, y, s, q, n_resamples=300, random_state=2)
    assert wide.value == metric(y, s, q)
    assert wide.low <= wide.value <= wide.high and wide.n_used == 300
    assert M.bootstrap_over_queries(metric, y, s, q, n_resamples=300, random_state=2) == wide
    narrow = M.bootstrap_over_queries(metric, y, s, q, n_resamples=300, confidence=0.5, random_state=2)
    assert wide.low <= narrow.low <= narrow.high <= wide.high


def test_bootstrap_draws_in_chunks_give_the_same_interval(monkeypatch):
    from quantile_surrogate.metrics import ranking

    y, s, q = random_queries(5, n_queries=10)
    metric = partial(M.precision_at_k_per_query, k=2)
    whole = M.bootstrap_over_queries(metric, y, s, q, n_resamples=50)
    monkeypatch.setattr(ranking, "MAX_CELLS", 25)  # chunks of 2 resamples of 10 queries
    chunked = M.bootstrap_over_queries(metric, y, s, q, n_resamples=50)
    assert chunked.n_used == whole.n_used
    assert chunked.low == pytest.approx(whole.low) and chunked.high == pytest.approx(whole.high)


def test_resamples_without_a_query_that_counts_are_not_used():
    # one query of two counts, the other has no relevant row: about 1 resample in 4 draws it twice
    out = M.bootstrap_over_queries(partial(M.precision_at_k_per_query, k=1), [1, 0, 0, 0], [2.0, 1.0, 2.0, 1.0],
                                   [0, 0, 1, 1], n_resamples=400)
    assert 250 < out.n_used < 350 and out.low == out.high == 1.0


# --- bad input ----------------------------------------------------------------------------------------


def test_bad_inputs_are_named():
    y, s, q = [1, 0, 1], [0.3, 0.2, 0.1], [0, 0, 1]
    with pytest.raises(ValueError, match=exact(RANKING_ARRAYS_MESSAGE, true_shape=(3,), score_shape=(3,),
                                               query_shape=(2,))):
        M.precision_at_k_per_query(y, s, [0, 0], 1)
    with pytest.raises(TypeError, match=exact(GROUP_ARRAY_TYPE_MESSAGE, name="query", dtype=np.dtype(float))):
        M.precision_at_k_per_query(y, s, [0.0, 0.0, 1.0], 1)
    with pytest.raises(ValueError, match=exact(GROUPS_NEGATIVE_MESSAGE, name="query", value=-1)):
        M.ndcg_at_k(y, s, [0, -1, 1], 1)
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="k", wanted="an integer >= 1", value=0)):
        M.precision_at_k_per_query(y, s, q, 0)
    with pytest.raises(ValueError, match=prefix(NOT_BINARY_MESSAGE, name="y_true")):
        M.precision_at_k_per_query([2, 0, 1], s, q, 1)
    with pytest.raises(ValueError, match=exact(RELEVANCE_MESSAGE, values=[-1.0, 0.0, 1.0])):
        M.ndcg_at_k([-1, 0, 1], s, q, 1)
    with pytest.raises(ValueError, match=exact(RANKING_SCORES_MESSAGE, count=1, total=3)):
        M.ndcg_at_k(y, [0.1, np.nan, 0.2], q, 1)
    with pytest.raises(TypeError, match=exact(METRIC_RESULT_MESSAGE, type_name="float")):
        M.bootstrap_over_queries(lambda y, s, q, return_per_query: 0.5, y, s, q)
    with pytest.raises(TypeError, match=exact(METRIC_RESULT_MESSAGE, type_name="str")):
        M.bootstrap_over_queries("ndcg", y, s, q)
    with pytest.raises(ValueError, match=exact(FINITE_NUMBER_MESSAGE, name="confidence", interval="(0, 1)", value=1.0)):
        M.bootstrap_over_queries(partial(M.ndcg_at_k, k=1), y, s, q, confidence=1.0)
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="n_resamples", wanted="an integer >= 1",
                                               value=0)):
        M.bootstrap_over_queries(partial(M.ndcg_at_k, k=1), y, s, q, n_resamples=0)
