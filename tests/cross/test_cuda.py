"""The losses, estimators and training on a CUDA device, against the CPU's float64 reference.

Skipped without a GPU (CI has none); run on a GPU machine with ``pytest tests/cross/test_cuda.py``.
On CUDA the kernel estimators take the torch path (the NumPy window is for CPU tensors), the
thresholds are computed on the device, and autocast is CUDA's: each test compares with the
same computation in float64 on the CPU.
"""

import numpy as np
import pytest
import torch

from quantile_surrogate import QuantileClassifier, QuantileClassifierCV, SubsetBatchSampler, train
from quantile_surrogate import losses as L
from quantile_surrogate.metrics import precision_at_recall

from tests.quantiles._cases import VECTOR_REFERENCES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ESTIMATORS = VECTOR_REFERENCES  # each estimator beside its float64 NumPy reference

LOSSES = {
    "precision_at_recall": lambda s, y, **kw: L.precision_at_recall_loss(s, y, 0.9, **kw),
    "precision_at_rate fp": lambda s, y, **kw: L.precision_at_rate_loss(s, y, 0.05, **kw),
    "precision_at_rate tp": lambda s, y, **kw: L.precision_at_rate_loss(s, y, 0.05, form="tp", **kw),
    "recall_at_fpr": lambda s, y, **kw: L.recall_at_fpr_loss(s, y, 0.05, **kw),
    "pr_auc": lambda s, y, **kw: L.pr_auc_loss(s, y, (0.2, 0.5, 0.8), **kw),
}


def batch(n, seed, ties=False):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.2
    values = rng.normal(size=n) + positive
    if ties:
        values = np.round(values, 1)
    return values, positive


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_estimator_on_cuda_matches_the_float64_reference(dtype, ties):
    values, _ = batch(5000, seed=1, ties=ties)
    scores = torch.as_tensor(values, dtype=dtype, device="cuda")
    exact = scores.double().cpu().numpy()
    tolerance = 1e-10 if dtype == torch.float64 else 1e-5
    for name, (estimate, reference) in ESTIMATORS.items():
        for level in (0.05, 0.5, 0.95):
            got = estimate(scores, level)
            assert got.device.type == "cuda" and got.dtype == dtype, name
            assert float(got) == pytest.approx(reference(exact, level), abs=tolerance), (name, level, ties)


@pytest.mark.parametrize("quantile", ["point", "kernel", "lower_mean", "interval"])
def test_every_loss_on_cuda_gives_the_cpu_value_and_gradient(quantile):
    values, positive = batch(4000, seed=2)
    labels = torch.as_tensor(positive)
    for name, loss_fn in LOSSES.items():
        kw = {"quantile": quantile}
        cpu = torch.as_tensor(values).requires_grad_()
        expected = loss_fn(cpu, labels, **kw)
        expected.backward()
        gpu = torch.as_tensor(values, device="cuda").requires_grad_()
        got = loss_fn(gpu, labels.cuda(), **kw)
        got.backward()
        assert got.device.type == "cuda", name
        torch.testing.assert_close(got.cpu(), expected.detach(), atol=1e-10, rtol=1e-10, msg=name)
        torch.testing.assert_close(gpu.grad.cpu(), cpu.grad, atol=1e-10, rtol=1e-8, msg=name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("autocast", [False, True])
def test_half_precision_on_cuda_above_65504_rows(dtype, autocast):
    # A float16 count of 80,000 penalised rows, or a float16 rank above 2048, would be inf or off by far.
    values, positive = batch(100_000, seed=3)
    half = torch.as_tensor(values, device="cuda").to(dtype)
    exact = half.double()
    labels = torch.as_tensor(positive, device="cuda")
    eps = torch.finfo(dtype).eps
    for name, loss_fn in LOSSES.items():
        reference = loss_fn(exact, labels, return_threshold=True)
        with torch.autocast("cuda", dtype=dtype, enabled=autocast):
            out = loss_fn(half, labels, return_threshold=True)
        assert out.loss.dtype == dtype, name
        torch.testing.assert_close(out.threshold.double(), reference.threshold, atol=1e-5, rtol=eps / 2, msg=name)
        assert float(out.loss) == pytest.approx(float(reference.loss), abs=4 * eps * (1 + float(reference.loss))), name


def test_compiled_loss_on_cuda_matches_eager():
    values, positive = batch(3000, seed=4)
    labels = torch.as_tensor(positive, device="cuda")

    def loss(s, y):
        return L.precision_at_recall_loss(s, y, 0.8, quantile="kernel", validate_args=False)

    torch._dynamo.reset()
    compiled_in = torch.as_tensor(values, device="cuda").requires_grad_()
    eager_in = torch.as_tensor(values, device="cuda").requires_grad_()
    got, expected = torch.compile(loss)(compiled_in, labels), loss(eager_in, labels)
    got.backward()
    expected.backward()
    torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(compiled_in.grad, eager_in.grad, atol=1e-10, rtol=1e-8)
    torch._dynamo.reset()


def _mixture(n, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.1).astype(np.float32)
    X = rng.normal(size=(n, 5)).astype(np.float32) + 1.5 * y[:, None] * np.array([1, 0.5, 0, 0, 0], np.float32)
    return torch.as_tensor(X), torch.as_tensor(y)


def test_train_on_cuda_reaches_the_cpu_operating_point():
    X, y = _mixture(20_000, seed=5)
    results = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        model = torch.nn.Linear(5, 1).to(device)
        result = train(model, X.to(device), y.to(device), objective="precision_at_recall", target=0.9,
                       batch_size=2000, max_epochs=5, init="logistic", random_state=0)
        assert next(result.model.parameters()).device.type == device
        with torch.no_grad():
            scores = result.model(X.to(device)).squeeze(-1).double().cpu().numpy()
        results[device] = precision_at_recall(y.numpy().astype(int), scores, 0.9)
    assert results["cuda"] == pytest.approx(results["cpu"], abs=0.02)


def test_dataloader_with_the_subset_sampler_trains_on_cuda():
    X, y = _mixture(8000, seed=6)
    dataset = torch.utils.data.TensorDataset(X, y)
    sampler = SubsetBatchSampler(y, batch_size=1000, objective="precision_at_recall", subset_batch_size=200,
                                 generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler, collate_fn=sampler.collate, pin_memory=True)
    model = torch.nn.Linear(5, 1).cuda()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    first = last = None
    for _ in range(3):
        for (X_b, y_b), (X_a, _) in loader:
            X_b, y_b, X_a = X_b.cuda(non_blocking=True), y_b.cuda(non_blocking=True), X_a.cuda(non_blocking=True)
            scores = model(torch.cat([X_b, X_a])).squeeze(-1)
            loss = L.precision_at_recall_loss(scores[:len(y_b)], y_b, 0.9, threshold_scores=scores[len(y_b):])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            first = float(loss.detach()) if first is None else first
            last = float(loss.detach())
    assert last < first


def test_quantile_classifier_on_cuda_predicts_like_the_cpu():
    X, y = _mixture(3000, seed=7)
    settings = dict(objective="precision_at_recall", target=0.9, max_epochs=20, random_state=0)
    gpu = QuantileClassifier(device="cuda", **settings).fit(X.numpy(), y.numpy())
    cpu = QuantileClassifier(**settings).fit(X.numpy(), y.numpy())
    assert next(gpu.model_.parameters()).is_cuda
    gpu_metric = precision_at_recall(y.numpy().astype(int), gpu.decision_function(X.numpy()), 0.9)
    cpu_metric = precision_at_recall(y.numpy().astype(int), cpu.decision_function(X.numpy()), 0.9)
    assert gpu_metric == pytest.approx(cpu_metric, abs=0.02)


def test_quantile_classifier_cv_trains_torch_families_on_cuda_and_trees_on_the_cpu():
    X, y = _mixture(2000, seed=8)
    settings = dict(target=0.9, alphas=(1e-3,), cv=3, random_state=0)
    runs = {device: QuantileClassifierCV(estimator=QuantileClassifier(device=device, max_epochs=10, n_restarts=1),
                                         **settings).fit(X.numpy(), y.numpy()) for device in ("cpu", "cuda")}
    families = list(runs["cpu"].cv_results_["param_family"])
    assert families == ["linear", "mlp", "boosted"]
    # The trees never touch the GPU: the same fold entries to the bit; the torch families' agree to noise.
    np.testing.assert_array_equal(runs["cuda"].selection_["metric"][2], runs["cpu"].selection_["metric"][2])
    np.testing.assert_allclose(runs["cuda"].cv_results_["mean_test_score"], runs["cpu"].cv_results_["mean_test_score"],
                               atol=0.02)
    if runs["cuda"].family_ != "boosted":
        assert next(runs["cuda"].best_estimator_.model_.parameters()).is_cuda


def test_constraint_penalty_and_multipliers_on_cuda_match_the_cpu():
    from quantile_surrogate.constraints import ConstraintSet, gap, rate

    values, positive = batch(3000, seed=9)
    groups = torch.as_tensor(np.arange(3000) % 3)
    constraints = [rate("fpr", at_most=0.05), gap("recall", at_most=0.02), rate("recall", at_least=0.9, in_each_group=True)]
    results = {}
    for device in ("cpu", "cuda"):
        sets = ConstraintSet(constraints, n_groups=3)
        scores = torch.as_tensor(values, device=device).requires_grad_()
        labels, codes = torch.as_tensor(positive, device=device), groups.to(device)
        record = sets.update(scores.detach(), labels, 0.5, codes)
        penalty = sets.penalty(scores, labels, 0.5, codes)
        penalty.backward()
        results[device] = (record, float(penalty), scores.grad.cpu())
    assert results["cuda"][0] == results["cpu"][0]  # exact rates and multipliers: counts, the same on both
    assert results["cuda"][1] == pytest.approx(results["cpu"][1], rel=1e-10)
    torch.testing.assert_close(results["cuda"][2], results["cpu"][2], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["buffer", "ema"])
def test_minibatch_training_with_the_threshold_memory_on_cuda_matches_the_cpu(mode):
    """The memory's shifts and thresholds on the device (float64): the CPU's steps, to rounding."""
    X, y = _mixture(1500, seed=10)
    X = X.double()
    settings = dict(objective="precision_at_recall", target=0.9, batch_size=32, max_epochs=3, random_state=0,
                    threshold_memory=mode)
    runs = {device: train(torch.nn.Linear(X.shape[1], 1, dtype=torch.float64), X.to(device), y.to(device), **settings)
            for device in ("cpu", "cuda")}
    np.testing.assert_allclose(np.concatenate(runs["cuda"].threshold_curve), np.concatenate(runs["cpu"].threshold_curve),
                               rtol=1e-8, atol=1e-9)
    torch.testing.assert_close(next(runs["cuda"].model.parameters()).cpu(), next(runs["cpu"].model.parameters()),
                               rtol=1e-8, atol=1e-9)
