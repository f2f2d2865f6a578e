"""Sparse CSR rows on a CUDA device: the sparse layer, row taking and the estimators, against the CPU.

Skipped without a GPU (CI has none); run on a GPU machine with ``pytest tests/cross/test_cuda_sparse.py``.
On CUDA the CSR product and the transpose are cuSPARSE's (float32 sums may differ in the last
bits): each test compares with the same computation in float64 on the CPU.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from quantile_surrogate import QuantileClassifier, train
from quantile_surrogate._utils.sparse import csr_tensor, row_chunks, take_rows
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.training import _sparse_linear
from quantile_surrogate.training._sparse_linear import sparse_linear
from quantile_surrogate.training.models import linear_scorer

from tests._data import sparse_classification

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("outputs", [1, 8])
def test_sparse_linear_on_cuda_matches_the_float64_cpu_product(dtype, outputs):
    X = sp.random(3000, 500, density=0.02, format="csr", random_state=0)
    weight = torch.randn(outputs, 500, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    upstream = torch.randn(3000, outputs, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    dense_w = weight.clone().requires_grad_()
    expected = torch.as_tensor(X.toarray()) @ dense_w.t()
    (reference,) = torch.autograd.grad((expected * upstream).sum(), dense_w)
    batch = csr_tensor(X, dtype=dtype, device="cuda")
    gpu_w = weight.to(device="cuda", dtype=dtype).requires_grad_()
    tolerance = dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)
    for _ in range(2):  # the transpose, then the product with the transpose kept on the batch
        got = sparse_linear(batch, gpu_w)
        (grad,) = torch.autograd.grad((got * upstream.to(got)).sum(), gpu_w)
        assert got.device.type == "cuda" and grad.dtype == dtype
        torch.testing.assert_close(got.cpu().double(), expected.detach(), **tolerance)
        torch.testing.assert_close(grad.cpu().double(), reference, **tolerance)
    assert getattr(batch, _sparse_linear.TRANSPOSE).device.type == "cuda"


def test_rows_of_a_cuda_csr_tensor_are_the_cpu_rows():
    X, _ = sparse_classification(400, 50, seed=2)
    cpu, gpu = csr_tensor(X), csr_tensor(X, device="cuda")
    rows = torch.as_tensor(np.random.default_rng(0).permutation(400)[:150])
    torch.testing.assert_close(take_rows(gpu, rows.cuda()).to_dense().cpu(), take_rows(cpu, rows).to_dense())
    chunks = [chunk.to_dense().cpu() for chunk in row_chunks(gpu, 64)]
    torch.testing.assert_close(torch.cat(chunks), torch.as_tensor(X.toarray()))


def test_train_on_cuda_csr_minibatches_reaches_the_cpu_operating_point():
    X, y = sparse_classification(6000, 300, density=0.03, seed=3)
    results = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        model = linear_scorer(300).double().to(device)
        result = train(model, csr_tensor(X, device=device), torch.as_tensor(y, dtype=torch.float64, device=device),
                       objective="precision_at_recall", target=0.9, batch_size=1000, max_epochs=5,
                       init="logistic", random_state=0)
        assert next(result.model.parameters()).device.type == device
        with torch.no_grad():
            scores = torch.cat([result.model(chunk) for chunk in row_chunks(csr_tensor(X, device=device), 2048)])
        results[device] = precision_at_recall(y, scores.squeeze(-1).cpu().numpy(), 0.9)
    assert results["cuda"] == pytest.approx(results["cpu"], abs=0.02)


def test_quantile_classifier_on_sparse_input_and_cuda_predicts_like_the_cpu():
    X, y = sparse_classification(3000, 200, density=0.05, seed=4)
    settings = dict(objective="precision_at_recall", target=0.9, max_epochs=20, random_state=0)
    gpu = QuantileClassifier(device="cuda", **settings).fit(X, y)
    cpu = QuantileClassifier(**settings).fit(X, y)
    assert next(gpu.model_.parameters()).is_cuda
    gpu_metric = precision_at_recall(y, gpu.decision_function(X.tocsc()), 0.9)  # any SciPy format predicts
    cpu_metric = precision_at_recall(y, cpu.decision_function(X), 0.9)
    assert gpu_metric == pytest.approx(cpu_metric, abs=0.02)
    np.testing.assert_allclose(gpu.decision_function(X), gpu.decision_function(X.toarray()), rtol=1e-5, atol=1e-5)
