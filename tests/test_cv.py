"""QuantileClassifierCV: scikit-learn's checks, and the grid scored and refitted as documented."""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from quantile_surrogate import QuantileClassifier, QuantileClassifierCV

# No check is expected to fail (the same as QuantileClassifier: multi-class checks honour the tag).
EXPECTED_FAILED_CHECKS: dict[str, str] = {}
SMALL = QuantileClassifier(max_epochs=3, n_restarts=1, early_stopping=False)  # API checks, not accuracy


@parametrize_with_checks(
    [QuantileClassifierCV(alphas=(1e-3,), bandwidths=(0.05,), hidden_layer_sizes_grid=((),), cv=2, estimator=SMALL,
                          random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _data():
    return make_classification(300, n_features=5, weights=[0.8, 0.2], random_state=1)


def test_grid_scores_are_the_fold_metrics_and_the_best_is_refitted():
    X, y = _data()
    clf = QuantileClassifierCV(target=0.9, alphas=(1e-2, 1e-4), bandwidths=(0.05, 0.1), cv=3,
                               estimator=QuantileClassifier(max_epochs=5, n_restarts=1, early_stopping=False),
                               random_state=0).fit(X, y)
    results = clf.cv_results_
    assert len(results["mean_test_score"]) == 2 * 2 * 2
    best = int(np.argmax(results["mean_test_score"]))  # ties: the first, as documented
    assert (clf.alpha_, clf.bandwidth_, clf.hidden_layer_sizes_) == (
        results["param_alpha"][best], results["param_bandwidth"][best], results["param_hidden_layer_sizes"][best])
    # Brute force: the chosen candidate's fold scores, recomputed by hand with the same folds and seed.
    seed = clf.best_estimator_.random_state
    folds = StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y)
    params = dict(target=0.9, max_epochs=5, n_restarts=1, early_stopping=False, alpha=clf.alpha_,
                  bandwidth=clf.bandwidth_, hidden_layer_sizes=clf.hidden_layer_sizes_, random_state=seed)
    manual = [QuantileClassifier(**params).fit(X[a], y[a]).score(X[b], y[b]) for a, b in folds]
    np.testing.assert_allclose(manual, [results[f"split{k}_test_score"][best] for k in range(3)])
    # Refitted on every row: the same model as a QuantileClassifier with the chosen values.
    reference = QuantileClassifier(**params).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X), reference.decision_function(X))
    assert clf.score(X, y) == reference.score(X, y)


def test_n_jobs_gives_the_same_choice():
    X, y = _data()
    kw = dict(target=0.9, alphas=(1e-3,), bandwidths=(0.05, 0.1), hidden_layer_sizes_grid=((),), cv=2,
              estimator=QuantileClassifier(max_epochs=3, n_restarts=1, early_stopping=False), random_state=0)
    one, two = QuantileClassifierCV(n_jobs=1, **kw).fit(X, y), QuantileClassifierCV(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_allclose(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])
