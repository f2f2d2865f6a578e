r"""Many small linear models trained in lockstep: the full-batch protocol of tables 1 and 2, vectorised.

The paper's small-data protocol trains a linear model by full-batch gradient descent with
momentum for every (split, tau, weight decay, random start): tens of thousands of runs of
~1000 steps on ~100-300 rows, where Python and autograd overhead, not arithmetic, is the
cost. Here the ``H`` runs that share a training set and a tau are columns of one
``(d, H)`` weight matrix: one matmul, one batched sort, one backward per step for all of
them. The heads do not interact: the total loss is a sum of per-head losses, so each head's
gradient is exactly its own run's gradient.

Per head ``h`` (``theta_h`` the Gaussian kernel quantile of its own scores, eq. (13)):

.. math::
    L_h = \frac{1}{|P|} \sum_{i \in P} l(\pm(x_i \cdot w_h + b_h - \theta_h)) + \frac{\lambda_h}{2} \|w_h\|^2

with ``P`` the negatives (FP form, eq. (9)) or positives (TP form, eq. (10)). SGD with
momentum on that penalised loss equals ``torch.optim.SGD(weight_decay=lambda_h)`` on the
weights and none on the bias, which is what :func:`quantile_surrogate.training.train` does.
``tests/experiments/test_heads.py`` checks each head's loss and gradient against
:func:`quantile_surrogate.losses.precision_at_rate_loss` on that head's scores.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._utils.errors import TrainingDivergedError
from ..quantiles._rank_selection import tied_ranks
from ..quantiles import KERNELS

__all__ = ["head_losses", "train_linear_heads"]


def _batched_kernel_quantile(scores: torch.Tensor, level: float, bandwidth: float) -> torch.Tensor:
    """Gaussian kernel quantile of each row of ``scores`` (H, n); the library's estimator, row by row."""
    ordered = torch.sort(scores, dim=1).values
    n = scores.shape[1]
    ranks = tied_ranks(ordered.contiguous()).to(scores.dtype)  # searchsorted works row-wise on 2-D input
    weights = torch.softmax(KERNELS["gaussian"]((ranks / n - level) / bandwidth), dim=1)
    return (weights * ordered).sum(dim=1)


def head_losses(scores: torch.Tensor, penalized: torch.Tensor, *, rate: float, bandwidth: float,
                form: str = "fp"):
    """Per-head surrogate losses of shape (H,) and thresholds (H,) for scores of shape (n, H)."""
    thresholds = _batched_kernel_quantile(scores.T, 1.0 - rate, bandwidth)
    margin = scores - thresholds if form == "fp" else thresholds - scores
    weights = penalized.to(scores.dtype)[:, None]
    return (F.softplus(margin) * weights).sum(dim=0) / weights.sum().clamp(min=1), thresholds


def train_linear_heads(X: torch.Tensor, y: torch.Tensor, *, rate: float, weight_decays, seeds, bandwidth: float,
                       form: str = "fp", learning_rate: float = 0.2, momentum: float = 0.9, max_epochs: int = 1000):
    """Train one linear head per (weight decay, seed) pair by full-batch SGD with momentum.

    Parameters
    ----------
    X : (n, d) float tensor; y : (n,) {0, 1} tensor
    weight_decays, seeds : sequences of equal length H
        Head ``h`` uses ``weight_decays[h]`` and a random start drawn from ``seeds[h]``
        (uniform in ``+-1/sqrt(d)``, as ``torch.nn.Linear`` draws).

    Returns
    -------
    (weights (d, H), biases (H,), final objective losses (H,) without the penalty)
    """
    n, d = X.shape
    bound = 1.0 / math.sqrt(d)
    starts = []
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        starts.append(torch.empty(d + 1, dtype=X.dtype).uniform_(-bound, bound, generator=g))
    start = torch.stack(starts, dim=1)
    weights = start[:d].clone().requires_grad_()
    biases = start[d].clone().requires_grad_()
    decay = torch.as_tensor(list(weight_decays), dtype=X.dtype)
    penalized = (y == 0) if form == "fp" else (y == 1)
    optimizer = torch.optim.SGD([weights, biases], lr=learning_rate, momentum=momentum)
    for _ in range(max_epochs):
        optimizer.zero_grad()
        losses, _ = head_losses(X @ weights + biases, penalized, rate=rate, bandwidth=bandwidth, form=form)
        penalty = 0.5 * (decay * (weights * weights).sum(dim=0)).sum()
        (losses.sum() + penalty).backward()
        optimizer.step()
    with torch.no_grad():
        final, _ = head_losses(X @ weights + biases, penalized, rate=rate, bandwidth=bandwidth, form=form)
    if not bool(torch.isfinite(final).all()):
        raise TrainingDivergedError("a head's loss", f"after {max_epochs} epochs", learning_rate)
    return weights.detach(), biases.detach(), final
