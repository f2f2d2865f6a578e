"""Scoring functions ``f(x; w)`` for :func:`~quantile_surrogate.training.train`, and the logistic start.

A scoring function is any ``torch.nn.Module`` that maps a float tensor of shape (n, d) to
raw scores of shape (n,) or (n, 1). The paper's model is linear (:func:`linear_scorer`);
:func:`mlp_scorer` is a multi-layer perceptron. :func:`fit_logistic` fits any of them by
maximum likelihood (logistic regression when the model is linear), which is the
``init="logistic"`` start of Algorithm 1.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .._utils.checks import OPTION_MESSAGE
from ._sparse_linear import Linear
from ._sparse_logistic import fit_sparse_linear_logistic, takes_sparse_start

__all__ = ["ACTIVATIONS", "linear_scorer", "mlp_scorer", "build_scorer", "reset_parameters", "fit_logistic"]

#: Values of ``activation=`` of :func:`mlp_scorer`: name -> the ``torch.nn`` module class put
#: between layers ("logistic" is the sigmoid, as in scikit-learn's ``MLPClassifier``).
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}
NOT_A_MODULE_MESSAGE = "`{name}` must return a torch.nn.Module; it returned {type_name}."


def linear_scorer(n_features: int) -> nn.Module:
    """``f(x) = w^T x + b``, the paper's model: ``nn.Linear(n_features, 1)`` with PyTorch's random init.

    The module is :class:`~quantile_surrogate.training._sparse_linear.Linear`, an ``nn.Linear`` whose
    backward pass on a sparse CSR input is one pass over its stored entries (SciPy's CSC product on
    the CPU; a dense input is unchanged); so is an MLP's first layer.

    Parameters
    ----------
    n_features : int
        ``d``, the number of input features.

    Returns
    -------
    torch.nn.Linear
        Maps (n, d) to (n, 1) scores; float32 (``.double()`` for float64).

    See Also
    --------
    mlp_scorer, build_scorer

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.models import linear_scorer
    >>> linear_scorer(3)
    Linear(in_features=3, out_features=1, bias=True)
    >>> linear_scorer(3)(torch.zeros(5, 3)).shape
    torch.Size([5, 1])
    """
    return Linear(n_features, 1)


def mlp_scorer(n_features: int, hidden_layer_sizes: Sequence[int], activation: str = "relu") -> nn.Module:
    """A multi-layer perceptron ``d -> h_1 -> ... -> h_L -> 1`` with ``activation`` between layers.

    Parameters
    ----------
    n_features : int
        ``d``, the number of input features.
    hidden_layer_sizes : sequence of int
        The widths ``h_1..h_L`` of the hidden layers; empty gives a linear model.
    activation : {"relu", "tanh", "logistic", "identity"}, default="relu"
        The nonlinearity after each hidden layer (:data:`ACTIVATIONS`).

    Returns
    -------
    torch.nn.Sequential
        Maps (n, d) to (n, 1) scores.

    Raises
    ------
    ValueError
        For an ``activation`` not in :data:`ACTIVATIONS`.

    Examples
    --------
    >>> from quantile_surrogate.training.models import mlp_scorer
    >>> model = mlp_scorer(3, (8, 4), activation="tanh")
    >>> [type(layer).__name__ for layer in model]
    ['Linear', 'Tanh', 'Linear', 'Tanh', 'Linear']
    """
    if activation not in ACTIVATIONS:
        raise ValueError(OPTION_MESSAGE.format(name="activation", options=sorted(ACTIVATIONS), value=activation))
    layers: list[nn.Module] = []
    width = n_features
    for size in hidden_layer_sizes:
        layers += [(Linear if not layers else nn.Linear)(width, int(size)),  # the first layer takes sparse rows
                   ACTIVATIONS[activation]()]
        width = int(size)
    layers.append((Linear if not layers else nn.Linear)(width, 1))
    return nn.Sequential(*layers)


def build_scorer(n_features: int, hidden_layer_sizes: Sequence[int] = (), module_factory=None) -> nn.Module:
    """The scoring function of :class:`~quantile_surrogate.QuantileClassifier`: linear, an MLP, or the user's.

    Parameters
    ----------
    n_features : int
        ``d``, the number of input features.
    hidden_layer_sizes : sequence of int, default=()
        Empty for :func:`linear_scorer`, else the hidden widths of a ReLU :func:`mlp_scorer`.
    module_factory : callable, optional
        ``module_factory(n_features) -> torch.nn.Module``; overrides ``hidden_layer_sizes``.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    TypeError
        If ``module_factory`` returns something other than a ``torch.nn.Module``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.models import build_scorer
    >>> build_scorer(3)
    Linear(in_features=3, out_features=1, bias=True)
    >>> len(build_scorer(3, (8,)))  # Linear, ReLU, Linear
    3
    >>> build_scorer(3, module_factory=lambda d: torch.nn.Bilinear(d, d, 1))
    Bilinear(in1_features=3, in2_features=3, out_features=1, bias=True)
    """
    if module_factory is not None:
        model = module_factory(n_features)
        if not isinstance(model, nn.Module):
            raise TypeError(NOT_A_MODULE_MESSAGE.format(name="module_factory", type_name=type(model).__name__))
        return model
    if len(hidden_layer_sizes) == 0:
        return linear_scorer(n_features)
    return mlp_scorer(n_features, hidden_layer_sizes)


def reset_parameters(model: nn.Module) -> nn.Module:
    """Draw fresh random parameters for every submodule that defines ``reset_parameters``.

    :func:`~quantile_surrogate.training.train` calls it for each random restart.

    Parameters
    ----------
    model : torch.nn.Module
        Changed in place; the draws come from PyTorch's global generator.

    Returns
    -------
    torch.nn.Module
        ``model`` itself.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.models import linear_scorer, reset_parameters
    >>> _ = torch.manual_seed(0)
    >>> model = linear_scorer(2)
    >>> before = model.weight.detach().clone()
    >>> reset_parameters(model) is model, torch.equal(before, model.weight)
    (True, False)
    """
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()
    return model


def decayed_parameters(model: nn.Module):
    """Split parameters into (weights, biases): weight decay applies to tensors with ndim >= 2 only.

    The quantile threshold absorbs any shift of the scores, so shrinking an output bias
    towards 0 is pointless (and hurts the logistic start); this is the usual convention.
    """
    weights = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return weights, others


LBFGS_HISTORY = 20
"""L-BFGS's pairs of remembered vectors (each the size of the parameters) in :func:`fit_logistic`."""
LBFGS_HISTORY_BYTES = 64 * 2**20
"""A history of at most this many bytes is never shortened (:func:`lbfgs_history`)."""


def lbfgs_history(model: nn.Module, X: torch.Tensor) -> int:
    """:data:`LBFGS_HISTORY` pairs, or fewer (at least 3) where they would outweigh half a sparse ``X`` and 64 MiB.

    On sparse data the parameters can outnumber the stored entries (10^6 columns with 10 entries a row):
    20 pairs of 10^6 float64 weights are 320 MB beside a 120 MB matrix, so the history is cut to what
    half the matrix or 64 MiB weighs (4 pairs there; 7 with the whole matrix's weight). Where it is cut,
    :func:`fit_logistic` fits a linear model by a truncated Newton method (``training._sparse_logistic``): the
    fit's peak resident memory 2.65-2.95x the matrix (nine runs) against 3.7-3.9x with SciPy's L-BFGS-B and 5.4-5.6x with
    torch's L-BFGS (``results/sparse_data/memory.md``). A dense ``X``, or a history within :data:`LBFGS_HISTORY_BYTES`,
    keeps 20: the same fit as before, and as on the dense copy of a small sparse matrix.
    """
    values = X.values() if X.layout == torch.sparse_csr else X
    vector = sum(p.numel() for p in model.parameters()) * values.element_size()
    budget = LBFGS_HISTORY_BYTES
    if X.layout == torch.sparse_csr:
        budget = max(budget, values.numel() * (values.element_size() + X.col_indices().element_size()) // 2)
    if X.layout != torch.sparse_csr or 2 * LBFGS_HISTORY * vector <= budget:
        return LBFGS_HISTORY
    return int(max(3, budget // (2 * vector)))


def fit_logistic(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, alpha: float, max_iter: int = 200,
                 sample_weight: torch.Tensor | None = None) -> float:
    r"""Fit ``model`` in place by penalised maximum likelihood with full-batch L-BFGS.

    .. math::
        \min_w \frac1N \sum_i \log(1 + e^{-\tilde y_i f(x_i; w)}) + \frac{\alpha}{2} \|W\|^2,

    with ``W`` the weight matrices (biases are not penalised) and :math:`\tilde y_i = \pm 1`.
    For a linear model and ``alpha = 1 / N`` this is scikit-learn's ``LogisticRegression(C=1)``.
    Not in the paper, which starts at random: this is the ``init="logistic"`` start of
    :func:`~quantile_surrogate.training.train`. Where :func:`lbfgs_history` shortens the history (weights
    that outweigh 64 MiB and half a sparse ``X``), a linear model on a CPU sparse ``X`` is fitted by a
    truncated Newton method with the same stopping rules instead, which holds seven weight-sized vectors
    (:mod:`~quantile_surrogate.training._sparse_logistic`: torch's L-BFGS made the process's memory grow by
    twice what it allocated there, and SciPy's L-BFGS-B holds 25).

    Parameters
    ----------
    model : torch.nn.Module
        Maps (N, d) to (N,) or (N, 1) scores; fitted in place.
    X : Tensor of shape (N, d)
        Floating point, of the model's dtype and device.
    y : Tensor of shape (N,)
        Labels in {0, 1} (or bool).
    alpha : float >= 0
        The L2 penalty on the weight matrices.
    max_iter : int, default=200
        L-BFGS iterations (Newton iterations on the path for very many sparse columns).
    sample_weight : Tensor of shape (N,), optional
        Frequency weights: the mean becomes :math:`\sum_i w_i \log(\dots) / \sum_i w_i`,
        the mean over the rows repeated ``w_i`` times.

    Returns
    -------
    float
        The objective at the solution.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The same fit for a linear model (``C = 1 / (alpha N)``).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from sklearn.linear_model import LogisticRegression
    >>> from quantile_surrogate.training.models import fit_logistic, linear_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] - X[:, 1] + rng.normal(size=200) > 0).astype(int)
    >>> model = linear_scorer(2).double()
    >>> loss = fit_logistic(model, torch.as_tensor(X), torch.as_tensor(y), alpha=1 / 200)
    >>> model.weight.detach().numpy().round(3), LogisticRegression(C=1.0).fit(X, y).coef_.round(3)
    (array([[ 1.672, -1.557]]), array([[ 1.672, -1.557]]))
    """
    history = lbfgs_history(model, X)
    if history < LBFGS_HISTORY and takes_sparse_start(model, X):  # weights outweigh the history's budget
        return fit_sparse_linear_logistic(model, X, y, alpha=alpha, max_iter=max_iter,
                                          sample_weight=sample_weight)
    weights, _ = decayed_parameters(model)
    target = y.to(X.dtype)
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=max_iter, tolerance_grad=1e-9,
        tolerance_change=1e-12, history_size=history, line_search_fn="strong_wolfe",
    )

    def objective():
        scores = model(X).reshape(-1)
        if sample_weight is not None:
            data_term = F.binary_cross_entropy_with_logits(scores, target, weight=sample_weight, reduction="sum")
            return data_term / sample_weight.sum() + 0.5 * alpha * sum((w * w).sum() for w in weights)
        return F.binary_cross_entropy_with_logits(scores, target) + 0.5 * alpha * sum((w * w).sum() for w in weights)

    def closure():
        # L-BFGS changed the parameters in place: drop autocast's stale copies (training._steps.parameters_changed).
        torch.clear_autocast_cache()
        optimizer.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    optimizer.step(closure)  # returns the objective at the start, not at the end
    # The optimizer outlives this call in a reference cycle that only the garbage collector frees (checked with
    # the collector off), and its state holds L-BFGS's history, 2 x history_size weight vectors: dropped now.
    optimizer.state.clear()
    # Evaluated once more at the solution; the forked RNG keeps a dropout layer from shifting later draws.
    devices = [X.device.index or 0] if X.device.type == "cuda" else []
    torch.clear_autocast_cache()
    with torch.no_grad(), torch.random.fork_rng(devices=devices):
        return float(objective())
