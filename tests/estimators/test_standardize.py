"""Overflow-free standardisation (issue: one cell of 1e308 silently zeroed its feature)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.estimators._standardize import NOT_FINITE_AFTER_MESSAGE, standardize_columns, standardizer
from tests._messages import prefix


def _reference(X):
    """Exact mean and standard deviation with Python fractions (no float range to overflow)."""
    means, stds = [], []
    for column in X.T:
        values = [Fraction(float(v)) for v in column]
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / len(values)
        means.append(float(mean))
        half = max(0, (variance.numerator.bit_length() - variance.denominator.bit_length()) // 2)
        stds.append(math.sqrt(float(variance / 4**half)) * 2.0**half)  # 4^half brings it into float range
    return np.array(means), np.array(stds)


@pytest.mark.parametrize("big", [1e154, 1e200, 1e308])
def test_mean_and_scale_match_an_extended_precision_reference(big):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 3))
    X[5, 1] = big
    mean, scale = standardizer(X)
    ref_mean, ref_scale = _reference(X)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scale, ref_scale, rtol=1e-12)
    assert np.isfinite(scale).all() and (scale > 0).all()


def test_constant_column_gets_scale_one():
    X = np.c_[np.full(10, 3.0), np.arange(10.0)]
    mean, scale = standardizer(X)
    assert mean[0] == 3.0 and scale[0] == 1.0


def test_values_near_both_ends_of_the_float_range_standardise_or_are_refused_by_column():
    # The spread never overflows (std <= max |x|); a centred value can (1.7e308 minus a mean near -1.7e308).
    X = np.c_[np.arange(4.0), [1.7e308, -1.7e308, 0.0, 1.0]]
    mean, scale = standardizer(X)
    assert np.isfinite(standardize_columns(X, mean, scale)).all()
    X = np.c_[np.arange(5.0), [1.7e308, -1.7e308, -1.7e308, -1.7e308, -1.7e308]]
    mean, scale = standardizer(X)
    with pytest.raises(ValueError, match=prefix(NOT_FINITE_AFTER_MESSAGE, column=1)):
        standardize_columns(X, mean, scale)


def test_standardize_refuses_a_value_that_overflows_at_prediction():
    mean, scale = np.array([0.0]), np.array([1e-300])
    with pytest.raises(ValueError, match=prefix(NOT_FINITE_AFTER_MESSAGE, column=0)):
        standardize_columns(np.array([[1e10]]), mean, scale)


def test_one_huge_cell_does_not_remove_its_feature():
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.standard_normal((n, 3))
    y = (X[:, 1] + 0.5 * rng.standard_normal(n) > 1.2).astype(int)
    X[0, 1] = 1e308  # a sentinel in the informative column
    with np.errstate(over="raise", invalid="raise"):  # no overflow anywhere on the way
        clf = QuantileClassifier(target=0.9, max_epochs=30, n_restarts=1, random_state=0).fit(X, y)
    weight = clf.model_.weight.detach().numpy().ravel()
    assert abs(weight[1]) > 0.1 * np.abs(weight).max(), weight  # used to be exactly 0


def test_integer_weights_standardise_as_the_rows_repeated_and_zero_weight_drops_a_row():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4)) * [1.0, 10.0, 1e-3, 1e200]  # one column near the float range's top
    weight = rng.integers(0, 4, 40).astype(float)
    weight[0] = 0.0
    X[0] = 1e300  # a row without weight: it must set neither the mean, the spread nor the overflow guard
    mean, scale = standardizer(X, chunk_rows=7, sample_weight=weight)
    repeated = np.repeat(X, weight.astype(int), axis=0)
    ref_mean, ref_scale = standardizer(repeated)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(scale, ref_scale, rtol=1e-12)
    exact_mean, exact_scale = _reference(repeated)
    np.testing.assert_allclose(mean, exact_mean, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(scale, exact_scale, rtol=1e-12)


def test_the_estimator_standardises_with_the_weights():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 3)) + [0.0, 5.0, -2.0]
    y = (X[:, 0] + rng.standard_normal(200) > 0.5).astype(int)
    weight = np.where(y == 0, 5.0, 1.0)  # negatives downsampled five to one, weighted back
    clf = QuantileClassifier(target=0.8, max_epochs=2, n_restarts=1, random_state=0).fit(X, y, sample_weight=weight)
    mean, scale = standardizer(X, sample_weight=weight)
    np.testing.assert_array_equal(clf.mean_, mean)
    np.testing.assert_array_equal(clf.scale_, scale)
    assert not np.allclose(clf.mean_, X.mean(axis=0))  # the unweighted moments differ: the test can fail
