"""quantile_surrogate.objectives.bootstrap: metrics from sorted counts and percentile-bootstrap intervals.

References are brute force: the metrics of quantile_surrogate.metrics on explicitly resampled arrays.
"""

import warnings

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.metrics._held_out import held_out_metric
from quantile_surrogate.objectives import bootstrap
from quantile_surrogate.objectives.bootstrap import SortedScores, bootstrap_metrics, metrics_from_counts
from quantile_surrogate.objectives import OBJECTIVES
from quantile_surrogate._utils.checks import (
    BINARY_01,
    INTEGER_RANGE_MESSAGE,
    INTEGER_TYPE_MESSAGE,
    NOT_BINARY_MESSAGE,
    TARGET_RANGE_MESSAGE,
)
from quantile_surrogate.metrics._checks import SCORES_NONFINITE_MESSAGE
from quantile_surrogate.objectives._registry import UNKNOWN_OBJECTIVE_MESSAGE
from quantile_surrogate.objectives.bootstrap import ARRAYS_MESSAGE, NO_COUNTING_RULE_MESSAGE

from tests._messages import exact

CASES = [("precision_at_recall", 0.8), ("precision_at_rate", 0.1), ("recall_at_fpr", 0.1)]


def explicit_metrics(p, s, objective, target):
    """precision, recall, rate at score > 0 and the objective's metric, on explicit arrays."""
    flagged = s > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        precision = p[flagged].mean() if flagged.any() else np.nan
    return [precision, flagged[p].mean(), flagged.mean(), OBJECTIVES[objective].metric(p, s, target)]


def test_bootstrap_metrics_on_a_known_case():
    positive = np.array([True] * 50 + [False] * 150)
    score = np.where(positive, 1.0, -1.0)  # separable: precision = recall = 1 in every resample
    table, used = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=50, random_state=0)
    assert used == 50
    values = {name.split(" at ")[0]: (v, lo, hi) for name, v, lo, hi in table}
    assert values["precision"] == (1.0, 1.0, 1.0) and values["recall"] == (1.0, 1.0, 1.0)
    rate = values["predicted positive rate"]
    assert rate[0] == 0.25 and rate[1] < 0.25 < rate[2]
    # the rate's bootstrap interval is close to the normal one, 0.25 +- 1.96 sqrt(0.25 * 0.75 / 200)
    half = 1.96 * np.sqrt(0.25 * 0.75 / 200)
    table, _ = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=2000, random_state=1)
    assert abs(table[2][2] - (0.25 - half)) < 0.015 and abs(table[2][3] - (0.25 + half)) < 0.015
    again, _ = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=2000, random_state=1)
    assert again == table


@pytest.mark.parametrize("objective, target", CASES)
@pytest.mark.parametrize("ties", ["none", "some", "heavy"])
def test_weighted_metrics_equal_the_metrics_on_explicit_resamples(objective, target, ties):
    rng = np.random.default_rng(3)
    n = 300
    positive = rng.random(n) < 0.3
    score = rng.normal(size=n) + positive
    if ties == "some":
        score = np.round(score, 1)
    elif ties == "heavy":
        score = np.round(score)  # about six distinct values: the constraint lands inside a tie group
    data = SortedScores(positive, score)
    for _ in range(30):
        rows = rng.integers(0, n, n)
        counts = np.bincount(rows, minlength=n)[data.order][None, :]
        got = metrics_from_counts(data, counts, objective, target)[0]
        expected = explicit_metrics(positive[rows], score[rows], objective, target)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@settings(max_examples=150, deadline=None)
@given(objective=st.sampled_from(sorted(OBJECTIVES)), target=st.floats(0.01, 0.99), n=st.integers(2, 60),
       levels=st.integers(1, 8), seed=st.integers(0, 2**31 - 1))
def test_public_metric_held_out_scorer_and_bootstrap_agree_exactly_on_ties(objective, target, n, levels, seed):
    """One counting core: the three callers give the same float on a resample, ties across classes included."""
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < rng.uniform(0.05, 0.95)
    score = rng.integers(0, levels, n).astype(np.float64) + positive * rng.integers(0, 2) * rng.uniform(0, 2)
    rows = rng.integers(0, n, n)
    data = SortedScores(positive, score)
    counts = np.bincount(rows, minlength=n)[data.order][None, :]
    from_bootstrap = metrics_from_counts(data, counts, objective, target)[0, 3]
    from_held_out = held_out_metric(positive[rows], score[rows], objective, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined metric warns in the public function
        public = OBJECTIVES[objective].metric(positive[rows], score[rows], target)
    values = [from_bootstrap, from_held_out, public]
    assert all(math.isnan(v) for v in values) or from_bootstrap == from_held_out == public, values


@pytest.mark.parametrize("objective", ["precision_at_recall", "recall_at_fpr"])
def test_targets_on_the_boundary(objective):
    """Targets j / n_A that a resample can hit exactly: `>=` against `>` matters here."""
    rng = np.random.default_rng(7)
    positive = np.array([True] * 10 + [False] * 10)
    score = rng.normal(size=20) + positive
    data = SortedScores(positive, score)
    for j in range(1, 10):
        target = j / 10
        got = metrics_from_counts(data, np.ones((1, 20)), objective, target)[0, 3]
        assert got == pytest.approx(OBJECTIVES[objective].metric(positive, score, target), abs=1e-15)


@pytest.mark.parametrize("objective, target", CASES)
def test_intervals_equal_brute_force_percentiles(objective, target):
    """Same draws as the implementation, then the explicit metrics and NumPy's percentiles."""
    rng = np.random.default_rng(11)
    n, B = 12, 300  # tiny: many resamples have one class (skipped) or no flagged row (no precision)
    positive = np.arange(n) < 4
    score = np.round(rng.normal(size=n) + positive, 1)
    table, used = bootstrap_metrics(positive, score, objective, target, n_resamples=B, random_state=5)
    draws = np.random.default_rng(5).integers(0, n, size=(B, n))
    values = []
    for rows in draws:
        p = positive[rows]
        if p.any() and not p.all():
            values.append(explicit_metrics(p, score[rows], objective, target))
    values = np.array(values, dtype=float)
    assert used == len(values) < B
    point = explicit_metrics(positive, score, objective, target)
    for j, (_, value, low, high) in enumerate(table):
        column = values[:, j][np.isfinite(values[:, j])]
        assert value == pytest.approx(point[j], abs=1e-12)
        np.testing.assert_allclose([low, high], np.percentile(column, [2.5, 97.5]), atol=1e-12)


@pytest.mark.parametrize("positive", [[True, True, False], [True, False, False]])
def test_resamples_with_one_class_are_skipped(positive):
    """About a third of resamples of 3 rows have one class only (all positive or all negative): none is used."""
    positive = np.array(positive)
    _, used = bootstrap_metrics(positive, np.array([1.0, -0.5, 0.3]), "precision_at_recall", 0.5, n_resamples=400,
                                random_state=4)
    draws = np.random.default_rng(4).integers(0, 3, size=(400, 3))
    both = sum(bool(positive[rows].any() and not positive[rows].all()) for rows in draws)
    assert used == both < 300


def test_names_come_from_the_objective_registry():
    positive = np.array([True, False, True, False])
    table, _ = bootstrap_metrics(positive, np.array([1.0, -1.0, 0.5, 0.2]), "recall_at_fpr", 0.25, n_resamples=5)
    assert [row[0] for row in table] == [*bootstrap.REPORTED_METRICS, "recall at FPR 0.25 (the objective)"]


def test_every_registered_objective_has_a_counting_rule():
    for name in OBJECTIVES:
        assert callable(bootstrap._count_metric(name))


@pytest.mark.parametrize("n_resamples, error", [(0, ValueError), (-5, ValueError), (2.5, TypeError),
                                                (True, TypeError), ("100", TypeError)])
def test_a_bad_number_of_resamples_is_refused(n_resamples, error):
    # A value of the wrong type is a TypeError, a wrong value of the right type a ValueError.
    fields = dict(name="n_resamples", wanted="an integer >= 1", value=n_resamples)
    match = (exact(INTEGER_TYPE_MESSAGE, **fields, type_name=type(n_resamples).__name__, example=1)
             if error is TypeError else exact(INTEGER_RANGE_MESSAGE, **fields))
    with pytest.raises(error, match=match):
        bootstrap_metrics([True, False], [1.0, -1.0], "precision_at_recall", 0.5, n_resamples=n_resamples)


@pytest.mark.parametrize("positive, score, match", [
    ([True, False], [1.0], exact(ARRAYS_MESSAGE, positive_shape=(2,), score_shape=(1,))),
    ([], [], exact(ARRAYS_MESSAGE, positive_shape=(0,), score_shape=(0,))),
    ([True, False], [1.0, np.nan], exact(SCORES_NONFINITE_MESSAGE, name="score")),
])
def test_bad_arrays_are_refused(positive, score, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_metrics(positive, score, "precision_at_recall", 0.5, n_resamples=10)


def test_an_unknown_objective_is_refused():
    with pytest.raises(ValueError, match=exact(UNKNOWN_OBJECTIVE_MESSAGE, names=sorted(OBJECTIVES), value="accuracy")):
        bootstrap_metrics([True, False], [1.0, -1.0], "accuracy", 0.5, n_resamples=10)


def test_an_objective_without_a_counting_rule_is_refused(monkeypatch):
    monkeypatch.delitem(bootstrap.OBJECTIVE_REDUCES, "recall_at_fpr")
    with pytest.raises(ValueError, match=exact(NO_COUNTING_RULE_MESSAGE, objective="recall_at_fpr")):
        bootstrap_metrics([True, False], [1.0, -1.0], "recall_at_fpr", 0.5, n_resamples=10)


def test_chunked_draws_give_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(2)
    positive = rng.random(50) < 0.4
    score = rng.normal(size=50) + positive
    whole = bootstrap_metrics(positive, score, "precision_at_rate", 0.2, n_resamples=40, random_state=3)
    monkeypatch.setattr(bootstrap, "MAX_CELLS", 50 * 7)  # chunks of 7 resamples: the draws are one stream
    assert bootstrap_metrics(positive, score, "precision_at_rate", 0.2, n_resamples=40, random_state=3) == whole



@pytest.mark.parametrize("target", [1.2, 0, -0.5])
def test_a_target_outside_the_open_unit_interval_is_refused(target):
    # "precision at recall 1.2 = -inf" used to be reported
    positive, score = np.array([True, False, True, False]), np.array([1.0, 0.5, -0.5, -1.0])
    with pytest.raises(ValueError, match=exact(TARGET_RANGE_MESSAGE, name="target", value=float(target))):
        bootstrap_metrics(positive, score, "precision_at_recall", target, n_resamples=5)


def test_positive_that_is_not_binary_is_refused():
    # {-1, 1} cast to bool would make every row positive
    with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="positive", accepted=BINARY_01,
                                               values=[-1, 1])):
        bootstrap_metrics(np.array([1, -1, 1, -1]), np.array([1.0, 0.5, -0.5, -1.0]), "precision_at_recall", 0.5,
                          n_resamples=5)
