"""The sparse linear layer: its scatter backward against autograd through a dense matmul, and train() on sparse rows."""

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


@pytest.mark.parametrize("outputs, block", [(1, _sparse_linear.BLOCK_ENTRIES), (3, _sparse_linear.BLOCK_ENTRIES),
                                            (_sparse_linear.TRANSPOSE_FIRST_OUTPUTS, _sparse_linear.BLOCK_ENTRIES),
                                            (3, 7)])
def test_gradient_equals_dense_autograd(monkeypatch, outputs, block):
    monkeypatch.setattr(_sparse_linear, "BLOCK_ENTRIES", block)  # 7: many row blocks, one row at a time
    X = sp.random(40, 15, density=0.2, format="csr", random_state=0)
    X = sp.vstack([X[:3], sp.csr_matrix((1, 15)), X[4:]]).tocsr()  # row 3 empty
    weight = torch.randn(outputs, 15, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: sparse_linear(csr_tensor(X), w), (weight,))
    upstream = torch.randn(40, outputs, dtype=torch.float64)
    (grad,) = torch.autograd.grad((sparse_linear(csr_tensor(X), weight) * upstream).sum(), weight)
    (reference,) = torch.autograd.grad((torch.as_tensor(X.toarray()) @ weight.t() * upstream).sum(), weight)
    torch.testing.assert_close(grad, reference, rtol=1e-12, atol=1e-12)
    batch = csr_tensor(X)  # one batch twice: the scatter (or, for many outputs, the transpose), then the kept transpose
    for seen in range(2):
        (grad,) = torch.autograd.grad((sparse_linear(batch, weight) * upstream).sum(), weight)
        torch.testing.assert_close(grad, reference, rtol=1e-12, atol=1e-12)
        transposed_at_once = outputs >= _sparse_linear.TRANSPOSE_FIRST_OUTPUTS
        assert (getattr(batch, _sparse_linear.TRANSPOSE, None) is not None) == (seen or transposed_at_once)


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
