r"""The reductions of the distributed boosting objective: exact global order statistics by allreduce.

Under ``xgboost.dask.train`` every worker calls the custom objective on its own rows, in lockstep
inside XGBoost's communicator (``xgboost.collective``: ``allreduce(data, op)``). This module is
the only place that talks to it, through a two-method interface that a test fakes with threads:

- :class:`Communicator`: ``rank``, ``world_size`` and ``allreduce(values, op)`` with ``op`` in
  ``{"sum", "max"}`` (every worker gets the elementwise sum or maximum of every worker's array);
- :func:`xgboost_communicator`: XGBoost's collective when it is initialised with more than one
  worker, else None (XGBoost itself is never imported here: only looked up if already loaded);
- :func:`select_ranks`: the values of given global ranks of a multiset split across workers,
  exactly, by histogram refinement;
- :func:`gather_window`: every worker's values in a value range ``[low, high]``, on every worker;
- :func:`select_masses` and :func:`gather_weighted_window`: their twins for weighted rows (the
  smallest value whose cumulative weight reaches a mass; the window's values with their weights).

**Exact selection.** A float64 ``s`` maps to a uint64 key ``u(s)`` that orders like ``s``
(flip every bit of a negative, set the sign bit of a positive; ``-0.0`` becomes ``+0.0``). To find
the value of rank ``k`` (1-based, ``s_(k)``, the k-th smallest) keep a key interval ``[L, H]`` and
the count ``c`` of keys below ``L``, with ``c < k <= c + #{L <= u <= H}``; start from the global
``[min u, max u]`` and ``c = 0``. Each round:

1. split ``[L, H]`` into at most ``B`` bins: ``B/2`` edges evenly spaced in key (the range shrinks
   at least ``B/2``-fold a round, so at most ``ceil(64 / log2(B/2))`` rounds, 8 for ``B = 1024``)
   merged with ``B/2`` evenly spaced in value (data that are spread evenly in value split
   ``B/2``-fold by count, so 2 or 3 rounds in practice);
2. **SUM** of the bins' counts (int64, one per bin): the bin ``j`` holding rank ``k`` is known;
3. **MAX** of ``(~min u, max u)`` over the keys in bin ``j`` (uint64, 2): the interval snaps to the
   data, ``[L, H] <- [min, max]``, ``c <- c + (counts before j)``. If ``L = H`` the value is
   isolated, ties included: ``s_(k) = u^{-1}(L)``, exactly. When bin ``j`` holds few keys
   (``W`` times its count at most ``SELECTION_GATHER``), the MAX gathers them instead: each worker
   writes its keys of the bin into its own slot of zeros (every key is above 0), and the rank's
   key is read off their sorted concatenation, which ends the rank's selection in that round
   (docs/distributed.md gives how often, at 10^6 rows).

A rank whose bin is already known (a histogram of a window around the previous call's value,
summed in the call's first reduction: :mod:`._hint`) starts at step 3 (:func:`snap_or_gather`),
then goes on from the state it leaves (``select_ranks(states=...)``).

**Weighted rows** (frequency weights ``w > 0``, :mod:`quantile_surrogate.quantiles._weighted`): the
same rounds with the SUM carrying each bin's weight (float64) instead of its count, until the bin
that first brings the cumulative weight to the sought mass holds one key: the smallest value ``v``
with ``sum_{s <= v} w >= m``. The sums are in another order than one machine's cumulative sum;
the weighted estimators' relative slack (``1e-9``) on ``m`` absorbs that rounding.

Every decision uses reduced (identical) numbers only, so every worker makes the same calls in the
same order, an empty one included, as a collective requires.
"""

from __future__ import annotations

import sys
from typing import Protocol

import numpy as np

__all__ = ["Communicator", "XGBoostCommunicator", "xgboost_communicator", "float_keys", "key_values",
           "rank_bin", "refine_ranks", "snap_or_gather", "select_ranks", "gather_window",
           "select_masses", "gather_weighted_window", "in_lightgbm_network", "SELECTION_BINS", "SELECTION_GATHER",
           "NEVER_GATHER"]

#: Bins of one round of :func:`select_ranks` (the SUM's length per rank sought).
SELECTION_BINS = 1024
#: :func:`select_ranks` gathers the keys of the bin holding a rank when they fill at most this many
#: entries (``W`` slots of the bin's global count; 32 KiB of uint64), which ends that rank's selection.
SELECTION_GATHER = 4096
#: ``gather=`` of :func:`snap_or_gather` for masses: a bin's keys alone do not place a mass in it (their weights
#: would be needed), so the weighted selection only snaps.
NEVER_GATHER = -1

_SIGN = np.uint64(1 << 63)
_TOP = (1 << 64) - 1


class Communicator(Protocol):
    """What the distributed objective needs of a collective: its place in it and an allreduce."""

    rank: int
    world_size: int

    def allreduce(self, values: np.ndarray, op: str) -> np.ndarray:
        """The elementwise ``op`` ("sum" or "max") of every worker's ``values`` (same shape and dtype)."""


class XGBoostCommunicator:
    """:class:`Communicator` over ``xgboost.collective`` (inside ``xgboost.dask.train`` or a ``CommunicatorContext``)."""

    def __init__(self, collective):
        self._collective = collective
        self.rank = collective.get_rank()
        self.world_size = collective.get_world_size()

    def allreduce(self, values: np.ndarray, op: str) -> np.ndarray:
        ops = {"sum": self._collective.Op.SUM, "max": self._collective.Op.MAX}
        return self._collective.allreduce(np.ascontiguousarray(values), ops[op])


def xgboost_communicator() -> XGBoostCommunicator | None:
    """XGBoost's collective if it is initialised with more than one worker; None otherwise (or not loaded)."""
    if "xgboost" not in sys.modules:
        return None
    from xgboost import collective  # already loaded: no import cost, no import of XGBoost by this package

    if not collective.is_distributed() or collective.get_world_size() <= 1:
        return None
    return XGBoostCommunicator(collective)


def in_lightgbm_network(depth: int = 12) -> bool:
    """Whether the caller runs inside ``Booster.update`` of a LightGBM booster set up for several machines.

    LightGBM calls a custom objective from ``Booster.update`` (directly, or through the
    scikit-learn wrapper's ``_ObjectiveFunctionWrapper``); ``lightgbm.dask`` and ``machines=`` set
    the booster's network (its private ``_network`` flag, set by ``Booster.set_network``). The
    check walks at most ``depth`` frames up the stack and reads nothing unless LightGBM is loaded.
    """
    lightgbm = sys.modules.get("lightgbm")
    booster_type = getattr(lightgbm, "Booster", None)
    if booster_type is None:
        return False
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code.co_name == "update":
            owner = frame.f_locals.get("self")
            if isinstance(owner, booster_type):
                return bool(getattr(owner, "_network", False))
        frame = frame.f_back
    return False


def float_keys(values, out: np.ndarray | None = None, scratch: np.ndarray | None = None) -> np.ndarray:
    """uint64 keys of finite float64 values, in the values' order (``-0.0`` and ``0.0`` share a key).

    A negative value's key is its bits inverted, any other's its bits with the sign bit set. With
    ``out`` and ``scratch`` (uint64 arrays of the values' size) the same keys are written into ``out``
    without fresh memory: ``bits XOR flip``, where ``flip`` is all ones for a negative and the sign bit
    otherwise.
    """
    if out is None or scratch is None:
        bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
        return np.where(bits >> np.uint64(63) == 1, ~bits, bits | _SIGN)
    np.add(values, 0.0, out=out.view(np.float64))  # -0.0 + 0.0 is 0.0
    flip = np.right_shift(out, np.uint64(63), out=scratch)  # 1 where negative, else 0
    np.negative(flip, out=flip)  # uint64: all ones where negative, else 0
    np.bitwise_or(flip, _SIGN, out=flip)
    return np.bitwise_xor(out, flip, out=out)


def key_values(keys) -> np.ndarray:
    """The float64 values of :func:`float_keys`' keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    bits = np.where(keys >> np.uint64(63) == 1, keys & ~_SIGN, ~keys)
    return bits.view(np.float64)


def _edges(low: int, high: int, bins: int) -> list[int]:
    """Ascending key edges ``low = e_0 < ... < e_m = high + 1`` (``m <= bins``): half even in key, half in value."""
    half = max(bins // 2, 1)
    width = high - low + 1
    edges = {low + (width * i) // half for i in range(half + 1)}
    low_value, high_value = key_values([low, high])
    step = high_value / half - low_value / half  # no overflow for values of opposite signs near the extremes
    with np.errstate(over="ignore"):  # edges past the largest float are infinite, above high, and dropped
        inner = float_keys(low_value + step * np.arange(1, half)).tolist()
    edges.update(edge for edge in inner if low < edge <= high)
    return sorted(edges)


def _bin_bounds(keys: np.ndarray, edges: list[int]) -> np.ndarray:
    """Positions in the ascending ``keys`` of the bins ``[e_i, e_{i+1})``: bin ``i`` is ``keys[b_i:b_{i+1}]``."""
    below = np.searchsorted(keys, np.array(edges[:-1], dtype=np.uint64), side="left")
    last = np.searchsorted(keys, np.uint64(edges[-1] - 1), side="right")
    return np.append(below, last)


def _bin_counts(keys: np.ndarray, edges: list[int]) -> np.ndarray:
    """Local counts of keys in ``[e_i, e_{i+1})`` (the last edge is ``high + 1``, possibly ``2^64``)."""
    return np.diff(_bin_bounds(keys, edges)).astype(np.int64)


def rank_bin(counts: np.ndarray, below, rank, side: str = "left"):
    """``(j, below_j)``: the first bin whose cumulative count (from ``below``, the count under the bins) reaches
    the 1-based ``rank``, and the count under that bin; the refinement step of :func:`select_ranks`.

    Counts may be weights (float64) and ``rank`` a mass (:func:`select_masses`): a mass that the rounded
    sums never reach takes the last bin that holds any. ``side="right"``: the first bin that exceeds it.
    """
    through = below + np.cumsum(counts)
    j = int(np.searchsorted(through, rank, side=side))
    if j >= counts.size:
        j = int(np.flatnonzero(counts)[-1])
    return j, (through[j] - counts[j]).item()


def refine_ranks(ranks, span: tuple[int, int], bins: int, one_round, states=None) -> list[int]:
    """The interval loop of the module's algorithm, shared by the workers' and the Dask client's selection.

    Each rank keeps ``[L, H, count below L]``, from ``span`` (or from ``states``, one such triple per
    rank); while some ``L < H``, the unfinished ranks' bin edges (:func:`_edges`) go to
    ``one_round(edges, belows, ranks)``, which returns for each the new ``(L, H, below)``: the chosen
    bin's (:func:`rank_bin`) smallest and largest key and the count under it. Returns each rank's key.
    """
    state = [(span[0], span[1], 0) for _ in ranks] if states is None else list(states)
    while True:
        active = [i for i, (low, high, _) in enumerate(state) if low < high]
        if not active:
            return [low for low, _, _ in state]
        edges = [_edges(state[i][0], state[i][1], bins) for i in active]
        updated = one_round(edges, [state[i][2] for i in active], [ranks[i] for i in active])
        for i, entry in zip(active, updated):
            state[i] = entry


def snap_or_gather(comm: Communicator, keys: np.ndarray, chosen, gather: int = SELECTION_GATHER) -> list:
    """The MAX half of a round of :func:`select_ranks` and :func:`select_masses`: for each ``(low, high, count,
    below, rank)`` (the key range of the bin holding ``rank``, its global count and the count under it; for
    masses their weights, with ``gather=NEVER_GATHER``), the new ``(L, H, below)``.

    One MAX: 2 entries per bin (its smallest and largest key over every worker, ``L <- min``, ``H <- max``),
    or, when ``W count <= gather``, ``W count`` entries in which worker ``r`` writes its keys of the bin
    from ``r count`` on (zeros elsewhere; every key is above 0, so the MAX is the concatenation): the
    rank's key is read off their sorted concatenation (``L = H``), which ends its selection.
    """
    sections = []
    for low, high, count, _, _ in chosen:
        start = int(np.searchsorted(keys, np.uint64(low), side="left"))
        stop = int(np.searchsorted(keys, np.uint64(high), side="right"))
        if comm.world_size * count <= gather:  # the bin's keys, each worker in its own slot
            section = np.zeros(comm.world_size * count, dtype=np.uint64)
            section[comm.rank * count:comm.rank * count + stop - start] = keys[start:stop]
        else:
            section = np.zeros(2, dtype=np.uint64)
            if stop > start:
                section[:] = (~keys[start], keys[stop - 1])
        sections.append(section)
    reduced = np.split(comm.allreduce(np.concatenate(sections), "max"),
                       np.cumsum([section.size for section in sections])[:-1])
    updated = []
    for (_, _, count, under, rank), section in zip(chosen, reduced):
        if comm.world_size * count <= gather:  # the padding zeros sort first; the bin's keys are the last `count`
            key = int(np.sort(section)[section.size - count + rank - under - 1])
            updated.append((key, key, under))
        else:
            updated.append((_TOP - int(section[0]), int(section[1]), under))
    return updated


def select_ranks(comm: Communicator, keys: np.ndarray, ranks, span: tuple[int, int],
                 bins: int = SELECTION_BINS, gather: int = SELECTION_GATHER, states=None) -> list[int]:
    """The keys of the global order statistics of the given 1-based ``ranks`` (the module's algorithm).

    ``keys`` are this worker's keys, ascending; ``span`` is the global ``(min, max)`` key (the objective's
    first reduction finds it); each rank lies in ``1..N``. Per round one SUM
    (int64, at most ``bins`` per unfinished rank) and the MAX of :func:`snap_or_gather`. ``states``:
    each rank's ``(L, H, below)`` to start from (:func:`refine_ranks`; a window's bin after
    :func:`snap_or_gather`, :mod:`._hint`), else the span.
    """
    def one_round(edges, belows, targets):
        total = comm.allreduce(np.concatenate([_bin_counts(keys, e) for e in edges]), "sum")
        chosen = []
        for e, below, rank in zip(edges, belows, targets):
            counts, total = total[:len(e) - 1], total[len(e) - 1:]
            j, under = rank_bin(counts, below, rank)
            chosen.append((e[j], e[j + 1] - 1, int(counts[j]), under, rank))
        return snap_or_gather(comm, keys, chosen, gather)

    return refine_ranks(ranks, span, bins, one_round, states)


def select_masses(comm: Communicator, keys: np.ndarray, prefix: np.ndarray, masses, span: tuple[int, int],
                  bins: int = SELECTION_BINS, states=None) -> list[int]:
    """For each of ``masses``, the key of the smallest value whose global cumulative weight reaches it.

    The weighted twin of :func:`select_ranks` (the module's "weighted rows"): ``keys`` ascending,
    ``prefix`` their cumulative weights with 0 first (length ``keys.size + 1``, every weight > 0),
    ``span`` the global key span. Per round one SUM (float64, the bins' weights) and one MAX (the
    chosen bin's extremes), until the bin holds one key. ``states``: as for :func:`select_ranks`.
    """
    def one_round(edges, belows, targets):
        total = comm.allreduce(np.concatenate([np.diff(prefix[_bin_bounds(keys, e)]) for e in edges]), "sum")
        chosen = []
        for e, below, target in zip(edges, belows, targets):
            weights, total = total[:len(e) - 1], total[len(e) - 1:]
            j, under = rank_bin(weights, below, target)
            chosen.append((e[j], e[j + 1] - 1, weights[j], under, target))
        return snap_or_gather(comm, keys, chosen, NEVER_GATHER)

    return refine_ranks(list(masses), span, bins, one_round, states)


def gather_weighted_window(comm: Communicator, values: np.ndarray, weights: np.ndarray, low: float, high: float):
    """``(window, window_weights, offset, (start, stop), below)``: every worker's values in ``[low, high]`` and their
    weights, in worker order (not sorted), this worker's offset into them, its own slice of ``values``, and the
    global weight below ``low``.

    ``values`` ascending with ``weights`` aligned. One SUM of ``2 W`` float64 (each worker's count in
    the range and weight below it, each in its own slot, so every worker adds them in the same order),
    then one SUM of twice the window's length: values and weights written at the worker's offset into zeros.
    """
    start = int(np.searchsorted(values, low, side="left"))
    stop = int(np.searchsorted(values, high, side="right"))
    counts = np.zeros(2 * comm.world_size)
    counts[comm.rank], counts[comm.world_size + comm.rank] = stop - start, weights[:start].sum()
    counts = comm.allreduce(counts, "sum")
    sizes, below = counts[:comm.world_size].astype(np.int64), float(counts[comm.world_size:].sum())
    offset, length = int(sizes[:comm.rank].sum()), int(sizes.sum())
    buffer = np.zeros(2 * length)
    buffer[offset:offset + stop - start] = values[start:stop]
    buffer[length + offset:length + offset + stop - start] = weights[start:stop]
    buffer = comm.allreduce(buffer, "sum")
    return buffer[:length], buffer[length:], offset, (start, stop), below


def gather_window(comm: Communicator, values: np.ndarray, low: float, high: float,
                  sizes: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """``(window, below)``: every worker's values in ``[low, high]``, ascending, and the global count below ``low``.

    ``values`` are this worker's, ascending. One SUM of ``2 W`` int64 (each worker's count in the
    range and below it; skipped when ``sizes``, every worker's count, is given for the whole
    range), then one SUM of the window's length in float64: each worker writes its values at its
    offset into zeros, so the sum is the concatenation, exactly (``x + 0 = x``).
    """
    start = int(np.searchsorted(values, low, side="left"))
    stop = int(np.searchsorted(values, high, side="right"))
    if sizes is None:
        counts = np.zeros(2 * comm.world_size, dtype=np.int64)
        counts[comm.rank], counts[comm.world_size + comm.rank] = stop - start, start
        counts = comm.allreduce(counts, "sum")
        sizes, below = counts[:comm.world_size], int(counts[comm.world_size:].sum())
    else:
        below = 0
    offset = int(np.sum(sizes[:comm.rank]))
    buffer = np.zeros(int(np.sum(sizes)), dtype=np.float64)
    buffer[offset:offset + stop - start] = values[start:stop]
    window = comm.allreduce(buffer, "sum")
    window.sort()
    return window, below
