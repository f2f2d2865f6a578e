"""QuantileRanker (quantile_surrogate.estimators.ranker): precision@k within each query.

The maths of the boosted rounds is tested in tests/boosting/test_ranking.py; here: the estimator's
contract (scikit-learn's checks), the held-out split by queries, the refit with the chosen rounds,
what training buys on a planted problem, seeds, and the errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from quantile_surrogate import QuantileRanker
from quantile_surrogate.boosting.ranking import QUERY_SIZES_MESSAGE
from quantile_surrogate.estimators import ranker as ranker_module
from quantile_surrogate.estimators._ranker_paths import BoostedPath, LinearPath
from quantile_surrogate.estimators.ranker import (BLEND_SKIPPED_MESSAGE, GRADED_LABELS_MESSAGE, GROUP_QUERY_MESSAGE,
                                                  NO_LARGE_QUERY_MESSAGE, NO_MIXED_QUERY_MESSAGE, QUERY_LENGTH_MESSAGE)
from quantile_surrogate.metrics import precision_at_k_per_query
from tests._messages import exact, prefix
from tests.boosting.test_ranking import _planted

pytest.importorskip("lightgbm", reason="needs the `boost` extra (lightgbm, xgboost-cpu)")

FAST = dict(n_estimators=10, n_quantile_estimators=30, backend_params={"num_threads": 1}, random_state=0)


class _OneQueryRanker(QuantileRanker):
    """QuantileRanker as scikit-learn's checks call it: ``fit(X, y)`` with no queries.

    The checks know nothing of queries, and pass multi-class ``y`` (0, 1, 2, ...) as a generic
    estimator's target. This adaptor makes all rows one query and the largest label relevant,
    then calls ``QuantileRanker.fit`` unchanged; it is the one departure from the checks (the
    group plumbing and the relevance rule are tested below instead).
    """

    def fit(self, X, y=None, *, group=None, query=None):
        if group is None and query is None:
            group = [X.shape[0] if hasattr(X, "shape") else len(X)]
            values = None if y is None else np.asarray(y)
            if values is not None and values.ndim == 1 and values.dtype.kind in "biufO" and values.size:
                values = values.astype(np.float64)
                y = (values == np.nanmax(values)).astype(np.int64)
        return super().fit(X, y, group=group, query=query)


# None fail through the adaptor above (scikit-learn 1.9.1); check_array_api_input skips itself
# without SCIPY_ARRAY_API=1.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks(
    [_OneQueryRanker(k=1, n_estimators=3, n_quantile_estimators=3, backend_params={"num_threads": 1}, random_state=0),
     _OneQueryRanker(k=1, model="linear", n_quantile_estimators=3, random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_param_validation():
    check_param_validation("QuantileRanker", QuantileRanker(n_estimators=2, n_quantile_estimators=2))


# -- selection and refit ---------------------------------------------------------------------------
def _spy(monkeypatch, path_class):
    """Record (fit rows' query codes, held-out rows' query codes, rounds) of every call of ``path_class.fit``."""
    calls, original = [], path_class.fit

    def fit(self, X, relevant, codes, rounds, held=None):
        calls.append((np.asarray(codes), None if held is None else held[1].codes, rounds))
        return original(self, X, relevant, codes, rounds, held)

    monkeypatch.setattr(path_class, "fit", fit)
    return calls


@pytest.mark.parametrize("model", ["lightgbm", "linear"])
def test_held_out_splits_never_split_a_query(monkeypatch, model):
    path_class = LinearPath if model == "linear" else BoostedPath
    calls = _spy(monkeypatch, path_class)
    X, y, codes = _planted(40, 10)
    QuantileRanker(k=3, model=model, **FAST).fit(X, y, query=codes)
    held_calls = [c for c in calls if c[1] is not None]
    assert len(held_calls) == 3  # validation_splits="auto": 3 splits at 400 rows
    for fit_codes, held_codes, _ in held_calls:
        assert not set(fit_codes) & set(held_codes)
        assert len(fit_codes) + len(held_codes) == len(y)  # every row on one side, each query whole
        assert 0.15 < len(set(held_codes)) / 40 < 0.25  # validation_fraction of the queries
    assert len({tuple(c[1]) for c in held_calls}) == 3  # three different draws


def test_refit_uses_the_chosen_rounds_on_every_query(monkeypatch):
    calls = _spy(monkeypatch, BoostedPath)
    X, y, codes = _planted(40, 10)
    ranker = QuantileRanker(k=3, **FAST).fit(X, y, group=np.bincount(codes))
    rounds = ranker.best_iteration_
    assert rounds == ranker.selection_["rounds"] and calls[-1][1] is None and calls[-1][2] == rounds
    assert len(calls[-1][0]) == len(y)  # the refit sees every query
    assert ranker.model_.num_trees() == ranker.n_logloss_estimators_ + rounds == 10 + rounds
    curve = ranker.validation_curve_
    assert curve[rounds, 0] == ranker.selection_["chosen"] == curve[:, 0].max()
    assert ranker.selection_["start"] == curve[0, 0] and ranker.selection_["n_splits"] == 3
    fixed = QuantileRanker(k=3, early_stopping=False, **{**FAST, "n_quantile_estimators": rounds})
    np.testing.assert_array_equal(ranker.predict(X), fixed.fit(X, y, group=np.bincount(codes)).predict(X))


def test_a_start_that_no_round_beats_is_kept(monkeypatch):
    # A held-out curve that never rises keeps the log-loss start: r = 0.
    monkeypatch.setattr(ranker_module.QueryCurve, "score", lambda self, scores: (0.5, 1.0))
    X, y, codes = _planted(40, 10)
    ranker = QuantileRanker(k=3, **FAST).fit(X, y, query=codes)
    assert ranker.best_iteration_ == 0 and ranker.model_.num_trees() == 10
    assert ranker.selection_["chosen"] == ranker.selection_["start"] == 0.5


def test_too_few_queries_for_a_split_keeps_every_round():
    X, y, codes = _planted(1, 30)  # one query: nothing to hold out
    ranker = QuantileRanker(k=3, min_child_samples=5, **FAST).fit(X, y, query=codes)
    assert ranker.selection_["n_splits"] == 0 and np.isnan(ranker.selection_["start"])
    assert ranker.best_iteration_ == 30 and ranker.validation_curve_ is None


# -- what training buys ----------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["lightgbm", "xgboost", "linear"])
def test_train_precision_beats_a_random_ranking_and_the_start(model):
    X, y, codes = _planted(60, 20)
    params = dict(k=5, model=model, n_estimators=20, random_state=0, early_stopping=False, blend=False,
                  backend_params={"nthread": 1} if model == "xgboost" else None)  # the trained model alone
    if model == "lightgbm":
        params["backend_params"] = {"num_threads": 1}
    start = QuantileRanker(**params, n_quantile_estimators=0).fit(X, y, query=codes).predict(X)
    trained = QuantileRanker(**params, n_quantile_estimators=100).fit(X, y, query=codes).predict(X)
    random_order = precision_at_k_per_query(y, np.random.default_rng(0).normal(size=len(y)), codes, 5)
    start_metric = precision_at_k_per_query(y, start, codes, 5)
    metric = precision_at_k_per_query(y, trained, codes, 5)
    assert random_order < 0.6 < start_metric
    assert metric > start_metric + 0.05, (start_metric, metric)


# -- the blend (step 4) ------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["lightgbm", "xgboost"])
def test_the_blend_is_the_mean_of_the_two_boosters_standardised_scores(model):
    X, y, codes = _planted(30, 12)
    backend = {"nthread": 1} if model == "xgboost" else {"num_threads": 1}
    ranker = QuantileRanker(k=3, model=model, **{**FAST, "backend_params": backend}).fit(X, y, query=codes)
    engine = ranker_module.BACKENDS[model]({})
    own, lambdamart = engine.margins(ranker.model_, X), engine.margins(ranker.ranking_model_, X)
    # the offsets and scales: each member's mean and (population) standard deviation on the training rows
    np.testing.assert_allclose(ranker.blend_offsets_, [own.mean(), lambdamart.mean()], rtol=1e-12)
    np.testing.assert_allclose(ranker.blend_scales_, [own.std(), lambdamart.std()], rtol=1e-12)
    expected = ((own - own.mean()) / own.std() + (lambdamart - lambdamart.mean()) / lambdamart.std()) / 2
    np.testing.assert_allclose(ranker.predict(X), expected, rtol=1e-12, atol=1e-12)
    alone = QuantileRanker(k=3, model=model, blend=False, **{**FAST, "backend_params": backend}).fit(X, y, query=codes)
    assert alone.ranking_model_ is None and alone.blend_offsets_ is None and alone.blend_scales_ is None
    np.testing.assert_array_equal(alone.predict(X), engine.margins(ranker.model_, X))  # step 4 changes no member


def test_the_blends_member_is_lightgbms_own_lambdarank():
    import lightgbm

    X, y, codes = _planted(30, 12)  # rows come sorted by query here, so the ranker keeps their order
    ranker = QuantileRanker(k=3, **FAST).fit(X, y, query=codes)
    params = dict(objective="lambdarank", learning_rate=0.1, num_leaves=31, max_depth=-1, min_child_samples=20,
                  seed=0, verbose=-1, deterministic=True, force_col_wise=True, num_threads=1)
    data = lightgbm.Dataset(X, label=y.astype(np.float64), group=np.bincount(codes),
                            params={"verbose": -1, "feature_pre_filter": False})
    reference = lightgbm.train(params, data, num_boost_round=FAST["n_estimators"])
    assert ranker.ranking_model_.num_trees() == FAST["n_estimators"]
    np.testing.assert_array_equal(ranker.ranking_model_.predict(X, raw_score=True), reference.predict(X, raw_score=True))


def test_a_query_past_lightgbms_lambdarank_limit_skips_the_blend_with_a_warning(monkeypatch):
    backend = ranker_module.BACKENDS["lightgbm"]
    assert backend.max_query_rows == 10_000  # LightGBM's limit on a query's rows for lambdarank
    monkeypatch.setattr(backend, "max_query_rows", 11)
    X, y, codes = _planted(20, 12)
    with pytest.warns(UserWarning) as caught:
        ranker = QuantileRanker(k=3, **FAST).fit(X, y, query=codes)
    assert [str(w.message) for w in caught] == [BLEND_SKIPPED_MESSAGE.format(limit=11, largest=12)]
    assert ranker.ranking_model_ is None and ranker.blend_scales_ is None
    np.testing.assert_array_equal(ranker.predict(X), QuantileRanker(k=3, blend=False, **FAST).fit(
        X, y, query=codes).predict(X))
    monkeypatch.setattr(backend, "max_query_rows", 12)  # at the limit: blended, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert QuantileRanker(k=3, **FAST).fit(X, y, query=codes).ranking_model_ is not None


def test_a_linear_ranker_is_never_blended():
    X, y, codes = _planted(20, 12)
    ranker = QuantileRanker(k=3, model="linear", n_quantile_estimators=5, random_state=0).fit(X, y, query=codes)
    assert ranker.ranking_model_ is None and ranker.blend_offsets_ is None
    np.testing.assert_array_equal(ranker.predict(X), ranker.model_.scores(X))


@pytest.mark.parametrize("model", ["lightgbm", "linear"])
def test_the_same_seed_gives_the_same_model(model):
    X, y, codes = _planted(40, 10)
    first = QuantileRanker(k=3, model=model, **FAST).fit(X, y, query=codes).predict(X)
    second = QuantileRanker(k=3, model=model, **FAST).fit(X, y, query=codes).predict(X)
    np.testing.assert_array_equal(first, second)


def test_query_rows_may_come_in_any_order():
    X, y, codes = _planted(40, 10)
    sorted_fit = QuantileRanker(k=3, model="linear", **FAST).fit(X, y, group=np.bincount(codes))
    order = np.random.default_rng(1).permutation(len(y))
    shuffled = QuantileRanker(k=3, model="linear", **FAST).fit(X[order], y[order], query=codes[order] * 7 + 100)
    np.testing.assert_allclose(shuffled.predict(X), sorted_fit.predict(X), rtol=1e-6, atol=1e-8)


def test_linear_model_is_a_score_in_the_original_units():
    X, y, codes = _planted(40, 10)
    X = X * np.array([1.0, 100.0, 0.01]) + 3.0
    ranker = QuantileRanker(k=3, model="linear", **FAST).fit(X, y, query=codes)
    assert ranker.coef_.shape == (3,) and ranker.n_logloss_estimators_ == 0
    np.testing.assert_allclose(ranker.predict(X), X @ ranker.coef_ + ranker.intercept_, rtol=1e-12)


def test_trees_take_missing_values_and_the_linear_model_refuses_them():
    X, y, codes = _planted(40, 10)
    X[::7, 0] = np.nan
    assert np.isfinite(QuantileRanker(k=3, **FAST).fit(X, y, query=codes).predict(X)).all()
    with pytest.raises(ValueError, match="NaN"):
        QuantileRanker(k=3, model="linear", **FAST).fit(X, y, query=codes)


# -- labels and errors -----------------------------------------------------------------------------
def test_relevance_threshold_binarises_graded_labels():
    X, y, codes = _planted(40, 10)
    graded = y * 3 + (np.arange(len(y)) % 2)  # 0/1 irrelevant, 3/4 relevant
    with pytest.raises(ValueError, match=exact(GRADED_LABELS_MESSAGE, values=[0, 1, 3, 4])):
        QuantileRanker(k=3, **FAST).fit(X, graded, query=codes)
    from_graded = QuantileRanker(k=3, relevance_threshold=3, **FAST).fit(X, graded, query=codes).predict(X)
    from_binary = QuantileRanker(k=3, **FAST).fit(X, y == 1, query=codes).predict(X)
    np.testing.assert_array_equal(from_graded, from_binary)


def test_the_queries_are_checked():
    X, y, codes = _planted(4, 10)
    ranker = QuantileRanker(k=3, **FAST)
    with pytest.raises(ValueError, match=exact(GROUP_QUERY_MESSAGE, given="neither")):
        ranker.fit(X, y)
    with pytest.raises(ValueError, match=exact(GROUP_QUERY_MESSAGE, given="both")):
        ranker.fit(X, y, group=[10] * 4, query=codes)
    with pytest.raises(ValueError, match=prefix(QUERY_SIZES_MESSAGE, name="group", n=40)):
        ranker.fit(X, y, group=[10, 10, 10])
    with pytest.raises(ValueError, match=exact(QUERY_LENGTH_MESSAGE, n=40, shape=(39,))):
        ranker.fit(X, y, query=codes[:-1])
    with pytest.raises(ValueError, match=exact(NO_MIXED_QUERY_MESSAGE, n_queries=4)):
        ranker.fit(X, np.zeros(40, dtype=int), query=codes)
    with pytest.raises(ValueError, match=exact(NO_LARGE_QUERY_MESSAGE, k=10, largest=10)):
        QuantileRanker(k=10, **FAST).fit(X, y, query=codes)
    with pytest.raises(InvalidParameterError, match="'k' parameter of QuantileRanker must be an int in the range"):
        QuantileRanker(k=0).fit(X, y, query=codes)
