"""The shared thresholded-classifier base: one decision_function / predict / score for every estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from quantile_surrogate import GuaranteedThresholdClassifier, QuantileClassifier
from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate.estimators._threshold import ThresholdedClassifier
from quantile_surrogate.objectives import objective_metric


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] + 0.8 * rng.standard_normal(n) > 1.0).astype(int)
    return X, y


ESTIMATORS = [
    QuantileClassifier(target=0.8, max_epochs=5, n_restarts=1, random_state=0),
    LogisticRegressionBaseline(objective="precision_at_recall", target=0.8),
    GuaranteedThresholdClassifier(LogisticRegression(), constraint="recall", target=0.8, random_state=0),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_thresholded_classifier_shares_the_base(estimator):
    assert isinstance(estimator, ThresholdedClassifier)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_score_rejects_labels_not_seen_in_fit(estimator):
    # The copies used to drift: one score rejected unseen labels, another did not.
    X, y = _data()
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match="not seen in fit"):
        fitted.score(X, y + 5)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_predict_is_the_sign_of_decision_function_and_score_is_the_metric(estimator):
    X, y = _data()
    labels = np.where(y == 1, "fraud", "ok")  # classes_ = ["fraud", "ok"]: "ok" is the positive class
    fitted = clone(estimator).fit(X, labels)
    decision = fitted.decision_function(X)
    np.testing.assert_array_equal(fitted.predict(X), np.where(decision > 0, "ok", "fraud"))
    expected = objective_metric((labels == "ok").astype(int), decision, objective="precision_at_recall", target=0.8)
    assert fitted.score(X, labels) == expected


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_sample_weight_in_score_is_refused_by_name(estimator):
    X, y = _data()
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match="sample_weight.*" + type(estimator).__name__):
        fitted.score(X, y, sample_weight=np.ones(len(y)))


def test_groups_at_predict_for_a_model_fitted_without_them_is_refused():
    X, y = _data()
    fitted = LogisticRegressionBaseline(objective="precision_at_recall", target=0.8).fit(X, y)
    with pytest.raises(ValueError, match="fitted without `groups`"):
        fitted.predict(X, groups=np.zeros(len(y)))
