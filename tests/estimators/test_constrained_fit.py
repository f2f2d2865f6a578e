"""QuantileClassifier(constraints=...): issue 25's contract, the report, the group attribute's two roles, bad input."""

import warnings

import numpy as np
import pytest

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.constraints import gap, rate


def _data(n=1500, seed=0):
    """Group "b" is 30 % of the rows and its positives rank lower: one threshold leaves a recall and a rate gap."""
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.3, "b", "a")
    X = rng.normal(size=(n, 4))
    X[:, 0] += (g == "a") * 1.5
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] + X[:, 1] - 1.5)))).astype(int)
    return X, y, g


def _gap(decision, y, g, rate_name):
    among = y == 1 if rate_name == "recall" else np.ones(len(y), dtype=bool)
    values = [(decision > 0)[(g == k) & among].mean() for k in np.unique(g)]
    return max(values) - min(values)


@pytest.mark.parametrize(("objective", "target", "rate_name"), [("precision_at_recall", 0.8, "recall"),
                                                                ("precision_at_rate", 0.1, "positive_rate")])
def test_the_issue_contract_one_group_blind_threshold_that_narrows_the_gap(objective, target, rate_name):
    X, y, g = _data()
    free = QuantileClassifier(objective=objective, target=target, random_state=0).fit(X, y)
    clf = QuantileClassifier(objective=objective, target=target, constraints=[gap(rate_name, at_most=0.05)],
                             random_state=0).fit(X, y, sensitive_features=g)
    decision = clf.decision_function(X)  # no group needed
    assert np.ndim(clf.threshold_) == 0 and clf.groups_ is None
    np.testing.assert_array_equal(clf.constraint_groups_, ["a", "b"])
    assert _gap(free.decision_function(X), y, g, rate_name) > 0.1
    assert _gap(decision, y, g, rate_name) < 0.05 + 0.02
    report = clf.constraint_report_
    assert report["checked_on"] == "held_out" and report["feasible"]
    assert report["constraints"][0]["constraint"] == f"{rate_name} gap <= 0.05"
    with pytest.raises(ValueError, match="fitted without `sensitive_features`"):
        clf.decision_function(X, sensitive_features=g)


def test_the_report_without_held_out_rows_is_the_numpy_value_at_the_threshold():
    X, y, g = _data(600)
    constraints = [gap("recall", at_most=0.05), rate("fpr", at_most=0.3), rate("recall", at_least=0.6, in_each_group=True)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = QuantileClassifier(target=0.8, constraints=constraints, early_stopping=False, max_epochs=30,
                                 random_state=0).fit(X, y, sensitive_features=g)
    decision = clf.decision_function(X)
    entries = clf.constraint_report_["constraints"]
    # one warning for each constraint not met on the training rows (none were held out), naming it
    unmet = [e["constraint"] for e in entries if not e["met"]]
    assert unmet and [str(w.message).split("'")[1] for w in caught if "training rows" in str(w.message)] == unmet
    assert clf.constraint_report_["checked_on"] == "train" and entries[0]["held_out"] is None
    recalls = [float((decision > 0)[(g == k) & (y == 1)].mean()) for k in ("a", "b")]
    assert entries[0]["train"] == pytest.approx(max(recalls) - min(recalls), abs=1e-4)
    assert entries[1]["train"] == pytest.approx(float((decision > 0)[y == 0].mean()), abs=1e-4)
    assert entries[2]["train"] == pytest.approx(recalls, abs=1e-4)
    assert entries[2]["met"] == (min(recalls) >= 0.6)


def test_the_report_says_how_the_logistic_start_was_reweighted_by_group():
    X, y, g = _data()
    clf = QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.05)], max_epochs=3,
                             random_state=0).fit(X, y, sensitive_features=g)
    start = clf.constraint_report_["start"]
    assert start["kind"] == "logistic" and start["held"] and start["refits"] > 0 and start["margin"] == 0.01
    # Group "b"'s positives rank lower, so they weigh more; a recall gap leaves the negatives' weights at 1; the
    # cells' geometric mean is 1.
    weights = start["weights"]
    assert list(weights) == ["a", "b"] and weights["b"]["positives"] > 1 > weights["a"]["positives"]
    assert weights["a"]["negatives"] == weights["b"]["negatives"] == 1.0
    product = np.prod([w for cell in weights.values() for w in cell.values()])
    assert product == pytest.approx(1.0, abs=1e-3)
    times = "once" if start["refits"] == 1 else f"{start['refits']} times"
    assert start["description"] == (f"the logistic start refitted {times} with row weights by (group, "
                                    "class) until it had every gap 0.01 inside its bound on the training rows")
    # A constraint that is not a gap of a class rate leaves the start plain, and the report says so.
    plain = QuantileClassifier(target=0.8, constraints=[rate("recall", at_least=0.6, in_each_group=True)],
                               max_epochs=3, random_state=0).fit(X, y, sensitive_features=g)
    start = plain.constraint_report_["start"]
    assert start["kind"] == "logistic" and start["refits"] == 0 and start["weights"] is None and start["held"] is None
    assert start["description"].startswith("the plain logistic start (reweighted only where every constraint is a gap")


def test_same_seed_same_model_and_no_randomised_prediction():
    X, y, g = _data(500)
    fits = [QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.05)], max_epochs=15,
                               random_state=3).fit(X, y, sensitive_features=g) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].decision_function(X), fits[1].decision_function(X))
    np.testing.assert_array_equal(fits[0].predict(X), fits[0].predict(X))
    assert fits[0].constraint_report_ == fits[1].constraint_report_


def test_a_constraint_not_met_held_out_is_warned_about_and_reported():
    X, y, g = _data(400)
    with pytest.warns(UserWarning, match="'recall gap <= 0' could not be met: held out"):
        clf = QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.0)], max_epochs=2, n_restarts=1,
                                 random_state=0).fit(X, y, sensitive_features=g)
    report = clf.constraint_report_
    assert not report["feasible"] and not report["constraints"][0]["feasible"]
    assert "no epoch met every constraint" in report["chosen"]


def test_a_group_too_small_to_split_trains_on_every_row_and_warns_on_the_training_rows():
    # Group "c" holds 3 positives: no validation split keeps rows of A of every group on both sides. Such a fit fell
    # into the K-fold selection, whose folds drop the constraints' groups, and raised "pass `groups=`".
    X, y, g = _data(600)
    g = g.astype(object)
    g[np.flatnonzero(y == 1)[:3]] = "c"
    g[np.flatnonzero(y == 0)[:20]] = "c"
    with pytest.warns(UserWarning, match=r"'recall gap <= 0' is not met on the training rows: .*no validation split"):
        clf = QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.0)], max_epochs=5, n_restarts=1,
                                 random_state=0).fit(X, y, sensitive_features=g)
    report = clf.constraint_report_
    assert report["checked_on"] == "train" and clf.selection_ is None and not report["constraints"][0]["met"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a constraint that holds on the training rows: no warning
        loose = QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=1.0)], max_epochs=5, n_restarts=1,
                                   random_state=0).fit(X, y, sensitive_features=g)
    assert loose.constraint_report_["constraints"][0]["met"]
    with pytest.warns(UserWarning, match=r"no rows were held out to check it on \(early_stopping=False\)"):
        QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.0)], max_epochs=5, n_restarts=1,
                           early_stopping=False, random_state=0).fit(X, y, sensitive_features=g)


def test_group_thresholds_true_keeps_one_threshold_per_group_and_the_constraints():
    X, y, g = _data(600)
    clf = QuantileClassifier(objective="precision_at_rate", target=0.1, group_thresholds=True, max_epochs=10,
                             constraints=[rate("fpr", at_most=0.2)], random_state=0).fit(X, y, sensitive_features=g)
    assert clf.threshold_.shape == (2,)
    np.testing.assert_array_equal(clf.constraint_groups_, clf.groups_)
    with pytest.raises(ValueError, match="every row needs its group's threshold"):
        clf.predict(X)
    rates = [(clf.predict(X, sensitive_features=g) == 1)[g == k].mean() for k in ("a", "b")]
    assert rates == pytest.approx([0.1, 0.1], abs=0.01)


def test_bad_input_gets_one_clear_message():
    X, y, g = _data(300)
    fit = lambda **kw: QuantileClassifier(target=0.8, max_epochs=2, random_state=0, **kw)  # noqa: E731
    c = [gap("recall", at_most=0.05)]
    with pytest.raises(ValueError, match="shape"):
        fit(constraints=c).fit(X, y, sensitive_features=g[:-1])
    with pytest.raises(ValueError, match="NaN"):
        fit(constraints=c).fit(X, y, sensitive_features=np.where(g == "a", 0.0, np.nan))
    with pytest.raises(TypeError, match="must be a list of constraints"):
        fit(constraints=["recall gap <= 0.05"]).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="pass `sensitive_features=` to fit"):
        fit(group_thresholds=True).fit(X, y)
    with pytest.raises(ValueError, match="no constraint is measured per group"):
        fit(constraints=[rate("fpr", at_most=0.3)]).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="is measured per group"):
        fit(constraints=c).fit(X, y)
    with pytest.raises(ValueError, match="one group only"):
        fit(constraints=c).fit(X, y, sensitive_features=np.full(len(y), "a"))
    with pytest.raises(ValueError, match="cannot hold together"):
        fit(constraints=[rate("recall", at_least=0.9), rate("positive_rate", at_most=0.01)]).fit(X, y)
    with pytest.raises(ValueError, match="at_most"):
        gap("recall", at_most=1.5)
    with pytest.raises(ValueError, match="group 2 has no row that the rate counts"):
        fit(constraints=c, early_stopping=False).fit(X, y, sensitive_features=np.where(y == 1, g, np.where(g == "a", "a", "c")))


def test_without_constraints_nothing_changes():
    X, y, g = _data(400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = QuantileClassifier(target=0.8, max_epochs=5, random_state=0).fit(X, y, sensitive_features=g)
    assert clf.constraint_report_ is None and clf.constraint_groups_ is None and clf.threshold_.shape == (2,)


def test_quantile_classifier_cv_refuses_a_base_with_constraints():
    from quantile_surrogate import QuantileClassifierCV

    X, y, g = _data(200)
    base = QuantileClassifier(constraints=[gap("recall", at_most=0.05)])
    with pytest.raises(ValueError, match="does not train constraints yet"):
        QuantileClassifierCV(estimator=base, boosting=None).fit(X, y)


def test_a_precision_floor_in_each_group_lifts_the_group_one_threshold_selects_worst_from():
    # Group "b"'s negatives score 1 higher on the informative column (the second column tells the groups apart):
    # at a 20 % rate one group-blind threshold leaves "b" at precision 0.685 on fresh rows of the same law.
    def data(seed, n=3000):
        rng = np.random.default_rng(seed)
        g = np.where(rng.random(n) < 0.5, "b", "a")
        y = (rng.random(n) < 0.3).astype(int)
        X = np.c_[rng.normal(size=n) + 2.0 * y + 1.0 * (g == "b") * (1 - y), (g == "b") + 0.0, rng.normal(size=(n, 2))]
        return X, y, g

    def precision(model, X, y, g):
        selected = model.decision_function(X) > 0
        return [float(y[selected & (g == k)].mean()) for k in ("a", "b")]

    (X, y, g), fresh = data(0), data(1)
    free = QuantileClassifier(objective="precision_at_rate", target=0.2, random_state=0).fit(X, y)
    floor = [rate("precision", at_least=0.7, in_each_group=True)]
    clf = QuantileClassifier(objective="precision_at_rate", target=0.2, constraints=floor,
                             random_state=0).fit(X, y, sensitive_features=g)
    assert precision(free, *fresh)[1] < 0.69
    assert min(precision(clf, *fresh)) > 0.72  # one threshold, no group at prediction
    entry = clf.constraint_report_["constraints"][0]
    assert entry["constraint"] == "precision >= 0.7 in each group" and clf.constraint_report_["feasible"]
    assert min(entry["train"]) >= 0.7


def test_the_report_curves_are_the_multiplier_steps_inputs_and_outputs():
    # Each multiplier is the projected step on its curve's excess (value - bound for a ceiling or a gap,
    # bound - value for a floor); without held-out rows the last curve value is the report's training value.
    X, y, g = _data(600)
    constraints = [gap("recall", at_most=0.05), rate("recall", at_least=0.75, in_each_group=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = QuantileClassifier(target=0.8, constraints=constraints, early_stopping=False, max_epochs=12,
                                 constraint_step_size=0.7, random_state=0).fit(X, y, sensitive_features=g)
    report = clf.constraint_report_
    gap_entry, floor_entry = report["constraints"]
    assert report["held_out_excess"] is None
    assert len(gap_entry["train_curve"]) == len(gap_entry["multiplier_curve"]) == clf.n_iter_ == 12
    previous = 0.0
    for value, multiplier in zip(gap_entry["train_curve"], gap_entry["multiplier_curve"]):
        assert multiplier == pytest.approx(max(0.0, previous + 0.7 * (value - 0.05)), abs=1e-12)
        previous = multiplier
    previous = np.zeros(2)
    for values, multipliers in zip(floor_entry["train_curve"], floor_entry["multiplier_curve"]):
        expected = np.maximum(0.0, previous + 0.7 * (0.75 - np.asarray(values)))
        np.testing.assert_allclose(multipliers, expected, atol=1e-12)
        previous = expected
    assert gap_entry["train_curve"][-1] == pytest.approx(gap_entry["train"], abs=1e-4)  # the report rounds to 4
    assert gap_entry["multiplier_curve"][-1] == gap_entry["multiplier"]


def test_the_report_keeps_the_selections_held_out_excess_of_every_epoch():
    X, y, g = _data()
    clf = QuantileClassifier(objective="precision_at_rate", target=0.1, constraints=[gap("positive_rate", at_most=0.05)],
                             random_state=0).fit(X, y, sensitive_features=g)
    report = clf.constraint_report_
    excess = np.asarray(report["held_out_excess"])
    assert excess.shape == (len(report["constraints"][0]["train_curve"]) + 1,)  # epoch 0: the start
    assert int((excess <= 0).sum()) == report["feasible_epochs"]
    assert excess[report["best_epoch"]] <= 0
