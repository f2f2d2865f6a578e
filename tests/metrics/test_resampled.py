"""The resampled metric read at the deciding tie groups equals the full counting core, float for float."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.metrics._counting import OBJECTIVE_REDUCES, cumulative_counts, sort_rows
from quantile_surrogate.metrics._resampled import _rate_prefix, resample_totals, resampled_metric
from quantile_surrogate.objectives.bootstrap import _resample_counts

TARGETS = [0.0, 0.01, 0.05, 0.1, 0.5, 0.9, 0.98, 1.0]


def full(objective, target, positive, order, last, multiplicity):
    return OBJECTIVE_REDUCES[objective](cumulative_counts(positive[order], last, multiplicity[:, order]), target)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), resamples=st.integers(1, 12), share=st.floats(0.0, 1.0), levels=st.integers(1, 40),
       tied=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_equals_the_full_counts_for_every_objective_and_level(n, resamples, share, levels, tied, seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < share
    scores = rng.integers(0, levels, n).astype(float) if tied else rng.normal(size=n) + positive
    order, last = sort_rows(scores, stable=True)
    multiplicity = _resample_counts(rng, n, resamples, np.arange(n))
    for objective in OBJECTIVE_REDUCES:
        for target in TARGETS:
            expected = full(objective, target, positive, order, last, multiplicity)
            for stored in (np.uint8, np.int64):
                stored_multiplicity = multiplicity.astype(stored)
                got = resampled_metric(objective, target, positive, order, last, stored_multiplicity)
                np.testing.assert_array_equal(got, expected, err_msg=f"{objective} at {target}")
                shared = resample_totals(positive, stored_multiplicity)  # as the bootstrap passes them
                np.testing.assert_array_equal(
                    resampled_metric(objective, target, positive, order, last, stored_multiplicity, shared), expected)


def _skewed(case):
    """Rows, scores and multiplicities on which the rate's prefix cannot be read (see the test)."""
    rng = np.random.default_rng(0)
    n = 1000
    positive = rng.random(n) < 0.2
    scores = rng.normal(size=n)
    multiplicity = _resample_counts(rng, n, 8, np.arange(n))
    if case == "top tie":  # one tie group of 400 rows at the top: the prefix ends inside it
        scores[:400] = 10.0
    elif case == "unequal mass":  # not a bootstrap: the resamples' masses differ
        multiplicity[0, 0] += 3
    else:  # a resample whose mass sits on the lowest rows: the prefix does not reach K there
        multiplicity[1] = 0
        multiplicity[1, np.argsort(scores)[:100]] = 10
    return positive, scores, multiplicity


@pytest.mark.parametrize("case", ["top tie", "unequal mass", "prefix short"])
def test_a_rate_whose_prefix_cannot_be_read_falls_back_to_every_group(case):
    positive, scores, multiplicity = _skewed(case)
    order, last = sort_rows(scores, stable=True)
    for target in (0.05, 0.2):
        expected = full("precision_at_rate", target, positive, order, last, multiplicity)
        got = resampled_metric("precision_at_rate", target, positive, order, last, multiplicity)
        np.testing.assert_array_equal(got, expected)


def test_resamples_without_a_positive_or_a_negative_read_as_the_full_counts():
    positive = np.array([True, False, False, False, False, False])
    order, last = sort_rows(np.arange(6.0), stable=True)
    multiplicity = np.array([[0, 2, 1, 1, 1, 1], [6, 0, 0, 0, 0, 0]])  # no positive drawn; only the positive drawn
    expected = {"precision_at_recall": [np.nan, 1.0], "recall_at_fpr": [np.nan, np.nan],
                "precision_at_rate": [0.0, 1.0]}
    for objective, values in expected.items():
        got = resampled_metric(objective, 0.5, positive, order, last, multiplicity)
        np.testing.assert_array_equal(got, full(objective, 0.5, positive, order, last, multiplicity))
        np.testing.assert_array_equal(got, values)


def test_a_bootstrap_rate_reads_a_prefix_of_the_groups():
    rng = np.random.default_rng(1)
    n = 2000
    positive = rng.random(n) < 0.1
    order, last = sort_rows(rng.normal(size=n), stable=True)
    multiplicity = _resample_counts(rng, n, 50, np.arange(n))
    totals = resample_totals(positive, multiplicity)
    counts = _rate_prefix(positive[order], order, last, multiplicity, 0.05, totals)
    assert counts is not None and counts.tp.shape == (50, counts.tp.shape[1]) and counts.tp.shape[1] < n // 10
    np.testing.assert_array_equal(counts.tp[:, -1], multiplicity[:, positive].sum(axis=1))
