r"""Rank selection for the point and kernel estimators: NumPy on the CPU, masked torch elsewhere.

Both estimators are weighted sums of the order statistics of a subset ``A`` of the scores,
``q = sum_j w_j s_(j)``, with weights that depend on ranks only. Two paths compute them:

- **Eager, on the CPU**: the ranks are found in NumPy, on a host copy of ``A``'s scores
  (``np.partition`` for the point estimate; for the kernel, the window of
  :mod:`quantile_surrogate.quantiles._kernel_window` or one full sort). Torch then only gathers the
  selected rows and weights them, so autograd sees one ``index_select`` and one dot product.
  On one CPU thread at 1e5 float32 scores, ``np.partition`` takes 65 us against 850 us for
  ``torch.kthvalue``, and ``np.sort`` 0.2 ms against 7 ms for ``torch.sort``.
- **Other devices, and under** ``torch.compile`` (which cannot trace NumPy): torch without
  data-dependent shapes or host syncs. Rows outside ``A`` become +inf and sort last,
  ``m = |A|`` stays a tensor, and the rank ``k`` and the kernel weights are tensors
  computed from it, so the compiled graph has no break.

Several levels share one selection (one partition, or one sort): ``pr_auc_loss`` asks for
nine. Counts, ranks and kernel weights are computed in at least float32
(:func:`compute_dtype`): in float16 a rank above 2048 is not an integer and one above 65504
is inf. The estimates are returned in the scores' dtype.

Row weights (``weight=`` of the losses and estimators) do not come here: their weighted
quantile, the estimator's formula on the weighted empirical distribution with the count ``N``
replaced by the mass ``W = sum w`` and ranks by cumulative weights (e.g. the kernel weight of
``s_(j)`` is ``w_(j) K((C*_j / W - c) / h)``), is :mod:`quantile_surrogate.quantiles._weighted`, so that
this unweighted hot path does no extra work.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from .._utils.counts import count
from ._kernel_window import (
    MIN_WINDOW_SIZE,
    host_values,
    host_weights,
    order_and_ranks,
    window_selection,
)
from .kernels import KERNEL_OF_ESTIMATOR, KERNELS

__all__ = [
    "compute_dtype",
    "floor_rank",
    "tied_ranks",
    "SELECTION_ESTIMATORS",
    "normalised_weights",
    "selection_estimates",
    "torch_selection_estimates",
]


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of ranks, counts and weights: float64 for float64 scores, float32 otherwise."""
    return torch.promote_types(dtype, torch.float32)


def floor_rank(n: int, level: float) -> int:
    """``k = max(1, floor(level * n))``, the 1-based rank of the point estimate.

    The package's one count rule, :func:`quantile_surrogate._utils.counts.count` with
    ``"floor"``: ``level * n`` is rounded to 6 decimals before the floor so that float noise
    cannot move ``k`` (``0.29 * 100`` is ``28.999999999999996`` in floating point, but means 29).
    ``k = 0`` happens when ``level < 1 / n``; the paper leaves it open and we take the
    smallest score (``k = 1``), the only choice that keeps the estimate inside the data.
    """
    return count(level, n, "floor")


def tied_ranks(sorted_scores: torch.Tensor) -> torch.Tensor:
    """``i* = max{j : s_(j) = s_(i)}`` (1-based) for ascending ``sorted_scores``: ties share the largest rank."""
    values = sorted_scores.detach()
    return torch.searchsorted(values, values, right=True)


SELECTION_ESTIMATORS = ("point", *KERNEL_OF_ESTIMATOR)
"""Estimators computed here; the others (``lower_mean``, ``interval``, ``harrell_davis``) index the subset."""


def selection_estimates(name: str, scores: torch.Tensor, levels: Sequence[float], bandwidth: float,
                        subset: torch.Tensor | None = None) -> torch.Tensor:
    """``q(scores[subset], c)`` for each ``c`` in ``levels``, shape (len(levels),), NaN if the subset is empty.

    ``name`` is in :data:`SELECTION_ESTIMATORS`; ``subset`` is a bool row mask or None (every
    row). Takes the NumPy path for CPU scores in eager mode, the torch path otherwise.
    """
    if not torch.compiler.is_compiling():
        values = host_values(scores)
        if values is not None:
            return _numpy_estimates(name, scores, values, levels, bandwidth, subset)
    return torch_selection_estimates(name, scores, levels, bandwidth, subset)


def _numpy_estimates(name, scores, values, levels, bandwidth, subset):
    positions = None
    if subset is not None:
        positions = np.flatnonzero(subset.numpy())
        values = values[positions]
    if values.size == 0:
        return scores.new_full((len(levels),), math.nan)
    if name == "point":
        rows, weights = _point_rows(values, levels), None
    else:
        kernel = KERNEL_OF_ESTIMATOR[name]
        rows, weights = _kernel_selection(values, levels, bandwidth, kernel, compute_dtype(scores.dtype))
    if positions is not None:
        rows = positions[rows]
    picked = scores.index_select(0, torch.from_numpy(rows))
    if weights is None:
        return picked
    picked = picked.to(weights.dtype)
    # torch.dot and mul + sum keep their dtype under autocast (matmul would drop to bfloat16).
    estimates = torch.dot(weights[0], picked).reshape(1) if len(levels) == 1 else (weights * picked).sum(dim=1)
    return estimates.to(scores.dtype)


def _point_rows(values: np.ndarray, levels) -> np.ndarray:
    """For each level, a row holding the ``k``-th smallest value (the first such row: the gradient is one-hot)."""
    if len(levels) == 1:  # once per training step: without the lists of several levels
        k = floor_rank(values.size, levels[0]) - 1
        selected = values.copy()
        selected.partition(k)  # the ndarray methods, not np.partition / np.argmax and their dispatch
        return np.array([(values == selected[k]).argmax()])
    kth = [floor_rank(values.size, level) - 1 for level in levels]
    selected = np.partition(values, sorted(set(kth)))[kth]
    return np.array([np.argmax(values == value) for value in selected], dtype=np.int64)


def _kernel_selection(values, levels, bandwidth, kernel, dtype):
    """``(rows, weights)`` with weights of shape (len(levels), len(rows)): the window if it certifies, else a full sort."""
    if len(levels) == 1 and values.size >= MIN_WINDOW_SIZE:
        selection = window_selection(values, levels[0], bandwidth, kernel, KERNELS[kernel], dtype)
        if selection is not None:
            return selection
    order, ranks = order_and_ranks(values)
    point = [floor_rank(values.size, level) - 1 for level in levels]
    return order, host_weights(ranks, levels, bandwidth, KERNELS[kernel], dtype, point)


def device_vector(values, dtype, device) -> torch.Tensor:
    """A small vector of Python numbers on ``device``, without making the host wait for a GPU.

    A copy from pageable host memory to a CUDA device first waits for the stream to drain (the
    CUDA API's rule for such copies), which stalls a training step at every loss call; a copy
    from pinned memory is asynchronous, and the caching host allocator keeps the pinned buffer
    until the copy is done. Tensors pass through unchanged (cast to ``dtype``).
    """
    if isinstance(values, torch.Tensor):
        return values.to(device=device, dtype=dtype)
    host = torch.tensor(list(values), dtype=dtype)
    if torch.device(device).type != "cuda" or torch.compiler.is_compiling():
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def normalised_weights(ranks, m, levels, bandwidth, kernel, point, valid=None):
    r"""``w_lj = K((r_j / m - c_l) / h) / sum_i K(...)`` for ascending order statistics, shape (L, n).

    A softmax of the log-kernel, so that a small bandwidth cannot underflow every weight to
    zero. Positions where ``valid`` is False (rows outside the subset) get weight 0. A level
    whose kernel has no order statistic inside its window (a compact kernel, or an empty
    subset) puts all its weight on the point estimate's order statistic ``point[l]``
    (0-based; ints, or a tensor of shape (L,)), which also keeps NaN out of the softmax.
    """
    levels = device_vector(levels, ranks.dtype, ranks.device).reshape(-1, 1)
    log_w = KERNELS[kernel]((ranks / m - levels) / bandwidth)
    if valid is not None:
        log_w = torch.where(valid, log_w, -math.inf)
    elif kernel == "gaussian":  # positive everywhere: the window is never empty
        return torch.softmax(log_w, dim=1)
    point = device_vector(point, torch.int64, ranks.device).reshape(-1, 1)
    at_point = torch.arange(ranks.shape[-1], device=ranks.device) == point
    empty = torch.isneginf(log_w).all(dim=1, keepdim=True)
    log_w = torch.where(empty, torch.where(at_point, 0.0, -math.inf), log_w)
    return torch.softmax(log_w, dim=1)


def torch_selection_estimates(name: str, scores: torch.Tensor, levels: Sequence[float], bandwidth: float,
                              subset: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`selection_estimates` in torch alone: no NumPy, no host sync, no data-dependent shape.

    Sorts every row (rows outside ``subset`` as +inf, last). It is the reference that the
    NumPy path is tested against, and what ``torch.compile`` traces.
    """
    dtype = compute_dtype(scores.dtype)
    values = scores.to(dtype)
    n = values.numel()
    if subset is None:
        ordered = torch.sort(values).values
        size = torch.full((), n, dtype=torch.int64, device=values.device)
        valid = None
    else:
        ordered = torch.sort(torch.where(subset, values, math.inf)).values
        size = subset.sum()
        valid = torch.arange(n, device=values.device) < size
    # k = count(c, m, "floor") as in floor_rank, in torch because m is a tensor here (no host sync):
    # float64, exact for m < 2^53; tests/quantiles/test_rank_selection.py holds it equal to floor_rank.
    levels_64 = device_vector(levels, torch.float64, values.device)
    k = torch.floor(torch.round(levels_64 * size, decimals=6)).long()
    k = torch.minimum(k.clamp(min=1), size.clamp(min=1))
    if name == "point":
        estimates = ordered.gather(0, k - 1)
    else:
        ranks = tied_ranks(ordered).to(dtype)
        weights = normalised_weights(ranks, size.to(dtype), levels_64.to(dtype), bandwidth,
                                      KERNEL_OF_ESTIMATOR[name], k - 1, valid)
        if valid is not None:
            ordered = torch.where(valid, ordered, 0.0)  # the +inf rows have weight 0, and inf * 0 is NaN
        estimates = (weights * ordered).sum(dim=1)
    if valid is not None:
        estimates = torch.where(size > 0, estimates, math.nan)
    return estimates.to(scores.dtype)
