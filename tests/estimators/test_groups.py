"""quantile_surrogate.estimators._groups: group labels encoded at fit, looked up at prediction, and the refusals.

The per-group thresholds that use these codes are tested through the estimators in tests/cross/test_groups.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate.estimators._groups import (
    GROUPS_INCOMPARABLE_MESSAGE,
    GROUPS_MISSING_LABELS_MESSAGE,
    GROUPS_MISSING_MESSAGE,
    GROUPS_NONFINITE_MESSAGE,
    GROUPS_SHAPE_MESSAGE,
    GROUPS_UNEXPECTED_MESSAGE,
    GROUPS_UNSEEN_MESSAGE,
    encode_groups,
    group_codes,
)
from tests._messages import exact, prefix


@given(st.lists(st.sampled_from(["north", "south", "east", "west"]), min_size=1, max_size=30))
def test_codes_index_the_sorted_labels_and_the_lookup_inverts_them(groups):
    labels, codes = encode_groups(groups, len(groups))
    assert labels.tolist() == sorted(set(groups))  # sorted unique labels, codes 0..G-1
    assert codes.dtype == np.int64 and labels[codes].tolist() == groups
    np.testing.assert_array_equal(group_codes(labels, groups, len(groups)), codes)  # prediction: the same codes
    np.testing.assert_array_equal(group_codes(labels, groups[::-1], len(groups)), codes[::-1])


def test_numbers_encode_in_numeric_order():
    labels, codes = encode_groups(np.array([10, 2, 10, 33]), 4)
    assert labels.tolist() == [2, 10, 33] and codes.tolist() == [1, 0, 1, 2]


def test_fit_refuses_a_wrong_shape_nan_and_labels_that_do_not_compare():
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, shape=(3,), n=4)):
        encode_groups(["a", "b", "a"], 4)
    with pytest.raises(ValueError, match=exact(GROUPS_NONFINITE_MESSAGE)):
        encode_groups(np.array([0.0, np.nan]), 2)
    with pytest.raises(TypeError, match=prefix(GROUPS_INCOMPARABLE_MESSAGE)):
        encode_groups(np.array(["a", 1], dtype=object), 2)
    # Missing labels among strings (None, or NaN as pandas reads an empty cell of a text column): counted, the first
    # row named, at fit and at prediction.
    for missing in (None, np.nan, pd.NA):
        groups = np.array(["a", "b", missing, "a", missing], dtype=object)
        with pytest.raises(ValueError, match=exact(GROUPS_MISSING_LABELS_MESSAGE, count=2, row=2)):
            encode_groups(groups, 5)
        with pytest.raises(ValueError, match=exact(GROUPS_MISSING_LABELS_MESSAGE, count=2, row=2)):
            group_codes(np.array(["a", "b"]), groups, 5)
    with pytest.raises(ValueError, match=exact(GROUPS_MISSING_LABELS_MESSAGE, count=1, row=1)):
        encode_groups(pd.Series(["a", None, "b"]), 3)


def test_prediction_refuses_missing_unexpected_unseen_and_misshaped_groups():
    known = np.array(["a", "b"])
    assert group_codes(None, None, 3) is None  # fitted without groups: one threshold
    with pytest.raises(ValueError, match=exact(GROUPS_UNEXPECTED_MESSAGE)):
        group_codes(None, ["a", "a", "b"], 3)
    with pytest.raises(ValueError, match=exact(GROUPS_MISSING_MESSAGE, count=2)):
        group_codes(known, None, 3)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, shape=(2,), n=3)):
        group_codes(known, ["a", "b"], 3)
    with pytest.raises(ValueError, match=exact(GROUPS_UNSEEN_MESSAGE, shown=["c"], known=["a", "b"])):
        group_codes(known, ["a", "c", "b"], 3)
    with pytest.raises(ValueError, match=exact(GROUPS_UNSEEN_MESSAGE, shown=["1"], known=["a", "b"])):
        group_codes(known, [1, 1, 1], 3)  # numbers against the string labels of fit


def test_groups_at_predict_for_a_model_fitted_without_them_is_refused():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    y = (X[:, 0] + 0.8 * rng.standard_normal(400) > 1.0).astype(int)
    fitted = LogisticRegressionBaseline(objective="precision_at_recall", target=0.8).fit(X, y)
    with pytest.raises(ValueError, match=exact(GROUPS_UNEXPECTED_MESSAGE)):
        fitted.predict(X, sensitive_features=np.zeros(len(y)))
