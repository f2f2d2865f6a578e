"""``quantile-surrogate evaluate``: a report with bootstrap intervals and a precision-recall plot for a labelled file.

::

    quantile-surrogate evaluate model.qs test.csv      # test_report.md and test_pr_curve.png

The file is read in chunks; the report is printed first, then the report and the plot are
written together, all or nothing (:func:`quantile_surrogate._utils.files.atomic_writes`). A
ranker (``fit --query``) gets P@k, P@10 and NDCG@k over queries (:func:`._ranking.ranking_report`)
and the report alone, no plot.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .._utils.files import WriteError, atomic_writes, describe_errno, output_folder
from ..objectives.bootstrap import bootstrap_metrics
from ._args import BOOTSTRAP_MAX, STDOUT_WRITE_MESSAGE, WARNING_LINE, int_in_range, seed
from ._constraints import by_role, constraint_lines, measure_constraints, saved_constraints
from ._file_io import GROUPS_MISSING_MESSAGE, InputError, group_column, iter_table, read_header, show
from ._ranking import ranking_report
from ._report import group_lines, plot_writer, report_text
from ._scoring import UnseenCategories, chunk_groups, chunk_scores, model_columns
from .model_file import SavedModel, load_model

__all__ = ["register", "run_evaluate"]

UNKNOWN_LABEL_MESSAGE = ("{path}: column '{column}' holds {value} at data row {row}; the model knows only {first} "
                         "and {second}.")
SINGLE_CLASS_MESSAGE = "{path}: column '{column}' has a single class; evaluation needs both."


def _constraint_column(saved: SavedModel, data: Path) -> list:
    """The constraints' ``by`` column, if the model reads it only for them; missing: an error naming the constraints."""
    by = saved.constraint_by
    if by is None or by == saved.groups:
        return []
    columns = list(read_header(data))
    if by not in columns:
        raise InputError(GROUPS_MISSING_MESSAGE.format(path=data, column=by, role=by_role(saved_constraints(saved)),
                                                       columns=", ".join(map(str, columns))))
    return [by]


def _labelled_scores(saved: SavedModel, data: Path):
    """``(positive, score, groups, by)`` over the whole file, read in chunks; the label must hold the model's two classes.

    ``groups`` is None for a model without groups; ``by``: the constraints' groups (None without them).
    """
    label, classes = saved.label, saved.classes
    positive, scores, groups, by = [], [], [], []
    role = by_role(saved_constraints(saved)) if saved.constraint_by is not None else None
    unseen = UnseenCategories(saved)
    for offset, chunk in iter_table(data, model_columns(saved, label, *_constraint_column(saved, data))):
        values = chunk[label]
        unknown = ~values.isin(classes)
        if unknown.any():
            row = offset + int(np.flatnonzero(unknown.to_numpy())[0]) + 1
            raise InputError(UNKNOWN_LABEL_MESSAGE.format(path=data, column=label, value=show(values[unknown].iloc[0]),
                                                          row=row, first=show(classes[0]), second=show(classes[1])))
        positive.append((values == classes[1]).to_numpy())
        scores.append(chunk_scores(saved, chunk, data, offset, unseen))
        groups.append(chunk_groups(saved, chunk, data, offset))
        if saved.constraint_by is not None:
            by.append(group_column(chunk, saved.constraint_by, data, role, offset))
    for warning in unseen.warnings(data):
        print(WARNING_LINE.format(name="quantile-surrogate evaluate", text=warning), file=sys.stderr)
    positive, score = np.concatenate(positive), np.concatenate(scores)
    if positive.all() or not positive.any():
        raise InputError(SINGLE_CLASS_MESSAGE.format(path=data, column=label))
    return positive, score, None if saved.groups is None else np.concatenate(groups), \
        None if saved.constraint_by is None else np.concatenate(by)


def _group_rows(saved: SavedModel, positive, score, groups, args):
    """``(group, rows, positives, table, used)`` per group present in the file, each bootstrapped on its own rows."""
    rows = []
    for group in saved.group_labels:
        mask = groups == group
        if mask.any():
            table, used = bootstrap_metrics(positive[mask], score[mask], saved.objective, saved.target,
                                            n_resamples=args.bootstrap, random_state=args.seed)
            rows.append((group, int(mask.sum()), int(positive[mask].sum()), table, used))
    return rows


def _print(text: str) -> None:
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise WriteError(STDOUT_WRITE_MESSAGE.format(reason=describe_errno(error))) from None


def _classifier_report(saved: SavedModel, args, plot_path: Path):
    """``(report text, plot writer)`` of a classifier."""
    positive, score, groups, by = _labelled_scores(saved, args.data)
    table, used = bootstrap_metrics(positive, score, saved.objective, saved.target, n_resamples=args.bootstrap,
                                    random_state=args.seed)
    extra = [] if groups is None else group_lines(saved.groups, _group_rows(saved, positive, score, groups, args))
    if saved.constraints:
        extra += constraint_lines(saved.constraint_by, measure_constraints(
            saved, positive, score, by, args.bootstrap, args.seed), args.bootstrap, args.seed)
    text = report_text(saved, args.model_file, args.data, table, used, args.bootstrap, args.seed, len(positive),
                       int(positive.sum()), plot_path.name, extra=extra)
    plot = plot_writer(positive, score, table[0][1], table[1][1], saved.objective, saved.target,
                       f"{Path(args.data).name}: {saved.objective}")
    return text, plot


def run_evaluate(args) -> int:
    saved = load_model(args.model_file)
    out_dir, stem = Path(args.out_dir), Path(args.data).stem
    report_path, plot_path = out_dir / f"{stem}_report.md", out_dir / f"{stem}_pr_curve.png"
    if saved.is_ranker:
        text, outputs = ranking_report(saved, args.model_file, args.data, args.bootstrap, args.seed), []
    else:
        text, plot = _classifier_report(saved, args, plot_path)
        outputs = [(plot_path, plot)]
    _print(text)  # first: a full standard output then leaves no file behind
    with output_folder(out_dir):
        atomic_writes([*outputs, (report_path, lambda p: p.write_text(text))], inputs=[args.model_file, args.data])
    print(f"Wrote {report_path}" + "".join(f" and {path}" for path, _ in outputs) + ".", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add ``evaluate`` to the command line's sub-commands."""
    evaluate = subparsers.add_parser("evaluate", help="report precision, recall and rate with bootstrap intervals",
                                     description="Write DATA_report.md and DATA_pr_curve.png for a labelled file "
                                                 "(for a ranker, fit --query: DATA_report.md with P@k, P@10 and "
                                                 "NDCG@k over queries, no plot).")
    evaluate.add_argument("model_file", type=Path, help="a model written by `quantile-surrogate fit`")
    evaluate.add_argument("data", type=Path, help="labelled test data (the label column the model was trained on)")
    evaluate.add_argument("--out-dir", type=Path, default=Path("."),
                          help="folder for the report and plot, created if missing (default .)")
    evaluate.add_argument("--bootstrap", type=int_in_range(1, BOOTSTRAP_MAX, "1000"), default=1000,
                          help=f"bootstrap resamples for the 95 %% intervals, at most {BOOTSTRAP_MAX} (default 1000)")
    evaluate.add_argument("--seed", type=seed, default=0, help="bootstrap seed (default 0)")
    evaluate.set_defaults(handler=run_evaluate)
