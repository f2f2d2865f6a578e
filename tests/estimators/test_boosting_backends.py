"""quantile_surrogate.estimators._boosting_backends: the estimator's parameters in each library's names,
the ones it refuses, and the one-line message when a library is missing."""

from __future__ import annotations

import sys

import pytest

from quantile_surrogate.estimators._boosting_backends import (
    BACKENDS,
    MISSING_BACKEND_MESSAGE,
    RESERVED_CLASH_MESSAGE,
    RESERVED_PARAMS,
    UNKNOWN_PARAM_MESSAGE,
    XGBOOST_MIN_CHILD_MESSAGE,
    make_backend,
)
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier
from tests._messages import exact
from tests.estimators._data import needs_backends, tabular

DEFAULTS = dict(learning_rate=0.1, num_leaves=None, max_depth=None, min_child_samples=None, seed=7,
                backend_params=None)


@needs_backends
def test_make_backend_translates_the_parameters_into_each_librarys_names():
    lightgbm = make_backend("lightgbm", **DEFAULTS)
    assert isinstance(lightgbm, BACKENDS["lightgbm"])
    # None is LightGBM's own default: 31 leaves, no depth limit (-1), 20 rows per leaf.
    assert lightgbm.params == {"learning_rate": 0.1, "num_leaves": 31, "max_depth": -1, "min_child_samples": 20,
                               "seed": 7, "verbose": -1, "deterministic": True, "force_col_wise": True}
    xgboost = make_backend("xgboost", **{**DEFAULTS, "num_leaves": 15, "backend_params": {"subsample": 0.5}})
    assert isinstance(xgboost, BACKENDS["xgboost"])
    # XGBoost's depth default is 6; num_leaves is its max_leaves; backend_params pass through untouched.
    assert xgboost.params == {"learning_rate": 0.1, "max_depth": 6, "seed": 7, "verbosity": 0, "tree_method": "hist",
                              "max_leaves": 15, "subsample": 0.5}


@pytest.mark.parametrize("name", sorted(RESERVED_PARAMS))
def test_every_reserved_key_in_backend_params_is_refused_before_import(name):
    # The clash is checked before the library is imported, so this needs neither library.
    for key in sorted(RESERVED_PARAMS[name]):
        with pytest.raises(ValueError, match=exact(RESERVED_CLASH_MESSAGE, clash=[key])):
            make_backend(name, **{**DEFAULTS, "backend_params": {key: 1, "subsample": 0.5}})


def test_xgboost_refuses_min_child_samples():
    with pytest.raises(ValueError, match=exact(XGBOOST_MIN_CHILD_MESSAGE)):
        make_backend("xgboost", **{**DEFAULTS, "min_child_samples": 5})


@needs_backends
@pytest.mark.parametrize("name, key, backend, matches", [
    ("lightgbm", "num_leavez", "LightGBM", "num_leaves, num_leaf, max_leaves"),
    ("xgboost", "max_dept", "XGBoost", "max_depth, max_delta_step"),
    ("xgboost", "rate_dropp", "XGBoost", "none"),  # a dart parameter: unknown to the default tree booster
])
def test_a_backend_params_key_the_library_does_not_know_is_refused_with_close_matches(name, key, backend, matches):
    # Before the check LightGBM trained with 31 leaves and XGBoost with depth 6, ignoring the typo.
    with pytest.raises(ValueError, match=exact(UNKNOWN_PARAM_MESSAGE, key=key, backend=backend, matches=matches)):
        make_backend(name, **{**DEFAULTS, "backend_params": {"subsample": 0.5, key: 3}})


@needs_backends
@pytest.mark.parametrize("name, params", [
    # Aliases and sklearn-style names are the library's own; parameters of another booster type count once chosen.
    ("lightgbm", {"reg_alpha": 0.1, "lambda_l2": 1.0, "n_jobs": 1, "bagging_fraction": 0.8, "colsample_bytree": 0.9}),
    ("xgboost", {"reg_alpha": 0.1, "lambda": 1.0, "n_jobs": 1, "gamma": 0.0, "colsample_bytree": 0.9,
                 "max_bin": 64, "grow_policy": "lossguide"}),
    ("xgboost", {"booster": "dart", "rate_drop": 0.1, "skip_drop": 0.5}),
])
def test_known_backend_params_and_their_aliases_pass_through(name, params):
    assert make_backend(name, **{**DEFAULTS, "backend_params": params}).params.items() >= params.items()


@needs_backends
def test_reserved_backend_params_and_xgboost_min_child_samples_are_refused_by_the_estimator():
    X, y = tabular(200)
    with pytest.raises(ValueError, match=exact(RESERVED_CLASH_MESSAGE, clash=["learning_rate"])):
        QuantileBoostingClassifier(backend_params={"learning_rate": 0.5}).fit(X, y)
    with pytest.raises(ValueError, match=exact(UNKNOWN_PARAM_MESSAGE, key="num_leavez", backend="LightGBM",
                                               matches="num_leaves, num_leaf, max_leaves")):
        QuantileBoostingClassifier(backend_params={"num_leavez": 3}).fit(X, y)
    with pytest.raises(ValueError, match=exact(XGBOOST_MIN_CHILD_MESSAGE)):
        QuantileBoostingClassifier(backend="xgboost", min_child_samples=5).fit(X, y)


@pytest.mark.parametrize("backend,module,package", [("lightgbm", "lightgbm", "lightgbm"),
                                                    ("xgboost", "xgboost", "xgboost-cpu")])
def test_missing_backend_is_one_line_naming_the_extra(backend, module, package, monkeypatch):
    X, y = tabular(200)
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(ImportError, match=exact(MISSING_BACKEND_MESSAGE, backend=backend, package=package)) as info:
        QuantileBoostingClassifier(backend=backend, n_estimators=2).fit(X, y)
    assert "\n" not in str(info.value)
    assert MISSING_BACKEND_MESSAGE.count("{") == 2
