"""The logistic start on very many sparse columns by a truncated Newton method (quantile_surrogate.training._sparse_logistic).

References: torch autograd of the same objective in float64 (value, gradient and Hessian-vector
product), NumPy's dense solve (the conjugate gradients' step), scikit-learn's ``LogisticRegression``
(the solution), and the torch L-BFGS path of ``fit_logistic`` (the objective it reaches).
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from quantile_surrogate._utils.sparse import csr_tensor
from quantile_surrogate.training import _sparse_logistic, models
from quantile_surrogate.training._sparse_linear import transposed_view
from quantile_surrogate.training._sparse_logistic import LogisticProblem, takes_sparse_start
from quantile_surrogate.training.models import fit_logistic, linear_scorer, mlp_scorer
from tests._data import sparse_classification

torch.set_num_threads(1)


def _torch_value(X, y, theta, alpha, weights, bias):
    """The objective at a float64 tensor ``theta`` by torch on the dense matrix (the reference formula)."""
    d = X.shape[1]
    scores = torch.as_tensor(X.toarray(), dtype=torch.float64) @ theta[:d] + (theta[d] if bias else 0.0)
    target = torch.as_tensor(y, dtype=torch.float64)
    weight = None if weights is None else torch.as_tensor(weights, dtype=torch.float64)
    data = torch.nn.functional.binary_cross_entropy_with_logits(scores, target, weight=weight, reduction="sum")
    return data / (len(y) if weights is None else weight.sum()) + 0.5 * alpha * (theta[:d] ** 2).sum()


def _torch_objective(X, y, theta, alpha, weights, bias):
    """The same objective by torch autograd on the dense matrix, float64: (value, gradient)."""
    theta = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    value = _torch_value(X, y, theta, alpha, weights, bias)
    value.backward()
    return float(value.detach()), theta.grad.numpy()


def _torch_hessian(X, y, theta, alpha, weights, bias):
    """The objective's Hessian by torch autograd on the dense matrix, float64."""
    return torch.autograd.functional.hessian(lambda t: _torch_value(X, y, t, alpha, weights, bias),
                                             torch.tensor(theta, dtype=torch.float64)).numpy()


def _small_problem(seed, weighted):
    """30 sparse rows of 7 columns, 0/1 labels, row weights or None, and the generator that drew them."""
    rng = np.random.default_rng(seed)
    X = sp.random(30, 7, density=0.4, format="csr", random_state=seed, dtype=np.float64)
    y = rng.integers(0, 2, size=30).astype(np.float64)
    return X, y, rng.integers(0, 4, size=30).astype(np.float64) + 0.5 if weighted else None, rng


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), weighted=st.booleans(), bias=st.booleans(), alpha=st.sampled_from([0.0, 0.01, 1.0]),
       scale=st.sampled_from([0.1, 3.0, 40.0]))
def test_objective_and_gradient_equal_torch_autograd(seed, weighted, bias, alpha, scale):
    # scale 40 puts scores far into both tails: log(1 + e^z) must neither overflow nor lose the small side.
    X, y, weights, rng = _small_problem(seed, weighted)
    theta = scale * rng.standard_normal(7 + bias)
    objective = LogisticProblem(transposed_view(csr_tensor(X)), y, alpha, weights, bias)
    value, gradient = objective(theta)
    reference_value, reference_gradient = _torch_objective(X, y, theta, alpha, weights, bias)
    assert value == pytest.approx(reference_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(gradient, reference_gradient, rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), weighted=st.booleans(), bias=st.booleans(), alpha=st.sampled_from([0.0, 0.01, 1.0]),
       scale=st.sampled_from([0.1, 3.0, 40.0]))
def test_hessian_product_equals_torch_autograd_at_the_last_point(seed, weighted, bias, alpha, scale):
    X, y, weights, rng = _small_problem(seed, weighted)
    theta, elsewhere = (scale * rng.standard_normal(7 + bias) for _ in range(2))
    direction = rng.standard_normal(7 + bias)
    problem = LogisticProblem(transposed_view(csr_tensor(X)), y, alpha, weights, bias)
    problem(elsewhere)
    problem(theta)  # the curvature is taken at the last point called
    problem.set_curvature()
    product = problem.hessian_product(direction, np.empty(7 + bias))
    reference = _torch_hessian(X, y, theta, alpha, weights, bias) @ direction
    np.testing.assert_allclose(product, reference, rtol=1e-10, atol=1e-13)


def test_conjugate_gradients_solve_the_newton_system():
    X, y = sparse_classification(200, 12, density=0.5, seed=3)
    problem = LogisticProblem(transposed_view(csr_tensor(X)), y.astype(np.float64), 0.01)
    theta = np.random.default_rng(0).standard_normal(13)
    _, gradient = problem(theta)
    problem.set_curvature()
    step, *buffers = (np.empty(13) for _ in range(4))
    _sparse_logistic._conjugate_gradient(problem, gradient.copy(), step, *buffers, tolerance=1e-12)
    hessian = _torch_hessian(X, y.astype(np.float64), theta, 0.01, None, True)
    np.testing.assert_allclose(step, np.linalg.solve(hessian, -gradient), rtol=1e-8, atol=1e-10)
    # A loose tolerance stops early: the residual is within it and the step still descends.
    _sparse_logistic._conjugate_gradient(problem, gradient.copy(), step, *buffers, tolerance=0.5 * np.linalg.norm(gradient))
    residual = np.linalg.norm(hessian @ step + gradient)
    assert residual <= 0.5 * np.linalg.norm(gradient) and step @ gradient < 0


@pytest.mark.parametrize("bias", [True, False])
def test_newton_cg_decreases_at_every_step_and_reaches_scikit_learn(monkeypatch, bias):
    # Features scaled by 30 and a start far out: full Newton steps overshoot, so the backtracking must act.
    X, y = sparse_classification(400, 30, density=0.3, seed=5)
    X = 30 * X
    problem = LogisticProblem(transposed_view(csr_tensor(X)), y.astype(np.float64), 1 / 400, bias=bias)
    values, call = [], problem.__call__
    monkeypatch.setattr(type(problem), "__call__", lambda self, t: values.append(call(t)[0]) or (values[-1], self.gradient))
    start = np.random.default_rng(1).standard_normal(30 + bias)
    solution, value = _sparse_logistic.newton_cg(problem, start, max_iter=200, max_fun=250)
    accepted = [values[0]]
    for v in values[1:]:  # the values of the accepted points: each below the last accepted one
        if v <= accepted[-1]:
            accepted.append(v)
    assert value == accepted[-1] == min(values) and len(values) > len(accepted)  # at least one step was halved
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=5000, fit_intercept=bias).fit(X, y)
    np.testing.assert_allclose(solution[:30], reference.coef_.ravel(), atol=1e-6)
    if bias:
        np.testing.assert_allclose(solution[30], reference.intercept_[0], atol=1e-6)


def test_objective_on_a_float32_matrix_is_the_objective_of_its_values():
    # Its products run in float32 (no float64 copy of the values): float32 rounding, float64 value and gradient.
    X, y = sparse_classification(200, 30)
    single = X.astype(np.float32)
    theta = np.random.default_rng(0).standard_normal(31)
    value, gradient = LogisticProblem(transposed_view(csr_tensor(single)), y.astype(float), 0.1)(theta)
    reference_value, reference_gradient = _torch_objective(single.astype(np.float64), y, theta, 0.1, None, True)
    assert gradient.dtype == np.float64 and value == pytest.approx(reference_value, rel=1e-6)
    np.testing.assert_allclose(gradient, reference_gradient, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fit_logistic_where_the_history_is_cut_solves_logistic_regression(monkeypatch, weighted, dtype):
    # With no history budget beyond half the matrix, 20 pairs of 2,001 weights outweigh it: the Newton path.
    monkeypatch.setattr(models, "LBFGS_HISTORY_BYTES", 0)
    X, y = sparse_classification(3000, 2000, density=0.01, seed=1)
    weights = np.random.default_rng(2).integers(1, 4, size=3000).astype(np.float64) if weighted else None
    Xt = csr_tensor(X.astype(np.float32) if dtype == torch.float32 else X)
    model = linear_scorer(2000).to(dtype)
    assert models.lbfgs_history(model, Xt) < models.LBFGS_HISTORY and takes_sparse_start(model, Xt)
    calls, newton = [], _sparse_logistic.newton_cg
    monkeypatch.setattr(_sparse_logistic, "newton_cg", lambda *a, **k: calls.append(k["max_fun"]) or newton(*a, **k))
    alpha = 1 / (3000 if weights is None else weights.sum())
    value = fit_logistic(model, Xt, torch.as_tensor(y), alpha=alpha,
                         sample_weight=None if weights is None else torch.as_tensor(weights, dtype=dtype))
    assert calls == [250]  # the Newton path, with 1.25 times max_iter (200) evaluations
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=5000).fit(X, y, sample_weight=weights)
    tolerance = 1e-4 if dtype == torch.float64 else 1e-3
    np.testing.assert_allclose(model.weight.detach().double().numpy(), reference.coef_, atol=tolerance)
    np.testing.assert_allclose(model.bias.detach().double().numpy(), reference.intercept_, atol=tolerance)
    # The value returned is the objective at the parameters left in the model.
    theta = np.concatenate([model.weight.detach().double().numpy().ravel(), model.bias.detach().double().numpy()])
    by_hand, _ = _torch_objective(X.astype(np.float32) if dtype == torch.float32 else X, y, theta, alpha, weights, True)
    assert value == pytest.approx(by_hand, rel=1e-6)


def test_only_a_linear_model_on_cpu_sparse_rows_with_a_cut_history_takes_the_newton_path(monkeypatch):
    calls = []
    monkeypatch.setattr(models, "fit_sparse_linear_logistic", lambda *a, **k: calls.append(1) or 0.0)
    X, y = sparse_classification(300, 40)
    Xt, labels = csr_tensor(X), torch.as_tensor(y)
    fit_logistic(linear_scorer(40).double(), Xt, labels, alpha=0.01)  # 20 pairs fit 64 MiB: torch's L-BFGS
    fit_logistic(linear_scorer(40).double(), torch.as_tensor(X.toarray()), labels, alpha=0.01)  # dense
    assert calls == []
    monkeypatch.setattr(models, "LBFGS_HISTORY_BYTES", 0)
    fit_logistic(mlp_scorer(40, (4,)).double(), Xt, labels, alpha=0.01)  # an MLP keeps torch's
    frozen = linear_scorer(40).double()
    frozen.bias.requires_grad_(False)
    fit_logistic(frozen, Xt, labels, alpha=0.01)  # a frozen parameter too
    assert calls == []
    fit_logistic(linear_scorer(40).double(), Xt, labels, alpha=0.01)
    assert calls == [1]
