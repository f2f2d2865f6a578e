"""quantile_surrogate.metrics._checks: the exact metrics' array checks and their undefined-metric warning."""

import math

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning

from quantile_surrogate._utils.checks import BINARY_SIGNED, NOT_BINARY_MESSAGE
from quantile_surrogate.metrics._checks import (
    ARRAYS_LENGTH_MESSAGE,
    ARRAYS_NOT_1D_MESSAGE,
    SCORES_NONFINITE_MESSAGE,
    UNDEFINED_MESSAGE,
    Y_TRUE_EMPTY_MESSAGE,
    check_arrays,
    checked_weights,
    undefined,
)

from tests._messages import exact, prefix


@pytest.mark.parametrize("labels", [[1, 0, 1], [1, -1, 1], [True, False, True]])
def test_check_arrays_maps_every_label_encoding_to_positive_rows(labels):
    positive, scores = check_arrays(labels, [3, 1, 2])
    assert positive.tolist() == [True, False, True]
    assert scores.dtype == np.float64 and scores.tolist() == [3.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "y_true, y_score, match",
    [
        ([[1, 0]], [0.1, 0.2], exact(ARRAYS_NOT_1D_MESSAGE, true_shape=(1, 2), score_shape=(2,))),
        ([1, 0, 1], [0.1, 0.2], exact(ARRAYS_LENGTH_MESSAGE, n_true=3, n_score=2)),
        ([], [], exact(Y_TRUE_EMPTY_MESSAGE)),
        ([1, 0], [0.1, np.inf], exact(SCORES_NONFINITE_MESSAGE, name="y_score")),
        ([1, 2], [0.1, 0.2], prefix(NOT_BINARY_MESSAGE, name="y_true", accepted=BINARY_SIGNED)),
    ],
)
def test_check_arrays_refuses_bad_arrays(y_true, y_score, match):
    with pytest.raises(ValueError, match=match):
        check_arrays(y_true, y_score)


def test_undefined_is_nan_with_the_message():
    with pytest.warns(UndefinedMetricWarning, match=exact(UNDEFINED_MESSAGE, metric="m", missing="positive")):
        assert math.isnan(undefined("m", "positive"))


def test_checked_weights_passes_none_and_checks_weights():
    assert checked_weights(None, 3) is None
    weights = checked_weights([1, 2, 0], 3)
    assert weights.dtype == np.float64 and weights.tolist() == [1.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="`sample_weight`"):  # the message is check_sample_weight's (tests/_utils)
        checked_weights([1.0, -1.0, 1.0], 3)
