r"""Weighted quantile estimates: every estimator of :mod:`quantile_surrogate.quantiles` with row weights.

Definition (frequency weights, as scikit-learn's ``sample_weight``). Rows of the subset
``A`` have scores ``s_j`` and weights ``w_j >= 0``, ``W = sum_j w_j``. Sort ascending and
let ``C_j = w_(1) + ... + w_(j)`` be the cumulative weight (``C_0 = 0``) and
``C*_j`` its value at the last order statistic tied with ``s_(j)``: the weighted empirical
distribution function is ``F_w(s) = sum_{s_j <= s} w_j / W``. Each estimator is its
unweighted form with the count ``N`` replaced by the mass ``W`` and the rank ``i`` by the
cumulative weight; as a weighted sum ``q = sum_j a_j s_(j)`` the coefficients are:

================  ==============================================================================
``point``         ``a_j = 1`` at the first ``j`` with ``C_j >= t``, ``t = min(max(floor(c W), 1), W)``
kernel (eq. 13)   ``a_j ~ w_(j) K((C*_j / W - c) / h)``, normalised to sum to 1
``lower_mean``    ``a_j = |(C_{j-1}, C_j] & (0, t]| / t``: the mean of the lowest mass ``t``
``interval``      ``|(C_{j-1}, C_j] & (lo, hi]| / (hi - lo)``, ``lo = floor(W low)``, ``hi = floor(W high)``
``harrell_davis`` ``I_{C_j/W}(a, b) - I_{C_{j-1}/W}(a, b)``, ``a = (W + 1) c``, ``b = (W + 1)(1 - c)``
================  ==============================================================================

With integer weights every estimate equals the unweighted one on the sample in which row
``j`` is repeated ``w_j`` times (its copies are tied and share the rank ``C*_j``), and a row
of weight 0 is the same as no row: those two facts are the tests. Non-integer weights are
fractional counts: ``point``, ``lower_mean`` and ``interval`` floor ``c W`` on the count
scale exactly as the unweighted estimators floor ``c N``, so the weights' scale matters as
a sample size does (weights normalised to sum to 1 make ``W = 1``, one "row"; use the
inverse sampling rate instead). The kernel and Harrell-Davis coefficients depend on
``C_j / W`` only, up to ``W`` in the Beta parameters.

Paths. Eager on the CPU, the rows are sorted in NumPy, and a kernel estimate at one level on at
least 1024 rows first tries the weighted window
(:func:`quantile_surrogate.quantiles._kernel_window.weighted_window_selection`: only the rows whose
cumulative weight is near ``c W`` are sorted, with the same ``eps / 2`` certificate as the
unweighted window). Elsewhere every row of ``A`` is sorted in torch (on any device; under
``torch.compile`` the subset indexing breaks the graph). This path runs only when weights are
given: the unweighted estimators and their selection are untouched. The gradient with respect to
``s_(j)`` is ``a_j``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from scipy.special import betainc, betaincinv

from .._utils.counts import count
from ._kernel_window import MIN_WINDOW_SIZE, host_values, weighted_window_selection
from ._rank_selection import compute_dtype
from .kernels import KERNEL_OF_ESTIMATOR, KERNELS

__all__ = ["weighted_estimates", "WEIGHTED_ESTIMATORS", "point_mass_target", "kernel_coefficients", "MASS_WINDOWED",
           "mass_window", "window_coefficients"]

WEIGHTED_ESTIMATORS = ("point", "kernel", "gaussian", "epanechnikov", "lower_mean", "interval", "harrell_davis")

# Cumulative weights are compared with floor(c W); relative slack for the rounding of a float sum.
_SLACK = 1e-9


def _mass_floor(level: float, total: float) -> float:
    """``floor(c W)`` clamped to ``[min(1, W), W]``: :func:`~quantile_surrogate._utils.counts.count` on the mass."""
    return float(count(level, total, "floor"))


def _overlap(cum: torch.Tensor, low: float, high: float, below: float = 0.0) -> torch.Tensor:
    """``|(C_{j-1}, C_j] & (low, high]|`` for each ``j`` (``C_0``: ``below``, the weight under these rows)."""
    previous = torch.cat([cum.new_full((1,), below), cum[:-1]])
    return (cum.clamp(max=high) - previous.clamp(min=low)).clamp(min=0.0)


def point_mass_target(level: float, total: float) -> float:
    """``t (1 - slack)``: the weighted point estimate is the first order statistic whose ``C_j`` reaches it.

    ``t = floor(c W)`` as :func:`_mass_floor`; the relative slack ``1e-9`` absorbs the rounding of
    a float sum of weights (the distributed objective's, summed in another order, included).
    """
    return _mass_floor(level, total) * (1 - _SLACK)


def kernel_coefficients(tied_cum: torch.Tensor, row_weight: torch.Tensor, total: float, level: float,
                        bandwidth: float, kernel: str, dtype: torch.dtype) -> torch.Tensor | None:
    """``a_j ~ w_j K((C*_j / W - c) / h)``, normalised to sum to 1 (a softmax of the log-kernel), or None.

    None when a compact kernel holds no mass (every ``K`` is 0): the caller takes the point estimate.
    The rows need not be sorted; ``tied_cum`` is each row's ``C*_j`` and ``row_weight`` its ``w_j > 0``.
    """
    u = ((tied_cum / total).to(dtype) - level) / bandwidth
    log_w = KERNELS[kernel](u).double() + torch.log(row_weight)
    return None if torch.isneginf(log_w).all() else torch.softmax(log_w, dim=0)


def _point(sorted_values, cum, level):
    """One-hot on the first ``j`` with ``C_j >= t``, moved to the first row tied with ``s_(j)``."""
    m = cum.numel()
    target = point_mass_target(level, float(cum[-1]))
    j = int(torch.searchsorted(cum, cum.new_tensor([target])).clamp(max=m - 1))
    # The sort is stable, so the first tied row is the first in row order, as point_quantile picks.
    j = int(torch.searchsorted(sorted_values, sorted_values[j:j + 1]))
    a = cum.new_zeros(m)
    a[j] = 1.0
    return a


def _coefficients(name, sorted_values, cum, tied_cum, levels, bandwidth, dtype):
    """The (L, m) coefficients ``a_lj`` of the sorted rows, in float64 on the host's device."""
    total = float(cum[-1])
    rows = []
    for level in levels:
        if name == "point":
            a = _point(sorted_values, cum, level)
        elif name in KERNEL_OF_ESTIMATOR:
            a = kernel_coefficients(tied_cum, torch.diff(cum, prepend=cum.new_zeros(1)), total, level, bandwidth,
                                    KERNEL_OF_ESTIMATOR[name], dtype)
            # A compact kernel with no mass in its window falls back to the point estimate, as unweighted.
            a = _point(sorted_values, cum, level) if a is None else a
        elif name == "harrell_davis" and (level <= 0.0 or level >= 1.0):
            a = cum.new_zeros(cum.numel())
            a[0 if level <= 0.5 else int(np.searchsorted(cum.cpu().numpy(), total * (1 - _SLACK)))] = 1.0
        else:
            a = window_coefficients(name, cum, 0.0, total, level, bandwidth)
        rows.append(a)
    return torch.stack(rows)


MASS_WINDOWED = ("lower_mean", "interval", "harrell_davis")
"""Estimators whose coefficients vanish outside a range of cumulative weight (:func:`mass_window`)."""

_HD_TAIL = 1e-18
"""Harrell-Davis: the Beta mass left out on each side of :func:`mass_window` (far below float64's 1e-16)."""


def _interval_edges(total: float, low: float, high: float) -> tuple[float, float]:
    """``(start, stop)``: the mass ``(floor(W low), floor(W high)]``, widened as ``interval_quantile`` does."""
    start = min(float(count(low, total, "floor", at_least_one=False)), max(total - 1.0, 0.0))
    stop = min(max(float(count(high, total, "floor", at_least_one=False)), start + min(1.0, total)), total)
    return start, stop


def _around(level: float, bandwidth: float) -> tuple[float, float]:
    """The ``interval`` estimator's levels: ``[c - h, c + h]`` clipped to [0, 1] (``_interval_around``)."""
    return max(level - bandwidth, 0.0), min(level + bandwidth, 1.0)


def mass_window(name: str, total: float, level: float, bandwidth: float) -> tuple[float, float]:
    """``(low, high)``: the estimator's coefficients are 0 on the rows whose ``(C_{j-1}, C_j]`` misses ``(low, high]``.

    ``lower_mean``: ``(0, t]``; ``interval``: ``(start, stop]``; ``harrell_davis`` (level in (0, 1)): the
    ``1e-18`` and ``1 - 1e-18`` quantiles of its Beta times ``W``, outside which its coefficients add to
    less than ``2e-18`` (negligible, not 0). The distributed objective gathers only these rows.
    """
    if name == "lower_mean":
        return 0.0, _mass_floor(level, total)
    if name == "interval":
        return _interval_edges(total, *_around(level, bandwidth))
    p, q = (total + 1) * level, (total + 1) * (1 - level)
    # The upper edge from Beta(q, p)'s lower tail: 1 - 1e-18 is 1.0 in float64.
    return total * float(betaincinv(p, q, _HD_TAIL)), total * (1.0 - float(betaincinv(q, p, _HD_TAIL)))


def window_coefficients(name: str, cum: torch.Tensor, below: float, total: float, level: float,
                        bandwidth: float) -> torch.Tensor:
    """The coefficients of :data:`MASS_WINDOWED` estimators on consecutive sorted rows with cumulative weights ``cum``.

    ``below`` is the weight under the first row (0 for every row of ``A``), ``total`` the weight ``W`` of ``A``.
    """
    if name == "lower_mean":
        target = _mass_floor(level, total)
        return _overlap(cum, 0.0, target, below) / target
    if name == "interval":
        start, stop = _interval_edges(total, *_around(level, bandwidth))
        return _overlap(cum, start, stop, below) / (stop - start)
    p, q = (total + 1) * level, (total + 1) * (1 - level)
    cdf = betainc(p, q, np.concatenate([[below / total], np.minimum(cum.cpu().numpy() / total, 1.0)]))
    a = np.diff(cdf)
    return cum.new_tensor(a / a.sum())


def weighted_estimates(name: str, scores: torch.Tensor, weight: torch.Tensor, levels: Sequence[float],
                       bandwidth: float, subset: torch.Tensor | None = None, interval=None) -> torch.Tensor:
    """``q_w(scores[subset], c)`` for each ``c`` in ``levels`` (module docstring): shape (L,), NaN if ``A`` has no mass.

    ``interval=(low, high)`` gives the one estimate of ``interval_quantile(scores, low, high)``
    (``levels`` is then ignored). ``weight`` has shape (N,) like ``scores``; rows of weight 0 are
    dropped first, so they are exactly absent. The estimates have the scores' dtype (coefficients in float64).
    """
    dtype = compute_dtype(scores.dtype)
    keep = weight > 0
    if subset is not None:
        keep = keep & subset
    rows = torch.nonzero(keep).reshape(-1)
    if rows.numel() == 0:
        return scores.new_full((len(levels),), math.nan)
    host = None if torch.compiler.is_compiling() else host_values(scores)
    if host is not None:  # eager CPU: select and sort in NumPy (see _selection), as the unweighted path does
        positions = rows.numpy()
        values, row_weight = host[positions], weight.detach().numpy()[positions].astype(np.float64)
        if name in KERNEL_OF_ESTIMATOR and interval is None and len(levels) == 1 and values.size >= MIN_WINDOW_SIZE:
            window = weighted_window_selection(values, row_weight, float(levels[0]), bandwidth,
                                               KERNEL_OF_ESTIMATOR[name], KERNELS[KERNEL_OF_ESTIMATOR[name]], dtype)
            if window is not None:
                local, coefficients = window
                picked = scores.index_select(0, torch.from_numpy(positions[local])).to(dtype)
                return torch.dot(torch.from_numpy(coefficients).to(dtype), picked).reshape(1).to(scores.dtype)
        order = np.argsort(values, kind="stable")
        sorted_values = torch.from_numpy(values[order]).to(dtype)
        rows = torch.from_numpy(positions[order])
        cum = torch.from_numpy(np.cumsum(row_weight[order]))
    else:
        values = scores.detach().index_select(0, rows).to(dtype)
        sorted_values, order = torch.sort(values, stable=True)
        rows = rows[order]
        cum_dtype = torch.float64 if scores.device.type != "mps" else torch.float32
        cum = torch.cumsum(weight.detach().index_select(0, rows).to(cum_dtype), 0)
    # C*_j, the cumulative weight through the ties of s_(j): only the kernel needs it.
    tied_cum = cum[torch.searchsorted(sorted_values, sorted_values, right=True) - 1] \
        if name in KERNEL_OF_ESTIMATOR and interval is None else None
    if interval is not None:  # interval_quantile's explicit (low, high)
        start, stop = _interval_edges(float(cum[-1]), *interval)
        coefficients = (_overlap(cum, start, stop) / (stop - start)).reshape(1, -1).to(dtype)
    else:
        coefficients = _coefficients(name, sorted_values, cum, tied_cum, levels, bandwidth, dtype).to(dtype)
    picked = scores.index_select(0, rows).to(dtype)
    return (coefficients * picked).sum(dim=1).to(scores.dtype)
