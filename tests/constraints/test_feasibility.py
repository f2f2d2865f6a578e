"""The feasibility program (constraints/_feasibility.py) on precision floors, against what the counts allow."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.constraints import check_satisfiable, rate


@settings(max_examples=60, deadline=None)
@given(n=st.integers(10, 400), share=st.floats(0.01, 0.99), c=st.floats(0.01, 0.99), v=st.floats(0.0, 1.0))
def test_a_precision_floor_at_a_fixed_rate_is_refused_exactly_when_no_selection_reaches_it(n, share, c, v):
    # At a positive rate c (c n rows selected, a randomised classifier may select fractions), the best
    # precision selects positives first: min(1, P / (c n)).
    labels = np.arange(n) < max(1, round(share * n))
    best = min(1.0, labels.sum() / (c * n))
    if abs(best - v) < 1e-6:
        return  # on the boundary the program's tolerance decides
    if v > best:
        with pytest.raises(ValueError, match=r"\['precision >= .*'\] cannot hold together"):
            check_satisfiable([rate("precision", at_least=v)], "positive_rate", c, labels)
    else:
        check_satisfiable([rate("precision", at_least=v)], "positive_rate", c, labels)


def test_a_precision_floor_in_each_group_counts_every_group():
    # Group 1 has no positive: any row it selects is a false positive, so it selects none and group 0 (100 rows,
    # 30 positives) carries a 20 % rate of 200 rows alone: 40 rows, precision at most 30 / 40.
    labels = np.r_[np.arange(100) < 30, np.zeros(100, dtype=bool)]
    groups = np.r_[np.zeros(100, dtype=int), np.ones(100, dtype=int)]
    check_satisfiable([rate("precision", at_least=0.74, in_each_group=True)], "positive_rate", 0.2, labels, groups)
    with pytest.raises(ValueError, match="cannot hold together"):
        check_satisfiable([rate("precision", at_least=0.76, in_each_group=True)], "positive_rate", 0.2, labels, groups)
    # A recall fixed at 0.9 selects 27 positives and may select no negative: any floor up to 1 can hold.
    check_satisfiable([rate("precision", at_least=1.0, in_each_group=True)], "recall", 0.9, labels, groups)
