"""Argument checks: TypeError for a wrong type, ValueError for a wrong value, messages naming the argument."""

import math

import numpy as np
import pytest
import torch

from quantile_surrogate._utils import checks as V
from tests._messages import exact, prefix


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: V.check_number("0.5", "rate"), TypeError, exact(V.NUMBER_TYPE_MESSAGE, name="rate", type_name="str")),
        (lambda: V.check_number(True, "rate"), TypeError, exact(V.NUMBER_TYPE_MESSAGE, name="rate", type_name="bool")),
        (lambda: V.check_level(1.5), ValueError, exact(V.LEVEL_RANGE_MESSAGE, name="level", value=1.5)),
        (lambda: V.check_level(-0.0001, "low"), ValueError, prefix(V.LEVEL_RANGE_MESSAGE, name="low")),
        (lambda: V.check_target(0.0, "recall"), ValueError, exact(V.TARGET_RANGE_MESSAGE, name="recall", value=0.0)),
        (lambda: V.check_target(1.0, "fpr"), ValueError, prefix(V.TARGET_RANGE_MESSAGE, name="fpr")),
        (lambda: V.check_target(math.nan, "rate"), ValueError, prefix(V.TARGET_RANGE_MESSAGE, name="rate")),
        (lambda: V.check_targets(0.5, "recalls"), TypeError, prefix(V.TARGETS_TYPE_MESSAGE, name="recalls")),
        (lambda: V.check_targets("0.5", "recalls"), TypeError, prefix(V.TARGETS_TYPE_MESSAGE, name="recalls")),
        (lambda: V.check_targets((), "recalls"), ValueError, exact(V.TARGETS_EMPTY_MESSAGE, name="recalls")),
        (lambda: V.check_targets((0.2, 1.0), "recalls"), ValueError, prefix(V.TARGET_RANGE_MESSAGE, name="recalls")),
        (lambda: V.check_bandwidth(0.0), ValueError, exact(V.BANDWIDTH_MESSAGE, value=0.0)),
        (lambda: V.check_bandwidth(math.inf), ValueError, exact(V.BANDWIDTH_MESSAGE, value=math.inf)),
        (lambda: V.check_option("exp", ("logistic", "hinge"), "surrogate"), ValueError,
         exact(V.OPTION_MESSAGE, name="surrogate", options=["hinge", "logistic"], value="exp")),
        (lambda: V.check_option(None, ("logistic", "hinge"), "surrogate"), TypeError,
         prefix(V.OPTION_TYPE_MESSAGE, name="surrogate")),
        (lambda: V.check_reduction("avg"), ValueError, exact(V.REDUCTION_MESSAGE, value="avg")),
        (lambda: V.check_reduction(1), TypeError, prefix(V.OPTION_TYPE_MESSAGE, name="reduction")),
        (lambda: V.check_bool(1, "return_threshold"), TypeError, exact(V.BOOL_MESSAGE, name="return_threshold", type_name="int", value=1)),
        (lambda: V.check_scores([1.0], "scores"), TypeError, exact(V.NOT_TENSOR_MESSAGE, name="scores", type_name="list")),
        (lambda: V.check_scores(torch.tensor([1, 2])), TypeError, exact(V.NOT_FLOAT_MESSAGE, name="scores", dtype=torch.int64)),
        (lambda: V.check_scores(torch.ones(2, 2)), ValueError, exact(V.NOT_1D_MESSAGE, name="scores", shape=(2, 2))),
        (lambda: V.check_scores(torch.ones(0), "threshold_scores"), ValueError, exact(V.EMPTY_MESSAGE, name="threshold_scores")),
        (lambda: V.check_labels(np.array([0, 1]), 2), TypeError, exact(V.NOT_TENSOR_MESSAGE, name="labels", type_name="ndarray")),
        (lambda: V.check_labels([0, 1], 2), TypeError, exact(V.NOT_TENSOR_MESSAGE, name="labels", type_name="list")),
        (lambda: V.check_labels(torch.tensor([0, 1, 1]), 2), ValueError, exact(V.LENGTH_MISMATCH_MESSAGE, name="labels", got=3, expected=2)),
        (lambda: V.check_labels(torch.tensor([[0, 1]]), 2), ValueError, prefix(V.NOT_1D_MESSAGE, name="labels")),
        (lambda: V.check_labels(torch.tensor([0, 2]), 2), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (lambda: V.check_labels(torch.tensor([-1, 1]), 2), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (lambda: V.check_labels(torch.tensor([0.0, 0.5]), 2), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (lambda: V.check_labels(torch.tensor([0.0, math.nan]), 2), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (lambda: V.check_mask(torch.tensor([0, 1]), 2, "subset"), TypeError, exact(V.MASK_DTYPE_MESSAGE, name="subset", dtype=torch.int64)),
        (lambda: V.check_mask(torch.tensor([True]), 2, "subset"), ValueError, exact(V.LENGTH_MISMATCH_MESSAGE, name="subset", got=1, expected=2)),
        (lambda: V.check_groups(torch.zeros(2), 2), TypeError, exact(V.GROUPS_TYPE_MESSAGE, name="groups")),
        (lambda: V.check_groups(torch.tensor([0, -1]), 2), ValueError, prefix(V.GROUPS_NEGATIVE_MESSAGE, name="groups")),
        (lambda: V.check_groups(torch.tensor([0]), 2, "threshold_groups"), ValueError, prefix(V.GROUPS_SHAPE_MESSAGE, name="threshold_groups")),
        (lambda: V.check_labels(torch.tensor([0j, 1j]), 2), TypeError, exact(V.LABELS_DTYPE_MESSAGE, dtype=torch.complex64)),
        (lambda: V.check_integer(2.0, "max_epochs", 0), TypeError,
         exact(V.INTEGER_TYPE_MESSAGE, name="max_epochs", wanted="an integer >= 0", type_name="float", value=2.0, example=1)),
        (lambda: V.check_integer(True, "batch_size", 1, allow_none=True), TypeError,
         prefix(V.INTEGER_TYPE_MESSAGE, name="batch_size", wanted="an integer >= 1 or None", type_name="bool")),
        (lambda: V.check_integer(0, "n_restarts", 1), ValueError,
         exact(V.INTEGER_RANGE_MESSAGE, name="n_restarts", wanted="an integer >= 1", value=0)),
        (lambda: V.check_finite_number(1.0, "momentum", low=0.0, low_inclusive=True, high=1.0), ValueError,
         exact(V.FINITE_NUMBER_MESSAGE, name="momentum", interval="[0, 1)", value=1.0)),
        (lambda: V.check_finite_number(math.inf, "learning_rate", low=0.0, low_inclusive=False), ValueError,
         exact(V.FINITE_NUMBER_MESSAGE, name="learning_rate", interval="(0, inf)", value=math.inf)),
        (lambda: V.check_training_data(torch.ones(3), torch.ones(3)), ValueError, exact(V.NOT_2D_MESSAGE, name="X", shape=(3,))),
        (lambda: V.check_training_data(torch.tensor([[1.0], [math.nan]]), torch.ones(2)), ValueError,
         exact(V.DATA_NONFINITE_MESSAGE, name="X")),
        (lambda: V.check_training_data(torch.ones(3, 1), torch.ones(2), "X_val", "y_val"), ValueError,
         exact(V.LABELS_PER_ROW_MESSAGE, name="y_val", name_x="X_val", n=3, shape=(2,))),
        (lambda: V.check_group_codes(torch.zeros(2), torch.ones(2, dtype=torch.bool), subset="positives",
                                     objective="precision_at_recall"), TypeError, exact(V.GROUP_CODES_TYPE_MESSAGE, name="groups")),
        (lambda: V.check_group_codes(torch.tensor([0, 1, 1]), torch.ones(2, dtype=torch.bool), subset="positives",
                                     objective="precision_at_recall"), ValueError, exact(V.GROUPS_SHAPE_MESSAGE, name="groups", shape=(3,), n=2)),
        (lambda: V.check_group_codes(torch.tensor([0, -1]), torch.ones(2, dtype=torch.bool), subset="positives",
                                     objective="precision_at_recall"), ValueError, exact(V.GROUPS_NEGATIVE_MESSAGE, name="groups", value=-1)),
        (lambda: V.check_group_codes(torch.tensor([0, 1, 2]), torch.tensor([True, False, False]), subset="positives",
                                     objective="precision_at_recall"), ValueError,
         exact(V.GROUP_WITHOUT_A_MESSAGE, group=1, name="groups", subset="positives", objective="precision_at_recall",
               more=" (groups without A: [1, 2]).")),
        (lambda: V.check_sample_weight("heavy", 2), TypeError, exact(V.WEIGHT_TYPE_MESSAGE, name="sample_weight", type_name="str")),
        (lambda: V.check_sample_weight([1.0, 2.0], 3), ValueError, exact(V.WEIGHT_SHAPE_MESSAGE, name="sample_weight", shape=(2,), n=3)),
        (lambda: V.check_sample_weight([1.0, math.nan, math.inf], 3, "weight"), ValueError,
         exact(V.WEIGHT_NONFINITE_MESSAGE, name="weight", count=2)),
        (lambda: V.check_sample_weight([1.0, -2.0, -0.5], 3), ValueError,
         exact(V.WEIGHT_NEGATIVE_MESSAGE, name="sample_weight", count=2, low=np.float64(-2.0))),
        (lambda: V.check_sample_weight([0.0, 0.0], 2), ValueError, exact(V.WEIGHT_ZERO_MESSAGE, name="sample_weight")),
    ],
)
def test_each_check_raises_the_right_error_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_accepted_values_pass_through():
    assert V.check_number(np.float32(0.25), "rate") == 0.25
    assert V.check_number(torch.tensor(0.5), "rate") == 0.5
    assert V.check_targets([0.1, 0.9], "recalls") == (0.1, 0.9)
    assert V.check_bool(np.bool_(True), "validate_args") is True
    for labels in (torch.tensor([0, 1, 1]), torch.tensor([0.0, 1.0, 1.0]), torch.tensor([False, True, True]),
                   torch.tensor([0, 1, 1], dtype=torch.uint8)):
        assert V.check_labels(labels, 3).tolist() == [False, True, True]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_all_finite_detects_every_non_finite_value(dtype):
    values = torch.linspace(-3, 3, 1000).to(dtype)
    assert V.all_finite(values)
    for bad in (math.nan, math.inf, -math.inf):
        broken = values.clone()
        broken[517] = bad
        assert not V.all_finite(broken)
    both = values.clone()
    both[3], both[4] = math.inf, -math.inf  # their sum is NaN, still caught
    assert not V.all_finite(both)
    with pytest.raises(ValueError, match=exact(V.NONFINITE_MESSAGE, name="scores", count=1, total=1000)):
        V.check_scores(broken)


def test_all_finite_is_not_fooled_by_an_overflowing_sum():
    # Finite values whose sum overflows: the one-reduction test fails, the exact check decides.
    huge = torch.full((10,), 3e38, dtype=torch.float32)
    assert not math.isfinite(float(huge.sum()))
    assert V.all_finite(huge)
    half = torch.full((100_000,), 65000.0, dtype=torch.float16)  # summed in float32: no overflow
    assert V.all_finite(half)


@pytest.mark.parametrize(
    "scores, labels, error, match",
    [
        (torch.tensor([0.5, math.nan]), torch.tensor([0, 1]), ValueError, exact(V.NONFINITE_MESSAGE, name="scores", count=1, total=2)),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 2]), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        # integer labels are checked on their float cast: no integer outside {0, 1} casts into it
        (torch.tensor([0.5, 1.0]), torch.tensor([0, -1]), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 2**62 + 1]), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (torch.tensor([0.5, 1.0], dtype=torch.float16), torch.tensor([0, 70_000]), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (torch.tensor([0.5, 1.0], dtype=torch.float64), torch.tensor([1.0, 1.0 + 1e-12], dtype=torch.float64),
         ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (torch.tensor([0.5, 1.0]), torch.tensor([0.0, 0.5]), ValueError, prefix(V.NOT_BINARY_MESSAGE, name="labels")),
        (torch.tensor([0.5, 1.0]), [0, 1], TypeError, exact(V.NOT_TENSOR_MESSAGE, name="labels", type_name="list")),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 1, 1]), ValueError, exact(V.LENGTH_MISMATCH_MESSAGE, name="labels", got=3, expected=2)),
        ([0.5, 1.0], torch.tensor([0, 1]), TypeError, exact(V.NOT_TENSOR_MESSAGE, name="scores", type_name="list")),
    ],
)
def test_the_fused_check_raises_what_the_separate_checks_raise(scores, labels, error, match):
    with pytest.raises(error, match=match):
        V.check_scores_and_targets(scores, labels)


def test_the_fused_check_returns_the_labels_as_zero_one_floats():
    scores = torch.tensor([3e38, 3e38, 1.0], dtype=torch.float32)  # finite, with an overflowing sum
    for labels in (torch.tensor([0, 1, 1]), torch.tensor([0.0, 1.0, 1.0]), torch.tensor([False, True, True])):
        assert V.check_scores_and_targets(scores, labels).tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("scores_dtype, targets_dtype", [(torch.float16, torch.float32), (torch.bfloat16, torch.float32),
                                                         (torch.float32, torch.float32), (torch.float64, torch.float64)])
def test_the_fused_check_returns_the_labels_as_floats_wide_enough_to_count(scores_dtype, targets_dtype):
    scores = torch.tensor([0.5, 1.0, 2.0], dtype=scores_dtype)
    for labels in (torch.tensor([0, 1, 1]), torch.tensor([0, 1, 1], dtype=torch.uint8), torch.tensor([0.0, 1.0, 1.0]),
                   torch.tensor([False, True, True])):
        targets = V.check_scores_and_targets(scores, labels)
        assert targets.dtype == targets_dtype and targets.tolist() == [0.0, 1.0, 1.0]
