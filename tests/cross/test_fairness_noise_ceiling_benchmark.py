"""``benchmarks/fairness_noise_ceiling.py`` (issue 25): the no-gap share against an exact two-group sum, and a run."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from tests._benchmarks import load

bench = load("fairness_noise_ceiling")
GERMAN = bench.DATA_DIR / "german_credit" / "german_credit.csv"


def exact_two_groups(n1, n2, p, limit):
    """P(|K1/n1 - K2/n2| <= limit) by summing the two binomials' joint probabilities: the brute-force reference."""
    k1, k2 = np.arange(n1 + 1)[:, None], np.arange(n2 + 1)[None, :]
    joint = binom.pmf(k1, n1, p) * binom.pmf(k2, n2, p)
    return float(joint[np.abs(k1 / n1 - k2 / n2) <= limit + 1e-12].sum())


@pytest.mark.parametrize("n1, n2, p", [(10, 14, 0.8), (40, 110, 0.8), (95, 405, 0.1)])
def test_the_simulated_share_matches_the_exact_two_group_sum(n1, n2, p):
    draws = 200_000
    hits = bench.within_no_gap([n1, n2], p, 0.07, draws, np.random.default_rng(1))
    exact = exact_two_groups(n1, n2, p, 0.07)
    assert abs(hits.mean() - exact) < 4 * np.sqrt(exact * (1 - exact) / draws) + 1e-12


def test_edge_cases_and_bad_counts():
    rng = np.random.default_rng(0)
    assert bench.within_no_gap([3, 5, 7], 0.5, 1.0, 100, rng).all()  # a gap never exceeds 1
    assert bench.within_no_gap([5, 5], 1.0, 0.0, 100, rng).all()  # every row counted: no noise at all
    for counts in ([10], [10, 0], [[1, 2]]):
        with pytest.raises(ValueError, match="at least two positive group counts"):
            bench.within_no_gap(counts, 0.5, 0.07, 10, rng)


def test_counted_rows_follow_the_task():
    y = np.array([1, 1, 0, 0, 1, 0, 1])
    groups = np.array(["a", "b", "a", "b", "a", "a", "b"])
    test = np.array([0, 1, 2, 3, 4, 6])
    assert bench.counted_rows(y, groups, test, "eo") == [2, 2]  # positives of a: rows 0, 4; of b: 1, 6
    assert bench.counted_rows(y, groups, test, "dp") == [3, 3]


def test_eodds_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--tasks", "eodds"])
    assert "its false-positive rate is not fixed by the task" in capsys.readouterr().err
    with pytest.raises(ValueError, match="pick from eo, dp"):
        bench.ceiling(["german"], ["eo", "eodds"], splits=1)


def test_a_run_on_german_credit_is_seeded_and_written_once(tmp_path, capsys):
    if not GERMAN.exists():
        pytest.skip(f"the shared data ({GERMAN}) is absent")
    first = bench.ceiling(["german/sex"], ["eo", "dp"], splits=2, draws=4000)
    pd.testing.assert_frame_equal(first, bench.ceiling(["german/sex"], ["eo", "dp"], splits=2, draws=4000))
    eo = first[first.task == "eo"]
    assert list(eo.counts) == ["54;95", "54;95"]  # stratified halves: the same counts every split
    # Each split's share agrees with the exact sum for its counts; the chance of >= 80 % of two splits is both.
    exact = exact_two_groups(54, 95, 0.8, 0.07)
    assert np.allclose(eo.within, exact, atol=4 * np.sqrt(exact * (1 - exact) / 4000))
    assert eo.at_least_target.iloc[0] == pytest.approx(exact ** 2, abs=0.03)
    out = tmp_path / "ceiling.csv"
    bench.main(["--data", "german/sex", "--splits", "2", "--draws", "1000", "--out", str(out)])
    assert "| german / sex, eo | 54, 95 |" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit):
        bench.main(["--data", "german/sex", "--splits", "2", "--out", str(out)])
    assert "exists" in capsys.readouterr().err
