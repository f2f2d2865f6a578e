"""``quantile-surrogate predict``: one row of prediction and score per input row, written as rows are scored.

::

    quantile-surrogate predict model.qs data.csv > predictions.csv

The file is read in chunks (:func:`._file_io.iter_table`), so memory does not grow with it;
``--out`` writes all or nothing (:mod:`quantile_surrogate._utils.files`). A ranker (``fit --query``)
writes ``score`` and, if the file has the query column, ``rank`` within each query; its ranks
need every row of a query, so it holds the whole file (:func:`._ranking.ranked_frame`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .._utils.files import WriteError, atomic_write, check_stdout, describe_errno
from ._args import OPTION_CONFLICT_LINE, STDOUT_WRITE_MESSAGE, WARNING_LINE
from ._file_io import iter_table
from ._ranking import ranked_frame
from ._scoring import UnseenCategories, chunk_scores, model_columns
from .model_file import SavedModel, load_model

__all__ = ["register", "run_predict"]

OUTPUT_COLUMNS = ("prediction", "score")
"""The columns ``predict`` writes after the ``--keep`` columns."""
# After "argument --keep: " (exit status 2, before any file is read).
KEEP_OUTPUT_COLUMN_MESSAGE = ("names {column!r}, a column that predict writes itself; a reader of the output would "
                              "take one for the other. Rename the input's column (e.g. input_{column}) and keep that")
KEEP_TWICE_MESSAGE = "names {column!r} twice; name each column once"


def check_predict_options(args) -> str | None:
    """The line for a ``--keep`` that would write two columns of one name, or None."""
    for i, column in enumerate(args.keep):
        if column in OUTPUT_COLUMNS:
            return OPTION_CONFLICT_LINE.format(flag="--keep", message=KEEP_OUTPUT_COLUMN_MESSAGE.format(column=column))
        if column in args.keep[:i]:
            return OPTION_CONFLICT_LINE.format(flag="--keep", message=KEEP_TWICE_MESSAGE.format(column=column))
    return None


def _prediction_chunks(saved: SavedModel, data: Path, keep):
    """DataFrames of (kept columns, prediction, score), one per chunk of the input file."""
    classes = np.empty(2, dtype=object)
    classes[:] = saved.classes
    unseen = UnseenCategories(saved)
    for offset, chunk in iter_table(data, model_columns(saved, *keep)):
        score = chunk_scores(saved, chunk, data, offset, unseen)
        out = pd.DataFrame({"prediction": classes[(score > 0).astype(np.int64)], "score": score})
        if keep:
            out = pd.concat([chunk[list(keep)].reset_index(drop=True), out], axis=1)
        yield out
    for warning in unseen.warnings(data):
        print(WARNING_LINE.format(name="quantile-surrogate predict", text=warning), file=sys.stderr)


def _write_csv_chunks(chunks, handle) -> None:
    for i, chunk in enumerate(chunks):
        chunk.to_csv(handle, header=i == 0, index=False)


def run_predict(args) -> int:
    saved = load_model(args.model_file)
    inputs = [args.model_file, args.data]
    chunks = iter([ranked_frame(saved, args.data, args.keep)]) if saved.is_ranker else \
        _prediction_chunks(saved, args.data, args.keep)
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
        raise WriteError(STDOUT_WRITE_MESSAGE.format(reason=describe_errno(error))) from None
    return 0


def register(subparsers) -> None:
    """Add ``predict`` to the command line's sub-commands."""
    predict = subparsers.add_parser("predict", help="write predictions for a CSV or Parquet file",
                                    description="Write one row per input row: prediction (a class) and score "
                                                "(> 0 means the positive class). The file is read in chunks. "
                                                "For a ranker (fit --query): score (higher ranks first) and, if the "
                                                "file has the query column, rank (1 to the query's rows, by "
                                                "decreasing score; ties in file order); no prediction column.")
    predict.add_argument("model_file", type=Path, help="a model written by `quantile-surrogate fit`")
    predict.add_argument("data", type=Path, help="the rows to score, .csv or .parquet, with the training's columns")
    predict.add_argument("--out", type=Path, default=None,
                         help="CSV file to write, all or nothing (default: standard output, written as rows are "
                              "scored; on an error the rows before it are already out)")
    predict.add_argument("--keep", nargs="+", default=[], metavar="COLUMN", help="input columns to copy, e.g. an id (each once; not prediction or score)")
    predict.set_defaults(handler=run_predict, check_options=check_predict_options)
