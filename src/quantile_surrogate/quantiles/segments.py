r"""Quantiles of many segments at once (one per query of a ranking data set), batched: no loop over segments.

:func:`segment_quantile` gives, for every segment ``s`` (a query, say) of the scores, the estimate
``q(S_s, c_s)`` at the segment's own level ``c_s``: the same numbers as calling
:func:`~quantile_surrogate.quantiles.kernel_quantile` or :func:`~quantile_surrogate.quantiles.point_quantile`
on each segment's scores in turn, from one sort of all the rows and a handful of segment
reductions. The per-query losses of :mod:`quantile_surrogate.losses.ranking` take their thresholds here.
"""

from __future__ import annotations

import math

import torch

from .._utils.checks import LEVEL_RANGE_MESSAGE, check_bandwidth, check_groups, check_option, check_scores
from ._rank_selection import compute_dtype
from .kernels import KERNEL_OF_ESTIMATOR, KERNELS

__all__ = ["segment_quantile", "SEGMENT_ESTIMATORS"]

#: The estimators :func:`segment_quantile` batches, name -> kernel (None for the order statistic): ``"point"``
#: (:func:`~quantile_surrogate.quantiles.point_quantile`), ``"kernel"`` and ``"gaussian"`` (the Gaussian
#: :func:`~quantile_surrogate.quantiles.kernel_quantile`) and ``"epanechnikov"``.
SEGMENT_ESTIMATORS = {"point": None, **KERNEL_OF_ESTIMATOR}

#: ``ValueError`` of :func:`segment_quantile` for a segment code with no level.
SEGMENT_CODE_RANGE_MESSAGE = (
    "`segments` holds code {value}, but `levels` has {n_segments} entries (one level per segment); codes must "
    "be in 0..{last}. Encode query ids with torch.unique(query, return_inverse=True)[1]."
)

#: ``ValueError`` of :func:`segment_quantile` for ``levels`` without an entry.
LEVELS_EMPTY_MESSAGE = "`levels` is empty; pass one level per segment, e.g. 1 - K / n_q for precision@K in query q."


def segment_quantile(scores: torch.Tensor, segments: torch.Tensor, levels: torch.Tensor, *,
                     quantile: str = "kernel", bandwidth: float = 0.05) -> torch.Tensor:
    r"""The quantile estimate of every segment at its own level, batched (eq. (13) or the order statistic).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores of every row: finite, non-empty.
    segments : integer Tensor of shape (N,)
        The segment (query) of each row, a code in ``0..S-1``; the rows may come in any order.
    levels : Tensor of shape (S,), floating point
        The level ``c_s`` in [0, 1] of each segment: precision@K within a query of ``n_q`` rows
        uses ``1 - K / n_q``.
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        A name in :data:`SEGMENT_ESTIMATORS`.
    bandwidth : float > 0, default=0.05
        The kernel's scale ``h`` on each segment's own rank scale ``i*/n_s`` (ignored by ``"point"``).

    Returns
    -------
    Tensor of shape (S,)
        ``q(S_s, c_s)`` for each segment, in the scores' dtype, NaN for a segment with no row;
        differentiable with respect to ``scores`` (the gradient of a kernel estimate with respect
        to ``s_(i)`` is its weight ``w_i``; the point estimate's gradient is one-hot).

    Raises
    ------
    TypeError
        If ``scores`` or ``levels`` is not a floating point tensor, ``segments`` not an integer
        tensor, ``bandwidth`` not a number or ``quantile`` not a string.
    ValueError
        If ``scores`` is empty or holds NaN or inf, ``segments`` is not one code per row or holds a
        code outside ``0..S-1``, ``levels`` is empty, not 1-D or outside [0, 1], ``bandwidth`` is
        not > 0 or ``quantile`` is unknown.

    See Also
    --------
    kernel_quantile, point_quantile : The estimate of one segment.
    quantile_surrogate.losses.precision_at_k_loss : Precision@K within each query, on these thresholds.

    Notes
    -----
    For segment ``s`` with ``n_s`` rows and order statistics ``s_(1) <= ... <= s_(n_s)``, the
    kernel estimate of eq. (13) (``\label{eq:kernel-estimator}``) on the segment's own rank scale,

    .. math::
        \hat q_s = \sum_{i=1}^{n_s} w_{si}\, s_{(i)}, \qquad
        w_{si} = \frac{\phi\big((i^*/n_s - c_s)/h\big)}{\sum_j \phi\big((j^*/n_s - c_s)/h\big)}, \qquad
        i^* = \max\{j : s_{(j)} = s_{(i)}\},

    with the corrections of docs/paper_notes.md (the normal density, weights normalised to sum to
    one, ties take the largest rank) and, for a compact kernel with no order statistic in its
    window, all the weight on the point estimate; or the point estimate
    :math:`s_{(k)}, k = \max(1, \lfloor c_s n_s \rfloor)` (``c_s n_s`` rounded to 6 decimals first).
    Each is the number :func:`kernel_quantile` or :func:`point_quantile` gives on the segment
    alone, to rounding (``tests/quantiles/test_segments.py``).

    Computation: one sort by (segment, score) (a stable sort by score, then a stable sort by
    segment), the rank of a row its position minus its segment's start, tie-max ranks by a
    reversed running minimum of the positions that end a run of equal scores; the weights are a
    softmax of the log-kernel within each segment (``scatter_reduce`` amax for stability,
    ``index_add`` sums). No loop over segments; after the argument checks (which read
    the largest code and the levels back to the host) no host sync, so it runs as well on a GPU.
    The point estimate's gradient goes to the first row (in row order) that holds the value, as
    :func:`point_quantile`'s does on the CPU.

    Examples
    --------
    Two queries of four rows; at level 1/2 the point estimate is each one's 2nd smallest score:

    >>> import torch
    >>> from quantile_surrogate.quantiles import segment_quantile
    >>> scores = torch.tensor([3.0, 1.0, 2.0, 4.0, 10.0, 40.0, 30.0, 20.0])
    >>> segments = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    >>> segment_quantile(scores, segments, torch.tensor([0.5, 0.5]), quantile="point")
    tensor([ 2., 20.])

    The kernel estimate of the first query is ``kernel_quantile(tensor([3., 1., 2., 4.]), 0.5, 0.25)``:

    >>> segment_quantile(scores, segments, torch.tensor([0.5, 0.75]), bandwidth=0.25)
    tensor([ 2.1153, 28.8474])
    """
    check_scores(scores)
    check_groups(segments, scores.numel(), "segments")
    if isinstance(levels, torch.Tensor) and levels.numel() == 0:
        raise ValueError(LEVELS_EMPTY_MESSAGE)
    check_scores(levels, "levels")
    bad = (levels < 0) | (levels > 1)
    if bool(bad.any()):
        raise ValueError(LEVEL_RANGE_MESSAGE.format(name="levels", value=levels[bad][0].item()))
    check_option(quantile, SEGMENT_ESTIMATORS, "quantile")
    bandwidth = check_bandwidth(bandwidth)
    segments = segments.to(device=scores.device, dtype=torch.int64)
    largest = int(segments.max())
    if largest >= levels.numel():
        raise ValueError(SEGMENT_CODE_RANGE_MESSAGE.format(value=largest, n_segments=levels.numel(),
                                                           last=levels.numel() - 1))
    return segment_estimates(scores, segments, levels.to(scores.device), quantile, bandwidth)


def segment_estimates(scores: torch.Tensor, segments: torch.Tensor, levels: torch.Tensor, quantile: str,
                      bandwidth: float) -> torch.Tensor:
    """:func:`segment_quantile` without its checks (internal: the losses check once, then call this).

    ``segments`` int64 codes on the scores' device, ``levels`` of shape (S,) in [0, 1].
    """
    dtype = compute_dtype(scores.dtype)
    n_segments = levels.numel()
    rows = _sorted_rows(scores.detach(), segments, n_segments)
    ordered = scores.to(dtype)[rows.order]  # the only step on the autograd graph, with the weighted sum
    levels_64 = levels.to(torch.float64)
    # k = max(1, floor(c n)) with c n rounded to 6 decimals, as floor_rank (float64 is exact for n < 2^53)
    k = torch.floor(torch.round(levels_64 * rows.sizes.to(torch.float64), decimals=6)).long()
    k = torch.minimum(k.clamp(min=1), rows.sizes.clamp(min=1))
    point = (rows.starts + k - 1).clamp(max=max(ordered.numel() - 1, 0))  # in sorted positions, per segment
    kernel = SEGMENT_ESTIMATORS[quantile]
    if kernel is None:
        # the first sorted row of the tie run that holds s_(k): the first such row in row order (stable sorts)
        estimates = ordered[rows.run_start[point]]
    else:
        weights = _segment_weights(rows, levels_64.to(dtype), bandwidth, kernel, point)
        estimates = ordered.new_zeros(n_segments).index_add(0, rows.segment, weights * ordered)
    estimates = torch.where(rows.sizes > 0, estimates, math.nan)
    return estimates.to(scores.dtype)


class _SortedRows:
    """The rows sorted by (segment, score): the order, each sorted row's segment and tied rank, the segments' sizes."""

    def __init__(self, order, segment, sizes, starts, ranks, run_start):
        self.order, self.segment, self.sizes, self.starts = order, segment, sizes, starts
        self.ranks = ranks  # i* within the segment, 1-based: ties take the largest rank
        self.run_start = run_start  # the first sorted position of each row's run of equal scores


def _sorted_rows(values: torch.Tensor, segments: torch.Tensor, n_segments: int) -> _SortedRows:
    """One sort by (segment, score) and the ranks within each segment, in O(N) after the sort."""
    by_score = torch.sort(values, stable=True).indices
    order = by_score[torch.sort(segments[by_score], stable=True).indices]
    segment, ordered = segments[order], values[order]
    # index_add, not bincount: bincount's output size depends on the data and waits for a GPU
    sizes = torch.zeros(n_segments, dtype=torch.int64, device=values.device)
    sizes = sizes.index_add_(0, segments, torch.ones_like(segments))
    starts = torch.cumsum(sizes, 0) - sizes
    n = values.numel()
    position = torch.arange(n, device=values.device)
    new_run = torch.ones(n, dtype=torch.bool, device=values.device)
    new_run[1:] = (segment[1:] != segment[:-1]) | (ordered[1:] != ordered[:-1])
    ends_run = torch.ones_like(new_run)
    ends_run[:-1] = new_run[1:]
    # each position's run end: the nearest run-ending position at or after it (a reversed running minimum)
    run_end = torch.where(ends_run, position, n).flip(0).cummin(0).values.flip(0)
    run_start = torch.where(new_run, position, -1).cummax(0).values
    ranks = run_end - starts[segment] + 1
    return _SortedRows(order, segment, sizes, starts, ranks, run_start)


def _segment_weights(rows: _SortedRows, levels: torch.Tensor, bandwidth: float, kernel: str,
                     point: torch.Tensor) -> torch.Tensor:
    r"""``w_i = K((i*/n_s - c_s)/h) / sum_{j in s} K(...)`` for each sorted row: a softmax within each segment.

    The log-kernel's segment maximum (``scatter_reduce`` amax) is subtracted before ``exp``, so
    that a small bandwidth cannot underflow a whole segment to zero; a segment whose compact kernel
    holds no rank puts all its weight on its point estimate's row ``point[s]``.
    """
    dtype = levels.dtype
    segment = rows.segment
    log_w = KERNELS[kernel]((rows.ranks.to(dtype) / rows.sizes.to(dtype)[segment] - levels[segment]) / bandwidth)
    n_segments = levels.numel()
    peak = torch.full((n_segments,), -math.inf, dtype=dtype, device=log_w.device)
    peak = peak.scatter_reduce(0, segment, log_w, "amax")
    if kernel != "gaussian":  # an empty window: weight 1 on the point estimate's order statistic
        empty = torch.isneginf(peak)
        # only a segment with rows marks its point (an empty segment's position belongs to the next one)
        at_point = torch.zeros_like(log_w).index_add(0, point, (rows.sizes > 0).to(dtype)) > 0
        log_w = torch.where(empty[segment], torch.where(at_point, 0.0, -math.inf), log_w)
        peak = torch.where(empty, 0.0, peak)
    unnormalised = torch.exp(log_w - peak[segment])
    totals = torch.zeros(n_segments, dtype=dtype, device=log_w.device).index_add_(0, segment, unnormalised)
    return unnormalised / totals[segment]
