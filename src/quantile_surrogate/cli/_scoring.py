"""Scoring a saved model on the chunks of a file: the part that ``predict`` and ``evaluate`` share.

The columns a model reads (its features and its group column), each chunk's groups (a group
not seen in training has no threshold, and is an error naming its row), and each chunk's
scores (a row the model cannot score is an error naming it, not a NaN).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._file_io import InputError, categorical_column, feature_columns, features, show
from .model_file import SavedModel

__all__ = ["chunk_groups", "model_columns", "chunk_scores", "UnseenCategories"]

UNSEEN_GROUP_MESSAGE = ("{path}: column '{column}' (the model's groups) holds {value} at data row {row}, a group not "
                        "seen in training, which has no threshold; the model knows {known}.")
UNSCORABLE_MESSAGE = "{path}: {reason}"
UNSEEN_CATEGORY_WARNING = ("{path}: column '{column}' holds values not seen in training in {count} of {rows} rows "
                           "(first {value} at data row {row}); they are encoded as all zeros, so the scores of those "
                           "rows may be off: check the values' spelling and case, or refit on data that has them.")
NAN_SCORE_MESSAGE = ("{path}: data row {row} gets no score (NaN): its values are too large for the model (such as "
                     "1e308); check that row's numbers and units.")


def chunk_groups(saved: SavedModel, chunk, data: Path, offset: int):
    """The chunk's groups (text, as in fit), or None for a model without groups; an unseen group is an error."""
    if saved.groups is None:
        return None
    values, known = categorical_column(chunk, saved.groups), saved.group_labels
    unseen = ~np.isin(values, known)
    if unseen.any():
        i = int(np.flatnonzero(unseen)[0])
        shown = ", ".join(show(v) for v in known[:10]) + (", ..." if len(known) > 10 else "")
        raise InputError(UNSEEN_GROUP_MESSAGE.format(path=data, column=saved.groups, value=show(values[i]),
                                                     row=offset + i + 1, known=shown))
    return values


def model_columns(saved: SavedModel, *extra) -> list:
    """The input columns a model reads: its features, its group column, and ``extra``."""
    groups = [saved.groups] if saved.groups is not None else []
    return feature_columns(saved.schema) + groups + list(extra)


def chunk_scores(saved: SavedModel, chunk, data: Path, offset: int, unseen: UnseenCategories | None = None
                 ) -> np.ndarray:
    """The model's scores of one chunk; a value the model cannot score is an error naming its row, not a NaN.

    ``unseen``, if given, counts the chunk's categorical values not seen in training.
    """
    groups = chunk_groups(saved, chunk, data, offset)
    try:
        X = features(chunk, saved.schema, data, offset)
        if unseen is not None:
            unseen.update(X, offset)
        score = saved.decision_function(X) if groups is None else saved.decision_function(X, sensitive_features=groups)
    except ValueError as error:  # e.g. a value too far from the training data's range to standardise
        raise InputError(UNSCORABLE_MESSAGE.format(path=data, reason=" ".join(str(error).split()))) from None
    bad = np.isnan(score)
    if bad.any():
        raise InputError(NAN_SCORE_MESSAGE.format(path=data, row=offset + int(np.flatnonzero(bad)[0]) + 1))
    return score


class UnseenCategories:
    """Counts, over a file's chunks, the rows of each categorical column whose value the model did not see in fit.

    The encoder turns such a value into all zeros (as ``OneHotEncoder(handle_unknown="ignore")``); the
    scores are still computed, and :meth:`warnings` says which columns shifted and in how many rows.
    """

    def __init__(self, saved: SavedModel):
        model = saved.model if hasattr(saved.model, "named_steps") else getattr(saved.model, "estimator_", None)
        steps = getattr(model, "named_steps", {})
        self.categories = steps["preprocess"].categories_ if "preprocess" in steps else {}  # none: no encoder
        self.counts = dict.fromkeys(self.categories, 0)
        self.first = {}
        self.rows = 0

    def update(self, X, offset: int) -> None:
        """Count the unseen values of ``X`` (a frame of :func:`~._file_io.features`), whose first row is ``offset``."""
        self.rows += len(X)
        for column, known in self.categories.items():
            values = np.asarray(X[column], dtype=object).astype(str)  # as FrameEncoder.transform reads them
            unseen = ~np.isin(values, known)
            if unseen.any():
                i = int(np.flatnonzero(unseen)[0])
                self.first.setdefault(column, (values[i], offset + i + 1))
                self.counts[column] += int(unseen.sum())

    def warnings(self, data: Path) -> list[str]:
        """One line per column with unseen values, naming it and how many rows hold them."""
        return [UNSEEN_CATEGORY_WARNING.format(path=data, column=column, count=count, rows=self.rows,
                                               value=show(self.first[column][0]), row=self.first[column][1])
                for column, count in self.counts.items() if count]
