"""QuantileClassifier with its default settings against thresholded logistic regression.

For each data set, objective and target: random stratified train/test splits (seed = split
index); both models are fitted on the training part and scored on the test part with the
objective's exact metric (``QuantileClassifier.score``, i.e. :mod:`quantile_surrogate.metrics`).
Logistic regression is ``make_pipeline(StandardScaler(), LogisticRegression())``; its score at
a rate, a recall or an FPR reads its ranking at that operating point, which is what moving
its threshold does.

Usage (the table in docs/estimator.md came from this)::

    nice -n 10 .venv/bin/python benchmarks/estimator_defaults.py --cover-rows 100000

It prints a Markdown table, one row per case. ``--set name=value`` (repeatable) changes a
QuantileClassifier parameter for ablations, e.g. the paper's plain recipe::

    nice -n 10 .venv/bin/python benchmarks/estimator_defaults.py --datasets cover \
        --set init=random --set early_stopping=False --set max_epochs=3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import assignments  # noqa: E402
from quantile_surrogate import QuantileClassifier  # noqa: E402
from quantile_surrogate.datasets import load_cover, load_housing, load_ionosphere, make_gaussian_mixture  # noqa: E402
from quantile_surrogate.objectives import objective_metric  # noqa: E402

CASES = {
    # name: (train fraction, [(objective, target), ...])
    "ionosphere": (0.3, [("precision_at_rate", t) for t in (0.01, 0.05, 0.095, 0.14, 0.19)]
                   + [("precision_at_recall", 0.9), ("recall_at_fpr", 0.05)]),
    "housing": (0.66, [("precision_at_rate", t) for t in (0.01, 0.03, 0.05)]
                + [("precision_at_recall", 0.9), ("recall_at_fpr", 0.05)]),
    "cover": (0.7, [("precision_at_rate", 0.005), ("precision_at_rate", 0.01),
                    ("precision_at_recall", 0.9), ("recall_at_fpr", 0.01)]),
    "mixture": (0.5, [("precision_at_recall", 0.95), ("precision_at_recall", 0.9)]),
}


def load(name, cover_rows):
    if name == "ionosphere":
        return load_ionosphere()
    if name == "housing":
        return load_housing()
    if name == "mixture":
        return make_gaussian_mixture(6000, random_state=0)
    X, y = load_cover()
    if cover_rows and cover_rows < len(y):
        rows = np.random.default_rng(0).choice(len(y), cover_rows, replace=False)
        X, y = X[rows], y[rows]
    return X, y


def run_case(X, y, train_fraction, objective, target, splits, params):
    lr_scores, qc_scores, seconds = [], [], []
    for split in range(splits):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, train_size=train_fraction, random_state=split, stratify=y)
        lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
        lr_scores.append(objective_metric(y_test, lr.decision_function(X_test), objective=objective, target=target))
        start = time.perf_counter()
        qc = QuantileClassifier(objective=objective, target=target, random_state=split, **params)
        qc.fit(X_train, y_train)
        seconds.append(time.perf_counter() - start)
        qc_scores.append(qc.score(X_test, y_test))
    return np.array(lr_scores), np.array(qc_scores), float(np.mean(seconds))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="ionosphere,housing,cover,mixture")
    parser.add_argument("--objectives", default=None, help="comma-separated; default: all")
    parser.add_argument("--splits", type=int, default=10, help="splits for the small data sets")
    parser.add_argument("--cover-splits", type=int, default=3)
    parser.add_argument("--cover-rows", type=int, default=100_000, help="subsample Cover (0: all 286,048 rows)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a QuantileClassifier parameter to change (a Python literal)")
    args = parser.parse_args(argv)
    try:
        params = assignments(args.set, "--set")
    except ValueError as error:
        parser.error(str(error))
    if params:
        print(f"QuantileClassifier parameters changed: {params}")
    torch.set_num_threads(1)
    print("| data set | n train | objective | target | splits | thresholded LR | QuantileClassifier "
          "| QC better / tie / worse | fit s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        X, y = load(name, args.cover_rows)
        fraction, cases = CASES[name]
        splits = args.cover_splits if name == "cover" else args.splits
        for objective, target in cases:
            if args.objectives and objective not in args.objectives.split(","):
                continue
            lr, qc, seconds = run_case(X, y, fraction, objective, target, splits, params)
            better, tie = int((qc > lr).sum()), int((qc == lr).sum())
            print(f"| {name} | {int(round(fraction * len(y)))} | {objective} | {target:g} | {splits} "
                  f"| {lr.mean():.3f} +- {lr.std():.3f} | {qc.mean():.3f} +- {qc.std():.3f} "
                  f"| {better} / {tie} / {splits - better - tie} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
