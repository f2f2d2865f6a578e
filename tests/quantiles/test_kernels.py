"""quantile_surrogate.quantiles.kernels: the one kernel table, against the densities it stands for."""

import math

import pytest
import torch

from quantile_surrogate import quantiles as Q
from quantile_surrogate.quantiles import kernels

DENSITIES = {  # the normalised densities of the paper (docs/paper_notes.md: the Gaussian's sign corrected)
    "gaussian": lambda u: math.exp(-u * u / 2) / math.sqrt(2 * math.pi),
    "epanechnikov": lambda u: 0.75 * (1 - u * u) if abs(u) < 1 else 0.0,
}


def test_one_table_exported_where_it_is_defined():
    assert Q.KERNELS is kernels.KERNELS
    assert set(kernels.KERNELS) == set(DENSITIES)
    # Every kernel estimator name of QUANTILE_ESTIMATORS maps to a kernel of the table, "kernel" to the Gaussian.
    assert kernels.KERNEL_OF_ESTIMATOR == {"kernel": "gaussian", "gaussian": "gaussian", "epanechnikov": "epanechnikov"}
    assert set(kernels.KERNEL_OF_ESTIMATOR) <= set(Q.QUANTILE_ESTIMATORS)


@pytest.mark.parametrize("name", sorted(DENSITIES))
def test_log_kernels_are_the_densities_up_to_a_constant(name):
    u = torch.linspace(-0.99, 0.99, 41, dtype=torch.float64)
    log_k = kernels.KERNELS[name](u)
    logs = torch.tensor([math.log(DENSITIES[name](float(x))) for x in u], dtype=torch.float64)
    torch.testing.assert_close(log_k - log_k[20], logs - logs[20], atol=1e-12, rtol=0)  # u[20] = 0


def test_the_compact_kernel_is_minus_infinity_outside_its_support():
    u = torch.tensor([-2.0, -1.0, 1.0, 3.0], dtype=torch.float64)
    assert bool(torch.isneginf(kernels.KERNELS["epanechnikov"](u)).all())
