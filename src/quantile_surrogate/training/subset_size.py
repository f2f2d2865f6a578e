r"""How many rows of ``A`` a minibatch step of Algorithm 1 takes, and whether it needs its own minibatch of them.

Step 2 of Algorithm 1 estimates the threshold ``q(f(A), c)`` from a minibatch ``A_b`` of ``A``.
:func:`default_subset_batch_size` sizes it for the estimate's noise, and :func:`subset_plan`
decides, once per fit, whether a separate minibatch is drawn at all or the batch's own rows
of ``A`` (a uniform sample of ``A`` too) are enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MIN_SUBSET_ROWS", "TAIL_ROWS", "SubsetPlan", "default_subset_batch_size", "separate_plan", "subset_plan"]

#: ``k`` of :func:`default_subset_batch_size`: the rows of the minibatch of ``A`` expected beyond the
#: quantile level. The relative standard error of the rate that the estimated threshold gives is
#: then about ``1 / sqrt(k)``, 14 %: recall 0.95 +- 0.007 per step at a target of 0.95.
TAIL_ROWS = 50

#: The cap of :func:`default_subset_batch_size` for a minibatch of ``B`` rows is ``max(B, MIN_SUBSET_ROWS)``:
#: 16, the smallest separate minibatch measured (a CNN on digits at batch 32, development splits).
MIN_SUBSET_ROWS = 16


def default_subset_batch_size(subset_rows: int, target: float, tail_rows: int = TAIL_ROWS,
                              batch_size: int | None = None) -> int:
    r"""Rows of ``A`` that one step's threshold needs: ``min(|A|, ceil(k / min(c, 1 - c)), max(B, 16))``.

    Parameters
    ----------
    subset_rows : int
        ``|A|`` (or, with groups, ``|A_g|``).
    target : float in (0, 1)
        The objective's target ``c``; the threshold is the quantile at level ``1 - c``, with
        ``min(c, 1 - c)`` of ``A`` beyond it on its shorter side.
    tail_rows : int
        ``k``, the rows expected beyond the level (:data:`TAIL_ROWS`).
    batch_size : int or None
        ``B``, the rows of the step's minibatch; None: no cap (the rule for the threshold's value alone).

    Returns
    -------
    int

    Notes
    -----
    Step 2 of Algorithm 1 estimates ``theta = q(f(A), 1 - c)`` from ``m`` rows of ``A`` drawn
    uniformly. With ``p = min(c, 1 - c)`` and ``F`` the distribution of ``f(A)``, the rate the
    estimated threshold gives is ``F(theta_hat) ~ Beta(m p, m (1 - p))`` (the order statistic),
    so its standard error is ``sqrt(p (1 - p) / (m + 1))``, and relative to the tail ``p``

    .. math::
        \frac{\mathrm{sd}(F(\hat\theta))}{p} \approx \sqrt{\frac{1 - p}{m p}} \le \frac{1}{\sqrt{k}},
        \qquad k = m p,

    the expected number of sampled rows beyond the level. The error depends on ``k``, not
    on ``m``: a fixed ``k`` gives every target the same relative accuracy. The kernel
    estimator averages order statistics around the level, which, if anything, lowers the
    variance below the point estimate's.

    **The cap** ``max(B, 16)`` (:data:`MIN_SUBSET_ROWS`): more rows of ``A`` than the step's own
    minibatch has rows sharpen the threshold's value, but the step's gradient stays as noisy as
    its ``B`` rows make it, and SGD averages the value's noise over the steps. Measured on
    development data (issue 28; recall 0.9, the training halves split again): a small CNN on
    digits (about 45 positives) gave precision 0.965 against 0.925 with all of them at batch 16
    (+0.041 +- 0.012) and 0.934 against 0.911 at batch 32; a 32-channel CNN on 40 noisy copies
    of them at batch 32 gave 0.980, 0.981, 0.969, 0.971 with 16, 32, 64, 128 rows of
    ``A`` a step against 0.966 with the uncapped 500, at 2.7-4.6 against 22.4 ms a step; a linear
    model on six fresh draws of the paper's Gaussian mixture (300,000 rows, minibatches of 1,000,
    10 epochs) at recall 0.98 (1,000 rows of ``A`` instead of 2,500) +0.0038 +- 0.0010, at a 1 %
    rate (the batch's own rows instead of 5,000) +0.0004 +- 0.0004, and in minibatches of 256 at
    recall 0.95 (256 instead of 1,000) -0.0067 +- 0.0075, in 0.6-0.9 of the time.

    Examples
    --------
    >>> default_subset_batch_size(50_000, 0.95), default_subset_batch_size(50_000, 0.8)
    (1000, 250)
    >>> default_subset_batch_size(600, 0.95)      # fewer rows of A than that: all of them
    600
    >>> default_subset_batch_size(50_000, 0.9, batch_size=32)   # no more than the step's minibatch
    32
    """
    tail = min(target, 1.0 - target)
    # The 1e-9 keeps a quotient like 50 / (1 - 0.9) = 500.0000000000001 from rounding up to 501.
    size = min(int(subset_rows), math.ceil(tail_rows / tail - 1e-9))
    return size if batch_size is None else min(size, max(int(batch_size), MIN_SUBSET_ROWS))


@dataclass(frozen=True)
class SubsetPlan:
    r"""Where one fit's steps take ``A_b`` from (:func:`subset_plan`).

    Parameters
    ----------
    separate : bool
        A separate minibatch of ``A`` (step 2 of Algorithm 1); False: ``A_b = X_b \cap A``.
    size : int or None, default=None
        Rows of the separate minibatch: in all (split by :func:`group_shares`), or per group
        with ``per_group``; None when not ``separate``.
    per_group : bool, default=False
        Each group of ``A`` gets ``size`` rows (all of its rows if it has fewer).

    Examples
    --------
    >>> from quantile_surrogate.training.subset_size import SubsetPlan, subset_plan
    >>> subset_plan(1_000_000, 10_000, [80_000], 0.95) == SubsetPlan(separate=True, size=1000)
    True
    """

    separate: bool
    """A separate minibatch of ``A`` (step 2 of Algorithm 1); False: ``A_b = X_b \\cap A``."""
    size: int | None = None
    """Rows of the separate minibatch: in all (split by :func:`group_shares`), or per group with ``per_group``."""
    per_group: bool = False
    """Each group of ``A`` gets ``size`` rows (all of its rows if it has fewer)."""


def subset_plan(n: int, batch_size: int, subset_sizes, target: float, subset_batch_size: int | None = None,
                subset_from_batch: bool = False, tail_rows: int = TAIL_ROWS) -> SubsetPlan:
    r"""How a minibatch fit takes ``A_b``: the batch's own rows of ``A``, or a separate minibatch of how many rows.

    Parameters
    ----------
    n, batch_size : int
        Rows of the data, and per minibatch (``batch_size < n``).
    subset_sizes : list of int
        ``[|A|]``, or with groups every group's ``|A_g|``.
    target : float
        The objective's target ``c``.
    subset_batch_size : int or None
        The user's setting: an int is a separate minibatch of that many rows in all (the
        groups sharing them by :func:`group_shares`); None applies the rule below.
    subset_from_batch : bool
        Always ``A_b = X_b \cap A``.
    tail_rows : int
        ``k`` of :func:`default_subset_batch_size`.

    Returns
    -------
    SubsetPlan

    Notes
    -----
    With ``subset_batch_size=None`` each threshold (one, or one per group) needs
    ``m_g = min(|A_g|, ceil(k / min(c, 1 - c)), max(B, 16))`` rows (:func:`default_subset_batch_size`
    with its cap). A batch of ``B`` rows holds ``B |A_g| / n`` rows of ``A_g`` in expectation, a uniform
    sample of ``A_g``: if that is at least ``m_g`` for every group, a separate draw would cost
    a forward and backward pass over more rows for no better an estimate, and the batch's own
    rows are used (always so for ``precision_at_rate`` without groups and ``B >= 16``, where ``A``
    is every row). Otherwise each step draws ``m_g`` rows of every ``A_g``.

    Examples
    --------
    >>> subset_plan(1_000_000, 10_000, [80_000], 0.95)           # 800 positives per batch < 1000
    SubsetPlan(separate=True, size=1000, per_group=False)
    >>> subset_plan(1_000_000, 10_000, [1_000_000], 0.05)        # A is every row: the batch is enough
    SubsetPlan(separate=False, size=None, per_group=False)
    """
    if subset_from_batch:
        return SubsetPlan(separate=False)
    if subset_batch_size is not None:
        return separate_plan(subset_sizes, target, subset_batch_size, tail_rows)
    sizes = [int(size) for size in subset_sizes]
    needed = [default_subset_batch_size(size, target, tail_rows, batch_size) for size in sizes]
    if all(batch_size * size >= need * n for size, need in zip(sizes, needed)):
        return SubsetPlan(separate=False)
    return separate_plan(sizes, target, None, tail_rows, batch_size)


def separate_plan(subset_sizes, target: float, subset_batch_size: int | None = None,
                  tail_rows: int = TAIL_ROWS, batch_size: int | None = None) -> SubsetPlan:
    r"""The separate minibatch of ``A`` that a step draws: ``subset_batch_size`` rows, or the rule's.

    :func:`subset_plan`'s plan when it draws one; also the minibatch that a step whose batch
    holds no row of ``A`` (of a group's ``A``) draws where the plan takes ``A_b`` from the
    batch (:func:`~quantile_surrogate.training.sampling.epoch_batches`), so that every step
    has a threshold.

    Parameters
    ----------
    subset_sizes : list of int
        ``[|A|]``, or with groups every group's ``|A_g|``.
    target : float
        The objective's target ``c``.
    subset_batch_size : int or None
        Rows in all (the groups sharing them by :func:`~quantile_surrogate.training.sampling.group_shares`);
        None: ``m_g = min(|A_g|, ceil(k / min(c, 1 - c)))`` rows of every group
        (:func:`default_subset_batch_size`; ``per_group`` with more than one group).
    tail_rows : int
        ``k`` of :func:`default_subset_batch_size`.
    batch_size : int or None
        ``B`` of :func:`default_subset_batch_size`'s cap (None: no cap).

    Returns
    -------
    SubsetPlan
        With ``separate=True``.

    Examples
    --------
    >>> separate_plan([80_000], 0.95)
    SubsetPlan(separate=True, size=1000, per_group=False)
    >>> separate_plan([300, 5_000], 0.9)          # every group the rule's rows (all of its A if fewer)
    SubsetPlan(separate=True, size=500, per_group=True)
    """
    if subset_batch_size is not None:
        return SubsetPlan(separate=True, size=int(subset_batch_size))
    sizes = [int(size) for size in subset_sizes]
    size = default_subset_batch_size(max(sizes), target, tail_rows, batch_size)
    return SubsetPlan(separate=True, size=size, per_group=len(sizes) > 1)
