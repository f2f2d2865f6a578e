"""``quantile-surrogate fit | predict | evaluate``: train and use a model on a user's own CSV or Parquet file.

::

    quantile-surrogate fit data.csv --label y --objective precision_at_recall --target 0.95 [--out model.qs]
    quantile-surrogate predict model.qs data.csv > predictions.csv
    quantile-surrogate evaluate model.qs test.csv      # test_report.md and test_pr_curve.png

Numeric columns are used as they are (the classifier standardises internally) and text
columns are one-hot encoded (:class:`._encoder.FrameEncoder`). The model file keeps that
preprocessing, the label's two classes and the package version, as JSON and tensors behind a
checksum; loading it runs no code from the file (:mod:`.model_file`). ``predict`` and
``evaluate`` read the data in chunks, so their memory does not grow with the file. Bad input
ends with a one-line error that names the file, the column and the problem, a non-zero exit
status, and no output file (:mod:`quantile_surrogate._utils.files`).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .._utils.files import WriteError, atomic_write, atomic_writes, check_output, check_stdout, describe_errno, output_folder
from ..objectives.bootstrap import bootstrap_metrics
from ..objectives import OBJECTIVES, get_objective
from ._args import int_at_least, layer_sizes, open_unit_interval
from .._utils.checks import check_sample_weight
from ._file_io import (InputError, categorical_column, column_warnings, features, iter_table, labels, read_table,
                       schema_of, show)
from ._report import group_lines, plot_writer, report_text
from .model_file import MODELS, SavedModel, load_model, save_model

__all__ = ["register", "run_fit", "run_predict", "run_evaluate"]


# ----------------------------------------------------------------------------- fit

def _classifier(args):
    settings = dict(objective=args.objective, target=args.target, random_state=args.seed, verbose=not args.quiet)
    if MODELS[args.model] == "QuantileBoostingClassifier":
        from ..estimators.boosted import QuantileBoostingClassifier

        extra = {} if args.n_estimators is None else {"n_estimators": args.n_estimators}
        return QuantileBoostingClassifier(backend=args.model, **settings, **extra)
    from ..estimators import QuantileClassifier

    if args.model == "mlp":
        settings["hidden_layer_sizes"] = tuple(args.hidden_layer_sizes or (64,))
    if args.max_epochs is not None:
        settings["max_epochs"] = args.max_epochs
    return QuantileClassifier(checkpoint=None if args.checkpoint is None else str(args.checkpoint), **settings)


def _build_model(schema: dict, args):
    """``Pipeline([FrameEncoder, classifier])``, wrapped for ``--delta`` in ``GuaranteedThresholdClassifier``."""
    from sklearn.pipeline import Pipeline

    from ..estimators import GuaranteedThresholdClassifier
    from ._encoder import FrameEncoder

    model = Pipeline([("preprocess", FrameEncoder(numeric=schema["numeric"], categorical=schema["categorical"])),
                      ("classifier", _classifier(args))])
    if args.delta is not None:
        model = GuaranteedThresholdClassifier(
            model, constraint=get_objective(args.objective).constraint, target=args.target, delta=args.delta,
            calibration_size=args.calibration_size, random_state=args.seed)
    return model


def _check_fit_outputs(args) -> None:
    """Refuse bad output paths before the (possibly long) training, not after it."""
    boosted = MODELS[args.model] == "QuantileBoostingClassifier"
    for flag, given, fits in (("--hidden-layer-sizes", args.hidden_layer_sizes, args.model == "mlp"),
                              ("--max-epochs", args.max_epochs, not boosted),
                              ("--checkpoint", args.checkpoint, not boosted),
                              ("--n-estimators", args.n_estimators, boosted)):
        if given is not None and not fits:
            needs = {"--hidden-layer-sizes": "--model mlp", "--n-estimators": "--model lightgbm or xgboost"}
            raise InputError(f"{flag} needs {needs.get(flag, '--model linear or mlp')}; it does nothing with "
                             f"--model {args.model}.")
    check_output(args.out, [args.data] + ([args.checkpoint] if args.checkpoint is not None else []))
    if args.checkpoint is not None:
        check_output(args.checkpoint, [args.data])
        if Path(args.checkpoint).resolve() == Path(args.out).resolve():
            raise InputError(f"--checkpoint {args.checkpoint} and --out {args.out} are one file; "
                             f"give them different paths.")


def _fit_groups(frame, args):
    """The ``--groups`` column as text labels (3 and 3.0 are one group), or None; it is not a feature."""
    column = args.groups
    if column is None:
        return None
    if column == args.label or column in args.drop or column in args.categorical:
        other = "--label" if column == args.label else "--drop" if column in args.drop else "--categorical"
        raise InputError(f"{args.data}: column '{column}' is named by --groups and by {other}; a group column is "
                         f"neither a label nor a feature, so name it once, with --groups.")
    if column not in frame.columns:
        raise InputError(f"{args.data}: column '{column}' (the --groups) is missing; the columns are "
                         f"{', '.join(frame.columns)}.")
    empty = frame[column].isna().to_numpy()
    if empty.any():
        raise InputError(f"{args.data}: column '{column}' (the --groups) has {int(empty.sum())} empty cells (first at "
                         f"data row {int(np.flatnonzero(empty)[0]) + 1}); every row needs a group.")
    return categorical_column(frame, column)


def _fit_weight(frame, args):
    """The ``--weight`` column as float64 frequency weights, or None; it is not a feature."""
    column = args.weight
    if column is None:
        return None
    named = {args.label: "--label", args.groups: "--groups", **{c: "--drop" for c in args.drop},
             **{c: "--categorical" for c in args.categorical}}
    if column in named:
        raise InputError(f"{args.data}: column '{column}' is named by --weight and by {named[column]}; a weight "
                         f"column is neither a label, a group nor a feature, so name it once, with --weight.")
    if column not in frame.columns:
        raise InputError(f"{args.data}: column '{column}' (the --weight) is missing; the columns are "
                         f"{', '.join(frame.columns)}.")
    if args.delta is not None:
        raise InputError("--weight cannot be combined with --delta: the guarantee is about unweighted i.i.d. rows.")
    try:
        return check_sample_weight(pd.to_numeric(frame[column], errors="raise").to_numpy(np.float64), len(frame),
                                   name=f"column '{column}' (--weight)")
    except (TypeError, ValueError) as error:
        raise InputError(f"{args.data}: {str(error).splitlines()[0]}") from None


def _fit_model(model, X, y, groups, weight=None) -> None:
    """``model.fit``; groups go to the calibration wrapper, or to the pipeline's classifier (trained per group);
    weights (``--weight``) to the pipeline's classifier."""
    if weight is not None:
        extra = {} if groups is None else {"classifier__groups": groups}
        model.fit(X, y, classifier__sample_weight=weight, **extra)
    elif groups is None:
        model.fit(X, y)
    elif hasattr(model, "named_steps"):
        model.fit(X, y, classifier__groups=groups)
    else:
        model.fit(X, y, groups=groups)


def run_fit(args) -> int:
    _check_fit_outputs(args)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    frame = read_table(args.data, skip=args.drop)
    y, classes = labels(frame, args.label, args.data, args.positive)
    groups = _fit_groups(frame, args)
    weight = _fit_weight(frame, args)
    schema = schema_of(frame, args.label, args.drop + ([args.groups] if groups is not None else [])
                       + ([args.weight] if weight is not None else []), args.categorical, args.data)
    X = features(frame, schema, args.data)
    del frame
    say(f"{args.data}: {len(X)} rows, {int(y.sum())} positive (class {show(classes[1])}; choose with --positive), "
        f"{len(schema['numeric'])} numeric columns.")
    for warning in column_warnings(X, schema, args.data):
        print(f"quantile-surrogate fit: warning: {warning}", file=sys.stderr)
    if schema["categorical"]:
        levels = ", ".join(f"{c} ({pd.unique(X[c]).size} values)" for c in schema["categorical"])
        say(f"{args.data}: one-hot encoding the categorical columns {levels}; values unseen in training "
            f"are encoded as all zeros.")
    if groups is not None:
        say(f"{args.data}: one threshold per group of column '{args.groups}' ({pd.unique(groups).size} groups); "
            f"predict and evaluate read the same column.")
    model = _build_model(schema, args)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what a library prints while fitting is not output
            _fit_model(model, X, y, groups, weight)
    except ImportError as error:  # --model lightgbm without LightGBM installed
        raise InputError(str(error).splitlines()[0]) from None
    except (ValueError, FloatingPointError) as error:  # too few held-out positives for --delta, divergence, checkpoint
        raise InputError(f"{args.data}: {str(error).splitlines()[0]}") from None
    saved = SavedModel(model=model, label=args.label, classes=classes, schema=schema, objective=args.objective,
                       target=args.target, model_kind=args.model, trained_on=str(args.data), n_rows=int(len(X)),
                       delta=args.delta, calibration_size=args.calibration_size if args.delta is not None else None,
                       groups=args.groups)
    save_model(saved, args.out, inputs=[args.data])
    say(f"Wrote {args.out}.")
    return 0


# ----------------------------------------------------------------------------- predict

def _chunk_groups(saved: SavedModel, chunk, data: Path, offset: int):
    """The chunk's groups (text, as in fit), or None for a model without groups; an unseen group is an error."""
    if saved.groups is None:
        return None
    values, known = categorical_column(chunk, saved.groups), saved.group_labels
    unseen = ~np.isin(values, known)
    if unseen.any():
        i = int(np.flatnonzero(unseen)[0])
        shown = ", ".join(show(v) for v in known[:10]) + (", ..." if len(known) > 10 else "")
        raise InputError(f"{data}: column '{saved.groups}' (the model's groups) holds {show(values[i])} at data row "
                         f"{offset + i + 1}, a group not seen in training, which has no threshold; the model knows "
                         f"{shown}.")
    return values


def _columns(saved: SavedModel, *extra) -> list:
    """The input columns a model reads: its features, its group column, and ``extra``."""
    groups = [saved.groups] if saved.groups is not None else []
    return saved.schema["numeric"] + saved.schema["categorical"] + groups + list(extra)


def _scores(saved: SavedModel, chunk, data: Path, offset: int) -> np.ndarray:
    """The model's scores of one chunk; a value the model cannot score is an error naming its row, not a NaN."""
    groups = _chunk_groups(saved, chunk, data, offset)
    try:
        X = features(chunk, saved.schema, data, offset)
        score = saved.decision_function(X) if groups is None else saved.decision_function(X, groups=groups)
    except ValueError as error:  # e.g. a value too far from the training data's range to standardise
        raise InputError(f"{data}: {' '.join(str(error).split())}") from None
    bad = np.isnan(score)
    if bad.any():
        raise InputError(f"{data}: data row {offset + int(np.flatnonzero(bad)[0]) + 1} gets no score (NaN): its values "
                         f"are too large for the model (such as 1e308); check that row's numbers and units.")
    return score


def _prediction_chunks(saved: SavedModel, data: Path, keep):
    """DataFrames of (kept columns, prediction, score), one per chunk of the input file."""
    classes = np.empty(2, dtype=object)
    classes[:] = saved.classes
    for offset, chunk in iter_table(data, _columns(saved, *keep)):
        score = _scores(saved, chunk, data, offset)
        out = pd.DataFrame({"prediction": classes[(score > 0).astype(np.int64)], "score": score})
        if keep:
            out = pd.concat([chunk[list(keep)].reset_index(drop=True), out], axis=1)
        yield out


def _write_csv_chunks(chunks, handle) -> None:
    for i, chunk in enumerate(chunks):
        chunk.to_csv(handle, header=i == 0, index=False)


def run_predict(args) -> int:
    saved = load_model(args.model_file)
    inputs = [args.model_file, args.data]
    chunks = _prediction_chunks(saved, args.data, args.keep)
    if args.out is not None:
        def write(path: Path) -> None:
            with open(path, "w", newline="") as handle:
                _write_csv_chunks(chunks, handle)
        atomic_write(args.out, write, inputs=inputs)
        return 0
    check_stdout(inputs)
    try:
        _write_csv_chunks(chunks, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:  # a full disk behind `> file`: name standard output, not a temporary file
        raise WriteError(f"standard output: cannot write ({describe_errno(error)}).") from None
    return 0


# ----------------------------------------------------------------------------- evaluate

def _labelled_scores(saved: SavedModel, data: Path):
    """``(positive, score, groups)`` over the whole file, read in chunks; the label must hold the model's two classes.

    ``groups`` is None for a model without groups.
    """
    label, classes = saved.label, saved.classes
    positive, scores, groups = [], [], []
    for offset, chunk in iter_table(data, _columns(saved, label)):
        values = chunk[label]
        unknown = ~values.isin(classes)
        if unknown.any():
            row = offset + int(np.flatnonzero(unknown.to_numpy())[0]) + 1
            raise InputError(f"{data}: column '{label}' holds {show(values[unknown].iloc[0])} at data row {row}; "
                             f"the model knows only {show(classes[0])} and {show(classes[1])}.")
        positive.append((values == classes[1]).to_numpy())
        scores.append(_scores(saved, chunk, data, offset))
        groups.append(_chunk_groups(saved, chunk, data, offset))
    positive, score = np.concatenate(positive), np.concatenate(scores)
    if positive.all() or not positive.any():
        raise InputError(f"{data}: column '{label}' has a single class; evaluation needs both.")
    return positive, score, None if saved.groups is None else np.concatenate(groups)


def _group_rows(saved: SavedModel, positive, score, groups, args):
    """``(group, rows, positives, table, used)`` per group present in the file, each bootstrapped on its own rows."""
    rows = []
    for group in saved.group_labels:
        mask = groups == group
        if mask.any():
            table, used = bootstrap_metrics(positive[mask], score[mask], saved.objective, saved.target,
                                            n_resamples=args.bootstrap, seed=args.seed)
            rows.append((group, int(mask.sum()), int(positive[mask].sum()), table, used))
    return rows


def _print(text: str) -> None:
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise WriteError(f"standard output: cannot write ({describe_errno(error)}).") from None


def run_evaluate(args) -> int:
    saved = load_model(args.model_file)
    positive, score, groups = _labelled_scores(saved, args.data)
    table, used = bootstrap_metrics(positive, score, saved.objective, saved.target, n_resamples=args.bootstrap,
                                    seed=args.seed)
    out_dir, stem = Path(args.out_dir), Path(args.data).stem
    report_path, plot_path = out_dir / f"{stem}_report.md", out_dir / f"{stem}_pr_curve.png"
    extra = [] if groups is None else group_lines(saved.groups, _group_rows(saved, positive, score, groups, args))
    text = report_text(saved, args.model_file, args.data, table, used, args.bootstrap, args.seed, len(positive),
                       int(positive.sum()), plot_path.name, extra=extra)
    plot = plot_writer(positive, score, table[0][1], table[1][1], saved.objective, saved.target,
                       f"{Path(args.data).name}: {saved.objective}")
    _print(text)  # first: a full standard output then leaves no file behind
    with output_folder(out_dir):
        atomic_writes([(plot_path, plot), (report_path, lambda p: p.write_text(text))],
                      inputs=[args.model_file, args.data])
    print(f"Wrote {report_path} and {plot_path}.", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- parsers

def _register_fit(subparsers) -> None:
    fit = subparsers.add_parser("fit", help="train a model on a CSV or Parquet file",
                                description="Train a QuantileClassifier on a CSV or Parquet file and save it.")
    fit.add_argument("data", type=Path, help="training data, .csv or .parquet (any other suffix is read as CSV)")
    fit.add_argument("--label", required=True, help="the column holding the binary label")
    fit.add_argument("--objective", choices=sorted(OBJECTIVES), default="precision_at_recall",
                     help="what to maximise under which constraint (default precision_at_recall)")
    fit.add_argument("--target", type=open_unit_interval("0.95 for recall 95 %%"), required=True,
                     help="the constraint's target in (0, 1): the recall, predicted positive rate or FPR")
    fit.add_argument("--model", choices=tuple(MODELS), default="linear",
                     help="linear scores (the paper's), a multi-layer perceptron, or gradient-boosted trees "
                          "(LightGBM or XGBoost, QuantileBoostingClassifier) (default linear)")
    fit.add_argument("--hidden-layer-sizes", type=layer_sizes, default=None, metavar="N[,N...]",
                     help="layer widths for --model mlp (default 64)")
    fit.add_argument("--positive", default=None, help="the positive class (default: the larger of the two labels)")
    fit.add_argument("--categorical", nargs="+", default=[], metavar="COLUMN",
                     help="columns to one-hot encode even if they hold numbers")
    fit.add_argument("--drop", nargs="+", default=[], metavar="COLUMN", help="columns to ignore (ids, leaks)")
    fit.add_argument("--groups", default=None, metavar="COLUMN",
                     help="a column of group labels (not a feature): one threshold per group, so the constraint holds "
                          "in every group (with --delta: the guarantee, in every group); predict and evaluate read "
                          "the same column (docs/fairness.md)")
    fit.add_argument("--weight", default=None, metavar="COLUMN",
                     help="a column of row weights >= 0 (not a feature): an integer weight counts a row that many "
                          "times, e.g. the inverse sampling rate of downsampled negatives")
    fit.add_argument("--delta", type=open_unit_interval("0.05 for a 95 %% guarantee"), default=None,
                     help="hold out --calibration-size of the rows and set the threshold so that the constraint holds "
                          "on new data with probability >= 1 - delta (docs/calibration.md)")
    fit.add_argument("--calibration-size", type=open_unit_interval("0.3 to hold out 30 %% of the rows"), default=0.3,
                     help="fraction of the rows held out for --delta (default 0.3)")
    fit.add_argument("--max-epochs", type=int_at_least(1, "200"), default=None,
                     help="training epochs of --model linear or mlp (default 200)")
    fit.add_argument("--n-estimators", type=int_at_least(1, "100"), default=None,
                     help="log-loss boosting rounds of --model lightgbm or xgboost (default 100)")
    fit.add_argument("--seed", type=int, default=0, help="random seed of the split and the training (default 0)")
    fit.add_argument("--checkpoint", type=Path, default=None, metavar="PATH",
                     help="for --model linear or mlp: save the training state here after every epoch; rerunning "
                          "the same command resumes a killed fit from it")
    fit.add_argument("--out", type=Path, default=Path("model.qs"), help="model file to write (default model.qs)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar or messages (warnings are still shown)")
    fit.set_defaults(handler=run_fit)


def register(subparsers) -> None:
    """Add ``fit``, ``predict`` and ``evaluate`` to the command line's sub-commands."""
    _register_fit(subparsers)
    predict = subparsers.add_parser("predict", help="write predictions for a CSV or Parquet file",
                                    description="Write one row per input row: prediction (a class) and score "
                                                "(> 0 means the positive class). The file is read in chunks.")
    predict.add_argument("model_file", type=Path, help="a model written by `quantile-surrogate fit`")
    predict.add_argument("data", type=Path, help="the rows to score, .csv or .parquet, with the training's columns")
    predict.add_argument("--out", type=Path, default=None,
                         help="CSV file to write, all or nothing (default: standard output, written as rows are "
                              "scored; on an error the rows before it are already out)")
    predict.add_argument("--keep", nargs="+", default=[], metavar="COLUMN", help="input columns to copy, e.g. an id")
    predict.set_defaults(handler=run_predict)

    evaluate = subparsers.add_parser("evaluate", help="report precision, recall and rate with bootstrap intervals",
                                     description="Write DATA_report.md and DATA_pr_curve.png for a labelled file.")
    evaluate.add_argument("model_file", type=Path, help="a model written by `quantile-surrogate fit`")
    evaluate.add_argument("data", type=Path, help="labelled test data (the label column the model was trained on)")
    evaluate.add_argument("--out-dir", type=Path, default=Path("."),
                          help="folder for the report and plot, created if missing (default .)")
    evaluate.add_argument("--bootstrap", type=int_at_least(1, "1000"), default=1000,
                          help="bootstrap resamples for the 95 %% intervals (default 1000)")
    evaluate.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    evaluate.set_defaults(handler=run_evaluate)

