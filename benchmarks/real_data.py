"""Real tabular data: thresholded baselines against the quantile models, trees included.

Every set of the development suite (docs/datasets.md lists them; the ``.npz`` files are read from
``--data``, by default the data folder beside a development checkout; nothing is copied into the package) plus Ionosphere and Housing
(``quantile_surrogate.datasets``). For each set: stratified 50/50 train/test splits (seed =
split index), two operating points, each method fitted on the training half and scored on
the test half by the objective's exact metric (:func:`quantile_surrogate.objectives.objective_metric`
on the model's raw scores: the best precision at recall >= 0.9, or the precision among the
top 5 % of rows, which is what moving the model's threshold to that point gives).

Methods (shared hyperparameters equal: 100 rounds, learning rate 0.1, LightGBM's
num_leaves=31 and min_child_samples=20, XGBoost's max_depth=6; one thread each):

=====================  ====================================================================
``logistic``           StandardScaler + LogisticRegression(max_iter=2000), threshold moved
``logistic_converged`` the same, solved to ``tol=1e-10`` (the optimum that QuantileClassifier's logistic
                       start reaches; scikit-learn's default ``tol=1e-4`` stops short of it)
``quantile_linear``    QuantileClassifier(objective=..., target=...), defaults (a linear model)
``quantile_mlp``       QuantileClassifier(..., hidden_layer_sizes=(64,))
``quantile_cv``        QuantileClassifierCV(objective=..., target=...), defaults (alpha, bandwidth, family by 3-fold)
``lightgbm``           LGBMClassifier, log loss, threshold moved ("LightGBM + threshold")
``xgboost``            XGBClassifier, log loss, threshold moved
``qb_lightgbm``        QuantileBoostingClassifier(objective=..., target=..., backend="lightgbm")
``qb_xgboost``         QuantileBoostingClassifier(objective=..., target=..., backend="xgboost")
=====================  ====================================================================

Run (docs/real_data.md's first table came from this; results/README.md has the command of every
committed table)::

    nice -n 10 .venv/bin/python benchmarks/real_data.py --splits 5 --max-rows 40000 \
        --methods logistic,quantile_linear,quantile_mlp,lightgbm,xgboost,qb_lightgbm,qb_xgboost \
        --out results/real_data/all_methods_5splits.csv

``--max-rows N`` subsamples larger sets (seeded, stratified; the table says so); ``--set
name=value`` changes a QuantileBoostingClassifier parameter (ablations, e.g. ``--set bandwidth=0.05``),
``--qc-set name=value`` a QuantileClassifier one (e.g. ``--qc-set selection_se=0``); ``--points
objective:target,...`` replaces the two operating points (e.g. ``--points precision_at_rate:0.01``);
``--timing`` times LightGBM's log-loss fit against QuantileBoostingClassifier on all of
33_skin; ``--quick`` is a seconds-long smoke run on Ionosphere and Housing (the tests use it).

``--compare CSV`` (repeatable) is the behaviour check: it re-runs the committed CSVs' rows for the
chosen sets and splits (by default the CSVs' own methods), matches them on (set, objective, target,
method, split) and compares every numeric column but the timing (``fit_seconds``), printing the
largest absolute difference per column and per method; it exits with status 1 when one exceeds
``--atol`` (default 1e-10) or a re-run row has no committed twin. results/README.md has the command.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import assignments  # noqa: E402
from quantile_surrogate import QuantileClassifier, QuantileClassifierCV  # noqa: E402
from quantile_surrogate._utils.files import atomic_write  # noqa: E402
from quantile_surrogate.datasets import load_housing, load_ionosphere  # noqa: E402
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier  # noqa: E402
from quantile_surrogate.objectives import get_objective, objective_metric  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adbench"
DEV_SETS = ("2_annthyroid", "7_Cardiotocography", "12_fault", "19_landsat", "27_PageBlocks", "28_pendigits",
            "29_Pima", "30_satellite", "33_skin", "41_Waveform", "47_yeast")
PACKAGED = ("ionosphere", "housing")
OPERATING_POINTS = (("precision_at_recall", 0.9), ("precision_at_rate", 0.05))
METHODS = ("logistic", "logistic_converged", "quantile_linear", "quantile_mlp", "quantile_cv", "lightgbm", "xgboost",
           "qb_lightgbm", "qb_xgboost")
REFERENCE = "lightgbm"
KEYS = ["set", "objective", "target", "method", "split"]
TIMING = ("fit_seconds",)  # never reproducible, so never compared


def load(name, data):
    if name == "ionosphere":
        return load_ionosphere()
    if name == "housing":
        return load_housing()
    with np.load(Path(data) / f"{name}.npz") as archive:
        return archive["X"].astype(np.float64), archive["y"].astype(np.int64)


def make(method, objective, target, seed, rounds, quick, overrides=None, qc_overrides=None):
    """A fresh, unfitted model and a function that returns its raw test scores.

    ``overrides`` (a dict) changes QuantileBoostingClassifier parameters, ``qc_overrides``
    QuantileClassifier ones (``quantile_linear``, ``quantile_mlp``), for ablations.
    """
    trees = dict(n_estimators=rounds, learning_rate=0.1)
    if method == "logistic":
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        return model, model.decision_function
    if method == "logistic_converged":
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=100_000, tol=1e-10))
        return model, model.decision_function
    if method == "quantile_cv":
        small = dict(estimator=QuantileClassifier(max_epochs=5, n_restarts=1), alphas=(1e-3,), bandwidths=(0.05,))
        model = QuantileClassifierCV(objective=objective, target=target, random_state=seed, **(small if quick else {}))
        return model, lambda X: model.decision_function(X)
    if method.startswith("quantile_"):
        epochs = dict(max_epochs=5, n_restarts=1) if quick else {}
        hidden = (64,) if method == "quantile_mlp" else ()
        model = QuantileClassifier(objective=objective, target=target, hidden_layer_sizes=hidden, random_state=seed, **epochs)
        model.set_params(**(qc_overrides or {}))
        return model, lambda X: model.decision_function(X)
    if method == "lightgbm":
        import lightgbm as lgb

        model = lgb.LGBMClassifier(**trees, num_leaves=31, min_child_samples=20, random_state=seed, verbose=-1,
                                   deterministic=True, force_col_wise=True, n_jobs=1)
        return model, lambda X: model.predict(X, raw_score=True)
    if method == "xgboost":
        import xgboost as xgb

        model = xgb.XGBClassifier(**trees, max_depth=6, random_state=seed, n_jobs=1, tree_method="hist")
        return model, lambda X: model.predict(X, output_margin=True)
    backend = method.removeprefix("qb_")
    threads = {"num_threads": 1} if backend == "lightgbm" else {"nthread": 1}
    model = QuantileBoostingClassifier(objective=objective, target=target, backend=backend, random_state=seed,
                                       backend_params=threads, **trees)
    model.set_params(**(overrides or {}))
    return model, lambda X: model.decision_function(X)


def operating_points(text: str) -> tuple:
    """``"objective:target,..."`` as ``((objective, target), ...)``; ValueError naming ``--points`` otherwise."""
    points = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        objective, _, target = item.partition(":")
        try:
            get_objective(objective)
            points.append((objective, float(target)))
        except (ValueError, KeyError) as error:
            raise ValueError(f"--points: {item!r} is not OBJECTIVE:TARGET (e.g. precision_at_rate:0.01): {error}") from None
    if not points:
        raise ValueError("--points: give at least one OBJECTIVE:TARGET, e.g. precision_at_rate:0.01")
    return tuple(points)


def run_split(name, X, y, split, methods, rounds, quick, overrides=None, qc_overrides=None, points=OPERATING_POINTS):
    torch.set_num_threads(1)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=split)
    rows = []
    for objective, target in points:
        for method in methods:
            model, scores = make(method, objective, target, split, rounds, quick, overrides, qc_overrides)
            start = time.perf_counter()
            model.fit(X_train, y_train)
            seconds = time.perf_counter() - start
            value = objective_metric(y_test, scores(X_test), objective=objective, target=target)
            extra = getattr(model, "best_iteration_", np.nan)
            rows.append(dict(set=name, objective=objective, target=target, method=method, split=split,
                             value=value, fit_seconds=seconds, quantile_rounds=extra, n_train=len(y_train)))
    return rows


def subsample(X, y, max_rows, seed=0):
    if not max_rows or len(y) <= max_rows:
        return X, y
    keep, _ = train_test_split(np.arange(len(y)), train_size=max_rows, stratify=y, random_state=seed)
    return X[keep], y[keep]


def run(datasets=None, splits=5, data=DEFAULT_DATA, methods=METHODS, max_rows=None, rounds=100, n_jobs=1,
        quick=False, overrides=None, qc_overrides=None, first_split=0, points=OPERATING_POINTS):
    """One row per (set, operating point, method, split): the test metric and the fit time."""
    if quick:
        datasets, splits, rounds = datasets or PACKAGED, 1, 10
    datasets = datasets or (tuple(n for n in DEV_SETS if (Path(data) / f"{n}.npz").is_file()) + PACKAGED)
    tasks, source_rows = [], {}
    for name in datasets:
        X, y = load(name, data)
        source_rows[name] = len(y)
        X, y = subsample(X, y, max_rows)
        tasks += [(name, X, y, split) for split in range(first_split, first_split + splits)]
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(run_split)(name, X, y, split, methods, rounds, quick, overrides, qc_overrides, points)
        for name, X, y, split in tasks)
    results = list(tqdm(results, total=len(tasks), desc="(set, split)", unit="split", disable=quick))
    frame = pd.DataFrame([row for rows in results for row in rows])
    frame["source_rows"] = frame.set.map(source_rows)
    return frame


def _mean_se(values):
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():.3f} ± {se:.3f}" if np.isfinite(se) else f"{values.mean():.3f}"


def summary(frame):
    """Markdown: per operating point, mean ± standard error, the paired difference to LightGBM, fit times."""
    lines = []
    methods = [m for m in METHODS if m in set(frame.method)]
    for (objective, target), block in frame.groupby(["objective", "target"], sort=False):
        title = get_objective(objective).metric_name.format(target=target)
        sets = list(dict.fromkeys(block.set))
        lines += [f"### {title}", "", "| set | n train | " + " | ".join(methods) + " |",
                  "|---|---|" + "---|" * len(methods)]
        for name in sets:
            rows = block[block.set == name]
            cells = [_mean_se(rows[rows.method == m].value) for m in methods]
            lines.append(f"| {name} | {int(rows.n_train.iloc[0])} | " + " | ".join(cells) + " |")
        if REFERENCE in methods:
            others = [m for m in methods if m != REFERENCE]
            lines += ["", f"Difference to `{REFERENCE}` (mean over splits of the paired difference ± its "
                      "standard error):",
                      "", "| set | " + " | ".join(others) + " |", "|---|" + "---|" * len(others)]
            wide = block.pivot_table(index=["set", "split"], columns="method", values="value")
            diffs = {m: wide[m] - wide[REFERENCE] for m in others}
            for name in sets:
                lines.append(f"| {name} | " + " | ".join(_mean_se(diffs[m].loc[name]) for m in others) + " |")
            dev = [s for s in sets if s in DEV_SETS]
            if dev:
                lines += ["", f"Over the {len(dev)} development sets (difference of the means per set):", "",
                          "| method | sets >= lightgbm | smallest difference | mean difference |", "|---|---|---|---|"]
                for m in others:
                    per_set = np.array([diffs[m].loc[s].mean() for s in dev])
                    lines.append(f"| {m} | {int((per_set >= -1e-12).sum())} of {len(dev)} | {per_set.min():+.4f} "
                                 f"| {per_set.mean():+.4f} |")
        lines += ["", "Mean fit seconds:", "", "| set | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
        for name in sets:
            rows = block[block.set == name]
            lines.append(f"| {name} | " + " | ".join(f"{rows[rows.method == m].fit_seconds.mean():.2f}"
                                                       for m in methods) + " |")
        lines.append("")
    if "source_rows" in frame:
        cut = frame[frame.n_train * 2 < frame.source_rows - 1].drop_duplicates("set")
        for _, row in cut.iterrows():
            lines.append(f"{row.set}: subsampled from {row.source_rows} to {2 * row.n_train} rows (stratified, "
                         "seed 0) before splitting.")
    return "\n".join(lines)


def compare(frame, reference, atol=1e-10):
    """Every re-run row against its committed twin: ``(report, ok)``.

    Rows are matched on ``KEYS``; each numeric column both frames share, except ``TIMING``, is
    compared as ``|new - committed|`` (two NaNs are equal, a NaN against a number is ``inf``).
    ``ok`` is False when a difference exceeds ``atol`` or a re-run row has no twin in ``reference``.
    """
    merged = frame.merge(reference, on=KEYS, how="left", suffixes=("", "_committed"), indicator=True)
    missing = merged[merged["_merge"] == "left_only"][KEYS]
    columns = [c for c in frame.columns if c not in KEYS and c not in TIMING and f"{c}_committed" in merged
               and pd.api.types.is_numeric_dtype(frame[c]) and pd.api.types.is_numeric_dtype(reference[c])]
    matched = merged[merged["_merge"] == "both"]
    diffs = {}
    for c in columns:
        new, old = matched[c].to_numpy(np.float64), matched[f"{c}_committed"].to_numpy(np.float64)
        both_nan = np.isnan(new) & np.isnan(old)
        diffs[c] = np.where(both_nan, 0.0, np.nan_to_num(np.abs(new - old), nan=np.inf))
    worst = {c: float(d.max()) if len(d) else 0.0 for c, d in diffs.items()}
    lines = [f"compared {len(matched)} rows ({matched.set.nunique()} sets, splits "
             f"{sorted(matched.split.unique().tolist())}, methods {sorted(matched.method.unique().tolist())}); "
             f"columns {columns} (not compared: {', '.join(TIMING)}); tolerance {atol:g}", "",
             "| method | rows | " + " | ".join(f"max abs diff {c}" for c in columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for method, rows in matched.groupby("method").groups.items():
        at = matched.index.get_indexer(rows)
        lines.append(f"| {method} | {len(at)} | " + " | ".join(f"{diffs[c][at].max():.3g}" for c in columns) + " |")
    overall = max(worst.values(), default=0.0)
    lines += ["", f"max abs diff over every compared column: {overall:.3g}"]
    if len(missing):
        lines.append(f"{len(missing)} re-run rows have no committed twin, e.g. {missing.iloc[0].to_dict()}")
    ok = overall <= atol and not len(missing) and len(matched) > 0
    lines.append("EQUAL within tolerance" if ok else "DIFFERENT: above tolerance, missing rows or nothing compared")
    return "\n".join(lines), ok


def timing(data=DEFAULT_DATA, rounds=100, repeats=3):
    """Fit seconds on all of 33_skin (one 50/50 training half): LightGBM log loss against QuantileBoostingClassifier."""
    import lightgbm as lgb

    torch.set_num_threads(1)
    X, y = load("33_skin", data)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    lines = [f"33_skin, {len(y_train)} training rows, {rounds} rounds, 1 thread, best of {repeats}:", "",
             "| objective | LightGBM log loss s | QuantileBoostingClassifier s | ratio | quantile rounds kept |",
             "|---|---|---|---|---|"]
    for objective, target in OPERATING_POINTS:
        base, ours, kept = [], [], None
        for _ in range(repeats):
            start = time.perf_counter()
            lgb.LGBMClassifier(n_estimators=rounds, verbose=-1, n_jobs=1, deterministic=True,
                               force_col_wise=True).fit(X_train, y_train)
            base.append(time.perf_counter() - start)
            model = QuantileBoostingClassifier(objective=objective, target=target, n_estimators=rounds, random_state=0,
                                               backend_params={"num_threads": 1})
            start = time.perf_counter()
            model.fit(X_train, y_train)
            ours.append(time.perf_counter() - start)
            kept = model.best_iteration_
        lines.append(f"| {objective} {target:g} | {min(base):.2f} | {min(ours):.2f} | {min(ours) / min(base):.2f} "
                     f"| {kept} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="folder of the adbench .npz files")
    parser.add_argument("--datasets", default=None, help="comma-separated names; default: every set found + packaged")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--first-split", type=int, default=0, help="seed of the first split (more splits later)")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--max-rows", type=int, default=None, help="subsample sets larger than this (stratified)")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the per-split rows to this CSV (must not exist)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timing", action="store_true", help="only the 33_skin fit-time comparison")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a QuantileBoostingClassifier parameter to change (a Python literal), for ablations")
    parser.add_argument("--qc-set", action="append", default=[], metavar="NAME=VALUE",
                        help="a QuantileClassifier parameter to change (a Python literal), e.g. selection_se=0")
    parser.add_argument("--points", default=None, metavar="OBJECTIVE:TARGET,...",
                        help="operating points instead of precision at recall 0.9 and at a 5 %% rate, "
                             "e.g. precision_at_rate:0.01")
    parser.add_argument("--compare", action="append", default=[], metavar="CSV",
                        help="committed per-split CSV(s) to re-run and compare (the behaviour check)")
    parser.add_argument("--atol", type=float, default=1e-10, help="tolerance of --compare")
    args = parser.parse_args(argv)
    if args.timing:
        print(timing(args.data, args.rounds))
        return
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        parser.error(f"--out {out} exists; choose a new file name (results are never overwritten).")
    reference = (pd.concat([pd.read_csv(path) for path in args.compare], ignore_index=True)
                 if args.compare else None)
    datasets = tuple(args.datasets.split(",")) if args.datasets else None
    methods = tuple(args.methods.split(","))
    if reference is not None:
        datasets = datasets or tuple(dict.fromkeys(reference.set))
        if args.methods == parser.get_default("methods"):
            methods = tuple(m for m in METHODS if m in set(reference.method))
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: unknown {unknown}; choose from {', '.join(METHODS)}.")
    try:
        overrides, qc_overrides = assignments(args.set, "--set"), assignments(args.qc_set, "--qc-set")
    except ValueError as error:
        parser.error(str(error))
    try:
        points = OPERATING_POINTS if args.points is None else operating_points(args.points)
    except ValueError as error:
        parser.error(str(error))
    frame = run(datasets, args.splits, args.data, methods, args.max_rows, args.rounds,
                args.n_jobs, args.quick, overrides, qc_overrides, args.first_split, points)
    if overrides:
        print(f"QuantileBoostingClassifier parameters changed: {overrides}\n")
    if qc_overrides:
        print(f"QuantileClassifier parameters changed: {qc_overrides}\n")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, lambda path: frame.to_csv(path, index=False))
    if reference is not None:
        report, ok = compare(frame, reference, args.atol)
        print(report)
        raise SystemExit(0 if ok else 1)
    print(summary(frame))


if __name__ == "__main__":
    main()
