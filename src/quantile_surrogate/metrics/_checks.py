"""The argument checks and the undefined-metric warning shared by the exact metrics (private)."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning

from .._utils.checks import check_binary, check_sample_weight

__all__ = ["UNDEFINED_MESSAGE", "check_arrays", "undefined", "checked_weights"]


UNDEFINED_MESSAGE = "{metric} is undefined: `y_true` has no {missing}. Returning NaN."
ARRAYS_NOT_1D_MESSAGE = "`y_true` and `y_score` must be 1-D; got shapes {true_shape} and {score_shape}."
ARRAYS_LENGTH_MESSAGE = "`y_true` has {n_true} entries but `y_score` has {n_score}."
Y_TRUE_EMPTY_MESSAGE = "`y_true` is empty."
SCORES_NONFINITE_MESSAGE = "`{name}` contains NaN or inf."


def undefined(metric: str, missing: str) -> float:
    warnings.warn(UNDEFINED_MESSAGE.format(metric=metric, missing=missing), UndefinedMetricWarning, stacklevel=3)
    return math.nan


def check_arrays(y_true, y_score):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_score.ndim != 1:
        raise ValueError(ARRAYS_NOT_1D_MESSAGE.format(true_shape=y_true.shape, score_shape=y_score.shape))
    if y_true.shape[0] != y_score.shape[0]:
        raise ValueError(ARRAYS_LENGTH_MESSAGE.format(n_true=y_true.shape[0], n_score=y_score.shape[0]))
    if y_true.shape[0] == 0:
        raise ValueError(Y_TRUE_EMPTY_MESSAGE)
    if not np.isfinite(y_score).all():
        raise ValueError(SCORES_NONFINITE_MESSAGE.format(name="y_score"))
    return check_binary(y_true, "y_true", signed=True), y_score


def checked_weights(sample_weight, n: int):
    """``None``, or the checked float64 frequency weights (one per row; see ``check_sample_weight``)."""
    return None if sample_weight is None else check_sample_weight(sample_weight, n)
