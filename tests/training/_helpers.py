"""Data and models shared by the training tests (not a test module)."""

import numpy as np
import torch


def blobs(n=300, d=3, prior=0.3, seed=0):
    """``n`` rows of ``d`` Gaussian features, a positive's shifted by 1.5; float64 X, int64 labels."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prior).astype(np.int64)
    X = rng.standard_normal((n, d)) + 1.5 * y[:, None]
    return torch.tensor(X), torch.tensor(y)


def linear(d=3):
    """A factory of a fresh linear scorer (train calls it once per restart)."""
    return lambda: torch.nn.Linear(d, 1)


def params(model):
    """Every parameter of ``model`` in one flat tensor."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


class Recorder(torch.nn.Module):
    """A linear model that remembers the inputs of each forward pass."""

    def __init__(self, d):
        super().__init__()
        self.linear = torch.nn.Linear(d, 1)
        self.inputs = []

    def forward(self, x):
        if self.training:
            self.inputs.append(x.detach().clone())
        return self.linear(x)


def trained(built):
    """Inputs seen by the one model that trained (train also builds models only to probe and to load into)."""
    (model,) = [m for m in built if m.inputs]
    return model.inputs
