"""quantile_surrogate._utils.counts.count: the one rule that turns a level and a size into a count.

The reference is exact arithmetic: for a level that is a fraction p / q, ``c n`` is the rational
``p n / q`` and its ceil and floor are integer divisions, so float noise cannot hide in it.
"""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate._utils.counts import ROUNDING_MESSAGE, count
from tests._messages import exact


def exact_count(level: Fraction, size: int, rounding: str, at_least_one: bool = True) -> int:
    k = math.ceil(level * size) if rounding == "ceil" else math.floor(level * size)
    return min(max(k, min(1, size) if at_least_one else 0), size)


@pytest.mark.parametrize("rounding", ["ceil", "floor"])
@pytest.mark.parametrize("at_least_one", [True, False])
def test_every_fraction_with_a_small_denominator(rounding, at_least_one):
    """Brute force: every level p / q (q <= 60) and size n <= 80, where float products carry noise."""
    for q in range(1, 61):
        for p in range(0, q + 1):
            level = Fraction(p, q)
            for n in range(0, 81):
                expected = exact_count(level, n, rounding, at_least_one)
                got = count(p / q, n, rounding, at_least_one=at_least_one)
                assert got == expected, (p, q, n)


@settings(max_examples=300, deadline=None)
@given(p=st.integers(0, 10_000), q=st.integers(1, 10_000), n=st.integers(0, 100_000),
       rounding=st.sampled_from(["ceil", "floor"]), at_least_one=st.booleans())
def test_equals_exact_arithmetic(p, q, n, rounding, at_least_one):
    p = min(p, q)
    # The 6-decimal rounding can only differ from exact arithmetic within 5e-7 of an integer.
    exact = Fraction(p, q) * n
    if abs(exact - round(exact)) < Fraction(1, 10**6) and exact != round(exact):
        return
    assert count(p / q, n, rounding, at_least_one=at_least_one) == exact_count(Fraction(p, q), n, rounding,
                                                                                  at_least_one)


@settings(max_examples=200, deadline=None)
@given(level=st.floats(0.0, 1.0), n=st.integers(0, 10_000), rounding=st.sampled_from(["ceil", "floor"]))
def test_bounds_type_and_monotone(level, n, rounding):
    k = count(level, n, rounding)
    assert isinstance(k, int) and min(1, n) <= k <= n
    assert count(level, n, "floor") <= count(level, n, "ceil")
    assert count(min(1.0, level + 0.01), n, rounding) >= k


def test_float_noise_does_not_move_the_count():
    assert 0.1 * 3 > 0.3 and count(0.1, 3, "floor", at_least_one=False) == 0  # 0.30000000000000004
    assert 0.29 * 100 < 29 and count(0.29, 100, "floor") == 29  # 28.999999999999996
    assert 0.07 * 100 > 7 and count(0.07, 100) == 7


def test_a_mass_keeps_its_scale():
    """With frequency weights the size is a float mass: the count is clamped to it."""
    assert count(0.5, 0.4) == 0.4  # below one row of mass: the whole mass
    assert count(0.25, 10.0, "floor") == 2 and count(0.25, 10.0) == 3
    assert count(0.001, 10, "floor", at_least_one=False) == 0


@pytest.mark.parametrize("rounding", ["round", "nearest", ""])
def test_unknown_rounding(rounding):
    with pytest.raises(ValueError, match=exact(ROUNDING_MESSAGE, value=rounding)):
        count(0.5, 10, rounding)
