"""Smooth quantile estimators: kernel- or Beta-weighted means of every order statistic near the level.

The kernel estimate of eq. (13) (Gaussian or Epanechnikov kernel, with a bandwidth) and the
Harrell-Davis estimate (Beta weights, no bandwidth): their weights spread the gradient over
the order statistics around the level, a lower variance than the one-hot gradient of the point
estimate (:mod:`quantile_surrogate.quantiles.order_statistics`). :func:`kernel_weights` shows
the kernel estimate's weights.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import betainc

from ._rank_selection import (
    compute_dtype,
    floor_rank,
    normalised_weights,
    selection_estimates,
    tied_ranks,
    torch_selection_estimates,
)
from .._utils.checks import check_bandwidth, check_level, check_option, check_scores, check_weight_tensor
from ._weighted import weighted_estimates
from .kernels import KERNELS

__all__ = ["kernel_quantile", "harrell_davis_quantile", "kernel_weights"]

NOT_ASCENDING_MESSAGE = (
    "`sorted_scores` must be in ascending order (the ranks i* are positions in the sorted "
    "scores); pass torch.sort(scores).values."
)


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
    check_option(kernel, KERNELS, "kernel")
    if sorted_scores.numel() > 1 and not bool((sorted_scores[1:] >= sorted_scores[:-1]).all()):
        raise ValueError(NOT_ASCENDING_MESSAGE)
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
    sorted (:mod:`quantile_surrogate.quantiles._kernel_window`); a certificate bounds the weight
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
    (:mod:`quantile_surrogate.quantiles._weighted`): ``sum_j w_(j) K((C*_j/W - c)/h) s_(j) / sum_j
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
    (:mod:`quantile_surrogate.quantiles._weighted`): ``W_j = I_{C_j/W}(a, b) - I_{C_{j-1}/W}(a, b)``
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
    sorted_scores = torch.sort(scores.to(dtype), stable=True).values  # tied rows take their weights in row order
    weights = harrell_davis_weights(scores.numel(), level, dtype, scores.device)
    return (weights * sorted_scores).sum().to(scores.dtype)
