"""The estimators' cases shared by tests/quantiles/test_order_statistics.py and test_smooth.py.

Each table maps an estimator case to its call (and its float64 reference in tests/_reference.py);
each ``check_*`` is one property, run by the two test modules on their own estimators.
"""

import numpy as np
import pytest
import torch

from quantile_surrogate import quantiles as Q
from quantile_surrogate._utils.checks import EMPTY_MESSAGE, LEVEL_RANGE_MESSAGE, NONFINITE_MESSAGE, NOT_1D_MESSAGE

from tests import _reference as ref
from tests._messages import exact

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

GRAD_CASES = {
    "point": lambda s: Q.point_quantile(s, 0.3),
    "gaussian": lambda s: Q.kernel_quantile(s, 0.3, 0.1),
    "epanechnikov": lambda s: Q.kernel_quantile(s, 0.7, 0.2, "epanechnikov"),
    "lower_mean": lambda s: Q.lower_mean_quantile(s, 0.4),
    "interval": lambda s: Q.interval_quantile(s, 0.2, 0.6),
    "harrell_davis": lambda s: Q.harrell_davis_quantile(s, 0.8),
}

LEVEL_ESTIMATORS = {
    "point": lambda s, c: Q.point_quantile(s, c),
    "gaussian": lambda s, c: Q.kernel_quantile(s, c, 0.05),
    "epanechnikov": lambda s, c: Q.kernel_quantile(s, c, 0.2, "epanechnikov"),
    "lower_mean": lambda s, c: Q.lower_mean_quantile(s, c),
    "harrell_davis": lambda s, c: Q.harrell_davis_quantile(s, c),
    "interval": lambda s, c: Q.interval_quantile(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0)),
}
TOL = 1e-9

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

LOOP_REFERENCES = {"point": ref.point, "lower_mean": ref.lower_mean, "harrell_davis": ref.harrell_davis,
                   "gaussian": lambda s, c: ref.kernel(s, c, 0.05),
                   "epanechnikov": lambda s, c: ref.kernel(s, c, 0.08, "epanechnikov"),
                   "interval": lambda s, c: ref.interval(s, max(c - 0.1, 0.0), min(c + 0.1, 1.0))}

# (scores, level, message constant, its fields); the interval estimator names its bound, `low` or `high`.
BAD_INPUTS = [
    (torch.tensor([1.0, 2.0]), 1.5, LEVEL_RANGE_MESSAGE, dict(name="level", value=1.5)),
    (torch.tensor([1.0, 2.0]), -0.1, LEVEL_RANGE_MESSAGE, dict(name="level", value=-0.1)),
    (torch.tensor([]), 0.5, EMPTY_MESSAGE, dict(name="scores")),
    (torch.tensor([1.0, float("nan")]), 0.5, NONFINITE_MESSAGE, dict(name="scores", count=1, total=2)),
    (torch.tensor([1.0, float("inf")]), 0.5, NONFINITE_MESSAGE, dict(name="scores", count=1, total=2)),
    (torch.ones(2, 2), 0.5, NOT_1D_MESSAGE, dict(name="scores", shape=(2, 2))),
]

HALF_N = 70_000  # above 65504, the largest float16: a float16 count or rank would be inf


def random_scores(n, seed, ties):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n)
    if ties:
        values = np.round(values * 3) / 3  # many exact ties
    return values


def dtype_np(dtype):
    return np.float64 if dtype == torch.float64 else np.float32


def check_matches_float64_reference(name, n, ties):
    estimate, reference = ESTIMATORS[name]
    values = random_scores(n, seed=n, ties=ties)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        scores = torch.tensor(values, dtype=dtype)
        for level in LEVELS:
            got = estimate(scores, level)
            assert got.dtype == dtype and got.shape == ()
            expected = reference(values.astype(dtype_np(dtype)).astype(np.float64), level)
            assert float(got) == pytest.approx(expected, abs=tol, rel=tol), (name, level)


def check_gradcheck(name):
    scores = torch.linspace(-2, 3, 17, dtype=torch.float64)[torch.randperm(17, generator=torch.Generator().manual_seed(0))]
    scores = (scores + 0.01 * torch.randn(17, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(GRAD_CASES[name], (scores,), eps=1e-6, atol=1e-7)


def check_between_min_and_max_and_permutation_invariant(name, values, level, seed):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    q = float(estimate(scores, level))
    assert min(values) - TOL <= q <= max(values) + TOL
    permuted = scores[torch.randperm(len(values), generator=torch.Generator().manual_seed(seed))]
    assert float(estimate(permuted, level)) == pytest.approx(q, abs=TOL)


def check_non_decreasing_in_level(name, values, a, b):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    low, high = min(a, b), max(a, b)
    assert float(estimate(scores, low)) <= float(estimate(scores, high)) + TOL


def check_shift_and_scale_equivariant(name, values, level, shift, scale):
    estimate = LEVEL_ESTIMATORS[name]
    scores = torch.tensor(values, dtype=torch.float64)
    q = float(estimate(scores, level))
    assert float(estimate(scores + shift, level)) == pytest.approx(q + shift, abs=1e-8)
    assert float(estimate(scores * scale, level)) == pytest.approx(q * scale, abs=1e-8)


def check_gap_shrinks_like_inverse_square_root(estimate):
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


def check_bad_input_raises_value_error_naming_the_argument(name, scores, level, message, fields):
    if name == "interval" and fields["name"] == "level":
        fields = {**fields, "name": "high" if level > 1 else "low"}
    with pytest.raises(ValueError, match=exact(message, **fields)):
        if name == "interval":
            Q.interval_quantile(scores, level, 1.0) if level <= 1 else Q.interval_quantile(scores, 0.0, level)
        else:
            LEVEL_ESTIMATORS[name](scores, level)


def check_vectorised_reference_matches_the_loop(name, ties):
    values = random_scores(150, seed=1, ties=ties)
    for level in LEVELS:
        assert VECTOR_REFERENCES[name][1](values, level) == pytest.approx(LOOP_REFERENCES[name](values, level), abs=1e-12)


def check_half_precision_matches_the_float64_reference(names, dtype, autocast):
    # The estimate is computed in float32 and rounded once to the input's dtype: within half an
    # ulp of the reference on the same (rounded) values, plus float32 noise. A float16 rank
    # (exact only up to 2048, inf above 65504) or a float16 count would miss by far more.
    values = torch.as_tensor(np.random.default_rng(5).normal(size=HALF_N)).to(dtype)
    exact = values.double().numpy()
    half_ulp = torch.finfo(dtype).eps / 2
    with torch.autocast("cpu", dtype=dtype, enabled=autocast):
        for name in names:
            estimate, reference = VECTOR_REFERENCES[name]
            for level in (0.05, 0.5, 0.95):
                got = estimate(values, level)
                expected = reference(exact, level)
                assert got.dtype == dtype, name
                assert float(got) == pytest.approx(expected, abs=half_ulp * abs(expected) + 1e-5), (name, level)
