"""``fit --query COLUMN``: train a :class:`~quantile_surrogate.QuantileRanker` for precision@k within each query.

::

    quantile-surrogate fit data.csv --label rel --query qid --k 5 [--relevance-threshold 3] \\
        [--model linear|lightgbm|xgboost] [--n-estimators N] [--seed S] --out model.qs

The query column is neither a label nor a feature; its rows may come in any order. The label is
0/1 relevance, or a grade with ``--relevance-threshold`` (the rows with label >= it are relevant).
Options about a threshold, classes or groups do not apply and are refused in one line (exit
status 2) before any file is read. The model file stores the ranker (no pickle) with ``k``, the
query column and the relevance threshold; ``predict`` and ``evaluate``: :mod:`._ranking`.
"""

from __future__ import annotations

import contextlib
import sys

from ._args import OPTION_CONFLICT_LINE, WARNING_LINE, finite_number, int_at_least
from ._file_io import InputError, column_warnings, features, group_column, read_table, schema_of
from ._ranking import QUERY_ROLE, query_codes, relevance_labels, relevance_rule, relevant
from .model_file import RANKERS, SavedModel, save_model

__all__ = ["add_ranker_arguments", "check_ranker_options", "run_fit_ranker"]

DEFAULT_K = 5
"""``--k`` when not given (QuantileRanker's default)."""
NEEDS_TARGET_MESSAGE = "fit needs --target (or --query for a ranker)"
# After "argument --option: " (exit status 2, before any file is read).
NOT_FOR_A_RANKER_MESSAGE = "does not apply with --query (a ranker): {reason}; leave it out"
NOT_FOR_A_RANKER = {
    "--objective": "a ranker is trained for precision@k within each query (--k)",
    "--target": "a ranker is trained for precision@k within each query (--k)",
    "--positive": "the relevant rows are the label's 1s, or those >= --relevance-threshold",
    "--constraint": "a ranker has no threshold to constrain",
    "--groups": "a ranker has no threshold per group (its groups are the queries)",
    "--delta": "a ranker has no threshold to guarantee",
    "--calibration-size": "a ranker has no threshold to calibrate",
    "--checkpoint": "a ranker's fit keeps no checkpoint",
    "--weight": "a ranker takes no row weights",
    "--text": "a ranker reads numeric and categorical columns",
    "--max-epochs": "a linear ranker's steps are chosen on held-out queries",
    "--hidden-layer-sizes": "a ranker is linear or boosted trees",
}
"""The options ``fit`` refuses with ``--query``, and why."""
RANKER_MODEL_MESSAGE = "a ranker (--query) is one of {models}; got {model!r}"
NEEDS_QUERY_MESSAGE = "needs --query (the column of query ids): only a ranker has {what}"
QUERY_NAMED_TWICE_MESSAGE = ("names column {column!r}, also named by {other}; the query column is neither a label nor "
                             "a feature, so name it once, with --query")
FIT_FAILED_MESSAGE = "{path}: {reason}"
GRADED_HINT = " On the command line: --relevance-threshold, e.g. --relevance-threshold 3."
"""Added to the ranker's message for graded labels, which names its Python parameter."""


def add_ranker_arguments(parser) -> None:
    """``--query``, ``--k`` and ``--relevance-threshold`` on ``fit``'s parser."""
    parser.add_argument("--query", default=None, metavar="COLUMN",
                        help="a column of query ids (not a feature; rows in any order): train a QuantileRanker for "
                             "precision@k within each query instead of a classifier (--model linear, lightgbm or "
                             "xgboost; no --target or --objective)")
    parser.add_argument("--k", type=int_at_least(1, "5"), default=None,
                        help=f"with --query: the k of precision@k, the top rows of each query (default {DEFAULT_K})")
    parser.add_argument("--relevance-threshold", type=finite_number("3"), default=None, metavar="GRADE",
                        help="with --query: the label is a grade and rows with label >= GRADE are relevant "
                             "(default: the label must be 0/1)")


def _given(args, flag: str) -> bool:
    value = getattr(args, flag[2:].replace("-", "_"))
    return value is not None and value != []


def check_ranker_options(args) -> str | None:
    """The line for options that do not go with ``--query`` (or ``--query``'s own without it), or None."""
    if args.query is None:
        for flag, what in (("--k", "a k"), ("--relevance-threshold", "a relevance threshold")):
            if _given(args, flag):
                return OPTION_CONFLICT_LINE.format(flag=flag, message=NEEDS_QUERY_MESSAGE.format(what=what))
        return NEEDS_TARGET_MESSAGE if args.target is None else None
    for flag, reason in NOT_FOR_A_RANKER.items():
        if _given(args, flag):
            return OPTION_CONFLICT_LINE.format(flag=flag, message=NOT_FOR_A_RANKER_MESSAGE.format(reason=reason))
    if args.model not in RANKERS:
        return OPTION_CONFLICT_LINE.format(flag="--model", message=RANKER_MODEL_MESSAGE.format(
            models=", ".join(RANKERS), model=args.model))
    named = {args.label: "--label", **{c: "--drop" for c in args.drop},
             **{c: "--categorical" for c in args.categorical}}
    if args.query in named:
        return OPTION_CONFLICT_LINE.format(flag="--query", message=QUERY_NAMED_TWICE_MESSAGE.format(
            column=args.query, other=named[args.query]))
    return None


def _ranker(args):
    from ..estimators import QuantileRanker

    extra = {} if args.n_estimators is None else {"n_estimators": args.n_estimators}
    return QuantileRanker(k=args.k or DEFAULT_K, model=args.model, relevance_threshold=args.relevance_threshold,
                          random_state=args.seed, **extra)


def _fit(model, X, y, codes, path) -> None:
    """``model.fit`` with the query codes; the ranker's refusals (graded labels, no query to learn from) in one line."""
    from ..estimators.ranker import GRADED_LABELS_MESSAGE

    try:
        with contextlib.redirect_stdout(sys.stderr):  # what a library prints while fitting is not output
            model.fit(X, y, ranker__query=codes)
    except ImportError as error:  # --model lightgbm without LightGBM installed
        raise InputError(str(error).splitlines()[0]) from None
    except (ValueError, FloatingPointError) as error:
        reason = " ".join(str(error).split())
        hint = GRADED_HINT if GRADED_LABELS_MESSAGE.split("{values}")[1].strip() in reason else ""
        raise InputError(FIT_FAILED_MESSAGE.format(path=path, reason=reason + hint)) from None


def _summary(args, y, codes, ranker) -> list[str]:
    """What ``fit`` prints: queries, rows, the queries that count for P@k, the held-out selection of the rounds."""
    from ..selection._query_splits import live_queries

    k, live = ranker.k, live_queries(relevant(y, args.relevance_threshold), codes, ranker.k)
    lines = [f"{args.data}: {len(y)} rows in {live.size} queries (column '{args.query}'), "
             f"{int(relevant(y, args.relevance_threshold).sum())} relevant "
             f"({relevance_rule(args.label, args.relevance_threshold)}); {int(live.sum())} queries count "
             f"for P@{k} (more than {k} rows, relevant and irrelevant ones), {int((~live).sum())} do not."]
    start = "logistic regression" if args.model == "linear" else f"{ranker.n_logloss_estimators_} log-loss trees"
    selection = ranker.selection_
    if selection["n_splits"]:
        kept = (f"{selection['chosen']:.4f} after {selection['rounds']} precision@k round(s), kept" if
                selection["rounds"] else "no precision@k round raised it, so the start is kept")
        lines.append(f"Held-out P@{k} on {selection['n_splits']} split(s) of the queries: {selection['start']:.4f} "
                     f"at the start ({start}); {kept}.")
    else:
        lines.append(f"No held-out selection: the start ({start}) and all {ranker.best_iteration_} precision@k "
                     f"round(s) kept.")
    if ranker.ranking_model_ is not None:
        lines[-1] += (f" Scores: the mean of that model's and a LambdaMART model's ({ranker.n_estimators} trees) "
                      f"standardised scores.")
    return lines


def run_fit_ranker(args) -> int:
    """``fit --query``: read, fit a ``Pipeline([FrameEncoder, QuantileRanker])``, print the summary, save."""
    from sklearn.pipeline import Pipeline

    from ._encoder import FrameEncoder

    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    frame = read_table(args.data, skip=args.drop)
    y = relevance_labels(frame, args.label, args.data)
    codes = query_codes(group_column(frame, args.query, args.data, QUERY_ROLE))
    schema = schema_of(frame, args.label, args.drop + [args.query], args.categorical, args.data)
    X = features(frame, schema, args.data)
    del frame
    for warning in column_warnings(X, schema, args.data):
        print(WARNING_LINE.format(name="quantile-surrogate fit", text=warning), file=sys.stderr)
    encoder = FrameEncoder(numeric=schema["numeric"], categorical=schema["categorical"], sparse_output=False)
    model = Pipeline([("preprocess", encoder), ("ranker", _ranker(args))])
    _fit(model, X, y, codes, args.data)
    ranker = model[-1]
    for line in _summary(args, y, codes, ranker):
        say(line)
    saved = SavedModel(model=model, label=args.label, classes=None, schema=schema, objective=None, target=None,
                       model_kind=args.model, trained_on=str(args.data), n_rows=int(len(X)), query=args.query,
                       k=int(ranker.k), relevance_threshold=args.relevance_threshold)
    save_model(saved, args.out, inputs=[args.data])
    say(f"Wrote {args.out}.")
    return 0

