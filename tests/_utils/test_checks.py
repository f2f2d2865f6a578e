"""Argument checks: TypeError for a wrong type, ValueError for a wrong value, messages naming the argument."""

import math

import numpy as np
import pytest
import torch

from quantile_surrogate._utils import checks as V


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: V.check_number("0.5", "rate"), TypeError, "`rate` must be a real number; got str"),
        (lambda: V.check_number(True, "rate"), TypeError, "`rate` must be a real number; got bool"),
        (lambda: V.check_level(1.5), ValueError, "`level` must be in \\[0, 1\\]; got 1.5"),
        (lambda: V.check_level(-0.0001, "low"), ValueError, "`low` must be in"),
        (lambda: V.check_target(0.0, "recall"), ValueError, "`recall` must be strictly between 0 and 1; got 0.0"),
        (lambda: V.check_target(1.0, "fpr"), ValueError, "`fpr` must be strictly between 0 and 1"),
        (lambda: V.check_target(math.nan, "rate"), ValueError, "`rate` must be strictly between 0 and 1"),
        (lambda: V.check_targets(0.5, "recalls"), TypeError, "`recalls` must be a sequence"),
        (lambda: V.check_targets("0.5", "recalls"), TypeError, "`recalls` must be a sequence"),
        (lambda: V.check_targets((), "recalls"), ValueError, "`recalls` is empty"),
        (lambda: V.check_targets((0.2, 1.0), "recalls"), ValueError, "`recalls` must be strictly between"),
        (lambda: V.check_bandwidth(0.0), ValueError, "`bandwidth` must be a finite number > 0"),
        (lambda: V.check_bandwidth(math.inf), ValueError, "`bandwidth` must be a finite number > 0"),
        (lambda: V.check_option("exp", ("logistic", "hinge"), "surrogate"), ValueError,
         "`surrogate` must be one of \\['hinge', 'logistic'\\]; got 'exp'"),
        (lambda: V.check_option(None, ("logistic", "hinge"), "surrogate"), TypeError,
         "`surrogate` must be a string, one of"),
        (lambda: V.check_reduction("avg"), ValueError, "`reduction` must be one of 'mean', 'sum', 'none'"),
        (lambda: V.check_reduction(1), TypeError, "`reduction` must be a string"),
        (lambda: V.check_bool(1, "return_threshold"), TypeError, "`return_threshold` must be True or False"),
        (lambda: V.check_scores([1.0], "scores"), TypeError, "`scores` must be a torch.Tensor; got list"),
        (lambda: V.check_scores(torch.tensor([1, 2])), TypeError, "`scores` must be a floating point tensor"),
        (lambda: V.check_scores(torch.ones(2, 2)), ValueError, "`scores` must be 1-D"),
        (lambda: V.check_scores(torch.ones(0), "threshold_scores"), ValueError, "`threshold_scores` is empty"),
        (lambda: V.check_labels(np.array([0, 1]), 2), TypeError, "`labels` must be a torch.Tensor; got ndarray"),
        (lambda: V.check_labels([0, 1], 2), TypeError, "`labels` must be a torch.Tensor; got list"),
        (lambda: V.check_labels(torch.tensor([0, 1, 1]), 2), ValueError, "`labels` has 3 entries but `scores` has 2"),
        (lambda: V.check_labels(torch.tensor([[0, 1]]), 2), ValueError, "`labels` must be 1-D"),
        (lambda: V.check_labels(torch.tensor([0, 2]), 2), ValueError, "`labels` must be binary"),
        (lambda: V.check_labels(torch.tensor([-1, 1]), 2), ValueError, "`labels` must be binary"),
        (lambda: V.check_labels(torch.tensor([0.0, 0.5]), 2), ValueError, "`labels` must be binary"),
        (lambda: V.check_labels(torch.tensor([0.0, math.nan]), 2), ValueError, "`labels` must be binary"),
        (lambda: V.check_mask(torch.tensor([0, 1]), 2, "subset"), TypeError, "`subset` must be a bool tensor"),
        (lambda: V.check_mask(torch.tensor([True]), 2, "subset"), ValueError, "`subset` has 1 entries"),
        (lambda: V.check_groups(torch.zeros(2), 2), TypeError, "`groups` must be an integer tensor"),
        (lambda: V.check_groups(torch.tensor([0, -1]), 2), ValueError, "`groups` must hold codes >= 0"),
        (lambda: V.check_groups(torch.tensor([0]), 2, "threshold_groups"), ValueError, "`threshold_groups` has shape"),
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
    with pytest.raises(ValueError, match="`scores` contains NaN or inf \\(1 of 1000 values\\)"):
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
        (torch.tensor([0.5, math.nan]), torch.tensor([0, 1]), ValueError, "`scores` contains NaN or inf \\(1 of 2"),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 2]), ValueError, "`labels` must be binary"),
        # integer labels are checked on their float cast: no integer outside {0, 1} casts into it
        (torch.tensor([0.5, 1.0]), torch.tensor([0, -1]), ValueError, "`labels` must be binary"),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 2**62 + 1]), ValueError, "`labels` must be binary"),
        (torch.tensor([0.5, 1.0], dtype=torch.float16), torch.tensor([0, 70_000]), ValueError, "must be binary"),
        (torch.tensor([0.5, 1.0], dtype=torch.float64), torch.tensor([1.0, 1.0 + 1e-12], dtype=torch.float64),
         ValueError, "`labels` must be binary"),
        (torch.tensor([0.5, 1.0]), torch.tensor([0.0, 0.5]), ValueError, "`labels` must be binary"),
        (torch.tensor([0.5, 1.0]), [0, 1], TypeError, "`labels` must be a torch.Tensor"),
        (torch.tensor([0.5, 1.0]), torch.tensor([0, 1, 1]), ValueError, "`labels` has 3 entries"),
        ([0.5, 1.0], torch.tensor([0, 1]), TypeError, "`scores` must be a torch.Tensor"),
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
