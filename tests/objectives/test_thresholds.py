"""quantile_surrogate.objectives.thresholds: the allowed count, the exact training threshold and its tie policy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate._utils.checks import (
    BINARY_01,
    GROUPS_NEGATIVE_MESSAGE,
    GROUPS_SHAPE_MESSAGE,
    LENGTH_MISMATCH_MESSAGE,
    NOT_BINARY_MESSAGE,
    NUMBER_TYPE_MESSAGE,
    TARGET_RANGE_MESSAGE,
)
from quantile_surrogate._utils.counts import count
from quantile_surrogate._utils.group_checks import GROUP_ARRAY_TYPE_MESSAGE, GROUP_CODE_RANGE_MESSAGE
from quantile_surrogate.objectives import OBJECTIVES
from quantile_surrogate.objectives.thresholds import (
    EMPTY_CONSTRAINT_MESSAGE,
    GROUP_ERROR_MESSAGE,
    TIE_POLICY,
    TIED_SCORES_MESSAGE,
    TiedScoresWarning,
    allowed_count,
    constraint_threshold,
    group_constraint_thresholds,
)

from tests._messages import exact

NAMES = sorted(OBJECTIVES)


@pytest.mark.parametrize("size,target,expected", [
    (30, 0.1, {"precision_at_recall": 3, "precision_at_rate": 3, "recall_at_fpr": 3}),
    (100, 0.07, {"precision_at_recall": 7, "precision_at_rate": 7, "recall_at_fpr": 7}),  # 0.07 * 100 = 7.000000000000001
    (20, 0.07, {"precision_at_recall": 2, "precision_at_rate": 2, "recall_at_fpr": 1}),
    (10, 0.01, {"precision_at_recall": 1, "precision_at_rate": 1, "recall_at_fpr": 0}),
])
def test_allowed_count_rounding(size, target, expected):
    assert {name: allowed_count(name, size, target) for name in NAMES} == expected


@settings(max_examples=100, deadline=None)
@given(size=st.one_of(st.integers(0, 10_000), st.floats(0.0, 1e4)), target=st.floats(0.001, 0.999))
def test_allowed_count_is_the_one_count_rule(size, target):
    """A floor (recall) and a capacity (rate) round up, at least one row; an FPR rounds down, possibly to none."""
    for name in NAMES:
        rounding = OBJECTIVES[name].rounding
        assert allowed_count(name, size, target) == count(target, size, rounding, at_least_one=rounding == "ceil")


def _rows_above(scores, labels, name, theta):
    return int(np.count_nonzero(scores[np.asarray(OBJECTIVES[name].subset_mask(labels == 1))] > theta))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(NAMES), st.integers(2, 8))
def test_heavy_ties_never_break_the_constraint(seed, name, distinct):
    """With only a few distinct scores: a floor is never missed and a ceiling never exceeded."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    scores = rng.integers(0, distinct, n).astype(float)
    labels = (rng.random(n) < 0.3).astype(int)
    labels[:2] = [1, 0]
    target = float(rng.choice([0.05, 0.1, 0.3, 0.5, 0.9]))
    size = int(np.count_nonzero(OBJECTIVES[name].subset_mask(labels == 1)))
    k = allowed_count(name, size, target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theta = constraint_threshold(scores, labels, objective=name, target=target)
    above = _rows_above(scores, labels, name, theta)
    if OBJECTIVES[name].bound == "at_least":
        assert above >= k
    else:
        assert above <= k
    # The warning is given exactly when the count asked for is impossible.
    tied_warnings = [w for w in caught if issubclass(w.category, TiedScoresWarning)]
    assert bool(tied_warnings) == (above != k)


def test_capacity_is_not_exceeded_with_eight_distinct_scores():
    # The case the issue found: rate 0.05 on eight distinct scores predicted 12.6 % of the rows.
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 8, 1000).astype(float)
    labels = (rng.random(1000) < 0.2).astype(int)
    with pytest.warns(TiedScoresWarning) as caught:
        theta = constraint_threshold(scores, labels, objective="precision_at_rate", target=0.05)
    above = int(np.sum(scores > theta))
    assert above <= 50
    assert str(caught[0].message) == TIED_SCORES_MESSAGE.format(
        above=above, size=1000, subset="all", achieved=above / 1000, target=0.05, bound="at most", wanted=50,
        policy=TIE_POLICY["at_most"])


def test_an_empty_subset_is_refused_and_a_group_names_itself():
    with pytest.raises(ValueError, match=exact(EMPTY_CONSTRAINT_MESSAGE, objective="precision_at_recall", weighted="")):
        constraint_threshold([0.1, 0.2], [0, 0], objective="precision_at_recall", target=0.5)
    with pytest.raises(ValueError, match=exact(EMPTY_CONSTRAINT_MESSAGE, objective="precision_at_recall",
                                               weighted=" of positive `sample_weight`")):
        constraint_threshold([0.1, 0.2], [1, 0], objective="precision_at_recall", target=0.5, sample_weight=[0, 1])
    empty = EMPTY_CONSTRAINT_MESSAGE.format(objective="precision_at_recall", weighted="")
    with pytest.raises(ValueError, match=exact(GROUP_ERROR_MESSAGE, name="b", error=empty, subset="positives")):
        group_constraint_thresholds([0.1, 0.2, 0.3, 0.4], [1, 0, 0, 0], [0, 0, 1, 1], objective="precision_at_recall",
                                    target=0.5, names=["a", "b"])


def test_one_binary_feature_does_not_predict_every_row():
    scores = np.r_[np.zeros(90), np.ones(10)]
    labels = np.r_[np.zeros(85), np.ones(15)].astype(int)
    with pytest.warns(TiedScoresWarning):
        theta = constraint_threshold(scores, labels, objective="precision_at_rate", target=0.05)
    assert np.mean(scores > theta) == 0.0  # the ten tied rows exceed K = 5, so none of them is taken


def test_distinct_scores_meet_every_count_exactly_and_silently():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal(500)
    labels = (rng.random(500) < 0.2).astype(int)
    for name in NAMES:
        for target in (0.01, 0.05, 0.3, 0.9):
            with warnings.catch_warnings():
                warnings.simplefilter("error", TiedScoresWarning)
                theta = constraint_threshold(scores, labels, objective=name, target=target)
            size = int(np.count_nonzero(OBJECTIVES[name].subset_mask(labels == 1)))
            assert _rows_above(scores, labels, name, theta) == allowed_count(name, size, target)


@pytest.mark.parametrize("name", NAMES)
def test_threshold_sits_between_scores_not_on_one(name):
    scores = np.arange(40.0)
    labels = (np.arange(40) % 4 == 0).astype(int)
    theta = constraint_threshold(scores, labels, objective=name, target=0.3)
    assert not np.isin(theta, scores)
    assert math.isclose(theta % 1.0, 0.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=4, max_size=30), st.integers(0, 2**31 - 1),
       st.sampled_from(["precision_at_recall", "precision_at_rate", "recall_at_fpr"]),
       st.floats(0.05, 0.95))
def test_constraint_threshold_is_the_tightest_one_that_holds(values, seed, objective, target):
    scores = np.array(values, dtype=float)  # small integers: many ties
    labels = np.random.default_rng(seed).integers(0, 2, scores.size)
    labels[:2] = [0, 1]
    spec = OBJECTIVES[objective]
    subset = np.asarray(spec.subset_mask(labels == 1))
    k = allowed_count(objective, int(subset.sum()), target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)  # ties may make exactly k impossible
        theta = constraint_threshold(scores, labels, objective=objective, target=target)
    predicted = scores > theta
    if spec.bound == "at_most":  # a ceiling: never more than k rows of A
        assert predicted[subset].sum() <= k
        # Lowering theta to the next score below would let in more than k rows of A.
        below = scores[scores <= theta]
        if below.size:
            assert (scores[subset] >= below.max()).sum() > k
    else:  # a floor: never fewer than k rows of A
        assert predicted[subset].sum() >= k
        # Raising theta to the lowest predicted score would break the constraint.
        assert (scores[subset] > scores[predicted].min()).sum() < k
    assert not np.isin(theta, scores)  # strictly between scores: rounding cannot flip a row


@pytest.mark.parametrize("target", [1.5, -1, 0, 1.0])
def test_a_target_outside_the_open_unit_interval_is_refused(target):
    with pytest.raises(ValueError, match=exact(TARGET_RANGE_MESSAGE, name="target", value=float(target))):
        constraint_threshold([0.1, 0.2, 0.3], [1, 0, 1], objective="precision_at_recall", target=target)
    with pytest.raises(ValueError, match=exact(TARGET_RANGE_MESSAGE, name="target", value=float(target))):
        group_constraint_thresholds([0.1, 0.2, 0.3], [1, 0, 1], [0, 0, 1], objective="precision_at_rate", target=target)
    with pytest.raises(TypeError, match=exact(NUMBER_TYPE_MESSAGE, name="target", type_name="str")):
        constraint_threshold([0.1, 0.2, 0.3], [1, 0, 1], objective="precision_at_recall", target="0.5")


def test_labels_that_are_not_binary_are_named_not_reported_as_an_empty_subset():
    # {1, 2} labels used to give "the subset has no rows" for recall_at_fpr (no 0) and a wrong A otherwise.
    for labels, values in (([1, 2, 2], [1, 2]), (["no", "yes", "yes"], ["no", "yes"]), ([-1, 1, 1], [-1, 1])):
        with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01,
                                                   values=values)):
            constraint_threshold([0.1, 0.2, 0.3], labels, objective="recall_at_fpr", target=0.5)
        with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01,
                                                   values=values)):
            group_constraint_thresholds([0.1, 0.2, 0.3], labels, [0, 1, 1], objective="recall_at_fpr", target=0.5)
    with pytest.raises(ValueError, match=exact(LENGTH_MISMATCH_MESSAGE, name="labels", got=2, expected=3)):
        constraint_threshold([0.1, 0.2, 0.3], [1, 0], objective="precision_at_rate", target=0.5)


def test_group_codes_of_the_wrong_length_or_kind_are_refused():
    s, y = [0.1, 0.2, 0.3, 0.4], [1, 0, 1, 0]
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, name="groups", shape=(3,), n=4)):
        group_constraint_thresholds(s, y, [0, 0, 1], objective="precision_at_rate", target=0.5)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, name="groups", shape=(5,), n=4)):
        group_constraint_thresholds(s, y, [0, 0, 1, 1, 1], objective="precision_at_rate", target=0.5)
    for groups, dtype in ((["a", "a", "b", "b"], np.dtype("<U1")), ([0.0, 0.0, 1.0, 1.0], np.dtype(float))):
        with pytest.raises(TypeError, match=exact(GROUP_ARRAY_TYPE_MESSAGE, name="groups", dtype=dtype)):
            group_constraint_thresholds(s, y, groups, objective="precision_at_rate", target=0.5)
    with pytest.raises(ValueError, match=exact(GROUPS_NEGATIVE_MESSAGE, name="groups", value=-1)):
        group_constraint_thresholds(s, y, [0, 0, -1, -1], objective="precision_at_rate", target=0.5)
    with pytest.raises(ValueError, match=exact(GROUP_CODE_RANGE_MESSAGE, name="groups", value=2, n_groups=2, last=1)):
        group_constraint_thresholds(s, y, [0, 0, 1, 2], objective="precision_at_rate", target=0.5, n_groups=2)
    # valid codes (a list, an unsigned array, a CPU tensor) give the same thresholds as before
    expected = [0.15, 0.35]
    for groups in ([0, 0, 1, 1], np.array([0, 0, 1, 1], dtype=np.uint8), torch.tensor([0, 0, 1, 1])):
        assert group_constraint_thresholds(s, y, groups, objective="precision_at_rate", target=0.5).tolist() == \
            pytest.approx(expected)


@pytest.mark.parametrize("name", NAMES)
def test_a_single_row_never_warns_of_ties(name):
    # One row cannot be split: neither alone, nor with a weight that overshoots the count asked for.
    positive = 0 if name == "recall_at_fpr" else 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for target in (0.3, 0.5, 0.9):
            constraint_threshold([0.5], [positive], objective=name, target=target)
            constraint_threshold([0.5], [positive], objective=name, target=target, sample_weight=[3])
            # distinct scores, one heavy row at the boundary: the count cannot be met, but no two rows tie
            constraint_threshold([0.9, 0.5, 0.1], [positive] * 3, objective=name, target=target,
                                 sample_weight=[1, 5, 1])
    with pytest.warns(TiedScoresWarning):  # two rows tied at the boundary do warn
        constraint_threshold([0.5, 0.5], [positive] * 2, objective=name, target=0.5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-4, 4), st.booleans()), min_size=1, max_size=60), st.sampled_from(NAMES),
       st.floats(0.01, 0.99), st.booleans())
def test_the_unweighted_selection_equals_the_sorted_path(rows, name, target, spread):
    # Reference: weights of 1 take the sorting path (cumulative sums of ones); unweighted finite scores take one
    # selection (np.partition). Small integer scores make ties common; `spread` adds distinct fractions.
    values = np.array([float(v) + (0.001 * i if spread else 0.0) for i, (v, _) in enumerate(rows)])
    labels = np.array([int(p) for _, p in rows])
    subset = labels == 1 if OBJECTIVES[name].subset == "positives" else (
        labels == 0 if OBJECTIVES[name].subset == "negatives" else np.ones(labels.size, dtype=bool))
    if not subset.any():
        return
    outcomes = []
    for weight in (None, np.ones(labels.size)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            theta = constraint_threshold(values, labels, objective=name, target=target, sample_weight=weight)
        outcomes.append((theta, [str(w.message) for w in caught]))
    assert outcomes[0] == outcomes[1]
