r"""Differentiable quantile estimators (Mackey, Luo & Eban 2018, section 4).

Every estimator takes a 1-D floating point tensor of scores ``s_1..s_N`` and a level
``c`` and returns a 0-d tensor of the same dtype that autograd differentiates with
respect to the scores. All of them are L-estimators: a weighted mean of the order
statistics ``s_(1) <= ... <= s_(N)`` whose weights depend on ranks only, so the
gradient with respect to ``s_(i)`` is its weight.

==========================  ===============================================  ====================
name                        estimate                                         paper
==========================  ===============================================  ====================
``point``                   ``s_(k)``, ``k = max(1, floor(c N))``            q1, section 4
``kernel`` / ``gaussian``   ``sum_i w_i s_(i)``, ``w_i ~ phi_h(i*/N - c)``   eq. (13)
``epanechnikov``            same, compact kernel ``3/4 (1 - u^2)_+``         eq. (13)
``lower_mean``              ``mean(s_(1..k))``                               qm, eq. (14)
``interval``                ``mean(s_(i))`` for ``i/N`` in ``(lo, hi]``      qI, eq. (16)
``harrell_davis``           Beta-weighted order statistics                   Harrell & Davis 1982
==========================  ===============================================  ====================

The names are the keys of :data:`QUANTILE_ESTIMATORS`, which ``quantile=`` of the losses and
estimators accepts; :func:`kernel_weights` shows the kernel estimator's weights.

Precision: every estimator computes its ranks, counts and weights in at least float32 and
returns the scores' dtype, so float16 and bfloat16 scores (autocast) give the float32
estimate rounded once. On the CPU the selection runs in NumPy; under ``torch.compile`` (and
on other devices) the point and kernel estimators take a torch path with no graph break
(:mod:`quantile_surrogate._selection`).

Conventions (docs/paper_notes.md): ``q(S, c)`` is the quantile from below, so a
constraint "rate on A >= c" uses the threshold ``q(f(A), 1 - c)``; the losses in
:mod:`quantile_surrogate.losses` do that conversion, callers of this module pass levels.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import torch
from scipy.special import betainc

from ._selection import KERNELS as _KERNELS
from ._selection import (
    SELECTION_ESTIMATORS,
    compute_dtype,
    floor_rank,
    normalised_weights,
    selection_estimates,
    tied_ranks,
    torch_selection_estimates,
)
from ._validation import check_bandwidth, check_level, check_option, check_scores, check_weight_tensor
from ._weighted import weighted_estimates

# resolve_quantile, quantile_estimates, floor_rank and tied_ranks stay importable from here for the
# losses, the training loop and the boosting objective, but they are plumbing, not the public surface.
__all__ = [
    "point_quantile",
    "kernel_quantile",
    "lower_mean_quantile",
    "interval_quantile",
    "harrell_davis_quantile",
    "kernel_weights",
    "KERNELS",
    "QUANTILE_ESTIMATORS",
]

#: Kernels accepted by ``kernel=`` of :func:`kernel_quantile`: name -> unnormalised log density
#: :math:`\log\phi(u)` of :math:`u = (i^*/N - c) / h`: ``"gaussian"`` :math:`-u^2/2`,
#: ``"epanechnikov"`` :math:`\log(1 - u^2)` on :math:`|u| < 1` and :math:`-\infty` outside.
#: The constants cancel when the weights are normalised.
KERNELS = _KERNELS


def point_quantile(scores: torch.Tensor, level: float, *, weight: torch.Tensor | None = None,
        validate_args: bool = True) -> torch.Tensor:
    r"""Point estimate :math:`\hat q_1(S, c) = s_{(k)}`, the k-th smallest score (section 4).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores ``s_1..s_N``: finite, non-empty.
    level : float in [0, 1]
        The quantile level ``c`` (a constraint "rate on A >= r" uses ``c = 1 - r``).
    weight : Tensor of shape (N,), floating point, optional
        Frequency weights ``w_i >= 0``, not all zero (see Notes).
    validate_args : bool, default=True
        Check the arguments; ``False`` skips the checks and their device sync.

    Returns
    -------
    Tensor of shape ()
        The estimate, in the dtype of ``scores``. Its gradient is one-hot: it flows to one
        selected score (with ties, on the CPU, the first row that holds the value).

    Raises
    ------
    TypeError
        If ``scores`` or ``weight`` is not a floating point tensor, or ``level`` not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if ``level`` is outside [0, 1];
        if ``weight`` has the wrong shape, a negative value or a zero sum.

    See Also
    --------
    kernel_quantile : A smoothed estimate with a lower gradient variance.
    lower_mean_quantile : A lower bound that makes the loss convex for a linear model.

    Notes
    -----
    The paper's point estimator (section 4; the loss it gives is eq. (11)):

    .. math::
        \hat q_1(S, c) = s_{(k)}, \qquad k = \max\big(1, \lfloor cN \rfloor\big),

    the largest ``k`` with ``k / N <= c``, clamped to ``k >= 1`` (when ``c < 1/N`` the estimate
    is the minimum). ``cN`` is rounded to 6 decimals before the floor, so that float noise
    (``0.29 * 100 = 28.999...``) cannot move ``k``. Computed by selection (``np.partition``,
    O(N)) in eager CPU mode, by a sort under ``torch.compile`` and on other devices.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate._weighted`): ``s_(j)`` for the first ``j`` whose cumulative
    weight reaches ``t = min(max(floor(c W), 1), W)``. With integer weights it equals the
    unweighted estimate with row ``j`` repeated ``w_j`` times; weight 0 drops a row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import point_quantile
    >>> point_quantile(torch.tensor([3.0, 1.0, 2.0, 4.0]), 0.5)  # k = floor(0.5 * 4) = 2
    tensor(2.)
    >>> point_quantile(torch.tensor([3.0, 1.0, 2.0, 4.0]), 0.5, weight=torch.tensor([1.0, 3.0, 0.0, 1.0]))
    tensor(1.)
    """
    if validate_args:
        check_scores(scores)
        level = check_level(level)
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates("point", scores, weight, (level,), 0.0).reshape(())
    return selection_estimates("point", scores, (level,), 0.0).reshape(())


def lower_mean_quantile(scores: torch.Tensor, level: float, *, weight: torch.Tensor | None = None,
        validate_args: bool = True) -> torch.Tensor:
    r"""Lower-bound estimate :math:`\hat q_m(S, c)`: the mean of the ``k`` smallest scores (eq. (14)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores ``s_1..s_N``: finite, non-empty.
    level : float in [0, 1]
        The quantile level ``c``.
    weight : Tensor of shape (N,), floating point, optional
        Frequency weights ``w_i >= 0``, not all zero (see Notes).
    validate_args : bool, default=True
        Check the arguments; ``False`` skips the checks and their device sync.

    Returns
    -------
    Tensor of shape ()
        The estimate, in the dtype of ``scores``; differentiable with respect to ``scores``.

    Raises
    ------
    TypeError
        If ``scores`` or ``weight`` is not a floating point tensor, or a level not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if a level is outside [0, 1];
        if ``weight`` has the wrong shape, a negative value or a zero sum.

    See Also
    --------
    point_quantile : The estimate it bounds from below.
    interval_quantile : The mean over an interval of ranks instead of the lowest ones.

    Notes
    -----
    Eq. (14) of the paper (``\label{eq:convex-estimator}``), with ``k`` as in
    :func:`point_quantile`:

    .. math::
        \hat q_m(S, c) = \frac{1}{k} \sum_{i=1}^{k} s_{(i)}, \qquad
        k = \max\big(1, \lfloor cN \rfloor\big).

    A mean is at most the maximum, so :math:`\hat q_m \le \hat q_1`, and since the surrogate
    ``l`` is non-decreasing the loss with :math:`\hat q_m` bounds the loss with
    :math:`\hat q_1` from above (eq. (15)). For a linear model :math:`\hat q_m` is a concave
    function of the weights (the sum of the ``k`` smallest of affine functions is their
    pointwise minimum over subsets), so ``l(f(x_i) - q_m)`` is convex: the precision losses
    become convex upper bounds (``tests/test_convex_bound.py``). The paper calls
    :math:`\hat q_m` itself "convex" in one sentence; concave is what the argument needs.
    With ties the ``k`` smallest order statistics are averaged, the paper's "mean of the
    scores up to the point estimate" counted by rank.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate._weighted`): the weighted mean of the lowest mass
    ``t = min(max(floor(c W), 1), W)`` of the scores. With integer weights it equals the
    unweighted estimate with row ``j`` repeated ``w_j`` times; weight 0 drops a row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import lower_mean_quantile
    >>> lower_mean_quantile(torch.tensor([3.0, 1.0, 2.0, 4.0]), 0.5)  # k = 2: (1 + 2) / 2
    tensor(1.5000)
    """
    if validate_args:
        check_scores(scores)
        level = check_level(level)
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates("lower_mean", scores, weight, (level,), 0.0).reshape(())
    k = floor_rank(scores.numel(), level)
    lowest = torch.topk(scores.to(compute_dtype(scores.dtype)), k, largest=False, sorted=False).values
    return lowest.mean().to(scores.dtype)


def interval_quantile(scores: torch.Tensor, low: float, high: float, *, weight: torch.Tensor | None = None,
        validate_args: bool = True) -> torch.Tensor:
    r"""Interval estimate :math:`\hat q_I`: the mean of the order statistics between two fractions (eq. (16)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores ``s_1..s_N``: finite, non-empty.
    low, high : float in [0, 1]
        The fractions ``k1 < k2`` of the sorted scores that bound the interval of ranks.
    weight : Tensor of shape (N,), floating point, optional
        Frequency weights ``w_i >= 0``, not all zero (see Notes).
    validate_args : bool, default=True
        Check the arguments; ``False`` skips the checks and their device sync.

    Returns
    -------
    Tensor of shape ()
        The estimate, in the dtype of ``scores``; differentiable with respect to ``scores``.

    Raises
    ------
    TypeError
        If ``scores`` or ``weight`` is not a floating point tensor, or a level not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if ``low`` or ``high`` is outside [0, 1]
        or ``low >= high``;
        if ``weight`` has the wrong shape, a negative value or a zero sum.

    See Also
    --------
    lower_mean_quantile : The interval ``(0, c]``.
    QUANTILE_ESTIMATORS : ``"interval"`` there is this estimate on ``[c - h, c + h]``.

    Notes
    -----
    Eq. (16) of the paper (``\label{eq:interval-estimator}``), as computed:

    .. math::
        \hat q_I(S) = \frac{1}{b - a} \sum_{i = a + 1}^{b} s_{(i)}, \qquad
        a = \lfloor N k_1 \rfloor, \quad b = \lfloor N k_2 \rfloor.

    Departures from the printed formula (docs/paper_notes.md): no absolute value bars (they
    only make sense for non-negative scores), and the sum starts at ``a + 1`` as in the
    proof of Lemma 2, so that it has exactly ``b - a`` terms. When ``b = a`` (a narrow
    interval on a small sample) the single order statistic ``s_(a+1)`` is used; ``a`` is at
    most ``N - 1``.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate._weighted`): the weighted mean of the order statistics over
    the mass ``(floor(W low), floor(W high)]``. With integer weights it equals the unweighted
    estimate with row ``j`` repeated ``w_j`` times; weight 0 drops a row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import interval_quantile
    >>> interval_quantile(torch.tensor([4.0, 1.0, 3.0, 2.0]), 0.25, 0.75)  # a = 1, b = 3: s_(2), s_(3)
    tensor(2.5000)
    """
    if validate_args:
        check_scores(scores)
        low = check_level(low, "low")
        high = check_level(high, "high")
        if not low < high:
            raise ValueError(f"`low` must be smaller than `high`; got low={low}, high={high}.")
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates("interval", scores, weight, (low,), 0.0, interval=(low, high)).reshape(())
    n = scores.numel()
    start = min(math.floor(round(low * n, 6)), n - 1)
    stop = max(math.floor(round(high * n, 6)), start + 1)
    lowest = torch.topk(scores.to(compute_dtype(scores.dtype)), stop, largest=False, sorted=True).values
    return lowest[start:stop].mean().to(scores.dtype)


def kernel_weights(
    sorted_scores: torch.Tensor, level: float, bandwidth: float, kernel: str = "gaussian"
) -> torch.Tensor:
    r"""The kernel estimator's weights on the order statistics, normalised to sum to one (eq. (13)).

    Parameters
    ----------
    sorted_scores : Tensor of shape (N,), floating point
        The scores in ascending order (only their ties matter: they set the ranks ``i*``);
        non-empty and finite.
    level : float in [0, 1]
        The quantile level ``c``.
    bandwidth : float > 0
        The scale ``h`` on the rank scale.
    kernel : {"gaussian", "epanechnikov"}, default="gaussian"
        A name in :data:`KERNELS`.

    Returns
    -------
    Tensor of shape (N,)
        Weights ``w_i >= 0`` with ``sum w_i = 1``, float64 for float64 scores and float32
        otherwise (float16 holds integers exactly only up to 2048).

    Raises
    ------
    TypeError
        If ``sorted_scores`` is not a floating point tensor or ``kernel`` not a string.
    ValueError
        If ``sorted_scores`` is empty, not 1-D, not finite or not ascending, ``level`` is
        outside [0, 1], ``bandwidth`` is not positive or ``kernel`` is unknown.

    See Also
    --------
    kernel_quantile : The estimate ``sum_i w_i s_(i)``.

    Notes
    -----
    .. math::
        w_i = \frac{\phi\big((i^*/N - c)/h\big)}{\sum_j \phi\big((j^*/N - c)/h\big)}, \qquad
        i^* = \max\{j : s_{(j)} = s_{(i)}\},

    computed as a softmax of the log-kernel, ``exp(a_i - max a) / sum_j exp(a_j - max a)``,
    so that a small bandwidth cannot underflow every weight to zero. The printed weights of
    eq. (13) are ``(1/N) phi_h(i*/N - c)``, which do not sum to one (docs/paper_notes.md).
    If a compact kernel has no order statistic inside its window, all the weight goes to
    the point estimate's order statistic ``s_(k)``, ``k = max(1, floor(c N))``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.quantiles import kernel_weights
    >>> w = kernel_weights(torch.tensor([1.0, 2.0, 3.0, 4.0]), 0.5, bandwidth=0.25)
    >>> [round(x, 3) for x in w.tolist()]  # u = (i/4 - 0.5) / 0.25 = -1, 0, 1, 2
    [0.258, 0.426, 0.258, 0.058]
    >>> w = kernel_weights(torch.tensor([1.0, 2.0, 2.0, 4.0]), 0.5, 0.25)  # tied: i* = 3 for both 2.0
    >>> [round(x, 3) for x in w.tolist()]
    [0.31, 0.31, 0.31, 0.069]
    >>> kernel_weights(torch.tensor([1.0, 2.0, 3.0, 4.0]), 0.6, 0.1, "epanechnikov")  # empty window: k = 2
    tensor([0., 1., 0., 0.])
    """
    sorted_scores = check_scores(sorted_scores, "sorted_scores")
    level, bandwidth = check_level(level), check_bandwidth(bandwidth)
    check_option(kernel, _KERNELS, "kernel")
    if sorted_scores.numel() > 1 and not bool((sorted_scores[1:] >= sorted_scores[:-1]).all()):
        raise ValueError("`sorted_scores` must be in ascending order (the ranks i* are positions in the sorted "
                         "scores); pass torch.sort(scores).values.")
    n = sorted_scores.numel()
    ranks = tied_ranks(sorted_scores).to(compute_dtype(sorted_scores.dtype))
    return normalised_weights(ranks, n, (level,), bandwidth, kernel, (floor_rank(n, level) - 1,))[0]


def kernel_quantile(
    scores: torch.Tensor,
    level: float,
    bandwidth: float = 0.05,
    kernel: str = "gaussian",
    *,
    weight: torch.Tensor | None = None,
    validate_args: bool = True,
) -> torch.Tensor:
    r"""Kernel quantile estimate: a kernel-weighted mean of the order statistics (eq. (13)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores ``s_1..s_N``: finite, non-empty.
    level : float in [0, 1]
        The quantile level ``c``.
    bandwidth : float > 0, default=0.05
        The scale ``h`` on the rank scale; larger trades variance for bias. The paper uses
        0.05 to 0.08.
    kernel : {"gaussian", "epanechnikov"}, default="gaussian"
        A name in :data:`KERNELS`. The Epanechnikov kernel gives weights exactly 0 outside
        ``|i*/N - c| < h``.
    weight : Tensor of shape (N,), floating point, optional
        Frequency weights ``w_i >= 0``, not all zero (see Notes).
    validate_args : bool, default=True
        Check the arguments; ``False`` skips the checks and their device sync.

    Returns
    -------
    Tensor of shape ()
        The estimate, in the dtype of ``scores``; its gradient with respect to ``s_(i)`` is
        the weight ``w_i``.

    Raises
    ------
    TypeError
        If ``scores`` or ``weight`` is not a floating point tensor, or ``level`` not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if ``level`` is outside [0, 1],
        ``bandwidth`` not > 0 or ``kernel`` unknown;
        if ``weight`` has the wrong shape, a negative value or a zero sum.

    See Also
    --------
    kernel_weights : The weights ``w_i``.
    point_quantile : The limit of a small bandwidth.
    harrell_davis_quantile : Beta weights, no bandwidth to choose.

    Notes
    -----
    Sheather & Marron (1990); eq. (13) of the paper (``\label{eq:kernel-estimator}``):

    .. math::
        \hat q^h_\phi(S, c) = \sum_{i=1}^N w_i\, s_{(i)}, \qquad
        w_i = \frac{\phi_h(i^*/N - c)}{\sum_j \phi_h(j^*/N - c)}, \qquad
        \phi_h(x) = \phi(x / h) / h,

    with ``i* = max{j : s_(j) = s_(i)}`` (tied scores take the largest rank among them).
    Departures from the printed formula, both corrections in docs/paper_notes.md: the
    Gaussian kernel is the normal density ``exp(-x^2 / 2h^2) / (h sqrt(2 pi))`` (the source
    drops the minus sign), and the weights are normalised to sum to one (the printed
    ``1/N`` weights sum to about 1/2 near c = 0 or 1, shrinking the estimate towards zero).

    Cost. Only the order statistics whose weight matters need sorting: those with
    ``|i*/N - c| <= h`` for the Epanechnikov kernel, and for the Gaussian those whose
    weight is above ``0.6 eps h`` of the peak (``|i*/N - c| <= 6.2 h`` in float32, ``8.9 h``
    in float64, ``eps`` the machine epsilon of the weights' dtype). For CPU tensors of
    at least 1024 scores the window is bracketed by selection and only its rows are
    sorted (:mod:`quantile_surrogate._kernel_window`); a certificate bounds the weight
    left out by ``eps / 2`` of the kept weight, so the result equals the full-sort one to
    within ``eps (max s - min s) / 2``, ties included, and the gradient is exactly 0 (instead
    of below ``eps``) on rows outside the window. Where the certificate fails (heavy ties
    at the level, ``N h`` of order 1) every score is sorted, in NumPy.

    Under ``torch.compile``, which cannot trace NumPy, and on devices other than the CPU,
    the estimate takes a torch path instead, automatically (sort every score; no graph
    break, no host sync); the two paths agree to rounding. Ranks and weights are float32
    for float16 and bfloat16 scores (float64 for float64); the estimate has the scores' dtype.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate._weighted`): ``sum_j w_(j) K((C*_j/W - c)/h) s_(j) / sum_j
    w_(j) K(...)``, ``C*_j`` the cumulative weight through the ties of ``s_(j)``; it sorts
    every row (no window path). With integer weights it equals the unweighted estimate with
    row ``j`` repeated ``w_j`` times; weight 0 drops a row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import kernel_quantile
    >>> scores = torch.tensor([3.0, 1.0, 2.0, 4.0], requires_grad=True)
    >>> q = kernel_quantile(scores, 0.5, bandwidth=0.25)
    >>> q.backward()
    >>> round(q.item(), 4), [round(g, 3) for g in scores.grad.tolist()]  # the weights, in row order
    (2.1153, [0.258, 0.258, 0.426, 0.058])

    With a tiny bandwidth the estimate is the order statistic nearest the level:

    >>> kernel_quantile(torch.tensor([3.0, 1.0, 2.0, 4.0]), 0.5, bandwidth=1e-3)
    tensor(2.)
    """
    if validate_args:
        check_scores(scores)
        level = check_level(level)
        bandwidth = check_bandwidth(bandwidth)
        check_option(kernel, KERNELS, "kernel")
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates(kernel, scores, weight, (level,), bandwidth).reshape(())
    return selection_estimates(kernel, scores, (level,), bandwidth).reshape(())


def _kernel_quantile_sort(scores: torch.Tensor, level: float, bandwidth: float, kernel: str) -> torch.Tensor:
    """Reference path of :func:`kernel_quantile`: sort every score in torch, weight every order statistic."""
    return torch_selection_estimates(kernel, scores, (level,), bandwidth).reshape(())


def harrell_davis_weights(n: int, level: float, dtype=torch.float64, device=None) -> torch.Tensor:
    """``W_i = I_{i/n}(a, b) - I_{(i-1)/n}(a, b)``, ``a = (n+1) c``, ``b = (n+1)(1-c)``."""
    if n == 1 or level <= 0.0 or level >= 1.0:
        weights = np.zeros(n)
        weights[0 if level <= 0.5 else n - 1] = 1.0
    else:
        a, b = (n + 1) * level, (n + 1) * (1 - level)
        cdf = betainc(a, b, np.arange(n + 1) / n)
        weights = np.diff(cdf)
        weights /= weights.sum()
    return torch.as_tensor(weights, dtype=dtype, device=device)


def harrell_davis_quantile(scores: torch.Tensor, level: float, *, weight: torch.Tensor | None = None,
        validate_args: bool = True) -> torch.Tensor:
    r"""Harrell-Davis estimate: order statistics weighted by a Beta distribution, no bandwidth to tune.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        The scores ``s_1..s_N``: finite, non-empty.
    level : float in [0, 1]
        The quantile level ``c``.
    weight : Tensor of shape (N,), floating point, optional
        Frequency weights ``w_i >= 0``, not all zero (see Notes).
    validate_args : bool, default=True
        Check the arguments; ``False`` skips the checks and their device sync.

    Returns
    -------
    Tensor of shape ()
        The estimate, in the dtype of ``scores``; differentiable with respect to ``scores``.

    Raises
    ------
    TypeError
        If ``scores`` or ``weight`` is not a floating point tensor, or ``level`` not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if ``level`` is outside [0, 1];
        if ``weight`` has the wrong shape, a negative value or a zero sum.

    See Also
    --------
    kernel_quantile : The paper's kernel estimate, with a bandwidth.

    Notes
    -----
    Harrell & Davis (1982), one of the L-estimators the paper cites in section 4.1:

    .. math::
        \hat q_{HD}(S, c) = \sum_i W_i s_{(i)}, \quad W_i = I_{i/N}(a, b) - I_{(i-1)/N}(a, b),
        \quad a = (N+1)c,\ b = (N+1)(1-c),

    where ``I_x(a, b)`` is the regularised incomplete Beta function: ``W_i`` is the
    probability that a Beta(a, b) variable falls in ``((i-1)/N, i/N]``. At ``c = 0`` and
    ``c = 1`` (where Beta(a, b) is degenerate) it returns the minimum and the maximum.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate._weighted`): ``W_j = I_{C_j/W}(a, b) - I_{C_{j-1}/W}(a, b)``
    with ``a = (W+1)c``, ``b = (W+1)(1-c)``. With integer weights it equals the unweighted
    estimate with row ``j`` repeated ``w_j`` times; weight 0 drops a row.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import harrell_davis_quantile
    >>> harrell_davis_quantile(torch.tensor([1.0, 2.0, 3.0]), 0.5)  # symmetric weights
    tensor(2.)
    >>> round(harrell_davis_quantile(torch.tensor([1.0, 2.0, 3.0, 10.0]), 0.5).item(), 4)  # every score counts
    3.2595
    """
    if validate_args:
        check_scores(scores)
        level = check_level(level)
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates("harrell_davis", scores, weight, (level,), 0.0).reshape(())
    dtype = compute_dtype(scores.dtype)
    sorted_scores = torch.sort(scores.to(dtype)).values
    weights = harrell_davis_weights(scores.numel(), level, dtype, scores.device)
    return (weights * sorted_scores).sum().to(scores.dtype)


def _interval_around(scores, level, bandwidth, *, weight=None, validate_args=True):
    # As a loss's estimator the interval is centred on the level, with half-width h.
    return interval_quantile(
        scores, max(level - bandwidth, 0.0), min(level + bandwidth, 1.0), weight=weight, validate_args=validate_args
    )


#: Quantile estimators accepted by ``quantile=`` (the losses, the estimators and
#: :func:`~quantile_surrogate.training.train`), name -> ``f(scores, level, bandwidth, *, weight=None,
#: validate_args=True)``: ``"point"``
#: (:func:`point_quantile`), ``"kernel"`` and ``"gaussian"`` (:func:`kernel_quantile`, Gaussian),
#: ``"epanechnikov"``, ``"lower_mean"`` (:func:`lower_mean_quantile`), ``"interval"``
#: (:func:`interval_quantile` on ``[level - bandwidth, level + bandwidth]``, clipped to [0, 1]) and
#: ``"harrell_davis"``. ``point``, ``lower_mean`` and ``harrell_davis`` ignore the bandwidth.
QUANTILE_ESTIMATORS: dict[str, Callable] = {
    "point": lambda s, c, h, **kw: point_quantile(s, c, **kw),
    "kernel": lambda s, c, h, **kw: kernel_quantile(s, c, h, "gaussian", **kw),
    "gaussian": lambda s, c, h, **kw: kernel_quantile(s, c, h, "gaussian", **kw),
    "epanechnikov": lambda s, c, h, **kw: kernel_quantile(s, c, h, "epanechnikov", **kw),
    "lower_mean": lambda s, c, h, **kw: lower_mean_quantile(s, c, **kw),
    "interval": _interval_around,
    "harrell_davis": lambda s, c, h, **kw: harrell_davis_quantile(s, c, **kw),
}


def resolve_quantile(quantile, bandwidth: float = 0.05) -> Callable[[torch.Tensor, float], torch.Tensor]:
    """Turn ``quantile=`` (a name in :data:`QUANTILE_ESTIMATORS` or a callable) into ``f(scores, level)``.

    Internal (not in ``__all__``): the training loop and the boosting objective resolve
    ``quantile=`` once with it, so that a bad name fails before training starts.

    Parameters
    ----------
    quantile : str or callable
        A name in :data:`QUANTILE_ESTIMATORS`, or ``quantile(scores, level) -> 0-d tensor``
        (returned unchanged).
    bandwidth : float, default=0.05
        Passed to the named estimator (not checked here).

    Returns
    -------
    callable
        ``f(scores, level)`` that calls the estimator without argument checks.

    Raises
    ------
    TypeError
        If ``quantile`` is neither a string nor callable.
    ValueError
        If ``quantile`` is not a name in :data:`QUANTILE_ESTIMATORS`.
    """
    if callable(quantile):
        return quantile
    if not isinstance(quantile, str):
        raise TypeError(f"`quantile` must be an estimator name or a callable; got {type(quantile).__name__}.")
    check_option(quantile, QUANTILE_ESTIMATORS, "quantile")
    estimator = QUANTILE_ESTIMATORS[quantile]

    def estimate(scores: torch.Tensor, level: float) -> torch.Tensor:
        return estimator(scores, level, bandwidth, validate_args=False)

    estimate.__name__ = f"{quantile}_quantile"
    return estimate


def quantile_estimates(quantile, scores: torch.Tensor, levels: Sequence[float], *, bandwidth: float = 0.05,
                       subset: torch.Tensor | None = None, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``q(scores[subset], c)`` for each ``c`` in ``levels``: the losses' thresholds (internal, nothing validated).

    ``quantile`` is a name in :data:`QUANTILE_ESTIMATORS` or a callable (see
    :func:`resolve_quantile`). The point and kernel estimators share one selection (one
    partition or one sort) across the levels and, on the CPU, never index the subset in
    torch (:mod:`quantile_surrogate._selection`); the others run on ``scores[subset]`` once
    per level. ``weight`` gives the weighted estimates of :mod:`quantile_surrogate._weighted`
    (one sort shared by the levels).

    Parameters
    ----------
    quantile : str or callable
    scores : Tensor of shape (N,), floating point
    levels : sequence of float in [0, 1]
    bandwidth : float, default=0.05
    subset : bool Tensor of shape (N,), optional
        The rows of ``A``; None is every row.
    weight : Tensor of shape (N,), optional
        Frequency weights; a callable ``quantile`` cannot take them.

    Returns
    -------
    Tensor of shape (len(levels),)
        NaN where ``A`` is empty (or holds no weight).

    Raises
    ------
    ValueError
        If ``weight`` is given with a callable ``quantile``.
    """
    if weight is not None:
        if not isinstance(quantile, str):
            raise ValueError("Row weights need a named quantile estimator; a callable `quantile` cannot take "
                             "`weight=`. Pass quantile='kernel' (or another name) or drop the weights.")
        return weighted_estimates(quantile, scores, weight, levels, bandwidth, subset)
    if isinstance(quantile, str) and quantile in SELECTION_ESTIMATORS:
        return selection_estimates(quantile, scores, levels, bandwidth, subset)
    reference = scores if subset is None else scores[subset]
    if reference.numel() == 0:
        return scores.new_full((len(levels),), math.nan)
    estimate = resolve_quantile(quantile, bandwidth)
    return torch.stack([estimate(reference, level) for level in levels])
