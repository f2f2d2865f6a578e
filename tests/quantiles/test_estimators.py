"""Quantile estimators against float64 references, gradients, and their properties."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate import quantiles as Q
from quantile_surrogate.quantiles._rank_selection import tied_ranks

from tests import _reference as ref

LEVELS = [0.0, 0.004, 0.01, 0.03, 0.05, 0.29, 0.5, 0.71, 0.95, 0.97, 0.99, 0.996, 1.0]

ESTIMATORS = {
    "point": (lambda s, c: Q.point_quantile(s, c), ref.point),
    "gaussian": (lambda s, c: Q.kernel_quantile(s, c, 0.05), lambda s, c: ref.kernel(s, c, 0.05)),
    "gaussian_wide": (lambda s, c: Q.kernel_quantile(s, c, 0.3), lambda s, c: ref.kernel(s, c, 0.3)),
    "epanechnikov": (
        lambda s, c: Q.kernel_quantile(s, c, 0.08, "epanechnikov"),
        lambda s, c: ref.kernel(s, c, 0.08, "epanechnikov"),
    ),
    "lower_mean": (lambda s, c: Q.lower_mean_quantile(s, c), ref.lower_mean),
    "harrell_davis": (lambda s, c: Q.harrell_davis_quantile(s, c), ref.harrell_davis),
    "interval": (
        lambda s, c: Q.interval_quantile(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0)),
        lambda s, c: ref.interval(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0)),
    ),
}


def random_scores(n, seed, ties):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n)
    if ties:
        values = np.round(values * 3) / 3  # many exact ties
    return values


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("n", [1, 7, 50, 333])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_float64_reference(name, n, ties):
    estimate, reference = ESTIMATORS[name]
    values = random_scores(n, seed=n, ties=ties)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        scores = torch.tensor(values, dtype=dtype)
        for level in LEVELS:
            got = estimate(scores, level)
            assert got.dtype == dtype and got.shape == ()
            expected = reference(values.astype(dtype_np(dtype)).astype(np.float64), level)
            assert float(got) == pytest.approx(expected, abs=tol, rel=tol), (name, level)


def dtype_np(dtype):
    return np.float64 if dtype == torch.float64 else np.float32


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


def test_point_quantile_gradient_is_one_hot():
    scores = torch.tensor([0.3, -1.0, 2.0, 0.1, 5.0], dtype=torch.float64, requires_grad=True)
    Q.point_quantile(scores, 0.4).backward()  # k = 2: the score 0.1
    assert scores.grad.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]


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
    scores = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
    assert float(Q.kernel_quantile(scores, 2 / 3, 0.2, "epanechnikov")) == pytest.approx(1.0)
    # Had the tie used ranks 1 and 2, the window would hold only rank 2 and the estimate would still
    # be 1.0; the rank check below is what tells the two rules apart.
    assert tied_ranks(torch.tensor([1.0, 1.0, 2.0])).tolist() == [2, 2, 3]


def test_tiny_bandwidth_does_not_underflow():
    scores = torch.randn(1000, dtype=torch.float64)
    got = Q.kernel_quantile(scores, 0.5, 1e-6)
    assert math.isfinite(float(got))
    assert float(got) == pytest.approx(float(Q.point_quantile(scores, 0.5)))


GRAD_CASES = {
    "point": lambda s: Q.point_quantile(s, 0.3),
    "gaussian": lambda s: Q.kernel_quantile(s, 0.3, 0.1),
    "epanechnikov": lambda s: Q.kernel_quantile(s, 0.7, 0.2, "epanechnikov"),
    "lower_mean": lambda s: Q.lower_mean_quantile(s, 0.4),
    "interval": lambda s: Q.interval_quantile(s, 0.2, 0.6),
    "harrell_davis": lambda s: Q.harrell_davis_quantile(s, 0.8),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    scores = torch.linspace(-2, 3, 17, dtype=torch.float64)[torch.randperm(17, generator=torch.Generator().manual_seed(0))]
    scores = (scores + 0.01 * torch.randn(17, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(GRAD_CASES[name], (scores,), eps=1e-6, atol=1e-7)


# --- properties -------------------------------------------------------------------------

# Dyadic values are exact under the shifts and scalings below, so ties stay ties.
score_lists = st.lists(st.integers(-64, 64).map(lambda v: v / 8), min_size=1, max_size=60)
levels = st.floats(0.0, 1.0)

LEVEL_ESTIMATORS = {
    "point": lambda s, c: Q.point_quantile(s, c),
    "gaussian": lambda s, c: Q.kernel_quantile(s, c, 0.05),
    "epanechnikov": lambda s, c: Q.kernel_quantile(s, c, 0.2, "epanechnikov"),
    "lower_mean": lambda s, c: Q.lower_mean_quantile(s, c),
    "harrell_davis": lambda s, c: Q.harrell_davis_quantile(s, c),
    "interval": lambda s, c: Q.interval_quantile(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0)),
}
TOL = 1e-9


@pytest.mark.parametrize("name", sorted(LEVEL_ESTIMATORS))
@settings(max_examples=60, deadline=None)
@given(values=score_lists, level=levels, seed=st.integers(0, 2**16))
def test_between_min_and_max_and_permutation_invariant(name, values, level, seed):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    q = float(estimate(scores, level))
    assert min(values) - TOL <= q <= max(values) + TOL
    permuted = scores[torch.randperm(len(values), generator=torch.Generator().manual_seed(seed))]
    assert float(estimate(permuted, level)) == pytest.approx(q, abs=TOL)


@pytest.mark.parametrize("name", sorted(LEVEL_ESTIMATORS))
@settings(max_examples=60, deadline=None)
@given(values=score_lists, a=levels, b=levels)
def test_non_decreasing_in_level(name, values, a, b):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    low, high = min(a, b), max(a, b)
    assert float(estimate(scores, low)) <= float(estimate(scores, high)) + TOL


@pytest.mark.parametrize("name", sorted(LEVEL_ESTIMATORS))
@settings(max_examples=60, deadline=None)
@given(values=score_lists, level=levels, shift=st.integers(-40, 40).map(lambda v: v / 4),
       scale=st.sampled_from([0.25, 0.5, 2.0, 4.0]))
def test_shift_and_scale_equivariant(name, values, level, shift, scale):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    q = float(estimate(scores, level))
    assert float(estimate(scores + shift, level)) == pytest.approx(q + shift, abs=1e-8)
    assert float(estimate(scores * scale, level)) == pytest.approx(q * scale, abs=1e-8)


@settings(max_examples=100, deadline=None)
@given(values=score_lists, level=levels)
def test_lower_mean_is_a_lower_bound_of_point(values, level):
    scores = torch.tensor(values, dtype=torch.float64)
    assert float(Q.lower_mean_quantile(scores, level)) <= float(Q.point_quantile(scores, level)) + TOL


@settings(max_examples=60, deadline=None)
@given(values=score_lists, a=levels, b=levels, c=levels, d=levels)
def test_interval_non_decreasing_in_both_ends(values, a, b, c, d):
    scores = torch.tensor(values, dtype=torch.float64)
    lo1, hi1 = sorted((a, b))
    lo2, hi2 = max(lo1, min(c, d)), max(hi1, max(c, d))
    if lo1 == hi1 or lo2 >= hi2:
        return
    assert float(Q.interval_quantile(scores, lo1, hi1)) <= float(Q.interval_quantile(scores, lo2, hi2)) + TOL


# --- concentration (Lemmas 1 and 2) -------------------------------------------------------


@pytest.mark.parametrize(
    "estimate",
    [
        lambda s: Q.kernel_quantile(s, 0.1, 0.05),
        lambda s: Q.interval_quantile(s, 0.05, 0.15),
        lambda s: Q.point_quantile(s, 0.1),
    ],
    ids=["kernel", "interval", "point"],
)
def test_gap_to_full_set_shrinks_like_inverse_square_root_of_sample_size(estimate):
    gen = torch.Generator().manual_seed(0)
    population = torch.rand(200_000, generator=gen, dtype=torch.float64) ** 2  # skewed, in [0, 1]
    full = float(estimate(population))
    sizes = [100, 300, 1000, 3000, 10000]
    gaps = []
    for b in sizes:
        draws = [abs(float(estimate(population[torch.randint(0, population.numel(), (b,), generator=gen)])) - full)
                 for _ in range(150)]
        gaps.append(np.mean(draws))
    slope = np.polyfit(np.log(sizes), np.log(gaps), 1)[0]
    assert -0.65 <= slope <= -0.35, slope


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LEVEL_ESTIMATORS))
@pytest.mark.parametrize(
    "scores, level, match",
    [
        (torch.tensor([1.0, 2.0]), 1.5, "`level` must be in \\[0, 1\\]"),
        (torch.tensor([1.0, 2.0]), -0.1, "`level` must be in \\[0, 1\\]"),
        (torch.tensor([]), 0.5, "`scores` is empty"),
        (torch.tensor([1.0, float("nan")]), 0.5, "`scores` contains NaN or inf"),
        (torch.tensor([1.0, float("inf")]), 0.5, "`scores` contains NaN or inf"),
        (torch.ones(2, 2), 0.5, "`scores` must be 1-D"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(name, scores, level, match):
    if name == "interval":
        match = match.replace("`level`", "`(low|high)`")
    with pytest.raises(ValueError, match=match):
        if name == "interval":
            Q.interval_quantile(scores, level, 1.0) if level <= 1 else Q.interval_quantile(scores, 0.0, level)
        else:
            LEVEL_ESTIMATORS[name](scores, level)


@pytest.mark.parametrize("bandwidth", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_bandwidth(bandwidth):
    with pytest.raises(ValueError, match="`bandwidth` must be a finite number > 0"):
        Q.kernel_quantile(torch.tensor([1.0, 2.0]), 0.5, bandwidth)


def test_bad_types():
    with pytest.raises(TypeError, match="`scores` must be a torch.Tensor"):
        Q.point_quantile([1.0, 2.0], 0.5)
    with pytest.raises(TypeError, match="`scores` must be a floating point tensor"):
        Q.point_quantile(torch.tensor([1, 2]), 0.5)
    with pytest.raises(TypeError, match="`level` must be a real number"):
        Q.point_quantile(torch.tensor([1.0, 2.0]), "0.5")
    with pytest.raises(ValueError, match="`kernel` must be one of"):
        Q.kernel_quantile(torch.tensor([1.0, 2.0]), 0.5, kernel="box")
    with pytest.raises(ValueError, match="`low` must be smaller than `high`"):
        Q.interval_quantile(torch.tensor([1.0, 2.0]), 0.6, 0.4)
    with pytest.raises(ValueError, match="`quantile` must be one of"):
        Q.resolve_quantile("median")


# --- half precision (float16, bfloat16), with and without autocast -------------------------

VECTOR_REFERENCES = {
    "point": (lambda s, c: Q.point_quantile(s, c), ref.point_np),
    "gaussian": (lambda s, c: Q.kernel_quantile(s, c, 0.05), lambda s, c: ref.kernel_np(s, c, 0.05)),
    "epanechnikov": (lambda s, c: Q.kernel_quantile(s, c, 0.08, "epanechnikov"),
                     lambda s, c: ref.kernel_np(s, c, 0.08, "epanechnikov")),
    "lower_mean": (lambda s, c: Q.lower_mean_quantile(s, c), ref.lower_mean_np),
    "harrell_davis": (lambda s, c: Q.harrell_davis_quantile(s, c), ref.harrell_davis),
    "interval": (lambda s, c: Q.interval_quantile(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0)),
                 lambda s, c: ref.interval_np(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0))),
}


@pytest.mark.parametrize("ties", [False, True])
def test_vectorised_references_match_the_loops(ties):
    values = random_scores(150, seed=1, ties=ties)
    loops = {"point": ref.point, "lower_mean": ref.lower_mean, "harrell_davis": ref.harrell_davis,
             "gaussian": lambda s, c: ref.kernel(s, c, 0.05),
             "epanechnikov": lambda s, c: ref.kernel(s, c, 0.08, "epanechnikov"),
             "interval": lambda s, c: ref.interval(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0))}
    for name, loop in loops.items():
        for level in LEVELS:
            assert VECTOR_REFERENCES[name][1](values, level) == pytest.approx(loop(values, level), abs=1e-12)


HALF_N = 70_000  # above 65504, the largest float16: a float16 count or rank would be inf


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("autocast", [False, True])
def test_half_precision_matches_the_float64_reference_above_65504_rows(dtype, autocast):
    # The estimate is computed in float32 and rounded once to the input's dtype: within half an
    # ulp of the reference on the same (rounded) values, plus float32 noise. A float16 rank
    # (exact only up to 2048, inf above 65504) or a float16 count would miss by far more.
    values = torch.as_tensor(np.random.default_rng(5).normal(size=HALF_N)).to(dtype)
    exact = values.double().numpy()
    half_ulp = torch.finfo(dtype).eps / 2
    with torch.autocast("cpu", dtype=dtype, enabled=autocast):
        for name, (estimate, reference) in VECTOR_REFERENCES.items():
            for level in (0.05, 0.5, 0.95):
                got = estimate(values, level)
                expected = reference(exact, level)
                assert got.dtype == dtype, name
                assert float(got) == pytest.approx(expected, abs=half_ulp * abs(expected) + 1e-5), (name, level)


def test_kernel_weights_refuse_what_would_give_meaningless_weights():
    ascending = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="ascending"):
        Q.kernel_weights(torch.tensor([2.0, 1.0, 3.0]), 0.5, 0.1)
    with pytest.raises(ValueError, match="kernel"):
        Q.kernel_weights(ascending, 0.5, 0.1, "triangular")
    with pytest.raises(ValueError, match="bandwidth"):
        Q.kernel_weights(ascending, 0.5, 0.0)
    with pytest.raises(ValueError, match="level"):
        Q.kernel_weights(ascending, 1.5, 0.1)
    with pytest.raises(ValueError, match="NaN|finite"):
        Q.kernel_weights(torch.tensor([1.0, float("nan")]), 0.5, 0.1)
    with pytest.raises(TypeError):
        Q.kernel_weights([1.0, 2.0], 0.5, 0.1)
