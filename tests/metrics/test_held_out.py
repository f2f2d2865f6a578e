"""The selection loops' metric equals the public exact metric, bit for bit, on data with ties."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn.metrics import average_precision_score

from quantile_surrogate.metrics._held_out import held_out_average_precision, held_out_metric
from quantile_surrogate.objectives import objective_metric

OBJECTIVES = ("precision_at_recall", "precision_at_rate", "recall_at_fpr")


@settings(max_examples=150, deadline=None)
@given(
    objective=st.sampled_from(OBJECTIVES),
    target=st.floats(0.01, 0.99),
    n=st.integers(2, 60),
    levels=st.integers(1, 8),  # few distinct scores: many ties, across classes too
    seed=st.integers(0, 2**31 - 1),
)
def test_equals_the_public_metric(objective, target, n, levels, seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < rng.uniform(0.05, 0.95)
    scores = rng.integers(0, levels, n).astype(np.float64) + positive * rng.uniform(0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined metric warns in the public function
        expected = objective_metric(positive.astype(np.int64), scores, objective=objective, target=target)
    got = held_out_metric(positive, scores, objective, target)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@pytest.mark.parametrize("objective, positive, expected", [
    ("precision_at_recall", [False, False, False], math.nan),  # recall 0/0
    ("recall_at_fpr", [True, True, True], math.nan),  # FPR 0/0
    ("recall_at_fpr", [False, True, True], 0.0),  # the negative scores highest: nothing meets FPR 0.1 but (0, 0)
])
def test_undefined_and_empty_cases(objective, positive, expected):
    got = held_out_metric(np.array(positive), np.array([3.0, 2.0, 1.0]), objective, 0.1)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), levels=st.integers(1, 8), seed=st.integers(0, 2**31 - 1))
def test_average_precision_equals_sklearns(n, levels, seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < rng.uniform(0.05, 0.95)
    scores = rng.integers(0, levels, n).astype(np.float64) + positive * rng.uniform(0, 2)
    got = held_out_average_precision(positive, scores)
    if not positive.any():
        assert math.isnan(got)
        return
    assert got == pytest.approx(average_precision_score(positive, scores), rel=1e-12, abs=1e-15)


def test_average_precision_counts_a_tie_as_one_threshold():
    # Scores 3 (pos), 2 (pos, neg tied), 1 (neg): steps R 1/2 at P 1, then R 1/2 at P 2/3.
    got = held_out_average_precision(np.array([True, True, False, False]), np.array([3.0, 2.0, 2.0, 1.0]))
    assert got == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
