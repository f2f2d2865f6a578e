"""quantile_surrogate.baselines._base: the shell every baseline shares (threshold, labels, scikit-learn's
contract, refusals, determinism). Each baseline's own score is tested in its module's test file."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from quantile_surrogate import metrics
from quantile_surrogate._utils.checks import BINARY_CLASSES, NOT_BINARY_MESSAGE
from quantile_surrogate.baselines import (
    AccuracyAtTheTop,
    KarAverageSurrogate,
    LagrangianBaseline,
    LogisticRegressionBaseline,
)
from quantile_surrogate.baselines._base import UNSUPPORTED_OBJECTIVE_MESSAGE
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.estimators._threshold import ONE_CLASS_MESSAGE, UNSEEN_LABELS_MESSAGE
from quantile_surrogate.objectives.thresholds import TiedScoresWarning
from quantile_surrogate.objectives.thresholds import constraint_threshold as training_threshold
from tests._messages import exact
from tests.baselines._data import separable, small_estimators

# -- the threshold rule shared by every baseline ---------------------------------------------


def brute_force_threshold(scores, positive, objective, target):
    """Best threshold on the training data by trying every cut, predicting s > t."""
    cuts = np.concatenate([[scores.min() - 1.0], np.unique(scores)])
    n_pos, n_neg = positive.sum(), (~positive).sum()
    best = None
    for t in cuts:
        above = scores > t
        if objective == "precision_at_rate":  # a capacity: never more than K = ceil(target n) rows
            ok = above.sum() <= metrics.count_at_rate(len(scores), target)
        elif objective == "precision_at_recall":
            ok = above[positive].sum() >= target * n_pos - 1e-9
        else:
            ok = above[~positive].sum() <= target * n_neg + 1e-9
        if ok:
            # Highest feasible cut for a floor (recall); lowest feasible one for a ceiling (rate, FPR).
            if objective != "precision_at_recall":
                best = t if best is None else min(best, t)
            else:
                best = t if best is None else max(best, t)
    return best


@pytest.mark.parametrize("objective", ["precision_at_rate", "precision_at_recall", "recall_at_fpr"])
@pytest.mark.parametrize("seed", range(30))
def test_training_threshold_matches_brute_force_with_ties(objective, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 25))
    scores = rng.integers(0, 6, n).astype(float)  # many ties
    positive = rng.random(n) < 0.5
    positive[0], positive[1] = True, False
    target = float(rng.choice([0.05, 0.1, 0.3, 0.5, 0.9, 0.95]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)
        ours = training_threshold(scores, positive, objective=objective, target=target)
    reference = brute_force_threshold(scores, positive, objective, target)
    np.testing.assert_array_equal(scores > ours, scores > reference)


def test_training_threshold_rate_is_the_paper_quantile():
    scores = np.arange(20.0)
    # q(f(X), 1 - tau) with tau = 0.1: k = floor(0.9 * 20) = 18, s_(18) = 17; rows 18, 19 above it.
    assert 17.0 <= training_threshold(scores, scores > 9, objective="precision_at_rate", target=0.1) < 18.0


def test_recall_threshold_admits_fewest_negatives():
    scores = np.array([0.0, 4.9, 5.0, 10.0])
    positive = np.array([True, False, True, True])
    # Two of three positives needed: keep 10 and 5; the cut just below 5 is the negative at 4.9.
    assert 4.9 <= training_threshold(scores, positive, objective="precision_at_recall", target=0.6) < 5.0


# -- separable data: every method is perfect at the top ---------------------------------------


@pytest.mark.parametrize(
    "estimator",
    [
        LogisticRegressionBaseline(target=0.05),
        AccuracyAtTheTop(target=0.05, n_candidates=20, random_state=0),
        AccuracyAtTheTop(target=0.05, n_candidates=20, penalize="negatives", loss="logistic"),
        KarAverageSurrogate(target=0.05, max_iter=100, random_state=0),
        LagrangianBaseline(objective="precision_at_recall", target=0.5, max_iter=300, random_state=0),
    ],
    ids=["LR", "AATP", "AATP-neg-logistic", "Kar", "Eban"],
)
def test_separable_data_gives_precision_one(estimator):
    X, y = separable()
    X_test, y_test = separable(seed=1)
    clf = clone(estimator).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert clf.score(X_test, y_test) == 1.0
    assert np.all(y[clf.predict(X) == 1] == 1)


# -- sklearn conventions, bad input, determinism -----------------------------------------------


AATP_WEIGHT_EQUIVALENCE = (
    "A row repeated is several candidate points (n_candidates counts rows), and liblinear's coordinate order "
    "depends on the rows, so weights 2 and a duplicated row give other candidates and solutions; "
    "tests/cross/test_baseline_weights.py checks what the weights do promise (zero weight = dropping the row)."
)


def expected_failed_checks(est):
    failures = {}
    if est.objective != "precision_at_recall":
        failures["check_classifiers_train"] = (
            "predicts classes_[1] for only ceil(target n) rows, so accuracy on the check's balanced data stays "
            "far below its 0.83 floor, by design.")
    if isinstance(est, AccuracyAtTheTop):
        failures["check_sample_weight_equivalence_on_dense_data"] = AATP_WEIGHT_EQUIVALENCE
    return failures


@parametrize_with_checks(small_estimators(), expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_bad_input(estimator):
    X, y = separable(60)
    name = type(estimator).__name__
    not_binary = exact(NOT_BINARY_MESSAGE, name="y", accepted=BINARY_CLASSES, values=[0, 1, 2])
    with pytest.raises(ValueError, match=not_binary):
        clone(estimator).fit(X, np.arange(60) % 3)
    with pytest.raises(ValueError, match=exact(ONE_CLASS_MESSAGE, shown=[0.0], name=name)):
        clone(estimator).fit(X, np.zeros(60))
    with pytest.raises(ValueError, match="NaN"):
        bad = X.copy()
        bad[0, 0] = np.nan
        clone(estimator).fit(bad, y)
    with pytest.raises(ValueError, match="target"):
        clone(estimator).set_params(target=1.5).fit(X, y)
    with pytest.raises(ValueError, match="objective"):
        clone(estimator).set_params(objective="accuracy").fit(X, y)
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :2])
    with pytest.raises(ValueError, match=exact(UNSEEN_LABELS_MESSAGE, shown=[5, 6], classes=[0, 1])):
        fitted.score(X, y + 5)


@pytest.mark.parametrize("estimator", [AccuracyAtTheTop(), KarAverageSurrogate()], ids=lambda e: type(e).__name__)
def test_unsupported_objective_names_the_alternative(estimator):
    X, y = separable(60)
    with pytest.raises(ValueError, match=exact(UNSUPPORTED_OBJECTIVE_MESSAGE, supported=["precision_at_rate"],
                                               name=type(estimator).__name__, objective="precision_at_recall")):
        clone(estimator).set_params(objective="precision_at_recall").fit(X, y)
    assert "LogisticRegressionBaseline" in UNSUPPORTED_OBJECTIVE_MESSAGE  # the alternative


def test_not_binary_message_names_the_fix():
    assert "map the positive class to 1" in NOT_BINARY_MESSAGE


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_same_random_state_gives_identical_fit(estimator):
    X, y = make_gaussian_mixture(300, random_state=7)
    first = clone(estimator).set_params(random_state=3).fit(X, y)
    second = clone(estimator).set_params(random_state=3).fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.intercept_, second.intercept_)
    assert first.threshold_ == second.threshold_


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_clone_keeps_params_and_drops_fit(estimator):
    X, y = separable(60)
    fitted = clone(estimator).set_params(target=0.1).fit(X, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert not hasattr(copy, "coef_")


@pytest.mark.parametrize(
    "encode", [lambda y: y == 1, lambda y: np.where(y == 1, 1, -1), lambda y: np.where(y == 1, "spam", "ham")]
)
def test_label_encodings_map_through_classes(encode):
    X, y = separable(80)
    labels = encode(y)
    clf = LogisticRegressionBaseline(target=0.1).fit(X, labels)
    # The positive class is the larger label: True, 1, "spam".
    assert clf.classes_[1] == labels[y == 1][0]
    assert set(clf.predict(X).tolist()) == set(labels.tolist())
    assert clf.score(X, labels) == 1.0


