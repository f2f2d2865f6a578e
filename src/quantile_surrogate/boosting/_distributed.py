r"""The boosting objective on rows split across workers (``xgboost.dask``): the exact global threshold.

Each worker holds some rows; the threshold must be the quantile of ``A``'s scores over *all*
workers, ``theta = q(cat_r F_{A_r}, 1 - c)``, or each worker trains towards its own operating
point. :func:`distributed_gradient_hessian` returns, row for row, what
:func:`~quantile_surrogate.boosting.objective_gradient_hessian` returns on the concatenated rows:

.. math::
    g_j = \pm l'(z_j) 1[j \in P] + G\, w_j, \qquad
    h_j = d_j 1[j \in P] + |T w_j|, \qquad
    G = \frac{\partial L}{\partial \theta} = \sum_{r} \sum_{i \in P_r} \frac{\partial l(z_i)}{\partial \theta},
    \quad T = \sum_r \sum_{i \in P_r} l''(z_i),

with ``w_j = d theta / dF_j`` the estimator's weight on row ``j`` of ``A`` (on its own worker),
plus the log-loss term, which is local. Only ``theta``, the local rows' weights ``w_j`` and the
three sums ``G``, ``T``, ``L`` cross workers (:mod:`quantile_surrogate.boosting._collective`):

- **point** (``theta = s_(k)``, ``k = max(1, floor(c N))``): the value of rank ``k`` by exact
  selection; ``w`` is one-hot on the first row of ``A`` holding it, in worker order then row
  order (the row the single-machine estimate picks from the concatenated rows); with a
  :class:`~._hint.SelectionHint` the selection starts from the bin of the previous call's window
  that holds ``k`` (3 reductions a call instead of 4 to 7, the same numbers);
- **kernel** (eq. (13), Gaussian or Epanechnikov): the weights are negligible outside the ranks
  ``|r/N - c| <= U h`` (``U h`` of :func:`~quantile_surrogate.quantiles._kernel_window.window_half_width`,
  8.9 h for the Gaussian at h = 0.05, h for the Epanechnikov), so the values of the two edge ranks
  are selected exactly, the values between them gathered on every worker, and each worker
  computes the tied ranks ``i* = below + #{window <= s}``, the weights and ``theta`` from the
  same numbers (so the same ``theta`` everywhere); its own rows' weights are those of their ranks.
- **lower_mean, interval, harrell_davis**: their coefficients go by position (where ``(j - 1, j]``, or
  ``(C_{j-1}, C_j]``, lies) and vanish outside a range of ranks
  (:func:`~quantile_surrogate.quantiles._weighted.mass_window`); that range is gathered as the kernel's
  window is, tied rows in worker then row order, and each worker computes the coefficients with
  the single machine's ``window_coefficients`` from the weight below it. They take the weighted path
  with weights of 1 when no worker has weights.

**Row weights** ``v_i >= 0`` (the DMatrix's ``weight=``, frequency weights as on one machine): the
loss is ``sum_{i in P} v_i l(z_i)`` and the threshold the weighted estimate of
:mod:`quantile_surrogate.quantiles._weighted` (ranks become cumulative weights ``C_j``, ``N`` the
mass ``W``; rows of weight 0 are no rows). The same steps by weight: the point estimate is the
smallest value whose cumulative weight reaches ``floor(c W)``, the kernel's window the values whose
``C*_j / W`` lies within ``U h`` of ``c``, gathered with their weights. Whether the rows are weighted
is decided over every worker (one worker's weights may all be 1, another's not).
"""

from __future__ import annotations

import numpy as np
import torch

from ..objectives import get_objective
from ..quantiles._kernel_window import sorted_tied_ranks, window_half_width
from ..quantiles._rank_selection import floor_rank, normalised_weights
from ..quantiles._weighted import (MASS_WINDOWED, kernel_coefficients, mass_window, point_mass_target,
                                  window_coefficients)
from ..quantiles.kernels import KERNEL_OF_ESTIMATOR, KERNELS
from ..losses.surrogates import SURROGATE_SLOPES, SURROGATES
from .._utils.checks import check_sample_weight
from ._collective import (_TOP, NEVER_GATHER, SELECTION_BINS, SELECTION_GATHER, Communicator, float_keys,
                          gather_weighted_window, gather_window, key_values, select_masses, select_ranks,
                          snap_or_gather)
from ._hint import agreed_windows, hint_section, hint_start
from ._workspace import Workspace
from .gradient import (EMPTY_SUBSET_MESSAGE, SURROGATE_CURVATURES, ZERO_WEIGHT_SUFFIX, GradientHessian,
                       _check_scores_labels, logloss_terms)

__all__ = ["DISTRIBUTED_ESTIMATORS", "check_distributed_settings", "distributed_gradient_hessian"]

#: The ``quantile=`` names the distributed objective computes exactly (Harrell-Davis to its Beta's 1e-18 tails).
DISTRIBUTED_ESTIMATORS = ("point", *KERNEL_OF_ESTIMATOR, *MASS_WINDOWED)

DISTRIBUTED_QUANTILE_MESSAGE = (
    "On several XGBoost workers (xgboost.dask) the objective computes the global threshold exactly for "
    "quantile in {names}; got {value!r}."
)
DISTRIBUTED_GROUPS_MESSAGE = (
    "`groups` (one threshold per group) is not supported on several XGBoost workers (xgboost.dask): a group "
    "code per training row cannot follow Dask's partitions. Train on one machine with xgb.train, or drop `groups`."
)
PEER_FAILED_MESSAGE = "Another XGBoost worker failed in the custom objective (see its error); this worker stops too."


def check_distributed_settings(quantile, groups) -> None:
    """``ValueError`` for settings the distributed objective cannot honour (the same on every worker)."""
    if not isinstance(quantile, str) or quantile not in DISTRIBUTED_ESTIMATORS:
        raise ValueError(DISTRIBUTED_QUANTILE_MESSAGE.format(names=list(DISTRIBUTED_ESTIMATORS), value=quantile))
    if groups is not None:
        raise ValueError(DISTRIBUTED_GROUPS_MESSAGE)


def _local_rows(scores, labels, sample_weight, workspace):
    """``(scores, labels, weights or None, error)``: checked local rows, or empty ones and the exception to share.

    Weights that are all 1 are None (the unweighted path); a zero total is allowed here (checked globally).
    Scores of another float dtype (XGBoost's float32 margins) are converted into ``workspace``'s array; labels
    equal to the last call's checked ones are not checked again (:meth:`~._workspace.Workspace.known_labels`).
    """
    try:
        scores = np.asarray(scores)
        if scores.dtype.kind == "f" and scores.dtype != np.float64:
            converted = workspace.array("scores", scores.size)
            np.copyto(converted, scores.reshape(-1))  # the values np.asarray(scores, dtype=np.float64) gives
            scores = converted
        scores, labels = _check_scores_labels(scores, labels, labels_known=workspace)
        weight = None
        if sample_weight is not None and np.size(sample_weight) and not np.all(np.asarray(sample_weight) == 1):
            weight = check_sample_weight(sample_weight, scores.size, zero_total_ok=True)
        return scores, labels, weight, None
    except (ValueError, TypeError, FloatingPointError) as error:  # TrainingDivergedError is a FloatingPointError
        return np.zeros(0), np.zeros(0, dtype=np.int64), None, error


def _first_reduction(comm: Communicator, keys: np.ndarray, mass: float, weighted: bool, error, hint, prefix=None):
    """``(sizes, masses, weighted, span, hinted)`` over every worker, in one SUM of float64.

    A failure count, a count of workers with weights, then in each worker's own slot (the others send 0, so
    the SUM is that entry, exactly): its count of rows of ``A``, its weight, its smallest and largest value of
    ``A``; then, with a :class:`~._hint.SelectionHint`, :func:`~._hint.hint_section` (its windows, and the
    counts, or with ``prefix`` the weights, of its keys in their bins). ``hinted``: per slot ``(edges,
    summed counts)`` where every worker sent the same window, else None (:func:`~._hint.agreed_windows`).
    """
    size, rank = comm.world_size, comm.rank
    windows = [] if hint is None else hint.windows
    edges = [] if hint is None else hint.edges(SELECTION_BINS)
    local = np.zeros(2 + 4 * size)
    local[0], local[1], local[2 + rank], local[2 + size + rank] = error is not None, weighted, keys.size, mass
    if keys.size:
        local[2 + 2 * size + rank], local[2 + 3 * size + rank] = key_values(keys[[0, -1]])
    local = np.concatenate([local, hint_section(windows, edges, keys, SELECTION_BINS, size, rank, prefix)])
    reduced = comm.allreduce(local, "sum")
    if reduced[0]:
        raise error if error is not None else RuntimeError(PEER_FAILED_MESSAGE)
    sizes = reduced[2:2 + size].astype(np.int64)
    full = sizes > 0
    span = (int(float_keys(reduced[2 + 2 * size:2 + 3 * size][full].min())[()]),
            int(float_keys(reduced[2 + 3 * size:2 + 4 * size][full].max())[()])) if full.any() else (_TOP, 0)
    hinted = agreed_windows(reduced[2 + 4 * size:], edges, SELECTION_BINS, size)
    return sizes, reduced[2 + size:2 + 2 * size].copy(), bool(reduced[1]), span, hinted


def _select(comm, keys, targets, span, hint, hinted, slots, prefix=None):
    """The keys of ``targets`` (ranks, :func:`~._collective.select_ranks`; with ``prefix``, the keys' cumulative
    weights, masses: :func:`~._collective.select_masses`), each starting from its slot's window when ``hinted``
    holds it (one MAX for those, :func:`~._collective.snap_or_gather`; masses never gather); the hint then
    learns each slot's new window (``slots``: each target's slot)."""
    states, outcomes, started = [(span[0], span[1], 0)] * len(targets), [None] * len(targets), []
    for i, (target, slot) in enumerate(zip(targets, slots)):
        if hinted and hinted[slot] is not None:
            entry, outside = hint_start(hinted[slot][1], hinted[slot][0], target, span)
            started.append((i, (*entry, target)))
            outcomes[i] = "outside" if outside else "inside"
    if started:
        gather = SELECTION_GATHER if prefix is None else NEVER_GATHER
        for (i, _), state in zip(started, snap_or_gather(comm, keys, [entry for _, entry in started], gather)):
            states[i] = state
            if outcomes[i] == "inside" and state[0] < state[1]:
                outcomes[i] = "large"  # the window's bin still holds several values: more rounds followed
    found = select_ranks(comm, keys, targets, span, states=states) if prefix is None \
        else select_masses(comm, keys, prefix, targets, span, states=states)
    if hint is not None:
        for key, slot, outcome in zip(found, slots, outcomes):
            hint.update(slot, key, span, SELECTION_BINS, outcome)
    return found


def _kernel_threshold(comm, values, keys, sizes, span, level, bandwidth, kernel, hint=None, hinted=None):
    """``(theta, window, weights)`` of the kernel estimate over every worker, or None for an empty compact window.

    The window's edge ranks are the hint's slots 0 and 1 (:mod:`._hint`)."""
    n = int(sizes.sum())
    half = window_half_width(kernel, bandwidth, torch.float64)
    k = floor_rank(n, level)
    lo, hi = min(int(np.floor(n * (level - half))), k), max(int(np.ceil(n * (level + half))), k)
    edge_ranks = [(r, slot) for slot, r in enumerate((lo, hi)) if 1 <= r <= n]
    if edge_ranks:
        ranks, slots = zip(*edge_ranks)
        found = dict(zip(ranks, key_values(_select(comm, keys, ranks, span, hint, hinted, slots))))
        low, high = found.get(lo, -np.inf), found.get(hi, np.inf)
        window, below = gather_window(comm, values, low, high)
    else:
        window, below = gather_window(comm, values, -np.inf, np.inf, sizes)
    ranks = torch.from_numpy((below + sorted_tied_ranks(window)).astype(np.float64))
    if bool(torch.isneginf(KERNELS[kernel]((ranks / n - level) / bandwidth)).all()):
        return None  # a compact kernel with no rank inside: the point estimate (kernel_weights' rule)
    weights = normalised_weights(ranks, n, (level,), bandwidth, kernel, (k - 1 - below,))[0]
    theta = float(torch.dot(weights, torch.from_numpy(window)))
    return theta, window, weights.numpy()


def _row_weights(values, window, weights):
    """The kernel weight of each of this worker's sorted ``values``: its tied rank's in ``window`` (0 outside).

    The values inside are one run, ``values[start:stop]``, each of them in ``window``; sorted keys make
    the search a merge (a fifth of the time of searching the rows in their own order, at 50,000 rows).
    """
    out = np.zeros(values.size)
    start, stop = np.searchsorted(values, window[0], side="left"), np.searchsorted(values, window[-1], side="right")
    out[start:stop] = weights[np.searchsorted(window, values[start:stop], side="right") - 1]
    return out


def _threshold(comm, values, keys, sizes, span, level, quantile, bandwidth, hint=None, hinted=None):
    """``(theta, row_weights or None)``: None means one-hot on the first row holding ``theta`` (the point rule).

    ``hint``, ``hinted``: the worker's :class:`~._hint.SelectionHint` and the first reduction's windows."""
    if quantile != "point":
        kernel = _kernel_threshold(comm, values, keys, sizes, span, level, bandwidth, KERNEL_OF_ESTIMATOR[quantile],
                                   hint, hinted)
        if kernel is not None:
            return kernel[0], kernel[1:]
        hint = hinted = None  # the point rule of an empty compact window: not the window's edges
    k = floor_rank(int(sizes.sum()), level)
    return float(key_values(_select(comm, keys, [k], span, hint, hinted, [0]))[0]), None


def _mass_window(comm, values, weights, keys, prefix, total, span, low_mass, high_mass, hint=None, hinted=None):
    """The rows whose cumulative weight lies in ``(low_mass, high_mass]`` (and the rows tied with its edges), over
    every worker: ``(window, weights, below, local)`` with ``window`` ascending (ties in worker order, then row
    order) and ``weights`` beside it, ``below`` the weight under it, and ``local(c)`` mapping coefficients of
    ``window`` to this worker's ``values`` (0 outside)."""
    inside = [(mass, slot) for slot, mass in enumerate((low_mass, high_mass)) if 0 < mass < total]  # else the end
    found = {}
    if inside:  # the edges are the hint's slots 0 and 1 (a kernel's; hint None for the others)
        masses, slots = zip(*inside)
        found = dict(zip(masses, key_values(_select(comm, keys, masses, span, hint, hinted, slots, prefix))))
    low, high = found.get(low_mass, -np.inf), found.get(high_mass, np.inf)
    window, mass, offset, (start, stop), below = gather_weighted_window(comm, values, weights, low, high)
    order = np.argsort(window, kind="stable")
    position = np.empty_like(order)  # each gathered row's place in the sorted window (order's inverse)
    position[order] = np.arange(order.size)

    def local(coefficients):
        out = np.zeros(values.size)
        out[start:stop] = coefficients[position[offset:offset + stop - start]]
        return out

    return window[order], mass[order], below, local


def _weighted_threshold(comm, values, weights, keys, prefix, total, span, level, quantile, bandwidth, hint=None,
                        hinted=None):
    """``(theta, coefficients or None)`` of the weighted estimate; None: one-hot on the first row holding ``theta``.

    ``values`` ascending (ties in row order), ``weights`` (> 0) aligned, ``prefix`` their cumulative sum (0
    first); ``total`` the global weight ``W``. The coefficients come back for this worker's ``values`` (0
    outside the estimator's window). ``hint``, ``hinted``: as for :func:`_threshold` (kernels and the point).
    """
    if quantile in KERNEL_OF_ESTIMATOR:
        kernel = KERNEL_OF_ESTIMATOR[quantile]
        half = window_half_width(kernel, bandwidth, torch.float64)
        high = total * (level + half)
        window, mass, below, local = _mass_window(comm, values, weights, keys, prefix, total, span,
                                                  total * (level - half), high, hint, hinted)
        cum = below + np.cumsum(mass)
        tied = cum[np.searchsorted(window, window, side="right") - 1]
        if window.size and high >= total:  # _mass_window's own rule for a window without an upper edge
            # The window reaches A's largest score, whose ties have C* = W: exactly W, as on one machine (its
            # cum[-1]), not this order's sum. At a compact kernel's edge ((1 - c) / h = 1) an ulp above W gives
            # K = 0 where one machine's exact 1 gives a tiny K > 0 that the normalisation makes the whole weight.
            tied[window == window[-1]] = total
        coefficients = kernel_coefficients(torch.from_numpy(tied), torch.from_numpy(mass), total, level, bandwidth,
                                           kernel, torch.float64)
        if coefficients is not None:
            return float(torch.dot(coefficients, torch.from_numpy(window))), local(coefficients.numpy())
        hint = hinted = None  # the point rule of an empty compact window: not the window's edges
    elif quantile in MASS_WINDOWED:
        window, mass, below, local = _mass_window(comm, values, weights, keys, prefix, total, span,
                                                  *mass_window(quantile, total, level, bandwidth))
        cum = torch.from_numpy(below + np.cumsum(mass))
        coefficients = window_coefficients(quantile, cum, below, total, level, bandwidth)
        return float(torch.dot(coefficients, torch.from_numpy(window))), local(coefficients.numpy())
    target = point_mass_target(level, total)
    return float(key_values(_select(comm, keys, [target], span, hint, hinted, [0], prefix))[0]), None


def distributed_gradient_hessian(comm: Communicator, scores, labels, *, objective="precision_at_recall",
                                 target=None, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic",
                                 groups=None, logloss_weight=0.0, min_hessian=1e-6,
                                 sample_weight=None, with_loss=True, hint=None,
                                 workspace: Workspace | None = None) -> GradientHessian:
    """:func:`~quantile_surrogate.boosting.objective_gradient_hessian` of this worker's rows, the threshold global.

    The arguments are those of ``objective_gradient_hessian`` plus ``comm``; ``groups`` raises
    ``ValueError``, and so does a ``quantile`` outside :data:`DISTRIBUTED_ESTIMATORS`. A local
    failure (bad labels or weights, non-finite scores) is shared with every worker before anyone
    raises, so no worker waits forever. ``loss`` is the global one; with ``with_loss=False`` it is
    NaN and not computed (a tree needs the gradient alone: the XGBoost objective passes False; the
    surrogate's value is the dearest part of the rows' arithmetic, its ``log1p``), and ``grad`` and
    ``hess`` are the same bits. ``hint``: a :class:`~._hint.SelectionHint` with ``HINT_SLOTS[quantile]``
    slots, this worker's memory of the last call's threshold (fewer reductions a call, the same numbers);
    every worker passes one or none. ``workspace``: a :class:`~._workspace.Workspace` kept between the
    calls, whose arrays hold the per-row arithmetic (the same numbers, without mapping fresh memory each
    call); ``grad`` and ``hess`` are then its arrays, overwritten by the next call (XGBoost copies them).
    None: fresh arrays.
    """
    check_distributed_settings(quantile, groups)
    spec = get_objective(objective)
    target = spec.default_target if target is None else target
    workspace = Workspace() if workspace is None else workspace
    scores, labels, weight, error = _local_rows(scores, labels, sample_weight, workspace)
    positive = np.equal(labels, 1, out=workspace.array("positive", labels.size, bool))
    in_subset = spec.subset_mask(positive)
    if weight is not None:
        in_subset = in_subset & (weight > 0)  # a row of weight 0 is no row of A
    m = int(np.count_nonzero(in_subset))
    subset_scores = np.compress(in_subset, scores, out=workspace.array("subset", m))
    positional = quantile in MASS_WINDOWED  # coefficients by position: tied rows differ, so their order is kept
    if weight is None and quantile == "point":  # the point rule finds its row by value
        subset_scores.sort()  # in place: np.sort's values
        values, order, subset_weight = subset_scores, None, None
    else:  # a kernel's tied rows share their weight (C*_j with weights): any order of ties serves there
        order = np.argsort(subset_scores, kind="stable" if positional else None)
        # argsort's indices are in range; mode="raise" would copy through a fresh buffer
        values = np.take(subset_scores, order, out=workspace.array("values", m), mode="clip")
        subset_weight = None if weight is None else weight[in_subset][order]
    keys = float_keys(values, workspace.array("keys", m, np.uint64), workspace.array("key_scratch", m, np.uint64))
    mass = float(values.size) if weight is None else float(subset_weight.sum())
    # The windows' bins carry weights where any worker has them (decided in this same reduction), so each worker
    # sends its own: their sums where it has weights, its counts where not (a weight of 1 a row).
    prefix = None if weight is None else np.concatenate([[0.0], np.cumsum(subset_weight)])
    sizes, masses, weighted, span, hinted = _first_reduction(comm, keys, mass, weight is not None, error, hint,
                                                             prefix)
    if not sizes.any():
        raise ValueError(EMPTY_SUBSET_MESSAGE.format(subset=spec.subset, objective=spec.name)
                         + (ZERO_WEIGHT_SUFFIX if weighted else ""))
    level = 1.0 - float(target)
    if weighted or positional:  # over every worker: the rows' weights (1 where a worker has none)
        subset_weight = np.ones(values.size) if weight is None else subset_weight
        prefix = np.arange(values.size + 1.0) if weight is None else prefix  # the cumulative sum of those ones
        theta, coefficient = _weighted_threshold(comm, values, subset_weight, keys, prefix, float(masses.sum()),
                                                 span, level, quantile, bandwidth, hint, hinted)
    else:
        theta, kernel = _threshold(comm, values, keys, sizes, span, level, quantile, bandwidth, hint, hinted)
        coefficient = None if kernel is None else _row_weights(values, *kernel)
    holders = np.zeros(comm.world_size)
    rows = np.zeros(0, dtype=np.int64)
    if coefficient is None:  # values are A's scores, sorted
        at = int(np.searchsorted(values, theta))
        holders[comm.rank] = at < values.size and values[at] == theta
        coefficient = np.zeros(0)
    else:  # the sorted values' coefficients, back to A's rows by ``order``
        kept = coefficient != 0
        rows, coefficient = np.flatnonzero(in_subset)[order[kept]], coefficient[kept]
    return _gradient_hessian(comm, scores, positive, spec.penalized[form] == "negatives", theta, (rows, coefficient),
                             holders, in_subset, surrogate, logloss_weight, min_hessian, weight, with_loss, workspace)


def _gradient_hessian(comm, scores, positive, negatives, theta, row_weights, holders, in_subset, surrogate,
                      logloss_weight, min_hessian, weight, with_loss, workspace):
    """The rows' gradient and Hessian, after one SUM of ``3 + W`` float64: ``G``, ``T``, the loss, the holders.

    The surrogate is differentiated in ``z = ±(F - theta)`` alone, by its slope
    (``SURROGATE_SLOPES``: autograd's numbers without the loss or a graph): ``dL/dF_i = ±dL/dz_i`` and
    ``dL/dtheta = ∓sum_i dL/dz_i``. The threshold's terms ``G w_j`` and ``T w_j`` are added on the
    rows ``row_weights = (rows, w)`` whose weight is not 0 only (the point rule's one row is found
    here); ``T`` and ``w`` are never negative, so ``|T w_j| = T w_j``. ``weight``: the rows' weights
    ``v`` (None: 1), which multiply each row's surrogate, its curvature and its log-loss term. Every
    per-row array is ``workspace``'s (``grad`` and ``hess`` come back in two of them).
    """
    n, tensor = scores.size, workspace.tensor
    penalized = np.logical_not(positive, out=workspace.array("penalized", n, bool)) if negatives else positive
    z = torch.from_numpy(np.subtract(*((scores, theta) if negatives else (theta, scores)), out=workspace.array("z", n)))
    counted = tensor("counted", n).copy_(torch.from_numpy(penalized))  # 1.0 where penalised, else 0.0
    row_weight = None if weight is None else torch.from_numpy(weight)
    if row_weight is not None:
        counted.mul_(row_weight)
    loss = float(torch.dot(SURROGATES[surrogate](z), counted)) if with_loss else 0.0
    own = SURROGATE_SLOPES[surrogate](z, counted, out=tensor("grad", n))
    if not negatives:
        own.neg_()  # dL/dF
    slope = -float(own.sum())  # dL/dtheta: z moves against F in both forms
    # theta is finite here, so row_curvature's NaN guard has nothing to do.
    curvature = SURROGATE_CURVATURES[surrogate](z, out=tensor("hess", n), scratch=tensor("scratch", n)).mul_(counted)
    log_terms = logloss_terms(torch.from_numpy(scores), torch.from_numpy(positive), logloss_weight, row_weight) \
        if logloss_weight else None
    log_loss = log_terms[2] if logloss_weight else 0.0
    local = np.concatenate([[slope, float(curvature.sum()), loss + log_loss], holders])
    total = comm.allreduce(local, "sum")
    rows, weight = row_weights
    if total[3:].any():  # the point rule: one-hot on the first row of A holding theta, on the first worker holding it
        first = int(np.flatnonzero(total[3:])[0])
        if first == comm.rank:  # it holds theta in A: the first such row, found in a kept mask
            hit = np.equal(scores, theta, out=workspace.array("hit", scores.size, bool))
            np.logical_and(hit, in_subset, out=hit)
            rows, weight = np.array([hit.argmax()]), np.ones(1)
    grad, hess = own.numpy(), curvature.numpy()
    if logloss_weight:
        grad += log_terms[0].numpy()
        hess += log_terms[1].numpy()
    grad[rows] += total[0] * weight
    hess[rows] += total[1] * weight
    np.maximum(hess, min_hessian, out=hess)
    return GradientHessian(float(total[2]) if with_loss else float("nan"), grad, hess, np.asarray(theta))
