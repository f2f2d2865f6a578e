"""A ranker on the command line (``fit --query``): its label and query columns, predict's ranks, evaluate's report.

::

    quantile-surrogate predict model.qs new.csv --out scores.csv   # score, and rank within each query
    quantile-surrogate evaluate model.qs test.csv                  # P@k, P@10, NDCG@k over queries

A ranker's label is relevance, a number: 0/1, or a grade made binary by the saved
``--relevance-threshold`` (relevant: label >= threshold). The query column holds any ids (text or
numbers, as ``--groups`` does; :func:`._file_io.group_column`), in any row order. Ranks and the
metrics need every row of a query, so ``predict`` and ``evaluate`` read the whole file (in chunks,
scored as read) before they write. ``fit`` itself: :mod:`._rank_fit`.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics import bootstrap_over_queries, ndcg_at_k, precision_at_k_per_query
from ._args import WARNING_LINE
from ._file_io import (GROUPS_MISSING_MESSAGE, LABEL_EMPTY_MESSAGE, LABEL_MISSING_MESSAGE, InputError, group_column,
                       iter_table, read_header, show)
from ._scoring import UnseenCategories, chunk_scores, model_columns
from .model_file import SavedModel

__all__ = ["RANK_COLUMN", "relevance_labels", "relevant", "relevance_rule", "query_codes", "per_query_ranks", "ranked_frame",
           "ranking_report"]

RANK_COLUMN = "rank"
"""``predict``'s column of a ranker's ranks, 1 (first) to n_q within each query, when the file has the query column."""
P_AT_10 = 10
"""``evaluate`` reports P@10 beside P@k (once, where k is 10)."""
QUERY_ROLE = "--query"
"""How errors name the query column (fit --query; predict and evaluate read the saved name)."""
# Each message names the file, the column and the problem, and the fix; tests match these constants.
RELEVANCE_NOT_NUMBER_MESSAGE = ("{path}: column '{column}' (the --label of a ranker) holds {value} at data row {row}; "
                                "a ranker's label is a finite number: 0/1 relevance, or a grade with "
                                "--relevance-threshold.")
NOT_BINARY_MESSAGE = ("{path}: column '{column}' holds {values}; the ranker was fitted on 0/1 relevance (without "
                      "--relevance-threshold), so evaluate needs 0/1 labels.")
NO_RELEVANT_QUERY_MESSAGE = ("{path}: no query has a relevant row (column '{column}'{rule}); precision@k and NDCG "
                             "need at least one.")
METRIC_FAILED_MESSAGE = "{path}: column '{column}': {reason}"
KEEP_RANK_MESSAGE = ("{path}: --keep names {column!r}, the column of ranks that predict writes for a ranker; rename "
                     "the input's column (e.g. input_{column}) and keep that.")


def relevance_labels(frame: pd.DataFrame, column: str, path) -> np.ndarray:
    """A ranker's label column as float64: every row needs a finite number (0/1, or a grade)."""
    if column not in frame.columns:
        raise InputError(LABEL_MISSING_MESSAGE.format(path=path, column=column, columns=", ".join(frame.columns)))
    values = frame[column]
    empty = values.isna().to_numpy()
    if empty.any():
        raise InputError(LABEL_EMPTY_MESSAGE.format(path=path, column=column, count=int(empty.sum()),
                                                    row=int(np.flatnonzero(empty)[0]) + 1))
    parsed = pd.to_numeric(values.astype(float) if pd.api.types.is_bool_dtype(values) else values, errors="coerce")
    bad = ~np.isfinite(parsed.to_numpy(dtype=np.float64))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(RELEVANCE_NOT_NUMBER_MESSAGE.format(path=path, column=column, value=show(values.iloc[i]),
                                                             row=i + 1))
    return parsed.to_numpy(dtype=np.float64)


def relevant(labels: np.ndarray, threshold) -> np.ndarray:
    """Binary relevance: ``labels >= threshold``, or ``labels == 1`` without one (``QuantileRanker``'s rule)."""
    return labels >= threshold if threshold is not None else labels == 1


def relevance_rule(label: str, threshold) -> str:
    """The rule of :func:`relevant` in words, e.g. ``rel >= 3``, for fit's summary and evaluate's report."""
    return f"{label} >= {threshold:g}" if threshold is not None else f"{label} = 1"


def query_codes(values) -> np.ndarray:
    """Query ids (text, as :func:`._file_io.group_column` returns them) as codes 0..Q-1, one per row."""
    return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)


def per_query_ranks(score: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's rank within its query, 1 for the highest score; tied scores keep the file's row order."""
    order = np.lexsort((np.arange(score.size), -score, codes))
    sizes = np.bincount(codes)
    starts = np.cumsum(sizes) - sizes
    ranks = np.empty(score.size, dtype=np.int64)
    ranks[order] = np.arange(score.size) - starts[codes[order]] + 1
    return ranks


def _scored_rows(saved: SavedModel, data: Path, columns, command: str):
    """``(frame of columns, scores)`` of the whole file, read and scored in chunks."""
    unseen = UnseenCategories(saved)
    frames, scores = [], []
    for offset, chunk in iter_table(data, model_columns(saved, *columns)):
        scores.append(chunk_scores(saved, chunk, data, offset, unseen))
        frames.append(chunk[list(columns)].reset_index(drop=True))
    for warning in unseen.warnings(data):
        print(WARNING_LINE.format(name=f"quantile-surrogate {command}", text=warning), file=sys.stderr)
    return pd.concat(frames, ignore_index=True), np.concatenate(scores)


def ranked_frame(saved: SavedModel, data: Path, keep) -> pd.DataFrame:
    """``predict``'s output for a ranker: the ``keep`` columns, ``score``, and ``rank`` if the file has the query."""
    has_query = saved.query in read_header(data)
    if has_query and RANK_COLUMN in keep:
        raise InputError(KEEP_RANK_MESSAGE.format(path=data, column=RANK_COLUMN))
    columns = list(dict.fromkeys([*keep, *([saved.query] if has_query else [])]))
    frame, score = _scored_rows(saved, data, columns, "predict")
    out = pd.concat([frame[list(keep)], pd.DataFrame({"score": score})], axis=1)
    if has_query:
        out[RANK_COLUMN] = per_query_ranks(score, query_codes(group_column(frame, saved.query, data, QUERY_ROLE)))
    return out


def _labelled_queries(saved: SavedModel, data: Path):
    """``(labels, scores, query codes)`` of a labelled file; the label and query columns are checked by name."""
    header = list(read_header(data))
    for column, missing in ((saved.label, LABEL_MISSING_MESSAGE), (saved.query, GROUPS_MISSING_MESSAGE)):
        if column not in header:
            raise InputError(missing.format(path=data, column=column, role=QUERY_ROLE, columns=", ".join(header)))
    frame, score = _scored_rows(saved, data, [saved.label, saved.query], "evaluate")
    labels = relevance_labels(frame, saved.label, data)
    codes = query_codes(group_column(frame, saved.query, data, QUERY_ROLE))
    if saved.relevance_threshold is None and not np.isin(labels, [0, 1]).all():
        values = np.unique(labels)
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if values.size > 6 else "")
        raise InputError(NOT_BINARY_MESSAGE.format(path=data, column=saved.label, values=shown))
    if not np.bincount(codes, weights=relevant(labels, saved.relevance_threshold)).any():
        rule = "" if saved.relevance_threshold is None else f" >= {saved.relevance_threshold:g}"
        raise InputError(NO_RELEVANT_QUERY_MESSAGE.format(path=data, column=saved.label, rule=rule))
    return labels, score, codes


def _metric_rows(saved: SavedModel, labels, score, codes, n_resamples: int, seed: int, data: Path) -> list:
    """``(name, QueryInterval, queries counted, left out)`` for P@k, P@10 and NDCG@k."""
    binary = relevant(labels, saved.relevance_threshold)
    metrics = [(f"P@{saved.k}", partial(precision_at_k_per_query, k=saved.k), binary)]
    if saved.k != P_AT_10:
        metrics.append((f"P@{P_AT_10}", partial(precision_at_k_per_query, k=P_AT_10), binary))
    metrics.append((f"NDCG@{saved.k}", partial(ndcg_at_k, k=saved.k), labels))
    rows = []
    try:
        for name, metric, truth in metrics:
            interval = bootstrap_over_queries(metric, truth, score, codes, n_resamples=n_resamples, random_state=seed)
            left_out = metric(truth, score, codes, return_per_query=True).n_left_out
            rows.append((name, interval, int(codes.max()) + 1 - left_out, left_out))
    except (TypeError, ValueError) as error:  # e.g. a negative grade, which NDCG's gain does not take
        raise InputError(METRIC_FAILED_MESSAGE.format(path=data, column=saved.label,
                                                      reason=" ".join(str(error).split()))) from None
    return rows


def _cell(value: float) -> str:
    return f"{value:.4f}" if np.isfinite(value) else "n/a"


def ranking_report(saved: SavedModel, model_file, data: Path, n_resamples: int, seed: int) -> str:
    """``evaluate``'s Markdown report for a ranker: each metric with its 95 % bootstrap interval over queries."""
    labels, score, codes = _labelled_queries(saved, data)
    rule = relevance_rule(saved.label, saved.relevance_threshold)
    n_relevant = int(relevant(labels, saved.relevance_threshold).sum())
    lines = [
        f"# {Path(model_file).name} on {Path(data).name}",
        "",
        f"Model: QuantileRanker ({saved.model_kind}), trained for precision@{saved.k} within each query of column "
        f"'{saved.query}' (relevant: {rule}); trained on {Path(saved.trained_on).name} ({saved.n_rows} rows) with "
        f"quantile-surrogate {saved.version}.",
        f"Test rows: {len(codes)} in {int(codes.max()) + 1} queries, {n_relevant} of them relevant.",
        "",
        "| metric | value | 95 % bootstrap interval | queries counted | queries left out | resamples used |",
        "|---|---|---|---|---|---|",
    ]
    for name, interval, counted, left_out in _metric_rows(saved, labels, score, codes, n_resamples, seed, data):
        lines.append(f"| {name} | {_cell(interval.value)} | [{_cell(interval.low)}, {_cell(interval.high)}] | "
                     f"{counted} | {left_out} | {interval.n_used} |")
    lines += ["", f"Percentile bootstrap over whole queries: {n_resamples} resamples, seed {seed}. P@k counts the "
                  f"queries with a relevant row ({rule}), NDCG@k those with a label > 0 (gain 2^label - 1, on "
                  f"'{saved.label}' as it is); the other queries are left out of the mean. Ties share their places.",
              ""]
    return "\n".join(lines)
