"""quantile_surrogate.quantiles.order_statistics: the point, lower-mean and interval estimators.

Against float64 references (tests/_reference.py), gradients, and their properties; the cases and
checks shared with tests/quantiles/test_smooth.py are in tests/quantiles/_cases.py.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate import quantiles as Q
from quantile_surrogate._utils.checks import NOT_FLOAT_MESSAGE, NOT_TENSOR_MESSAGE, NUMBER_TYPE_MESSAGE
from quantile_surrogate.quantiles.order_statistics import INTERVAL_ORDER_MESSAGE

from tests._messages import exact
from tests.quantiles import _cases as C

NAMES = ("point", "lower_mean", "interval")

# Dyadic values are exact under the shifts and scalings below, so ties stay ties.
score_lists = st.lists(st.integers(-64, 64).map(lambda v: v / 8), min_size=1, max_size=60)
levels = st.floats(0.0, 1.0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 7, 50, 333])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_float64_reference(name, n, ties):
    C.check_matches_float64_reference(name, n, ties)


def test_point_quantile_k_definition_and_k_zero():
    scores = torch.tensor([5.0, 1.0, 4.0, 2.0, 3.0])
    # k = floor(c n): c = 0.4 -> k = 2 -> 2nd smallest.
    assert Q.point_quantile(scores, 0.4) == 2.0
    assert Q.point_quantile(scores, 0.59) == 2.0
    # c < 1/n gives k = 0; documented as the minimum.
    assert Q.point_quantile(scores, 0.1) == 1.0
    assert Q.point_quantile(scores, 1.0) == 5.0
    # 0.29 * 100 is 28.999999999999996 in floating point: it must still count as k = 29.
    assert Q.point_quantile(torch.arange(1.0, 101.0), 0.29) == 29.0


@settings(max_examples=60, deadline=None)
@given(values=score_lists, level=st.floats(0.05, 0.95), name=st.sampled_from(["lower_mean", "interval",
                                                                             "harrell_davis"]))
def test_tied_rows_take_the_positional_coefficients_in_row_order(values, level, name):
    # The estimate's coefficient of each row is its sorted position's, ties in row order (a stable sort): the
    # unit-weight weighted estimate's (and the distributed objective's) order, not an algorithm's choice.
    scores = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    estimate = Q.QUANTILE_ESTIMATORS[name](scores, level, 0.1)
    grad, = torch.autograd.grad(estimate, scores)
    weighted = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    reference = Q.QUANTILE_ESTIMATORS[name](weighted, level, 0.1, weight=torch.ones(len(values), dtype=torch.float64))
    expected, = torch.autograd.grad(reference, weighted)
    torch.testing.assert_close(estimate, reference, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, expected, rtol=1e-12, atol=1e-12)


def test_lower_mean_gives_tied_rows_the_gradient_in_row_order():
    scores = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    Q.lower_mean_quantile(scores, 0.5).backward()  # k = 2 of three tied zeros: the first two
    assert scores.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


def test_point_quantile_gradient_is_one_hot():
    scores = torch.tensor([0.3, -1.0, 2.0, 0.1, 5.0], dtype=torch.float64, requires_grad=True)
    Q.point_quantile(scores, 0.4).backward()  # k = 2: the score 0.1
    assert scores.grad.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]


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


@settings(max_examples=100, deadline=None)
@given(values=score_lists, level=levels)
def test_lower_mean_is_a_lower_bound_of_point(values, level):
    scores = torch.tensor(values, dtype=torch.float64)
    assert float(Q.lower_mean_quantile(scores, level)) <= float(Q.point_quantile(scores, level)) + C.TOL


@settings(max_examples=60, deadline=None)
@given(values=score_lists, a=levels, b=levels, c=levels, d=levels)
def test_interval_non_decreasing_in_both_ends(values, a, b, c, d):
    scores = torch.tensor(values, dtype=torch.float64)
    lo1, hi1 = sorted((a, b))
    lo2, hi2 = max(lo1, min(c, d)), max(hi1, max(c, d))
    if lo1 == hi1 or lo2 >= hi2:
        return
    assert float(Q.interval_quantile(scores, lo1, hi1)) <= float(Q.interval_quantile(scores, lo2, hi2)) + C.TOL


# --- concentration (Lemmas 1 and 2) -------------------------------------------------------


@pytest.mark.parametrize("estimate", [lambda s: Q.interval_quantile(s, 0.05, 0.15), lambda s: Q.point_quantile(s, 0.1)],
                         ids=["interval", "point"])
def test_gap_to_full_set_shrinks_like_inverse_square_root_of_sample_size(estimate):
    C.check_gap_shrinks_like_inverse_square_root(estimate)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scores, level, message, fields", C.BAD_INPUTS)
def test_bad_input_raises_value_error_naming_the_argument(name, scores, level, message, fields):
    C.check_bad_input_raises_value_error_naming_the_argument(name, scores, level, message, fields)


def test_bad_types():
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="scores", type_name="list")):
        Q.point_quantile([1.0, 2.0], 0.5)
    with pytest.raises(TypeError, match=exact(NOT_FLOAT_MESSAGE, name="scores", dtype=torch.int64)):
        Q.point_quantile(torch.tensor([1, 2]), 0.5)
    with pytest.raises(TypeError, match=exact(NUMBER_TYPE_MESSAGE, name="level", type_name="str")):
        Q.point_quantile(torch.tensor([1.0, 2.0]), "0.5")
    with pytest.raises(ValueError, match=exact(INTERVAL_ORDER_MESSAGE, low=0.6, high=0.4)):
        Q.interval_quantile(torch.tensor([1.0, 2.0]), 0.6, 0.4)


# --- half precision (float16, bfloat16), with and without autocast -------------------------


@pytest.mark.parametrize("ties", [False, True])
def test_vectorised_references_match_the_loops(ties):
    for name in NAMES:
        C.check_vectorised_reference_matches_the_loop(name, ties)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("autocast", [False, True])
def test_half_precision_matches_the_float64_reference_above_65504_rows(dtype, autocast):
    C.check_half_precision_matches_the_float64_reference(NAMES, dtype, autocast)
