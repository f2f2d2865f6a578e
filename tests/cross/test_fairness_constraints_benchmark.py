"""``benchmarks/fairness_constraints.py`` (issue 25): its measures, its target lines, and a quick run on German credit.

The runs read ``../shared/data`` and are skipped where that folder is absent; the ``qc`` run is
skipped until ``QuantileClassifier`` takes ``constraints``.
"""

import numpy as np
import pandas as pd
import pytest

from tests._benchmarks import load

bench = load("fairness_constraints")
GERMAN = bench.DATA_DIR / "german_credit" / "german_credit.csv"


def needs_data():
    if not GERMAN.exists():
        pytest.skip(f"the shared data ({GERMAN}) is absent")


def test_the_gap_is_the_largest_minus_the_smallest_group_rate():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0])
    groups = np.array(["a", "a", "b", "b", "a", "a", "b", "b", "c", "c"])
    predicted = np.array([1, 1, 1, 0, 1, 0, 0, 0, 0, 0], dtype=bool)
    eo = bench.measures(predicted, y, groups, "eo")  # recalls a 1, b 1/2, c 0
    assert eo["gap"] == pytest.approx(1.0) and eo["rate"] == pytest.approx(3 / 5)
    assert eo["precision"] == pytest.approx(3 / 4) and not eo["violation_ok"]
    assert eo["group_rates"] == "a=1.0000;b=0.5000;c=0.0000"
    dp = bench.measures(predicted, y, groups, "dp")  # rates a 3/4, b 1/4, c 0
    assert dp["gap"] == pytest.approx(0.75) and dp["rate"] == pytest.approx(0.4) == dp["positive_rate"]
    close = bench.measures(np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0], dtype=bool), y, groups, "eo")
    assert close["gap"] == pytest.approx(0.0) and close["violation_ok"]


def test_two_constraints_need_both_gaps_within_the_bound():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0])
    groups = np.array(["a", "a", "b", "b", "a", "a", "b", "b", "c", "c"])
    # Recall 1 in every group, false positive rates a 1/2, b 0, c 0: the recall gap is 0, the FPR gap 1/2.
    predicted = np.array([1, 1, 1, 1, 1, 0, 0, 0, 1, 0], dtype=bool)
    eodds = bench.measures(predicted, y, groups, "eodds")
    assert eodds["recall_gap"] == 0.0 and eodds["false_positive_rate_gap"] == pytest.approx(0.5)
    assert eodds["gap"] == pytest.approx(0.5) and not eodds["violation_ok"] and eodds["rate"] == 1.0
    eo = bench.measures(predicted, y, groups, "eo")
    assert eo["gap"] == 0.0 and eo["violation_ok"] and "recall_gap" not in eo
    assert bench.TASKS["eodds"]["gaps"] == ("recall", "false_positive_rate")


def test_targets_say_met_or_missed_with_the_numbers():
    rows = []
    for split in range(5):
        for method, precision, ok, seconds in (("qc", 0.60, split != 0, 1.0), ("lr_groups", 0.61, True, 0.1),
                                                ("eg", 0.62 + 0.01 * split, True, 4.0)):
            rows.append(dict(data="d", group="g", task="eo", method=method, split=split, side="test",
                             precision=precision, rate=0.8, gap=0.0, violation_ok=ok, fit_seconds=seconds,
                             n_train=10, feasible=True if method == "qc" else None))
    lines = "\n".join(bench.targets(pd.DataFrame(rows)))
    assert "(1) test gap <= 0.07 on >= 80 % of splits: on 80%: met" in lines
    assert "(2) mean precision >= `lr_groups` -0.02: qc 0.6000, lr_groups 0.6100, paired difference -0.0100" in lines
    assert "(3) mean precision >= `eg`: qc 0.6000, eg 0.6400, paired difference -0.0400 ± 0.0071: missed" in lines
    assert "(4) qc fit time <= `eg`'s / 3: 1.00 s against 4.00 s (ratio 0.25): met" in lines
    assert "(3')" not in lines  # no eg_ties rows
    frame = pd.DataFrame(rows).pipe(lambda f: pd.concat([f, f.assign(side="train")]))
    assert "| qc | 0.600 ± 0.000 |" in bench.summary(frame) and "| 1.00 |" in bench.summary(frame)
    assert bench.targets(pd.DataFrame(rows)[lambda f: f.method != "qc"]) == ["- targets: no `qc` rows"]


def test_unknown_names_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "lr,bogus"])
    assert "--methods: unknown ['bogus']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--data", "german/income"])
    assert "--data: unknown ['german/income']" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown"):
        bench.run(["german"], methods=["svm"])
    assert bench.pairs_of("german,adult/race") == ["german/sex", "german/age", "adult/race"]


def test_output_is_never_written_into_the_data_folder_nor_over_a_file(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "lr", "--data-dir", str(tmp_path), "--out", str(tmp_path / "a.csv")])
    assert "inside the data folder" in capsys.readouterr().err
    (tmp_path / "b.md").write_text("kept")
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "lr", "--out", str(tmp_path / "b.csv")])
    assert "exists" in capsys.readouterr().err and (tmp_path / "b.md").read_text() == "kept"


def test_quick_run_of_the_baselines(tmp_path, capsys):
    needs_data()
    out = tmp_path / "rows.csv"
    bench.main(["--quick", "--methods", "lr,lr_groups,eg", "--out", str(out)])
    printed = capsys.readouterr().out
    rows = pd.read_csv(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv", "rows.md"]  # no temporary file left
    assert out.with_suffix(".md").read_text() in printed
    # 2 pairs x 2 splits x 2 tasks x 3 methods x 2 sides
    assert len(rows) == 48 and set(rows.group) == {"sex", "age"} and set(rows.n_train) == {500}
    train = rows[rows.side == "train"]
    assert (train[train.task == "eo"].rate >= 0.8).all()  # every one-threshold method meets recall 0.8 on its rows
    assert (train[(train.method == "lr") & (train.task == "dp")].rate <= 0.1).all()
    lr_groups = train[train.method == "lr_groups"]
    assert (lr_groups.gap < 0.02).all()  # one threshold per group: the gap is a rounding of group sizes
    assert printed.count("- targets: no `qc` rows") == 4
    with pytest.raises(SystemExit):  # a second run refuses to overwrite
        bench.main(["--quick", "--methods", "lr", "--out", str(out)])


def test_quick_run_of_qc():
    needs_data()
    if not bench.has_constraints():
        pytest.skip("QuantileClassifier does not take constraints= yet")
    frame = bench.main(["--quick", "--data", "german/sex", "--methods", "lr_groups,eg,qc"])
    qc = frame[frame.method == "qc"]
    assert len(qc) == 2 * 2 * 2 and qc.precision.between(0, 1).all() and qc.gap.between(0, 1).all()
    assert qc.feasible.isna().all() or qc.feasible.isin([True, False]).all()
    text = bench.summary(frame)
    for number in ("(1)", "(2)", "(3)", "(4)"):
        assert text.count(f"- {number} ") == 2  # eo and dp


def test_quick_run_of_two_constraints_at_once():
    needs_data()
    frame = bench.main(["--quick", "--data", "german/sex", "--tasks", "eodds", "--methods", "lr,eg,qc",
                        "--splits", "1"])
    assert set(frame.task) == {"eodds"} and len(frame) == 3 * 2
    both = frame[["recall_gap", "false_positive_rate_gap"]].max(axis=1)
    np.testing.assert_allclose(frame.gap, both)  # the reported gap is the larger of the two, for every method
    assert "recall and false_positive_rate gaps <= 0.05" in bench.summary(frame)
    assert "| false_positive_rate gap (test) |" in bench.summary(frame)
