"""QuantileBoostingClassifier (quantile_surrogate.estimators.boosted): scikit-learn checks, the rounds it
keeps, reproducibility, groups, its refusals, and the real-data benchmark's quick run.

The objectives it boosts are tested in tests/boosting/.
"""

from __future__ import annotations

import importlib.util
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from quantile_surrogate.estimators import boosted
from quantile_surrogate.estimators._groups import GROUPS_MISSING_MESSAGE
from quantile_surrogate.estimators.boosted import FORM_MESSAGE, QuantileBoostingClassifier
from tests._messages import exact
from tests.estimators._data import lgb, needs_backends, xgb
from tests.estimators._data import tabular as _tabular


# -- QuantileBoostingClassifier -----------------------------------------------------------------------
# One entry per check expected to fail, with its reason; none does. The multi-class checks honour
# tags.classifier_tags.multi_class = False and check that fit refuses more than two classes; the NaN
# checks honour tags.input_tags.allow_nan = True (both backends route missing values). The two skips
# pytest reports are scikit-learn's own (array API input, run only with SCIPY_ARRAY_API=1).
EXPECTED_FAILED_CHECKS: dict[str, str] = {}

SMALL = dict(n_estimators=5, n_quantile_estimators=3, validation_splits=1, random_state=0)


@parametrize_with_checks([QuantileBoostingClassifier(**SMALL), QuantileBoostingClassifier(backend="xgboost", **SMALL)]
                         if lgb is not None else [],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@needs_backends
def test_param_validation():
    check_param_validation("QuantileBoostingClassifier", QuantileBoostingClassifier(**SMALL))


@needs_backends
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_without_quantile_rounds_it_is_the_log_loss_model_with_a_moved_threshold(backend):
    X, y = _tabular()
    clf = QuantileBoostingClassifier(backend=backend, n_estimators=12, n_quantile_estimators=0, learning_rate=0.2,
                                     random_state=3).fit(X, y)
    if backend == "lightgbm":
        reference = lgb.train({"objective": "binary", "learning_rate": 0.2, "seed": 3, "verbose": -1,
                               "deterministic": True, "force_col_wise": True}, lgb.Dataset(X, y), 12)
        raw = reference.predict(X, raw_score=True)
    else:
        reference = xgb.train({"objective": "binary:logistic", "learning_rate": 0.2, "seed": 3}, xgb.DMatrix(X, y), 12)
        raw = reference.predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(clf.decision_function(X) + clf.threshold_, raw, rtol=1e-6, atol=1e-6)
    assert clf.best_iteration_ == 0 and clf.n_logloss_estimators_ == 12


@needs_backends
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_fit_meets_the_constraint_selects_rounds_and_round_trips_through_text(backend, tmp_path):
    X, y = _tabular(1200, seed=5)
    clf = QuantileBoostingClassifier(target=0.9, backend=backend, n_estimators=20, random_state=0).fit(X, y)
    curve = clf.validation_curve_
    assert curve.shape == (21, 2)  # after 0 (the log-loss start), 1, ..., 20 quantile rounds: none stopped early
    best = np.flatnonzero(curve[:, 0] == curve[:, 0].max())
    # The best mean held-out metric, ties by the held-out loss, but the log-loss start wins its ties.
    expected = 0 if best[0] == 0 else best[np.argmin(curve[best, 1])]
    assert clf.best_iteration_ == expected
    trees = clf.n_logloss_estimators_ + clf.best_iteration_
    if backend == "lightgbm":
        raw = clf.booster_.predict(X, raw_score=True)
    else:
        raw = clf.booster_.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    # The threshold, brute force: k = ceil(0.9 |A|) positives above it, midway from the k-th largest
    # positive score down to the next lower score of any row; exactly those k positives are predicted positive.
    positive = np.sort(raw[y == 1])[::-1]
    k = math.ceil(0.9 * positive.size)
    kth = positive[k - 1]
    assert clf.threshold_ == 0.5 * (kth + raw[raw < kth].max())
    assert (clf.predict(X)[y == 1] == 1).sum() == (positive >= kth).sum() == k
    np.testing.assert_allclose(clf.decision_function(X), raw - clf.threshold_, rtol=0, atol=1e-12)
    if backend == "lightgbm":
        assert clf.booster_.num_trees() == trees
        copy = lgb.Booster(model_str=clf.booster_.model_to_string())
        np.testing.assert_allclose(copy.predict(X, raw_score=True), raw, rtol=0, atol=1e-12)
    else:
        assert clf.booster_.num_boosted_rounds() == trees
        copy = xgb.Booster()
        copy.load_model(bytearray(clf.booster_.save_raw("json")))
        np.testing.assert_allclose(copy.predict(xgb.DMatrix(X), output_margin=True), raw, rtol=1e-6)


@needs_backends
def test_without_early_stopping_every_quantile_round_is_kept():
    X, y = _tabular()
    clf = QuantileBoostingClassifier(n_estimators=5, n_quantile_estimators=4, early_stopping=False,
                                     random_state=0).fit(X, y)
    assert clf.best_iteration_ == 4 and clf.validation_curve_ is None and clf.booster_.num_trees() == 9


@needs_backends
@pytest.mark.parametrize("n_positive,expected", [(60, 0.3), (200, 0.15), (2000, 0.05)])
def test_auto_bandwidth_puts_about_sixty_rows_of_a_in_the_window(n_positive, expected):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2500, 3))
    y = np.zeros(2500, dtype=int)
    y[rng.choice(2500, n_positive, replace=False)] = 1
    clf = QuantileBoostingClassifier(n_estimators=3, n_quantile_estimators=1, early_stopping=False).fit(X, y)
    assert clf.bandwidth_ == pytest.approx(expected)  # 30 / |A| clipped to [0.05, 0.3]
    clf = QuantileBoostingClassifier(objective="precision_at_rate", target=0.05, n_estimators=3, n_quantile_estimators=1,
                                     early_stopping=False).fit(X, y)
    assert clf.bandwidth_ == 0.05  # A is every row
    fixed = QuantileBoostingClassifier(bandwidth=0.1, n_estimators=3, n_quantile_estimators=1,
                                       early_stopping=False).fit(X, y)
    assert fixed.bandwidth_ == 0.1


@needs_backends
@pytest.mark.parametrize("raised, expected", [(None, 0), (4, 4)])
def test_quantile_rounds_that_only_tie_the_log_loss_start_are_dropped(monkeypatch, raised, expected):
    # Every round's held-out metric ties the start's and its held-out loss falls: the start wins the
    # tie (0 rounds), however much lower the loss; one round that raises the metric is kept.
    class Tied(boosted.HeldOutCurve):
        def values(self):
            values = super().values()
            values[:, 0] = values[0, 0]
            values[:, 1] = np.linspace(1.0, 0.0, len(values))
            if raised is not None:
                values[raised, 0] += 0.01
            return values

    monkeypatch.setattr(boosted, "HeldOutCurve", Tied)
    X, y = _tabular(600, seed=4)
    clf = QuantileBoostingClassifier(n_estimators=6, n_quantile_estimators=6, validation_splits=2,
                                     n_iter_no_change=None, random_state=0).fit(X, y)
    assert len(clf.validation_curve_) == 7 and clf.best_iteration_ == expected
    assert clf.booster_.num_trees() == 6 + expected


@needs_backends
def test_auto_bandwidth_follows_the_smallest_groups_rows_of_a():
    # Group "a" has 150 positives (30 / 150 = 0.2), group "b" 300 (0.1), both 450 (0.067): the smaller
    # group's threshold needs the wider window, so the auto bandwidth is 0.2.
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(150), np.zeros(300), np.ones(300), np.zeros(300)].astype(int)
    groups = np.r_[np.full(450, "a"), np.full(600, "b")]
    X = rng.standard_normal((len(y), 3)) + y[:, None]
    clf = QuantileBoostingClassifier(n_estimators=3, n_quantile_estimators=1, early_stopping=False,
                                     random_state=0).fit(X, y, sensitive_features=groups)
    assert clf.bandwidth_ == pytest.approx(0.2)


@needs_backends
def test_without_refit_the_first_splits_model_is_kept_and_cut_at_the_selected_round():
    X, y = _tabular(1500, seed=9)
    params = dict(n_estimators=10, n_quantile_estimators=15, validation_splits=1, n_iter_no_change=None,
                  random_state=0)
    kept = QuantileBoostingClassifier(refit=False, **params).fit(X, y)
    refitted = QuantileBoostingClassifier(refit=True, **params).fit(X, y)
    assert kept.best_iteration_ == refitted.best_iteration_  # the same selection
    assert len(kept.validation_curve_) == 16  # no early stop: every round recorded
    assert kept.booster_.num_trees() == 10 + kept.best_iteration_
    assert not np.allclose(kept.decision_function(X), refitted.decision_function(X))  # 80 % of the rows vs all


@needs_backends
def test_above_the_single_split_size_the_default_refits_on_every_row(monkeypatch):
    # Issue 24: above 10,000 rows (one validation split) the default kept the split's model, trained on 80 %
    # of the rows; it now refits there too, and "auto" means the same.
    monkeypatch.setattr(boosted, "AUTO_SINGLE_SPLIT_ROWS", 1000)
    X, y = _tabular(1500, seed=9)
    params = dict(n_estimators=10, n_quantile_estimators=15, n_iter_no_change=None, random_state=0)
    scores = {refit: QuantileBoostingClassifier(refit=refit, **params).fit(X, y).decision_function(X)
              for refit in (True, "auto", False)}
    default = QuantileBoostingClassifier(**params).fit(X, y)
    assert len(default.validation_curve_) == 16  # one split's curve: the single-split path was taken
    np.testing.assert_array_equal(default.decision_function(X), scores[True])
    np.testing.assert_array_equal(scores["auto"], scores[True])
    assert not np.allclose(scores[False], scores[True])
    start = lgb.LGBMClassifier(n_estimators=10, random_state=0, verbose=-1, deterministic=True).fit(X, y)
    assert default.best_iteration_ > 0  # quantile rounds were kept on top of ...
    np.testing.assert_allclose(default.booster_.predict(X, raw_score=True, num_iteration=10),  # ... LightGBM's
                               start.predict(X, raw_score=True), atol=1e-12)  # log-loss trees on every row


@needs_backends
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_reproducible_with_random_state_and_pickles(backend):
    X, y = _tabular()
    params = dict(backend=backend, n_estimators=8, n_quantile_estimators=5, random_state=7,
                  backend_params={"subsample": 0.7, "subsample_freq": 1} if backend == "lightgbm"
                  else {"subsample": 0.7})
    first = QuantileBoostingClassifier(**params).fit(X, y)
    second = clone(first).fit(X, y)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    restored = pickle.loads(pickle.dumps(first))
    np.testing.assert_array_equal(restored.decision_function(X), first.decision_function(X))


@needs_backends
def test_groups_get_their_own_thresholds_and_missing_values_are_allowed():
    X, y = _tabular(1000, seed=8)
    X[::17, 2] = np.nan
    groups = np.where(X[:, 0] > 0, "a", "b")
    clf = QuantileBoostingClassifier(target=0.8, n_estimators=10, random_state=0).fit(X, y, sensitive_features=groups)
    predicted = clf.predict(X, sensitive_features=groups) == 1
    for g in clf.groups_:
        assert predicted[(y == 1) & (groups == g)].mean() >= 0.8
    assert clf.threshold_.shape == (2,)
    with pytest.raises(ValueError, match=exact(GROUPS_MISSING_MESSAGE, count=2)):
        clf.predict(X)


@needs_backends
def test_a_form_the_objective_lacks_is_refused():
    X, y = _tabular(200)
    with pytest.raises(ValueError, match=exact(FORM_MESSAGE, forms=["fp"], objective="precision_at_recall", form="tp")):
        QuantileBoostingClassifier(form="tp").fit(X, y)


# -- the real-data benchmark, quickly ---------------------------------------------------------------
@needs_backends
def test_real_data_benchmark_quick_run():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_data.py"
    spec = importlib.util.spec_from_file_location("real_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frame = module.run(quick=True)
    assert set(frame.method) == set(module.METHODS)
    assert frame["value"].between(0, 1).all()
    table = module.summary(frame)
    assert "| lightgbm |" in table and "precision at recall 0.9" in table


@needs_backends
def test_a_one_dimensional_x_at_predict_is_one_line_not_the_whole_array():
    from quantile_surrogate.estimators._threshold import NOT_2D_MESSAGE
    from tests._messages import exact

    X, y = _tabular(300, seed=2)
    fitted = QuantileBoostingClassifier(n_estimators=3, n_quantile_estimators=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=exact(NOT_2D_MESSAGE, ndim=1, shape=(X.shape[1],))):
        fitted.predict(X[0])


@needs_backends
def test_sparse_input_is_zeros_for_lightgbm_and_missing_for_xgboost():
    # LightGBM reads a CSR matrix's unstored entries as zeros: the same model as on the dense array. XGBoost
    # reads them as missing (its own convention): the same model as XGBoost's on that CSR matrix.
    from tests._data import sparse_classification

    X, y = sparse_classification(600, 30, seed=2)
    params = dict(n_estimators=10, n_quantile_estimators=5, random_state=0)
    on_csr = QuantileBoostingClassifier(**params).fit(X, y)
    on_dense = QuantileBoostingClassifier(**params).fit(X.toarray(), y)
    np.testing.assert_array_equal(on_csr.decision_function(X), on_dense.decision_function(X.toarray()))
    start = QuantileBoostingClassifier(backend="xgboost", n_estimators=10, n_quantile_estimators=0,
                                       random_state=0).fit(X, y)
    reference = xgb.XGBClassifier(n_estimators=10, learning_rate=0.1, random_state=0).fit(X, y)
    np.testing.assert_allclose(start.decision_function(X) + start.threshold_,
                               reference.predict(X, output_margin=True), rtol=1e-5, atol=1e-5)
