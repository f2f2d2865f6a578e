"""Precision@k per query as a boosting objective (quantile_surrogate.boosting.ranking and its adapters).

The gradient is checked against torch.autograd of precision_at_k_loss(reduction="sum"), the
Hessian against a NumPy reference built query by query from the majoriser's formula
(``h_j = d_j 1[j in P] + T_q w_j`` with the Gaussian kernel weights of eq. (13) rebuilt from ranks),
and the adapters against the maths and in training.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from quantile_surrogate.boosting import lightgbm_objective, precision_at_k_gradient_hessian, xgboost_objective
from quantile_surrogate.boosting.adapters import (NO_QUERY_GROUPS_MESSAGE, RANKING_ARGUMENTS_MESSAGE,
                                                  RANKING_WEIGHT_MESSAGE, RankingObjective)
from quantile_surrogate.boosting.ranking import NO_LIVE_QUERY_MESSAGE, QUERY_SIZES_MESSAGE, query_codes
from quantile_surrogate.losses import precision_at_k_loss
from quantile_surrogate.metrics import precision_at_k_per_query
from tests._messages import exact, prefix

try:
    import lightgbm as lgb
    import xgboost as xgb
except ImportError:  # pragma: no cover - CI installs the extra
    lgb = xgb = None
needs_backends = pytest.mark.skipif(lgb is None, reason="needs the `boost` extra (lightgbm, xgboost-cpu)")


def _queries(sizes=(12, 9, 15, 6, 3, 10), seed=0, shuffle=False):
    """Scores (distinct), labels and query codes; query 4 (3 rows) and an all-negative query 3 do not count at k=4."""
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(len(sizes)), sizes)
    labels = (rng.random(codes.size) < 0.35).astype(np.int64)
    for q in range(len(sizes)):
        rows = np.flatnonzero(codes == q)
        labels[rows[:2]] = [0, 1]
    labels[codes == 3] = 0
    scores = rng.standard_normal(codes.size) + labels
    if shuffle:
        order = rng.permutation(codes.size)
        return scores[order], labels[order], codes[order]
    return scores, labels, codes


def _autograd(scores, labels, codes, k, **settings):
    F = torch.as_tensor(scores, dtype=torch.float64).requires_grad_(True)
    loss = precision_at_k_loss(F, torch.as_tensor(labels), k, query=torch.as_tensor(codes), reduction="sum",
                               **settings)
    grad, = torch.autograd.grad(loss, F)
    return float(loss.detach()), grad.numpy()


def _reference_hessian(scores, labels, codes, k, form, bandwidth, min_hessian=1e-6):
    """h_j = d_j 1[j in P] + T_q w_j per query, in NumPy: Gaussian weights from ranks (distinct scores)."""
    hess = np.zeros(len(scores))
    for q in np.unique(codes):
        rows = np.flatnonzero(codes == q)
        n, relevant = rows.size, int(labels[rows].sum())
        if n <= k or relevant in (0, n):  # the query does not count
            continue
        order = rows[np.argsort(scores[rows])]
        ranks = np.arange(1, n + 1)
        w = np.exp(-0.5 * ((ranks / n - (1 - k / n)) / bandwidth) ** 2)
        w /= w.sum()
        theta = float(w @ scores[order])
        penalized = rows[labels[rows] == (0 if form == "fp" else 1)]
        z = scores[penalized] - theta if form == "fp" else theta - scores[penalized]
        d = 1 / (1 + np.exp(-z)) / (1 + np.exp(z))
        hess[penalized] += d
        hess[order] += d.sum() * w
    return np.maximum(hess, min_hessian)


# -- the maths -------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["fp", "tp"])
@pytest.mark.parametrize("quantile", ["kernel", "point", "epanechnikov"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_gradient_is_autograd_of_the_summed_loss(form, quantile, shuffle):
    scores, labels, codes = _queries(shuffle=shuffle)
    settings = dict(form=form, quantile=quantile, bandwidth=0.2)
    out = precision_at_k_gradient_hessian(scores, labels, 4, query=codes, **settings)
    loss, grad = _autograd(scores, labels, codes, 4, **settings)
    assert out.loss == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(out.grad, grad, rtol=1e-12, atol=1e-15)
    # the threshold pulls on the rows of the query that set it: not a detached threshold
    assert np.abs(out.grad[labels == (1 if form == "fp" else 0)]).sum() > 0.1
    dead = np.isin(codes, [3, 4])
    assert (out.grad[dead] == 0).all() and np.isnan(out.threshold[[3, 4]]).all()


@pytest.mark.parametrize("form", ["fp", "tp"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_hessian_is_the_per_query_majoriser(form, shuffle):
    scores, labels, codes = _queries(shuffle=shuffle)
    out = precision_at_k_gradient_hessian(scores, labels, 4, query=codes, form=form, bandwidth=0.2)
    np.testing.assert_allclose(out.hess, _reference_hessian(scores, labels, codes, 4, form, 0.2), rtol=1e-10)
    assert (out.hess > 0).all()
    assert (out.hess[np.isin(codes, [3, 4])] == 1e-6).all()  # rows of queries that do not count: the floor


def test_each_query_gets_its_own_coupling():
    # Doubling the scores' spread in one query changes that query's curvature only.
    scores, labels, codes = _queries()
    other = scores.copy()
    other[codes == 0] *= 3
    a = precision_at_k_gradient_hessian(scores, labels, 4, query=codes)
    b = precision_at_k_gradient_hessian(other, labels, 4, query=codes)
    assert not np.allclose(a.hess[codes == 0], b.hess[codes == 0])
    np.testing.assert_array_equal(a.hess[codes != 0], b.hess[codes != 0])


def test_logloss_weight_adds_the_log_loss_terms():
    scores, labels, codes = _queries()
    plain = precision_at_k_gradient_hessian(scores, labels, 4, query=codes, min_hessian=1e-300)
    mixed = precision_at_k_gradient_hessian(scores, labels, 4, query=codes, logloss_weight=0.5, min_hessian=1e-300)
    p = 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(mixed.grad - plain.grad, 0.5 * (p - labels), atol=1e-12)
    np.testing.assert_allclose(mixed.hess - plain.hess, 0.5 * p * (1 - p), atol=1e-12)


def test_no_query_that_counts_is_refused():
    with pytest.raises(ValueError, match=exact(NO_LIVE_QUERY_MESSAGE, k=3, n_queries=2, mixed=1, large=1)):
        precision_at_k_gradient_hessian(np.arange(7.0), [0, 1, 0, 0, 0, 0, 0], 3, query=[0, 0, 0, 1, 1, 1, 1])


def test_query_codes_from_sizes():
    assert query_codes(np.array([1, 2]), 3).tolist() == [0, 1, 1]
    for sizes in ([2, 2], [3, 0], [1.5, 1.5], [[3]]):
        with pytest.raises(ValueError, match=prefix(QUERY_SIZES_MESSAGE, name="group", n=3)):
            query_codes(sizes, 3)


# -- the adapters ----------------------------------------------------------------------------------
def test_factories_build_the_ranking_objective_and_check_its_settings():
    fn = lightgbm_objective("precision_at_k", k=5, form="tp", bandwidth=0.1)
    assert isinstance(fn, RankingObjective) and (fn.k, fn.form, fn.bandwidth) == (5, "tp", 0.1)
    assert xgboost_objective("precision_at_k", k=2) == RankingObjective(k=2)
    with pytest.raises(ValueError, match=prefix(RANKING_ARGUMENTS_MESSAGE, argument="`k`",
                                                which="precision_at_k, and it is required")):
        lightgbm_objective("precision_at_k")
    with pytest.raises(ValueError, match=prefix(RANKING_ARGUMENTS_MESSAGE, argument="`k`",
                                                which="objective='precision_at_k' only")):
        xgboost_objective("precision_at_recall", k=5)
    with pytest.raises(ValueError, match=prefix(RANKING_ARGUMENTS_MESSAGE, argument="`groups`")):
        lightgbm_objective("precision_at_k", k=5, groups=np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="`k`"):
        lightgbm_objective("precision_at_k", k=0)
    with pytest.raises(ValueError, match="quantile"):
        lightgbm_objective("precision_at_k", k=5, quantile="lower_mean")  # not batched per query
    with pytest.raises(ValueError, match="logloss_weight"):
        lightgbm_objective("precision_at_k", k=5, logloss_weight=-1.0)


def test_the_ranker_call_without_groups_or_with_weights_is_refused():
    scores, labels, codes = _queries()
    fn = lightgbm_objective("precision_at_k", k=4)
    with pytest.raises(ValueError, match=exact(NO_QUERY_GROUPS_MESSAGE)):
        fn(labels, scores)
    with pytest.raises(ValueError, match=exact(RANKING_WEIGHT_MESSAGE)):
        fn(labels, scores, np.full(len(labels), 2.0), np.bincount(codes))
    grad, hess = fn(labels, scores, np.ones(len(labels)), np.bincount(codes))
    np.testing.assert_array_equal(grad, precision_at_k_gradient_hessian(scores, labels, 4, query=codes).grad)


def _planted(n_queries=60, size=20, seed=0):
    """A planted ranking problem where the log loss mis-ranks within queries (Simpson's paradox).

    Feature 1 is a query offset ``a_q`` plus a within-query part ``e``; a query's share of relevant
    rows grows with ``a_q`` (so across queries feature 1 predicts relevance), while within a query
    the relevant rows are those with the largest ``x_0 - e`` (so within a query feature 1 predicts
    irrelevance). The log loss gives feature 1 a positive weight; precision@k needs a negative one.
    """
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(n_queries), size)
    offset = 1.5 * rng.normal(size=n_queries)
    within = rng.normal(size=codes.size)
    X = np.column_stack([rng.normal(size=codes.size), offset[codes] + within, rng.normal(size=codes.size)])
    latent = X[:, 0] - within + 0.5 * rng.normal(size=codes.size)
    y = np.zeros(codes.size, dtype=np.int64)
    for q in range(n_queries):
        rows = np.flatnonzero(codes == q)
        n_relevant = int(np.clip(round(size / (1 + np.exp(-offset[q]))), 1, size - 1))
        y[rows[np.argsort(-latent[rows])[:n_relevant]]] = 1
    return X, y, codes


@needs_backends
def test_lightgbm_reads_the_groups_of_its_dataset_and_matches_the_maths():
    X, y, codes = _planted(20, 10)
    fn = lightgbm_objective("precision_at_k", k=3)
    data = lgb.Dataset(X, y, group=np.bincount(codes), params={"verbose": -1}).construct()
    preds = np.random.default_rng(1).normal(size=len(y))
    grad, hess = fn(preds, data)
    out = precision_at_k_gradient_hessian(preds, y, 3, query=codes)
    np.testing.assert_array_equal(grad, out.grad)
    np.testing.assert_array_equal(hess, out.hess)
    with pytest.raises(ValueError, match=exact(NO_QUERY_GROUPS_MESSAGE)):
        lgb.train({"objective": fn, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), num_boost_round=1)


@needs_backends
def test_xgboost_reads_the_group_pointer_of_its_dmatrix_and_matches_the_maths():
    X, y, codes = _planted(20, 10)
    fn = xgboost_objective("precision_at_k", k=3)
    preds = np.random.default_rng(1).normal(size=len(y))
    grad, hess = fn(preds, xgb.DMatrix(X, label=y, qid=codes))
    out = precision_at_k_gradient_hessian(preds, y, 3, query=codes)
    np.testing.assert_array_equal(grad, out.grad)
    np.testing.assert_array_equal(hess, out.hess)
    with pytest.raises(ValueError, match=exact(NO_QUERY_GROUPS_MESSAGE)):
        xgb.train({"nthread": 1}, xgb.DMatrix(X, label=y), num_boost_round=1, obj=fn)
    with pytest.raises(ValueError, match=exact(NO_QUERY_GROUPS_MESSAGE)):
        xgb.XGBClassifier(objective=fn, n_estimators=1, n_jobs=1).fit(X, y)  # the wrapper passes no groups


@needs_backends
def test_lgbm_ranker_and_lgb_train_give_the_same_model():
    X, y, codes = _planted(30, 10)
    fn = lightgbm_objective("precision_at_k", k=3)
    params = dict(learning_rate=0.1, verbose=-1, deterministic=True, force_col_wise=True, num_threads=1)
    ranker = lgb.LGBMRanker(objective=fn, n_estimators=10, **params).fit(X, y, group=np.bincount(codes))
    booster = lgb.train({"objective": fn, **params}, lgb.Dataset(X, y, group=np.bincount(codes)), num_boost_round=10)
    np.testing.assert_allclose(ranker.predict(X, raw_score=True), booster.predict(X, raw_score=True), rtol=1e-12)


@needs_backends
@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_precision_at_k_rounds_raise_the_train_metric_over_the_logloss_start(library):
    X, y, codes = _planted()
    k, sizes = 5, np.bincount(codes)
    if library == "lightgbm":
        params = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "deterministic": True, "num_threads": 1}
        data = lgb.Dataset(X, y, group=sizes, free_raw_data=False)
        start = lgb.train({**params, "objective": "binary"}, data, num_boost_round=20)
        booster = lgb.train({**params, "objective": lightgbm_objective("precision_at_k", k=k)}, data,
                            num_boost_round=200, init_model=start)
        before, after = start.predict(X, raw_score=True), booster.predict(X, raw_score=True)
    else:
        params = {"learning_rate": 0.1, "max_depth": 3, "nthread": 1}
        data = xgb.DMatrix(X, label=y, qid=codes)
        start = xgb.train({**params, "objective": "binary:logistic"}, data, num_boost_round=20)
        booster = xgb.train(params, data, num_boost_round=200, obj=xgboost_objective("precision_at_k", k=k),
                            xgb_model=start.copy())
        before, after = start.predict(data, output_margin=True), booster.predict(data, output_margin=True)
    start_metric = precision_at_k_per_query(y, before, codes, k)
    metric = precision_at_k_per_query(y, after, codes, k)
    random_order = precision_at_k_per_query(y, np.random.default_rng(0).normal(size=len(y)), codes, k)
    assert random_order < 0.6 < start_metric
    assert metric > start_metric + 0.05, (start_metric, metric)
