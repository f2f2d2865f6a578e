r"""Decision thresholds with a held-out guarantee (distribution-free, by order statistics).

The paper (Mackey, Luo & Eban 2018) sets the threshold at the empirical quantile
``q(f(A), 1 - c)`` of the training scores, so the rate constraint holds *on the training
set*. On new data the same threshold meets a recall target only about half the time: the
empirical quantile is a median-unbiased estimate of the population quantile, no more.
This module picks, on a held-out ("calibration") set, the order statistic that makes the
constraint hold on the population with probability at least ``1 - delta`` over the draw
of the held-out set:

=========================  ========================================  ==========================
function                   guarantee, with probability >= 1 - delta  rows it reads
=========================  ========================================  ==========================
:func:`recall_threshold`   recall = P(f(x) > t | y = 1) >= target    held-out positives
:func:`fpr_threshold`      FPR = P(f(x) > t | y = 0) <= target       held-out negatives
:func:`rate_threshold`     rate = P(f(x) > t) <= target ("upper")    all held-out rows
                           or >= target ("lower")
=========================  ========================================  ==========================

:func:`~quantile_surrogate.estimators.calibration.calibrate_threshold` does the same for a fitted
scikit-learn estimator and returns a
:class:`~quantile_surrogate.estimators.calibration.GuaranteedThresholdClassifier`.

The one identity behind all of it (Wilks 1941; David & Nagaraja, *Order Statistics*, 3rd ed.,
section 2.2): if ``U_1..U_n`` are i.i.d. uniform on (0, 1), the k-th smallest satisfies

    P(U_(k) <= b) = P(Binomial(n, b) >= k) = I_b(k, n - k + 1)   (U_(k) ~ Beta(k, n - k + 1)),

because ``U_(k) <= b`` says that at least ``k`` of the ``n`` draws fall below ``b``. The
derivation for each constraint is in the docstring of :func:`guaranteed_rank`.
"""

from __future__ import annotations

import numpy as np

from ._order_statistic_rank import check_delta, checked_rank, guaranteed_rank, min_calibration_size
from .._utils.checks import check_target

__all__ = [
    "recall_threshold",
    "fpr_threshold",
    "rate_threshold",
    "guaranteed_rank",
    "min_calibration_size",
]

# The values of `bound=` in rate_threshold (estimators.calibration validates with it): plumbing, not in __all__.
BOUNDS = ("upper", "lower")

SCORES_MESSAGE = "`{name}` must be a non-empty 1-D array of finite numbers; got {problem}."
BOUND_MESSAGE = (
    "`bound` must be 'upper' (rate <= target, a capacity cap) or 'lower' (rate >= target, a "
    "coverage floor); got {value!r}."
)

def _check_scores(scores, name: str) -> np.ndarray:
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(SCORES_MESSAGE.format(name=name, problem=f"values of type {type(scores).__name__}"))
    if array.ndim != 1:
        raise ValueError(SCORES_MESSAGE.format(name=name, problem=f"shape {array.shape}"))
    if array.size == 0:
        raise ValueError(SCORES_MESSAGE.format(name=name, problem="no values"))
    bad = int(np.count_nonzero(~np.isfinite(array)))
    if bad:
        raise ValueError(SCORES_MESSAGE.format(name=name, problem=f"{bad} NaN or inf of {array.size}"))
    return array


def _lower_threshold(scores: np.ndarray, tail: float, delta: float, what: str, rows: str) -> float:
    """The float just below the k-th smallest score, k the guaranteed rank (:func:`guaranteed_rank`)."""
    k = checked_rank(scores.size, tail, delta, what, rows)
    kth = np.partition(scores, k - 1)[k - 1]
    return float(np.nextafter(kth, -np.inf))


def recall_threshold(scores_pos, target: float, delta: float = 0.05) -> float:
    r"""A threshold ``t`` with ``P(recall on new data >= target) >= 1 - delta``.

    ``t`` is the float just below ``S_(k)``, the k-th smallest held-out positive score, with
    ``k = max{k : P(Binomial(n, 1 - target) >= k) >= 1 - delta}`` (see
    :func:`guaranteed_rank` for the derivation). The paper's plain threshold is
    ``q(f(X+), 1 - target) = S_(floor((1 - target) n))`` (section 4), which meets the
    target on new data about half the time.

    Parameters
    ----------
    scores_pos : array-like of shape (n,)
        Scores of the held-out positives, from a model not trained on them.
    target : float in (0, 1)
        Recall to guarantee.
    delta : float in (0, 1), default=0.05
        Allowed failure probability.

    Returns
    -------
    float
        Predict positive iff ``score > t`` (``>=`` selects the same held-out rows).

    Raises
    ------
    TypeError
        If ``scores_pos`` is not numeric, or ``target`` or ``delta`` not a number.
    ValueError
        If ``scores_pos`` is empty, not 1-D or holds NaN or inf; if ``target`` or ``delta`` is
        not strictly between 0 and 1; with fewer than ``min_calibration_size(1 - target, delta)``
        positives.

    See Also
    --------
    guaranteed_rank : The rank and its derivation.
    quantile_surrogate.estimators.calibration.calibrate_threshold : The same for a fitted estimator.

    Notes
    -----
    With :math:`S_{(1)} \le \dots \le S_{(n)}` the held-out positives' scores,

    .. math::
        t = S_{(k)}^-, \qquad k = \max\{k : P(\text{Binomial}(n, 1 - c) \ge k) \ge 1 - \delta\},

    and :math:`P(\text{recall} \ge c) \ge 1 - \delta` over the draw of the held-out set
    (exactly, for continuous scores).

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.objectives.guarantees import recall_threshold
    >>> s = np.arange(1.0, 101.0)  # 100 positives scored 1..100; k = 2
    >>> t = recall_threshold(s, 0.95, 0.05)
    >>> bool(t < 2.0 and np.nextafter(t, 3.0) == 2.0)
    True
    """
    scores = _check_scores(scores_pos, "scores_pos")
    target = check_target(target, "target")
    delta = check_delta(delta)
    return _lower_threshold(scores, 1.0 - target, delta, f"recall >= {target:g}", "positive rows")


def fpr_threshold(scores_neg, target: float, delta: float = 0.05) -> float:
    r"""A threshold ``t`` with ``P(FPR on new data <= target) >= 1 - delta``.

    ``t`` is the float just above ``T_(m-j+1)``, the j-th largest held-out negative score,
    ``j = max{j : P(Binomial(m, target) >= j) >= 1 - delta}`` (:func:`guaranteed_rank`).

    Parameters
    ----------
    scores_neg : array-like of shape (m,)
        Scores of the held-out negatives.
    target : float in (0, 1)
        The FPR not to exceed.
    delta : float in (0, 1), default=0.05
        Allowed failure probability.

    Returns
    -------
    float
        Predict positive iff ``score > t``.

    Raises
    ------
    TypeError
        If ``scores_neg`` is not numeric, or ``target`` or ``delta`` not a number.
    ValueError
        If ``scores_neg`` is empty, not 1-D or holds NaN or inf; if ``target`` or ``delta`` is
        not strictly between 0 and 1; with fewer than ``min_calibration_size(target, delta)``
        negatives.

    See Also
    --------
    guaranteed_rank : The rank and its derivation.

    Notes
    -----
    With :math:`T_{(1)} \le \dots \le T_{(m)}` the held-out negatives' scores,

    .. math::
        t = T_{(m - j + 1)}^+, \qquad j = \max\{j : P(\text{Binomial}(m, \alpha) \ge j) \ge 1 - \delta\},

    and :math:`P(\text{FPR} \le \alpha) \ge 1 - \delta` over the draw of the held-out set.

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.objectives.guarantees import fpr_threshold
    >>> s = np.arange(1.0, 101.0)  # 100 negatives; FPR 0.05 -> j = 2, the 2nd largest is 99
    >>> t = fpr_threshold(s, 0.05, 0.05)
    >>> bool(t > 99.0 and np.nextafter(t, 0.0) == 99.0)
    True
    """
    scores = _check_scores(scores_neg, "scores_neg")
    target = check_target(target, "target")
    delta = check_delta(delta)
    return -_lower_threshold(-scores, target, delta, f"FPR <= {target:g}", "negative rows")


def rate_threshold(scores, target: float, delta: float = 0.05, *, bound: str = "upper") -> float:
    r"""A threshold bounding the predicted positive rate ``P(f(x) > t)`` with probability ``1 - delta``.

    ``bound="upper"`` (default) guarantees rate <= target: the capacity case ("reviewers can
    look at 5 % of the traffic"), the one a precision@K deployment usually needs, and the
    direction in which overshooting costs something real. It is :func:`fpr_threshold`
    applied to all rows. ``bound="lower"`` guarantees rate >= target (a coverage floor,
    "flag at least 5 %"); it is :func:`recall_threshold` applied to all rows.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Scores of all held-out rows (labels are not needed).
    target : float in (0, 1)
        The predicted positive rate.
    delta : float in (0, 1), default=0.05
        Allowed failure probability.
    bound : {"upper", "lower"}, default="upper"
        Guarantee rate <= target ("upper") or rate >= target ("lower").

    Returns
    -------
    float
        Predict positive iff ``score > t``.

    Raises
    ------
    TypeError
        If ``scores`` is not numeric, or ``target`` or ``delta`` not a number.
    ValueError
        If ``scores`` is empty, not 1-D or holds NaN or inf; if ``target`` or ``delta`` is not
        strictly between 0 and 1; if ``bound`` is neither "upper" nor "lower"; with fewer rows
        than :func:`min_calibration_size` asks for.

    See Also
    --------
    fpr_threshold, recall_threshold : The two bounds, on a subset of rows.
    quantile_surrogate.metrics.predicted_positive_rate : The rate on a given set.

    Notes
    -----
    The predicted positive rate :math:`r_X(f, t)` (Definition 3.1) is the FPR computed on all
    rows, or the recall computed on all rows, so

    .. math::
        P\big(r_X(f, t) \le \tau\big) \ge 1 - \delta \ \text{("upper")}, \qquad
        P\big(r_X(f, t) \ge \tau\big) \ge 1 - \delta \ \text{("lower")},

    with the ranks of :func:`fpr_threshold` and :func:`recall_threshold` on ``n`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.objectives.guarantees import rate_threshold
    >>> s = np.arange(1.0, 101.0)  # 100 held-out rows
    >>> t = rate_threshold(s, 0.05, 0.05)  # at most 5 %: just above the 2nd largest, 99
    >>> float((s > t).mean())
    0.01
    >>> t = rate_threshold(s, 0.05, 0.05, bound="lower")  # at least 5 %: a margin the other way
    >>> float((s > t).mean())
    0.1
    """
    values = _check_scores(scores, "scores")
    target = check_target(target, "target")
    delta = check_delta(delta)
    if bound == "upper":
        return -_lower_threshold(-values, target, delta, f"rate <= {target:g}", "rows")
    if bound == "lower":
        return _lower_threshold(values, 1.0 - target, delta, f"rate >= {target:g}", "rows")
    raise ValueError(BOUND_MESSAGE.format(value=bound))
