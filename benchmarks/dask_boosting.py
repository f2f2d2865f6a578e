"""Issue 27, part 6: DaskQuantileBoostingClassifier on a LocalCluster of 2 and 4 workers, against one machine.

Data: a fixed synthetic model, drawn once from ``--seed``: 20 standard normal features, of which
8 enter a logit linearly, plus an interaction ``1.5 x_0 x_1`` and ``sin(2 x_2)``, shifted to about
12 % positives; the label is a Bernoulli draw of its sigmoid. Each partition draws its own rows
from ``default_rng([seed, partition])`` on its worker (:func:`make_partition`), so the training
rows never sit in one process; the held-out test part is ``rows / 4`` more rows from partitions
numbered after the training ones. ``--partitions`` (default 8) is fixed across worker counts, so
every cluster sees the same rows in the same partitions.

For each ``--workers`` count, on one ``LocalCluster(n_workers=W, threads_per_worker=1,
processes=...)`` (worker processes by default, ``--threads`` for threads of this process):

- **seconds per round** of ``binary:logistic``, of the same log loss in NumPy passed as ``obj=``
  (:func:`logloss_objective`: the cost of XGBoost's custom-objective path itself, no reduction) and of
  the quantile objective (``xgboost_objective(precision_at_recall, 0.9, quantile=--quantile)``, the
  estimator's ``bandwidth_``),
  each ``--rounds`` rounds from scratch under ``xgboost.dask.train`` on the same ``DaskDMatrix``;
  a callback on rank 0 times each round inside the training loop, mean ± s.e. over the rounds
  after the first, and the median of all rounds. The first round takes about 1.5 s at 10^6 rows for
  either objective, some 30 times a later one (XGBoost's one-time work; not broken down), so it is
  given apart; until 2026-11-27 the table's mean included it. Every round's seconds are kept in the CSV;
- **reductions per round**: counted, not taken from the docs' formula. Every worker's
  ``XGBoostCommunicator.allreduce`` (``boosting/_collective.py``, the only door of the objective to
  XGBoost's collective) is wrapped (``client.run``) to record its payload; the table gives rank 0's
  calls and bytes (its array's ``nbytes``) per round. XGBoost's own histogram reductions are not
  counted. The docs' formula for comparison: point ``2 + 2R``, kernel ``4 + 2R`` (3 when the
  window covers all of ``A``), ``R`` the selection rounds (1 to 3 in practice);
- **precision at recall 0.9** on the test part of ``DaskQuantileBoostingClassifier`` (its
  defaults: held-out partitions choose the quantile rounds, then a refit on every partition) and of
  ``QuantileBoostingClassifier(backend="xgboost")`` fitted once on the gathered training rows with
  the same settings (``validation_splits=1``: 20 % of the rows held out, stratified, where the Dask
  model holds out ``round(0.2 x partitions)`` whole partitions); both ``n_estimators =
  n_quantile_estimators = --rounds``, ``nthread=1`` per worker and for the single machine.

Runs (the CPU of this machine is shared; the 10^6 run takes long):

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/dask_boosting.py --rows 100000 --workers 2 \\
        --out results/dask/dask_boosting_1e5_w2.csv
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/dask_boosting.py --rows 1000000 --workers 2,4 \\
        --out results/dask/dask_boosting_1e6_w2_w4.csv

``--weights`` gives every negative row the weight 10 (the rows of a set whose negatives were
kept one in ten, with their inverse sampling rate): every fit and every timed run then trains with
them (the DMatrix's ``weight=``, ``fit(sample_weight=...)``, and :func:`logloss_objective` multiplies
by them), the test part is unweighted.

``--repeats R`` times each objective's rounds R times, the objectives in turn, and pools each
objective's rounds (without each run's first): on a shared machine whose speed drifts over minutes,
a drift then falls on every objective instead of on one segment (docs/distributed.md).

``--start-rounds N`` times the rounds that follow one ``binary:logistic`` booster of ``N`` rounds (every
timed run continues it, ``xgb_model=``), as the estimators' quantile rounds follow their log-loss start;
by default each timed run starts from a constant margin, where the objectives grow trees of very
different sizes (the point objective's had about 5 leaves where ``binary:logistic``'s had 63), so the
rounds' cost differs by more than the objectives'. The table gives each objective's mean leaves per
timed tree.

``--replay`` adds, to each repeat, the floor of a quantile round: one more quantile run (untimed) records
every worker's gradient and Hessian of every round (:class:`GradientReplay`, as the float32 XGBoost
keeps; rounds x the worker's rows x 8 bytes of memory on each worker), and a timed run hands them back
in order, so XGBoost grows the same trees (compared tree by tree, ``replay_same_trees``) while the
objective costs nothing but returning two arrays. Its seconds per round are what any objective with
these gradients costs at best: the custom-objective path and the trees these gradients grow. A third
run of the same recording (``reduce``) adds back what the objective does besides its arithmetic: it reads
the DMatrix's labels and weights and makes the recording's reductions, round by round, of the same
sizes (of zeros); its round is the floor of an exact distributed objective that needs those reductions,
and the quantile round's excess over it is the cost of the objective's arithmetic on the workers.

``--quick`` (10^4 rows, 2 workers as threads, 5 rounds, 4 partitions: seconds) is what
tests/cross/test_dask_benchmark.py runs. ``--out`` is never overwritten.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import mean_se, names, out_problem, write_results  # noqa: E402
from quantile_surrogate import DaskQuantileBoostingClassifier, QuantileBoostingClassifier  # noqa: E402
from quantile_surrogate.boosting import xgboost_objective  # noqa: E402
from quantile_surrogate.boosting._distributed import DISTRIBUTED_ESTIMATORS  # noqa: E402
from quantile_surrogate.estimators._dask_paths import pin_partitions  # noqa: E402
from quantile_surrogate.objectives import objective_metric  # noqa: E402

FEATURES, INFORMATIVE = 20, 8
OBJECTIVE, TARGET = "precision_at_recall", 0.9
WORKERS = ("1", "2", "3", "4", "6", "8")
QUICK = dict(rows=10_000, workers=[2], rounds=5, partitions=4, processes=False)
TIMED = ("logloss_s", "quantile_s", "custom_logloss_s", "replay_s", "reduced_s")
"""Every timed run's seconds (``replay_s`` and ``reduced_s`` with ``--replay`` only)."""
NEGATIVE_WEIGHT = 10.0
"""``--weights``: the weight of a negative row (positives weigh 1)."""


# -- data ------------------------------------------------------------------------------------------
def make_partition(rows: int, partition: int, seed: int = 0):
    """``(X, y)`` of one partition: float64 (rows, 20) and int64 (rows,), the same model for every partition."""
    weights = np.random.default_rng(seed).normal(size=INFORMATIVE) * 2 / np.sqrt(INFORMATIVE)
    rng = np.random.default_rng([seed, partition])
    X = rng.standard_normal((rows, FEATURES))
    logit = X[:, :INFORMATIVE] @ weights + 1.5 * X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) - 3.2
    y = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return X, y


def partition_sizes(rows: int, partitions: int) -> list[int]:
    return [rows // partitions + (p < rows % partitions) for p in range(partitions)]


def dask_data(rows: int, partitions: int, first: int = 0, seed: int = 0):
    """``(X, y)`` Dask arrays whose partitions ``first, first + 1, ...`` are drawn on the workers."""
    import dask.array as da
    from dask import delayed

    xs, ys = [], []
    for p, size in enumerate(partition_sizes(rows, partitions)):
        X, y = delayed(make_partition, nout=2, pure=True)(size, first + p, seed)
        xs.append(da.from_delayed(X, shape=(size, FEATURES), dtype=np.float64))
        ys.append(da.from_delayed(y, shape=(size,), dtype=np.int64))
    return da.concatenate(xs), da.concatenate(ys)


def local_data(rows: int, partitions: int, first: int = 0, seed: int = 0):
    """The rows of :func:`dask_data`, generated here (for the single machine)."""
    parts = [make_partition(size, first + p, seed) for p, size in enumerate(partition_sizes(rows, partitions))]
    return np.concatenate([X for X, _ in parts]), np.concatenate([y for _, y in parts])


# -- instruments (run on the workers) ---------------------------------------------------------------
def _wrap_allreduce():
    """Wrap ``XGBoostCommunicator.allreduce`` once per process to record each call: ``(rank, bytes)`` in one list,
    and ``(op, dtype, size)`` per thread (:class:`GradientReplay` reads its own thread's calls)."""
    from quantile_surrogate.boosting import _collective

    cls = _collective.XGBoostCommunicator
    if not hasattr(cls, "_benchmark_calls"):
        original = cls.allreduce

        def allreduce(self, values, op):
            values = np.asarray(values)
            cls._benchmark_calls.append((self.rank, int(values.nbytes)))
            cls._benchmark_shapes.setdefault(threading.get_ident(), []).append((op, values.dtype.str, values.size))
            return original(self, values, op)

        cls._benchmark_calls, cls._benchmark_shapes, cls.allreduce = [], {}, allreduce
    return cls


def _install_counter():
    """:func:`_wrap_allreduce`, its ``(rank, bytes)`` list emptied (the next run's reductions alone)."""
    _wrap_allreduce()._benchmark_calls.clear()


def _read_counter():
    from quantile_surrogate.boosting import _collective

    return list(_collective.XGBoostCommunicator._benchmark_calls)


def _round_timer():
    """A callback that stores each round's seconds (inside the training loop) as a booster attribute."""
    import xgboost as xgb

    class RoundTimer(xgb.callback.TrainingCallback):
        def before_training(self, model):
            self.marks = [time.perf_counter()]
            return model

        def after_iteration(self, model, epoch, evals_log):
            self.marks.append(time.perf_counter())
            return False

        def after_training(self, model):
            model.set_attr(round_seconds=",".join(f"{s:.6f}" for s in np.diff(self.marks)))
            return model

    return RoundTimer()


def _round_seconds(booster) -> np.ndarray:
    return np.array([float(s) for s in booster.attr("round_seconds").split(",")])


def leaves_per_tree(booster, skip: int = 0) -> float:
    """The mean number of leaves of ``booster``'s trees after its first ``skip`` (the start's)."""
    trees = booster.trees_to_dataframe()
    later = trees[trees.Tree >= skip]
    return float((later.Feature == "Leaf").groupby(later.Tree).sum().mean())


def logloss_objective(margins, dtrain):
    """``binary:logistic``'s gradient and Hessian in NumPy, passed as ``obj=``: what any custom objective costs
    (times the DMatrix's row weights, if it has any)."""
    probability = 1.0 / (1.0 + np.exp(-margins))
    grad, hess = probability - dtrain.get_label(), probability * (1.0 - probability)
    weight = dtrain.get_weight()
    return (grad * weight, hess * weight) if weight.size else (grad, hess)


class GradientReplay:
    """``obj=`` that records ``fn``'s ``(grad, hess)`` on each worker (``"record"``), or hands them back (``"replay"``).

    Recorded as float32, the precision XGBoost keeps gradients in (it rounds a float64 gradient to the
    same float32), so a replay grows the recording run's trees. The rounds are kept on the Dask worker
    that trains (``distributed.get_worker()``), in order; :func:`clear_replay` empties them before a recording.
    A recording also keeps each round's reductions (their ops, dtypes and sizes); ``"reduce"`` hands the
    gradients back after what the objective does besides its arithmetic: it reads the DMatrix's labels and
    weights (``get_label``, ``get_weight``: a copy each) and makes the same reductions (of zeros) through the
    same communicator, so its round is the floor of an exact distributed objective with these reductions.
    """

    def __init__(self, fn, mode: str):
        self.fn, self.mode = fn, mode

    def __call__(self, margins, dtrain):
        from distributed import get_worker

        worker = get_worker()
        if self.mode == "record":
            shapes = _wrap_allreduce()._benchmark_shapes.setdefault(threading.get_ident(), [])
            first = len(shapes)
            grad, hess = self.fn(margins, dtrain)
            worker._benchmark_gradients.append((np.asarray(grad, np.float32).copy(),
                                                np.asarray(hess, np.float32).copy()))
            worker._benchmark_reductions.append(shapes[first:])
            return grad, hess
        worker._benchmark_replayed += 1
        if self.mode == "reduce":
            from quantile_surrogate.boosting._collective import xgboost_communicator

            dtrain.get_label(), dtrain.get_weight()
            comm = xgboost_communicator()
            for op, dtype, size in worker._benchmark_reductions[worker._benchmark_replayed - 1]:
                comm.allreduce(np.zeros(size, dtype), op)
        return worker._benchmark_gradients[worker._benchmark_replayed - 1]


def clear_replay(dask_worker):
    """Empty a worker's recorded rounds (``client.run(clear_replay)``; Dask passes the worker), and its process's
    record of reduction shapes (a recording reads only the calls it makes)."""
    dask_worker._benchmark_gradients, dask_worker._benchmark_reductions, dask_worker._benchmark_replayed = [], [], 0
    _wrap_allreduce()._benchmark_shapes.clear()


def restart_replay(dask_worker):
    """Hand a worker's recorded rounds back from the first again (a second replay of one recording)."""
    dask_worker._benchmark_replayed = 0


def same_trees(first, second) -> bool:
    """Whether two boosters hold the same trees (every split, threshold, leaf value and cover)."""
    return first.trees_to_dataframe().equals(second.trees_to_dataframe())


def row_weights(y):
    """``--weights``: 10 on the negatives, 1 on the positives (a NumPy or Dask array of labels)."""
    return (y == 0) * (NEGATIVE_WEIGHT - 1.0) + 1.0


# -- one cluster ------------------------------------------------------------------------------------
def per_round(client, X, y, rounds: int, bandwidth: float, quantile: str, processes: bool, weight=None,
              repeats: int = 1, start_rounds: int = 0, replay: bool = False) -> dict:
    """Seconds per round of ``binary:logistic``, of :func:`logloss_objective` and of the quantile objective, the
    quantile objective's reductions per round (rank 0), and each objective's leaves per tree. With ``repeats`` the
    three runs are made that many times in turn, and each objective's seconds are its runs' rounds one after the
    other. With ``start_rounds`` every timed run continues from one ``binary:logistic`` booster of that many
    rounds, as the estimators' quantile rounds follow their log-loss start (only the new rounds are timed)."""
    from xgboost import dask as dxgb

    dtrain = dxgb.DaskDMatrix(client, X, y, weight=weight)
    mean = y.mean() if weight is None else (y * weight).sum() / weight.sum()
    params = {"nthread": 1, "verbosity": 0, "tree_method": "hist", "base_score": float(mean.compute())}
    start = None
    if start_rounds:
        start = dxgb.train(client, {**params, "objective": "binary:logistic"}, dtrain, num_boost_round=start_rounds,
                           verbose_eval=False)["booster"]
        del params["base_score"]  # the start's own, kept by the runs that continue it
    fn = xgboost_objective(OBJECTIVE, TARGET, quantile=quantile, bandwidth=bandwidth)
    seconds = {"logloss_s": [], "custom_logloss_s": [], "quantile_s": [],
               **({"replay_s": [], "reduced_s": []} if replay else {})}
    leaves = {name: [] for name in seconds}
    custom = {"disable_default_eval_metric": 1}
    plan = [("logloss_s", {"objective": "binary:logistic"}, None), ("custom_logloss_s", custom, logloss_objective),
            ("quantile_s", custom, fn)]
    plan += [("record", custom, GradientReplay(fn, "record")), ("replay_s", custom, GradientReplay(fn, "replay")),
             ("reduced_s", custom, GradientReplay(fn, "reduce"))] if replay else []
    setup = {"record": clear_replay, "reduced_s": restart_replay}  # else: count the run's reductions afresh
    calls, same = [], []
    for _ in range(repeats):  # in turn, so that a slow spell of the machine falls on every objective
        boosters = {}
        for name, extra, obj in plan:
            client.run(setup.get(name, _install_counter))  # the quantile run's reductions alone are counted
            boosters[name] = dxgb.train(client, {**params, **extra}, dtrain, num_boost_round=rounds, obj=obj,
                                        xgb_model=start, callbacks=[_round_timer()], verbose_eval=False)["booster"]
            if name == "quantile_s":
                records = list(client.run(_read_counter).values())
                calls += [c for c in (sum(records, []) if processes else records[0]) if c[0] == 0]  # threads: one list
            if name in seconds:
                seconds[name].append(_round_seconds(boosters[name]))
                leaves[name].append(leaves_per_tree(boosters[name], start_rounds))
        if replay:
            same.append(same_trees(boosters["record"], boosters["replay_s"])
                        and same_trees(boosters["quantile_s"], boosters["replay_s"])
                        and same_trees(boosters["replay_s"], boosters["reduced_s"]))
            client.run(clear_replay)  # the recorded rounds' memory back
    return dict(**{name: np.concatenate(runs) for name, runs in seconds.items()},
                **{f"{name[:-2]}_leaves": float(np.mean(counts)) for name, counts in leaves.items()},
                reductions_per_round=len(calls) / (rounds * repeats),
                bytes_per_round=sum(b for _, b in calls) / (rounds * repeats),
                **({"replay_same_trees": all(same)} if replay else {}))


def after_first(seconds: np.ndarray, rounds: int) -> np.ndarray:
    """The rounds of :func:`per_round`'s seconds without each run's first (XGBoost's one-time work)."""
    return np.delete(seconds, np.arange(0, seconds.size, rounds))


def run_cluster(workers: int, args, settings: dict, test) -> dict:
    from distributed import Client, LocalCluster

    X_test, y_test = test
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=args.processes,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        # Placed as the estimator's fit places them (consecutive partitions on the ranks), so that the timed
        # xgboost.dask runs below grow the same trees from run to run as the estimator does.
        X, y = pin_partitions(client, list(dask_data(args.rows, args.partitions, seed=args.seed)))
        weight = pin_partitions(client, [row_weights(y)])[0] if args.weights else None
        start = time.perf_counter()
        model = DaskQuantileBoostingClassifier(client=client, **settings).fit(X, y, sample_weight=weight)
        fit_s = time.perf_counter() - start
        rounds = per_round(client, X, y, args.rounds, model.bandwidth_, settings["quantile"], args.processes, weight,
                           args.repeats, args.start_rounds, args.replay)
        later = {name: after_first(rounds[name], args.rounds) for name in TIMED if name in rounds}
        decision = model.decision_function(dask_data(len(y_test), 2, first=args.partitions, seed=args.seed)[0])
        precision = objective_metric(y_test, decision.compute(), objective=OBJECTIVE, target=TARGET)
    return dict(workers=workers, logloss_s_per_round=rounds["logloss_s"].mean(),
                quantile_s_per_round=rounds["quantile_s"].mean(),
                custom_logloss_s_after_first=later["custom_logloss_s"].mean(),
                logloss_s_after_first=later["logloss_s"].mean(), quantile_s_after_first=later["quantile_s"].mean(),
                logloss_s_median=float(np.median(rounds["logloss_s"])),
                quantile_s_median=float(np.median(rounds["quantile_s"])), logloss_s=rounds["logloss_s"],
                quantile_s=rounds["quantile_s"], custom_logloss_s=rounds["custom_logloss_s"],
                reductions_per_round=rounds["reductions_per_round"], logloss_leaves=rounds["logloss_leaves"],
                custom_logloss_leaves=rounds["custom_logloss_leaves"], quantile_leaves=rounds["quantile_leaves"],
                reduction_bytes_per_round=rounds["bytes_per_round"], dask_fit_s=fit_s,
                **({"replay_s": rounds["replay_s"], "replay_s_after_first": later["replay_s"].mean(),
                    "replay_leaves": rounds["replay_leaves"], "replay_same_trees": rounds["replay_same_trees"],
                    "reduced_s": rounds["reduced_s"], "reduced_s_after_first": later["reduced_s"].mean()}
                   if "replay_s" in rounds else {}),
                dask_rounds_kept=model.best_iteration_, dask_precision=precision,
                held_out_partitions=" ".join(map(str, model.validation_partitions_[0])))


def run(args) -> pd.DataFrame:
    settings = dict(objective=OBJECTIVE, target=TARGET, quantile=args.quantile, n_estimators=args.rounds,
                    n_quantile_estimators=args.rounds, random_state=args.seed, backend_params={"nthread": 1})
    test = local_data(args.rows // 4, 2, first=args.partitions, seed=args.seed)
    X, y = local_data(args.rows, args.partitions, seed=args.seed)
    start = time.perf_counter()
    single = QuantileBoostingClassifier(backend="xgboost", validation_splits=1, **settings).fit(
        X, y, sample_weight=row_weights(y) if args.weights else None)
    single_row = dict(single_fit_s=time.perf_counter() - start, single_rounds_kept=single.best_iteration_,
                      single_precision=objective_metric(test[1], single.decision_function(test[0]),
                                                        objective=OBJECTIVE, target=TARGET))
    del X, y
    rows = []
    for workers in args.workers:
        row = run_cluster(workers, args, settings, test)
        rows.append(dict(rows=args.rows, partitions=args.partitions, processes=args.processes, rounds=args.rounds,
                         quantile=args.quantile, weights=args.weights, repeats=args.repeats,
                         start_rounds=args.start_rounds, **row, **single_row))
    return pd.DataFrame(rows)


def start_note(start_rounds: int) -> str:
    return f", every timed run continues one binary:logistic start of {start_rounds} rounds" if start_rounds else ""


def summary(frame: pd.DataFrame) -> str:
    lines = ["| workers | s/round log loss | s/round quantile | ratio | s/round log loss as `obj=` (ratio) | "
             "first round s (log loss / quantile) | "
             "median s/round (log loss / quantile) | ratio of medians | reductions/round | bytes/round | "
             "leaves/tree (log loss / quantile) | "
             "P@R0.9 Dask | P@R0.9 one machine | fit s (Dask / one) | quantile rounds kept (Dask / one) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in frame.itertuples():
        later = {name: after_first(getattr(row, name), row.rounds) for name in ("logloss_s", "quantile_s",
                                                                                 "custom_logloss_s")}
        lines.append(f"| {row.workers} | {mean_se(later['logloss_s'])} | {mean_se(later['quantile_s'])} | "
                     f"{row.quantile_s_after_first / row.logloss_s_after_first:.2f} | "
                     f"{mean_se(later['custom_logloss_s'])} "
                     f"({row.custom_logloss_s_after_first / row.logloss_s_after_first:.2f}) | "
                     f"{row.logloss_s[0]:.2f} / {row.quantile_s[0]:.2f} | "
                     f"{row.logloss_s_median:.3f} / {row.quantile_s_median:.3f} | "
                     f"{row.quantile_s_median / row.logloss_s_median:.2f} | {row.reductions_per_round:g} | "
                     f"{row.reduction_bytes_per_round:,.0f} | {row.logloss_leaves:.1f} / {row.quantile_leaves:.1f} | "
                     f"{row.dask_precision:.4f} | {row.single_precision:.4f} | "
                     f"{row.dask_fit_s:.1f} / {row.single_fit_s:.1f} | {row.dask_rounds_kept} / "
                     f"{row.single_rounds_kept} |")
    for row in frame.itertuples() if "replay_s" in frame else ():
        replayed = after_first(row.replay_s, row.rounds)
        lines.append(f"\n{row.workers} workers, the quantile run's gradients replayed (`--replay`: the objective "
                     f"free, {'the same trees' if row.replay_same_trees else 'NOT the same trees'}): "
                     f"{mean_se(replayed)} s a round, "
                     f"{row.replay_s_after_first / row.logloss_s_after_first:.2f} times `binary:logistic`'s "
                     f"(the quantile objective's {row.quantile_s_after_first / row.logloss_s_after_first:.2f}); "
                     f"leaves/tree {row.replay_leaves:.1f}. With the objective's label read and its "
                     f"{row.reductions_per_round:g} reductions a round (`reduce`: its arithmetic alone free): "
                     f"{mean_se(after_first(row.reduced_s, row.rounds))} s a round, "
                     f"{row.reduced_s_after_first / row.logloss_s_after_first:.2f} times.")
    first = frame.iloc[0]
    repeats = int(first.get("repeats", 1))
    objectives = "five" if "replay_s" in frame else "three"
    lines.append(f"\n{first.rows:,} training rows in {first.partitions} partitions, {first.rounds} rounds"
                 f"{f' a run, each objective timed in {repeats} runs, the {objectives} in turn' if repeats > 1 else ''}, "
                 f"quantile={first['quantile']!r}, workers as {'processes' if first.processes else 'threads'}"
                 f"{start_note(int(first.get('start_rounds', 0)))}"
                 f"{f', negatives weigh {NEGATIVE_WEIGHT:g} (--weights)' if first.get('weights', False) else ''}; "
                 "seconds per round are rank 0's, mean ± s.e. over the rounds after the first of each run (XGBoost's "
                 "one-time work makes it slow: given apart, the first run's), and the median of all.")
    return "\n".join(lines)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", default="2,4", help="comma-separated worker counts")
    parser.add_argument("--rounds", type=int, default=50,
                        help="log-loss rounds, the most quantile rounds, and the timed rounds")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--quantile", default="kernel", choices=DISTRIBUTED_ESTIMATORS)
    parser.add_argument("--threads", dest="processes", action="store_false", help="workers as threads of this process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weights", action="store_true",
                        help=f"negative rows weigh {NEGATIVE_WEIGHT:g} in every fit (the test part is unweighted)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="time each objective's rounds this many times, the objectives in turn (a slow spell of a "
                             "shared machine then falls on each)")
    parser.add_argument("--start-rounds", type=int, default=0,
                        help="time the rounds that follow one binary:logistic start of this many rounds (as the "
                             "estimators' quantile rounds follow theirs); 0: from a constant start")
    parser.add_argument("--replay", action="store_true",
                        help="also time the quantile run's own gradients handed back (the same trees, the objective "
                             "free): the floor of a quantile round; and again after the objective's label read and "
                             "reductions (its arithmetic alone free)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, help="CSV (and a .md summary beside it); never overwritten")
    args = parser.parse_args(argv)
    problem = None if args.out is None else out_problem(args.out)
    if problem:
        parser.error(problem)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1; got {args.repeats}.")
    if args.start_rounds < 0:
        parser.error(f"--start-rounds must be at least 0; got {args.start_rounds}.")
    args.workers = [int(w) for w in names(args.workers, WORKERS, "--workers")]
    if args.quick:
        vars(args).update(QUICK)
    return args


def main(argv=None) -> pd.DataFrame:
    args = parse(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied scores at a threshold on few rounds; dask's resource notes
        frame = run(args)
    text = summary(frame)
    print(text)
    if args.out is not None:
        timed = [name for name in TIMED if name in frame]
        rounds = {f"{name}_rounds": frame[name].map(lambda seconds: " ".join(f"{s:.6f}" for s in seconds))
                  for name in timed}  # every round's seconds
        write_results(frame.drop(columns=timed).assign(**rounds), text + "\n", args.out)
    return frame


if __name__ == "__main__":
    main()
