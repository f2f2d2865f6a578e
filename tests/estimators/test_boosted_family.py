"""QuantileClassifierCV's boosted family (issue 24): fold entries, the choice, the refit, NaN, sparse X, no LightGBM."""

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.model_selection import StratifiedKFold

from quantile_surrogate import QuantileClassifier, QuantileClassifierCV
from quantile_surrogate.estimators import _boosted_family
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier
from quantile_surrogate.objectives import objective_metric
from tests._data import sparse_classification
from tests.estimators._data import interaction as _xor, needs_backends

pytestmark = needs_backends

SMALL = dict(alphas=(1e-3,), hidden_layer_sizes_grid=((),), estimator=QuantileClassifier(max_epochs=10, n_restarts=1))
TREES = QuantileBoostingClassifier(n_estimators=20, n_quantile_estimators=10)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied scores of small folds
        yield


def test_fold_entries_are_the_boosted_estimator_fitted_on_the_fold():
    X, y = _xor(400, seed=1)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    clf = QuantileClassifierCV(target=0.9, cv=folds, boosting=TREES, random_state=0, **SMALL).fit(X, y)
    boosted = list(clf.cv_results_["param_family"]).index("boosted")
    metric = clf.selection_["metric"][boosted]  # (folds, restarts, epochs)
    seed = int(np.random.RandomState(0).randint(np.iinfo(np.int32).max))  # the CV's seed for random_state=0
    assert clf.family_ != "boosted" or clf.best_estimator_.random_state == seed
    for k, (fit, held) in enumerate(folds):
        trees = QuantileBoostingClassifier(n_estimators=20, n_quantile_estimators=10, target=0.9, random_state=seed)
        trees.fit(X[fit], y[fit])
        for column, scores in enumerate((trees._start_raw_scores(X[held]), trees.decision_function(X[held]))):
            expected = objective_metric(y[held], scores, objective="precision_at_recall", target=0.9)
            assert metric[k, 0, column] == pytest.approx(expected, abs=1e-12)
        assert np.isnan(metric[k, 0, 2:]).all()  # no other entry in this family
    assert clf.cv_results_["mean_fit_time"][boosted] > 0


def test_trees_win_an_interaction_and_are_refitted_on_every_row():
    X, y = _xor()
    clf = QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=0, **SMALL).fit(X, y)
    assert clf.family_ == "boosted" and clf.hidden_layer_sizes_ is None and clf.alpha_ is None
    sel = clf.selection_
    assert list(sel["family_within_noise"]) == [False, True]  # the linear family is clearly behind
    refit = clone_of(TREES, clf, X, y)
    np.testing.assert_array_equal(clf.decision_function(X), refit.decision_function(X))
    assert clf.threshold_ == refit.threshold_ and clf.epochs_ == refit.best_iteration_
    assert clf.score(X, y) > 0.8
    assert clf.selection_["reason"].startswith("boosted: the best held-out mean")
    results = clf.cv_results_
    np.testing.assert_array_equal(results["family_within_noise"], sel["family_within_noise"])  # one candidate each
    np.testing.assert_array_equal(results["family_noise_floor"], sel["noise_floor"])
    assert len(pd.DataFrame(results)) == 2  # still a table, as scikit-learn users read it


def clone_of(template, clf, X, y):
    """The refit the CV should have made: its seed, and no quantile rounds where the trees alone won."""
    rounds = {} if clf.cv_results_["best_epochs"][-1] > 0 else {"n_quantile_estimators": 0}
    return QuantileBoostingClassifier(**{**template.get_params(), "target": 0.9, **rounds,
                                         "random_state": clf.best_estimator_.random_state}).fit(X, y)


def test_a_linear_problem_keeps_the_simpler_family():
    rng = np.random.default_rng(2)
    y = (rng.random(600) < 0.25).astype(np.int64)
    X = rng.standard_normal((600, 5)) + 1.0 * y[:, None]  # the Bayes rule is linear
    clf = QuantileClassifierCV(target=0.9, cv=3, random_state=0, **SMALL).fit(X, y)
    assert clf.family_ == "linear" and clf.hidden_layer_sizes_ == ()


def test_nan_in_X_trains_only_the_trees_and_predicts_with_nan():
    X, y = _xor(500)
    X[::7, 2] = np.nan
    clf = QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=0, **SMALL).fit(X, y)
    assert list(clf.cv_results_["param_family"]) == ["boosted"] and clf.selection_["notes"] == [_boosted_family.NAN_NOTE]
    assert np.isfinite(clf.decision_function(X)).all()
    with pytest.raises(ValueError, match="NaN"):
        QuantileClassifierCV(target=0.9, cv=3, boosting=None, random_state=0, **SMALL).fit(X, y)
    linear = QuantileClassifierCV(target=0.9, cv=3, boosting=None, random_state=0, **SMALL).fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="NaN"):  # a torch model cannot score NaN: one clear line
        linear.predict(X)


def test_sparse_input_reaches_the_trees_as_it_is():
    X, y = sparse_classification(600, 40, seed=3)
    clf = QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=0, **SMALL).fit(X, y)
    dense = QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=0, **SMALL).fit(X.toarray(), y)
    boosted = list(clf.cv_results_["param_family"]).index("boosted")
    np.testing.assert_array_equal(clf.selection_["metric"][boosted], dense.selection_["metric"][boosted])


def test_without_lightgbm_auto_leaves_the_trees_out_with_a_note(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lightgbm" else real(name, *a))
    X, y = _xor(300)
    clf = QuantileClassifierCV(target=0.9, cv=3, random_state=0, **SMALL)
    assert not clf.__sklearn_tags__().input_tags.allow_nan
    clf.fit(X, y)
    assert "boosted" not in list(clf.cv_results_["param_family"])
    assert clf.selection_["notes"] == [_boosted_family.MISSING_NOTE]


def test_groups_and_weights_reach_the_boosted_folds_and_refit():
    X, y = _xor(600, seed=4)
    groups = np.where(np.arange(600) % 2 == 0, "a", "b")
    weight = np.random.default_rng(0).integers(1, 3, size=600).astype(float)
    clf = QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=0, **SMALL)
    clf.fit(X, y, sample_weight=weight, sensitive_features=groups)
    assert clf.family_ == "boosted" and list(clf.groups_) == ["a", "b"]
    refit = QuantileBoostingClassifier(**{**TREES.get_params(), "target": 0.9,
                                          "random_state": clf.best_estimator_.random_state,
                                          **({} if clf.cv_results_["best_epochs"][-1] > 0 else
                                             {"n_quantile_estimators": 0})})
    refit.fit(X, y, sample_weight=weight, sensitive_features=groups)
    np.testing.assert_array_equal(clf.group_thresholds_, refit.group_thresholds_)
    np.testing.assert_array_equal(clf.decision_function(X, sensitive_features=groups),
                                  refit.decision_function(X, sensitive_features=groups))


def test_same_seed_same_choice_and_scores():
    X, y = _xor(400, seed=5)
    runs = [QuantileClassifierCV(target=0.9, cv=3, boosting=TREES, random_state=3, **SMALL).fit(X, y)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].selection_["metric"], runs[1].selection_["metric"])
    np.testing.assert_array_equal(runs[0].decision_function(X), runs[1].decision_function(X))


def test_has_nan_reads_stored_values_of_sparse_input():
    X = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    assert not _boosted_family.has_nan(X)
    X.data[0] = np.nan
    assert _boosted_family.has_nan(X) and _boosted_family.has_nan(np.array([[np.nan]]))


def test_auto_leaves_the_trees_out_on_sparse_input_with_a_note():
    X, y = sparse_classification(400, 30, seed=5)
    small = dict(alphas=(1e-3,), estimator=QuantileClassifier(max_epochs=6), random_state=0)
    auto = QuantileClassifierCV(target=0.9, hidden_layer_sizes_grid=((),), **small).fit(X, y)
    assert list(auto.cv_results_["param_family"]) == ["linear"]
    assert auto.selection_["notes"] == [_boosted_family.SPARSE_TREES_NOTE]
    assert auto.selection_["reason"].startswith("linear: the only family")
    assert auto.selection_["metric"].shape[2] == 1  # one restart on sparse X
    explicit = QuantileClassifierCV(target=0.9, hidden_layer_sizes_grid=((),), boosting=None, **small).fit(X, y)
    np.testing.assert_array_equal(auto.decision_function(X), explicit.decision_function(X))
    asked = QuantileClassifierCV(target=0.9, hidden_layer_sizes_grid=((), (4,)), boosting=TREES, **small).fit(X, y)
    assert list(asked.cv_results_["param_family"]) == ["linear", "mlp", "boosted"]
    assert asked.selection_["notes"] == [] and asked.selection_["metric"].shape[2] == 1
    assert QuantileClassifierCV(target=0.9, **small).fit(X.toarray(), y).selection_["metric"].shape[2] == 3
