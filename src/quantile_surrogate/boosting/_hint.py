r"""The previous round's threshold as the first histogram of the next: fewer reductions a round on Dask.

Between two boosting rounds the threshold moves little (each tree adds a small step to every
score), but :func:`~._collective.select_ranks` starts every call from the whole span of ``A``'s
scores: a SUM and a MAX per round of refinement, two rounds at 10^6 rows, after the first reduction
that finds the span. A :class:`SelectionHint` remembers, for each rank the call selects (its *slot*: the
point estimate's rank, or the kernel's two window edges), a value window ``[c - r, c + r]`` around
the key it found last time. The next call's first reduction (which carries the counts and span
anyway) also sums every worker's counts in :data:`~._collective.SELECTION_BINS` bins of that window
(:func:`~._collective._edges`) and two outer bins, below and above it; the bin holding the rank is
then known, and when it is small its keys are gathered in the next reduction: 3 reductions a point
call (counts and histogram, the gather, the gradient's sums) against 4 to 7 from the span.

**With row weights** the bins carry weights (each worker sends its own, or its counts where it has
none: whether the rows are weighted is decided in the same reduction), and the bin holding the mass
is snapped, never gathered (:func:`~._collective.select_masses` never gathers).

**Never wrong, only slower.** The histogram is exact counts of keys in key ranges (with weights,
their sums), whatever the window: a rank outside it falls in an outer bin and the refinement goes on
from there. A window is used only when every worker sent the same one (each worker's centre and
radius ride in the reduction):
each worker computes its next window from reduced numbers only (the new key, the old window, the
chosen bin), so windows agree unless a worker's memory was lost or is another training's; then the
call starts from the span, as without a hint.

**The window.** Under boosting the threshold moved by about the same step round after round in
the benchmark (docs/distributed.md), so the window is centred on the value found plus the last
step, ``v + (v - v_prev)``. Its radius, after a call from the span: half the width of a
value-evenly spaced bin of the span (``(max - min) / B``); after a call from a window of radius ``r``
centred on ``c`` that found ``v``: ``max(2 r, 2 |v - c|)`` if ``v`` fell outside (an outer bin),
``r / 4`` if its bin still held several values after the gather or snap (more rounds followed), else
``max(r, 2 |v - c|)``.
"""

from __future__ import annotations

import numpy as np

from ..quantiles.kernels import KERNEL_OF_ESTIMATOR
from ._collective import _bin_bounds, _edges, float_keys, key_values, rank_bin

__all__ = ["SelectionHint", "hint_counts", "hint_section", "agreed_windows", "hint_start", "HINT_SLOTS"]

#: Rank slots a call of the distributed objective selects, by estimator (the others take no hint): the point
#: estimate's rank; a kernel's two window edges.
HINT_SLOTS = {"point": 1, **{name: 2 for name in KERNEL_OF_ESTIMATOR}}

_LARGEST = np.finfo(np.float64).max
_ABOVE = 1 << 64  # the key after the largest (the edge that closes the last bin)


class SelectionHint:
    """One worker's memory between calls: per slot a value window ``(centre, radius, last value)`` or None.

    ``windows`` is a list of ``slots`` entries; :meth:`update` sets them from reduced numbers only.
    """

    def __init__(self, slots: int):
        self.windows = [None] * slots

    def edges(self, bins: int) -> list[list[int] | None]:
        """Each slot's bin edges (ascending keys, :func:`~._collective._edges` over its window) or None."""
        out = []
        for window in self.windows:
            if window is None:
                out.append(None)
                continue
            centre, radius, _ = window
            with np.errstate(over="ignore"):  # clipped to finite values: _edges spaces values between them
                ends = np.clip([centre - radius, centre + radius], -_LARGEST, _LARGEST)
            low, high = (int(key) for key in float_keys(ends))
            out.append(_edges(low, high, bins))
        return out

    def update(self, slot: int, key: int, span: tuple[int, int], bins: int, outcome: str | None) -> None:
        """The window after a call found ``key`` in ``slot``: ``outcome`` None (from the span), "outside" (an outer
        bin), "large" (the window's bin held several values) or "inside" (the module's radius rule)."""
        value = float(key_values([key])[0])
        with np.errstate(over="ignore", invalid="ignore"):
            if outcome is None or self.windows[slot] is None:
                low, high = key_values(list(span))
                radius, drift = float(high / bins - low / bins), 0.0  # no overflow for values of opposite signs
            else:
                centre, radius, last = self.windows[slot]
                missed = 2.0 * abs(value - centre)
                radius = max(2.0 * radius, missed) if outcome == "outside" else radius / 4.0 if outcome == "large" \
                    else max(radius, missed)
                drift = value - last
            centre = value + drift
        self.windows[slot] = (centre, radius, value) if np.isfinite(radius) and np.isfinite(centre) else None


def hint_counts(keys: np.ndarray, edges: list[int] | None, bins: int, prefix: np.ndarray | None = None) -> np.ndarray:
    """This worker's counts of ``keys`` (ascending) below the window, in its bins and above it: ``bins + 2``
    float64 (exact integers), zeros after the last bin (``_edges`` may give fewer than ``bins``); all zeros for no
    window. With ``prefix`` (the keys' cumulative weights, 0 first) their weights instead of their counts."""
    counts = np.zeros(bins + 2)
    if edges is not None:
        bounds = np.concatenate([[0], _bin_bounds(keys, edges), [keys.size]])
        counts[:len(edges) + 1] = np.diff(bounds if prefix is None else prefix[bounds])
    return counts


def hint_section(windows, edges, keys: np.ndarray, bins: int, size: int, rank: int, prefix=None) -> np.ndarray:
    """This worker's part of the first reduction (a float64 SUM) for its windows: per slot, ``3 W`` entries
    (``(1, centre, radius)`` of its window in its own 3, zeros elsewhere: the SUM is every worker's window), then
    :func:`hint_counts`' ``bins + 2``. ``edges``: :meth:`SelectionHint.edges` of ``windows``."""
    out = np.zeros(len(windows) * (3 * size + bins + 2))
    for slot, (window, slot_edges) in enumerate(zip(windows, edges)):
        at = slot * (3 * size + bins + 2)
        if window is not None:
            out[at + 3 * rank:at + 3 * rank + 3] = (1.0, *window[:2])
        out[at + 3 * size:at + 3 * size + bins + 2] = hint_counts(keys, slot_edges, bins, prefix)
    return out


def agreed_windows(reduced: np.ndarray, edges, bins: int, size: int) -> list:
    """Per slot ``(edges, summed counts)`` where every worker sent the same window (:func:`hint_section`'s
    reduced entries), else None: a window one worker lacks or remembers otherwise is not used by anyone."""
    out = []
    for slot, slot_edges in enumerate(edges):
        at = slot * (3 * size + bins + 2)
        sent = reduced[at:at + 3 * size].reshape(size, 3)
        agreed = slot_edges is not None and sent[0, 0] == 1.0 and (sent == sent[0]).all()
        out.append((slot_edges, reduced[at + 3 * size:at + 3 * size + bins + 2]) if agreed else None)
    return out


def hint_start(counts: np.ndarray, edges: list[int], rank, span: tuple[int, int]):
    """``((low, high, count, below), outside)``: the key range (within ``span``) of the bin of the summed
    ``counts`` (:func:`hint_counts`) that holds the 1-based ``rank``, its count, the count under it, and
    whether it is an outer bin. With weights, ``rank`` is a mass and the counts are weights (the bin that
    first brings the cumulative weight to it, as in :func:`~._collective.select_masses`)."""
    bounds = [0, *edges, _ABOVE]  # bin i holds the keys in [bounds[i], bounds[i + 1])
    j, below = rank_bin(counts[:len(bounds) - 1], 0, rank)
    low, high = max(bounds[j], span[0]), min(bounds[j + 1] - 1, span[1])
    exact = float(below).is_integer() and float(counts[j]).is_integer()  # counts; weights stay floats
    count, below = (int(counts[j]), int(below)) if exact else (float(counts[j]), float(below))
    return (low, high, count, below), j in (0, len(bounds) - 2)
