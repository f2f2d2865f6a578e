"""quantile_surrogate.objectives._order_statistic_rank: the guaranteed rank and the held-out size it needs.

Against Beta/Binomial brute force (Wilks 1941: P(U_(k) <= b) = P(Binomial(n, b) >= k)).
"""

import pytest
from scipy import stats

from quantile_surrogate._utils.checks import NUMBER_TYPE_MESSAGE, TARGET_RANGE_MESSAGE
from quantile_surrogate.objectives import guarantees
from quantile_surrogate.objectives._order_statistic_rank import (
    DELTA_MESSAGE,
    N_TYPE_MESSAGE,
    TOO_FEW_MESSAGE,
    guaranteed_rank,
    min_calibration_size,
)

from tests._messages import exact


def brute_rank(n, tail, delta):
    """Largest k with P(U_(k) <= tail) >= 1 - delta, U_(k) ~ Beta(k, n - k + 1); 0 if none."""
    best = 0
    for k in range(1, n + 1):
        if stats.beta.cdf(tail, k, n - k + 1) >= 1 - delta:
            best = k
    return best


@pytest.mark.parametrize("n", [1, 2, 10, 59, 60, 100, 257, 1000])
@pytest.mark.parametrize("tail", [0.01, 0.05, 0.1, 0.3, 0.5])
@pytest.mark.parametrize("delta", [0.01, 0.05, 0.2])
def test_rank_matches_beta_brute_force(n, tail, delta):
    expected = brute_rank(n, tail, delta)
    if expected == 0:
        assert n < min_calibration_size(tail, delta)
        with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what=f"a rank with tail {tail:g}", confidence=1 - delta,
                                                   needed=min_calibration_size(tail, delta), rows="rows", got=n)):
            guaranteed_rank(n, tail, delta)
    else:
        assert n >= min_calibration_size(tail, delta)
        assert guaranteed_rank(n, tail, delta) == expected


@pytest.mark.parametrize("tail, delta, expected", [(0.05, 0.05, 59), (0.01, 0.05, 299), (0.1, 0.1, 22), (0.5, 0.5, 1)])
def test_min_calibration_size(tail, delta, expected):
    # (1 - tail)^n <= delta < (1 - tail)^(n - 1)
    assert min_calibration_size(tail, delta) == expected
    assert (1 - tail) ** expected <= delta
    assert expected == 1 or (1 - tail) ** (expected - 1) > delta


def test_the_public_names_are_these_functions():
    assert guarantees.guaranteed_rank is guaranteed_rank
    assert guarantees.min_calibration_size is min_calibration_size


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: guaranteed_rank(10.0, 0.5), TypeError, exact(N_TYPE_MESSAGE, type_name="float")),
        (lambda: guaranteed_rank(True, 0.5), TypeError, exact(N_TYPE_MESSAGE, type_name="bool")),
        (lambda: guaranteed_rank(100, 1.0), ValueError, exact(TARGET_RANGE_MESSAGE, name="tail", value=1.0)),
        (lambda: guaranteed_rank(100, 0.5, 0.0), ValueError, exact(DELTA_MESSAGE, value=0.0)),
        (lambda: min_calibration_size(0.05, "0.05"), TypeError, exact(NUMBER_TYPE_MESSAGE, name="delta", type_name="str")),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()
