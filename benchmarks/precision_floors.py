"""Issue 25: a precision floor in every group with one group-blind threshold, on UCI Adult and German credit.

The task: precision among the top 10 % (``objective="precision_at_rate", target=0.1``) with no group
more than 0.05 below the precision that logistic regression reaches over all rows at that rate,
``rate("precision", at_least=floor, in_each_group=True)``: a floor of predictive parity. The floor of
a split comes from its training rows only: logistic regression's out-of-fold scores (5 stratified
folds), their top 10 %, the precision there minus 0.05, rounded down to 0.01 (a precision measured
on the rows a model trained on overstates it: on German credit's 500 training rows by about 0.2). The
group is a column removed from the features (``fairness_constraints.load``), and no method sees it at
prediction.

Methods (the same features and splits as ``benchmarks/fairness_constraints.py``):

=============  ===========================================================================
``lr``         LogisticRegression, one threshold at the 10 % rate on the training rows: how far
               below the floor the least precise group falls when nothing is done
``qc_free``    QuantileClassifier at the same objective, no constraint
``qc``         the same with the floor in every group (``sensitive_features=group`` to train)
=============  ===========================================================================

fairlearn's reductions have no precision moment, so there is no ExponentiatedGradient row here.

Per (pair, split, method, side): overall ``precision``, the selected ``rate``, ``worst`` (the least
precise group's precision among the groups that select a row), ``floor``, ``ok`` (worst >= floor -
0.02 on that side) and ``fit_seconds``. The summary: mean ± standard error over splits and the share
of splits whose test rows keep the floor within 0.02.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/precision_floors.py --out results/fairness/precision_floors_20splits_exact_step.csv

``--quick`` (German credit, 2 splits, 20 epochs) is what the tests run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import StratifiedKFold, cross_val_predict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import mean_se, names, report  # noqa: E402
from benchmarks.fairness_comparison import _logistic  # noqa: E402
from benchmarks.fairness_constraints import (  # noqa: E402
    DATA_DIR, PAIRS, add_run_arguments, checked_run_arguments, features, load, pairs_of, split)
from quantile_surrogate.objectives.thresholds import constraint_threshold  # noqa: E402

RATE = 0.1
MARGIN = 0.05
"""How far below logistic regression's overall out-of-fold precision every group may fall."""
SLACK = 0.02
METHODS = ("lr", "qc_free", "qc")


def group_precisions(predicted, y, groups) -> dict:
    """``{group: precision}`` over the groups that select at least one row."""
    return {g: float(y[predicted & (groups == g)].mean()) for g in np.unique(groups) if (predicted & (groups == g)).any()}


def measures(predicted, y, groups, floor) -> dict:
    """Overall precision and rate, the least precise group's precision, and whether it keeps ``floor`` within the slack."""
    predicted, y = np.asarray(predicted, dtype=bool), np.asarray(y)
    per_group = group_precisions(predicted, y, groups)
    worst = min(per_group.values()) if per_group else math.nan
    return {"precision": float(y[predicted].mean()) if predicted.any() else 0.0, "rate": float(predicted.mean()),
            "worst": worst, "floor": floor, "ok": bool(worst >= floor - SLACK - 1e-12),
            "group_precisions": ";".join(f"{g}={p:.4f}" for g, p in per_group.items())}


def floor_of(X, y, seed) -> float:
    """The floor of the module docstring, from the training rows ``(X, y)`` alone."""
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    scores = cross_val_predict(_logistic(), X, y, cv=folds, method="decision_function")
    theta = constraint_threshold(scores, y, objective="precision_at_rate", target=RATE)
    return math.floor(100 * (float(y[scores > theta].mean()) - MARGIN) + 1e-9) / 100


def _lr(X, y):
    """Logistic regression with one threshold at the rate on its training rows."""
    model = _logistic().fit(X, y)
    theta = constraint_threshold(model.decision_function(X), y, objective="precision_at_rate", target=RATE)
    return lambda X_: model.decision_function(X_) > theta


def _qc(X, y, groups, floor, seed, quick, constrained):
    from quantile_surrogate import QuantileClassifier
    from quantile_surrogate.constraints import rate

    settings = dict(max_epochs=20, n_restarts=1) if quick else {}
    constraints = [rate("precision", at_least=floor, in_each_group=True)] if constrained else None
    model = QuantileClassifier(objective="precision_at_rate", target=RATE, constraints=constraints,
                               random_state=seed, **settings)
    model.fit(X, y, **({"sensitive_features": groups} if constrained else {}))
    return lambda X_: model.predict(X_) == 1


def run(pairs=PAIRS, methods=METHODS, splits=20, quick=False, progress=False, data_dir=DATA_DIR):
    """One row per (data, group, method, split, side)."""
    methods = names(methods, METHODS, "--methods")
    torch.set_num_threads(1)
    rows = []
    for pair in pairs_of(pairs):
        frame, y, groups = load(pair, data_dir)
        for seed in range(splits):
            train, test = split(y, groups, seed)
            X_train, X_test = features(frame, train, test)
            floor = floor_of(X_train, y[train], seed)  # the split's, one for every method
            for method in methods:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the estimator's own warning says when a floor is not met
                    start = time.perf_counter()
                    if method == "lr":
                        predict = _lr(X_train, y[train])
                    else:
                        predict = _qc(X_train, y[train], groups[train], floor, seed, quick, method == "qc")
                    seconds = time.perf_counter() - start
                for side, X_, rows_ in (("train", X_train, train), ("test", X_test, test)):
                    rows.append({"data": pair.split("/")[0], "group": pair.split("/")[1], "method": method,
                                 "split": seed, "side": side, **measures(predict(X_), y[rows_], groups[rows_], floor),
                                 "fit_seconds": seconds})
                if progress:
                    print(f"{pair} split {seed} {method}: {seconds:.2f} s", flush=True)
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> str:
    """Markdown: per (data, group), mean ± standard error per method and side, and the share of splits that keep the floor."""
    blocks = []
    for (data, group), part in frame.groupby(["data", "group"], sort=False):
        lines = [f"**{data}/{group}: precision at a {RATE:g} rate, every group's precision >= the floor "
                 f"(mean floor {part.floor.mean():.3f}), one threshold** ({part.split.nunique()} splits)", "",
                 "| method | precision (test) | rate (test) | least precise group (test) | least precise group (train) "
                 f"| share test >= floor - {SLACK:g} | fit s |", "|---|---|---|---|---|---|---|"]
        for method in [m for m in METHODS if m in set(part.method)]:
            test, train = (part[(part.method == method) & (part.side == side)] for side in ("test", "train"))
            lines.append(f"| {method} | {mean_se(test.precision)} | {mean_se(test.rate)} | {mean_se(test.worst)} "
                         f"| {mean_se(train.worst)} | {test.ok.mean():.2f} | {test.fit_seconds.mean():.2f} |")
        blocks.append("\n".join(lines))
    return ("Mean ± standard error over random 50/50 splits (stratified by label and group); the floor of a split is "
            f"logistic regression's out-of-fold precision at the rate on its training rows minus {MARGIN:g}, rounded down "
            "to 0.01.\n\n"
            + "\n\n".join(blocks) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, METHODS, "German credit, 2 splits, 20 epochs: a smoke run")
    args = parser.parse_args(argv)
    pairs, methods, splits = checked_run_arguments(parser, args, METHODS)
    frame = run(pairs, methods, splits=splits, quick=args.quick, progress=args.progress, data_dir=args.data_dir)
    return report(frame, summary(frame), args.out)


if __name__ == "__main__":
    main()
