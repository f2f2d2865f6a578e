"""Boosting objectives (quantile_surrogate.boosting) and QuantileBoostingClassifier.

The maths is checked against independent references: central finite differences for the
gradient, a NumPy formula for the Hessian (kernel weights rebuilt from ranks), and the
majorisation claim ``2 diag(h) >= exact Hessian`` against torch's full Hessian.
"""

from __future__ import annotations

import importlib.util
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from quantile_surrogate.boosting import (
    BoostingObjective,
    lightgbm_objective,
    objective_gradient_hessian,
    xgboost_objective,
)
from quantile_surrogate.estimators._boosting_backends import MISSING_BACKEND_MESSAGE
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier
from quantile_surrogate.objectives import get_objective, objective_loss
from quantile_surrogate.quantiles._rank_selection import floor_rank
from quantile_surrogate.boosting.gradient import EMPTY_SUBSET_MESSAGE

# The maths above the adapters needs neither library; the tests that train need both (the `boost` extra).
try:
    import lightgbm as lgb
    import xgboost as xgb
except ImportError:  # pragma: no cover - CI installs the extra
    lgb = xgb = None
needs_backends = pytest.mark.skipif(lgb is None, reason="needs the `boost` extra (lightgbm, xgboost-cpu)")

CASES = [  # (objective, target, form)
    ("precision_at_recall", 0.8, "fp"),
    ("precision_at_rate", 0.2, "fp"),
    ("precision_at_rate", 0.2, "tp"),
    ("recall_at_fpr", 0.1, "fp"),
]


def _problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.4).astype(np.int64)
    labels[:2] = [0, 1]
    scores = rng.standard_normal(n) + labels  # distinct with probability 1
    return scores, labels


def _summed_loss(scores, labels, objective, target, form, **settings):
    """The loss straight from objective_loss (mean times the number of penalised rows), float64."""
    spec = get_objective(objective)
    positive = torch.as_tensor(labels == 1)
    penalized = ~positive if spec.penalized[form] == "negatives" else positive
    out = objective_loss(torch.as_tensor(scores, dtype=torch.float64), positive, objective=objective, target=target,
                         form=form, **settings)
    return float(out.loss) * int(penalized.sum())


# -- gradient ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,target,form", CASES)
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
def test_gradient_matches_central_finite_differences(objective, target, form, quantile):
    scores, labels = _problem()
    settings = dict(quantile=quantile, bandwidth=0.1)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form, **settings)
    assert out.loss == pytest.approx(_summed_loss(scores, labels, objective, target, form, **settings), rel=1e-12)
    eps = 1e-6
    numeric = np.empty_like(scores)
    for i in range(len(scores)):
        up, down = scores.copy(), scores.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (_summed_loss(up, labels, objective, target, form, **settings)
                      - _summed_loss(down, labels, objective, target, form, **settings)) / (2 * eps)
    np.testing.assert_allclose(out.grad, numeric, rtol=1e-5, atol=1e-7)


def test_gradient_carries_the_thresholds_pull_on_the_subset():
    # A detached threshold would leave the positives (the subset A) with no gradient at all. Their
    # total is minus the sum of l'(z) over the penalised negatives, since the weights sum to 1.
    scores, labels = _problem(200)
    out = objective_gradient_hessian(scores, labels, objective="precision_at_recall", target=0.8)
    z = scores[labels == 0] - out.threshold
    pull = (1 / (1 + np.exp(-z))).sum()
    assert out.grad[labels == 1].sum() == pytest.approx(-pull, rel=1e-10)
    np.testing.assert_allclose(out.grad[labels == 0], 1 / (1 + np.exp(-z)), rtol=1e-12)


def test_gradient_on_the_fast_kernel_path_matches_finite_differences():
    # 3000 rows: the kernel quantile sorts only its window (_kernel_window); check a few rows in and out of it.
    scores, labels = _problem(3000, seed=1)
    out = objective_gradient_hessian(scores, labels, objective="precision_at_rate", target=0.1)
    positive_window = np.argsort(np.abs(scores - out.threshold))[:5]
    far = np.argsort(scores)[:3]
    settings = dict(quantile="kernel", bandwidth=0.05)
    for i in np.concatenate([positive_window, far]):
        up, down = scores.copy(), scores.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        numeric = (_summed_loss(up, labels, "precision_at_rate", 0.1, "fp", **settings)
                   - _summed_loss(down, labels, "precision_at_rate", 0.1, "fp", **settings)) / 2e-6
        assert out.grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


# -- Hessian ----------------------------------------------------------------------------------------
def _reference_hessian(scores, labels, objective, target, form, bandwidth, groups=None, min_hessian=1e-6):
    """h_j = l''(z_j) 1[j in P] + T_g w_j, from ranks and the normalised Gaussian kernel (eq. (13)) in NumPy."""
    spec = get_objective(objective)
    positive = labels == 1
    subset = spec.subset_mask(positive)
    penalized = ~positive if spec.penalized[form] == "negatives" else positive
    groups = np.zeros(len(scores), dtype=np.int64) if groups is None else groups
    hess = np.zeros(len(scores))
    for g in np.unique(groups):
        members = np.flatnonzero(subset & (groups == g))
        order = members[np.argsort(scores[members])]
        n = len(order)
        ranks = np.arange(1, n + 1)  # distinct scores: i* = i
        w = np.exp(-0.5 * ((ranks / n - (1 - target)) / bandwidth) ** 2)
        w /= w.sum()
        theta = float(w @ scores[order])
        rows = penalized & (groups == g)
        z = scores[rows] - theta if spec.penalized[form] == "negatives" else theta - scores[rows]
        d = 1 / (1 + np.exp(-z)) * (1 / (1 + np.exp(z)))
        hess[rows] += d
        hess[order] += d.sum() * w
    return np.maximum(hess, min_hessian)


@pytest.mark.parametrize("objective,target,form", CASES)
def test_hessian_is_its_stated_formula(objective, target, form):
    scores, labels = _problem(80, seed=3)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form, bandwidth=0.1)
    np.testing.assert_allclose(out.hess, _reference_hessian(scores, labels, objective, target, form, 0.1),
                               rtol=1e-10, atol=1e-14)


def test_hessian_with_groups_uses_each_groups_coupling():
    scores, labels = _problem(120, seed=4)
    groups = np.arange(120) % 3
    out = objective_gradient_hessian(scores, labels, objective="precision_at_recall", target=0.7, bandwidth=0.1,
                                     groups=groups)
    assert out.threshold.shape == (3,)
    expected = _reference_hessian(scores, labels, "precision_at_recall", 0.7, "fp", 0.1, groups=groups)
    np.testing.assert_allclose(out.hess, expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("objective,target,form", CASES)
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
def test_twice_the_diagonal_majorises_the_exact_hessian(objective, target, form, quantile):
    scores, labels = _problem(40, seed=5)
    out = objective_gradient_hessian(scores, labels, objective=objective, target=target, form=form,
                                     quantile=quantile, bandwidth=0.1, min_hessian=1e-300)
    exact = torch.autograd.functional.hessian(
        lambda f: objective_loss(f, torch.as_tensor(labels == 1), objective=objective, target=target, form=form,
                                 quantile=quantile, bandwidth=0.1).loss,
        torch.as_tensor(scores)).numpy()
    n_penalized = (labels == 0).sum() if get_objective(objective).penalized[form] == "negatives" else labels.sum()
    exact *= n_penalized  # objective_loss is the mean over the penalised rows
    assert np.linalg.eigvalsh(exact).min() >= -1e-10  # the Gauss-Newton matrix is positive semi-definite
    assert np.linalg.eigvalsh(2 * np.diag(out.hess) - exact).min() >= -1e-10
    # ... while with weights spread over several rows the plain diagonal of the exact Hessian does not
    # majorise it (why the coupling term is T w_j and not T w_j^2); one-hot point weights make them equal.
    if quantile != "point":
        assert np.linalg.eigvalsh(2 * np.diag(np.diag(exact)) - exact).min() < -1e-6


def test_point_estimator_puts_the_whole_coupling_on_one_row():
    scores, labels = np.array([0.0, 2.0, 0.0]), np.array([1, 1, 0])
    out = objective_gradient_hessian(scores, labels, target=0.5, quantile="point")
    assert out.loss == pytest.approx(math.log(2))
    np.testing.assert_allclose(out.grad, [-0.5, 0.0, 0.5])
    np.testing.assert_allclose(out.hess, [0.25, 1e-6, 0.25])
    assert floor_rank(2, 0.5) == 1  # the selected positive is the lower one, score 0


def test_hinge_uses_a_constant_curvature_and_logloss_weight_adds_the_log_loss():
    scores, labels = _problem(50, seed=6)
    hinge = objective_gradient_hessian(scores, labels, surrogate="hinge", target=0.8, bandwidth=0.1)
    assert np.all(hinge.hess[labels == 0] >= 0.25)
    plain = objective_gradient_hessian(scores, labels, target=0.8, min_hessian=1e-300)
    mixed = objective_gradient_hessian(scores, labels, target=0.8, logloss_weight=0.5)
    p = 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(mixed.grad - plain.grad, 0.5 * (p - labels), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(mixed.hess, np.maximum(plain.hess + 0.5 * p * (1 - p), 1e-6), rtol=1e-12)
    logloss = np.sum(np.logaddexp(0, -(2 * labels - 1) * scores))
    assert mixed.loss == pytest.approx(plain.loss + 0.5 * logloss, rel=1e-12)


# -- the adapters in the two libraries -----------------------------------------------------------------
def _tabular(n=800, seed=0):
    return make_classification(n, n_features=8, weights=[0.8, 0.2], flip_y=0.05, random_state=seed)


@needs_backends
def test_lightgbm_train_and_sklearn_api_call_the_same_objective():
    X, y = _tabular()
    fn = lightgbm_objective("precision_at_recall", 0.9)
    params = dict(n_estimators=15, learning_rate=0.1, verbose=-1, deterministic=True, force_col_wise=True)
    clf = lgb.LGBMClassifier(objective=fn, **params).fit(X, y)
    booster = lgb.train({"objective": fn, "learning_rate": 0.1, "verbose": -1, "deterministic": True,
                         "force_col_wise": True}, lgb.Dataset(X, y), num_boost_round=15)
    np.testing.assert_allclose(clf.predict(X, raw_score=True), booster.predict(X, raw_score=True), rtol=1e-12)
    # Trained on our objective, not on a built-in one (with no link, LightGBM would fall back to regression).
    logloss = lgb.LGBMClassifier(**params).fit(X, y).predict(X, raw_score=True)
    assert not np.allclose(booster.predict(X, raw_score=True), logloss, atol=1e-3)


@needs_backends
def test_xgboost_train_and_sklearn_api_call_the_same_objective():
    X, y = _tabular()
    fn = xgboost_objective("precision_at_rate", 0.1)
    clf = xgb.XGBClassifier(objective=fn, n_estimators=10, learning_rate=0.1, max_depth=3, base_score=0.5,
                            n_jobs=1).fit(X, y)
    booster = xgb.train({"learning_rate": 0.1, "max_depth": 3, "base_score": 0.5, "nthread": 1},
                        xgb.DMatrix(X, y), num_boost_round=10, obj=fn)
    # The same trees; the starting margin differs by the API (XGBClassifier reads base_score=0.5 as a
    # probability, logit 0; xgb.train with no built-in objective reads it as a margin, 0.5).
    difference = clf.predict(X, output_margin=True) - booster.predict(xgb.DMatrix(X), output_margin=True)
    assert np.ptp(difference) < 1e-5 and abs(difference.mean() + 0.5) < 1e-5


@needs_backends
def test_boosting_from_the_log_loss_model_lowers_the_quantile_loss():
    X, y = _tabular(1500, seed=2)
    start = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 7}, lgb.Dataset(X, y), 10)
    fn = lightgbm_objective("precision_at_recall", 0.9)
    before = fn.gradient_hessian(start.predict(X, raw_score=True), y).loss
    booster = lgb.train({"objective": fn, "verbose": -1, "num_leaves": 7}, lgb.Dataset(X, y), 20, init_model=start)
    after = fn.gradient_hessian(booster.predict(X, raw_score=True), y).loss
    assert after < 0.8 * before


def test_adapter_weights_rows_and_refuses_nonfinite_scores_and_an_empty_subset():
    fn = lightgbm_objective(quantile="point", target=0.5)
    labels, preds = np.array([0, 1, 1, 0]), np.array([0.3, 1.0, -0.5, -1.0])
    grad, hess = fn(labels, preds, np.array([2.0, 1.0, 0.0, 1.0]))
    # Weight 2 is the row twice, weight 0 no row (the repeated data's gradient summed over copies).
    rep_grad, rep_hess = fn(labels[[0, 0, 1, 3]], preds[[0, 0, 1, 3]])
    np.testing.assert_allclose(grad[[0, 1, 3]], [rep_grad[0] + rep_grad[1], rep_grad[2], rep_grad[3]])
    np.testing.assert_allclose(hess[[0, 3]], [rep_hess[0] + rep_hess[1], rep_hess[3]])
    assert grad[2] == 0.0
    with pytest.raises(ValueError, match="sample_weight"):
        fn(labels, preds, np.array([1.0, -1.0, 1.0, 1.0]))
    fn(np.array([0, 1]), np.array([0.0, 1.0]), np.ones(2))  # unit weights are no weights
    with pytest.raises(ValueError, match="NaN or inf"):
        fn(np.array([0, 1]), np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="subset A"):
        fn(np.array([0, 0]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="binary"):
        fn(np.array([0, 2]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="one label per row"):
        objective_gradient_hessian(np.zeros(3), np.array([0, 1]))
    assert "subset A" in EMPTY_SUBSET_MESSAGE


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(objective="precision_at_k"), ValueError, "objective"),
    (dict(objective=3), TypeError, "objective"),
    (dict(target=1.5), ValueError, "recall"),
    (dict(target="high"), TypeError, "recall"),
    (dict(form="tp"), ValueError, "form"),
    (dict(quantile="median"), ValueError, "quantile"),
    (dict(bandwidth=-0.1), ValueError, "bandwidth"),
    (dict(surrogate="exp"), ValueError, "surrogate"),
    (dict(logloss_weight=-1.0), ValueError, "logloss_weight"),
    (dict(min_hessian=0.0), ValueError, "min_hessian"),
    (dict(groups=np.array([0.5, 1.0])), ValueError, "groups"),
])
def test_adapter_arguments_are_checked_where_they_are_made(kwargs, error, match):
    for factory in (lightgbm_objective, xgboost_objective):
        with pytest.raises(error, match=match):
            factory(**kwargs)


def test_groups_must_match_the_rows_the_library_passes():
    fn = lightgbm_objective(groups=np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="one group code per training row"):
        fn(np.array([0, 1]), np.array([0.0, 1.0]))
    assert isinstance(fn, BoostingObjective)


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
    assert (clf.predict(X)[y == 1] == 1).mean() >= 0.9
    curve = clf.validation_curve_
    best = np.flatnonzero(curve[:, 0] == curve[:, 0].max())
    # The best mean held-out metric, ties by the held-out loss, but the log-loss start wins its ties.
    expected = 0 if best[0] == 0 else best[np.argmin(curve[best, 1])]
    assert clf.best_iteration_ == expected and len(curve) >= 2
    trees = clf.n_logloss_estimators_ + clf.best_iteration_
    raw = clf.decision_function(X) + clf.threshold_
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
    clf = QuantileBoostingClassifier("precision_at_rate", 0.05, n_estimators=3, n_quantile_estimators=1,
                                     early_stopping=False).fit(X, y)
    assert clf.bandwidth_ == 0.05  # A is every row
    fixed = QuantileBoostingClassifier(bandwidth=0.1, n_estimators=3, n_quantile_estimators=1,
                                       early_stopping=False).fit(X, y)
    assert fixed.bandwidth_ == 0.1


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
    clf = QuantileBoostingClassifier(target=0.8, n_estimators=10, random_state=0).fit(X, y, groups=groups)
    predicted = clf.predict(X, groups=groups) == 1
    for g in clf.groups_:
        assert predicted[(y == 1) & (groups == g)].mean() >= 0.8
    assert clf.threshold_.shape == (2,)
    with pytest.raises(ValueError, match="fitted with `groups`"):
        clf.predict(X)


@needs_backends
def test_reserved_backend_params_and_xgboost_min_child_samples_are_refused():
    X, y = _tabular(200)
    with pytest.raises(ValueError, match="backend_params.*learning_rate"):
        QuantileBoostingClassifier(backend_params={"learning_rate": 0.5}).fit(X, y)
    with pytest.raises(ValueError, match="min_child_weight"):
        QuantileBoostingClassifier(backend="xgboost", min_child_samples=5).fit(X, y)
    with pytest.raises(ValueError, match="form"):
        QuantileBoostingClassifier(form="tp").fit(X, y)


@pytest.mark.parametrize("backend,module", [("lightgbm", "lightgbm"), ("xgboost", "xgboost")])
def test_missing_backend_is_one_line_naming_the_extra(backend, module, monkeypatch):
    X, y = _tabular(200)
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'quantile-surrogate\[boost\]'") as info:
        QuantileBoostingClassifier(backend=backend, n_estimators=2).fit(X, y)
    assert "\n" not in str(info.value)
    assert MISSING_BACKEND_MESSAGE.count("{") == 2


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
