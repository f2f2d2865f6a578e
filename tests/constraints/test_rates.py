"""Exact rates at a threshold against NumPy, and the differentiable bounds around them."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.constraints import bound_rates, exact_rates
from quantile_surrogate.constraints._rates import SMOOTH_WIDTH, smooth_rates

COUNTED = {"recall": lambda y: y == 1, "false_positive_rate": lambda y: y == 0, "positive_rate": lambda y: y >= 0}


def _batch(seed, n=60, groups=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.integers(0, 2, size=n), rng.integers(0, groups, size=n)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.floats(-1.5, 1.5), name=st.sampled_from(sorted(COUNTED)),
       surrogate=st.sampled_from(["logistic", "hinge"]))
def test_exact_rates_are_the_counted_share_and_the_bounds_hold(seed, t, name, surrogate):
    s, y, g = _batch(seed)
    scores, labels, groups = torch.as_tensor(s), torch.as_tensor(y == 1), torch.as_tensor(g)
    got, counts = exact_rates(scores, labels, t, name, groups, 3)
    for k in range(3):
        rows = COUNTED[name](y) & (g == k)
        assert counts[k] == rows.sum()
        assert float(got[k]) == pytest.approx((s[rows] > t).mean() if rows.any() else 0.0, abs=1e-12)
    upper, _ = bound_rates(scores, labels, t, name, upper=True, surrogate=surrogate, groups=groups, n_groups=3)
    lower, _ = bound_rates(scores, labels, t, name, upper=False, surrogate=surrogate, groups=groups, n_groups=3)
    assert torch.all(lower <= got + 1e-12) and torch.all(got <= upper + 1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.floats(-1.5, 1.5), surrogate=st.sampled_from(["logistic", "hinge"]),
       weighted=st.booleans())
def test_precision_is_the_positive_share_above_the_threshold_and_its_bounds_hold(seed, t, surrogate, weighted):
    s, y, g = _batch(seed)
    w = np.random.default_rng(seed + 1).integers(0, 4, size=s.size).astype(float) if weighted else np.ones(s.size)
    scores, labels, groups = torch.as_tensor(s), torch.as_tensor(y == 1), torch.as_tensor(g)
    weight = torch.as_tensor(w) if weighted else None
    got, selected = exact_rates(scores, labels, t, "precision", groups, 3, weight)
    for k in range(3):  # TP / (TP + FP) among the group's rows above t, each row counted w_i times
        above = (s > t) & (g == k)
        assert float(selected[k]) == pytest.approx(w[above].sum(), abs=1e-12)
        expected = w[above & (y == 1)].sum() / w[above].sum() if w[above].sum() > 0 else 0.0
        assert float(got[k]) == pytest.approx(expected, abs=1e-12)
    kw = dict(surrogate=surrogate, groups=groups, n_groups=3, weight=weight)
    upper, _ = bound_rates(scores, labels, t, "precision", upper=True, **kw)
    lower, _ = bound_rates(scores, labels, t, "precision", upper=False, **kw)
    assert torch.all(lower <= got + 1e-12) and torch.all(got <= upper + 1e-12)


def test_smoothed_precision_is_the_ratio_of_the_smoothed_counts():
    s, y, g = _batch(3)
    scores, labels = torch.as_tensor(s), torch.as_tensor(y == 1)
    got, _ = smooth_rates(scores, labels, 0.2, "precision")
    step = torch.sigmoid((scores - 0.2) / (SMOOTH_WIDTH * scores.std(unbiased=False)))
    torch.testing.assert_close(got, (step[labels].sum() / step.sum()).reshape(1), rtol=1e-12, atol=0)
