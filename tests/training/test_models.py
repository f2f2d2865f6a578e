"""Scoring functions and the logistic start (quantile_surrogate.training.models)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

from quantile_surrogate._utils.checks import OPTION_MESSAGE
from quantile_surrogate._utils.sparse import csr_tensor
from quantile_surrogate.training import models
from quantile_surrogate.training.models import (
    ACTIVATIONS,
    NOT_A_MODULE_MESSAGE,
    build_scorer,
    decayed_parameters,
    fit_logistic,
    linear_scorer,
    mlp_scorer,
    reset_parameters,
)
from tests._messages import exact
from tests.training._helpers import blobs

torch.set_num_threads(1)


def test_linear_scorer_is_w_x_plus_b():
    model = linear_scorer(3).double()
    x = torch.tensor([[1.0, 2.0, -1.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    expected = x @ model.weight.detach().reshape(-1) + model.bias.detach()
    torch.testing.assert_close(model(x).reshape(-1).detach(), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("activation,function", [("relu", torch.relu), ("tanh", torch.tanh),
                                                 ("logistic", torch.sigmoid), ("identity", lambda t: t)])
def test_mlp_scorer_composes_its_layers_with_the_activation(activation, function):
    model = mlp_scorer(4, (5, 3), activation).double()
    linears = [m for m in model if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(4, 5), (5, 3), (3, 1)]
    x = torch.randn(7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    by_hand = x
    for layer in linears[:-1]:
        by_hand = function(by_hand @ layer.weight.T + layer.bias)
    by_hand = by_hand @ linears[-1].weight.T + linears[-1].bias
    torch.testing.assert_close(model(x).detach(), by_hand.detach(), rtol=0, atol=1e-14)


def test_mlp_scorer_refuses_an_unknown_activation():
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="activation", options=sorted(ACTIVATIONS),
                                               value="softplus")):
        mlp_scorer(3, (4,), "softplus")


def test_build_scorer_picks_linear_mlp_or_the_factory():
    assert isinstance(build_scorer(3), nn.Linear)
    assert [m.out_features for m in build_scorer(3, (6,)) if isinstance(m, nn.Linear)] == [6, 1]
    custom = nn.Sequential(nn.Linear(3, 1))
    assert build_scorer(3, (6,), module_factory=lambda d: custom) is custom
    with pytest.raises(TypeError, match=exact(NOT_A_MODULE_MESSAGE, name="module_factory", type_name="function")):
        build_scorer(3, module_factory=lambda d: (lambda x: x))


def test_reset_parameters_redraws_every_layer_from_the_global_rng():
    model = mlp_scorer(3, (4,))
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(0)
    reset_parameters(model)
    first = [p.detach().clone() for p in model.parameters()]
    assert all(not torch.equal(a, b) for a, b in zip(before, first))
    torch.manual_seed(0)
    reset_parameters(model)
    assert all(torch.equal(a, b) for a, b in zip(first, model.parameters()))


def test_decayed_parameters_are_the_weight_matrices():
    model = mlp_scorer(3, (4,))
    model[0].bias.requires_grad_(False)
    weights, others = decayed_parameters(model)
    assert [tuple(p.shape) for p in weights] == [(4, 3), (1, 4)]
    assert [tuple(p.shape) for p in others] == [(1,)]  # the frozen bias is in neither


def test_logistic_start_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    X, y = blobs()
    model = torch.nn.Linear(3, 1).double()
    fit_logistic(model, X, y, alpha=1 / X.shape[0])
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(X.numpy(), y.numpy())
    np.testing.assert_allclose(model.weight.detach().numpy(), reference.coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.bias.detach().numpy(), reference.intercept_, rtol=1e-4, atol=1e-6)


def test_logistic_start_returns_its_objective_and_penalises_weights_only():
    X, y = blobs()
    model = torch.nn.Linear(3, 1).double()
    alpha = 0.5
    value = fit_logistic(model, X, y, alpha=alpha)
    with torch.no_grad():
        scores = model(X).reshape(-1)
        by_hand = nn.functional.binary_cross_entropy_with_logits(scores, y.double()) \
            + 0.5 * alpha * (model.weight**2).sum()
    assert value == pytest.approx(float(by_hand), rel=1e-9)
    # At the optimum the gradient vanishes; the bias has no penalty, so the mean residual is 0.
    assert float((torch.sigmoid(scores) - y.double()).mean()) == pytest.approx(0.0, abs=1e-6)


def test_logistic_start_leaves_no_lbfgs_history_behind_for_the_garbage_collector(monkeypatch):
    # torch's L-BFGS sits in a reference cycle after step(); with the collector off, whatever its state
    # still holds would stay allocated. fit_logistic empties it: no history vector outlives the fit.
    import gc
    import weakref

    made = []

    class Recorded(torch.optim.LBFGS):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(torch.optim, "LBFGS", Recorded)
    X, y = blobs()
    model = torch.nn.Linear(3, 1).double()
    enabled = gc.isenabled()
    gc.disable()
    try:
        fit_logistic(model, X, y, alpha=1 / X.shape[0])
        optimizer = made[0]()
        assert optimizer is None or not any(optimizer.state.values())
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("entries, pairs", [(60_000, 20), (16_016, 6), (2_000, 3)])
def test_lbfgs_history_on_sparse_rows_weighs_at_most_half_the_matrix(monkeypatch, entries, pairs):
    # A linear model of 1,000 float64 weights and a bias: a pair of vectors is 2 x 8,008 bytes; the matrix's
    # entries weigh 12 bytes each (float64 value, int32 column), and half of that is the history's budget.
    monkeypatch.setattr(models, "LBFGS_HISTORY_BYTES", 0)
    X = csr_tensor(sp.csr_matrix((np.ones(entries), np.zeros(entries, dtype=np.int32),
                                  np.arange(entries + 1, dtype=np.int32)), shape=(entries, 1000)))
    model = linear_scorer(1000).double()
    assert models.lbfgs_history(model, X) == pairs
    assert pairs == 3 or 2 * pairs * 8_008 <= entries * 12 // 2  # within the budget (3 is the floor)
    assert models.lbfgs_history(model, torch.zeros(10, 1000, dtype=torch.float64)) == models.LBFGS_HISTORY  # dense: all
