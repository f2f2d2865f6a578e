"""quantile_surrogate.estimators.calibration: GuaranteedThresholdClassifier and calibrate_threshold.

The held-out thresholds themselves (recall_threshold, fpr_threshold, rate_threshold and the
order-statistic rank) are tested in tests/objectives/test_guarantees.py; here, the estimator that
wraps them: the split, the classes, the groups and scikit-learn compatibility.
"""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks

from quantile_surrogate.estimators._groups import GROUPS_MISSING_MESSAGE, GROUPS_SHAPE_MESSAGE, GROUPS_UNSEEN_MESSAGE
from quantile_surrogate import QuantileClassifier
from quantile_surrogate.estimators.calibration import (
    GROUP_TOO_FEW_MESSAGE,
    GROUPED_ESTIMATOR_MESSAGE,
    UNKNOWN_LABELS_MESSAGE,
    GuaranteedThresholdClassifier,
    calibrate_threshold,
)
from quantile_surrogate.objectives._order_statistic_rank import TOO_FEW_MESSAGE
from quantile_surrogate.objectives.guarantees import (
    fpr_threshold,
    guaranteed_rank,
    min_calibration_size,
    rate_threshold,
    recall_threshold,
)
from tests._messages import exact


def _split_data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.2
    X = rng.normal(size=(n, 3)) + 1.5 * y[:, None]
    labels = np.where(y, "spam", "ham")
    return X[: n // 2], labels[: n // 2], X[n // 2 :], labels[n // 2 :]


def test_calibrate_threshold_wraps_a_fitted_logistic_regression():
    X_fit, y_fit, X_cal, y_cal = _split_data()
    lr = LogisticRegression().fit(X_fit, y_fit)
    coef = lr.coef_.copy()
    clf = calibrate_threshold(lr, X_cal, y_cal, constraint="recall", target=0.9, delta=0.05)
    assert np.array_equal(lr.coef_, coef)  # not refitted
    scores = lr.decision_function(X_cal)
    assert clf.threshold_ == recall_threshold(scores[y_cal == "spam"], 0.9, 0.05)
    np.testing.assert_array_equal(clf.decision_function(X_cal), scores - clf.threshold_)
    assert list(clf.classes_) == ["ham", "spam"]
    predicted = clf.predict(X_cal)
    assert set(predicted) <= {"ham", "spam"}
    recall_cal = np.mean(predicted[y_cal == "spam"] == "spam")
    assert recall_cal == clf.calibration_value_ >= 0.9
    assert clf.n_calibration_ == np.sum(y_cal == "spam")


def test_calibrate_threshold_fpr_and_rate_and_predict_proba():
    X_fit, y_fit, X_cal, y_cal = _split_data(1)
    nb = GaussianNB().fit(X_fit, y_fit)  # no decision_function: "auto" uses predict_proba
    clf = calibrate_threshold(nb, X_cal, y_cal, constraint="fpr", target=0.05)
    proba = nb.predict_proba(X_cal)[:, 1]
    assert clf.threshold_ == fpr_threshold(proba[y_cal == "ham"], 0.05)
    assert np.mean(clf.predict(X_cal)[y_cal == "ham"] == "spam") <= 0.05
    rate = calibrate_threshold(nb, X_cal, y_cal, constraint="rate", target=0.1, bound="lower")
    assert rate.threshold_ == rate_threshold(proba, 0.1, bound="lower")
    assert np.mean(rate.predict(X_cal) == "spam") >= 0.1


def test_calibrate_threshold_errors():
    X_fit, y_fit, X_cal, y_cal = _split_data(2)
    with pytest.raises(NotFittedError):
        calibrate_threshold(LogisticRegression(), X_cal, y_cal)
    lr = LogisticRegression().fit(X_fit, y_fit)
    with pytest.raises(ValueError, match=exact(TOO_FEW_MESSAGE, what="recall >= 0.95", confidence=0.95, needed=59,
                                               rows="positive rows", got=30)):
        spam = np.flatnonzero(y_cal == "spam")[:30]
        ham = np.flatnonzero(y_cal == "ham")[:100]
        rows = np.r_[spam, ham]
        calibrate_threshold(lr, X_cal[rows], y_cal[rows], target=0.95)
    with pytest.raises(ValueError, match="'constraint' parameter"):
        calibrate_threshold(lr, X_cal, y_cal, constraint="precision")
    with pytest.raises(ValueError, match=exact(UNKNOWN_LABELS_MESSAGE, unknown=["eggs"], classes=["ham", "spam"])):
        calibrate_threshold(lr, X_cal, np.where(y_cal == "ham", "eggs", y_cal))


def test_unfrozen_estimator_is_fitted_on_a_split_and_calibrated_on_the_rest():
    X_fit, y_fit, _, _ = _split_data(3)
    clf = GuaranteedThresholdClassifier(LogisticRegression(), target=0.9, calibration_size=0.4, random_state=0)
    clf.fit(X_fit, y_fit)
    assert clf.n_calibration_ == round(0.4 * np.sum(y_fit == "spam"))
    again = clone(clf).fit(X_fit, y_fit)
    assert again.threshold_ == clf.threshold_


@parametrize_with_checks(
    # target 0.5 and delta 0.5 need a single calibration row, so the checks' tiny data sets work.
    [GuaranteedThresholdClassifier(LogisticRegression(), target=0.5, delta=0.5, random_state=0)]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------- per-group guarantees

def _identity_scorer():
    """A fitted LogisticRegression whose decision_function is X[:, 0]: calibrate the scores as given."""
    model = LogisticRegression()
    model.coef_, model.intercept_, model.classes_ = np.array([[1.0]]), np.array([0.0]), np.array([0, 1])
    model.n_features_in_ = 1
    return model


GROUP_SCORES = {"a": (2.0, 1.0), "b": (1.0, 0.5)}  # positives' (mean, sd) per group; negatives ~ N(0, 1)


def _group_draw(rng, n_pos):
    """Held-out rows: ``n_pos[g]`` positives of each group and 100 negatives of each."""
    scores, y, groups = [], [], []
    for g, (mean, sd) in GROUP_SCORES.items():
        scores += [rng.normal(mean, sd, n_pos[g]), rng.normal(size=100)]
        y += [np.ones(n_pos[g], int), np.zeros(100, int)]
        groups += [np.full(n_pos[g] + 100, g)]
    return np.concatenate(scores)[:, None], np.concatenate(y), np.concatenate(groups)


def test_each_group_meets_its_recall_target_by_simulation():
    # 200 draws; group b's positives score lower and tighter, so one pooled threshold misses its
    # recall. Each group's successes are Binomial(200, p_g) with p_g >= 0.95 if the guarantee holds;
    # below the 0.1 % quantile of Binomial(200, 0.95) the implementation is wrong.
    draws, target, delta = 200, 0.9, 0.05
    n_pos = {"a": 150, "b": 40}
    rng = np.random.default_rng(20)
    scorer = _identity_scorer()
    hits = {"guaranteed": {g: 0 for g in n_pos}, "plain": {g: 0 for g in n_pos}, "pooled": {g: 0 for g in n_pos}}
    for _ in range(draws):
        X, y, groups = _group_draw(rng, n_pos)
        clf = calibrate_threshold(scorer, X, y, target=target, delta=delta, sensitive_features=groups)
        pooled = calibrate_threshold(scorer, X, y, target=target, delta=delta).threshold_
        assert list(clf.groups_) == ["a", "b"]
        for i, g in enumerate(clf.groups_):
            mean, sd = GROUP_SCORES[g]
            positives = np.sort(X[(y == 1) & (groups == g), 0])
            plain = positives[math.floor((1 - target) * n_pos[g]) - 1]  # the training-style quantile
            for name, t in (("guaranteed", clf.group_thresholds_[i]), ("plain", plain), ("pooled", pooled)):
                hits[name][g] += stats.norm.sf((t - mean) / sd) >= target
    floor = stats.binom.ppf(0.001, draws, 1 - delta)
    for g in n_pos:
        exact = stats.binom.sf(guaranteed_rank(n_pos[g], 1 - target, delta) - 1, n_pos[g], 1 - target)
        assert exact >= 1 - delta
        assert hits["guaranteed"][g] >= floor, (g, hits)
        assert hits["plain"][g] < floor, (g, hits)  # the plain per-group quantile would fail this test
    assert hits["pooled"]["b"] < floor, hits  # and so would one threshold for both groups


def test_group_thresholds_are_each_groups_own_guaranteed_threshold():
    X_fit, y_fit, X_cal, y_cal = _split_data(4)
    groups = np.where(X_cal[:, 1] > 0.5, "north", "south")
    lr = LogisticRegression().fit(X_fit, y_fit)
    clf = calibrate_threshold(lr, X_cal, y_cal, target=0.9, delta=0.1, sensitive_features=groups)
    scores = lr.decision_function(X_cal)
    assert list(clf.groups_) == ["north", "south"] and clf.threshold_ is clf.group_thresholds_
    for i, g in enumerate(clf.groups_):
        rows = (groups == g) & (y_cal == "spam")
        assert clf.group_thresholds_[i] == recall_threshold(scores[rows], 0.9, 0.1)
        assert clf.n_calibration_[i] == rows.sum()
        assert clf.calibration_value_[i] == np.mean(scores[rows] > clf.group_thresholds_[i]) >= 0.9
    # each row against its own group's threshold
    expected = scores - np.where(groups == "north", clf.group_thresholds_[0], clf.group_thresholds_[1])
    np.testing.assert_array_equal(clf.decision_function(X_cal, sensitive_features=groups), expected)
    np.testing.assert_array_equal(clf.predict(X_cal, sensitive_features=groups), np.where(expected > 0, "spam", "ham"))
    # score: precision with recall >= 0.9 in each group on these rows, by brute force (each group's top positives)
    chosen = np.zeros(len(y_cal), dtype=bool)
    for g in ("north", "south"):
        positives = np.sort(scores[(groups == g) & (y_cal == "spam")])[::-1]
        chosen |= (groups == g) & (scores >= positives[math.ceil(0.9 * positives.size) - 1])
    assert clf.score(X_cal, y_cal, sensitive_features=groups) == np.mean(y_cal[chosen] == "spam")
    with pytest.raises(ValueError, match=exact(GROUPS_MISSING_MESSAGE, count=2)):
        clf.predict(X_cal)
    with pytest.raises(ValueError, match=exact(GROUPS_UNSEEN_MESSAGE, shown=["west"], known=["north", "south"])):
        clf.predict(X_cal[:3], sensitive_features=["north", "west", "south"])
    # FPR per group reads each group's negatives
    fpr = calibrate_threshold(lr, X_cal, y_cal, constraint="fpr", target=0.1, sensitive_features=groups)
    for i, g in enumerate(fpr.groups_):
        assert fpr.group_thresholds_[i] == fpr_threshold(scores[(groups == g) & (y_cal == "ham")], 0.1)


def test_a_group_with_too_few_held_out_rows_is_named_with_the_number_needed():
    X_fit, y_fit, X_cal, y_cal = _split_data(5)
    lr = LogisticRegression().fit(X_fit, y_fit)
    groups = np.array(["big"] * len(y_cal), dtype=object)
    spam = np.flatnonzero(y_cal == "spam")
    groups[spam[:20]] = "small"  # 20 positives: recall 0.95 at delta 0.05 needs 59
    with pytest.raises(ValueError, match=exact(GROUP_TOO_FEW_MESSAGE, group="small", got=20, rows="positive rows",
                                               what="recall >= 0.95", confidence=0.95, needed=59)):
        calibrate_threshold(lr, X_cal, y_cal, target=0.95, sensitive_features=groups)
    with pytest.raises(ValueError, match=exact(GROUP_TOO_FEW_MESSAGE, group="small", got=0, rows="negative rows",
                                               what="FPR <= 0.05", confidence=0.95, needed=59)):
        calibrate_threshold(lr, X_cal, y_cal, constraint="fpr", target=0.05, sensitive_features=groups)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, shape=(3,), n=len(y_cal))):
        calibrate_threshold(lr, X_cal, y_cal, sensitive_features=["a", "b", "c"])


def test_unfrozen_estimator_with_groups_holds_out_each_group_in_proportion():
    X, y, _, _ = _split_data(6, n=6000)
    groups = np.where(np.arange(len(y)) % 4 == 0, 1, 2)  # integer labels work too
    clf = GuaranteedThresholdClassifier(LogisticRegression(), target=0.9, calibration_size=0.4, random_state=0)
    clf.fit(X, y, sensitive_features=groups)
    assert clf.groups_.tolist() == [1, 2]
    for i, g in enumerate(clf.groups_):
        assert abs(clf.n_calibration_[i] - 0.4 * np.sum((y == "spam") & (groups == g))) <= 1
    again = clone(clf).fit(X, y, sensitive_features=groups)
    np.testing.assert_array_equal(again.group_thresholds_, clf.group_thresholds_)
    plain = clone(clf).fit(X, y)  # refitting without groups goes back to one threshold
    assert plain.groups_ is None and np.ndim(plain.threshold_) == 0


@pytest.mark.parametrize("constraint,target,side", [("recall", 0.95, "spam"), ("fpr", 0.05, "ham")])
def test_a_group_with_exactly_the_minimum_held_out_rows_is_accepted(constraint, target, side):
    # recall 0.95 (or FPR 0.05) at delta 0.05 needs 59 rows of A: 59 is enough, 58 is not.
    X_fit, y_fit, X_cal, y_cal = _split_data(5)
    lr = LogisticRegression().fit(X_fit, y_fit)
    scores = lr.decision_function(X_cal)
    needed = min_calibration_size(1 - target if constraint == "recall" else target, 0.05)
    assert needed == 59
    rows = np.flatnonzero(y_cal == side)
    groups = np.array(["big"] * len(y_cal), dtype=object)
    groups[rows[:needed]] = "small"
    clf = calibrate_threshold(lr, X_cal, y_cal, constraint=constraint, target=target, sensitive_features=groups)
    assert clf.groups_.tolist() == ["big", "small"] and clf.n_calibration_.tolist()[1] == needed
    small = scores[rows[:needed]]
    expected = recall_threshold(small, target, 0.05) if constraint == "recall" else fpr_threshold(small, target, 0.05)
    assert clf.group_thresholds_[1] == expected
    groups[rows[needed - 1]] = "big"
    with pytest.raises(ValueError, match=exact(GROUP_TOO_FEW_MESSAGE, group="small", got=needed - 1,
                                               rows="positive rows" if side == "spam" else "negative rows",
                                               what=f"recall >= {target:g}" if side == "spam" else f"FPR <= {target:g}",
                                               confidence=0.95, needed=needed)):
        calibrate_threshold(lr, X_cal, y_cal, constraint=constraint, target=target, sensitive_features=groups)


def test_an_estimator_fitted_with_groups_is_named_not_asked_for_the_groups_given():
    # It used to fail with "pass `sensitive_features=`" although they were passed to calibrate_threshold.
    X_fit, y_fit, X_cal, y_cal = _split_data(7, n=400)
    fitted = QuantileClassifier(max_epochs=2, random_state=0).fit(
        X_fit, y_fit, sensitive_features=np.arange(len(y_fit)) % 2)
    for groups in (np.arange(len(y_cal)) % 2, None):
        with pytest.raises(ValueError, match=exact(GROUPED_ESTIMATOR_MESSAGE, name="QuantileClassifier")):
            calibrate_threshold(fitted, X_cal, y_cal, target=0.8, sensitive_features=groups)
    plain = QuantileClassifier(max_epochs=2, random_state=0).fit(X_fit, y_fit)
    assert calibrate_threshold(plain, X_cal, y_cal, target=0.8).groups_ is None  # without groups it calibrates
