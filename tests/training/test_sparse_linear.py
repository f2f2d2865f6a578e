"""The sparse linear layer: its backward (SciPy's CSC product on the CPU) against autograd through a dense matmul, and
train() on sparse rows."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

from quantile_surrogate._utils.sparse import csr_tensor
from quantile_surrogate.objectives import predict_scores
from quantile_surrogate.training import _sparse_linear, train
from quantile_surrogate.training._sparse_linear import Linear, sparse_linear
from quantile_surrogate.training.models import linear_scorer, mlp_scorer
from tests._data import sparse_classification


@pytest.mark.parametrize("outputs", [1, 3, 64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gradient_equals_dense_autograd(outputs, index_dtype):
    X = sp.random(40, 15, density=0.2, format="csr", random_state=0)
    X = sp.vstack([X[:3], sp.csr_matrix((1, 15)), X[4:]]).tocsr()  # row 3 empty
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    weight = torch.randn(outputs, 15, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: sparse_linear(csr_tensor(X), w), (weight,))
    upstream = torch.randn(40, outputs, dtype=torch.float64)
    (reference,) = torch.autograd.grad((torch.as_tensor(X.toarray()) @ weight.t() * upstream).sum(), weight)
    batch = csr_tensor(X)
    assert batch.col_indices().dtype == torch.from_numpy(X.indices).dtype
    for _ in range(2):  # a batch that comes back: the same product, and no transpose kept on the CPU
        (grad,) = torch.autograd.grad((sparse_linear(batch, weight) * upstream).sum(), weight)
        torch.testing.assert_close(grad, reference, rtol=1e-12, atol=1e-12)
        assert getattr(batch, _sparse_linear.TRANSPOSE, None) is None


@pytest.mark.parametrize("outputs", [1, 3, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_forward_in_scipy_equals_a_float64_reference_and_torchs_product(outputs, dtype, index_dtype):
    X = sp.random(60, 25, density=0.2, format="csr", random_state=3)
    X = sp.vstack([X[:5], sp.csr_matrix((1, 25)), X[6:]]).tocsr()  # row 5 empty
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    batch = csr_tensor(X).to(dtype)
    weight = torch.randn(outputs, 25, dtype=dtype, generator=torch.Generator().manual_seed(0), requires_grad=True)
    ours = sparse_linear(batch, weight)
    assert ours.dtype == dtype and ours.shape == (60, outputs) and ours.requires_grad
    reference = torch.as_tensor(X.toarray()) @ weight.detach().double().t()
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(ours.double(), reference, rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(ours, batch @ weight.detach().t(), rtol=tolerance, atol=tolerance)  # torch's product
    views = getattr(batch, _sparse_linear.VIEWS)  # made once, kept on the batch, on its own arrays
    assert torch.equal(sparse_linear(batch, weight), ours) and getattr(batch, _sparse_linear.VIEWS) is views
    assert np.shares_memory(views[0].data, batch.values().numpy()) and views[0].shape == (60, 25)


def test_forward_leaves_autocast_and_other_dtypes_to_torch(monkeypatch):
    X = sp.random(30, 10, density=0.3, format="csr", random_state=4)
    batch, weight = csr_tensor(X).float(), torch.randn(2, 10)
    assert _sparse_linear._scipy_product(batch, weight)
    assert not _sparse_linear._scipy_product(batch, weight.double())
    assert not _sparse_linear._scipy_product(batch.to(torch.float16), weight.half())
    with torch.autocast("cpu", dtype=torch.bfloat16):  # torch's product, as before (its MKL kernel has no bfloat16)
        assert not _sparse_linear._scipy_product(batch, weight)
    monkeypatch.setattr(_sparse_linear, "row_view", lambda X: pytest.fail("SciPy's product for a float16 batch"))
    half_weight = weight.half().requires_grad_()
    with pytest.raises(RuntimeError):  # torch's error, unchanged: no float16 sparse product on the CPU
        sparse_linear(batch.to(torch.float16), half_weight)
    half = csr_tensor(X).to(torch.float16)
    _sparse_linear.transposed_view(half)  # a float32 copy of half-precision values: not kept on the batch
    assert getattr(half, _sparse_linear.VIEWS, None) is None


def test_transposed_view_shares_the_tensor_s_arrays():
    X = sp.random(30, 1000, density=0.05, format="csr", random_state=1)
    for index_dtype in (np.int32, np.int64):  # SciPy's own constructor would copy int64 indices that fit in int32
        X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
        batch = csr_tensor(X)
        view = _sparse_linear.transposed_view(batch)
        assert view.shape == (1000, 30) and view.indices.dtype == index_dtype
        for ours, theirs in ((view.data, batch.values()), (view.indices, batch.col_indices()),
                             (view.indptr, batch.crow_indices())):
            assert np.shares_memory(ours, theirs.numpy())
        np.testing.assert_array_equal(view.toarray(), X.toarray().T)


@pytest.mark.parametrize("values, upstream", [(torch.float32, torch.float32), (torch.float64, torch.float32),
                                              (torch.float32, torch.bfloat16), (torch.float16, torch.float32)])
def test_gradient_keeps_the_upstream_dtype(values, upstream):
    """Autocast hands a lower-precision gradient; float16 values are multiplied as float32."""
    X = sp.random(50, 20, density=0.3, format="csr", random_state=2)
    batch = torch.sparse_csr_tensor(*(torch.as_tensor(a) for a in (X.indptr, X.indices)),
                                    torch.as_tensor(X.data).to(values), size=X.shape,
                                    check_invariants=True)
    gradient = torch.randn(50, 2, dtype=torch.float64)  # upstream of a (2, 20) weight's output
    grad = _sparse_linear._SparseTimesWeight.backward(type("Ctx", (), {"X": batch})(), gradient.to(upstream))[1]
    assert grad.dtype == upstream and grad.shape == (2, 20)
    reference = gradient.t() @ torch.as_tensor(X.toarray()).to(values).double()
    torch.testing.assert_close(grad.double(), reference, rtol=2e-2 if upstream == torch.bfloat16 else 1e-3,
                               atol=1e-2 if upstream == torch.bfloat16 else 1e-3)


def test_linear_is_nn_linear_on_dense_input():
    torch.manual_seed(0)
    ours = Linear(4, 2)
    torch.manual_seed(0)
    theirs = nn.Linear(4, 2)  # the same random init, parameters, state_dict and repr
    assert repr(ours) == repr(theirs) and isinstance(ours, nn.Linear)
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()))
    x = torch.randn(5, 4)
    assert torch.equal(ours(x), theirs(x))


def test_scorers_take_sparse_rows_in_their_first_layer():
    X, _ = sparse_classification(50, 12)
    dense = torch.as_tensor(X.toarray())
    for model in (linear_scorer(12).double(), mlp_scorer(12, (5, 3)).double()):
        torch.testing.assert_close(model(csr_tensor(X)), model(dense), rtol=1e-12, atol=1e-12)


# The MLP starts at random: its L-BFGS logistic start amplifies the last-bit differences of the two
# products' sums to about 1e-6 (non-convex), which would say nothing about the sparse path.
@pytest.mark.parametrize("batch_size, hidden, weighted, init",
                         [(None, (), False, "mixed"), (64, (), True, "mixed"), (None, (4,), False, "random")])
def test_train_on_sparse_rows_equals_train_on_dense(batch_size, hidden, weighted, init):
    X, y = sparse_classification(240, 20, seed=1)
    weight = np.random.default_rng(0).integers(1, 4, size=240).astype(float) if weighted else None
    scores = []
    for data in (X, torch.as_tensor(X.toarray())):  # a SciPy matrix: train() holds it as torch CSR
        model = lambda: mlp_scorer(20, hidden).double()  # noqa: E731
        result = train(model, data, torch.as_tensor(y), objective="precision_at_recall", target=0.9, max_epochs=8,
                       n_restarts=2, init=init, batch_size=batch_size, random_state=3, sample_weight=weight)
        scores.append(predict_scores(result.model, torch.as_tensor(X.toarray())).numpy())
    np.testing.assert_allclose(scores[0], scores[1], rtol=0, atol=1e-10)
