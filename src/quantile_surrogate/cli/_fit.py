"""``quantile-surrogate fit``: train a model on a user's own CSV or Parquet file and save it.

::

    quantile-surrogate fit data.csv --label y --objective precision_at_recall --target 0.95 [--out model.qs]

With ``--query COLUMN`` it trains a :class:`~quantile_surrogate.QuantileRanker` instead
(:mod:`._rank_fit`). Numeric columns are used as they are (the classifier standardises internally) and text
columns are one-hot encoded (:class:`._encoder.FrameEncoder`). The model file keeps that
preprocessing, the label's two classes and the package version, as JSON and tensors behind a
checksum; loading it runs no code from the file (:mod:`.model_file`). ``predict``
(:mod:`._predict`) and ``evaluate`` (:mod:`._evaluate`) use it. Bad input ends with a
one-line error that names the file, the column and the problem, a non-zero exit status, and
no output file (:mod:`quantile_surrogate._utils.files`).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .._utils.checks import check_sample_weight
from .._utils.files import check_output
from ..objectives import OBJECTIVES, get_objective
from ._args import (CALIBRATION_WITHOUT_DELTA_MESSAGE, DROP_NAMES_LABEL_MESSAGE, OPTION_CONFLICT_LINE, WARNING_LINE,
                    int_at_least, layer_sizes, open_unit_interval, seed)
from ._constraints import by_role, check_constraint_options, constraint_by, constraint_text, fit_report_lines
from ._file_io import InputError, column_warnings, features, group_column, labels, read_table, schema_of, show
from ._rank_fit import add_ranker_arguments, check_ranker_options, run_fit_ranker
from .model_file import MODELS, SavedModel, save_model

__all__ = ["register", "run_fit"]

# Each message names the option or the column, and the fix.
OPTION_FOR_ANOTHER_MODEL_MESSAGE = "{flag} needs {needs}; it does nothing with --model {model}."
OPTION_NEEDS = {"--hidden-layer-sizes": "--model mlp", "--n-estimators": "--model lightgbm or xgboost"}
"""What each option that only one kind of model reads needs; the others need ``NEURAL_MODELS``."""
NEURAL_MODELS = "--model linear or mlp"
SAME_FILE_MESSAGE = "--checkpoint {checkpoint} and --out {out} are one file; give them different paths."
GROUPS_NAMED_TWICE_MESSAGE = ("{path}: column '{column}' is named by {role} and by {other}; a group column is "
                              "neither a label nor a feature, so name it once, in {role}.")
WEIGHT_NAMED_TWICE_MESSAGE = ("{path}: column '{column}' is named by --weight and by {other}; a weight column is "
                              "neither a label, a group nor a feature, so name it once, with --weight.")
WEIGHT_MISSING_MESSAGE = "{path}: column '{column}' (the --weight) is missing; the columns are {columns}."
WEIGHT_WITH_DELTA_MESSAGE = "--weight cannot be combined with --delta: the guarantee is about unweighted i.i.d. rows."
DEFAULT_OBJECTIVE = "precision_at_recall"
"""``--objective`` when not given (a ranker takes none)."""
CALIBRATION_SIZE = 0.3
"""The fraction of rows ``--delta`` holds out when ``--calibration-size`` is not given."""
FIT_FAILED_MESSAGE = "{path}: {reason}"
"""A library error while reading the weights or fitting (its first line), prefixed with the file."""


def _objective(args) -> str:
    return args.objective or DEFAULT_OBJECTIVE


def _classifier(args):
    settings = dict(objective=_objective(args), target=args.target, random_state=args.seed, verbose=not args.quiet)
    if args.constraint:  # one group-blind threshold, or with --groups (the same column) one per group as well
        settings.update(constraints=[spec.constraint for spec in args.constraint],
                        group_thresholds=args.groups is not None)
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

    boosted = MODELS[args.model] == "QuantileBoostingClassifier"  # the tree backends here take dense rows only
    encoder = FrameEncoder(numeric=schema["numeric"], categorical=schema["categorical"], text=schema.get("text", []),
                           sparse_output=False if boosted else "auto")
    model = Pipeline([("preprocess", encoder), ("classifier", _classifier(args))])
    if args.delta is not None:
        model = GuaranteedThresholdClassifier(
            model, constraint=get_objective(_objective(args)).constraint, target=args.target, delta=args.delta,
            calibration_size=_calibration_size(args), random_state=args.seed)
    return model


def _calibration_size(args) -> float:
    return CALIBRATION_SIZE if args.calibration_size is None else args.calibration_size


def check_fit_options(args) -> str | None:
    """The line for options that are each valid but not together (exit status 2, before any file is read), or None."""
    ranker_problem = check_ranker_options(args)  # with --query: no classifier option; without: --target
    if ranker_problem is not None:
        return ranker_problem
    if args.calibration_size is not None and args.delta is None:
        return OPTION_CONFLICT_LINE.format(flag="--calibration-size", message=CALIBRATION_WITHOUT_DELTA_MESSAGE)
    if args.label in args.drop:
        return OPTION_CONFLICT_LINE.format(flag="--drop", message=DROP_NAMES_LABEL_MESSAGE.format(column=args.label))
    return check_constraint_options(args)


def _check_fit_outputs(args) -> None:
    """Refuse bad output paths before the (possibly long) training, not after it."""
    boosted = MODELS[args.model] == "QuantileBoostingClassifier"
    for flag, given, fits in (("--hidden-layer-sizes", args.hidden_layer_sizes, args.model == "mlp"),
                              ("--max-epochs", args.max_epochs, not boosted),
                              ("--checkpoint", args.checkpoint, not boosted),
                              ("--constraint", args.constraint or None, not boosted),
                              ("--n-estimators", args.n_estimators, boosted),
                              ("--text", args.text or None, not boosted)):
        if given is not None and not fits:
            raise InputError(OPTION_FOR_ANOTHER_MODEL_MESSAGE.format(
                flag=flag, needs=OPTION_NEEDS.get(flag, NEURAL_MODELS), model=args.model))
    check_output(args.out, [args.data] + ([args.checkpoint] if args.checkpoint is not None else []))
    if args.checkpoint is not None:
        check_output(args.checkpoint, [args.data])
        if Path(args.checkpoint).resolve() == Path(args.out).resolve():
            raise InputError(SAME_FILE_MESSAGE.format(checkpoint=args.checkpoint, out=args.out))


def _group_column(args) -> tuple[str | None, str]:
    """The column passed as ``sensitive_features`` (``--groups``, else the constraints' ``by``) and its option."""
    by = constraint_by(args.constraint)
    if args.groups is not None or by is None:
        return args.groups, "--groups"
    return by, by_role(args.constraint)


def _fit_groups(frame, args):
    """The group column as text labels (3 and 3.0 are one group), or None; it is not a feature.

    ``--groups`` (one threshold per group) or the constraints' ``by`` column (check_constraint_options: the same
    column where both are given)."""
    column, role = _group_column(args)
    if column is None:
        return None
    if column == args.label or column in args.drop or column in args.categorical or column in args.text:
        other = "--label" if column == args.label else "--drop" if column in args.drop else \
            "--categorical" if column in args.categorical else "--text"
        raise InputError(GROUPS_NAMED_TWICE_MESSAGE.format(path=args.data, column=column, role=role, other=other))
    return group_column(frame, column, args.data, role)


def _fit_weight(frame, args):
    """The ``--weight`` column as float64 frequency weights, or None; it is not a feature."""
    column = args.weight
    if column is None:
        return None
    group, role = _group_column(args)
    named = {args.label: "--label", group: role, **{c: "--drop" for c in args.drop},
             **{c: "--categorical" for c in args.categorical}, **{c: "--text" for c in args.text}}
    if column in named:
        raise InputError(WEIGHT_NAMED_TWICE_MESSAGE.format(path=args.data, column=column, other=named[column]))
    if column not in frame.columns:
        raise InputError(WEIGHT_MISSING_MESSAGE.format(path=args.data, column=column, columns=", ".join(frame.columns)))
    if args.delta is not None:
        raise InputError(WEIGHT_WITH_DELTA_MESSAGE)
    try:
        return check_sample_weight(pd.to_numeric(frame[column], errors="raise").to_numpy(np.float64), len(frame),
                                   name=f"column '{column}' (--weight)")
    except (TypeError, ValueError) as error:
        raise InputError(FIT_FAILED_MESSAGE.format(path=args.data, reason=str(error).splitlines()[0])) from None


def _fit_model(model, X, y, groups, weight=None) -> None:
    """``model.fit``; groups go to the calibration wrapper, or to the pipeline's classifier (trained per group);
    weights (``--weight``) to the pipeline's classifier."""
    if weight is not None:
        extra = {} if groups is None else {"classifier__sensitive_features": groups}
        model.fit(X, y, classifier__sample_weight=weight, **extra)
    elif groups is None:
        model.fit(X, y)
    elif hasattr(model, "named_steps"):
        model.fit(X, y, classifier__sensitive_features=groups)
    else:
        model.fit(X, y, sensitive_features=groups)


def _say_groups(say, args, groups) -> None:
    """What the group column does: one threshold per group (``--groups``), and/or the groups of the constraints."""
    if groups is None:
        return
    count = pd.unique(groups).size
    if args.groups is not None:
        say(f"{args.data}: one threshold per group of column '{args.groups}' ({count} groups); "
            f"predict and evaluate read the same column.")
    if constraint_by(args.constraint) is not None:
        say(f"{args.data}: the constraints are measured in the {count} groups of column "
            f"'{constraint_by(args.constraint)}'" + ("." if args.groups is not None else
                                                     "; one threshold for every row, so predict does not read "
                                                     "the column (evaluate does)."))


def run_fit(args) -> int:
    _check_fit_outputs(args)
    if args.query is not None:
        return run_fit_ranker(args)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    frame = read_table(args.data, skip=args.drop)
    y, classes = labels(frame, args.label, args.data, args.positive)
    groups = _fit_groups(frame, args)
    weight = _fit_weight(frame, args)
    schema = schema_of(frame, args.label, args.drop + ([_group_column(args)[0]] if groups is not None else [])
                       + ([args.weight] if weight is not None else []), args.categorical, args.data, text=args.text)
    X = features(frame, schema, args.data)
    del frame
    say(f"{args.data}: {len(X)} rows, {int(y.sum())} positive (class {show(classes[1])}; choose with --positive), "
        f"{len(schema['numeric'])} numeric columns.")
    for warning in column_warnings(X, schema, args.data):
        print(WARNING_LINE.format(name="quantile-surrogate fit", text=warning), file=sys.stderr)
    if schema["categorical"]:
        levels = ", ".join(f"{c} ({pd.unique(X[c]).size} values)" for c in schema["categorical"])
        say(f"{args.data}: one-hot encoding the categorical columns {levels}; values unseen in training "
            f"are encoded as all zeros.")
    if args.text:
        say(f"{args.data}: TF-IDF features of the text columns {', '.join(args.text)} (words seen in training; "
            f"the vocabulary and idf are stored in the model file), as a sparse matrix.")
    _say_groups(say, args, groups)
    model = _build_model(schema, args)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what a library prints while fitting is not output
            _fit_model(model, X, y, groups, weight)
    except ImportError as error:  # --model lightgbm without LightGBM installed
        raise InputError(str(error).splitlines()[0]) from None
    except (ValueError, FloatingPointError) as error:  # too few held-out positives for --delta, divergence, checkpoint
        raise InputError(FIT_FAILED_MESSAGE.format(path=args.data, reason=str(error).splitlines()[0])) from None
    texts = [spec.text for spec in args.constraint] if args.constraint else None
    if texts:
        classifier = model.named_steps["classifier"]
        for line in fit_report_lines(classifier.constraint_report_, texts, classifier.constraint_groups_):
            say(line)
    saved = SavedModel(model=model, label=args.label, classes=classes, schema=schema, objective=_objective(args),
                       target=args.target, model_kind=args.model, trained_on=str(args.data), n_rows=int(len(X)),
                       delta=args.delta, calibration_size=_calibration_size(args) if args.delta is not None else None,
                       groups=args.groups, constraints=texts, constraint_by=constraint_by(args.constraint))
    save_model(saved, args.out, inputs=[args.data])
    say(f"Wrote {args.out}.")
    return 0


def register(subparsers) -> None:
    """Add ``fit`` to the command line's sub-commands."""
    fit = subparsers.add_parser("fit", help="train a model on a CSV or Parquet file",
                                description="Train a QuantileClassifier on a CSV or Parquet file and save it "
                                            "(with --query: a QuantileRanker).")
    fit.add_argument("data", type=Path, help="training data, .csv or .parquet (any other suffix is read as CSV)")
    fit.add_argument("--label", required=True,
                     help="the column holding the binary label (with --query: the relevance, 0/1 or a grade)")
    fit.add_argument("--objective", choices=sorted(OBJECTIVES), default=None,
                     help=f"what to maximise under which constraint (default {DEFAULT_OBJECTIVE})")
    fit.add_argument("--target", type=open_unit_interval("0.95 for recall 95 %"), default=None,
                     help="the constraint's target in (0, 1): the recall, predicted positive rate or FPR (required "
                          "without --query)")
    fit.add_argument("--model", choices=tuple(MODELS), default="linear",
                     help="linear scores (the paper's), a multi-layer perceptron, or gradient-boosted trees "
                          "(LightGBM or XGBoost, QuantileBoostingClassifier) (default linear; with --query: linear, "
                          "lightgbm or xgboost)")
    fit.add_argument("--hidden-layer-sizes", type=layer_sizes, default=None, metavar="N[,N...]",
                     help="layer widths for --model mlp (default 64)")
    fit.add_argument("--positive", default=None, help="the positive class (default: the larger of the two labels)")
    fit.add_argument("--categorical", nargs="+", default=[], metavar="COLUMN",
                     help="columns to one-hot encode even if they hold numbers")
    fit.add_argument("--text", nargs="+", default=[], metavar="COLUMN",
                     help="free-text columns: TF-IDF features of their words, trained on as a sparse matrix "
                          "(--model linear or mlp; docs/sparse.md)")
    fit.add_argument("--drop", nargs="+", default=[], metavar="COLUMN", help="columns to ignore (ids, leaks)")
    fit.add_argument("--groups", default=None, metavar="COLUMN",
                     help="a column of group labels (not a feature): one threshold per group, so the constraint holds "
                          "in every group (with --delta: the guarantee, in every group); predict and evaluate read "
                          "the same column (docs/fairness.md)")
    fit.add_argument("--constraint", type=constraint_text, action="append", default=None, metavar="TEXT",
                     help="a rate constraint at the model's one threshold, e.g. 'recall gap <= 0.05 by sex' or "
                          "'fpr <= 5%%' (repeatable; grammar: <rate> [gap] (<=|>=) <number> [in each group] "
                          "[by <column>]); the 'by' column holds the groups, is not a feature, and predict does not "
                          "need it (--model linear or mlp; docs/constraints.md)")
    fit.add_argument("--weight", default=None, metavar="COLUMN",
                     help="a column of row weights >= 0 (not a feature): an integer weight counts a row that many "
                          "times, e.g. the inverse sampling rate of downsampled negatives")
    fit.add_argument("--delta", type=open_unit_interval("0.05 for a 95 % guarantee"), default=None,
                     help="hold out --calibration-size of the rows and set the threshold so that the constraint holds "
                          "on new data with probability >= 1 - delta (docs/calibration.md)")
    fit.add_argument("--calibration-size", type=open_unit_interval("0.3 to hold out 30 % of the rows"), default=None,
                     help=f"fraction of the rows held out for --delta (default {CALIBRATION_SIZE})")
    fit.add_argument("--max-epochs", type=int_at_least(1, "200"), default=None,
                     help="training epochs of --model linear or mlp (default 200)")
    fit.add_argument("--n-estimators", type=int_at_least(1, "100"), default=None,
                     help="log-loss boosting rounds of --model lightgbm or xgboost (default 100)")
    fit.add_argument("--seed", type=seed, default=0, help="random seed of the split and the training (default 0)")
    fit.add_argument("--checkpoint", type=Path, default=None, metavar="PATH",
                     help="for --model linear or mlp: save the training state here after every epoch; rerunning "
                          "the same command resumes a killed fit from it")
    add_ranker_arguments(fit)
    fit.add_argument("--out", type=Path, default=Path("model.qs"), help="model file to write (default model.qs)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar or messages (warnings are still shown)")
    fit.set_defaults(handler=run_fit, check_options=check_fit_options)
