r"""Rates at a threshold: the exact share of counted rows above it, and differentiable bounds on that share.

For a threshold :math:`t` and the rows :math:`C` a rate counts (the positives for recall, the
negatives for the false positive rate, every row for the positive rate), in group :math:`g`:

.. math::
    r_g = \frac{1}{|C_g|} \sum_{i \in C_g} 1[s_i > t], \qquad
    \bar r_g = \frac{1}{|C_g|} \sum_{i \in C_g} \frac{\ell(s_i - t)}{\ell(0)} \;\ge\; r_g \;\ge\;
    \underline r_g = 1 - \frac{1}{|C_g|} \sum_{i \in C_g} \frac{\ell(t - s_i)}{\ell(0)},

with :math:`\ell` a surrogate of ``SURROGATES`` (convex, non-decreasing, :math:`\ell(z) \ge \ell(0) 1[z \ge 0]`),
the same upper bounds of the step that the paper's losses sum (eqs. (6)-(10)). A constraint's
surrogate violation takes whichever bound makes it an upper bound of the exact violation.

**Precision** is the one ratio of the vocabulary: among the rows above the threshold, the share of
positives,

.. math::
    p_g = \frac{TP_g}{TP_g + FP_g}, \qquad TP_g = \sum_{i \in g,\, y_i = 1} 1[s_i > t], \quad
    FP_g = \sum_{i \in g,\, y_i = 0} 1[s_i > t],

so its denominator, the rows it counts, moves with the threshold. Each function here takes it with the
same step (exact, bounded, smoothed) in both counts: the lower bound is
:math:`\underline{TP}_g / (\underline{TP}_g + \overline{FP}_g)` (precision grows with TP and falls with
FP; the lower step bound clamped at 0 per row), the upper one the reverse, and its ``counts`` are
:math:`TP_g + FP_g` (0: the group selects no row, and its precision is not measured).
"""

from __future__ import annotations

import torch

from ..losses import SURROGATES

__all__ = ["counted_rows", "exact_rates", "bound_rates", "smooth_rates", "SMOOTH_WIDTH"]


def counted_rows(rate: str, labels: torch.Tensor) -> torch.Tensor:
    """The rows ``rate`` counts, as a bool mask (``labels`` bool, True = positive).

    For precision, whose counted rows are those above the threshold, the positives: the rows a group
    needs for its precision to be more than 0 wherever it selects.
    """
    if rate in ("recall", "precision"):
        return labels
    if rate == "false_positive_rate":
        return ~labels
    return torch.ones_like(labels)


def _group_sums(values, groups, n_groups):
    """Per group (``n_groups``; one group without ``groups``) the sum of ``values``."""
    if groups is None:
        groups = torch.zeros(values.shape[0], dtype=torch.long, device=values.device)
        n_groups = 1
    return torch.zeros(n_groups, dtype=values.dtype, device=values.device).index_add(0, groups, values)


def _group_means(values, mask, groups, n_groups, weight=None):
    """Per group (``n_groups``; one group without ``groups``) the (weighted) mean of ``values`` over ``mask``, and the weights' sums."""
    weight = mask.to(values.dtype) if weight is None else mask.to(values.dtype) * weight.to(values.dtype)
    sums, counts = _group_sums(values * weight, groups, n_groups), _group_sums(weight, groups, n_groups)
    return sums / torch.where(counts > 0, counts, torch.ones_like(counts)), counts


def _precision(step, labels, groups, n_groups, weight, negative_step=None):
    """``(TP / (TP + FP), TP + FP)`` per group, TP summing each positive's ``step`` and FP each negative's
    ``negative_step`` (``step`` where None), each row ``weight`` times."""
    negative_step = step if negative_step is None else negative_step
    above = torch.where(labels, step, negative_step)
    if weight is not None:
        above = above * weight.to(above.dtype)
    tp = _group_sums(torch.where(labels, above, torch.zeros_like(above)), groups, n_groups)
    selected = _group_sums(above, groups, n_groups)
    return tp / torch.where(selected > 0, selected, torch.ones_like(selected)), selected


def exact_rates(scores, labels, threshold, rate, groups=None, n_groups=None, weight=None) -> tuple:
    """``(rates, counts)`` per group (shape (G,), or (1,) without groups): the share of counted rows with score > ``t``.

    Parameters
    ----------
    scores : Tensor of shape (n,)
    labels : bool Tensor of shape (n,)
        True for a positive.
    threshold : float, 0-d Tensor or Tensor of shape (n,)
        The shared threshold ``t`` (or each row's, where thresholds are per group).
    rate : {"recall", "false_positive_rate", "positive_rate", "precision"}
    groups : int Tensor of shape (n,) or None
        Codes 0..G-1; None: one group.
    n_groups : int or None
        G (with ``groups``).
    weight : Tensor of shape (n,) or None
        Row weights ``w_i >= 0``: the rate is then :math:`\\sum w_i 1[s_i > t] / \\sum w_i` over the counted rows.

    Returns
    -------
    (rates, counts) : tuple of Tensors of shape (G,)
        A group without counted rows has rate 0 and count 0 (``counts``: the sum of the counted rows' weights;
        for precision, of the rows above the threshold).

    Examples
    --------
    >>> import torch
    >>> scores = torch.tensor([0.9, 0.2, 0.7, 0.1]); labels = torch.tensor([True, True, False, False])
    >>> exact_rates(scores, labels, 0.5, "recall")[0].tolist(), exact_rates(scores, labels, 0.5, "positive_rate")[0].tolist()
    ([0.5], [0.5])
    >>> exact_rates(scores, labels, 0.5, "precision")  # 0.9 and 0.7 above: one positive in two
    (tensor([0.5000]), tensor([2.]))
    """
    above = (scores > threshold).to(scores.dtype)
    if rate == "precision":
        return _precision(above, labels, groups, n_groups, weight)
    return _group_means(above, counted_rows(rate, labels), groups, n_groups, weight)


def bound_rates(scores, labels, threshold, rate, *, upper: bool, surrogate: str = "logistic", groups=None,
                n_groups=None, weight=None) -> tuple:
    """``(bounds, counts)``: the differentiable upper (``upper=True``) or lower bound of :func:`exact_rates`.

    Parameters
    ----------
    scores, labels, threshold, rate, groups, n_groups, weight
        As in :func:`exact_rates`.
    upper : bool
        ``ell(s - t) / ell(0)`` averaged (an upper bound) or ``1 - ell(t - s) / ell(0)`` (a lower bound).
    surrogate : {"logistic", "hinge"}, default="logistic"
        :math:`\\ell` (``SURROGATES``).

    Returns
    -------
    (bounds, counts) : tuple of Tensors of shape (G,)

    Examples
    --------
    >>> import torch
    >>> scores = torch.tensor([0.9, 0.2, 0.7, 0.1], dtype=torch.float64); labels = torch.tensor([True, True, False, False])
    >>> low = bound_rates(scores, labels, 0.5, "recall", upper=False)[0]
    >>> high = bound_rates(scores, labels, 0.5, "recall", upper=True)[0]
    >>> bool(low <= 0.5 <= high)
    True
    """
    loss = SURROGATES[surrogate]
    scale = loss(torch.zeros((), dtype=scores.dtype, device=scores.device))
    if rate == "precision":  # it grows with TP and falls with FP: each count takes the opposite bound
        high, low = loss(scores - threshold) / scale, (1.0 - loss(threshold - scores) / scale).clamp(min=0.0)
        positive_step, negative_step = (high, low) if upper else (low, high)
        return _precision(positive_step, labels, groups, n_groups, weight, negative_step)
    if upper:
        values = loss(scores - threshold) / scale
    else:
        values = 1.0 - loss(threshold - scores) / scale
    return _group_means(values, counted_rows(rate, labels), groups, n_groups, weight)


SMOOTH_WIDTH = 0.1
"""The sigmoid's width in standard deviations of the scores (:func:`smooth_rates`)."""


def _spread(scores, weight):
    """The (weighted) population standard deviation of ``scores``, 1 where it is 0 (a weight is a repeated row)."""
    w = torch.ones_like(scores) if weight is None else weight.to(scores.dtype)
    mean = (w * scores).sum() / w.sum()
    spread = ((w * (scores - mean) ** 2).sum() / w.sum()).sqrt()
    return torch.where(spread > 0, spread, torch.ones_like(spread))


def smooth_rates(scores, labels, threshold, rate, *, width: float = SMOOTH_WIDTH, groups=None, n_groups=None,
                 weight=None) -> tuple:
    r"""``(rates, counts)``: :func:`exact_rates` with the step smoothed, :math:`\sigma((s_i - t) / \tau)`.

    :math:`\tau` is ``width`` times the standard deviation of ``scores`` (weighted by ``weight``, held
    fixed in the gradient; 1 where it is 0), so the smoothing does not depend on the scale of the scores. Neither an upper nor a
    lower bound: an estimate of the rate whose gradient moves the rate itself, where a bound's
    gradient also shrinks its own slack (pushing every score away from the threshold). The
    proxy-Lagrangian's multipliers follow the exact rates, so the model player's proxy need not
    be a bound (Cotter, Jiang & Sridharan 2019).

    Examples
    --------
    >>> import torch
    >>> scores = torch.tensor([3.0, -3.0, 2.5, -2.0], dtype=torch.float64); labels = torch.tensor([True, True, False, False])
    >>> round(float(smooth_rates(scores, labels, 0.0, "recall")[0]), 3)
    0.5
    """
    values = torch.sigmoid((scores - threshold) / (width * _spread(scores.detach(), weight)))
    if rate == "precision":
        return _precision(values, labels, groups, n_groups, weight)
    return _group_means(values, counted_rows(rate, labels), groups, n_groups, weight)
