"""quantile_surrogate.quantiles.smooth: the kernel (eq. (13)) and Harrell-Davis estimators, and kernel_weights.

Against float64 references (tests/_reference.py), gradients, and their properties; the cases and
checks shared with tests/quantiles/test_order_statistics.py are in tests/quantiles/_cases.py.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate import quantiles as Q
from quantile_surrogate._utils.checks import (
    BANDWIDTH_MESSAGE,
    LEVEL_RANGE_MESSAGE,
    NONFINITE_MESSAGE,
    NOT_TENSOR_MESSAGE,
    OPTION_MESSAGE,
)
from quantile_surrogate.quantiles.smooth import NOT_ASCENDING_MESSAGE

from tests._messages import exact
from tests.quantiles import _cases as C

REFERENCE_CASES = ("gaussian", "gaussian_wide", "epanechnikov", "harrell_davis")
NAMES = ("gaussian", "epanechnikov", "harrell_davis")

score_lists = st.lists(st.integers(-64, 64).map(lambda v: v / 8), min_size=1, max_size=60)
levels = st.floats(0.0, 1.0)


@pytest.mark.parametrize("name", REFERENCE_CASES)
@pytest.mark.parametrize("n", [1, 7, 50, 333])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_float64_reference(name, n, ties):
    C.check_matches_float64_reference(name, n, ties)


def test_kernel_weights_sum_to_one_and_compact_kernel_is_exactly_zero_outside():
    sorted_scores = torch.sort(torch.randn(200, dtype=torch.float64)).values
    for kernel in Q.KERNELS:
        w = Q.kernel_weights(sorted_scores, 0.3, 0.05, kernel)
        assert float(w.sum()) == pytest.approx(1.0, abs=1e-12)
        assert bool((w >= 0).all())
    w = Q.kernel_weights(sorted_scores, 0.3, 0.05, "epanechnikov")
    u = (torch.arange(1, 201, dtype=torch.float64) / 200 - 0.3) / 0.05
    assert bool((w[u.abs() >= 1] == 0).all())
    assert bool((w[u.abs() < 0.99] > 0).all())


def test_kernel_tied_scores_take_the_largest_rank():
    # Ranks of [1, 1, 2]: i* = 2, 2, 3. With an Epanechnikov window centred on 2/3 and
    # half-width 0.2, only i*/n = 2/3 is inside: the tied pair gets all the weight.
    # (tests/quantiles/test_rank_selection.py checks the ranks themselves.)
    scores = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
    assert float(Q.kernel_quantile(scores, 2 / 3, 0.2, "epanechnikov")) == pytest.approx(1.0)


def test_tiny_bandwidth_does_not_underflow():
    scores = torch.randn(1000, dtype=torch.float64)
    got = Q.kernel_quantile(scores, 0.5, 1e-6)
    assert math.isfinite(float(got))
    assert float(got) == pytest.approx(float(Q.point_quantile(scores, 0.5)))


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck(name):
    C.check_gradcheck(name)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(values=score_lists, level=levels, seed=st.integers(0, 2**16))
def test_between_min_and_max_and_permutation_invariant(name, values, level, seed):
    C.check_between_min_and_max_and_permutation_invariant(name, values, level, seed)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(values=score_lists, a=levels, b=levels)
def test_non_decreasing_in_level(name, values, a, b):
    C.check_non_decreasing_in_level(name, values, a, b)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(values=score_lists, level=levels, shift=st.integers(-40, 40).map(lambda v: v / 4),
       scale=st.sampled_from([0.25, 0.5, 2.0, 4.0]))
def test_shift_and_scale_equivariant(name, values, level, shift, scale):
    C.check_shift_and_scale_equivariant(name, values, level, shift, scale)


def test_gap_to_full_set_shrinks_like_inverse_square_root_of_sample_size():
    """Lemma 1 for the kernel estimator."""
    C.check_gap_shrinks_like_inverse_square_root(lambda s: Q.kernel_quantile(s, 0.1, 0.05))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scores, level, message, fields", C.BAD_INPUTS)
def test_bad_input_raises_value_error_naming_the_argument(name, scores, level, message, fields):
    C.check_bad_input_raises_value_error_naming_the_argument(name, scores, level, message, fields)


@pytest.mark.parametrize("bandwidth", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_bandwidth(bandwidth):
    with pytest.raises(ValueError, match=exact(BANDWIDTH_MESSAGE, value=bandwidth)):
        Q.kernel_quantile(torch.tensor([1.0, 2.0]), 0.5, bandwidth)


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="kernel", options=sorted(Q.KERNELS), value="box")):
        Q.kernel_quantile(torch.tensor([1.0, 2.0]), 0.5, kernel="box")


@pytest.mark.parametrize("ties", [False, True])
def test_vectorised_references_match_the_loops(ties):
    for name in NAMES:
        C.check_vectorised_reference_matches_the_loop(name, ties)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("autocast", [False, True])
def test_half_precision_matches_the_float64_reference_above_65504_rows(dtype, autocast):
    C.check_half_precision_matches_the_float64_reference(NAMES, dtype, autocast)


def test_kernel_weights_refuse_what_would_give_meaningless_weights():
    ascending = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=exact(NOT_ASCENDING_MESSAGE)):
        Q.kernel_weights(torch.tensor([2.0, 1.0, 3.0]), 0.5, 0.1)
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="kernel", options=sorted(Q.KERNELS),
                                               value="triangular")):
        Q.kernel_weights(ascending, 0.5, 0.1, "triangular")
    with pytest.raises(ValueError, match=exact(BANDWIDTH_MESSAGE, value=0.0)):
        Q.kernel_weights(ascending, 0.5, 0.0)
    with pytest.raises(ValueError, match=exact(LEVEL_RANGE_MESSAGE, name="level", value=1.5)):
        Q.kernel_weights(ascending, 1.5, 0.1)
    with pytest.raises(ValueError, match=exact(NONFINITE_MESSAGE, name="sorted_scores", count=1, total=2)):
        Q.kernel_weights(torch.tensor([1.0, float("nan")]), 0.5, 0.1)
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="sorted_scores", type_name="list")):
        Q.kernel_weights([1.0, 2.0], 0.5, 0.1)
