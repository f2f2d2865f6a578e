"""quantile_surrogate.metrics._counting: the counts at each distinct score and the reduces, against sklearn.

The references are scikit-learn's curves (``precision_recall_curve``, ``roc_curve`` with
``drop_intermediate=False``) and a brute-force Precision@K over tie-breaks: the core must equal
the curves bit for bit, weighted or not, and the batched (B, n) counts must equal B single ones.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_curve

from quantile_surrogate.metrics._counting import (
    OBJECTIVE_REDUCES,
    average_precision_from_counts,
    counts_at_thresholds,
    cumulative_counts,
    precision_at_k_from_counts,
    precision_at_recall_from_counts,
    recall_at_fpr_from_counts,
    sort_rows,
    top_k_precision,
)


def tied_data(seed, n, levels, weighted):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < rng.uniform(0.05, 0.95)
    scores = rng.integers(0, levels, n).astype(np.float64) + positive * rng.integers(0, 2) * rng.uniform(0, 2)
    weight = rng.uniform(0.1, 3.0, n) if weighted else None
    return positive, scores, weight


DATA = dict(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60), levels=st.integers(1, 8), weighted=st.booleans())


@settings(max_examples=200, deadline=None)
@given(target=st.floats(0.01, 0.99), **DATA)
def test_precision_at_recall_equals_sklearns_curve_bit_for_bit(target, seed, n, levels, weighted):
    positive, scores, weight = tied_data(seed, n, levels, weighted)
    got = float(precision_at_recall_from_counts(counts_at_thresholds(positive, scores, weight), target))
    if not positive.any():
        assert math.isnan(got)
        return
    precision, recall, _ = precision_recall_curve(positive, scores, sample_weight=weight)
    assert got == precision[recall >= target - 1e-12].max()


@settings(max_examples=200, deadline=None)
@given(target=st.floats(0.01, 0.99), **DATA)
def test_recall_at_fpr_equals_sklearns_curve_bit_for_bit(target, seed, n, levels, weighted):
    positive, scores, weight = tied_data(seed, n, levels, weighted)
    got = float(recall_at_fpr_from_counts(counts_at_thresholds(positive, scores, weight), target))
    if positive.all() or not positive.any():
        assert math.isnan(got)
        return
    false_rate, true_rate, _ = roc_curve(positive, scores, drop_intermediate=False, sample_weight=weight)
    assert got == true_rate[false_rate <= target + 1e-12].max()


@settings(max_examples=150, deadline=None)
@given(**DATA)
def test_average_precision_equals_sklearns(seed, n, levels, weighted):
    positive, scores, weight = tied_data(seed, n, levels, weighted)
    got = float(average_precision_from_counts(counts_at_thresholds(positive, scores, weight)))
    if not positive.any():
        assert math.isnan(got)
        return
    assert got == pytest.approx(average_precision_score(positive, scores, sample_weight=weight), rel=1e-12)


def brute_force_precision_at_k(positive, scores, k):
    """The mean over every tie-break order: the ``k``-th score's tie group contributes its positive fraction."""
    kth = np.sort(scores)[::-1][k - 1]
    above, tied = scores > kth, scores == kth
    return (positive[above].sum() + (k - above.sum()) * positive[tied].sum() / tied.sum()) / k


@settings(max_examples=200, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60), levels=st.integers(1, 8))
def test_precision_at_k_fast_path_equals_the_reduce_bit_for_bit(data, seed, n, levels):
    positive, scores, _ = tied_data(seed, n, levels, False)
    k = data.draw(st.integers(1, n))
    fast = top_k_precision(positive, scores, k)
    assert fast == float(precision_at_k_from_counts(counts_at_thresholds(positive, scores), k))
    assert fast == pytest.approx(brute_force_precision_at_k(positive, scores, k), rel=1e-14)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40), levels=st.integers(1, 6),
       objective=st.sampled_from(sorted(OBJECTIVE_REDUCES)), target=st.floats(0.01, 0.99))
def test_batched_counts_equal_one_resample_at_a_time(seed, n, levels, objective, target):
    """Multiplicities of shape (B, n) give the counts, and the metrics, of each resample alone."""
    rng = np.random.default_rng(seed)
    positive, scores, _ = tied_data(seed, n, levels, False)
    order, last = sort_rows(scores)
    multiplicities = rng.integers(0, 3, size=(5, n)).astype(np.float64)
    batched = cumulative_counts(positive[order], last, multiplicities[:, order])
    values = OBJECTIVE_REDUCES[objective](batched, target)
    for b in range(5):
        one = cumulative_counts(positive[order], last, multiplicities[b, order])
        np.testing.assert_array_equal(batched.tp[b], one.tp)
        np.testing.assert_array_equal(batched.fp[b], one.fp)
        single = float(OBJECTIVE_REDUCES[objective](one, target))
        assert (math.isnan(single) and math.isnan(values[b])) or single == values[b]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40), levels=st.integers(1, 6),
       dtype=st.sampled_from([np.uint8, np.int32, np.int64]))
def test_integer_multiplicities_give_the_float_counts_exactly(seed, n, levels, dtype):
    """The integer path (bootstrap multiplicities stored small, summed as integers) equals the float one."""
    rng = np.random.default_rng(seed)
    positive, scores, _ = tied_data(seed, n, levels, False)
    order, last = sort_rows(scores)
    multiplicities = rng.integers(0, 4, size=(3, n))
    exact = cumulative_counts(positive[order], last, multiplicities[:, order].astype(dtype))
    floats = cumulative_counts(positive[order], last, multiplicities[:, order].astype(np.float64))
    assert exact.tp.dtype == np.float64
    np.testing.assert_array_equal(exact.tp, floats.tp)
    np.testing.assert_array_equal(exact.fp, floats.fp)


def test_unweighted_counts_equal_unit_weights_and_ignore_the_order_of_ties():
    positive = np.array([True, False, True, True, False, False])
    scores = np.array([2.0, 2.0, 1.0, 3.0, 1.0, 0.0])
    counts = counts_at_thresholds(positive, scores)
    np.testing.assert_array_equal(counts.tp, [1, 2, 3, 3])  # thresholds 3, 2, 1, 0
    np.testing.assert_array_equal(counts.fp, [0, 1, 2, 3])
    unit = counts_at_thresholds(positive, scores, np.ones(6))
    np.testing.assert_array_equal(unit.tp, counts.tp)
    np.testing.assert_array_equal(unit.fp, counts.fp)


def test_a_recall_target_at_zero_keeps_the_curves_end_point():
    """sklearn's curve ends at (recall 0, precision 1): a target within the slack of 0 reaches it."""
    counts = counts_at_thresholds(np.array([False, True]), np.array([2.0, 1.0]))
    assert float(precision_at_recall_from_counts(counts, 1e-13)) == 1.0
    assert float(precision_at_recall_from_counts(counts, 0.5)) == 0.5


def test_precision_at_k_with_a_mass_shares_the_tie_by_weight():
    # Masses from the top: 2.0 (positive) then a tie of 1.0 (positive) and 3.0 (negative); k = 3.
    counts = counts_at_thresholds(np.array([True, True, False]), np.array([5.0, 1.0, 1.0]), np.array([2.0, 1.0, 3.0]))
    assert float(precision_at_k_from_counts(counts, 3.0)) == pytest.approx((2 + 1 * 1 / 4) / 3)
