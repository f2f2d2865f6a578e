"""``benchmarks/dask_boosting.py`` in quick mode: partitions drawn on their own, counted reductions, named models."""

import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed", reason="needs the `dask` extra: pip install -e '.[dask]'")
pytest.importorskip("xgboost", reason="needs the `boost` extra")

from quantile_surrogate import QuantileBoostingClassifier  # noqa: E402
from quantile_surrogate.objectives import objective_metric  # noqa: E402
from tests._benchmarks import load  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    bench = load("dask_boosting")
    out = tmp_path_factory.mktemp("dask") / "quick.csv"
    frame = bench.main(["--quick", "--repeats", "2", "--out", str(out)])
    return bench, out, frame, pd.read_csv(out)


def test_each_partition_is_drawn_from_its_own_seed_and_the_same_model(quick):
    bench = quick[0]
    X, y = bench.local_data(1000, 4)
    X2, y2 = bench.make_partition(250, 2)
    np.testing.assert_array_equal(X[500:750], X2)
    np.testing.assert_array_equal(y[500:750], y2)
    assert 0.05 < y.mean() < 0.2  # about 12 % positives in every partition
    assert not np.array_equal(bench.make_partition(250, 3)[0], X2)


def test_reductions_are_counted_and_within_the_docs_formula(quick):
    _, _, frame, rows = quick
    row = rows.iloc[0]
    assert (row.workers, row.rows, row.partitions, row.rounds) == (2, 10_000, 4, 5)
    # kernel: 4 + 2R reductions a round (3 when the window covers A), R in 1..8 selection rounds
    assert 3 <= row.reductions_per_round <= 4 + 2 * 8
    assert 0 < row.reduction_bytes_per_round < 2e6
    # two runs of 5 rounds each (--repeats 2): every round's seconds are in the CSV, the summary's statistics theirs
    assert len(frame.quantile_s[0]) == len(frame.logloss_s[0]) == 10 and (frame.quantile_s[0] > 0).all()
    seconds = np.array(row.quantile_s_rounds.split(), dtype=float)
    np.testing.assert_allclose(seconds, frame.quantile_s[0], atol=1e-6)
    assert row.quantile_s_median == pytest.approx(np.median(frame.quantile_s[0]))
    assert row.quantile_s_after_first == pytest.approx(np.r_[frame.quantile_s[0][1:5], frame.quantile_s[0][6:]].mean())
    assert len(row.custom_logloss_s_rounds.split()) == 10 and row.repeats == 2


def test_after_first_drops_each_runs_first_round():
    bench = load("dask_boosting")
    np.testing.assert_array_equal(bench.after_first(np.arange(9.0), 3), [1, 2, 4, 5, 7, 8])
    np.testing.assert_array_equal(bench.after_first(np.arange(4.0), 4), [1, 2, 3])
    with pytest.raises(SystemExit):
        bench.parse(["--repeats", "0"])


def test_the_custom_log_loss_is_binary_logistics_gradient_and_hessian(quick):
    bench = quick[0]
    margins, labels = np.array([-30.0, -1.0, 0.0, 2.5]), np.array([0.0, 1.0, 1.0, 0.0])

    class Labels:  # what the objective reads of a DMatrix: no weights is an empty array, as XGBoost gives
        def __init__(self, weight=()):
            self.weight = np.asarray(weight, dtype=np.float32)

        def get_label(self):
            return labels

        def get_weight(self):
            return self.weight

    grad, hess = bench.logloss_objective(margins, Labels())
    p = np.exp(-np.logaddexp(0, -margins))
    np.testing.assert_allclose(grad, p - labels, rtol=1e-12)
    np.testing.assert_allclose(hess, p * (1 - p), rtol=1e-12)
    weight = bench.row_weights(labels)
    np.testing.assert_array_equal(weight, [10.0, 1.0, 1.0, 10.0])
    weighted = bench.logloss_objective(margins, Labels(weight))
    np.testing.assert_allclose(weighted[0], weight * (p - labels), rtol=1e-12)
    np.testing.assert_allclose(weighted[1], weight * p * (1 - p), rtol=1e-12)


def test_weights_reach_the_single_machine_model(tmp_path):
    bench = load("dask_boosting")
    rows = bench.main(["--quick", "--weights", "--out", str(tmp_path / "weighted.csv")])
    X, y = bench.local_data(10_000, 4)
    X_test, y_test = bench.local_data(2500, 2, first=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 5 trees: tied scores at the threshold
        single = QuantileBoostingClassifier(backend="xgboost", validation_splits=1, objective="precision_at_recall",
                                            target=0.9, n_estimators=5, n_quantile_estimators=5, random_state=0,
                                            backend_params={"nthread": 1}).fit(X, y, sample_weight=bench.row_weights(y))
    expected = objective_metric(y_test, single.decision_function(X_test), objective="precision_at_recall", target=0.9)
    assert rows.single_precision[0] == pytest.approx(expected, abs=1e-12) and bool(rows.weights[0])
    assert "negatives weigh 10" in (tmp_path / "weighted.md").read_text()


def test_the_single_machine_column_is_the_model_it_names(quick):
    bench, _, _, rows = quick
    X, y = bench.local_data(10_000, 4)
    X_test, y_test = bench.local_data(2500, 2, first=4)
    single = QuantileBoostingClassifier(backend="xgboost", validation_splits=1, objective="precision_at_recall",
                                        target=0.9, n_estimators=5, n_quantile_estimators=5, random_state=0,
                                        backend_params={"nthread": 1}).fit(X, y)
    expected = objective_metric(y_test, single.decision_function(X_test), objective="precision_at_recall", target=0.9)
    assert rows.single_precision[0] == pytest.approx(expected, abs=1e-12)
    assert 0 <= rows.dask_precision[0] <= 1


def test_the_summary_is_beside_the_csv_and_never_overwritten(quick):
    bench, out, _, rows = quick
    text = out.with_suffix(".md").read_text()
    assert "| 2 | " in text and f"{rows.dask_precision[0]:.4f}" in text
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--out", str(out)])


def test_leaves_are_counted_after_the_start_and_timed_runs_can_continue_one(tmp_path):
    import xgboost as xgb

    bench = load("dask_boosting")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    dtrain = xgb.DMatrix(X, label=(X[:, 0] + X[:, 1] > 0).astype(float))
    start = xgb.train({"max_depth": 1, "nthread": 1}, dtrain, num_boost_round=2)  # stumps: 2 leaves each
    booster = xgb.train({"max_depth": 2, "nthread": 1}, dtrain, num_boost_round=2, xgb_model=start)
    trees = booster.trees_to_dataframe()
    later = [int((trees.Feature == "Leaf")[trees.Tree == t].sum()) for t in (2, 3)]
    assert bench.leaves_per_tree(booster, 2) == np.mean(later)
    assert bench.leaves_per_tree(booster) == np.mean([2, 2] + later)
    rows = bench.main(["--quick", "--start-rounds", "3", "--out", str(tmp_path / "start.csv")])
    assert rows.start_rounds[0] == 3 and len(rows.quantile_s[0]) == 5  # only the 5 new rounds are timed
    assert 1 <= rows.quantile_leaves[0] <= 64 and 1 <= rows.logloss_leaves[0] <= 64
    assert "continues one binary:logistic start of 3 rounds" in (tmp_path / "start.md").read_text()
    with pytest.raises(SystemExit):
        bench.parse(["--start-rounds", "-1"])


def test_gradient_replay_records_float32_rounds_and_hands_them_back_in_order(monkeypatch):
    import distributed

    bench = load("dask_boosting")
    worker = type("Worker", (), {})()
    bench.clear_replay(worker)
    monkeypatch.setattr(distributed, "get_worker", lambda: worker)
    rounds = [(np.array([0.1, -2.0 / 3.0]), np.array([1e-6, 0.25])), (np.array([1.0, 2.0]), np.array([0.5, 0.5]))]
    calls = iter(rounds)
    record, replay = bench.GradientReplay(lambda m, d: next(calls), "record"), bench.GradientReplay(None, "replay")
    for expected in rounds:  # the recording passes the objective's own arrays on, and keeps float32 copies
        grad, hess = record(np.zeros(2), None)
        assert grad is expected[0] and hess is expected[1]
    for grad, hess in rounds:  # XGBoost rounds a float64 gradient to the same float32
        got = replay(np.zeros(2), None)
        assert got[0].dtype == got[1].dtype == np.float32
        np.testing.assert_array_equal(got[0], grad.astype(np.float32))
        np.testing.assert_array_equal(got[1], hess.astype(np.float32))
    bench.clear_replay(worker)
    assert worker._benchmark_gradients == [] and worker._benchmark_replayed == 0


def test_gradient_replay_reduce_repeats_the_recorded_reductions_and_reads_the_labels(monkeypatch):
    import distributed

    from quantile_surrogate.boosting import _collective

    bench = load("dask_boosting")
    worker = type("Worker", (), {})()
    bench.clear_replay(worker)
    monkeypatch.setattr(distributed, "get_worker", lambda: worker)
    sent = []

    class Collective:  # what XGBoostCommunicator needs of xgboost.collective; records what it is sent
        Op = type("Op", (), {"SUM": "SUM", "MAX": "MAX"})

        def get_rank(self):
            return 0

        def get_world_size(self):
            return 2

        def allreduce(self, values, op):
            sent.append((op, values.dtype, values.size, values.any()))
            return values

    comm = _collective.XGBoostCommunicator(Collective())
    monkeypatch.setattr(_collective, "xgboost_communicator", lambda: comm)
    plan = [[("sum", np.ones(5)), ("max", np.ones(2, np.uint64))], [("sum", np.ones(3))]]

    def objective(margins, dtrain):  # two rounds: three reductions, then one
        for op, values in plan[len(worker._benchmark_gradients)]:
            comm.allreduce(values, op)
        return np.ones(2), np.ones(2)

    record = bench.GradientReplay(objective, "record")
    for _ in plan:
        record(np.zeros(2), None)
    assert [len(r) for r in worker._benchmark_reductions] == [2, 1]
    sent.clear()
    reads = []
    dtrain = type("DMatrix", (), {"get_label": lambda self: reads.append("label") or np.zeros(2),
                                  "get_weight": lambda self: reads.append("weight") or np.zeros(0)})()
    reduce = bench.GradientReplay(None, "reduce")
    for expected in plan:  # the same ops, dtypes and sizes, of zeros, and one read of the labels and weights a round
        grad, _ = reduce(np.zeros(2), dtrain)
        np.testing.assert_array_equal(grad, np.ones(2, np.float32))
        assert sent == [(op.upper(), values.dtype, values.size, False) for op, values in expected]
        assert reads == ["label", "weight"]
        sent.clear(), reads.clear()
    bench.restart_replay(worker)  # a second replay of the same recording starts from its first round
    assert worker._benchmark_replayed == 0


def test_same_trees_tells_boosters_with_other_gradients_apart():
    import xgboost as xgb

    bench = load("dask_boosting")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    dtrain = xgb.DMatrix(X, label=(X[:, 0] > 0).astype(float))
    grad, hess = rng.normal(size=300), rng.uniform(0.1, 1.0, size=300)

    def fit(scale):
        return xgb.train({"max_depth": 3, "nthread": 1, "base_score": 0.5}, dtrain, num_boost_round=2,
                         obj=lambda m, d: (grad, hess * scale))

    assert bench.same_trees(fit(1.0), fit(1.0))
    assert not bench.same_trees(fit(1.0), fit(1.0 + 1e-3))  # the same splits, other leaf values


def test_replayed_gradients_grow_the_quantile_runs_trees(tmp_path):
    bench = load("dask_boosting")
    out = tmp_path / "replay.csv"
    frame = bench.main(["--quick", "--replay", "--repeats", "2", "--start-rounds", "2", "--out", str(out)])
    row = frame.iloc[0]
    assert bool(row.replay_same_trees) and len(row.replay_s) == 10 and (row.replay_s > 0).all()
    assert len(row.reduced_s) == 10 and row.reduced_s_after_first == pytest.approx(
        bench.after_first(row.reduced_s, 5).mean())
    assert row.replay_leaves == row.quantile_leaves
    assert row.replay_s_after_first == pytest.approx(bench.after_first(row.replay_s, 5).mean())
    # the recording's reductions are not counted: the same count and bytes as the same runs without --replay
    plain = bench.main(["--quick", "--repeats", "2", "--start-rounds", "2", "--out", str(tmp_path / "plain.csv")])
    assert row.reductions_per_round == plain.reductions_per_round[0] >= 3
    assert row.reduction_bytes_per_round == plain.reduction_bytes_per_round[0]
    saved = pd.read_csv(out).iloc[0]
    np.testing.assert_allclose(np.array(saved.replay_s_rounds.split(), dtype=float), row.replay_s, atol=1e-6)
    text = out.with_suffix(".md").read_text()
    assert "gradients replayed" in text and "the same trees" in text and "the five in turn" in text
    assert "its arithmetic alone free" in text
