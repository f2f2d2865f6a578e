"""The tree-library adapters (quantile_surrogate.boosting.adapters): LightGBM and XGBoost custom objectives.

The maths they call is tested in test_gradient.py; QuantileBoostingClassifier in
tests/estimators/test_boosted.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from quantile_surrogate._utils.checks import NOT_BINARY_MESSAGE, WEIGHT_NEGATIVE_MESSAGE
from quantile_surrogate._utils.errors import DIVERGED_MESSAGE, TrainingDivergedError
from quantile_surrogate.boosting import (
    BoostingObjective,
    lightgbm_objective,
    xgboost_objective,
)
from quantile_surrogate.boosting.adapters import (GROUP_CODES_MESSAGE, GROUPS_LENGTH_MESSAGE, LOGLOSS_WEIGHT_MESSAGE,
                                                  MIN_HESSIAN_MESSAGE)
from quantile_surrogate.boosting.gradient import EMPTY_SUBSET_MESSAGE
from tests._messages import exact, prefix

# The maths above the adapters needs neither library; the tests that train need both (the `boost` extra).
try:
    import lightgbm as lgb
    import xgboost as xgb
except ImportError:  # pragma: no cover - CI installs the extra
    lgb = xgb = None
needs_backends = pytest.mark.skipif(lgb is None, reason="needs the `boost` extra (lightgbm, xgboost-cpu)")


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
    with pytest.raises(ValueError, match=exact(WEIGHT_NEGATIVE_MESSAGE, name="sample_weight", count=1, low=np.float64(-1.0))):
        fn(labels, preds, np.array([1.0, -1.0, 1.0, 1.0]))
    fn(np.array([0, 1]), np.array([0.0, 1.0]), np.ones(2))  # unit weights are no weights
    with pytest.raises(TrainingDivergedError, match=prefix(DIVERGED_MESSAGE, what="the boosting scores", where="in 1 of 2 rows")):
        fn(np.array([0, 1]), np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match=exact(EMPTY_SUBSET_MESSAGE, subset="positives", objective="precision_at_recall")):
        fn(np.array([0, 0]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=prefix(NOT_BINARY_MESSAGE, name="labels")):
        fn(np.array([0, 2]), np.array([0.0, 1.0]))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(objective="precision_at_k"), ValueError, "objective"),
    (dict(objective=3), TypeError, "objective"),
    (dict(target=1.5), ValueError, "recall"),
    (dict(target="high"), TypeError, "recall"),
    (dict(form="tp"), ValueError, "form"),
    (dict(quantile="median"), ValueError, "quantile"),
    (dict(bandwidth=-0.1), ValueError, "bandwidth"),
    (dict(surrogate="exp"), ValueError, "surrogate"),
    (dict(logloss_weight=-1.0), ValueError, exact(LOGLOSS_WEIGHT_MESSAGE, value=-1.0)),
    (dict(min_hessian=0.0), ValueError, exact(MIN_HESSIAN_MESSAGE, value=0.0)),
    (dict(groups=np.array([0.5, 1.0])), ValueError, exact(GROUP_CODES_MESSAGE)),
    (dict(groups=np.array([[0, 1]])), ValueError, exact(GROUP_CODES_MESSAGE)),
    (dict(groups=np.array([0, -1])), ValueError, exact(GROUP_CODES_MESSAGE)),
])
def test_adapter_arguments_are_checked_where_they_are_made(kwargs, error, match):
    for factory in (lightgbm_objective, xgboost_objective):
        with pytest.raises(error, match=match):
            factory(**kwargs)


def test_groups_must_match_the_rows_the_library_passes():
    fn = lightgbm_objective(groups=np.array([0, 1, 0]))
    with pytest.raises(ValueError, match=exact(GROUPS_LENGTH_MESSAGE, codes=3, rows=2)):
        fn(np.array([0, 1]), np.array([0.0, 1.0]))
    assert isinstance(fn, BoostingObjective)
