"""Held-out selection for rankers (quantile_surrogate.selection._query_splits): whole queries, the P@k curve."""

from __future__ import annotations

import numpy as np
import pytest

from quantile_surrogate.metrics import precision_at_k_per_query
from quantile_surrogate.selection._query_splits import QueryCurve, live_queries, query_shuffle_splits


def test_live_queries_need_more_than_k_rows_and_both_kinds():
    relevant = np.array([1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0])
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4])
    # 0: 3 rows mixed; 1: all relevant; 2: mixed; 3: mixed but only 2 rows; 4: one irrelevant row
    assert live_queries(relevant, codes, 2).tolist() == [True, False, True, False, False]


def test_splits_hold_out_whole_queries_with_live_ones_on_both_sides():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(30), rng.integers(2, 9, size=30))
    live = np.arange(30) % 3 != 0
    pairs = query_shuffle_splits(codes, live, fraction=0.2, n_splits=4, seed=3)
    assert len(pairs) == 4
    for fit, held in pairs:
        assert np.array_equal(np.sort(np.r_[fit, held]), np.arange(codes.size))
        assert np.all(np.diff(fit) > 0) and np.all(np.diff(held) > 0)  # ascending: sorted rows stay sorted
        fit_q, held_q = set(codes[fit]), set(codes[held])
        assert not fit_q & held_q
        assert sum(live[q] for q in held_q) == 4 and sum(not live[q] for q in held_q) == 2  # 20 % of 20 and of 10
    assert len({tuple(held) for _, held in pairs}) == 4
    again = query_shuffle_splits(codes, live, fraction=0.2, n_splits=4, seed=3)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(pairs, again))


def test_two_live_queries_split_one_each_and_one_gives_no_split():
    codes = np.repeat(np.arange(3), 4)
    fit, held = query_shuffle_splits(codes, [True, True, False], fraction=0.01, n_splits=1, seed=0)[0]
    assert len(set(codes[held]) & {0, 1}) == 1 and len(set(codes[fit]) & {0, 1}) == 1
    assert query_shuffle_splits(codes, [True, False, False], fraction=0.5, n_splits=1, seed=0) == []


def test_curve_records_the_metric_and_stops_after_patience():
    relevant = np.array([1, 0, 0, 0, 1, 0])
    codes = np.array([0, 0, 0, 1, 1, 1])
    curve = QueryCurve(relevant, codes, 1, dict(quantile="point", reduction="mean"), patience=2)
    good = np.array([3.0, 1.0, 0.0, 0.0, 2.0, 1.0])
    bad = -good
    assert curve(bad) is False
    assert curve(good) is False
    assert curve(bad) is False and curve(np.full(6, np.nan)) is True  # two rounds after the best
    values = curve.values()
    assert values.shape == (4, 2)
    assert values[1, 0] == precision_at_k_per_query(relevant, good, codes, 1) == 1.0
    assert values[3].tolist() == [-np.inf, np.inf]
    assert values[1, 1] < values[0, 1]  # the loss of the good ranking is lower
    assert QueryCurve(relevant, codes, 1, dict(reduction="mean"), patience=None)(bad) is False


@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_held_out_share_follows_the_fraction(fraction):
    codes = np.repeat(np.arange(40), 5)
    _, held = query_shuffle_splits(codes, np.ones(40, bool), fraction=fraction, n_splits=1, seed=0)[0]
    assert len(set(codes[held])) == round(fraction * 40)
