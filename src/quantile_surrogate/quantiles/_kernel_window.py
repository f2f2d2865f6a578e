r"""Fast path of :func:`~quantile_surrogate.quantiles.kernel_quantile`: sort only the kernel's window.

The kernel estimate ``sum_j w(r*_j) s_j / sum_j w(r*_j)`` (eq. (13)) depends on score
``s_j`` only through its tied rank ``r*_j = #{i : s_i <= s_j}``. The kernel weight
``w(r) = K((r/N - c) / h)`` is negligible, relative to the float precision of the
result, for ranks outside ``|r/N - c| <= U h`` (``U = 1`` for the compact Epanechnikov
kernel; for the Gaussian ``U`` solves ``exp(-U^2 / 2) = 0.6 eps h``, about 6.2 in float32
and 8.9 in float64 at ``h = 0.05``). So:

1. bracket that window by two score values ``a <= b`` (from a strided sample of the
   scores, checked by counting; exact selection with ``np.partition`` if the sample
   misses);
2. keep the rows with ``a <= s_j <= b``; every other row has rank ``<= #{s < a}`` or
   ``> #{s <= b}``, and because the kernel decreases away from ``c N`` its weight is at
   most the kernel at those two ranks;
3. sort only the kept rows and give each its exact tied rank ``#{s < a} + (rank within
   the kept rows)``; ties never cross ``a`` or ``b`` since the bracket is a value range;
4. check a certificate: the dropped mass bound ``D = n_below K(#{s < a}) + n_above
   K(#{s <= b} + 1)`` is at most ``eps / 2`` of the kept mass ``M``, so the estimate is
   within ``(eps / 2) (max s - min s)`` of the full-sort one. Otherwise (heavy ties near
   the level, tiny ``N h``) the caller falls back to the full sort.

The bookkeeping runs in NumPy on CPU tensors: NumPy's SIMD sorts are 5-40x faster than
``torch.sort`` on CPU, and float32 keys are sorted together with their positions packed
into one uint64 (order-preserving float bits in the high word), which gives an argsort
at the cost of a plain sort. The differentiable part stays in torch: the estimate is
``dot(w, scores[kept])``, whose gradient is ``w`` on the kept rows and 0 elsewhere.
Half precision scores are handled in float32 (:func:`host_values`): ranks and weights
need more than float16's 11 bits.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

__all__ = [
    "window_half_width", "kernel_quantile_window", "window_selection", "host_values", "order_and_ranks",
    "sorted_tied_ranks", "host_weights", "MIN_WINDOW_SIZE",
]

MIN_WINDOW_SIZE = 1024
"""Below this many scores a full sort costs less than the bookkeeping."""

_SAMPLE_SIZE = 4096
# A strided sample of m scores locates a quantile to about sqrt(p (1 - p) / m) <= 0.008
# in rank fraction; widening the bracket by 4 such standard errors makes a miss (and
# the exact re-selection it costs) rare for any row order that is not adversarial.
_SAMPLE_MARGIN = 4.0 * 0.5 / math.sqrt(_SAMPLE_SIZE)

_HOST_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_NUMPY_OF = {torch.float32: np.float32, torch.float64: np.float64}
_SIGN = np.uint32(0x80000000)
_LOW_WORD = np.uint64(0xFFFFFFFF)


def window_half_width(kernel: str, bandwidth: float, dtype: torch.dtype) -> float:
    """``U h``: beyond ``|r/N - c| > U h`` the kernel is below ``0.6 eps h`` of its peak.

    With that edge value the crude tie-proof bound ``N K(edge)`` on the dropped mass is
    at most ``eps / 2`` of the kept mass ``M >= 1.25 N h`` (a Gaussian window cut in half
    at ``c = 0`` or ``1`` still holds ``int_0^inf exp(-u^2/2) du = 1.2533`` of ``N h``).
    """
    if kernel == "epanechnikov":
        return bandwidth
    eps = torch.finfo(dtype).eps
    return math.sqrt(2.0 * math.log(1.0 / (0.6 * eps * bandwidth))) * bandwidth


def order_and_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, ranks)``: an ascending argsort, and the 1-based tied rank ``i* = max{j : s_(j) = s_(i)}``
    of each sorted value (ties take the largest rank), in O(m) after the sort.

    float32 values are sorted as one uint64 array of (order-preserving value bits, position):
    an argsort at the cost of a plain SIMD sort, and the sorted high words find the ties
    without gathering the values again.
    """
    if values.dtype == np.float32:
        # Flip all bits of negatives and set the sign bit of positives; -0.0 + 0.0 is +0.0, so
        # that the two zeros, equal as numbers, have one key.
        bits = (values + np.float32(0.0)).view(np.uint32)
        flip = (bits >> np.uint32(31)) * np.uint32(0x7FFFFFFF)  # 0x7FFFFFFF for negatives, 0 otherwise
        flip |= _SIGN
        keys = (bits ^ flip).astype(np.uint64)
        keys <<= np.uint64(32)
        keys |= np.arange(values.size, dtype=np.uint64)
        keys.sort()
        order = (keys & _LOW_WORD).astype(np.int64)
        keys >>= np.uint64(32)
        return order, sorted_tied_ranks(keys)
    order = np.argsort(values)
    return order, sorted_tied_ranks(values[order])


def sorted_tied_ranks(sorted_values: np.ndarray) -> np.ndarray:
    """1-based ``i* = max{j : s_(j) = s_(i)}`` on ascending values, in O(m) (no binary search)."""
    m = sorted_values.size
    repeated = np.flatnonzero(sorted_values[1:] == sorted_values[:-1])  # i with s_(i) = s_(i+1), 0-based
    ranks = np.arange(1, m + 1)
    if repeated.size:
        # Each run of consecutive repeats i = a..b is a tie group a..b+1: all take rank b + 2.
        starts = np.flatnonzero(np.diff(repeated, prepend=-2) != 1)
        stops = np.append(starts[1:], repeated.size) - 1
        group_rank = repeated[stops] + 2
        ranks[repeated] = np.repeat(group_rank, stops - starts + 1)
    return ranks


def _bracket(values: np.ndarray, lo: int, hi: int, exact: bool) -> tuple[float, float]:
    """Score values ``a <= b`` whose range should cover the ranks ``lo..hi`` (1-based)."""
    n = values.size
    if exact:
        kth = [r - 1 for r in (lo, hi) if 1 <= r <= n]
        part = np.partition(values, kth) if kth else values
        a = part[lo - 1] if lo >= 1 else -np.inf
        b = part[hi - 1] if hi <= n else np.inf
        return a, b
    stride = max(1, n // _SAMPLE_SIZE)
    sample = np.sort(values[::stride])
    m = sample.size
    lo_at = math.floor((lo / n - _SAMPLE_MARGIN) * m)
    hi_at = math.ceil((hi / n + _SAMPLE_MARGIN) * m)
    a = sample[lo_at] if lo >= 1 and lo_at >= 0 else -np.inf
    b = sample[hi_at] if hi <= n and hi_at < m else np.inf
    return a, b


def host_values(scores: torch.Tensor) -> np.ndarray | None:
    """A NumPy copy (or view) of CPU float scores, half precision widened to float32; None otherwise."""
    if scores.device.type != "cpu" or scores.dtype not in _HOST_DTYPES:
        return None
    values = scores.detach()
    if values.dtype in (torch.float16, torch.bfloat16):
        values = values.float()
    return values.numpy()


def kernel_quantile_window(
    scores: torch.Tensor,
    level: float,
    bandwidth: float,
    kernel: str,
    log_kernel: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor | None:
    """The kernel estimate from the rows inside the window, or ``None`` to ask for a full sort.

    ``None`` when the input is not a CPU float tensor of at least :data:`MIN_WINDOW_SIZE`
    scores, or when the certificate fails. The estimate has the dtype of ``scores``.
    """
    values = host_values(scores)
    if values is None or values.size < MIN_WINDOW_SIZE:
        return None
    dtype = torch.promote_types(scores.dtype, torch.float32)
    selection = window_selection(values, level, bandwidth, kernel, log_kernel, dtype)
    if selection is None:
        return None
    rows, weights = selection
    picked = scores.index_select(0, torch.from_numpy(rows)).to(weights.dtype)
    return torch.dot(weights[0], picked).to(scores.dtype)


def _bracket_rows(values: np.ndarray, level: float, bandwidth: float, kernel: str, dtype: torch.dtype):
    """``(kept, n_below, n_kept)``: the rows with ``a <= s <= b`` for a bracket that holds the window, or None."""
    n = values.size
    half = window_half_width(kernel, bandwidth, dtype)
    lo = math.floor(n * (level - half))
    hi = math.ceil(n * (level + half))
    center = level * n
    for exact in (False, True):
        a, b = _bracket(values, lo, hi, exact)
        n_below = int(np.count_nonzero(values < a)) if a > -np.inf else 0
        if a > -np.inf and b < np.inf:
            kept = np.flatnonzero((values >= a) & (values <= b))
        elif a > -np.inf or b < np.inf:
            kept = np.flatnonzero(values >= a if a > -np.inf else values <= b)
        else:
            kept = None
        n_kept = n if kept is None else kept.size
        n_above = n - n_below - n_kept
        # The dropped rows' rank bounds must lie on either side of the kernel's centre,
        # where the kernel is monotone; a bracket that misses the window fails that.
        if (n_below == 0 or n_below <= min(lo, center)) and (n_above == 0 or n_below + n_kept + 1 >= max(hi, center)):
            return kept, n_below, n_kept
    return None


def _bracketed_window(values: np.ndarray, level: float, bandwidth: float, kernel: str, dtype: torch.dtype):
    """``(rows, ranks, n_below, n_kept)``: the kept rows in ascending order and their tied ranks; None if empty."""
    bracket = _bracket_rows(values, level, bandwidth, kernel, dtype)
    if bracket is None or bracket[2] == 0:
        return None
    kept, n_below, n_kept = bracket
    order, ranks = order_and_ranks(values if kept is None else values[kept])
    return (order if kept is None else kept[order]), ranks + n_below, n_below, n_kept


def _sorted_window(values: np.ndarray, level: float, bandwidth: float, kernel: str, dtype: torch.dtype):
    """:func:`_bracketed_window` from one sort of every value, where the bracket's sample is every value.

    The same bracket (the sample's order statistics ``a`` and ``b``), read off the sorted values; the
    kept rows are a slice of the sorted order, and their ranks are the full sort's. With every value in
    the sample, ``a`` ranks at most ``lo - 1`` and ``b`` at least ``hi + 1`` (the margin is 32 rows or
    more from :data:`MIN_WINDOW_SIZE` on), so the bracket always holds the window and is never empty: the
    bracketed path's exact selection is not needed. Only the order of tied rows may differ from the
    bracketed path's, and tied rows share one weight.
    """
    n = values.size
    order, tied_ranks = order_and_ranks(values)
    ordered = values[order]
    half = window_half_width(kernel, bandwidth, dtype)
    lo, hi = math.floor(n * (level - half)), math.ceil(n * (level + half))
    lo_at, hi_at = math.floor((lo / n - _SAMPLE_MARGIN) * n), math.ceil((hi / n + _SAMPLE_MARGIN) * n)
    start = int(np.searchsorted(ordered, ordered[lo_at], side="left")) if lo >= 1 and lo_at >= 0 else 0
    stop = int(np.searchsorted(ordered, ordered[hi_at], side="right")) if hi <= n and hi_at < n else n
    return order[start:stop], tied_ranks[start:stop], start, stop - start


def window_selection(
    values: np.ndarray,
    level: float,
    bandwidth: float,
    kernel: str,
    log_kernel: Callable[[torch.Tensor], torch.Tensor],
    dtype: torch.dtype,
) -> tuple[np.ndarray, torch.Tensor] | None:
    """``(rows, weights)`` of the kernel estimate ``dot(weights[0], values[rows])``, or None.

    ``weights`` has shape (1, r) and ``dtype`` (float32 or float64), by the formula of
    ``quantiles.kernel_weights`` (a softmax of the log-kernel, in the same dtype, on the same
    ranks). None when the bracket is empty or the certificate fails (the caller then sorts
    every value).
    """
    # Below 2 x _SAMPLE_SIZE values the bracket's sample is every value: sort them once and slice the window.
    window = (_sorted_window if values.size < 2 * _SAMPLE_SIZE else _bracketed_window)(values, level, bandwidth,
                                                                                      kernel, dtype)
    if window is None:
        return None
    rows, ranks, n_below, n_kept = window
    n = values.size

    # The arithmetic of kernel_weights (same dtype, same operations) in NumPy, which dispatches
    # small operations faster than torch; only the log-kernel itself is the torch function.
    log_w = log_kernel(torch.from_numpy(_scaled(ranks, n, level, bandwidth, dtype))).numpy()
    peak = float(log_w.max())
    if not math.isfinite(peak):  # a compact kernel with no kept rank inside its window
        return None
    unnormalised = np.exp(log_w - peak)
    kept_mass = float(unnormalised.sum())
    # Certificate, in log space relative to the kept peak: log D - log M <= log(eps / 2).
    counts = (n_below, n - n_below - n_kept)
    edges = _scaled(np.array([n_below, n_below + n_kept + 1]), n, level, bandwidth, dtype)
    log_edges = (log_kernel(torch.from_numpy(edges)).numpy() - peak).tolist()
    log_dropped = -math.inf
    for count, log_edge in zip(counts, log_edges):
        if count:
            log_dropped = np.logaddexp(log_dropped, math.log(count) + log_edge)
    if log_dropped - math.log(kept_mass) > math.log(0.5 * torch.finfo(dtype).eps):
        return None
    unnormalised /= kept_mass
    return rows, torch.from_numpy(unnormalised).unsqueeze(0)


def _scaled(ranks: np.ndarray, n: int, level, bandwidth: float, dtype: torch.dtype) -> np.ndarray:
    """``u = (r / n - c) / h`` in ``dtype``, as torch computes it; ``level`` may be a column of levels."""
    u = ranks.astype(_NUMPY_OF[dtype]) / n
    u = u - np.asarray(level, dtype=u.dtype)
    u /= bandwidth
    return u


def host_weights(ranks: np.ndarray, levels, bandwidth: float, log_kernel, dtype: torch.dtype, point) -> torch.Tensor:
    """Normalised kernel weights of ascending order statistics with tied ``ranks``, one row per level: (L, m).

    The softmax of :func:`quantile_surrogate.quantiles._rank_selection.normalised_weights`, in NumPy. A level
    whose compact kernel holds no rank puts all its weight on ``point[l]`` (0-based).
    """
    column = np.asarray(levels, dtype=np.float64).reshape(-1, 1)
    log_w = log_kernel(torch.from_numpy(_scaled(ranks, ranks.size, column, bandwidth, dtype))).numpy()
    peak = log_w.max(axis=1, keepdims=True)
    empty = ~np.isfinite(peak[:, 0])
    if empty.any():
        log_w[empty] = -np.inf
        log_w[empty, np.asarray(point)[empty]] = 0.0
        peak[empty] = 0.0
    weights = np.exp(log_w - peak)
    weights /= weights.sum(axis=1, keepdims=True)
    return torch.from_numpy(weights)


def weighted_window_selection(values: np.ndarray, weight: np.ndarray, level: float, bandwidth: float,
                              kernel: str, log_kernel: Callable[[torch.Tensor], torch.Tensor], dtype: torch.dtype):
    r"""The window path with frequency weights: ``(rows, coefficients)`` of the weighted kernel estimate, or None.

    Weighted definition (:mod:`quantile_surrogate.quantiles._weighted`): ``q = sum_j w_j K((C*_j / W - c) / h) s_j /
    sum_j w_j K(...)``, ``C*_j`` the weight of the rows scoring ``<= s_j`` and ``W`` the total
    (every weight > 0 here). Ranks become cumulative weights and counts become masses, so steps 1-4
    above hold with ``#{s < a}`` replaced by ``W_below = sum_{s < a} w`` and ``n_below`` by that
    mass: the bracket comes from a strided sample's weighted quantiles, is checked by summing
    weights, and the certificate ``W_below K(W_below) + W_above K(W_below + W_kept) <= (eps / 2)
    sum_kept w K`` bounds the dropped weight (the kernel decreases away from ``c W``). None when
    the bracket misses or the certificate fails; the caller then sorts every row.
    """
    n = values.size
    total = float(weight.sum())
    half = window_half_width(kernel, bandwidth, dtype)
    lo_mass, hi_mass, center = total * (level - half), total * (level + half), total * level
    stride = max(1, n // _SAMPLE_SIZE)
    sample_order = np.argsort(values[::stride], kind="stable")
    sample_values = values[::stride][sample_order]
    sample_cum = np.cumsum(weight[::stride][sample_order])
    sample_cum *= total / sample_cum[-1]
    margin = _SAMPLE_MARGIN * total
    lo_at = int(np.searchsorted(sample_cum, lo_mass - margin)) - 1
    hi_at = int(np.searchsorted(sample_cum, hi_mass + margin))
    a = sample_values[lo_at] if lo_mass > 0 and lo_at >= 0 else -np.inf
    b = sample_values[hi_at] if hi_mass < total and hi_at < sample_values.size else np.inf
    below = values < a
    kept_mask = ~below & (values <= b)
    mass_below, mass_kept = float(weight[below].sum()), float(weight[kept_mask].sum())
    mass_above = total - mass_below - mass_kept
    if mass_kept <= 0 or mass_below > min(max(lo_mass, 0.0), center) or (
            mass_above > 0 and mass_below + mass_kept < max(min(hi_mass, total), center)):
        return None
    kept = np.flatnonzero(kept_mask)
    order = np.argsort(values[kept], kind="stable")
    rows, kept_values = kept[order], values[kept][order]
    cum = mass_below + np.cumsum(weight[rows])
    tied = cum[np.searchsorted(kept_values, kept_values, side="right") - 1]
    u = ((tied / total).astype(_NUMPY_OF[dtype]) - np.asarray(level, dtype=_NUMPY_OF[dtype])) / bandwidth
    log_w = log_kernel(torch.from_numpy(np.ascontiguousarray(u))).double().numpy() + np.log(weight[rows])
    peak = float(log_w.max())
    if not math.isfinite(peak):
        return None
    unnormalised = np.exp(log_w - peak)
    kept_total = float(unnormalised.sum())
    edges = ((np.array([mass_below, mass_below + mass_kept]) / total).astype(_NUMPY_OF[dtype])
             - np.asarray(level, dtype=_NUMPY_OF[dtype])) / bandwidth
    log_edges = (log_kernel(torch.from_numpy(edges)).double().numpy() - peak).tolist()
    log_dropped = -math.inf
    for mass, log_edge in zip((mass_below, mass_above), log_edges):
        if mass > 0:
            log_dropped = np.logaddexp(log_dropped, math.log(mass) + log_edge)
    if log_dropped - math.log(kept_total) > math.log(0.5 * torch.finfo(dtype).eps):
        return None
    return rows, unnormalised / kept_total
