"""Does the paper's convex bound make a better start than logistic regression? (issue 12, point 4)

With the lower-mean estimator (eq. (14)) and a linear model the precision-at-recall loss is
convex in the weights (section 4; ``tests/cross/test_convex_bound.py`` checks it), so its minimiser
does not depend on the start. This script fits that minimiser (full-batch, from the logistic
start, the ``quantile="lower_mean"`` loss) and then trains the default kernel loss from it,
beside the default QuantileClassifier (which starts from logistic regression and selects by
held-out folds), and beside the convex minimiser used as it is. Scored on held-out halves by
the exact precision at recall ``--recall``.

Data: the README's Gaussian mixture and the small development sets (``--data``). Run::

    nice -n 10 .venv/bin/python -m benchmarks.convex_start --splits 3
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from quantile_surrogate import QuantileClassifier, train
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.objectives import objective_metric, predict_scores
from quantile_surrogate.training.models import linear_scorer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adbench"
SETS = ("29_Pima", "47_yeast", "12_fault", "7_Cardiotocography", "41_Waveform")


def _data(name, data):
    if name == "mixture":
        return make_gaussian_mixture(4000, random_state=0)
    with np.load(Path(data) / f"{name}.npz") as archive:
        return archive["X"].astype(np.float64), archive["y"].astype(np.int64)


def _scores(model, X):
    return predict_scores(model, torch.as_tensor(X)).numpy()


def _convex_minimiser(X, y, recall, epochs):
    """The lower-mean loss's minimiser (convex for a linear model), reached by full-batch descent."""
    result = train(lambda: linear_scorer(X.shape[1]).double(), torch.as_tensor(X), torch.as_tensor(y),
                   objective="precision_at_recall", target=recall, quantile="lower_mean", learning_rate=0.1,
                   alpha=1e-3, max_epochs=epochs, init="logistic", random_state=0)
    return result.model


def run_split(name, X, y, split, recall, epochs):
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=split)
    mean, scale = X_tr.mean(0), np.where(X_tr.std(0) > 0, X_tr.std(0), 1.0)
    X_tr, X_te = (X_tr - mean) / scale, (X_te - mean) / scale
    metric = lambda s: objective_metric(y_te, s, objective="precision_at_recall", target=recall)  # noqa: E731
    default = QuantileClassifier(target=recall, random_state=split).fit(X_tr, y_tr)
    convex = _convex_minimiser(X_tr, y_tr, recall, epochs)
    from_convex = train(convex, torch.as_tensor(X_tr), torch.as_tensor(y_tr), objective="precision_at_recall",
                        target=recall, learning_rate=0.1, momentum=0.9, alpha=1e-3, max_epochs=epochs,
                        init="model", random_state=split)
    return {"set": name, "split": split, "default (logistic start, selected)": metric(default.decision_function(X_te)),
            "convex minimiser": metric(_scores(convex, X_te)),
            "kernel loss from the convex minimiser": metric(_scores(from_convex.model, X_te))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--recall", type=float, default=0.9)
    parser.add_argument("--epochs", type=int, default=200)
    args = parser.parse_args(argv)
    rows = []
    names = ("mixture",) + tuple(s for s in SETS if (Path(args.data) / f"{s}.npz").exists())
    warnings.simplefilter("ignore")
    for name in names:
        X, y = _data(name, args.data)
        for split in range(args.splits):
            rows.append(run_split(name, X, y, split, args.recall, args.epochs))
            print(rows[-1], flush=True)
    methods = [k for k in rows[0] if k not in ("set", "split")]
    print(f"\n| set | {' | '.join(methods)} |\n|---|" + "---|" * len(methods))
    for name in names:
        cells = []
        for method in methods:
            values = np.array([r[method] for r in rows if r["set"] == name])
            cells.append(f"{values.mean():.3f} ± {values.std(ddof=1) / np.sqrt(len(values)):.3f}")
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
