"""The logistic start of a linear model on very many sparse columns: a truncated Newton method on the matrix's own arrays.

:func:`~quantile_surrogate.training.models.fit_logistic` comes here where
:func:`~quantile_surrogate.training.models.lbfgs_history` shortens the history, that is where 20
pairs of weight vectors would outweigh 64 MiB and half the matrix (10^6 columns), for a linear model
on a CSR matrix on the CPU. The problem is the same,

.. math::
    \\min_{w, b} \\frac{\\sum_i v_i \\left(\\log(1 + e^{z_i}) - y_i z_i\\right)}{\\sum_i v_i}
        + \\frac{\\alpha}{2} \\|w\\|^2, \\qquad z = X w + b,

(``v`` the row weights, 1 without them), its gradient :math:`X^T r + \\alpha w` and :math:`\\sum_i r_i`
with :math:`r_i = v_i (\\sigma(z_i) - y_i) / \\sum_j v_j`, and its Hessian times a direction
:math:`(p, q)`: :math:`X^T (c \\odot u) + \\alpha p` and :math:`\\sum_i c_i u_i`, with
:math:`u = X p + q` and :math:`c_i = v_i \\sigma(z_i) (1 - \\sigma(z_i)) / \\sum_j v_j`.

Why another solver: memory. Torch's L-BFGS allocates a dozen weight-sized vectors afresh at every
evaluation of its line search and glibc keeps most of the freed blocks (the memory benchmark's fit on a
10^6 x 10^6 matrix with 10^7 entries peaked at 5.4-5.6 times the matrix); SciPy's L-BFGS-B, which
followed, holds 25 weight vectors at its peak with 4 pairs (3.7-3.9 times), and SciPy's Newton-CG 23
(3.3-3.5 times). :func:`newton_cg` holds seven (the iterate, a trial point, the gradient, the step, and
conjugate gradients' residual, direction and Hessian product), updated in place, beside the objective's
gradient, three row-sized buffers made once and the scores (2.65-2.95 times the matrix:
``results/sparse_data/memory.md``). The Newton step solves
:math:`H s = -g` by conjugate gradients to the relative residual :math:`\\min(0.5, \\sqrt{\\|g\\|})`
(SciPy's forcing sequence), then backtracks from the full step until Armijo's condition holds.
Stopping rules as the torch path's: the largest gradient entry below ``1e-9``, a change of the
objective below ``1e-12`` (relative to ``max(|f|, 1)``), ``max_iter`` iterations and ``1.25 max_iter``
evaluations of the objective. The products read the tensor's own arrays
(:func:`~quantile_surrogate.training._sparse_linear.transposed_view`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg.blas
import torch
from torch import nn

from ._sparse_linear import transposed_view

__all__ = ["takes_sparse_start", "LogisticProblem", "newton_cg", "fit_sparse_linear_logistic"]

CG_MAX_ITER = 100
"""Conjugate-gradient iterations at most per Newton step (each is two products with the matrix)."""

ARMIJO = 1e-4
"""The sufficient decrease of the backtracking line search: ``f(x + t s) <= f(x) + ARMIJO t g.s``."""

_axpy = scipy.linalg.blas.daxpy  # y += a x in place, without a temporary


def takes_sparse_start(model: nn.Module, X: torch.Tensor) -> bool:
    """Whether ``model`` on ``X`` is one linear score on a CPU CSR matrix (this module's case)."""
    return (X.layout == torch.sparse_csr and X.device.type == "cpu" and isinstance(model, nn.Linear)
            and model.out_features == 1 and all(p.requires_grad for p in model.parameters()))


class LogisticProblem:
    """The problem above on ``columns = X^T`` (a SciPy matrix whose products keep its own float32 or float64).

    Calling it with ``theta = (w, b)`` (``w`` alone without ``bias``) gives ``(value, gradient)``, float64,
    the gradient one array rewritten at every call; :meth:`hessian_product` is the Hessian at the point
    of the last call. The elementwise terms are torch's in-place operations on buffers made once: NumPy's
    ``logaddexp`` and SciPy's ``expit`` took 19 ms a call on 10^6 rows (one thread; these 5 ms);
    torch's ``binary_cross_entropy_with_logits`` makes row-sized temporaries.
    """

    def __init__(self, columns, labels: np.ndarray, alpha: float, weights: np.ndarray | None = None,
                 bias: bool = True):
        d, n = columns.shape
        self.columns, self.alpha, self.bias, self.d = columns, float(alpha), bias, d
        self.total = float(n if weights is None else weights.sum())
        self.z = None  # the scores X w + b of the last call
        self.residual, self.scratch, self.curvature = np.empty(n), np.empty(n), np.empty(n)  # c of the docstring
        self.gradient = np.empty(d + bias)
        self.target, self.weight = torch.from_numpy(labels), None if weights is None else torch.from_numpy(weights)

    def _times_x(self, w: np.ndarray, shift: float) -> np.ndarray:
        """``X w + shift`` (``shift`` the bias or its direction), float64: SciPy's product, a fresh array."""
        out = np.asarray(self.columns.T @ w.astype(self.columns.dtype, copy=False), dtype=np.float64)
        if self.bias:
            np.add(out, shift, out=out)
        return out

    def _times_columns(self, rows: np.ndarray, direction: np.ndarray, out: np.ndarray) -> None:
        """``out = (X^T rows + alpha direction, sum(rows))``."""
        np.copyto(out[:self.d], self.columns @ rows.astype(self.columns.dtype, copy=False))
        _axpy(direction[:self.d], out[:self.d], a=self.alpha)
        if self.bias:
            out[self.d] = rows.sum()

    def __call__(self, theta: np.ndarray):
        w = theta[:self.d]
        self.z = None  # the old scores go before the new are made: one row-sized array fewer at the peak
        self.z = self._times_x(w, theta[self.d] if self.bias else 0.0)
        scores, residuals, losses = (torch.from_numpy(a) for a in (self.z, self.residual, self.scratch))
        # log(1 + e^z) - y z as max(z, 0) + log1p(e^-|z|) - y z: no overflow, and in place (no row-sized temporary)
        torch.abs(scores, out=losses).neg_().exp_().log1p_()
        losses.add_(torch.clamp(scores, min=0.0, out=residuals)).sub_(torch.mul(self.target, scores, out=residuals))
        if self.weight is not None:
            losses.mul_(self.weight)
        value = float(losses.sum()) / self.total + 0.5 * self.alpha * float(w @ w)
        torch.sigmoid(scores, out=residuals).sub_(self.target)
        if self.weight is not None:
            residuals.mul_(self.weight)
        residuals.div_(self.total)
        self._times_columns(self.residual, theta, self.gradient)
        return value, self.gradient

    def set_curvature(self) -> None:
        """Take ``c`` at the point of the last call (its scores ``z`` are kept) for :meth:`hessian_product`."""
        curvature, scores = torch.from_numpy(self.curvature), torch.from_numpy(self.z)
        torch.neg(scores, out=curvature).sigmoid_()  # 1 - sigma(z), then times sigma(z): no row-sized temporary
        curvature.mul_(torch.sigmoid(scores, out=torch.from_numpy(self.scratch)))
        if self.weight is not None:
            curvature.mul_(self.weight)
        curvature.div_(self.total)

    def hessian_product(self, direction: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = H direction``, ``H`` the Hessian where :meth:`set_curvature` was last called."""
        rows = self._times_x(direction[:self.d], direction[self.d] if self.bias else 0.0)
        np.multiply(rows, self.curvature, out=rows)
        self._times_columns(rows, direction, out)
        return out


def _conjugate_gradient(problem: LogisticProblem, gradient, step, residual, direction, product, tolerance: float):
    """``step`` ~ ``-H^{-1} gradient`` by conjugate gradients from 0, to ``|H step + gradient| <= tolerance``.

    Stops early at a direction of no curvature (``alpha = 0``); with no step made it is ``-gradient``.
    """
    step.fill(0.0)
    np.negative(gradient, out=residual)
    np.copyto(direction, residual)
    squared = float(residual @ residual)
    for _ in range(CG_MAX_ITER):
        if math.sqrt(squared) <= tolerance:
            break
        curvature = float(direction @ problem.hessian_product(direction, product))
        if not curvature > 0.0:
            break
        size = squared / curvature
        _axpy(direction, step, a=size)
        _axpy(product, residual, a=-size)
        squared, previous = float(residual @ residual), squared
        direction *= squared / previous
        direction += residual
    if not step.any():
        np.negative(gradient, out=step)


def newton_cg(problem: LogisticProblem, theta: np.ndarray, *, max_iter: int, max_fun: int, gtol: float = 1e-9,
              ftol: float = 1e-12) -> tuple[np.ndarray, float]:
    """Minimise ``problem`` from ``theta`` (float64; used as one of the buffers) by the truncated Newton method above.

    Returns ``(solution, value there)``.
    """
    theta = np.ascontiguousarray(theta, dtype=np.float64)  # BLAS axpy writes in place only into such arrays
    value, gradient = problem(theta)
    gradient, evaluations = gradient.copy(), 1
    trial, step, residual, direction, product = (np.empty_like(theta) for _ in range(5))
    for _ in range(max_iter):
        if max(gradient.max(), -gradient.min()) <= gtol:  # the largest |entry|, without an absolute copy
            break
        problem.set_curvature()
        norm = float(np.linalg.norm(gradient))
        _conjugate_gradient(problem, gradient, step, residual, direction, product, min(0.5, math.sqrt(norm)) * norm)
        slope, size = float(gradient @ step), 1.0
        while True:  # backtracking from the full Newton step
            np.copyto(trial, theta)
            _axpy(step, trial, a=size)
            new, new_gradient = problem(trial)
            evaluations += 1
            if new <= value + ARMIJO * size * slope or evaluations >= max_fun:
                break
            size /= 2
        if not new <= value:  # no decrease within the evaluations left: stay where it was
            break
        theta, trial = trial, theta
        value, change = new, value - new
        np.copyto(gradient, new_gradient)
        if change <= ftol * max(abs(value), 1.0) or evaluations >= max_fun:
            break
    return theta, value


def fit_sparse_linear_logistic(model: nn.Linear, X: torch.Tensor, y: torch.Tensor, *, alpha: float, max_iter: int,
                               sample_weight: torch.Tensor | None = None) -> float:
    """Fit ``model`` (one output, :func:`takes_sparse_start`) in place from its current parameters.

    Returns the objective at the solution (float64).
    """
    d, bias = X.shape[1], model.bias is not None
    problem = LogisticProblem(
        transposed_view(X), y.detach().numpy().astype(np.float64), alpha,
        None if sample_weight is None else sample_weight.detach().numpy().astype(np.float64), bias)
    start = [model.weight.detach().reshape(-1)] + ([model.bias.detach().reshape(-1)] if bias else [])
    solution, value = newton_cg(problem, torch.cat(start).double().numpy(), max_iter=max_iter,
                                max_fun=max_iter * 5 // 4)
    solution = torch.from_numpy(solution)
    torch.clear_autocast_cache()  # parameters change in place: no stale autocast copy (training._steps.parameters_changed)
    with torch.no_grad():
        model.weight.copy_(solution[:d].reshape(model.weight.shape))
        if bias:
            model.bias.copy_(solution[d:])
    return float(value)
