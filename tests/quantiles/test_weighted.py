"""quantile_surrogate.quantiles._weighted: every estimator with frequency weights (weighted_estimates).

A weight is a count: integer weights give the estimate on the rows repeated, and a weight of 0 is no
row. The weights' paths through the losses, metrics and estimators are in tests/cross/test_weights.py.
"""

import math

import pytest
import torch
from scipy.special import betainc

from quantile_surrogate.quantiles import QUANTILE_ESTIMATORS
from quantile_surrogate.quantiles._weighted import WEIGHTED_ESTIMATORS, mass_window, weighted_estimates

LEVELS = (0.0, 0.1, 0.35, 0.5, 0.7, 0.93, 1.0)


def test_every_weighted_estimator_is_a_quantile_estimator():
    assert set(WEIGHTED_ESTIMATORS) == set(QUANTILE_ESTIMATORS)


def test_hand_computed_point_and_lower_mean():
    # Scores 1, 2, 3, 4 with weights 3, 1, 0, 2: W = 6, cumulative weights C = 3, 4, 4, 6.
    scores = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    weight = torch.tensor([3.0, 1.0, 0.0, 2.0], dtype=torch.float64)
    # c = 0.5: t = floor(3) = 3, reached at the first row; c = 0.7: t = floor(4.2) = 4, reached at s = 2.
    point = weighted_estimates("point", scores, weight, (0.5, 0.7), 0.05)
    assert point.tolist() == [1.0, 2.0]
    # The mean of the lowest mass t: 3 copies of 1, then (3 * 1 + 1 * 2) / 4.
    lower = weighted_estimates("lower_mean", scores, weight, (0.5, 0.7), 0.05)
    assert lower.tolist() == [1.0, 1.25]


@pytest.mark.parametrize("name", WEIGHTED_ESTIMATORS)
def test_integer_weights_are_the_rows_repeated_and_zero_weight_is_no_row(name):
    generator = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 12, (40,), generator=generator).to(torch.float64) / 4  # with ties
    weight = torch.randint(0, 4, (40,), generator=generator)
    repeated = scores.repeat_interleave(weight)
    got = weighted_estimates(name, scores, weight.to(torch.float64), LEVELS, 0.2)
    want = torch.stack([QUANTILE_ESTIMATORS[name](repeated, level, 0.2) for level in LEVELS])
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)


def test_a_subset_without_weight_gives_nan():
    scores = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    weight = torch.tensor([0.0, 2.0, 1.0], dtype=torch.float64)
    subset = torch.tensor([True, False, False])
    assert all(math.isnan(v) for v in weighted_estimates("kernel", scores, weight, (0.3, 0.6), 0.1, subset).tolist())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1023, 1024, 4096])  # from 1024 rows a kernel estimate at one level takes the window
@pytest.mark.parametrize("name", WEIGHTED_ESTIMATORS)
def test_half_precision_scores_match_the_float64_weighted_estimate(name, n, dtype):
    # Computed in float32 (ranks, masses, coefficients) and rounded once to the scores' dtype: within half an
    # ulp of the float64 estimate on the same rounded values, plus float32 noise.
    generator = torch.Generator().manual_seed(n)
    scores = torch.randn(n, generator=generator, dtype=torch.float64).to(dtype)
    weight = torch.rand(n, generator=generator, dtype=torch.float64) * 3
    half_ulp = torch.finfo(dtype).eps / 2
    for level in (0.05, 0.3, 0.9):
        got = weighted_estimates(name, scores, weight.float(), (level,), 0.05)
        expected = float(weighted_estimates(name, scores.double(), weight, (level,), 0.05))
        assert got.dtype == dtype
        assert float(got) == pytest.approx(expected, abs=half_ulp * abs(expected) + 1e-5), (name, level)


@pytest.mark.parametrize("total", [10.0, 1000.0, 120000.0, 2.5e6])
@pytest.mark.parametrize("level", [0.01, 0.1, 0.5, 0.95])
def test_harrell_davis_window_leaves_out_1e18_of_the_beta_on_each_side(total, level):
    # Outside (low, high] of cumulative weight the Harrell-Davis coefficients add to 1e-18 a side; the upper edge comes
    # from the complementary Beta (1 - 1e-18 rounds to 1.0: the window would run to the end of A).
    low, high = mass_window("harrell_davis", total, level, 0.05)
    p, q = (total + 1) * level, (total + 1) * (1 - level)
    assert 0.0 <= low < level * total < high <= total
    if low > 0:
        assert betainc(p, q, low / total) == pytest.approx(1e-18, rel=1e-6)
    if high < total:
        assert betainc(q, p, 1 - high / total) == pytest.approx(1e-18, rel=1e-6)
    if total >= 1e5:  # about 9 standard deviations of the Beta a side, not the rest of A
        assert high - low < 20 * (level * (1 - level) * total) ** 0.5
