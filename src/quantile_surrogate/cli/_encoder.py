"""The command line's preprocessing: numeric columns as they are, text columns one-hot encoded.

A small scikit-learn transformer instead of ``ColumnTransformer`` + ``OneHotEncoder`` so that
its whole fitted state is two lists of names and, per text column, a sorted list of strings,
which the model file stores as JSON (:mod:`.model_file`) and rebuilds without pickle. The
output equals ``ColumnTransformer([("numeric", "passthrough", numeric), ("categorical",
OneHotEncoder(handle_unknown="ignore"), categorical)])``: the numeric columns, then one 0/1
column per (column, category) in sorted order; a category not seen in ``fit`` is all zeros.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["FrameEncoder"]


class FrameEncoder(TransformerMixin, BaseEstimator):
    """Numeric columns passed through, text columns one-hot encoded (unseen categories: all zeros).

    Parameters
    ----------
    numeric : list of str
        Columns of float64 values (the classifier standardises them itself).
    categorical : list of str
        Columns of text (object arrays); each becomes one 0/1 column per category seen in ``fit``.

    Attributes
    ----------
    categories_ : dict of str to ndarray of str
        The sorted categories of each categorical column.

    Examples
    --------
    >>> frame = pd.DataFrame({"x": [1.5, 2.0, 3.0], "c": ["b", "a", "b"]})
    >>> FrameEncoder(numeric=["x"], categorical=["c"]).fit(frame).transform(pd.DataFrame({"x": [0.0], "c": ["z"]}))
    array([[0., 0., 0.]])
    """

    def __init__(self, numeric=(), categorical=()):
        self.numeric = numeric
        self.categorical = categorical

    def fit(self, X: pd.DataFrame, y=None):
        self.categories_ = {c: np.unique(np.asarray(X[c], dtype=object).astype(str)) for c in self.categorical}
        return self

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        check_is_fitted(self, "categories_")
        n = len(X)
        widths = [len(self.categories_[c]) for c in self.categorical]
        out = np.zeros((n, len(self.numeric) + sum(widths)), dtype=np.float64)
        if self.numeric:
            out[:, :len(self.numeric)] = X[list(self.numeric)].to_numpy(dtype=np.float64)
        start = len(self.numeric)
        for column, width in zip(self.categorical, widths):
            codes = pd.Index(self.categories_[column]).get_indexer(np.asarray(X[column], dtype=object).astype(str))
            known = codes >= 0
            out[np.flatnonzero(known), start + codes[known]] = 1.0
            start += width
        return out
