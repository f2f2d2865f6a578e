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

__all__ = ["ACTIVATIONS", "linear_scorer", "mlp_scorer", "build_scorer", "reset_parameters", "fit_logistic"]

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}


def linear_scorer(n_features: int) -> nn.Module:
    """``f(x) = w^T x + b``, the paper's model: ``nn.Linear(n_features, 1)`` with PyTorch's random init."""
    return nn.Linear(n_features, 1)


def mlp_scorer(n_features: int, hidden_layer_sizes: Sequence[int], activation: str = "relu") -> nn.Module:
    """A multi-layer perceptron ``d -> h_1 -> ... -> h_L -> 1`` with ``activation`` between layers."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"`activation` must be one of {sorted(ACTIVATIONS)}; got {activation!r}.")
    layers: list[nn.Module] = []
    width = n_features
    for size in hidden_layer_sizes:
        layers += [nn.Linear(width, int(size)), ACTIVATIONS[activation]()]
        width = int(size)
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def build_scorer(n_features: int, hidden_layer_sizes: Sequence[int] = (), module_factory=None) -> nn.Module:
    """Linear if ``hidden_layer_sizes`` is empty, an MLP otherwise, or ``module_factory(n_features)``."""
    if module_factory is not None:
        model = module_factory(n_features)
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"`module_factory` must return a torch.nn.Module; it returned {type(model).__name__}."
            )
        return model
    if len(hidden_layer_sizes) == 0:
        return linear_scorer(n_features)
    return mlp_scorer(n_features, hidden_layer_sizes)


def reset_parameters(model: nn.Module) -> nn.Module:
    """Draw fresh random parameters for every submodule that defines ``reset_parameters``."""
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


def fit_logistic(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, alpha: float, max_iter: int = 200,
                 sample_weight: torch.Tensor | None = None) -> float:
    r"""Fit ``model`` in place by penalised maximum likelihood with full-batch L-BFGS.

    .. math::
        \min_w \frac1N \sum_i \log(1 + e^{-\tilde y_i f(x_i; w)}) + \frac{\alpha}{2} \|W\|^2,

    with ``W`` the weight matrices (biases are not penalised). For a linear model and
    ``alpha = 1 / N`` this is scikit-learn's ``LogisticRegression(C=1)``. Returns the final
    objective value. ``sample_weight`` (frequency weights) replaces the mean by
    ``sum_i w_i log(...) / sum_i w_i``, the mean over the rows repeated ``w_i`` times.
    """
    weights, _ = decayed_parameters(model)
    target = y.to(X.dtype)
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=max_iter, tolerance_grad=1e-9,
        tolerance_change=1e-12, history_size=20, line_search_fn="strong_wolfe",
    )

    def objective():
        scores = model(X).reshape(-1)
        if sample_weight is not None:
            data_term = F.binary_cross_entropy_with_logits(scores, target, weight=sample_weight, reduction="sum")
            return data_term / sample_weight.sum() + 0.5 * alpha * sum((w * w).sum() for w in weights)
        return F.binary_cross_entropy_with_logits(scores, target) + 0.5 * alpha * sum((w * w).sum() for w in weights)

    def closure():
        optimizer.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    optimizer.step(closure)  # returns the objective at the start, not at the end
    # Evaluated once more at the solution; the forked RNG keeps a dropout layer from shifting later draws.
    devices = [X.device.index or 0] if X.device.type == "cuda" else []
    with torch.no_grad(), torch.random.fork_rng(devices=devices):
        return float(objective())
