"""Group-wise rate constraints: QuantileClassifier(sensitive_features=) against fairlearn, on two small real data sets.

Two constraints, each required in every group (the group is a column removed from the features):

- ``dp``, demographic parity at a rate: predicted positive rate 20 % in every group
  (``objective="precision_at_rate", target=0.2``); violation = the largest gap between the
  groups' selection rates; objective = precision.
- ``eo``, equal opportunity at a level: recall >= 0.8 in every group
  (``objective="precision_at_recall", target=0.8``); violation = how far the smallest group
  recall falls below 0.8; objective = precision.

Methods (all on the same standardised features and the same splits):

=================  ===========================================================================
``lr``             LogisticRegression, one threshold met on the training rows (no groups)
``lr_groups``      LogisticRegression, one threshold per group met on that group's training rows
                   (the post-processing of Hardt et al. at the target level, deterministic)
``to``             fairlearn ThresholdOptimizer(LogisticRegression), "demographic_parity" or
                   "true_positive_rate_parity", objective "accuracy_score" (its default); it
                   equalises the rate but picks the level itself, randomised predictions
``eg``             fairlearn ExponentiatedGradient(LogisticRegression, DemographicParity() or
                   TruePositiveRateParity()), default error-rate objective, randomised predictions
``eg_level``       ``eg`` with the false-negative cost tuned by bisection on the training rows so
                   that it reaches the level (rate >= 0.2, or every group's recall >= 0.8)
``qc``             QuantileClassifier(objective=..., target=...), no groups
``qc_groups``      QuantileClassifier(objective=..., target=...).fit(X, y, sensitive_features=group)
=================  ===========================================================================

Data (nothing is downloaded):

- ``housing``: Boston Housing (``quantile_surrogate.datasets.load_housing(label="raw")``),
  506 tracts; group CHAS (tract bounds the Charles River: 35 tracts, 16 of them positive);
  label MEDV above its 75th percentile (124 positives); features: the other 11 columns, CHAS,
  MEDV and B removed. B encodes a racist assumption (UCI withdrew the data set, scikit-learn
  removed it), so it is dropped. A toy stand-in: CHAS is not a protected attribute.
- ``diabetes``: scikit-learn's bundled diabetes data (``load_diabetes(scaled=False)``, in its
  wheel), 442 patients; group: the ``sex`` column (coded 1/2, 235 and 207 patients; the data's
  documentation does not say which is which); label: disease progression above its 75th
  percentile (111 positives); features: the other 9 columns.

Each split is 50/50, stratified by (label, group), so that both halves hold the small group's
positives. Predictions of ``to``, ``eg`` and ``eg_level`` are drawn with ``random_state`` =
the split's seed (fairlearn's randomised classifiers, as deployed).

Run: ``nice -n 10 .venv/bin/python benchmarks/fairness_comparison.py --splits 20 --out results.csv``;
prints the markdown tables that ``docs/fairness.md`` quotes. ``--quick`` is a seconds-long
smoke run (used by the tests).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.datasets import HOUSING_COLUMNS, load_housing
from quantile_surrogate.objectives.thresholds import constraint_threshold, group_constraint_thresholds

CONSTRAINTS = {
    "dp": {"objective": "precision_at_rate", "target": 0.2, "fairlearn": "demographic_parity"},
    "eo": {"objective": "precision_at_recall", "target": 0.8, "fairlearn": "true_positive_rate_parity"},
}
METHODS = ("lr", "lr_groups", "to", "eg", "eg_level", "qc", "qc_groups")
LEVEL_STEPS = 6
"""Bisection steps on log2 of the false-negative cost in [-4, 6] for ``eg_level``."""


# -- data ------------------------------------------------------------------------------------
def load_housing_fair():
    """(X, y, groups): Boston Housing, label MEDV > its 75th percentile, group CHAS; CHAS, MEDV and B dropped."""
    table, _ = load_housing(label="raw")
    column = HOUSING_COLUMNS.index
    medv = table[:, column("MEDV")]
    y = (medv > np.percentile(medv, 75)).astype(np.int64)
    groups = np.where(table[:, column("CHAS")] == 1, "river", "inland")
    X = np.delete(table, [column("CHAS"), column("MEDV"), column("B")], axis=1)
    return X, y, groups


def load_diabetes_fair():
    """(X, y, groups): scikit-learn's diabetes data, label progression > its 75th percentile, group sex (removed)."""
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(scaled=False)
    sex = bunch.feature_names.index("sex")
    y = (bunch.target > np.percentile(bunch.target, 75)).astype(np.int64)
    groups = np.where(bunch.data[:, sex] == 1, "sex=1", "sex=2")
    return np.delete(bunch.data, sex, axis=1), y, groups


DATASETS = {"housing": load_housing_fair, "diabetes": load_diabetes_fair}


# -- methods ---------------------------------------------------------------------------------
def _logistic():
    # newton-cholesky minimises the same penalised likelihood as the default lbfgs (C=1, the
    # intercept unpenalised) to tighter tolerance, and is ~5x faster on these few features,
    # which matters inside ExponentiatedGradient's dozens of weighted refits.
    return LogisticRegression(solver="newton-cholesky", max_iter=1000)


def _fairlearn_moment(constraint):
    from fairlearn.reductions import DemographicParity, TruePositiveRateParity

    return DemographicParity() if constraint == "dp" else TruePositiveRateParity()


def _meets_level(expected_positive, y, groups, constraint, target):
    """On the training rows: overall rate >= target (dp) or every group's recall >= target (eo)."""
    if constraint == "dp":
        return expected_positive.mean() >= target - 1e-9
    return all(expected_positive[(groups == g) & (y == 1)].mean() >= target - 1e-9 for g in np.unique(groups))


def _expgrad(X, y, groups, constraint, *, fn_cost=None, max_iter=50):
    from fairlearn.reductions import ErrorRate, ExponentiatedGradient

    objective = None if fn_cost is None else ErrorRate(costs={"fp": 1.0, "fn": fn_cost})
    return ExponentiatedGradient(_logistic(), _fairlearn_moment(constraint), objective=objective,
                                 max_iter=max_iter).fit(X, y, sensitive_features=groups)


def _expgrad_at_level(X, y, groups, constraint, target, *, steps, max_iter):
    """ExponentiatedGradient with the smallest false-negative cost (bisection on log2) that meets the level.

    Tuned on the expected predictions (fairlearn's ``_pmf_predict``, the probability of a
    positive under the randomised classifier) so that the bisection is not noisy.
    """
    low, high = -4.0, 6.0
    best = _expgrad(X, y, groups, constraint, fn_cost=2.0**high, max_iter=max_iter)
    for _ in range(steps):
        middle = (low + high) / 2
        model = _expgrad(X, y, groups, constraint, fn_cost=2.0**middle, max_iter=max_iter)
        if _meets_level(model._pmf_predict(X)[:, 1], y, groups, constraint, target):
            best, high = model, middle
        else:
            low = middle
    return best


def fit_predict(method, data, constraint, seed, quick=False):
    """Binary predictions ``(on the training rows, on the test rows)`` of ``method``."""
    X_train, y_train, g_train, X_test, g_test = data
    spec = CONSTRAINTS[constraint]
    objective, target = spec["objective"], spec["target"]
    if method in ("lr", "lr_groups"):
        model = _logistic().fit(X_train, y_train)
        s_train, s_test = model.decision_function(X_train), model.decision_function(X_test)
        if method == "lr":
            theta = constraint_threshold(s_train, y_train, objective=objective, target=target)
            return s_train > theta, s_test > theta
        labels, codes = np.unique(g_train, return_inverse=True)
        thetas = group_constraint_thresholds(s_train, y_train, codes, objective=objective, target=target)
        return s_train > thetas[codes], s_test > thetas[np.searchsorted(labels, g_test)]
    if method == "to":
        from fairlearn.postprocessing import ThresholdOptimizer

        model = ThresholdOptimizer(estimator=_logistic(), constraints=spec["fairlearn"], objective="accuracy_score",
                                   predict_method="decision_function")
        model.fit(X_train, y_train, sensitive_features=g_train)
        return (model.predict(X_train, sensitive_features=g_train, random_state=seed) == 1,
                model.predict(X_test, sensitive_features=g_test, random_state=seed) == 1)
    if method in ("eg", "eg_level"):
        max_iter = 10 if quick else 50
        if method == "eg":
            model = _expgrad(X_train, y_train, g_train, constraint, max_iter=max_iter)
        else:
            model = _expgrad_at_level(X_train, y_train, g_train, constraint, target,
                                      steps=2 if quick else LEVEL_STEPS, max_iter=max_iter)
        return model.predict(X_train, random_state=seed) == 1, model.predict(X_test, random_state=seed) == 1
    if method in ("qc", "qc_groups"):
        settings = dict(max_epochs=20, n_restarts=1) if quick else {}
        model = QuantileClassifier(objective=objective, target=target, random_state=seed, **settings)
        if method == "qc":
            model.fit(X_train, y_train)
            return model.predict(X_train) == 1, model.predict(X_test) == 1
        model.fit(X_train, y_train, sensitive_features=g_train)
        return model.predict(X_train, sensitive_features=g_train) == 1, model.predict(X_test, sensitive_features=g_test) == 1
    raise ValueError(f"`method` must be one of {METHODS}; got {method!r}.")


# -- measures --------------------------------------------------------------------------------
def measures(predicted, y, groups, constraint):
    """Precision, selection rate and the constraint's violation on these rows (a dict of floats)."""
    predicted = np.asarray(predicted, dtype=bool)
    labels = np.unique(groups)
    out = {"precision": float(y[predicted].mean()) if predicted.any() else 0.0,
           "rate": float(predicted.mean())}
    if constraint == "dp":
        rates = [predicted[groups == g].mean() for g in labels]
        out.update({f"rate[{g}]": float(r) for g, r in zip(labels, rates)})
        out["violation"] = float(max(rates) - min(rates))
    else:
        recalls = [predicted[(groups == g) & (y == 1)].mean() for g in labels]
        out.update({f"recall[{g}]": float(r) for g, r in zip(labels, recalls)})
        out["min_recall"] = float(min(recalls))
        out["violation"] = float(max(0.0, CONSTRAINTS[constraint]["target"] - min(recalls)))
    return out


def run(datasets=tuple(DATASETS), constraints=tuple(CONSTRAINTS), methods=METHODS, splits=20, quick=False,
        progress=False):
    """One row per (data set, constraint, method, split, side) with :func:`measures` and the fit time."""
    torch.set_num_threads(1)
    rows = []
    for name in datasets:
        X, y, groups = DATASETS[name]()
        for split in range(splits):
            codes = np.unique(groups, return_inverse=True)[1]
            train, test = train_test_split(np.arange(len(y)), test_size=0.5, random_state=split,
                                           stratify=y * (codes.max() + 1) + codes)
            scaler = StandardScaler().fit(X[train])
            data = (scaler.transform(X[train]), y[train], groups[train], scaler.transform(X[test]), groups[test])
            for constraint in constraints:
                for method in methods:
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # fairlearn's and sklearn's chatter (FutureWarning etc.)
                        on_train, on_test = fit_predict(method, data, constraint, seed=split, quick=quick)
                    seconds = time.perf_counter() - start
                    for side, predicted, rows_ in (("train", on_train, train), ("test", on_test, test)):
                        rows.append({"data": name, "constraint": constraint, "method": method, "split": split,
                                     "side": side, "seconds": seconds,
                                     **measures(predicted, y[rows_], groups[rows_], constraint)})
                    if progress:
                        print(f"{name} split {split} {constraint} {method}: {seconds:.1f} s", flush=True)
    return pd.DataFrame(rows)


def _mean_std(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.3f} ± {values.std(ddof=1) if values.size > 1 else 0.0:.3f}"


def summary(frame: pd.DataFrame) -> str:
    """Markdown tables, one per (data set, constraint): mean ± std over the splits."""
    blocks = []
    for (name, constraint), part in frame.groupby(["data", "constraint"], sort=False):
        target = CONSTRAINTS[constraint]["target"]
        test, train = part[part.side == "test"], part[part.side == "train"]
        group_columns = sorted(c for c in test.columns if c.startswith("rate[" if constraint == "dp" else "recall[")
                               and test[c].notna().any())
        if constraint == "dp":
            title = f"{name}: demographic parity at rate {target:g} (violation = max gap in selection rate)"
            header = ["method", "precision (test)", "rate (test)", *[f"{c} (test)" for c in group_columns],
                      "gap (test)", "gap (train)", "fit s"]
        else:
            title = (f"{name}: equal opportunity, recall >= {target:g} in every group "
                     f"(violation = shortfall of the smallest group recall)")
            header = ["method", "precision (test)", "rate (test)", *[f"{c} (test)" for c in group_columns],
                      "min recall (test)", "P(min recall < target) (test)", "min recall (train)", "fit s"]
        lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for method in [m for m in METHODS if m in set(test.method)]:
            te, tr = test[test.method == method], train[train.method == method]
            cells = [method, _mean_std(te.precision), _mean_std(te.rate), *[_mean_std(te[c]) for c in group_columns]]
            if constraint == "dp":
                cells += [_mean_std(te.violation), _mean_std(tr.violation)]
            else:
                cells += [_mean_std(te.min_recall), f"{(te.min_recall < target - 1e-9).mean():.2f}",
                          _mean_std(tr.min_recall)]
            cells.append(f"{te.seconds.mean():.2f}")
            lines.append("| " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    n_splits = frame.split.nunique()
    return f"Mean ± standard deviation over {n_splits} random 50/50 splits.\n\n" + "\n\n".join(blocks) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--data", nargs="+", choices=sorted(DATASETS), default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--quick", action="store_true", help="few epochs and iterations: a smoke run")
    parser.add_argument("--out", help="also write every split's measures to this CSV file")
    args = parser.parse_args(argv)
    if args.splits < 1:
        parser.error(f"--splits must be >= 1; got {args.splits}")
    frame = run(args.data, methods=tuple(args.methods), splits=args.splits, quick=args.quick, progress=True)
    if args.out:
        frame.to_csv(args.out, index=False)
    print(summary(frame))
    return frame


if __name__ == "__main__":
    main()
