"""Rows of torch sparse CSR tensors against SciPy's own row indexing (the reference)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate._utils.sparse import as_rows, csr_tensor, row_chunks, slice_rows, stored_values, take_rows


def scipy_csr(X: torch.Tensor) -> sp.csr_matrix:
    """The reference's view of a torch CSR tensor: SciPy's CSR matrix of its three arrays."""
    return sp.csr_matrix((X.values().numpy(), X.col_indices().numpy(), X.crow_indices().numpy()), shape=tuple(X.shape))


@st.composite
def matrices(draw):
    n, d = draw(st.integers(1, 12)), draw(st.integers(1, 9))
    density = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**16))
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    if draw(st.booleans()):  # int64 index arrays, as SciPy makes them past 2^31 entries
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return X


@settings(max_examples=60, deadline=None)
@given(X=matrices(), data=st.data())
def test_take_rows_equals_scipy(X, data):
    rows = data.draw(st.lists(st.integers(0, X.shape[0] - 1), max_size=15))  # any order, repeats, none
    taken = take_rows(csr_tensor(X), np.asarray(rows, dtype=np.int64))
    assert taken.layout == torch.sparse_csr and tuple(taken.shape) == (len(rows), X.shape[1])
    np.testing.assert_array_equal(scipy_csr(taken).toarray(), X[np.asarray(rows, dtype=np.int64)].toarray())


@settings(max_examples=60, deadline=None)
@given(X=matrices(), data=st.data())
def test_slices_and_chunks_equal_scipy(X, data):
    start = data.draw(st.integers(0, X.shape[0]))
    stop = data.draw(st.integers(start, X.shape[0] + 3))
    tensor = csr_tensor(X)
    np.testing.assert_array_equal(scipy_csr(slice_rows(tensor, start, stop)).toarray(), X[start:stop].toarray())
    size = data.draw(st.integers(1, 5))
    chunks = list(row_chunks(tensor, size))
    assert [c.shape[0] for c in chunks] == [min(size, X.shape[0] - s) for s in range(0, X.shape[0], size)]
    np.testing.assert_array_equal(np.vstack([scipy_csr(c).toarray() for c in chunks]), X.toarray())


def test_dense_rows_are_index_select_and_views():
    X = torch.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(take_rows(X, [2, 0, 2]).numpy(), X.numpy()[[2, 0, 2]])
    assert slice_rows(X, 1, 3).data_ptr() == X[1:3].data_ptr()  # a view, no copy
    assert torch.equal(torch.cat(list(row_chunks(X, 3))), X)


def test_csr_tensor_sums_duplicates_on_a_copy():
    # COO with a repeated (row, column): SciPy sums it; the caller's matrix keeps its own storage.
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([1, 1, 0]), np.array([0, 2, 3])), shape=(2, 3))
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    tensor = csr_tensor(X)
    np.testing.assert_array_equal(scipy_csr(tensor).toarray(), [[0.0, 3.0, 0.0], [5.0, 0.0, 0.0]])
    for kept, now in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(kept, now)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_tensor_keeps_dtype_and_int32_indices(dtype):
    X = sp.random(5, 4, density=0.5, format="coo", random_state=0, dtype=dtype)
    tensor = csr_tensor(X)
    assert tensor.dtype == (torch.float32 if dtype == np.float32 else torch.float64)
    assert tensor.crow_indices().dtype == torch.int32  # no second, wider copy of the index arrays
    np.testing.assert_array_equal(scipy_csr(tensor).toarray(), X.toarray())


def test_as_rows_and_stored_values():
    X = sp.random(6, 5, density=0.4, format="csc", random_state=1)
    rows = as_rows(X)
    assert rows.layout == torch.sparse_csr
    coo = torch.as_tensor(X.toarray()).to_sparse_coo()
    np.testing.assert_array_equal(scipy_csr(as_rows(coo)).toarray(), X.toarray())
    dense = torch.zeros(2, 2)
    assert as_rows(dense) is dense and stored_values(dense) is dense
    np.testing.assert_array_equal(np.sort(stored_values(rows).numpy()), np.sort(X.data))
