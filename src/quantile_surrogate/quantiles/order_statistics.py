r"""Order-statistic quantile estimators: one order statistic, or the plain mean of a range of them.

The point estimate :math:`\hat q_1` (section 4), the lower mean :math:`\hat q_m` (eq. (14)) and the
interval mean :math:`\hat q_I` (eq. (16)): each weights the order statistics it uses equally, so
its gradient is one-hot or uniform over a range of ranks. The smoothed estimators are in
:mod:`quantile_surrogate.quantiles.smooth`; the registry ``quantile=`` names is
:data:`quantile_surrogate.quantiles.QUANTILE_ESTIMATORS`.
"""

from __future__ import annotations

import torch

from ._rank_selection import compute_dtype, floor_rank, selection_estimates
from .._utils.checks import check_level, check_scores, check_weight_tensor
from .._utils.counts import count
from ._weighted import weighted_estimates

__all__ = ["point_quantile", "lower_mean_quantile", "interval_quantile"]

INTERVAL_ORDER_MESSAGE = "`low` must be smaller than `high`; got low={low}, high={high}."


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
    (:mod:`quantile_surrogate.quantiles._weighted`): ``s_(j)`` for the first ``j`` whose cumulative
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
    become convex upper bounds (``tests/cross/test_convex_bound.py``). The paper calls
    :math:`\hat q_m` itself "convex" in one sentence; concave is what the argument needs.
    With ties the ``k`` smallest order statistics are averaged, the paper's "mean of the
    scores up to the point estimate" counted by rank.

    Weights. With ``weight=`` the estimate is the same formula on the weighted empirical
    distribution, counts replaced by the mass ``W = sum w`` and ranks by cumulative weights
    (:mod:`quantile_surrogate.quantiles._weighted`): the weighted mean of the lowest mass
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
    # A stable sort: of rows tied at the k-th score the first ones, in row order, take the gradient (as the
    # weighted and the distributed estimates do; torch.topk leaves that choice to its algorithm).
    lowest = torch.sort(scores.to(compute_dtype(scores.dtype)), stable=True).values[:k]
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
    (:mod:`quantile_surrogate.quantiles._weighted`): the weighted mean of the order statistics over
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
            raise ValueError(INTERVAL_ORDER_MESSAGE.format(low=low, high=high))
    if weight is not None:
        if validate_args:
            check_weight_tensor(weight, scores.numel())
        return weighted_estimates("interval", scores, weight, (low,), 0.0, interval=(low, high)).reshape(())
    n = scores.numel()
    start = min(count(low, n, "floor", at_least_one=False), n - 1)
    stop = max(count(high, n, "floor", at_least_one=False), start + 1)
    lowest = torch.sort(scores.to(compute_dtype(scores.dtype)), stable=True).values  # ties in row order
    return lowest[start:stop].mean().to(scores.dtype)
