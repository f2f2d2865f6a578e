"""LightGBM and XGBoost behind one small interface, for :class:`QuantileBoostingClassifier` (private).

Each backend does five things: wrap ``(X, y)`` in its own data structure (built once and
reused, since LightGBM's binning costs as much as a quarter of a 100-round fit), train a
log-loss booster, continue a booster with a custom objective (reporting the held-out
margins after every round and stopping when told), return raw margins, and cut a booster
down to its first ``n`` trees. Both libraries are imported lazily, so the package imports
without them.
"""

from __future__ import annotations

import difflib
import json

import numpy as np
import scipy.sparse as sp

__all__ = ["BACKENDS", "MISSING_BACKEND_MESSAGE", "RESERVED_CLASH_MESSAGE", "UNKNOWN_PARAM_MESSAGE",
           "XGBOOST_MIN_CHILD_MESSAGE", "RESERVED_PARAMS", "make_backend"]

MISSING_BACKEND_MESSAGE = (
    "QuantileBoostingClassifier(backend={backend!r}) needs the {package} package: "
    "pip install 'quantile-surrogate[boost]'"
)

RESERVED_CLASH_MESSAGE = (
    "`backend_params` sets {clash}, which QuantileBoostingClassifier sets itself; use its own parameters "
    "(n_estimators, learning_rate, num_leaves, max_depth, min_child_samples, random_state) instead."
)
XGBOOST_MIN_CHILD_MESSAGE = (
    "`min_child_samples` has no XGBoost equivalent (XGBoost bounds the Hessian sum, `min_child_weight`); "
    "leave it None and pass backend_params={{'min_child_weight': ...}}."
)
UNKNOWN_PARAM_MESSAGE = (
    "`backend_params` key {key!r} is not a {backend} parameter (close matches: {matches}); "
    "{backend} would ignore it. Check the spelling."
)
RESERVED_PARAMS = {
    "lightgbm": {"objective", "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round",
                 "num_rounds", "num_boost_round", "n_estimators", "max_iter", "init_score", "metric",
                 "learning_rate", "eta", "shrinkage_rate", "num_leaves", "max_depth", "min_child_samples",
                 "min_data_in_leaf", "seed", "random_state", "verbose", "verbosity", "early_stopping_round"},
    "xgboost": {"objective", "obj", "n_estimators", "num_boost_round", "base_margin", "eval_metric",
                "learning_rate", "eta", "max_leaves", "max_depth", "seed", "random_state", "verbosity",
                "disable_default_eval_metric", "early_stopping_rounds"},
}
"""Keys of ``backend_params`` that the estimator's own parameters set (passing them there is an error)."""


def _import(backend):
    try:
        if backend == "lightgbm":
            import lightgbm as module
        else:
            import xgboost as module
    except ImportError as error:
        package = {"lightgbm": "lightgbm", "xgboost": "xgboost-cpu"}[backend]
        raise ImportError(MISSING_BACKEND_MESSAGE.format(backend=backend, package=package)) from error
    return module


def _config_keys(config, out):
    """Every key of a nested JSON config whose value is not a section (a dict); lists are searched too."""
    items = config.items() if isinstance(config, dict) else enumerate(config)
    for key, value in items:
        if isinstance(key, str) and not isinstance(value, dict):
            out.add(key)
        if isinstance(value, (dict, list)):
            _config_keys(value, out)
    return out


def _known_params(name, params):
    """The parameter names (and aliases) the installed library knows, read off the library itself.

    LightGBM lists every parameter with its aliases (``_ConfigAliases``). XGBoost has no such
    list; a booster configured with ``params`` reports every parameter of its booster type,
    updater and objective in ``save_config()`` (unknown keys are left out).
    """
    module = _import(name)
    if name == "lightgbm":
        aliases = module.basic._ConfigAliases._get_all_param_aliases()
        return {alias for names in aliases.values() for alias in names} | RESERVED_PARAMS[name]
    data = module.DMatrix(np.zeros((1, 1)), label=[0.0])
    config = json.loads(module.Booster({**params, "verbosity": 0}, [data]).save_config())
    return _config_keys(config, set()) | RESERVED_PARAMS[name]


def _check_known_params(name, extra, params):
    if not extra:
        return
    known = _known_params(name, params)
    unknown = sorted((key for key in extra if key not in known), key=str)
    if unknown:
        key = unknown[0]
        matches = difflib.get_close_matches(str(key), sorted(known), n=3)
        raise ValueError(UNKNOWN_PARAM_MESSAGE.format(key=key, backend=BACKENDS[name].label,
                                                      matches=", ".join(matches) or "none"))


def _as_matrix(X):
    """A SciPy sparse *array* as the sparse *matrix* LightGBM recognises (the same arrays; LightGBM copies and
    warns "Converting data to scipy sparse matrix" otherwise); anything else as it is."""
    return sp.csr_matrix(X) if sp.issparse(X) and not isinstance(X, sp.spmatrix) else X


class LightGBMBackend:
    """``lgb.train`` with ``init_model=`` to continue; margins from ``predict(raw_score=True)``."""

    name = "lightgbm"
    label = "LightGBM"
    max_query_rows = 10_000
    """The most rows of one query its ranking objectives take ("exceeds upper limit of 10000"); the custom ones, any."""

    def __init__(self, params):
        self.lgb = _import("lightgbm")
        self.params = dict(params)

    def data(self, X, y, reference=None, weight=None):
        # No pre-filter: on data too small to split any feature, LightGBM's pre-filter leaves no feature
        # and then fails on a custom objective ("num_features() > 0"); unfiltered, it grows no tree instead.
        # Raw data kept: continuing from a booster predicts it on these rows once (the init score).
        # `weight`: frequency weights; the log-loss start weights them itself, the quantile objective
        # reads them off the Dataset (boosting.BoostingObjective).
        return self.lgb.Dataset(_as_matrix(X), label=y, reference=reference, weight=weight, free_raw_data=False,
                                params={"verbose": -1, "feature_pre_filter": False})

    def fit_logloss(self, data, rounds):
        return self.lgb.train({**self.params, "objective": "binary"}, data, num_boost_round=rounds,
                              keep_training_booster=False)

    def fit_ranking(self, data, rounds):
        """``rounds`` trees of LightGBM's ``lambdarank`` (NDCG's LambdaMART) on ``data``'s labels and query groups."""
        return self.lgb.train({**self.params, "objective": "lambdarank"}, data, num_boost_round=rounds,
                              keep_training_booster=False)

    def continue_training(self, booster, data, objective, rounds, validation=None, after_round=None):
        """``rounds`` more trees on ``objective``; ``after_round(margins)`` sees the held-out margins, True stops."""
        if rounds <= 0:
            return booster
        kwargs = {}
        if validation is not None:
            stop = []

            def feval(margins, _data):
                stop[:] = [after_round(np.asarray(margins, dtype=np.float64))]
                return "quantile_metric", 0.0, True

            def callback(env):
                if stop and stop[0]:
                    raise self.lgb.callback.EarlyStopException(env.iteration, [])

            kwargs = dict(valid_sets=[validation], valid_names=["validation"], feval=feval, callbacks=[callback])
        return self.lgb.train({**self.params, "objective": objective}, data, num_boost_round=rounds,
                              init_model=booster, keep_training_booster=False, **kwargs)

    def margins(self, booster, X):
        return np.asarray(booster.predict(_as_matrix(X), raw_score=True), dtype=np.float64).reshape(-1)

    def truncate(self, booster, n_trees):
        if booster.num_trees() <= n_trees:
            return booster
        return self.lgb.Booster(model_str=booster.model_to_string(num_iteration=n_trees))

    def n_trees(self, booster):
        return booster.num_trees()


class XGBoostBackend:
    """``xgb.train`` with ``xgb_model=`` to continue; margins from ``predict(output_margin=True)``."""

    name = "xgboost"
    label = "XGBoost"
    max_query_rows = None
    """No limit on the rows of one query."""

    def __init__(self, params):
        self.xgb = _import("xgboost")
        self.params = dict(params)

    def data(self, X, y=None, reference=None, weight=None):
        return self.xgb.DMatrix(X, label=y, missing=np.nan, weight=weight)

    def fit_logloss(self, data, rounds):
        return self.xgb.train({**self.params, "objective": "binary:logistic"}, data, num_boost_round=rounds,
                              verbose_eval=False)

    def fit_ranking(self, data, rounds):
        """``rounds`` trees of XGBoost's ``rank:ndcg`` (LambdaMART) on ``data``'s labels and query groups."""
        return self.xgb.train({**self.params, "objective": "rank:ndcg"}, data, num_boost_round=rounds,
                              verbose_eval=False)

    def continue_training(self, booster, data, objective, rounds, validation=None, after_round=None):
        if rounds <= 0:
            return booster
        params = {**self.params, "disable_default_eval_metric": 1}
        kwargs = {}
        if validation is not None:
            stop = []

            def custom_metric(margins, _data):
                stop[:] = [after_round(np.asarray(margins, dtype=np.float64))]
                return "quantile_metric", 0.0

            class Stop(self.xgb.callback.TrainingCallback):
                def after_iteration(self, model, epoch, evals_log):
                    return bool(stop and stop[0])

            kwargs = dict(evals=[(validation, "validation")], custom_metric=custom_metric, callbacks=[Stop()])
        # A copy: xgb.train continues the booster it is given in place.
        return self.xgb.train(params, data, num_boost_round=rounds, obj=objective, xgb_model=booster.copy(),
                              verbose_eval=False, **kwargs)

    def margins(self, booster, X):
        return np.asarray(booster.predict(self.data(X), output_margin=True), dtype=np.float64).reshape(-1)

    def truncate(self, booster, n_trees):
        if booster.num_boosted_rounds() <= n_trees:
            return booster
        return booster[:n_trees]

    def n_trees(self, booster):
        return booster.num_boosted_rounds()


BACKENDS = {"lightgbm": LightGBMBackend, "xgboost": XGBoostBackend}


def make_backend(name, *, learning_rate, num_leaves, max_depth, min_child_samples, seed, backend_params):
    """The backend ``name`` with the estimator's parameters translated into its own names."""
    extra = dict(backend_params or {})
    clash = sorted(set(extra) & RESERVED_PARAMS[name])
    if clash:
        raise ValueError(RESERVED_CLASH_MESSAGE.format(clash=clash))
    if name == "lightgbm":
        params = {"learning_rate": learning_rate, "num_leaves": 31 if num_leaves is None else num_leaves,
                  "max_depth": -1 if max_depth is None else max_depth,
                  "min_child_samples": 20 if min_child_samples is None else min_child_samples,
                  "seed": seed, "verbose": -1, "deterministic": True, "force_col_wise": True}
    else:
        if min_child_samples is not None:
            raise ValueError(XGBOOST_MIN_CHILD_MESSAGE.format())
        params = {"learning_rate": learning_rate, "max_depth": 6 if max_depth is None else max_depth,
                  "seed": seed, "verbosity": 0, "tree_method": "hist"}
        if num_leaves is not None:
            params["max_leaves"] = num_leaves
    _check_known_params(name, extra, {**params, **extra, "objective": "binary:logistic"})
    return BACKENDS[name]({**params, **extra})
