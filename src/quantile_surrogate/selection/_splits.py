"""The one home of held-out splits: stratified by class, and by (class, group) with group codes.

Every estimator that holds rows out draws them here: :class:`~quantile_surrogate.QuantileClassifier`'s
validation split and K-fold folds, :class:`~quantile_surrogate.QuantileClassifierCV`'s folds,
:class:`~quantile_surrogate.QuantileBoostingClassifier`'s validation splits and
:class:`~quantile_surrogate.GuaranteedThresholdClassifier`'s calibration split. A stratum is the
class, or the (class, group) cell (:func:`split_strata`), so that every group keeps rows of each
class on both sides in proportion. The draws are scikit-learn's (``StratifiedShuffleSplit``,
``StratifiedKFold``, ``train_test_split``) with the seeds the estimators have always passed.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit, check_cv, train_test_split

__all__ = ["MIN_ROWS_PER_STRATUM", "TOO_FEW_ROWS_MESSAGE", "calibration_split", "groups_on_both_sides",
           "k_folds", "shuffle_splits", "split_strata"]

MIN_ROWS_PER_STRATUM = 4
"""A validation split needs this many rows in every stratum (and K-fold selection ``4 K`` per class)."""

TOO_FEW_ROWS_MESSAGE = (
    "`cv={cv}` stratified folds need at least {cv} rows of every class{cells} in the training data; the "
    "smallest has {smallest}. Use a smaller `cv` (at least 2){merge}."
)


def split_strata(classes, codes=None) -> np.ndarray:
    """Stratum codes for a stratified split: the class, or the (class, group) cell with group codes.

    ``classes`` are integer class codes 0..C-1 (0/1 labels); the cell's code is
    ``group * C + class``, so a split stratified by it keeps every group's rows of each class on
    both sides in proportion.

    Examples
    --------
    >>> split_strata([0, 1, 1, 0], [0, 0, 1, 1]).tolist()
    [0, 1, 3, 2]
    """
    classes = np.asarray(classes)
    return classes if codes is None else np.asarray(codes) * (int(classes.max()) + 1) + classes


def _smallest(strata) -> int:
    counts = np.bincount(strata)
    return int(counts[counts > 0].min())


def groups_on_both_sides(codes, pairs, in_subset=None) -> bool:
    """Whether every group has rows (of ``A`` where ``in_subset`` is given) on both sides of every pair.

    Stratifying by (class, group) rounds each cell's share, so a small group's rows of ``A`` can
    all fall on one side; its threshold is then undefined on the other.
    """
    every = len(np.unique(codes))
    for pair in pairs:
        for rows in pair:
            kept = codes[rows] if in_subset is None else codes[rows][in_subset[rows]]
            if len(np.unique(kept)) < every:
                return False
    return True


def shuffle_splits(y01, codes, *, fraction: float, n_splits: int, seed: int, in_subset=None) -> list:
    """``n_splits`` stratified (fit, validation) index pairs holding out ``round(fraction n)`` rows, or [].

    [] when a stratum has fewer than :data:`MIN_ROWS_PER_STRATUM` rows, a side would have fewer
    rows than there are strata (at least 2), or (with ``codes``) a group would miss rows, of ``A`` with ``in_subset``, on a side
    (:func:`groups_on_both_sides`). The pairs are ``StratifiedShuffleSplit(n_splits,
    test_size=n_val, random_state=seed)``'s; the first is also ``train_test_split(arange(n),
    test_size=n_val, stratify=strata, random_state=seed)``'s (tests/selection/test_splits.py).

    Examples
    --------
    >>> y = np.array([0] * 16 + [1] * 4)
    >>> [len(rows) for rows in shuffle_splits(y, None, fraction=0.25, n_splits=1, seed=0)[0]]
    [15, 5]
    """
    n = len(y01)
    strata = split_strata(y01, codes)
    n_val = int(round(fraction * n))
    cells = max(len(np.unique(strata)), 2)  # a stratified side holds a row of every stratum
    if _smallest(strata) < MIN_ROWS_PER_STRATUM or n_val < cells or n - n_val < cells:
        return []
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=n_val, random_state=seed)
    pairs = list(splitter.split(np.zeros((n, 1)), strata))
    if codes is not None and not groups_on_both_sides(codes, pairs, in_subset):
        return []
    return pairs


def k_folds(y01, codes, cv, seed: int, *, X=None, groups=None) -> list:
    """The (fit, held-out) folds: ``cv`` stratified shuffled folds for an integer, else the splitter's own.

    An integer ``cv`` gives ``StratifiedKFold(cv, shuffle=True, random_state=seed % 2**32)`` over
    the strata; a ``ValueError`` (:data:`TOO_FEW_ROWS_MESSAGE`) when a stratum has fewer than
    ``cv`` rows. A splitter (or an iterable of pairs) is called as ``split(X, y01, groups)``,
    ``groups`` scikit-learn's splitter groups, never the constraint's.
    """
    if not isinstance(cv, Integral):
        return [(np.asarray(a), np.asarray(b)) for a, b in check_cv(cv, y01, classifier=True).split(X, y01, groups)]
    strata = split_strata(y01, codes)
    smallest = _smallest(strata)
    if smallest < cv:
        grouped = codes is not None
        raise ValueError(TOO_FEW_ROWS_MESSAGE.format(
            cv=cv, cells=" in every group" if grouped else "", smallest=smallest,
            merge=", or merge small groups" if grouped else ""))
    splitter = StratifiedKFold(cv, shuffle=True, random_state=seed % (2**32))
    return list(splitter.split(np.zeros((len(y01), 1)), strata))


def calibration_split(arrays, y, codes, *, size, random_state) -> list:
    """``train_test_split(*arrays, test_size=size, stratify=..., random_state=random_state)``.

    Stratified by class (``y`` as given), and by (class, group) with ``codes`` unless a cell has a
    single row, which cannot be split in proportion (then by class only; the guarantee's group
    check names a group left short).
    """
    strata = y
    if codes is not None:
        cells = split_strata(np.unique(y, return_inverse=True)[1].reshape(-1), codes)
        if _smallest(cells) >= 2:
            strata = cells
    return train_test_split(*arrays, test_size=size, stratify=strata, random_state=random_state)
