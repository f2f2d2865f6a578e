"""Issue 21's benchmarks in quick mode: the replay of the shipped rule is the estimator, and the paper table's arithmetic.

``benchmarks/selection_rules.py`` records candidates outside the estimator and replays rules on
them; its ``shipped`` rule must choose what ``QuantileClassifier`` itself chooses, or every table
it makes would describe some other code. ``benchmarks/paper_defaults.py`` must score what it says.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.datasets import load_ionosphere
from quantile_surrogate.experiments.paper import PAPER_TABLES, PROTOCOLS
from quantile_surrogate.objectives import objective_metric
from tests._benchmarks import load


def estimator_values(split, max_epochs, learning_rate=0.1):
    X, y = load_ionosphere()
    protocol = PROTOCOLS["ionosphere"]
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=1 - protocol.train_fraction, stratify=y,
                                                        random_state=split)
    values = {}
    for tau in protocol.taus:
        model = QuantileClassifier(objective="precision_at_rate", target=tau, bandwidth=protocol.bandwidth,
                                   max_epochs=max_epochs, learning_rate=learning_rate, random_state=split
                                   ).fit(X_train, y_train)
        values[tau] = objective_metric(y_test, model.decision_function(X_test), objective="precision_at_rate",
                                       target=tau)
    return values


@pytest.mark.parametrize("learning_rate", [0.1, 2.0])
def test_the_replayed_shipped_rule_is_the_estimators_choice(tmp_path, learning_rate):
    rules = load("selection_rules")
    rules.main(["collect", "--suite", "paper", "--sets", "ionosphere", "--splits", "1", "--max-epochs", "5",
                "--learning-rate", str(learning_rate), "--n-jobs", "1", "--out", str(tmp_path / "recorded")])
    rules.main(["evaluate", str(tmp_path / "recorded"), "--n-jobs", "1", "--out", str(tmp_path / "rows.csv")])
    rows = pd.read_csv(tmp_path / "rows.csv")
    shipped = rows[(rows.rule == "shipped") & (rows.start == "base")].set_index("target")["value"]
    expected = estimator_values(0, 5, learning_rate)
    assert shipped.to_dict() == pytest.approx(expected, abs=1e-12)
    assert (tmp_path / "rows.md").read_text().count("shipped") >= 2  # in both tables
    assert set(rows.rule) == set(rules.RULES)


def test_paper_defaults_scores_and_tabulates_what_it_says(tmp_path, capsys):
    bench = load("paper_defaults")
    out = tmp_path / "paper.csv"
    frame = bench.main(["--quick", "--sets", "ionosphere", "--out", str(out)])
    assert pd.read_csv(out).shape == frame.shape and out.with_suffix(".md").exists()
    ours = frame[frame.method == "quantile_defaults"].set_index("tau")["value"]
    X, y = load_ionosphere()
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=0.3, stratify=y, random_state=0)
    model = QuantileClassifier(objective="precision_at_rate", target=0.05, bandwidth=0.05, max_epochs=5, n_restarts=1,
                               random_state=0).fit(X_train, y_train)
    assert ours[0.05] == objective_metric(y_test, model.decision_function(X_test), objective="precision_at_rate",
                                          target=0.05)
    gap = np.mean([ours[t] - PAPER_TABLES["ionosphere"]["Q3"][t][0] for t in ours.index])
    assert f"ionosphere: mean gap to Q3 {gap:+.3f}" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # never overwrites a result
        bench.main(["--quick", "--sets", "ionosphere", "--out", str(out)])


def test_paper_defaults_changes_the_parameters_it_names_and_gives_the_gaps_standard_error(tmp_path, capsys):
    bench = load("paper_defaults")
    frame = bench.main(["--quick", "--sets", "ionosphere", "--set", "alpha=0.1", "--set", "init=random"])
    X, y = load_ionosphere()
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=0.3, stratify=y, random_state=0)
    model = QuantileClassifier(objective="precision_at_rate", target=0.14, bandwidth=0.05, max_epochs=5, n_restarts=1,
                               alpha=0.1, init="random", random_state=0).fit(X_train, y_train)
    ours = frame[frame.method == "quantile_defaults"].set_index("tau")["value"]
    assert ours[0.14] == objective_metric(y_test, model.decision_function(X_test), objective="precision_at_rate",
                                          target=0.14)
    printed = capsys.readouterr().out
    assert "QuantileClassifier parameters changed: {'alpha': 0.1, 'init': 'random'}" in printed
    assert "| set | tau | paper Q3 | changed | logistic |" in printed
    for bad in (["--set", "no_such=1"], ["--set", "alpha"], ["--sets", "cover"]):  # refused before any fit
        with pytest.raises(SystemExit):
            bench.main(["--quick", *bad])
    # The set's standard error is over the splits' own gaps (each split's mean over the taus), not over taus.
    q3 = PAPER_TABLES["housing"]["Q3"]
    rows = [dict(set="housing", split=split, tau=tau, method=method, value=value, decided_by=None)
            for split, shift in ((0, 0.1), (1, -0.3)) for tau in q3
            for method, value in (("quantile_defaults", q3[tau][0] + shift), ("logistic", 0.0))]
    text = bench.table(pd.DataFrame(rows))
    assert "housing: mean gap to Q3 -0.100 (standard error over the 2 splits 0.200)" in text


def test_the_paired_set_timing_fits_both_codes_fit_by_fit(tmp_path, capsys):
    cost = load("selection_cost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 3))
    y = (X[:, 0] + rng.normal(size=160) > 1.2).astype(np.int64)
    np.savez(tmp_path / "tiny.npz", X=X, y=y)
    times = cost.paired_set_times("HEAD", ["tiny"], splits=1, repeats=1, data=str(tmp_path))
    assert sorted(times) == [("tiny", "precision_at_rate", 0), ("tiny", "precision_at_recall", 0)]
    assert all(here > 0 and there > 0 for here, there in times.values())
    cost.print_set_times(times, "HEAD")
    table = capsys.readouterr().out
    total_here, total_there = (sum(side[i] for side in times.values()) for i in (0, 1))
    assert f"| all | 2 | {total_here:.2f} | {total_there:.2f} | **{total_here / total_there:.3f}** |" in table
    with pytest.raises(SystemExit):  # --sets needs a commit to time against
        cost.main(["--sets", "tiny"])
    with pytest.raises(SystemExit):  # and files to read
        cost.main(["--sets", "tiny,absent", "--reference-commit", "HEAD", "--data", str(tmp_path)])
    assert "--sets: no absent.npz in" in capsys.readouterr().err
