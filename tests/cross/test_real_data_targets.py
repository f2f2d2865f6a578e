"""The issue-12 target tables read from a per-split benchmark CSV (benchmarks/real_data_targets.py), and the
behaviour check that re-runs committed rows and compares them (benchmarks/real_data.py --compare)."""

import numpy as np
import pandas as pd
import pytest

from tests._benchmarks import load

targets = load("real_data_targets")


def frame(values: dict, name="s", objective="precision_at_rate", target=0.05):
    """Rows of real_data.py's CSV from {method: per-split values}."""
    return pd.DataFrame([dict(set=name, objective=objective, target=target, method=m, split=k, value=v, n_train=100)
                         for m, vs in values.items() for k, v in enumerate(vs)])


def test_paired_difference_is_the_mean_and_standard_error_of_the_split_differences():
    wide = frame({"a": [0.5, 0.7, 0.6], "b": [0.4, 0.4, 0.6]}).pivot_table(index="split", columns="method",
                                                                             values="value")
    mean, se = targets.paired(wide, "a", "b")
    diff = np.array([0.1, 0.3, 0.0])
    assert mean == pytest.approx(diff.mean()) and se == pytest.approx(diff.std(ddof=1) / np.sqrt(3))


@pytest.mark.parametrize(("mean", "se", "within_se", "missed"), [
    (-0.011, 0.02, False, True),   # more than 0.01 below
    (-0.009, 0.02, False, False),
    (-0.002, 0.001, True, True),   # more than one s.e. below
    (-0.002, 0.001, False, False),
    (-0.001, 0.001, True, False),  # exactly one s.e.: met
])
def test_verdict_marks_exactly_the_misses(mean, se, within_se, missed):
    assert (targets.verdict(mean, se, within_se) == " ✗") is missed


def test_the_cv_is_compared_with_the_family_whose_test_mean_is_higher():
    rows = frame({"quantile_cv": [0.80, 0.80, 0.80], "quantile_linear": [0.70, 0.95, 0.70],
                  "quantile_mlp": [0.82, 0.82, 0.82], "logistic": [0.7, 0.95, 0.7]})
    table = targets.tables(rows)
    # MLP's mean 0.82 beats the linear 0.783: CV - MLP = -0.02 on every split, a miss.
    assert "-0.0200 ± 0.0000 ✗ (MLP)" in table
    assert "CV − better of linear/MLP: met on 0 of 1 sets (missed: s)" in table
    assert "| s | 100 | +0.0000 ± 0.0000 |" in table  # QC - logistic


def test_issue24_table_compares_with_lightgbm_and_the_best_family_on_common_splits():
    rows = frame({"quantile_cv": [0.80, 0.80, 0.80, 0.9], "lightgbm": [0.80, 0.82, 0.81, np.nan],
                  "quantile_linear": [0.7, 0.7, 0.7], "quantile_mlp": [0.75, 0.75, 0.75],
                  "qb_lightgbm": [0.83, 0.81, 0.82]})
    rows = rows.dropna()
    table = targets.tables(rows)
    # Split 3 has only the CV: left out. CV - LightGBM = (0, -0.02, -0.01): -0.01; the best family is the trees
    # (0.82), CV - trees = -0.02 on the mean: a miss.
    assert "| s | 3 | 0.800 | 0.810 | 0.700 | 0.750 | 0.820 |" in table
    assert "-0.0100 ± 0.0058 |" in table and "-0.0200 ± 0.0058 ✗ (trees) |" in table
    assert "at least −0.005 on 0 of 1 sets; more than 0.01 below on 0." in table
    assert "CV − best family: more than 0.01 below on 1 (s)." in table


def test_a_file_can_be_read_for_some_methods_only(tmp_path):
    rows = frame({"quantile_cv": [0.5, 0.6], "lightgbm": [0.4, 0.4]})
    rows.to_csv(tmp_path / "a.csv", index=False)
    assert set(targets.read(f"{tmp_path / 'a.csv'}:lightgbm").method) == {"lightgbm"}
    assert set(targets.read(str(tmp_path / "a.csv")).method) == {"quantile_cv", "lightgbm"}


def test_benchmark_refuses_an_unknown_method(capsys):
    with pytest.raises(SystemExit):
        load("real_data").main(["--methods", "logistic,bogus"])
    assert "unknown ['bogus']" in capsys.readouterr().err



def test_points_are_parsed_and_a_bad_one_is_one_line_naming_the_option(capsys):
    bench = load("real_data")
    assert bench.operating_points("precision_at_rate:0.01, precision_at_recall:0.98") == (
        ("precision_at_rate", 0.01), ("precision_at_recall", 0.98))
    for bad, why in (("precision_at_rate", "could not convert"), ("bogus:0.1", "must be one of"), (" , ", "at least one")):
        with pytest.raises(SystemExit):
            bench.main(["--points", bad])
        err = capsys.readouterr().err
        assert "--points" in err and why in err and "Traceback" not in err


def test_points_replace_the_operating_points_of_every_row():
    rows = load("real_data").run(datasets=("ionosphere",), quick=True, methods=("logistic",),
                                 points=(("precision_at_rate", 0.19),))
    assert set(zip(rows.objective, rows.target)) == {("precision_at_rate", 0.19)}


def test_several_csv_files_are_read_as_one(tmp_path, capsys):
    linear = frame({"quantile_linear": [0.5, 0.6], "logistic": [0.5, 0.5]})
    (tmp_path / "a.csv").write_text(linear[linear.split == 0].to_csv(index=False))
    (tmp_path / "b.csv").write_text(linear[linear.split == 1].to_csv(index=False))
    targets.main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    assert "(2 splits)" in capsys.readouterr().out


# --- the behaviour check: benchmarks/real_data.py --compare -------------------------------------------------------

real_data = load("real_data")


def committed(values: dict, name="s"):
    """Committed rows as real_data.py writes them, fit_seconds and the boosting column included."""
    rows = frame(values, name=name)
    return rows.assign(fit_seconds=1.0, quantile_rounds=np.nan, source_rows=200)


def test_compare_ignores_the_timing_and_equal_nans():
    old = committed({"quantile_linear": [0.5, 0.6], "logistic": [0.4, 0.4]})
    new = old.assign(fit_seconds=99.0)  # timings never repeat; quantile_rounds NaN on both sides
    report, ok = real_data.compare(new, old, atol=1e-10)
    assert ok and "max abs diff over every compared column: 0" in report
    assert "fit_seconds" not in report.split("not compared")[0]


@pytest.mark.parametrize(("column", "delta", "ok"), [
    ("value", 1e-11, True),    # within the tolerance
    ("value", 1e-9, False),    # above it
    ("n_train", 1, False),     # every numeric column counts, not only the metric
    ("value", np.nan, False),  # a NaN against a number is an infinite difference
])
def test_compare_fails_above_the_tolerance_in_any_numeric_column(column, delta, ok):
    old = committed({"quantile_linear": [0.5, 0.6]})
    new = old.copy()
    new.loc[1, column] = new.loc[1, column] + delta
    report, result = real_data.compare(new, old, atol=1e-10)
    assert result is ok
    assert ("EQUAL" in report) is ok


def test_compare_fails_on_a_rerun_row_without_a_committed_twin():
    old = committed({"quantile_linear": [0.5, 0.6]})
    new = committed({"quantile_linear": [0.5, 0.6, 0.7]})  # split 2 was never committed
    report, ok = real_data.compare(new, old)
    assert not ok and "1 re-run rows have no committed twin" in report


def test_compare_matches_rows_by_key_not_by_position():
    old = committed({"quantile_linear": [0.5, 0.6], "logistic": [0.4, 0.3]})
    report, ok = real_data.compare(old.iloc[::-1].reset_index(drop=True), old)
    assert ok and "compared 4 rows" in report


def test_compare_reruns_a_written_csv_and_exits_zero(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    real_data.main(["--quick", "--methods", "logistic", "--out", str(out)])
    with pytest.raises(SystemExit) as exit_:
        real_data.main(["--quick", "--compare", str(out)])  # methods and sets taken from the CSV
    assert exit_.value.code == 0
    assert "EQUAL within tolerance" in capsys.readouterr().out
    changed = pd.read_csv(out).assign(value=lambda rows: rows.value + 1e-6)
    changed.to_csv(tmp_path / "changed.csv", index=False)
    with pytest.raises(SystemExit) as exit_:
        real_data.main(["--quick", "--compare", str(tmp_path / "changed.csv")])
    assert exit_.value.code == 1
