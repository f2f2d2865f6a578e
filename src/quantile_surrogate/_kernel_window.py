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

The bookkeeping runs in NumPy on CPU tensors: NumPy's SIMD sorts are 5-10x faster than
``torch.sort`` on CPU, and float32 keys are sorted together with their positions packed
into one uint64 (order-preserving float bits in the high word), which gives an argsort
at the cost of a plain sort. The differentiable part stays in torch: the estimate is
``dot(w, scores[kept])``, whose gradient is ``w`` on the kept rows and 0 elsewhere.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

__all__ = ["window_half_width", "kernel_quantile_window", "MIN_WINDOW_SIZE"]

MIN_WINDOW_SIZE = 1024
"""Below this many scores a full sort costs less than the bookkeeping."""

_SAMPLE_SIZE = 4096
# A strided sample of m scores locates a quantile to about sqrt(p (1 - p) / m) <= 0.008
# in rank fraction; widening the bracket by 4 such standard errors makes a miss (and
# the exact re-selection it costs) rare for any row order that is not adversarial.
_SAMPLE_MARGIN = 4.0 * 0.5 / math.sqrt(_SAMPLE_SIZE)

_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}
_SIGN = np.uint64(0x80000000)
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


def _argsort(values: np.ndarray) -> np.ndarray:
    if values.dtype == np.float32:
        # Order-preserving map of IEEE bits to uint32 (flip all bits of negatives, set
        # the sign bit of positives), then the position in the low word: one uint64 sort.
        keys = values.view(np.uint32).astype(np.uint64)
        keys ^= np.where(keys >= _SIGN, _LOW_WORD, _SIGN)
        keys <<= np.uint64(32)
        keys |= np.arange(values.size, dtype=np.uint64)
        return (np.sort(keys) & _LOW_WORD).astype(np.int64)
    return np.argsort(values)


def _tied_ranks(sorted_values: np.ndarray) -> np.ndarray:
    """1-based ``i* = max{j : s_(j) = s_(i)}`` on ascending values, in O(m) (no binary search)."""
    m = sorted_values.size
    last = np.empty(m, dtype=bool)
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=last[:-1])
    last[-1] = True
    end = np.where(last, np.arange(1, m + 1), m + 1)
    return np.minimum.accumulate(end[::-1])[::-1]


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


def kernel_quantile_window(
    scores: torch.Tensor,
    level: float,
    bandwidth: float,
    kernel: str,
    log_kernel: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor | None:
    """The kernel estimate from the rows inside the window, or ``None`` to ask for a full sort.

    ``None`` when the input is not a float32/float64 CPU tensor of at least
    :data:`MIN_WINDOW_SIZE` scores, or when the certificate fails. Weights are computed
    exactly as in ``quantiles.kernel_weights`` (same dtype arithmetic on the same ranks).
    """
    if scores.device.type != "cpu" or scores.dtype not in _NUMPY_DTYPES or scores.numel() < MIN_WINDOW_SIZE:
        return None
    values = scores.detach().numpy()
    n = values.size
    half = window_half_width(kernel, bandwidth, scores.dtype)
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
            break
    else:
        return None
    if n_kept == 0:
        return None

    kept_values = values if kept is None else values[kept]
    order = _argsort(kept_values)
    rows = order if kept is None else kept[order]
    ranks = n_below + _tied_ranks(kept_values[order])

    dtype = scores.dtype
    log_w = log_kernel((torch.from_numpy(ranks).to(dtype) / n - level) / bandwidth)
    peak = log_w.max()
    unnormalised = torch.exp(log_w - peak)
    kept_mass = unnormalised.sum()
    # Certificate, in log space relative to the kept peak: log D - log M <= log(eps / 2).
    counts = (n_below, n_above)
    edge_ranks = torch.tensor([n_below, n_below + n_kept + 1], dtype=dtype)
    log_edges = log_kernel((edge_ranks / n - level) / bandwidth) - peak
    bound = (peak.item(), kept_mass.item(), log_edges.tolist())
    if not math.isfinite(bound[0]):
        return None
    log_dropped = -math.inf
    for count, log_edge in zip(counts, bound[2]):
        if count:
            log_dropped = np.logaddexp(log_dropped, math.log(count) + log_edge)
    if log_dropped - math.log(bound[1]) > math.log(0.5 * torch.finfo(dtype).eps):
        return None
    weights = unnormalised / kept_mass
    return torch.dot(weights, scores.index_select(0, torch.from_numpy(rows)))
