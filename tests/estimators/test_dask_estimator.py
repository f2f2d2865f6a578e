"""DaskQuantileBoostingClassifier on a real ``LocalCluster``: the single machine's model, the exact threshold,
held-out partitions that never train, seeds, and its errors.

Two Dask workers in one process (``LocalCluster(processes=False)``, threads: about a second to start)
shared by the module. Integer features: every value is a histogram cut, so one machine and two build
the same bins (as in tests/boosting/test_dask.py). Skipped without ``dask[distributed]``.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("distributed", reason="needs the `dask` extra: pip install -e '.[dask]'")
xgb = pytest.importorskip("xgboost", reason="needs the `boost` extra")

import dask.array as da  # noqa: E402
import distributed  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.utils.estimator_checks import check_param_validation  # noqa: E402

from quantile_surrogate import DaskQuantileBoostingClassifier, QuantileBoostingClassifier  # noqa: E402
from quantile_surrogate.estimators import _dask_paths, dask_boosted  # noqa: E402
from quantile_surrogate.estimators._dask_threshold import dask_constraint_threshold  # noqa: E402
from quantile_surrogate.objectives.thresholds import constraint_threshold  # noqa: E402
from tests._messages import exact, prefix  # noqa: E402

ROWS = 600
SETTINGS = dict(target=0.8, n_estimators=5, n_quantile_estimators=5, learning_rate=0.3, max_depth=3, random_state=0,
                backend_params={"nthread": 1})


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def _data(rows=ROWS, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(rows, 4)).astype(np.float64)
    y = ((X[:, 0] + rng.normal(size=rows)) > 5).astype(np.int64)
    return X, y


def _margins(booster, X):
    return booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)


@pytest.fixture(scope="module")
def fixed_rounds(client):
    """The Dask model and the single machine's, 5 + 5 rounds without selection, on string labels."""
    X, y01 = _data()
    y = np.where(y01 == 1, "yes", "no")
    Xd, yd = da.from_array(X, chunks=(ROWS // 2, -1)), da.from_array(y, chunks=ROWS // 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # integer features: tied scores at the threshold
        model = DaskQuantileBoostingClassifier(client=client, early_stopping=False, **SETTINGS).fit(Xd, yd)
        single = QuantileBoostingClassifier(backend="xgboost", early_stopping=False, **SETTINGS).fit(X, y)
    return model, single, X, y, Xd, yd


def test_fixed_rounds_give_the_single_machine_model(fixed_rounds):
    model, single, X, *_ = fixed_rounds
    # Bit for bit here: the same bins, the intercept from exact counts, the global threshold in every round
    # (only the workers' histogram sums could differ in their last bits; the tolerance allows that).
    np.testing.assert_allclose(_margins(model.booster_, X), _margins(single.booster_, X), rtol=0, atol=1e-9)
    assert (model.n_logloss_estimators_, model.best_iteration_) == (5, 5) == (single.n_logloss_estimators_,
                                                                              single.best_iteration_)
    assert model.bandwidth_ == single.bandwidth_
    assert model.threshold_ == pytest.approx(single.threshold_, abs=1e-9)
    assert model.classes_.tolist() == ["no", "yes"] and model.validation_partitions_ is None


def test_threshold_is_the_exact_quantile_of_the_gathered_training_scores(fixed_rounds):
    model, _, X, y, *_ = fixed_rounds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = constraint_threshold(_margins(model.booster_, X), y == "yes", objective="precision_at_recall",
                                        target=0.8)
    assert model.threshold_ == expected  # exactly


def test_predictions_are_lazy_dask_arrays_of_the_margins_and_labels(fixed_rounds):
    model, _, X, y, Xd, yd = fixed_rounds
    decision = model.decision_function(Xd)
    assert isinstance(decision, da.Array) and decision.chunks == (Xd.chunks[0],) and decision.dtype == np.float64
    np.testing.assert_array_equal(decision.compute(), _margins(model.booster_, X) - model.threshold_)
    labels = model.predict(Xd)
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), np.where(decision.compute() > 0, "yes", "no"))
    assert (labels.compute()[y == "yes"] == "yes").mean() >= 0.8  # the recall constraint on the training rows
    assert model.score(Xd, yd) == pytest.approx(fixed_rounds[1].score(X, y), abs=1e-12)


def test_dask_dataframes_are_arrays_with_feature_names(fixed_rounds):
    dd = pytest.importorskip("dask.dataframe")
    model, _, X, y, Xd, _ = fixed_rounds
    frame = dd.from_dask_array(Xd, columns=["a", "b", "c", "d"])
    rows, names = _dask_paths.as_dask_rows(frame)
    assert names.tolist() == ["a", "b", "c", "d"] and rows.chunks == Xd.chunks
    np.testing.assert_array_equal(model.decision_function(frame).compute(), model.decision_function(Xd).compute())
    series = dd.from_dask_array(da.from_array((y == "yes").astype(np.int64), chunks=200))
    labels = _dask_paths.as_dask_labels(series, Xd.chunks[0])
    assert labels.chunks == (Xd.chunks[0],)  # rechunked to X's partitions
    with pytest.raises(ValueError, match=exact(dask_boosted.FEATURES_MESSAGE, got=3, name=type(model).__name__,
                                               expected=4)):
        model.decision_function(Xd[:, :3])


def test_clone_shares_the_client_and_pickling_drops_it(fixed_rounds, client):
    model, _, X, _, Xd, _ = fixed_rounds
    assert clone(model).client is client and clone(model).get_params()["n_estimators"] == 5
    restored = pickle.loads(pickle.dumps(model))
    assert restored.client is None and model.client is client
    np.testing.assert_array_equal(restored.decision_function(Xd).compute(), model.decision_function(Xd).compute())


@pytest.mark.parametrize("objective,target", [("precision_at_recall", 0.73), ("precision_at_rate", 0.1),
                                              ("recall_at_fpr", 0.05), ("precision_at_rate", 0.999)])
def test_dask_threshold_equals_constraint_threshold(client, objective, target):
    # Ties (scores rounded), partitions of uneven size, one with positives only, one empty.
    rng = np.random.default_rng(1)
    scores = np.round(rng.normal(size=400), 1)
    labels = (rng.random(400) < 0.3).astype(np.int64)
    labels[:50] = 1
    chunks = (50, 0, 170, 180)
    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        expected = constraint_threshold(scores, labels, objective=objective, target=target)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = dask_constraint_threshold(client, da.from_array(scores, chunks=chunks),
                                        da.from_array(labels, chunks=chunks), objective=objective, target=target)
    assert got == expected
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in expected_warnings]


@pytest.mark.parametrize("objective,target", [("precision_at_recall", 0.73), ("precision_at_rate", 0.1),
                                              ("recall_at_fpr", 0.05), ("precision_at_rate", 0.999)])
@pytest.mark.parametrize("kind", ["integers", "floats"])
def test_weighted_dask_threshold_equals_weighted_constraint_threshold(client, objective, target, kind):
    # constraint_threshold's sample_weight: rows of weight 0 absent (here a partition's every row), the count a weight.
    rng = np.random.default_rng(2)
    scores = np.round(rng.normal(size=400), 1)
    labels = (rng.random(400) < 0.3).astype(np.int64)
    labels[:50] = 1
    weights = rng.integers(0, 4, size=400).astype(np.float64) if kind == "integers" else rng.exponential(size=400)
    weights[50:120] = 0.0
    chunks = (50, 70, 0, 100, 180)
    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        expected = constraint_threshold(scores, labels, objective=objective, target=target, sample_weight=weights)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = dask_constraint_threshold(client, da.from_array(scores, chunks=chunks),
                                        da.from_array(labels, chunks=chunks), objective=objective, target=target,
                                        weights=da.from_array(weights, chunks=chunks))
    assert got == expected
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in expected_warnings]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unweighted = constraint_threshold(scores, labels, objective=objective, target=target)
    assert got != unweighted or target > 0.9  # the weights matter (at 0.999 every row of A is allowed either way)


def test_row_weights_give_the_single_machine_weighted_model(client):
    # 5 + 5 rounds without selection, weights 1 to 3: the start's intercept is the weighted label mean, the
    # objective's threshold the weighted one, threshold_ the weighted constraint_threshold of the training scores.
    X, y = _data(seed=4)
    weights = np.random.default_rng(4).integers(1, 4, size=ROWS).astype(np.float64)
    Xd, yd, wd = (da.from_array(a, chunks=(ROWS // 2,) + a.shape[1:]) for a in (X, y, weights))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DaskQuantileBoostingClassifier(client=client, early_stopping=False, **SETTINGS).fit(
            Xd, yd, sample_weight=wd)
        single = QuantileBoostingClassifier(backend="xgboost", early_stopping=False, **SETTINGS).fit(
            X, y, sample_weight=weights)
        unweighted = QuantileBoostingClassifier(backend="xgboost", early_stopping=False, **SETTINGS).fit(X, y)
        expected = constraint_threshold(_margins(model.booster_, X), y, objective="precision_at_recall", target=0.8,
                                        sample_weight=weights)
    np.testing.assert_allclose(_margins(model.booster_, X), _margins(single.booster_, X), rtol=0, atol=1e-9)
    assert np.abs(_margins(unweighted.booster_, X) - _margins(single.booster_, X)).max() > 1e-3
    assert model.threshold_ == expected
    assert model.score(Xd, yd, sample_weight=wd) == pytest.approx(single.score(X, y, sample_weight=weights),
                                                                   abs=1e-12)


def _placed(client, array, workers):
    """``array`` as a Dask array of ``len(workers)`` equal row blocks, block ``i`` held by worker ``workers[i]``."""
    ranks = _dask_paths.worker_ranks(client)
    rows = array.shape[0] // len(workers)
    futures = [client.scatter(array[i * rows:(i + 1) * rows], workers=[ranks[w]], hash=False)
               for i, w in enumerate(workers)]
    return da.concatenate([da.from_delayed(f, shape=(rows,) + array.shape[1:], dtype=array.dtype) for f in futures])


def _pinned_contents(client):
    """``{worker name: sorted block ids}`` of the pinned blocks each worker holds (a block's rows hold 1000 + its
    id). XGBoost ranks the LocalCluster's workers by their names, 0 and 1."""
    held = client.run(lambda dask_worker: sorted({int(np.asarray(value).flat[0]) - 1000 for key, value in
                                                  dask_worker.data.items() if str(key).startswith("pinned-")
                                                  and np.size(value) and np.asarray(value).flat[0] >= 1000}))
    return {info["name"]: held[address] for address, info in client.scheduler_info()["workers"].items()}


def test_pin_partitions_puts_consecutive_blocks_on_the_ranks_balanced_by_rows(client):
    # Blocks of 100, 50, 300, 0, 50, 100 rows (middle rows at 8 %, 21 %, 50 %, 75 %, 79 %, 92 %), placed by Dask
    # the other way round: blocks 0-1 go to rank 0, 2-5 to rank 1 (the middle row of block 2 starts rank 1's
    # half), and the empty block stays a block (its index names a partition).
    sizes = [100, 50, 300, 0, 50, 100]
    ids = np.repeat(1000 + np.arange(6.0), sizes)
    ranks = _dask_paths.worker_ranks(client)
    blocks = [client.scatter(ids[sum(sizes[:i]):sum(sizes[:i + 1])], workers=[ranks[1 - i % 2]], hash=False)
              for i in range(6)]
    placed = da.concatenate([da.from_delayed(b, shape=(n,), dtype=ids.dtype) for b, n in zip(blocks, sizes)])
    placed = placed.rechunk((tuple(sizes),))  # (concatenate drops the empty block)
    table = da.stack([placed, placed], axis=1).rechunk((tuple(sizes), 2))
    pinned_ids, pinned_table = _dask_paths.pin_partitions(client, [placed, table])
    assert pinned_ids.chunks == placed.chunks == (tuple(sizes),) and pinned_table.chunks == table.chunks
    np.testing.assert_array_equal(pinned_ids.compute(), ids)  # (computing waits for the pinned blocks)
    np.testing.assert_array_equal(pinned_table.compute(), np.stack([ids, ids], axis=1))
    np.testing.assert_array_equal(pinned_ids.blocks[4].compute(), np.full(50, 1004.0))
    assert _pinned_contents(client) == {0: [0, 1], 1: [2, 4, 5]}
    del pinned_ids, pinned_table


def test_worker_ranks_is_the_order_xgboost_gives_its_workers(client):
    # pin_partitions relies on it to put the first rows on rank 0: ask XGBoost's collective on each worker.
    def objective(margins, dtrain):  # (a copy runs on each worker: it leaves the rank on the worker)
        distributed.get_worker().xgboost_rank_seen = xgb.collective.get_rank()
        return np.zeros_like(margins), np.ones_like(margins)

    X, y = _data()
    Xd, yd = da.from_array(X, chunks=(ROWS // 4, -1)), da.from_array(y, chunks=ROWS // 4)
    Xd, yd = _dask_paths.pin_partitions(client, [Xd, yd.astype(np.float64)])
    from xgboost import dask as dxgb

    dxgb.train(client, {"nthread": 1}, dxgb.DaskDMatrix(client, Xd, yd), num_boost_round=1, obj=objective)
    seen = client.run(lambda dask_worker: getattr(dask_worker, "xgboost_rank_seen", None))
    assert sorted(seen, key=seen.get) == _dask_paths.worker_ranks(client) and sorted(seen.values()) == [0, 1]


def test_the_model_does_not_depend_on_where_dask_placed_the_partitions(client):
    # Continuous features: XGBoost's bins and histogram sums follow which worker holds which rows. Without
    # the pinning, the interleaved placement grew other trees here (4,800 rows, 5 + 5 rounds).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4800, 4))
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=4800)) > 1.0).astype(np.int64)
    models = []
    for workers in ([0, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DaskQuantileBoostingClassifier(client=client, early_stopping=False, **SETTINGS).fit(
                _placed(client, X, workers), _placed(client, y, workers))
        models.append((model.booster_.save_raw("json"), model.threshold_))
    assert models[1] == models[0] and models[2] == models[0]


@pytest.mark.parametrize("quantile", ["point", "lower_mean", "interval", "harrell_davis"])
def test_positional_estimators_give_the_single_machine_model_wherever_dask_placed_the_rows(client, quantile):
    # Their tied rows take gradients or coefficients in worker order, then row order; one machine in row order.
    # fit pins the partitions in row order on the workers' ranks, so the two agree even when Dask held the
    # blocks the other way round (without the pinning the margins differed by up to 2.8 here).
    X, y = _data(seed=4)
    bandwidth = {} if quantile == "point" else {"bandwidth": 0.1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DaskQuantileBoostingClassifier(client=client, quantile=quantile, early_stopping=False, **bandwidth,
                                               **SETTINGS).fit(_placed(client, X, [1, 0, 1, 0]),
                                                               _placed(client, y, [1, 0, 1, 0]))
        single = QuantileBoostingClassifier(backend="xgboost", quantile=quantile, early_stopping=False, **bandwidth,
                                            **SETTINGS).fit(X, y)
        expected = constraint_threshold(_margins(model.booster_, X), y, objective="precision_at_recall", target=0.8)
    np.testing.assert_allclose(_margins(model.booster_, X), _margins(single.booster_, X), rtol=0, atol=1e-9)
    assert model.threshold_ == expected == pytest.approx(single.threshold_, abs=1e-9)
    assert model.best_iteration_ == 5


def test_weights_of_one_are_the_unweighted_fit_with_selection(client):
    # Every weighted step (held-out weights, intercept, objective, threshold) reduces to the unweighted one.
    Xd, yd = _row_id_data()
    ones = da.ones(ROWS, chunks=ROWS // 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = DaskQuantileBoostingClassifier(client=client, **SELECTED).fit(Xd, yd)
        weighted = DaskQuantileBoostingClassifier(client=client, **SELECTED).fit(Xd, yd, sample_weight=ones)
    # The held-out loss with weights of 1 is a weighted mean: equal to the last bits (the metric exactly).
    np.testing.assert_array_equal(weighted.validation_curve_[:, 0], plain.validation_curve_[:, 0])
    np.testing.assert_allclose(weighted.validation_curve_[:, 1], plain.validation_curve_[:, 1], rtol=1e-12)
    assert weighted.threshold_ == plain.threshold_
    assert weighted.booster_.save_raw("json") == plain.booster_.save_raw("json")


@pytest.mark.parametrize("bad,error,message", [
    (np.array([1.0, -2.0] * (ROWS // 2)), ValueError, "has 300 negative values (min -2)"),
    (np.array([1.0, np.nan] * (ROWS // 2)), ValueError, "has 300 NaN or infinite values"),
    (np.zeros(ROWS), ValueError, "sums to zero"),
    (np.ones(ROWS - 1), ValueError, "`sample_weight` has shape (599,) and `X` 600 rows"),
])
def test_bad_weights_are_clear_errors(client, bad, error, message):
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    with pytest.raises(error, match=prefix("`sample_weight` " + message.split("`sample_weight` ")[-1])):
        DaskQuantileBoostingClassifier(client=client, n_estimators=2).fit(Xd, yd, sample_weight=da.from_array(bad))
    with pytest.raises(TypeError, match=prefix(_dask_paths.DASK_INPUT_MESSAGE, name="sample_weight")):
        DaskQuantileBoostingClassifier(client=client, n_estimators=2).fit(Xd, yd, sample_weight=np.ones(ROWS))


class Recorder:
    """The rows (by their id in column 0) of every training DaskDMatrix and of every held-out prediction."""

    def __init__(self, monkeypatch):
        self.trained, self.scored = [], []
        matrix, held = _dask_paths.DaskBoosting.matrix, _dask_paths.DaskBoosting.held_out_margins

        def record_matrix(path, X, y, weight=None):
            self.trained.append(set(X[:, 0].compute().tolist()))
            return matrix(path, X, y, weight)

        def record_held(path, booster, X, first, last):
            self.scored.append(set(X[:, 0].compute().tolist()))
            return held(path, booster, X, first, last)

        monkeypatch.setattr(_dask_paths.DaskBoosting, "matrix", record_matrix)
        monkeypatch.setattr(_dask_paths.DaskBoosting, "held_out_margins", record_held)


SELECTED = dict(SETTINGS, n_quantile_estimators=6, n_iter_no_change=4, validation_fraction=0.4, random_state=3)


def _row_id_data():
    X, y = _data()
    X[:, 0] = np.arange(ROWS)  # a row id (trees may split on it: this is about where rows go)
    return da.from_array(X, chunks=(ROWS // 5, -1)), da.from_array(y, chunks=ROWS // 5)


@pytest.fixture(scope="module")
def selected(client):
    Xd, yd = _row_id_data()
    with pytest.MonkeyPatch.context() as monkeypatch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recorder = Recorder(monkeypatch)
        model = DaskQuantileBoostingClassifier(client=client, **SELECTED).fit(Xd, yd)
    return model, recorder, Xd, yd


def test_held_out_partitions_never_train(selected):
    model, recorder, *_ = selected
    held = model.validation_partitions_
    assert held.shape == (1, 2)  # round(0.4 x 5) partitions, drawn with the seed
    held_rows = {i for p in held[0] for i in range(p * 120, (p + 1) * 120)}
    selection_run, refit = recorder.trained
    assert selection_run.isdisjoint(held_rows) and selection_run | held_rows == set(range(ROWS))
    assert recorder.scored and all(rows == held_rows for rows in recorder.scored)
    assert refit == set(range(ROWS))  # the refit trains on every partition
    assert model.validation_curve_.shape[0] >= 1 and model.best_iteration_ <= 6


def test_the_same_seed_gives_the_same_model_and_another_seed_other_partitions(selected, client):
    model, _, Xd, yd = selected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = DaskQuantileBoostingClassifier(client=client, **SELECTED).fit(Xd, yd)
    np.testing.assert_array_equal(again.validation_partitions_, model.validation_partitions_)
    np.testing.assert_array_equal(again.validation_curve_, model.validation_curve_)
    assert again.best_iteration_ == model.best_iteration_ and again.threshold_ == model.threshold_
    assert again.booster_.save_raw("json") == model.booster_.save_raw("json")
    counts = np.array([[24, 24, 120]] * 5)
    draws = {tuple(DaskQuantileBoostingClassifier(**SELECTED)._splits(counts, seed)[0]) for seed in range(6)}
    assert len(draws) > 1


# -- errors -----------------------------------------------------------------------------------------
def test_numpy_input_is_refused_with_the_way_to_wrap_it(client):
    X, y = _data()
    with pytest.raises(TypeError, match=prefix(_dask_paths.DASK_INPUT_MESSAGE, name="X")):
        DaskQuantileBoostingClassifier(client=client).fit(X, y)
    with pytest.raises(TypeError, match=prefix(_dask_paths.DASK_INPUT_MESSAGE, name="y")):
        DaskQuantileBoostingClassifier(client=client).fit(da.from_array(X, chunks=(300, -1)), y)


def test_no_client_is_a_clear_error(monkeypatch):
    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "default_client", no_client)
    X, y = _data()
    with pytest.raises(ValueError, match=exact(_dask_paths.NO_CLIENT_MESSAGE)):
        DaskQuantileBoostingClassifier().fit(da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300))


def test_lightgbm_is_refused_with_the_xgboost_route(client):
    X, y = _data()
    with pytest.raises(ValueError, match=exact(dask_boosted.DASK_BACKEND_MESSAGE, backend="lightgbm")):
        DaskQuantileBoostingClassifier(client=client, backend="lightgbm").fit(
            da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300))


def test_partitions_that_cannot_be_held_out_are_errors(client):
    X, y = _data()
    one = DaskQuantileBoostingClassifier(client=client, n_estimators=2)
    with pytest.raises(ValueError, match=exact(dask_boosted.PARTITIONS_MESSAGE, parts=1)):
        one.fit(da.from_array(X, chunks=(ROWS, -1)), da.from_array(y, chunks=ROWS))
    order = np.argsort(y, kind="stable")  # the last partition holds positives only
    with pytest.raises(ValueError, match=prefix(dask_boosted.SPLIT_CLASSES_MESSAGE, split=0)):
        DaskQuantileBoostingClassifier(client=client, n_estimators=2, validation_fraction=0.5, random_state=0).fit(
            da.from_array(X[order], chunks=(ROWS // 2, -1)), da.from_array(y[order], chunks=ROWS // 2))


def test_param_validation():
    # Every parameter has a constraint and a wrong value raises InvalidParameterError in fit, before any data.
    check_param_validation("DaskQuantileBoostingClassifier", DaskQuantileBoostingClassifier(n_estimators=2))
