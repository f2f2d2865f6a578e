"""The one splitting home: each split equals the scikit-learn draw the estimators made before it existed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import StratifiedKFold, train_test_split

from quantile_surrogate.selection._splits import (
    MIN_ROWS_PER_STRATUM,
    TOO_FEW_ROWS_MESSAGE,
    calibration_split,
    groups_on_both_sides,
    k_folds,
    shuffle_splits,
    split_strata,
)
from tests._messages import exact


def labels(n, seed, groups=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    y[:MIN_ROWS_PER_STRATUM * 2] = [0, 1] * MIN_ROWS_PER_STRATUM  # both classes
    codes = None if groups == 0 else np.arange(n) % groups
    return y, codes


@settings(max_examples=40, deadline=None)
@given(n=st.integers(30, 300), fraction=st.floats(0.1, 0.5), seed=st.integers(0, 2**31 - 1),
       groups=st.integers(0, 3))
def test_the_first_shuffle_split_is_train_test_splits(n, fraction, seed, groups):
    # QuantileClassifier's validation split was train_test_split's; boosting's were StratifiedShuffleSplit's.
    y, codes = labels(n, seed, groups)
    pairs = shuffle_splits(y, codes, fraction=fraction, n_splits=3, seed=seed)
    if not pairs:
        return
    fit, val = train_test_split(np.arange(n), test_size=int(round(fraction * n)), stratify=split_strata(y, codes),
                                random_state=seed)
    assert np.array_equal(pairs[0][0], fit) and np.array_equal(pairs[0][1], val)
    assert len(pairs) == 3


def test_a_small_stratum_or_side_means_no_split():
    y = np.array([0] * 40 + [1] * (MIN_ROWS_PER_STRATUM - 1))
    assert shuffle_splits(y, None, fraction=0.2, n_splits=1, seed=0) == []
    y = np.array([0] * 40 + [1] * 10)
    assert shuffle_splits(y, None, fraction=0.01, n_splits=1, seed=0) == []  # 0 validation rows
    assert len(shuffle_splits(y, None, fraction=0.2, n_splits=1, seed=0)) == 1
    # 4 strata (class x group) but 3 validation rows: no stratified split, not scikit-learn's ValueError
    y, codes = np.array([0, 1] * 15), np.arange(30) % 4 // 2
    assert shuffle_splits(y, codes, fraction=0.1, n_splits=1, seed=0) == []
    assert len(shuffle_splits(y, codes, fraction=0.2, n_splits=1, seed=0)) == 1


def test_groups_must_keep_rows_of_the_subset_on_both_sides():
    codes = np.array([0, 0, 1, 1])
    in_subset = np.array([True, True, True, False])
    assert groups_on_both_sides(codes, [(np.array([0, 2]), np.array([1, 3]))])
    assert not groups_on_both_sides(codes, [(np.array([0, 2]), np.array([1, 3]))], in_subset)  # group 1's A: one side


def test_k_folds_are_stratified_k_fold_over_the_cells():
    y, codes = labels(120, 0, groups=2)
    folds = k_folds(y, codes, 3, 2**32 + 5)
    expected = StratifiedKFold(3, shuffle=True, random_state=5).split(np.zeros((120, 1)), split_strata(y, codes))
    for (a, b), (c, d) in zip(folds, expected):
        assert np.array_equal(a, c) and np.array_equal(b, d)


def test_too_few_rows_for_the_folds_name_the_fix():
    y = np.array([0] * 10 + [1, 1])
    with pytest.raises(ValueError, match=exact(TOO_FEW_ROWS_MESSAGE, cv=3, cells="", smallest=2, merge="")):
        k_folds(y, None, 3, 0)
    with pytest.raises(ValueError, match=exact(TOO_FEW_ROWS_MESSAGE, cv=3, cells=" in every group", smallest=2,
                                               merge=", or merge small groups")):
        k_folds(y, np.zeros(12, dtype=int), 3, 0)


def test_a_splitter_gets_the_splitters_groups():
    from sklearn.model_selection import GroupKFold

    y, _ = labels(60, 1)
    sessions = np.arange(60) // 6
    for fit, held in k_folds(y, None, GroupKFold(3), 0, X=np.zeros((60, 1)), groups=sessions):
        assert not set(sessions[fit]) & set(sessions[held])


def test_calibration_split_falls_back_to_the_class_for_single_row_cells():
    y = np.array([0] * 30 + [1] * 10)
    codes = np.array([0] * 29 + [1] + [0] * 10)  # the cell (class 0, group 1) has one row
    X = np.arange(40.0)[:, None]
    parts = calibration_split((X, y, codes), y, codes, size=0.25, random_state=0)
    expected = train_test_split(X, y, codes, test_size=0.25, stratify=y, random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip(parts, expected))
    codes = np.arange(40) % 2
    parts = calibration_split((X, y, codes), y, codes, size=0.25, random_state=0)
    expected = train_test_split(X, y, codes, test_size=0.25, stratify=split_strata(y, codes), random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip(parts, expected))


def test_strata_are_the_class_or_the_cell():
    assert split_strata(np.array([0, 1])).tolist() == [0, 1]
    assert split_strata(np.array([0, 1, 0, 1]), np.array([0, 0, 2, 2])).tolist() == [0, 1, 4, 5]
