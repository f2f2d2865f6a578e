"""Feature matrices that may be sparse: the one home for taking their rows and moving them to torch.

The training loop, the held-out selection and the estimators hold their rows as one torch tensor,
dense or **sparse CSR** (``torch.sparse_csr``: ``crow_indices``, ``col_indices``, ``values``).
``torch.nn.Linear`` multiplies a CSR input by its dense weight with autograd, so a linear model or
the first layer of an MLP never densifies the data. What a CSR tensor lacks is row indexing
(``index_select``, slices, ``split``); :func:`take_rows` and :func:`row_chunks` supply it for both
layouts, so the callers write one line for either. A dense tensor may have any number of dimensions
(images ``(n, C, H, W)``, sequences ``(n, T, d)``): its rows are its first dimension. A dict of
tensors is held as a :class:`~quantile_surrogate._utils.rows.RowDict`, whose rows these functions
take from every value (:func:`as_rows`).

Taking rows ``r_1..r_m`` of a CSR matrix: the new row pointer is the running sum of the row
lengths ``crow[r_k + 1] - crow[r_k]``, and the stored entries are gathered at
``crow[r_k] + 0 .. length_k - 1``, all in vectorised torch operations (on the data's device).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch

from .rows import RowDict

__all__ = ["SPARSE_INPUT", "MAX_COLUMNS", "TOO_MANY_COLUMNS_MESSAGE", "check_columns", "as_rows", "csr_tensor",
           "take_rows", "slice_rows", "cat_rows", "row_chunks", "stored_values"]

SPARSE_INPUT = "csr"
"""``accept_sparse`` of the estimators that take sparse input: every SciPy format is converted to CSR once
(scikit-learn's ``validate_data`` converts COO, CSC, DOK, LIL, ... to the first accepted format)."""


MAX_COLUMNS = 2**31 - 1
"""The widest sparse ``X`` a model is built for: past int32's range a linear model's weights alone take 16 GB."""
TOO_MANY_COLUMNS_MESSAGE = (
    "`X` has {columns:,} columns, more than 2**31 - 1; a linear model holds a weight for each ({gigabytes:.0f} GB in "
    "float64). Hash the features into fewer columns, e.g. sklearn.feature_extraction.FeatureHasher(n_features=2**20)."
)


def check_columns(X) -> None:
    """``ValueError`` (:data:`TOO_MANY_COLUMNS_MESSAGE`) for a matrix wider than :data:`MAX_COLUMNS`; else nothing."""
    if X.shape[1] > MAX_COLUMNS:
        raise ValueError(TOO_MANY_COLUMNS_MESSAGE.format(columns=X.shape[1], gigabytes=8 * X.shape[1] / 1e9))


def _csr(crow, col, values, size) -> torch.Tensor:
    """``torch.sparse_csr_tensor`` without its once-per-process "beta" ``UserWarning`` (a user cannot act on it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
        # torch 2.11 warns of "implicitly disabled" checks even when they are disabled explicitly, as here.
        warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly", category=UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, size=size, check_invariants=False)


def csr_tensor(X, *, dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    """A SciPy sparse matrix as a torch sparse CSR tensor, sharing memory where the dtype and device allow.

    Duplicate entries are summed and column indices sorted first, on a copy (the caller's matrix is
    never touched). int32 indices stay int32 (torch multiplies with either), so a fit holds no second
    copy of the index arrays.
    """
    X = X.tocsr()  # the same object when it is CSR already
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    index_dtype = np.int64 if max(X.indptr.dtype.itemsize, X.indices.dtype.itemsize) > 4 else np.int32
    crow = torch.as_tensor(X.indptr.astype(index_dtype, copy=False), device=device)
    col = torch.as_tensor(X.indices.astype(index_dtype, copy=False), device=device)
    values = torch.as_tensor(X.data, dtype=dtype, device=device)
    return _csr(crow, col, values, X.shape)


def as_rows(X):
    """``X`` as the training code holds rows: a SciPy matrix or another torch sparse layout as CSR, a dict as a
    :class:`~quantile_surrogate._utils.rows.RowDict` (its values as they are), else ``X``."""
    if isinstance(X, dict):
        return X if isinstance(X, RowDict) else RowDict(X)
    if sp.issparse(X):
        return csr_tensor(X)
    if isinstance(X, torch.Tensor) and X.layout not in (torch.strided, torch.sparse_csr):
        return X.to_sparse_csr()
    return X


def stored_values(X: torch.Tensor) -> torch.Tensor:
    """The stored values of a sparse CSR tensor (what a finiteness check must see); a dense ``X`` itself."""
    return X.values() if X.layout == torch.sparse_csr else X


def _csr_rows(X: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    crow, col, values = X.crow_indices(), X.col_indices(), X.values()
    rows = rows.to(device=crow.device, dtype=torch.int64)
    starts = crow[rows]
    lengths = crow[rows + 1] - starts
    new_crow = torch.zeros(rows.numel() + 1, dtype=crow.dtype, device=crow.device)
    torch.cumsum(lengths, 0, out=new_crow[1:])
    total = int(new_crow[-1])
    # Entry k of the result lies at crow[r] + (k - new_crow[row of k]) in X.
    shift = torch.repeat_interleave(starts - new_crow[:-1], lengths, output_size=total)
    positions = torch.arange(total, dtype=crow.dtype, device=crow.device) + shift
    return _csr(new_crow, col[positions], values[positions], (rows.numel(), X.shape[1]))


def take_rows(X: torch.Tensor, rows) -> torch.Tensor:
    """Rows ``rows`` (integer indices, any order, repeats allowed) of a dense or sparse CSR tensor.

    Dense: ``index_select`` (row copies; advanced indexing copies element by element on the CPU); a
    :class:`~quantile_surrogate._utils.rows.RowDict`: that of every value.
    """
    rows = torch.as_tensor(rows, device=X.device)
    if isinstance(X, RowDict):
        return X.take(rows)
    if X.layout == torch.sparse_csr:
        return _csr_rows(X, rows)
    return X.index_select(0, rows)


def slice_rows(X: torch.Tensor, start: int, stop: int | None = None) -> torch.Tensor:
    """Rows ``start:stop`` of a dense tensor (a view) or of a sparse CSR tensor (views of its arrays)."""
    stop = X.shape[0] if stop is None else min(stop, X.shape[0])
    if isinstance(X, RowDict):
        return X.slice(start, stop)
    if X.layout != torch.sparse_csr:
        return X[start:stop]
    crow = X.crow_indices()
    first, last = int(crow[start]), int(crow[stop])
    return _csr(crow[start:stop + 1] - first, X.col_indices()[first:last], X.values()[first:last],
                (stop - start, X.shape[1]))


def cat_rows(first, second):
    """The rows of ``first`` followed by those of ``second``: ``torch.cat`` of dense tensors, or of every value of
    two dicts of tensors with the same keys (one forward pass over a batch and a separate minibatch of ``A``)."""
    if isinstance(first, dict):
        return as_rows(first).cat(second)
    return torch.cat([first, second])


def row_chunks(X: torch.Tensor, size: int):
    """Consecutive blocks of at most ``size`` rows (``X.split(size)`` for either layout)."""
    for start in range(0, X.shape[0], size):
        yield slice_rows(X, start, start + size)
