"""Threshold moving against a trained operating point, on UCI Ionosphere (the guide's numbers and plot).

Run from the repository root (a few minutes on two cores):

    python docs/examples/threshold_moving.py

Two operating points, each on the same 20 stratified half/half splits (the positives are the
"good" radar returns, 64 % of the rows):

- precision at a predicted positive rate of 5 % (Precision@K, the paper's table 1);
- precision at recall >= 0.95 (the estimator's default objective).

On the training half of each split two models are trained:

- logistic regression (standardised features), its threshold then moved on the training half
  so that the constraint holds there (``thresholds.constraint_threshold``);
- ``QuantileClassifier(objective=..., target=...)``: the operating point's quantile surrogate
  is the training loss, and ``threshold_`` meets the constraint on the training half.

On the test half it prints, per model, the precision and the constrained rate at the model's
own threshold (what a deployed model gives), and the objective's exact metric (the best
precision any threshold reaches under the constraint on the test half: the ranking, free of
the threshold's estimation error); mean and standard error over the splits; and how often the
estimator's held-out selection kept its logistic-regression start. It writes
``threshold_moving.png`` beside this file: for each operating point, the test metric at every
target level (the best threshold, mean over the splits) and each model's mean operating point at
its own threshold.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import precision_recall_curve  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from quantile_surrogate import QuantileClassifier  # noqa: E402
from quantile_surrogate.datasets import load_ionosphere  # noqa: E402
from quantile_surrogate.metrics import precision_at_rate, precision_at_recall  # noqa: E402
from quantile_surrogate.objectives import objective_metric  # noqa: E402
from quantile_surrogate.objectives.thresholds import constraint_threshold  # noqa: E402

OPERATING_POINTS = (("precision_at_rate", 0.05, "predicted positive rate"), ("precision_at_recall", 0.95, "recall"))
SPLITS = 20
MODELS = ("LR + moved threshold", "QuantileClassifier")
OUT = Path(__file__).with_name("threshold_moving.png")


def at_threshold(y, scores, theta, rate):
    """(precision, the constrained rate) of the predictions ``scores > theta``."""
    predicted = scores > theta
    precision = float(y[predicted].mean()) if predicted.any() else np.nan
    achieved = predicted.mean() if rate == "predicted positive rate" else predicted[y == 1].mean()
    return precision, float(achieved)


def run(X, y, objective, target, rate):
    """Per model, a (splits, 3) array: precision and rate at its own threshold, the exact metric.

    Also the number of splits on which the estimator kept its logistic start, and every split's
    ``(y_test, ((lr_scores, lr_threshold), (qc_scores, 0.0)))`` for the plot.
    """
    rows = {name: [] for name in MODELS}
    kept_start, splits = 0, []
    for split in range(SPLITS):
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=split)
        lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X_train, y_train)
        theta = constraint_threshold(lr.decision_function(X_train), y_train, objective=objective, target=target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TiedScoresWarning and the like: not the subject here
            qc = QuantileClassifier(objective=objective, target=target, random_state=split).fit(X_train, y_train)
        kept_start += qc.best_epoch_ == 0
        # decision_function is f(x) - threshold_: the estimator's own threshold is 0.
        models = ((lr.decision_function(X_test), theta), (qc.decision_function(X_test), 0.0))
        for name, (scores, threshold) in zip(MODELS, models):
            metric = objective_metric(y_test, scores, objective=objective, target=target)
            rows[name].append((*at_threshold(y_test, scores, threshold, rate), metric))
        splits.append((y_test, models))
    return {name: np.array(values) for name, values in rows.items()}, kept_start, splits


def mean_se(column):
    return f"{np.nanmean(column):.3f} ({np.nanstd(column, ddof=1) / np.sqrt(np.isfinite(column).sum()):.3f})"


def mean_curve(splits, model, rate, levels):
    """The test metric at each target level (best threshold), averaged over the splits."""
    metric = precision_at_recall if rate == "recall" else precision_at_rate
    return np.mean([[metric(y_test, models[model][0], level) for level in levels]
                    for y_test, models in splits], axis=0)


def main():
    X, y = load_ionosphere()
    figure, panels = plt.subplots(1, 2, figsize=(11, 4.2))
    for (objective, target, rate), axes in zip(OPERATING_POINTS, panels):
        rows, kept_start, splits = run(X, y, objective, target, rate)
        print(f"\n{objective}, target {target}: Ionosphere, {SPLITS} stratified half/half splits, "
              "test half, mean (standard error)")
        print(f"| model | precision at its threshold | {rate} at its threshold | "
              f"{objective.replace('_', ' ')} {target} (exact, best threshold) |")
        print("|---|---|---|---|")
        for name in MODELS:
            print(f"| {name} | " + " | ".join(mean_se(c) for c in rows[name].T) + " |")
        gain = rows[MODELS[1]][:, 2] - rows[MODELS[0]][:, 2]
        print(f"exact metric, QuantileClassifier minus LR: {gain.mean():+.3f} "
              f"(s.e. {gain.std(ddof=1) / np.sqrt(SPLITS):.3f}); higher on {(gain > 0).sum()}, equal on "
              f"{(gain == 0).sum()}, lower on {(gain < 0).sum()} of {SPLITS} splits; "
              f"the held-out selection kept the logistic start on {kept_start} of {SPLITS}")

        levels = np.linspace(0.5, 0.99, 50) if rate == "recall" else np.linspace(0.01, 0.3, 59)
        for model, (name, color, marker) in enumerate(zip(MODELS, ("tab:gray", "tab:blue"), ("s", "o"))):
            axes.plot(levels, mean_curve(splits, model, rate, levels), color=color, label=f"{name}, best threshold")
            precision, achieved = np.nanmean(rows[name][:, 0]), np.nanmean(rows[name][:, 1])
            axes.plot([achieved], [precision], marker, color=color, markersize=8,
                      label=f"{name}, its own threshold")
        axes.axvline(target, color="k", linestyle=":", linewidth=1, label=f"target {rate} {target}")
        axes.set(xlabel=f"{rate} (test half)", ylabel="precision (test half)", title=f"{objective}, target {target}")
        axes.legend(loc="lower left", fontsize="small")
    figure.suptitle(f"Ionosphere, mean over {SPLITS} half/half splits")
    figure.tight_layout()
    figure.savefig(OUT, dpi=100)
    print(f"\nwrote {OUT.name}")


if __name__ == "__main__":
    main()
