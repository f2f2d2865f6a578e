"""The surrogates (losses/surrogates.py): the table is defined where it is exported, each bounds the step, and each
slope is autograd's gradient of it."""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate import losses as L
from quantile_surrogate.losses import surrogates


def test_the_table_is_defined_in_the_module_that_exports_it():
    assert "SURROGATES" in surrogates.__all__ and L.SURROGATES is surrogates.SURROGATES
    assert set(L.SURROGATES) == {"logistic", "hinge"}


def test_hand_values_and_the_step_bound():
    z = torch.tensor([-800.0, -1.0, 0.0, 2.0, 800.0], dtype=torch.float64)
    logistic, hinge = L.SURROGATES["logistic"](z), L.SURROGATES["hinge"](z)
    assert logistic.tolist()[1:4] == [math.log1p(math.exp(-1.0)), math.log(2.0), math.log1p(math.exp(2.0))]
    assert torch.isfinite(logistic).all() and logistic[-1] == 800.0  # softplus: no overflow of exp(800)
    assert hinge.tolist() == [0.0, 0.0, 1.0, 3.0, 801.0]
    step = (z >= 0).double()
    assert bool((logistic >= math.log(2.0) * step).all()) and bool((hinge >= step).all())


# -- the slopes: autograd's gradient without the loss ------------------------------------------------------------
_EDGES = [20.0, np.nextafter(20.0, 21.0), np.nextafter(20.0, 19.0), -1.0, np.nextafter(-1.0, 0.0),
          np.nextafter(-1.0, -2.0), 0.0, -0.0, 745.0, -745.0, 40.0, -40.0]
"""Where the slopes branch: softplus's threshold 20, the hinge's kink at -1 (``1 + z`` rounds to 0 just below it),
and where ``exp`` overflows or underflows."""


def _autograd_slope(name, z, upstream):
    z = z.clone().requires_grad_(True)
    gradient, = torch.autograd.grad(torch.dot(L.SURROGATES[name](z), upstream), z)
    return gradient


def test_the_slopes_cover_the_surrogates():
    assert "SURROGATE_SLOPES" in surrogates.__all__ and set(surrogates.SURROGATE_SLOPES) == set(L.SURROGATES)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.floats(-60, 60), st.sampled_from(_EDGES)), min_size=1, max_size=300),
       upstream=st.sampled_from(["ones", "zeros_and_ones", "floats"]), name=st.sampled_from(["logistic", "hinge"]),
       seed=st.integers(0, 2**16))
def test_each_slope_is_autograds_gradient_bit_for_bit(values, upstream, name, seed):
    # Bit for bit, so that the distributed objective's rows equal the single machine's autograd (not only to 1e-12).
    z = torch.tensor(values, dtype=torch.float64)
    rng = np.random.default_rng(seed)
    weights = {"ones": np.ones(z.numel()), "zeros_and_ones": (rng.random(z.numel()) < 0.7) * 1.0,
               "floats": rng.random(z.numel()) * 3}[upstream]
    weights = torch.from_numpy(weights)
    got = surrogates.SURROGATE_SLOPES[name](z, weights)
    assert got.dtype == torch.float64 and torch.equal(got, _autograd_slope(name, z, weights))
    out = torch.full_like(z, float("nan"))  # into a kept array (the distributed objective's workspace): the same bits
    assert surrogates.SURROGATE_SLOPES[name](z, weights, out=out) is out and torch.equal(out, got)


def test_hand_slopes():
    z = torch.tensor([-800.0, -1.0, 0.0, 20.5, 800.0], dtype=torch.float64)
    ones = torch.ones(5, dtype=torch.float64)
    logistic = surrogates.SURROGATE_SLOPES["logistic"](z, ones)
    assert logistic[2] == 0.5 and logistic[-2:].tolist() == [1.0, 1.0] and logistic[0] == 0.0  # 1 above 20
    assert surrogates.SURROGATE_SLOPES["hinge"](z, ones).tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]
