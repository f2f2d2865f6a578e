"""Issue 23's benchmark in quick mode: it scores what it says, its summary's arithmetic, and its memory child.

``benchmarks/sparse_data.py`` writes docs/sparse.md's tables; a wrong metric, a mislabelled gap or a
memory ratio of the wrong quantity would make every committed number describe something else.
"""

import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.objectives import objective_metric
from tests._benchmarks import load


@pytest.fixture(scope="module")
def bench():
    return load("sparse_data")


def test_quick_rows_score_each_model_at_its_point(bench, tmp_path):
    bench.main(["--quick", "--methods", "logistic,quantile", "--out", str(tmp_path / "q.csv")])
    rows = pd.read_csv(tmp_path / "q.csv")
    assert (tmp_path / "q.md").exists() and set(rows.set) == {"text", "onehot"} and set(rows.split) == {0, 1}
    raw, y, encoder = bench.synthetic("text")
    train, test = train_test_split(np.arange(len(y)), test_size=0.5, stratify=y, random_state=1)
    enc = encoder()
    X_train, X_test = enc.fit_transform(raw[train]), enc.transform(raw[test])
    for objective, target in bench.POINTS:  # the recorded metric is the model's, refitted here
        model = QuantileClassifier(objective=objective, target=target, random_state=1, max_epochs=20)
        expected = objective_metric(y[test], model.fit(X_train, y[train]).decision_function(X_test),
                                    objective=objective, target=target)
        got = rows.query("set == 'text' and split == 1 and method == 'quantile' and objective == @objective "
                         "and target == @target").metric
        assert got.tolist() == pytest.approx([expected], abs=1e-12)
    scores = LogisticRegression(max_iter=1000).fit(X_train, y[train]).decision_function(X_test)
    logistic = rows.query("set == 'text' and split == 1 and method == 'logistic'").sort_values(["objective", "target"])
    assert logistic.metric.tolist() == pytest.approx(
        [objective_metric(y[test], scores, objective=o, target=t) for o, t in sorted(bench.POINTS)], abs=1e-12)


def test_summary_gap_is_the_paired_difference_to_the_better_logistic(bench):
    rows = [dict(set="s", split=k, method=m, objective="precision_at_rate", target=0.05, metric=v, fit_seconds=1.0,
                 start_kept=m == "quantile" and k == 0)
            for k, values in enumerate([(0.50, 0.52, 0.53), (0.40, 0.45, 0.41)])
            for m, v in zip(("logistic", "logistic_cv", "quantile"), values)]
    text = bench.summary(pd.DataFrame(rows))
    # logistic_cv has the larger mean (0.485 > 0.45): quantile - logistic_cv = +0.01 and -0.04, mean -0.015
    assert "-0.0150 vs logistic_cv (-0.0400)" in text and "| 50% |" in text


def test_memory_child_reports_the_peak_over_the_matrix(bench):
    if not sys.platform.startswith("linux"):
        pytest.skip("the memory child reads /proc/self/statm")
    result = bench.memory(2000, 500, 20000)
    assert result["nonzeros"] <= 20000 and result["rows"] == 2000
    assert result["matrix_mib"] * 2**20 == pytest.approx(result["nonzeros"] * 12 + 2001 * 4)  # float64 + int32
    assert result["ratio"] == pytest.approx((result["peak_mib"] - result["baseline_mib"]) / result["matrix_mib"])
    assert result["peak_mib"] >= result["baseline_mib"] > 0  # the sampler saw the fit


def test_the_warm_up_fits_every_method_once_untimed_before_the_timed_fits(bench, monkeypatch):
    fitted = []

    class Recorder:
        def __init__(self, method):
            self.method = method

        def fit(self, X, y):
            fitted.append((self.method, X.shape[0], X.format))
            return self

    monkeypatch.setattr(bench, "make", lambda method, *point, seed, quick: Recorder(method) if quick else None)
    bench.warm_up(["logistic", "quantile", "quantile_cv"])
    assert fitted == [("logistic", 300, "csr"), ("quantile", 300, "csr"), ("quantile_cv", 300, "csr")]
    # main() warms up before its first timed fit: the quick run's rows follow the recorded warm-up fits
    order = []
    monkeypatch.setattr(bench, "warm_up", lambda methods, points: order.append(("warm_up", tuple(methods))))
    monkeypatch.setattr(bench, "run_split", lambda *a, **k: order.append("split") or [])
    monkeypatch.setattr(bench, "summary", lambda frame: "")
    bench.main(["--quick", "--methods", "logistic"])
    assert order[0] == ("warm_up", ("logistic",)) and order[1:] == ["split"] * 4
