r"""The one rule that turns a level (or rate) ``c`` and a size ``n`` into a count.

.. math::
    k = \min\big(\max(\operatorname{round}(c n) , k_{\min}),\ n\big), \qquad
    \operatorname{round} \in \{\lceil\cdot\rceil, \lfloor\cdot\rfloor\},\quad k_{\min} = \min(1, n)
    \text{ (or 0)},

with ``c n`` rounded to 6 decimals first, so that float noise cannot move the count
(``0.07 * 100`` is ``7.000000000000001`` and ``0.29 * 100`` is ``28.999999999999996`` in floating
point, but mean 7 and 29). With frequency weights ``n`` is a total weight and the count a mass.
Every count of rows at a level goes through :func:`count`: the point estimator's rank, ``K`` of
Precision@K, the rows of ``A`` a constraint allows above its threshold, the weighted quantiles'
masses.
"""

from __future__ import annotations

import math

ROUNDINGS = ("ceil", "floor")
ROUNDING_MESSAGE = "`rounding` must be 'ceil' or 'floor'; got {value!r}."


def count(level: float, size, rounding: str = "ceil", *, at_least_one: bool = True):
    """``round(level * size)`` by ``rounding``, clamped to ``[min(1, size), size]`` (``[0, size]``
    with ``at_least_one=False``); of ``size``'s type when ``size`` is a float mass.

    Examples
    --------
    >>> count(0.1, 30), count(0.015, 100), count(0.015, 100, "floor"), count(0.29, 100, "floor")
    (3, 2, 1, 29)
    >>> count(0.001, 10, "floor"), count(0.001, 10, "floor", at_least_one=False)
    (1, 0)
    """
    exact = round(level * size, 6)
    if rounding == "ceil":
        k = math.ceil(exact)
    elif rounding == "floor":
        k = math.floor(exact)
    else:
        raise ValueError(ROUNDING_MESSAGE.format(value=rounding))
    low = min(1, size) if at_least_one else 0
    return min(max(k, low), size)
