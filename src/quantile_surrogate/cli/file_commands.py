"""``quantile-surrogate fit | predict | evaluate``: train and use a model on a user's own CSV or Parquet file.

::

    quantile-surrogate fit data.csv --label y --objective precision_at_recall --target 0.95 [--model linear|mlp] [--out model.qs]
    quantile-surrogate predict model.qs data.csv > predictions.csv
    quantile-surrogate evaluate model.qs test.csv      # test_report.md and test_pr_curve.png

Numeric columns are used as they are (the classifier standardises internally) and text
columns are one-hot encoded (scikit-learn's ``ColumnTransformer``). The saved model keeps that
preprocessing, the label's two classes and the package version (:mod:`._file_io`). Bad input ends with a one-line error that names the file, the column and
the problem, a non-zero exit status, and no output file (outputs are written to a temporary
file and moved into place). A model file is a pickle: load only files you trust.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__, metrics
from ._file_io import (  # noqa: F401  (re-exported: the tests and users reach them here)
    MAGIC,
    MISSING_CATEGORY,
    InputError,
    _atomic_write,
    _categorical_column,
    _compatible,
    _features,
    _first_row,
    _is_categorical,
    _labels,
    _schema,
    load_model,
    read_table,
    save_model,
)

OBJECTIVE_METRICS = {
    "precision_at_recall": ("precision at recall {target:g}", metrics.precision_at_recall),
    "precision_at_rate": ("precision at predicted positive rate {target:g}", metrics.precision_at_rate),
    "recall_at_fpr": ("recall at FPR {target:g}", metrics.recall_at_fpr),
}
# The constraint that `--delta` guarantees for each objective (see calibration.py).
OBJECTIVE_CONSTRAINTS = {"precision_at_recall": "recall", "precision_at_rate": "rate", "recall_at_fpr": "fpr"}


# ----------------------------------------------------------------------------- fit

def _build_pipeline(schema: dict, args):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from ..estimators import QuantileClassifier

    parts = []
    if schema["numeric"]:
        # QuantileClassifier standardises its inputs itself (standardize=True).
        parts.append(("numeric", "passthrough", schema["numeric"]))
    if schema["categorical"]:
        parts.append(("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False), schema["categorical"]))
    settings = dict(objective=args.objective, target=args.target, random_state=args.seed, verbose=not args.quiet)
    if args.model == "mlp":
        settings["hidden_layer_sizes"] = tuple(args.hidden_layer_sizes or (64,))
    if args.max_epochs is not None:
        settings["max_epochs"] = args.max_epochs
    model = Pipeline([("preprocess", ColumnTransformer(parts)), ("classifier", QuantileClassifier(**settings))])
    if args.delta is not None:
        from ..estimators.calibration import GuaranteedThresholdClassifier

        model = GuaranteedThresholdClassifier(
            model, constraint=OBJECTIVE_CONSTRAINTS[args.objective], target=args.target, delta=args.delta,
            calibration_size=args.calibration_size, random_state=args.seed)
    return model


def _check_unit_interval(value: float, flag: str, example: str) -> None:
    if not 0.0 < value < 1.0:
        raise InputError(f"{flag} must be strictly between 0 and 1; got {value:g} (e.g. {example}).")


def run_fit(args) -> int:
    _check_unit_interval(args.target, "--target", "0.95 for recall 95 %")
    if args.delta is not None:
        _check_unit_interval(args.delta, "--delta", "0.05 for a 95 % guarantee")
        _check_unit_interval(args.calibration_size, "--calibration-size", "0.3 to hold out 30 % of the rows")
    if args.model == "linear" and args.hidden_layer_sizes is not None:
        raise InputError("--hidden-layer-sizes needs --model mlp.")
    frame = read_table(args.data)
    y, classes = _labels(frame, args.label, args.data, args.positive)
    schema = _schema(frame, args.label, args.drop, args.categorical, args.data)
    X = _features(frame, schema, args.data)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    say(f"{args.data}: {len(X)} rows, {int(y.sum())} positive (class {classes[1]!r}; choose with --positive), "
        f"{len(schema['numeric'])} numeric columns.")
    if schema["categorical"]:
        levels = ", ".join(f"{c} ({pd.unique(X[c]).size} values)" for c in schema["categorical"])
        say(f"{args.data}: one-hot encoding the categorical columns {levels}; values unseen in training "
            f"are encoded as all zeros.")
    model = _build_pipeline(schema, args)
    try:
        model.fit(X, y)
    except (ValueError, FloatingPointError) as error:  # too few held-out positives for --delta, divergence
        raise InputError(f"{args.data}: {str(error).splitlines()[0]}")
    bundle = {"model": model, "label": args.label, "classes": classes, "schema": schema,
              "objective": args.objective, "target": args.target, "delta": args.delta,
              "calibration_size": args.calibration_size if args.delta is not None else None, "model_kind": args.model,
              "trained_on": str(args.data), "n_rows": int(len(X)), "version": __version__}
    save_model(bundle, args.out)
    say(f"Wrote {args.out}.")
    return 0


# ----------------------------------------------------------------------------- predict

def run_predict(args) -> int:
    bundle = load_model(args.model_file)
    frame = read_table(args.data)
    X = _features(frame, bundle["schema"], args.data)
    score = np.asarray(bundle["model"].decision_function(X), dtype=np.float64)
    classes = np.asarray(bundle["classes"], dtype=object)
    out = pd.DataFrame({"prediction": classes[(score > 0).astype(int)], "score": score})
    for column in args.keep:
        if column not in frame.columns:
            raise InputError(f"{args.data}: column '{column}' (named by --keep) is missing.")
    if args.keep:
        out = pd.concat([frame[args.keep].reset_index(drop=True), out], axis=1)
    if args.out is None:
        try:
            out.to_csv(sys.stdout, index=False)
            sys.stdout.flush()
        except BrokenPipeError:  # `predict ... | head`: the reader left; stay quiet, as other tools do
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    else:
        _atomic_write(Path(args.out), lambda p: out.to_csv(p, index=False))
    return 0


# ----------------------------------------------------------------------------- evaluate

class _Sorted:
    """Rows sorted by decreasing score, with the last index of each group of tied scores."""

    def __init__(self, positive, score):
        order = np.argsort(-score, kind="stable")
        self.order, self.score, self.positive = order, score[order], positive[order]
        self.ends = np.r_[self.score[1:] != self.score[:-1], True]
        self.flagged = self.score > 0


def _metrics_from_counts(data: _Sorted, counts: np.ndarray, objective: str, target: float) -> np.ndarray:
    """The four reported metrics on resamples given as row counts ``counts`` (B, n), sorted order.

    A bootstrap resample is the original rows with multiplicities, so its sort order is the
    original one: cumulative weighted true and false positives at the end of each tie group
    give every threshold's counts at once (the PR and ROC curves' points). The values equal
    :mod:`quantile_surrogate.metrics` on the explicitly resampled arrays (tested).
    Returns (B, 4): precision, recall, rate at ``score > 0``, and the objective's metric.
    """
    counts = counts.astype(np.float64)
    n = counts.shape[1]
    pos_counts = counts * data.positive
    tp = np.cumsum(pos_counts, axis=1)[:, data.ends]
    fp = np.cumsum(counts - pos_counts, axis=1)[:, data.ends]
    n_pos, n_neg = tp[:, -1], fp[:, -1]
    flagged = counts[:, data.flagged].sum(axis=1)
    hits = pos_counts[:, data.flagged].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.column_stack([hits / flagged, hits / n_pos, flagged / n, np.zeros(len(counts))])
        if objective == "precision_at_recall":
            good = tp / n_pos[:, None] >= target - 1e-12
            out[:, 3] = np.where(good, tp / (tp + fp), -np.inf).max(axis=1)
        elif objective == "recall_at_fpr":
            good = fp / n_neg[:, None] <= target + 1e-12
            out[:, 3] = np.where(good, tp / n_pos[:, None], 0.0).max(axis=1)
        else:  # precision among the top k = ceil(rate n), ties at the k-th score shared fairly
            k = metrics.count_at_rate(n, target)
            seen = tp + fp
            g = np.argmax(seen >= k, axis=1)
            rows = np.arange(len(counts))
            before = np.where(g > 0, seen[rows, g - 1], 0.0)
            tp_before = np.where(g > 0, tp[rows, g - 1], 0.0)
            tied_tp = tp[rows, g] - tp_before
            out[:, 3] = (tp_before + (k - before) * tied_tp / (seen[rows, g] - before)) / k
    return out


def bootstrap_metrics(positive, score, objective: str, target: float, *, n_resamples: int = 1000, seed: int = 0):
    """Point values and 95 % percentile-bootstrap intervals of the four reported metrics.

    Rows are resampled with replacement ``n_resamples`` times (``numpy.random.default_rng(seed)``);
    resamples with a single class are skipped (recall and the objective are undefined there),
    and a resample with no predicted positive has no precision. Returns ``(rows, n_used)``,
    ``rows`` a list of ``(name, value, low, high)``.
    """
    positive = np.asarray(positive, dtype=bool)
    score = np.asarray(score, dtype=np.float64)
    data = _Sorted(positive, score)
    n = positive.size
    point = _metrics_from_counts(data, np.ones((1, n)), objective, target)[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // n)  # bounds memory at a few (chunk, n) float arrays
    draws = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        rows = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
        counts = np.bincount(rows.ravel(), minlength=size * n).reshape(size, n)[:, data.order]
        n_pos = counts[:, data.positive].sum(axis=1)
        both_classes = (n_pos > 0) & (n_pos < n)
        draws.append(_metrics_from_counts(data, counts[both_classes], objective, target))
    draws = np.concatenate(draws) if draws else np.empty((0, 4))
    name = OBJECTIVE_METRICS[objective][0].format(target=target) + " (the objective)"
    names = ["precision at the deployed threshold", "recall at the deployed threshold",
             "predicted positive rate at the deployed threshold", name]
    table = []
    for j, label in enumerate(names):
        column = draws[:, j][np.isfinite(draws[:, j])]
        low, high = np.percentile(column, [2.5, 97.5]) if column.size else (np.nan, np.nan)
        table.append((label, float(point[j]), float(low), float(high)))
    return table, int(draws.shape[0])


def _plot(positive, score, precision, recall, target, objective, title, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import precision_recall_curve

    curve_p, curve_r, _ = precision_recall_curve(positive, score)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.step(curve_r, curve_p, where="post", label="precision-recall curve")
    ax.plot([recall], [precision], "o", color="C3", label=f"deployed threshold (P={precision:.3f}, R={recall:.3f})")
    if objective == "precision_at_recall":
        ax.axvline(target, color="grey", linestyle=":", label=f"recall target {target:g}")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02), title=title)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    _atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=120))
    plt.close(fig)


def run_evaluate(args) -> int:
    bundle = load_model(args.model_file)
    frame = read_table(args.data)
    label, classes = bundle["label"], bundle["classes"]
    if label not in frame.columns:
        raise InputError(f"{args.data}: column '{label}' (the label the model was trained on) is missing.")
    values = frame[label]
    unknown = ~values.isin(classes)
    if unknown.any():
        raise InputError(f"{args.data}: column '{label}' holds {values[unknown].iloc[0]!r} at data row "
                         f"{_first_row(unknown)}; the model knows only {classes[0]!r} and {classes[1]!r}.")
    positive = (values == classes[1]).to_numpy()
    if positive.all() or not positive.any():
        raise InputError(f"{args.data}: column '{label}' has a single class; evaluation needs both.")
    X = _features(frame, bundle["schema"], args.data)
    score = np.asarray(bundle["model"].decision_function(X), dtype=np.float64)
    objective, target = bundle["objective"], bundle["target"]
    table, used = bootstrap_metrics(positive, score, objective, target, n_resamples=args.bootstrap, seed=args.seed)
    out_dir, stem = Path(args.out_dir), Path(args.data).stem
    report_path, plot_path = out_dir / f"{stem}_report.md", out_dir / f"{stem}_pr_curve.png"
    lines = [
        f"# {Path(args.model_file).name} on {Path(args.data).name}",
        "",
        f"Model: QuantileClassifier ({bundle['model_kind']}), objective {objective}, target {target:g}"
        + (f", threshold calibrated on a held-out {bundle['calibration_size']:.0%} of the training rows so that "
           f"the constraint holds with probability >= {1 - bundle['delta']:g}" if bundle.get("delta") else "")
        + f"; trained on {Path(bundle['trained_on']).name} ({bundle['n_rows']} rows) with quantile-surrogate "
        f"{bundle['version']}.",
        f"Test rows: {len(positive)}, of which {int(positive.sum())} positive (class {classes[1]!r}).",
        "",
        "| metric | value | 95 % bootstrap interval |",
        "|---|---|---|",
        *[f"| {name} | {value:.4f} | [{low:.4f}, {high:.4f}] |" for name, value, low, high in table],
        "",
        f"Percentile bootstrap over rows: {used} of {args.bootstrap} resamples (those with both classes), "
        f"seed {args.seed}. The deployed threshold predicts positive when the score is > 0.",
        "",
        f"![precision-recall curve]({plot_path.name})",
        "",
    ]
    text = "\n".join(lines)
    precision, recall = table[0][1], table[1][1]
    _plot(positive, score, precision, recall, target, objective, f"{Path(args.data).name}: {objective}", plot_path)
    _atomic_write(report_path, lambda p: p.write_text(text))
    print(text)
    print(f"Wrote {report_path} and {plot_path}.", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- parsers

def _guarded(handler):
    """Turn an :class:`InputError` into one line on stderr and exit status 1 (no traceback)."""
    def run(args) -> int:
        try:
            return handler(args)
        except InputError as error:
            print(f"quantile-surrogate {args.command}: error: {error}", file=sys.stderr)
            return 1
    return run


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise ValueError(text)
    return sizes


def register(subparsers) -> None:
    fit = subparsers.add_parser("fit", help="train a model on a CSV or Parquet file",
                                description="Train a QuantileClassifier on a CSV or Parquet file and save it.")
    fit.add_argument("data", type=Path, help="training data, .csv or .parquet")
    fit.add_argument("--label", required=True, help="the column holding the binary label")
    fit.add_argument("--objective", choices=sorted(OBJECTIVE_METRICS), default="precision_at_recall")
    fit.add_argument("--target", type=float, required=True,
                     help="the constraint's target in (0, 1): the recall, predicted positive rate or FPR")
    fit.add_argument("--model", choices=("linear", "mlp"), default="linear")
    fit.add_argument("--hidden-layer-sizes", type=_sizes, default=None, metavar="N[,N...]",
                     help="for --model mlp (default: 64)")
    fit.add_argument("--positive", default=None, help="the positive class (default: the larger of the two labels)")
    fit.add_argument("--categorical", nargs="+", default=[], metavar="COLUMN",
                     help="columns to one-hot encode even if they hold numbers")
    fit.add_argument("--drop", nargs="+", default=[], metavar="COLUMN", help="columns to ignore (ids, leaks)")
    fit.add_argument("--delta", type=float, default=None,
                     help="hold out --calibration-size of the rows and set the threshold so that the constraint holds "
                          "on new data with probability >= 1 - delta (docs/calibration.md)")
    fit.add_argument("--calibration-size", type=float, default=0.3, help="fraction held out for --delta (default 0.3)")
    fit.add_argument("--max-epochs", type=int, default=None, help="training epochs (default: the estimator's)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--out", type=Path, default=Path("model.qs"), help="model file to write (default model.qs)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    fit.set_defaults(handler=_guarded(run_fit))

    predict = subparsers.add_parser("predict", help="write predictions for a CSV or Parquet file",
                                    description="Write one row per input row: prediction (a class) and score "
                                                "(> 0 means the positive class).")
    predict.add_argument("model_file", type=Path, help="a model written by `quantile-surrogate fit`")
    predict.add_argument("data", type=Path)
    predict.add_argument("--out", type=Path, default=None, help="CSV file to write (default: standard output)")
    predict.add_argument("--keep", nargs="+", default=[], metavar="COLUMN", help="input columns to copy, e.g. an id")
    predict.set_defaults(handler=_guarded(run_predict))

    evaluate = subparsers.add_parser("evaluate", help="report precision, recall and rate with bootstrap intervals",
                                     description="Write DATA_report.md and DATA_pr_curve.png for a labelled file.")
    evaluate.add_argument("model_file", type=Path)
    evaluate.add_argument("data", type=Path, help="labelled test data (the label column the model was trained on)")
    evaluate.add_argument("--out-dir", type=Path, default=Path("."), help="folder for the report and plot (default .)")
    evaluate.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    evaluate.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    evaluate.set_defaults(handler=_guarded(run_evaluate))
