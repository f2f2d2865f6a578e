"""Group labels for :class:`~quantile_surrogate.QuantileClassifier` (private).

``fit(X, y, groups=...)`` accepts any labels (strings, integers); the losses and
:func:`~quantile_surrogate.training.train` take integer codes 0..G-1. These helpers do
the encoding at fit time (``numpy.unique(return_inverse=True)``) and the lookup at
prediction time, with the error messages kept as constants for the tests to ``match=``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "encode_groups",
    "group_codes",
    "GROUPS_MISSING_MESSAGE",
    "GROUPS_UNEXPECTED_MESSAGE",
    "GROUPS_UNSEEN_MESSAGE",
    "GROUP_WITHOUT_SUBSET_MESSAGE",
    "GROUPS_SHAPE_MESSAGE",
    "GROUPS_NONFINITE_MESSAGE",
    "GROUPS_MISSING_LABELS_MESSAGE",
    "GROUPS_INCOMPARABLE_MESSAGE",
]

GROUPS_MISSING_MESSAGE = (
    "This classifier was fitted with `sensitive_features` ({count} groups), so every row needs its group's "
    "threshold: pass `sensitive_features=` with one group label per row of X."
)
GROUPS_UNEXPECTED_MESSAGE = (
    "This classifier was fitted without `sensitive_features`, so it has one threshold; pass "
    "sensitive_features=None (or refit with fit(X, y, sensitive_features=...))."
)
GROUPS_UNSEEN_MESSAGE = (
    "`sensitive_features` holds labels not seen in fit: {shown}. The fitted groups are {known}; a group needs "
    "training rows for its threshold."
)
GROUP_WITHOUT_SUBSET_MESSAGE = (
    "Group {group!r} has no row of the subset A ({subset}) for objective={objective!r}, so its threshold "
    "is undefined. Merge it with another group or drop its rows."
)
GROUPS_SHAPE_MESSAGE = (
    "`sensitive_features` has shape {shape}; pass one group label per row of X ({n}), e.g. a 1-D array or a pandas Series."
)

GROUPS_NONFINITE_MESSAGE = "`sensitive_features` contains NaN or inf; give those rows a group label of their own or drop them."
GROUPS_MISSING_LABELS_MESSAGE = (
    "`sensitive_features` has {count} missing labels (None or NaN; the first in row {row}); give those rows a group "
    "label of their own (e.g. 'unknown') or drop them."
)
GROUPS_INCOMPARABLE_MESSAGE = (
    "`sensitive_features` labels must be comparable with each other (all strings or all numbers, no None); numpy.unique "
    "failed: {error}"
)


def _refuse_missing(groups) -> None:
    """A ``ValueError`` naming the count and first row of missing labels in an object array: a text column read by
    pandas holds NaN (a float) where a value is missing, which ``numpy.unique`` cannot order among strings."""
    if groups.dtype.kind == "O":
        missing = np.flatnonzero(pd.isna(groups))
        if missing.size:
            raise ValueError(GROUPS_MISSING_LABELS_MESSAGE.format(count=missing.size, row=int(missing[0])))


def encode_groups(groups, n: int):
    """``(labels, codes)``: the sorted unique group labels, shape (G,), and int64 codes 0..G-1, shape (n,)."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(GROUPS_SHAPE_MESSAGE.format(shape=groups.shape, n=n))
    if groups.dtype.kind in "fc" and not np.isfinite(groups).all():
        raise ValueError(GROUPS_NONFINITE_MESSAGE)
    _refuse_missing(groups)
    try:
        labels, codes = np.unique(groups, return_inverse=True)
    except TypeError as error:
        raise TypeError(GROUPS_INCOMPARABLE_MESSAGE.format(error=error)) from error
    return labels, codes.reshape(-1).astype(np.int64)


def group_codes(known, groups, n: int):
    """Codes into the fitted labels ``known`` for prediction; None when fitted without groups (``known`` None)."""
    if known is None:
        if groups is not None:
            raise ValueError(GROUPS_UNEXPECTED_MESSAGE)
        return None
    if groups is None:
        raise ValueError(GROUPS_MISSING_MESSAGE.format(count=len(known)))
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(GROUPS_SHAPE_MESSAGE.format(shape=groups.shape, n=n))
    _refuse_missing(groups)
    try:
        codes = np.clip(np.searchsorted(known, groups), 0, len(known) - 1)
        seen = np.asarray(known[codes] == groups, dtype=bool)
    except (TypeError, ValueError):  # labels of another kind than in fit (numbers against strings)
        codes, seen = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    if seen.shape != (n,) or not seen.all():
        unseen = groups if seen.shape != (n,) else groups[~seen]
        shown = sorted({str(v) for v in unseen[:1000].tolist()})[:5]
        raise ValueError(GROUPS_UNSEEN_MESSAGE.format(shown=shown, known=known[:10].tolist()))
    return codes.astype(np.int64)
