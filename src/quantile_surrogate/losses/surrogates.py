r"""The surrogates ``l`` of the 0-1 step that every loss sums: the table behind ``surrogate=``.

Each is a convex, non-decreasing upper bound of the step :math:`1[z \ge 0]` up to a constant,
applied to the margin ``z = f(x) - theta`` of a penalised negative (or ``theta - f(x)`` of a
penalised positive).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

__all__ = ["SURROGATES"]


def _logistic(z: torch.Tensor) -> torch.Tensor:
    # log(1 + exp(z)) overflows for large z; softplus(z) = max(z, 0) + log1p(exp(-|z|)) does not.
    return F.softplus(z)


def _hinge(z: torch.Tensor) -> torch.Tensor:
    return torch.clamp(1.0 + z, min=0.0)


#: Surrogates accepted by ``surrogate=``, name -> ``l(z)``: convex, non-decreasing upper bounds of
#: the 0-1 step up to a constant, ``"logistic"`` :math:`\log(1 + e^z) \ge \log 2 \cdot 1[z \ge 0]`
#: (computed as ``softplus``, which cannot overflow) and ``"hinge"`` :math:`\max(0, 1 + z) \ge 1[z \ge 0]`.
SURROGATES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "logistic": _logistic,
    "hinge": _hinge,
}
