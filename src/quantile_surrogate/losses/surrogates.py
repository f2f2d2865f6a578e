r"""The surrogates ``l`` of the 0-1 step that every loss sums: the table behind ``surrogate=``.

Each is a convex, non-decreasing upper bound of the step :math:`1[z \ge 0]` up to a constant,
applied to the margin ``z = f(x) - theta`` of a penalised negative (or ``theta - f(x)`` of a
penalised positive).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

__all__ = ["SURROGATES", "SURROGATE_SLOPES"]

#: ``F.softplus``'s defaults: above ``z = 20`` it returns ``z`` and its derivative is 1.
_SOFTPLUS_BETA, _SOFTPLUS_THRESHOLD = 1.0, 20.0


def _logistic(z: torch.Tensor) -> torch.Tensor:
    # log(1 + exp(z)) overflows for large z; softplus(z) = max(z, 0) + log1p(exp(-|z|)) does not.
    return F.softplus(z, beta=_SOFTPLUS_BETA, threshold=_SOFTPLUS_THRESHOLD)


def _hinge(z: torch.Tensor) -> torch.Tensor:
    return torch.clamp(1.0 + z, min=0.0)


#: Surrogates accepted by ``surrogate=``, name -> ``l(z)``: convex, non-decreasing upper bounds of
#: the 0-1 step up to a constant, ``"logistic"`` :math:`\log(1 + e^z) \ge \log 2 \cdot 1[z \ge 0]`
#: (computed as ``softplus``, which cannot overflow) and ``"hinge"`` :math:`\max(0, 1 + z) \ge 1[z \ge 0]`.
SURROGATES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "logistic": _logistic,
    "hinge": _hinge,
}


def _logistic_slope(z: torch.Tensor, upstream: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # softplus's own backward kernel, the one autograd runs for _logistic: e^z / (1 + e^z) (1 above the
    # threshold), in one pass. Autograd through softplus would first compute the loss (its log1p is
    # most of the cost) and keep the graph. `out`: the same kernel writing into a kept array.
    if out is None:
        return torch.ops.aten.softplus_backward(upstream, z, _SOFTPLUS_BETA, _SOFTPLUS_THRESHOLD)
    return torch.ops.aten.softplus_backward.grad_input(upstream, z, _SOFTPLUS_BETA, _SOFTPLUS_THRESHOLD,
                                                       grad_input=out)


def _hinge_slope(z: torch.Tensor, upstream: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # clamp_min's backward: the gradient passes where 1 + z >= 0 (the kink included), as autograd's does.
    zero = torch.zeros((), dtype=upstream.dtype, device=upstream.device)
    return torch.where(1.0 + z >= 0.0, upstream, zero, out=out)


#: ``upstream * l'(z)`` of each surrogate, elementwise: bit for bit the gradient that autograd gives ``z``
#: from ``torch.dot(SURROGATES[name](z), upstream)``, without computing the loss (for a caller that needs
#: the gradient alone: the distributed boosting objective, on every row of every round), into ``out=``
#: when given.
SURROGATE_SLOPES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "logistic": _logistic_slope,
    "hinge": _hinge_slope,
}
