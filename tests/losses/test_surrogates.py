"""The surrogates (losses/surrogates.py): the table is defined where it is exported, and each bounds the step."""

import math

import torch

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
