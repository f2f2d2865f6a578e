r"""The kernels of the kernel quantile estimator (eq. (13)): one table, :data:`KERNELS`.

A kernel is stored as its unnormalised log-density :math:`\log\phi(u)` of
:math:`u = (i^*/N - c) / h`: the constants (:math:`1/\sqrt{2\pi}`, :math:`3/4`, :math:`1/h`)
cancel when the weights are normalised to sum to one (docs/paper_notes.md), and a softmax of
the log-density cannot underflow every weight to zero at a small bandwidth.

Examples
--------
>>> import torch
>>> from quantile_surrogate.quantiles import KERNELS
>>> KERNELS["gaussian"](torch.tensor([0.0, 2.0]))  # -u^2 / 2
tensor([-0., -2.])
>>> KERNELS["epanechnikov"](torch.tensor([0.0, 1.0]))  # log(1 - u^2), -inf outside |u| < 1
tensor([-0., -inf])
"""

from __future__ import annotations

import math
from typing import Callable

import torch

__all__ = ["KERNELS"]


def _gaussian_log_kernel(u: torch.Tensor) -> torch.Tensor:
    # log of exp(-u^2 / 2); the 1/sqrt(2 pi) and 1/h factors cancel in the normalisation.
    return -0.5 * u * u


def _epanechnikov_log_kernel(u: torch.Tensor) -> torch.Tensor:
    # log of 3/4 (1 - u^2) on |u| < 1; -inf outside gives weights that are exactly 0.
    inside = u.abs() < 1
    return torch.where(inside, torch.log1p(-(u * u).clamp(max=1.0)), torch.full_like(u, -math.inf))


#: Kernels accepted by ``kernel=`` of :func:`~quantile_surrogate.quantiles.kernel_quantile`: name ->
#: unnormalised log density :math:`\log\phi(u)` of :math:`u = (i^*/N - c) / h`: ``"gaussian"``
#: :math:`-u^2/2`, ``"epanechnikov"`` :math:`\log(1 - u^2)` on :math:`|u| < 1` and :math:`-\infty`
#: outside. The constants cancel when the weights are normalised.
KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian": _gaussian_log_kernel,
    "epanechnikov": _epanechnikov_log_kernel,
}

#: The estimator names of :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` that are kernel
#: estimates, and their kernel: each kernel by its own name, and ``"kernel"`` for the Gaussian (internal).
KERNEL_OF_ESTIMATOR = {"kernel": "gaussian", **{name: name for name in KERNELS}}
