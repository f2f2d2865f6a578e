"""The command line's preprocessing: numeric columns as they are, categories one-hot, text columns TF-IDF.

A small scikit-learn transformer instead of ``ColumnTransformer`` + ``OneHotEncoder`` +
``TfidfVectorizer`` so that its whole fitted state is lists of names, per categorical column a
sorted list of strings, per text column its vocabulary (terms in column order) and idf weights,
and for a sparse output the numeric columns' mean and scale, which the model file stores as JSON
(:mod:`._codecs`) and rebuilds without pickle. The dense output equals ``ColumnTransformer([("numeric",
"passthrough", numeric), ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical)])``:
the numeric columns, then one 0/1 column per (column, category) in sorted order; a category not
seen in ``fit`` is all zeros.

**Sparse output** (a SciPy CSR matrix), with any text column or when the one-hot columns would
number more than :data:`SPARSE_ONE_HOT_COLUMNS` (``sparse_output="auto"``): the same columns, then
each text column's ``TfidfVectorizer(sublinear_tf=True)`` features. The classifier never centres
a sparse input (that would fill every zero, docs/sparse.md), so the numeric columns are
standardised here, ``(x - mean) / scale`` with the training rows' statistics.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from ..estimators._standardize import standardize_columns, standardizer

__all__ = ["FrameEncoder", "SPARSE_ONE_HOT_COLUMNS", "EMPTY_TEXT_MESSAGE", "text_vectorizer"]

SPARSE_ONE_HOT_COLUMNS = 1000
"""``sparse_output="auto"``: a sparse output above this many one-hot columns (high-cardinality categories)."""
EMPTY_TEXT_MESSAGE = (
    "text column '{column}' (--text) has no word in any row (all empty, or only one-letter tokens); "
    "drop it, or name the right column."
)


def text_vectorizer(vocabulary=None) -> TfidfVectorizer:
    """The command line's TF-IDF settings: scikit-learn's defaults with ``sublinear_tf=True`` (``1 + log(tf)``)."""
    return TfidfVectorizer(sublinear_tf=True, vocabulary=vocabulary, dtype=np.float64)


class FrameEncoder(TransformerMixin, BaseEstimator):
    """Numeric columns passed through, categorical columns one-hot (unseen categories: all zeros), text as TF-IDF.

    Parameters
    ----------
    numeric : list of str
        Columns of float64 values (the classifier standardises a dense output itself).
    categorical : list of str
        Columns of text (object arrays); each becomes one 0/1 column per category seen in ``fit``.
    text : list of str
        Columns of free text; each becomes the TF-IDF columns of the words seen in ``fit``.
    sparse_output : bool or "auto", default="auto"
        "auto": sparse with a text column or more than :data:`SPARSE_ONE_HOT_COLUMNS` one-hot columns.

    Attributes
    ----------
    categories_ : dict of str to ndarray of str
        The sorted categories of each categorical column.
    vectorizers_ : dict of str to TfidfVectorizer
        The fitted TF-IDF of each text column.
    sparse_ : bool
        Whether :meth:`transform` returns a CSR matrix.
    numeric_mean_, numeric_scale_ : ndarray or None
        The numeric columns' standardisation of a sparse output (None for a dense one).

    Examples
    --------
    >>> frame = pd.DataFrame({"x": [1.5, 2.0, 3.0], "c": ["b", "a", "b"]})
    >>> FrameEncoder(numeric=["x"], categorical=["c"]).fit(frame).transform(pd.DataFrame({"x": [0.0], "c": ["z"]}))
    array([[0., 0., 0.]])
    """

    def __init__(self, numeric=(), categorical=(), text=(), sparse_output="auto"):
        self.numeric = numeric
        self.categorical = categorical
        self.text = text
        self.sparse_output = sparse_output

    def fit(self, X: pd.DataFrame, y=None):
        self.categories_ = {c: np.unique(np.asarray(X[c], dtype=object).astype(str)) for c in self.categorical}
        self.vectorizers_ = {}
        for column in self.text:
            try:
                self.vectorizers_[column] = text_vectorizer().fit(np.asarray(X[column], dtype=object).astype(str))
            except ValueError as error:  # scikit-learn: "empty vocabulary; perhaps the documents only contain ..."
                raise ValueError(EMPTY_TEXT_MESSAGE.format(column=column)) from error
        width = sum(len(v) for v in self.categories_.values())
        self.sparse_ = bool(self.text) or self.sparse_output is True or (
            self.sparse_output == "auto" and width > SPARSE_ONE_HOT_COLUMNS)
        self.numeric_mean_ = self.numeric_scale_ = None
        if self.sparse_ and self.numeric:
            self.numeric_mean_, self.numeric_scale_ = standardizer(X[list(self.numeric)].to_numpy(dtype=np.float64))
        return self

    def transform(self, X: pd.DataFrame):
        check_is_fitted(self, "categories_")
        n = len(X)
        numeric = X[list(self.numeric)].to_numpy(dtype=np.float64) if self.numeric else np.zeros((n, 0))
        rows, columns, start = [], [], 0
        for column in self.categorical:
            codes = pd.Index(self.categories_[column]).get_indexer(np.asarray(X[column], dtype=object).astype(str))
            known = np.flatnonzero(codes >= 0)
            rows.append(known)
            columns.append(start + codes[known])
            start += len(self.categories_[column])
        rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.intp)
        columns = np.concatenate(columns) if columns else np.zeros(0, dtype=np.intp)
        if not getattr(self, "sparse_", False):
            out = np.zeros((n, numeric.shape[1] + start), dtype=np.float64)
            out[:, :numeric.shape[1]] = numeric
            out[rows, numeric.shape[1] + columns] = 1.0
            return out
        if self.numeric_mean_ is not None:
            numeric = standardize_columns(numeric, self.numeric_mean_, self.numeric_scale_)
        blocks = [sp.csr_matrix(numeric), sp.csr_matrix((np.ones(rows.size), (rows, columns)), shape=(n, start))]
        blocks += [self.vectorizers_[c].transform(np.asarray(X[c], dtype=object).astype(str)) for c in self.text]
        return sp.hstack(blocks, format="csr", dtype=np.float64)
