"""``benchmarks/precision_floors.py`` (issue 25): its measures, its floor, and a quick run on German credit.

The quick run reads ``../shared/data`` and is skipped where that folder is absent.
"""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from tests._benchmarks import load

bench = load("precision_floors")


def test_the_least_precise_group_among_those_that_select_a_row():
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    groups = np.array(["a", "a", "b", "b", "b", "c", "c", "c"])
    predicted = np.array([1, 1, 1, 1, 1, 0, 0, 0], dtype=bool)  # a 1/2, b 2/3, c selects nothing
    row = bench.measures(predicted, y, groups, floor=0.6)
    assert row["worst"] == pytest.approx(0.5) and row["precision"] == pytest.approx(3 / 5)
    assert row["rate"] == pytest.approx(5 / 8) and not row["ok"]  # 0.5 < 0.6 - 0.02
    assert row["group_precisions"] == "a=0.5000;b=0.6667"
    assert bench.measures(predicted, y, groups, floor=0.52)["ok"]


def test_the_floor_is_the_out_of_fold_precision_at_the_rate_less_the_margin():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + rng.normal(size=400) > 1.0).astype(int)
    # Each row scored by the model of the folds that left it out; the top 10 % of those scores; less the margin.
    scores = np.empty(len(y))
    for fit_rows, held in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        scores[held] = LogisticRegression(solver="newton-cholesky", max_iter=1000).fit(
            X[fit_rows], y[fit_rows]).decision_function(X[held])
    top = scores >= np.sort(scores)[-40]  # the top 40 rows of 400 (no ties)
    assert bench.floor_of(X, y, seed=0) == math.floor(100 * (y[top].mean() - bench.MARGIN) + 1e-9) / 100


def test_a_quick_run_keeps_its_rows_and_says_how_often_the_floor_held():
    if not (bench.DATA_DIR / "german_credit" / "german_credit.csv").exists():
        pytest.skip("the shared data is absent")
    frame = bench.run(pairs="german/sex", splits=1, quick=True)
    assert len(frame) == 3 * 2 and set(frame.method) == set(bench.METHODS)
    assert frame.floor.nunique() == 1 and 0 < frame.floor.iloc[0] < 1
    test = frame[frame.side == "test"]
    assert (test.ok == (test.worst >= test.floor - bench.SLACK)).all()
    assert "share test >= floor - 0.02" in bench.summary(frame)
