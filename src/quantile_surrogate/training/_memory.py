r"""A threshold with memory across minibatch steps (``train(threshold_memory=)``; issue 28).

Step 2 of Algorithm 1 estimates the threshold ``theta = q(f(A), 1 - c)`` from the rows ``A_b``
of ``A`` that one step scores. At batch 32, recall 0.9 and 10 % positives a batch holds about
three positives, and the 0.1-quantile of three scores is their minimum: its rate on ``A`` is
``Beta(1, 3)``, mean 0.25 instead of 0.1 (biased) and sd 0.19 (noisy). A memory steadies it:

- ``"buffer"``: the step's scores of ``A`` together with those of the last steps, at most
  :data:`MEMORY_STEPS` steps' worth and never more than the tail count rule's ``m``
  (:func:`memory_capacity`). The remembered scores are constants, aged, not re-scored
  (re-scoring costs a forward pass over them); a score computed ten steps back lags the
  model, so each is kept **relative to its step's anchor**, the batch's mean score, and the
  threshold is this step's anchor plus the quantile of the relative scores: a shift of every
  score (the bias moving, say) reaches the threshold at once. Without the anchor, SGD against
  the lagging threshold diverged on digits (loss 1e9-fold in 8 epochs).
- ``"ema"``: an exponential moving average (decay :data:`EMA_DECAY`) of the steps' own
  estimates, relative to their anchors. As steady, but it keeps each estimate's
  small-sample bias (recall 0.77 for a target of 0.9 at batch 32, ``benchmarks/images.py``).

**What is differentiated.** The value is the memory's, the gradient the step's own:

.. math::
    \theta = \hat q(f(A_b)) + \operatorname{sg}\big(\theta_{\text{memory}} - \hat q(f(A_b))\big),

``sg`` a constant (stop-gradient). So ``d theta / d f(x_i)`` is that of the estimator over the
step's rows of ``A`` (Algorithm 1's gradient, unchanged), and the remembered scores, computed
by earlier parameters, contribute no gradient. (The implicit-function derivative of the
quantile, ``E[df | f = theta]``, estimated by a kernel over the step's rows around
``theta_memory``, was tried instead: its weights vanish when the step's few positives are far
from the threshold, nothing pushes them up, and the CNN of ``benchmarks/images.py`` collapsed to
constant scores on every development split.) The step hands the loss this threshold as a
one-row ``threshold_scores`` (per group, with its code), whose quantile is itself for every
estimator. One threshold per group: one memory per group.

**Measured** (``benchmarks/images.py``, ``docs/pytorch.md``): the buffer's thresholds are unbiased
with a third of the batch's own spread, but the models are no better than Algorithm 1's from the
batch, and worse than the default's separate minibatch of ``A``, whose many positives carry the
threshold's gradient. So ``train()``'s default is no memory.
"""

from __future__ import annotations

import math

import torch

from .subset_size import default_subset_batch_size
from ..quantiles import quantile_estimates

__all__ = ["MEMORY_MODES", "MEMORY_STEPS", "ThresholdMemory", "memory_capacity"]

#: What ``train(threshold_memory=)`` takes besides None.
MEMORY_MODES = ("buffer", "ema")
#: The weight of the past in ``"ema"``: about the last ten steps.
EMA_DECAY = 0.9
#: The steps whose scores of ``A`` a ``"buffer"`` remembers, at most.
MEMORY_STEPS = 10


def memory_capacity(subset_rows: int, target: float, rows_per_step: float) -> int:
    """Scores of ``A`` a buffer keeps: ``min(m, ceil(MEMORY_STEPS * rows_per_step))``, ``m`` the tail count rule's.

    ``m`` (:func:`.subset_size.default_subset_batch_size`) is what one threshold needs, at most
    all of ``A``; :data:`MEMORY_STEPS` steps' worth bounds the age of a remembered score: one
    computed by parameters many steps back holds the threshold back while the model moves, and
    SGD against a lagging threshold overshoots (without the anchor it diverged on digits).

    >>> memory_capacity(180, 0.9, 32 * 180 / 1800)     # 3.2 positives a step: the last 10 steps' 32
    32
    >>> memory_capacity(20, 0.9, 32 * 20 / 200)         # ... never more than all of A
    20
    """
    return min(default_subset_batch_size(subset_rows, target), math.ceil(MEMORY_STEPS * rows_per_step - 1e-9))


class ThresholdMemory:
    """The remembered scores (or moving averages) of ``A`` of one restart, per group; see the module docstring.

    Parameters
    ----------
    mode : {"buffer", "ema"}
    quantile, bandwidth
        The loss's estimator (a name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS`) and bandwidth.
    level : float
        ``1 - target``, the quantile level of every objective's threshold.
    capacities : list of int
        Scores remembered per group (one entry without groups).
    """

    def __init__(self, mode: str, quantile: str, bandwidth: float, level: float, capacities: list[int]):
        self.mode, self.quantile, self.bandwidth, self.level = mode, quantile, bandwidth, level
        self.capacities = [int(c) for c in capacities]
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new restart)."""
        groups = len(self.capacities)
        self.scores = [None] * groups
        self.weights = [None] * groups
        self.average = [None] * groups

    def _estimate(self, scores, weight):
        return quantile_estimates(self.quantile, scores, [self.level], bandwidth=self.bandwidth, weight=weight)[0]

    def thresholds(self, reference: torch.Tensor, anchor: torch.Tensor, groups: torch.Tensor | None = None,
                   weight: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """This step's threshold of every group with rows in ``reference`` (the step's scores of ``A``); remembers them.

        Returns ``(thresholds, codes)``: one threshold per present group, in the scores' dtype,
        with the gradient of the module docstring, and their group codes (None without groups).
        ``anchor`` is the batch's mean score: the memory keeps scores relative to their step's.
        """
        wide = torch.promote_types(reference.dtype, torch.float32)
        anchor = anchor.to(wide)
        out, codes = [], []
        for g in range(len(self.capacities)):
            members = None if groups is None else groups == g
            current = reference if members is None else reference[members]
            if current.numel() == 0:
                continue
            current_weight = None if weight is None else (weight if members is None else weight[members])
            out.append(self._threshold(g, current, current_weight, anchor, wide))
            codes.append(g)
        codes = None if groups is None else torch.tensor(codes, dtype=torch.int64, device=reference.device)
        return torch.stack(out), codes

    def _threshold(self, g, current, current_weight, anchor, wide) -> torch.Tensor:
        # The value is the memory's, the gradient the step's own estimate's (see the module docstring).
        own = self._estimate(current, current_weight)
        with torch.no_grad():
            if self.mode == "ema":  # relative to the anchor: the estimate moves with its scores
                past, own_relative = self.average[g], own.detach().to(wide) - anchor
                value = own_relative if past is None else EMA_DECAY * past + (1.0 - EMA_DECAY) * own_relative
                self.average[g] = value
            else:
                weight = None if current_weight is None else current_weight.detach().to(wide)
                merged, merged_weight = self._merge(g, current.detach().to(wide) - anchor, weight)
                value = self._estimate(merged, merged_weight)
        return own + (value + anchor - own.detach().to(wide)).to(current.dtype)

    def _merge(self, g, relative, weight):
        """This step's scores and the remembered ones (newest first); keeps the newest ``capacity`` of them."""
        past, past_weight = self.scores[g], self.weights[g]
        merged = relative if past is None else torch.cat([relative, past])
        merged_weight = None
        if weight is not None:
            merged_weight = weight if past_weight is None else torch.cat([weight, past_weight])
        capacity = self.capacities[g]
        self.scores[g] = merged[:capacity].clone()
        self.weights[g] = None if merged_weight is None else merged_weight[:capacity].clone()
        return merged, merged_weight

    def state_dict(self) -> dict:
        """The remembered tensors, on the CPU (a checkpoint keeps them)."""
        def cpu(values):
            return [None if v is None else v.detach().cpu() for v in values]
        return {"scores": cpu(self.scores), "weights": cpu(self.weights), "average": cpu(self.average)}

    def load_state_dict(self, state: dict, device) -> None:
        def put(values):
            return [None if v is None else v.to(device) for v in values]
        self.scores, self.weights, self.average = put(state["scores"]), put(state["weights"]), put(state["average"])
