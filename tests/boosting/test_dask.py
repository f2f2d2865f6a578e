"""The objective under a real ``xgboost.dask.train`` and ``lightgbm.dask`` (the `dask` extra).

Two Dask workers in one process (``LocalCluster(processes=False)``: threads, no process start-up,
about a second): XGBoost's collective connects them, each calls the objective on its own half of
the rows, and the model must be the one a single machine trains on all of them. Skipped without
``dask[distributed]``.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed", reason="needs the `dask` extra: pip install -e '.[dask]'")
xgb = pytest.importorskip("xgboost", reason="needs the `boost` extra")
lgb = pytest.importorskip("lightgbm", reason="needs the `boost` extra")

import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402
from xgboost import dask as dxgb  # noqa: E402

from quantile_surrogate.boosting import _collective, adapters, lightgbm_objective, xgboost_objective  # noqa: E402
from tests._messages import prefix  # noqa: E402

ROWS = 600


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def _data(seed=0):
    # Integer features: every value is a histogram cut, so one machine and two build the same bins.
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(ROWS, 4)).astype(np.float64)
    y = ((X[:, 0] + rng.normal(size=ROWS)) > 5).astype(np.float64)
    return X, y


PARAMS = {"max_depth": 3, "learning_rate": 0.3, "base_score": 0.5, "tree_method": "hist", "nthread": 1}


# The Gaussian kernel: tied scores (every score in the first round) share one weight, so the model does
# not depend on which worker holds which row. The point estimate (and a compact kernel with no rank
# in its window) sends its gradient to one tied row: the first in worker order, a choice the single
# machine need not make alike (tests/boosting/test_distributed.py fixes the order and checks it).
@pytest.mark.parametrize("objective,target,logloss_weight", [("precision_at_recall", 0.8, 0.0),
                                                             ("recall_at_fpr", 0.1, 0.2)])
def test_xgboost_dask_trains_the_single_machine_model(client, monkeypatch, objective, target, logloss_weight):
    X, y = _data()
    fn = xgboost_objective(objective, target, quantile="kernel", logloss_weight=logloss_weight)
    single = xgb.train(PARAMS, xgb.DMatrix(X, y), num_boost_round=5, obj=fn)
    expected = single.predict(xgb.DMatrix(X), output_margin=True)
    worlds = []  # the workers' calls took the distributed path (the workers are threads of this process)
    distributed = adapters.distributed_gradient_hessian
    monkeypatch.setattr(adapters, "distributed_gradient_hessian",
                        lambda comm, *a, **k: worlds.append(comm.world_size) or distributed(comm, *a, **k))
    dtrain = dxgb.DaskDMatrix(client, da.from_array(X, chunks=(ROWS // 2, 4)), da.from_array(y, chunks=ROWS // 2))
    booster = dxgb.train(client, PARAMS, dtrain, num_boost_round=5, obj=fn)["booster"]
    np.testing.assert_allclose(booster.predict(xgb.DMatrix(X), output_margin=True), expected, rtol=0, atol=1e-9)
    assert worlds == [2] * 10  # 2 workers x 5 rounds
    # Each worker's own threshold (what the objective did before) trains another model: the check has teeth.
    monkeypatch.setattr(adapters, "xgboost_communicator", lambda: None)
    local = dxgb.train(client, PARAMS, dtrain, num_boost_round=5, obj=fn)["booster"]
    assert np.abs(local.predict(xgb.DMatrix(X), output_margin=True) - expected).max() > 1e-3


# Frequency weights on the DMatrix: the workers' threshold is the weighted one of every row. With rows of weight 0
# (hess = min_hessian there, 1e-6) XGBoost's histogram sums, added in another order on two workers, move the
# margins by 2 float32 steps (measured: 6e-7; XGBoost's own binary:logistic, which gives those rows no Hessian,
# matches exactly); tests/boosting/test_distributed.py holds the objective itself to 1e-12 with zeros.
def test_windows_cut_the_reductions_under_xgboost_and_change_no_number(client, monkeypatch):
    # The previous round's window (boosting._hint) through XGBoost's own collective: the same model as every
    # call from the span, in fewer of the objective's reductions (rank 0's, counted).
    X, y = _data(seed=3)
    dtrain = dxgb.DaskDMatrix(client, da.from_array(X, chunks=(ROWS // 2, 4)), da.from_array(y, chunks=ROWS // 2))
    calls, original = [], _collective.XGBoostCommunicator.allreduce
    monkeypatch.setattr(_collective.XGBoostCommunicator, "allreduce",
                        lambda self, values, op: calls.append(self.rank) or original(self, values, op))

    def fit():
        calls.clear()
        fn = xgboost_objective("precision_at_recall", 0.8, quantile="kernel")
        booster = dxgb.train(client, PARAMS, dtrain, num_boost_round=8, obj=fn)["booster"]
        return booster.predict(xgb.DMatrix(X), output_margin=True), calls.count(0)

    margins, with_windows = fit()
    monkeypatch.setattr(adapters, "HINT_SLOTS", {})  # no memory: every call from the span
    np.testing.assert_array_equal(fit()[0], margins)
    assert with_windows < calls.count(0)


@pytest.mark.parametrize("low,atol", [(1, 1e-9), (0, 1e-5)])
def test_xgboost_dask_with_row_weights_trains_the_single_machine_weighted_model(client, low, atol):
    X, y = _data(seed=1)
    weight = np.random.default_rng(1).integers(low, 4, size=ROWS).astype(np.float64)
    fn = xgboost_objective("precision_at_recall", 0.8, quantile="kernel")
    single = xgb.train(PARAMS, xgb.DMatrix(X, y, weight=weight), num_boost_round=5, obj=fn)
    expected = single.predict(xgb.DMatrix(X), output_margin=True)
    dtrain = dxgb.DaskDMatrix(client, da.from_array(X, chunks=(ROWS // 2, 4)), da.from_array(y, chunks=ROWS // 2),
                              weight=da.from_array(weight, chunks=ROWS // 2))
    booster = dxgb.train(client, PARAMS, dtrain, num_boost_round=5, obj=fn)["booster"]
    np.testing.assert_allclose(booster.predict(xgb.DMatrix(X), output_margin=True), expected, rtol=0, atol=atol)
    unweighted = xgb.train(PARAMS, xgb.DMatrix(X, y), num_boost_round=5, obj=fn)  # the weights matter here
    assert np.abs(unweighted.predict(xgb.DMatrix(X), output_margin=True) - expected).max() > 1e-3


@pytest.mark.parametrize("weighted", [False, True])
def test_dask_xgb_classifier_with_the_objective_is_the_single_machine_classifier(client, monkeypatch, weighted):
    # XGBoost's scikit-learn wrapper on Dask calls the objective as fn(y_true, y_pred[, sample_weight]) on each
    # worker's rows: the same distributed path, and the same model as XGBClassifier on one machine.
    X, y = _data(seed=2)
    weight = np.random.default_rng(2).integers(1, 4, size=ROWS).astype(np.float64) if weighted else None
    fn = xgboost_objective("precision_at_recall", 0.8, quantile="kernel")
    settings = dict(n_estimators=5, max_depth=3, learning_rate=0.3, base_score=0.5, tree_method="hist", n_jobs=1)
    single = xgb.XGBClassifier(objective=fn, **settings).fit(X, y, sample_weight=weight)
    worlds = []
    distributed = adapters.distributed_gradient_hessian
    monkeypatch.setattr(adapters, "distributed_gradient_hessian",
                        lambda comm, *a, **k: worlds.append(comm.world_size) or distributed(comm, *a, **k))
    model = dxgb.DaskXGBClassifier(objective=fn, **settings)
    model.client = client
    model.fit(da.from_array(X, chunks=(ROWS // 2, 4)), da.from_array(y, chunks=ROWS // 2),
              sample_weight=None if weight is None else da.from_array(weight, chunks=ROWS // 2))
    margins = model.predict(da.from_array(X, chunks=(ROWS // 2, 4)), output_margin=True).compute()
    np.testing.assert_allclose(margins, single.predict(X, output_margin=True), rtol=0, atol=1e-9)
    assert worlds == [2] * 10


@pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored")
def test_lightgbm_dask_is_refused_with_the_xgboost_route(client):
    X, y = _data()
    model = lgb.DaskLGBMClassifier(objective=lightgbm_objective(target=0.8), n_estimators=3, verbose=-1)
    with pytest.raises(ValueError, match=prefix(adapters.LIGHTGBM_DISTRIBUTED_MESSAGE)):
        model.fit(da.from_array(X, chunks=(ROWS // 2, 4)), da.from_array(y.astype(int), chunks=ROWS // 2))
