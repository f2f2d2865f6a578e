"""quantile_surrogate.baselines.logistic: scikit-learn's logistic regression with the threshold moved."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from quantile_surrogate import metrics
from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate.datasets import make_gaussian_mixture


def test_logistic_matches_sklearn():
    X, y = make_gaussian_mixture(500, random_state=1)
    ours = LogisticRegressionBaseline(C=0.3, objective="precision_at_recall", target=0.9).fit(X, y)
    reference = LogisticRegression(C=0.3, solver="lbfgs", max_iter=1000, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=1e-6, atol=1e-8)
    # The ranking is sklearn's: the decision function differs by the threshold only.
    np.testing.assert_allclose(ours.decision_function(X) + ours.threshold_, reference.decision_function(X))


@pytest.mark.parametrize(
    "objective, target", [("precision_at_rate", 0.05), ("precision_at_recall", 0.95), ("recall_at_fpr", 0.1)]
)
def test_logistic_meets_the_constraint_on_training_data(objective, target):
    X, y = make_gaussian_mixture(600, random_state=2)
    clf = LogisticRegressionBaseline(objective=objective, target=target).fit(X, y)
    predicted = clf.predict(X) == 1
    if objective == "precision_at_rate":
        assert predicted.sum() == metrics.count_at_rate(len(y), target)
    elif objective == "precision_at_recall":
        assert predicted[y == 1].mean() >= target
        # And it is tight: the next score up loses a positive.
        s = clf.decision_function(X)
        assert (s[y == 1] > s[s > 0].min()).mean() < target
    else:
        assert predicted[y == 0].mean() <= target
    assert clf.score(X, y) == pytest.approx(
        {"precision_at_rate": metrics.precision_at_rate,
         "precision_at_recall": metrics.precision_at_recall,
         "recall_at_fpr": metrics.recall_at_fpr}[objective](y, clf.decision_function(X), target)
    )
