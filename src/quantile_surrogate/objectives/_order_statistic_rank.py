r"""The order statistic that carries a held-out guarantee: its rank, and the held-out size it needs (private).

Public as :func:`quantile_surrogate.objectives.guarantees.guaranteed_rank` and
:func:`~quantile_surrogate.objectives.guarantees.min_calibration_size`; the thresholds of
:mod:`quantile_surrogate.objectives.guarantees` read their scores at this rank. The identity behind it
(Wilks 1941): the k-th smallest of ``n`` i.i.d. uniforms satisfies
``P(U_(k) <= b) = P(Binomial(n, b) >= k)``.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral

from scipy.stats import binom

from .._utils.checks import check_number, check_target

__all__ = ["DELTA_MESSAGE", "N_TYPE_MESSAGE", "TOO_FEW_MESSAGE", "check_delta", "checked_rank", "guaranteed_rank",
           "min_calibration_size", "rank"]

DELTA_MESSAGE = (
    "`delta` must be strictly between 0 and 1; got {value!r}. It is the allowed failure "
    "probability: delta=0.05 gives the guarantee with probability 0.95."
)
N_TYPE_MESSAGE = "`n` must be an int; got {type_name}."
TOO_FEW_MESSAGE = (
    "Guaranteeing {what} with probability {confidence:g} needs at least {needed} held-out "
    "{rows}; got {got}. Hold out more {rows}, or relax `target` or `delta`."
)


def check_delta(delta) -> float:
    delta = check_number(delta, "delta")
    if not 0.0 < delta < 1.0:
        raise ValueError(DELTA_MESSAGE.format(value=delta))
    return delta


@functools.lru_cache(maxsize=1024)
def rank(n: int, tail: float, delta: float) -> int:
    """Largest k in 0..n with ``binom.cdf(k - 1, n, tail) <= delta`` (0 if only k = 0 qualifies)."""
    # ppf gives the smallest m with cdf(m) >= delta; step to the largest m with cdf(m) <= delta,
    # checking the neighbours because ppf rounds near ties.
    m = int(binom.ppf(delta, n, tail))
    while m >= 0 and binom.cdf(m, n, tail) > delta:
        m -= 1
    while m + 1 <= n - 1 and binom.cdf(m + 1, n, tail) <= delta:
        m += 1
    return m + 1


def min_calibration_size(tail: float, delta: float = 0.05) -> int:
    r"""The fewest held-out rows for which :func:`guaranteed_rank` exists.

    Parameters
    ----------
    tail : float in (0, 1)
        The population fraction allowed on the wrong side of the threshold: ``1 - target``
        for recall (and the "lower" rate bound), ``target`` for FPR (and the "upper" rate
        bound).
    delta : float in (0, 1), default=0.05
        Allowed failure probability.

    Returns
    -------
    int
        The smallest ``n`` with ``(1 - tail)^n <= delta``.

    Raises
    ------
    TypeError
        If ``tail`` or ``delta`` is not a number.
    ValueError
        If ``tail`` or ``delta`` is not strictly between 0 and 1.

    See Also
    --------
    guaranteed_rank : The rank itself, once there are enough rows.

    Notes
    -----
    Rank 1 (the most conservative threshold, the extreme score) works iff
    ``P(Binomial(n, tail) >= 1) >= 1 - delta``:

    .. math::
        1 - (1 - \text{tail})^n \ge 1 - \delta
        \iff n \ge \left\lceil \frac{\ln \delta}{\ln(1 - \text{tail})} \right\rceil,

    computed from the logarithms and then corrected by checking the powers (the float ratio
    can land one off). Recall 0.95 at delta 0.05 needs 59 positives; FPR 0.01 at delta 0.05
    needs 299 negatives.

    Examples
    --------
    >>> from quantile_surrogate.objectives.guarantees import min_calibration_size
    >>> min_calibration_size(0.05, 0.05)  # 0.95 ** 59 = 0.0485 <= 0.05 < 0.95 ** 58
    59
    >>> min_calibration_size(0.01, 0.05)
    299
    """
    tail = check_target(tail, "tail")
    delta = check_delta(delta)
    n = max(1, math.ceil(math.log(delta) / math.log1p(-tail)))
    # Guard the float log ratio against landing one off.
    while n > 1 and (1.0 - tail) ** (n - 1) <= delta:
        n -= 1
    while (1.0 - tail) ** n > delta:
        n += 1
    return n


def guaranteed_rank(n: int, tail: float, delta: float = 0.05) -> int:
    r"""The largest ``k`` with ``P(U_(k) <= tail) = P(Binomial(n, tail) >= k) >= 1 - delta``.

    Parameters
    ----------
    n : int
        Held-out rows in the subset the constraint is measured on.
    tail : float in (0, 1)
        The population fraction allowed on the wrong side of the threshold: ``1 - target``
        for recall, ``target`` for FPR.
    delta : float in (0, 1)
        Allowed failure probability.

    Returns
    -------
    int
        ``k`` in ``1..n``.

    Raises
    ------
    TypeError
        If ``n`` is not an int, or ``tail`` or ``delta`` not a number.
    ValueError
        If ``tail`` or ``delta`` is not strictly between 0 and 1, or
        ``n < min_calibration_size(tail, delta)``: no order statistic gives the guarantee.

    See Also
    --------
    recall_threshold, fpr_threshold, rate_threshold : The thresholds at this rank.

    Notes
    -----
    **Recall.** Let ``S_1..S_n`` be the held-out positives' scores, i.i.d. with CDF ``F``,
    and predict positive iff ``s >= S_(k)`` (the k-th smallest). The recall on new data is
    ``R = 1 - F(S_(k)-)``, so it misses the target ``c`` iff ``M = F(S_(k)-) > 1 - c = b``.
    Write ``S_i = F^{-1}(U_i)`` with ``U_i`` uniform; since ``x < F^{-1}(u)`` implies
    ``F(x) < u``, ``F(F^{-1}(u)-) <= u``, and a monotone map keeps the order, so
    ``M <= U_(k)`` and

        P(R >= c) >= P(U_(k) <= b) = P(Binomial(n, b) >= k),

    with equality when ``F`` is continuous. The largest ``k`` with that probability at
    least ``1 - delta`` (the highest threshold, so the best precision) is
    ``k = max{k : binom.cdf(k - 1; n, b) <= delta}``.

    **FPR.** Let ``T_1..T_m`` be the negatives' scores with CDF ``G``, and predict positive
    iff ``s > T_(m-j+1)`` (the j-th largest). The FPR is ``1 - G(T_(m-j+1))``; now
    ``G(G^{-1}(u)) >= u`` (right continuity), so ``FPR <= 1 - U_(m-j+1) = V_(j)`` with
    ``V = 1 - U`` uniform, and ``P(FPR <= a) >= P(V_(j) <= a) = P(Binomial(m, a) >= j)``:
    the same rank function with ``tail = a`` on the negated scores.

    **Rate.** The predicted positive rate is the FPR computed on all rows ("upper":
    rate <= target) or the recall computed on all rows ("lower": rate >= target).

    **Ties and the threshold returned.** The two rules differ only for scores equal to the
    order statistic: ``>=`` for recall (ties count as caught) and ``>`` for FPR (ties count
    as rejected), which is what the proofs above need when ``F`` has atoms. The threshold
    functions return the adjacent float (``np.nextafter``) below, resp. above, the order
    statistic, so that ``score > t`` and ``score >= t`` select the same rows and the guarantee
    holds with either convention.

    **What is guaranteed.** The probability is over the draw of the held-out set, for the
    population rate on new data from the same distribution, with the model fixed
    beforehand (not trained on the held-out rows). It is conditional on ``n``, hence also
    holds when the number of positives in the held-out set is random. The empirical rate on
    a finite test set adds its own sampling noise on top.

    Examples
    --------
    >>> from quantile_surrogate.objectives.guarantees import guaranteed_rank
    >>> guaranteed_rank(100, 0.05, 0.05)  # P(Bin(100, .05) >= 2) = 0.963, >= 3: 0.882
    2
    """
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(N_TYPE_MESSAGE.format(type_name=type(n).__name__))
    tail = check_target(tail, "tail")
    delta = check_delta(delta)
    return checked_rank(int(n), tail, delta, f"a rank with tail {tail:g}", "rows")


def checked_rank(n: int, tail: float, delta: float, what: str, rows: str) -> int:
    """:func:`rank`, or ``ValueError`` naming ``what``, the ``rows`` and how many are needed when no rank qualifies."""
    k = rank(n, tail, delta)
    if k < 1:
        raise ValueError(TOO_FEW_MESSAGE.format(what=what, confidence=1 - delta,
                                                needed=min_calibration_size(tail, delta), rows=rows, got=n))
    return k
