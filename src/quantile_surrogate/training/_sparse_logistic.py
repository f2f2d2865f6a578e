"""The logistic start of a linear model on very many sparse columns: SciPy's L-BFGS-B on the matrix's own arrays.

:func:`~quantile_surrogate.training.models.fit_logistic` comes here where
:func:`~quantile_surrogate.training.models.lbfgs_history` shortens the history, that is where 20
pairs of weight vectors would outweigh 64 MiB and half the matrix (10^6 columns), for a linear model
on a CSR matrix on the CPU. The problem is the same,

.. math::
    \\min_{w, b} \\frac{\\sum_i v_i \\left(\\log(1 + e^{z_i}) - y_i z_i\\right)}{\\sum_i v_i}
        + \\frac{\\alpha}{2} \\|w\\|^2, \\qquad z = X w + b,

(``v`` the row weights, 1 without them), its gradient :math:`X^T r + \\alpha w` and :math:`\\sum_i r_i`
with :math:`r_i = v_i (\\sigma(z_i) - y_i) / \\sum_j v_j`. Why another solver: torch's L-BFGS
allocates a dozen weight-sized vectors afresh at every evaluation of its line search, and glibc keeps
most of the freed blocks: on the memory benchmark's 10^6 x 10^6 matrix (10^7 entries) the resident set
grew by 3.1 times the matrix over one start while its allocations grew by 1.4 times, and the whole fit
peaked at 5.4-5.6 times. SciPy's L-BFGS-B allocates its workspace once, and the objective below writes
into row-sized buffers made once, so the resident set follows the allocations (1.8 times for a start,
3.7-3.9 for the fit; ``results/sparse_data/memory.md``). The products read the tensor's own arrays
(:func:`~quantile_surrogate.training._sparse_linear.transposed_view`). Same stopping rules as the torch path: the largest gradient entry below ``1e-9``, a change of the
objective below ``1e-12`` (relative to ``max(|f|, 1)``), ``max_iter`` iterations and
``1.25 max_iter`` evaluations, ``history`` pairs.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import torch
from torch import nn

from ._sparse_linear import transposed_view

__all__ = ["takes_sparse_start", "logistic_objective", "fit_sparse_linear_logistic"]


def takes_sparse_start(model: nn.Module, X: torch.Tensor) -> bool:
    """Whether ``model`` on ``X`` is one linear score on a CPU CSR matrix (this module's case)."""
    return (X.layout == torch.sparse_csr and X.device.type == "cpu" and isinstance(model, nn.Linear)
            and model.out_features == 1 and all(p.requires_grad for p in model.parameters()))


def logistic_objective(columns, labels: np.ndarray, alpha: float, weights: np.ndarray | None = None,
                       bias: bool = True):
    """``theta -> (value, gradient)`` of the problem above, ``theta = (w, b)`` (``w`` alone without ``bias``).

    ``columns`` is ``X^T`` as a SciPy matrix (its products keep its own float32 or float64); the value and
    gradient are float64, the gradient one array rewritten at every call (L-BFGS-B copies it). The
    elementwise terms are torch's in-place operations on buffers made once: NumPy's ``logaddexp`` and
    SciPy's ``expit`` took 19 ms a call on 10^6 rows (one thread; these 5 ms) and made the benchmark's fit
    about 20 % slower than with torch's L-BFGS; torch's ``binary_cross_entropy_with_logits`` makes row-sized temporaries.
    """
    d, n = columns.shape
    total = float(n if weights is None else weights.sum())
    z, residual, gradient = np.empty(n), np.empty(n), np.empty(d + bias)
    scores, residuals, target = torch.from_numpy(z), torch.from_numpy(residual), torch.from_numpy(labels)
    losses, weight_gradient = torch.empty(n, dtype=torch.float64), torch.from_numpy(gradient[:d])
    weight = None if weights is None else torch.from_numpy(weights)

    def objective(theta):
        w = theta[:d]
        np.copyto(z, columns.T @ w.astype(columns.dtype, copy=False))
        if bias:
            np.add(z, theta[d], out=z)
        # log(1 + e^z) - y z as max(z, 0) + log1p(e^-|z|) - y z: no overflow, and in place (no row-sized temporary)
        torch.abs(scores, out=losses).neg_().exp_().log1p_()
        losses.add_(torch.clamp(scores, min=0.0, out=residuals)).sub_(torch.mul(target, scores, out=residuals))
        if weight is not None:
            losses.mul_(weight)
        value = float(losses.sum()) / total + 0.5 * alpha * float(w @ w)
        torch.sigmoid(scores, out=residuals).sub_(target)
        if weight is not None:
            residuals.mul_(weight)
        residuals.div_(total)
        np.copyto(gradient[:d], columns @ residual.astype(columns.dtype, copy=False))
        weight_gradient.add_(torch.from_numpy(w), alpha=alpha)
        if bias:
            gradient[d] = residual.sum()
        return value, gradient

    return objective


def fit_sparse_linear_logistic(model: nn.Linear, X: torch.Tensor, y: torch.Tensor, *, alpha: float, max_iter: int,
                               history: int, sample_weight: torch.Tensor | None = None) -> float:
    """Fit ``model`` (one output, :func:`takes_sparse_start`) in place from its current parameters.

    Returns the objective at the solution (float64).
    """
    d, bias = X.shape[1], model.bias is not None
    objective = logistic_objective(
        transposed_view(X), y.detach().numpy().astype(np.float64), alpha,
        None if sample_weight is None else sample_weight.detach().numpy().astype(np.float64), bias)
    start = [model.weight.detach().reshape(-1)] + ([model.bias.detach().reshape(-1)] if bias else [])
    result = scipy.optimize.minimize(
        objective, torch.cat(start).double().numpy(), jac=True, method="L-BFGS-B",
        options={"maxcor": history, "maxiter": max_iter, "maxfun": max_iter * 5 // 4, "gtol": 1e-9, "ftol": 1e-12,
                 "maxls": 25},
    )
    solution = torch.from_numpy(result.x)
    torch.clear_autocast_cache()  # parameters change in place: no stale autocast copy (training._steps.parameters_changed)
    with torch.no_grad():
        model.weight.copy_(solution[:d].reshape(model.weight.shape))
        if bias:
            model.bias.copy_(solution[d:])
    return float(result.fun)
