"""The training loop with row weights (``train(..., sample_weight=)``), kept apart so the unweighted loop is untouched.

Frequency weights ``w_i >= 0`` multiply each row's term of the loss and weight the
quantile threshold (:mod:`quantile_surrogate.quantiles._weighted`); the "mean" reduction divides by
the weight of the penalised rows. Full-batch training on integer weights therefore takes
the same steps as on the rows repeated ``w_i`` times. Minibatches are drawn uniformly over
rows, as without weights, and each is weighted (an unbiased estimate of the weighted sum).
The logistic start is the weighted maximum likelihood fit.
"""

from __future__ import annotations

import math

import torch

from ._loop import TrainingLoop, _as_floats
from .models import fit_logistic
from ..objectives import objective_loss, training_loss

__all__ = ["WeightedTrainingLoop"]


class WeightedTrainingLoop(TrainingLoop):
    """:class:`~quantile_surrogate.training._loop.TrainingLoop` with ``weight``: float tensor (n,), one per row."""

    def __init__(self, *args, weight: torch.Tensor, **kwargs):
        super().__init__(*args, **kwargs)
        self.weight = weight
        self.subset_weight = weight[self.data.subset_index]

    def weighted_loss(self, scores, labels, threshold_scores, groups, threshold_groups, weight, threshold_weight):
        """:meth:`loss` with row weights of ``scores`` and of ``threshold_scores``."""
        return objective_loss(scores, labels, objective=self.settings.objective, target=self.settings.target,
                              threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups,
                              weight=weight, threshold_weight=threshold_weight, **self.settings.loss_settings())

    def full_loss(self, model, restart) -> float:
        data = self.data
        loss = training_loss(model, data.X, data.labels, objective=self.settings.objective,
                             target=self.settings.target, groups=data.groups, sample_weight=self.weight,
                             **self.settings.loss_settings())
        if not math.isfinite(loss):
            raise self.diverged(restart, "end")
        return loss

    def _full_batch_epoch(self, model, optimizer):
        data = self.data
        optimizer.zero_grad()
        scores = model(data.X).reshape(-1)
        out = self.weighted_loss(scores, data.labels, scores[data.subset_index], data.groups, data.subset_groups,
                                 self.weight, self.subset_weight)
        out.loss.backward()
        optimizer.step()
        return float(out.loss.detach()), _as_floats(out.threshold)

    def _minibatch_epoch(self, model, optimizer, generator):
        data = self.data
        batches = self.epoch_batches(generator)
        total, count, threshold = 0.0, 0, torch.full((), float("nan"))
        for rows, subset_rows in batches:
            rows = rows.to(data.X.device)
            groups_b = None if data.groups is None else data.groups.index_select(0, rows)
            optimizer.zero_grad()
            if subset_rows is None:
                scores = model(data.X.index_select(0, rows)).reshape(-1)
                in_a = data.in_subset.index_select(0, rows)
                weight_b = self.weight.index_select(0, rows)
                reference, weight_a = scores[in_a], weight_b[in_a]
                groups_a = None if groups_b is None else groups_b[in_a]
            else:
                subset_rows = subset_rows.to(data.X.device)
                both = model(data.X.index_select(0, torch.cat([rows, subset_rows]))).reshape(-1)
                scores, reference = both[:rows.numel()], both[rows.numel():]
                weight_b, weight_a = self.weight.index_select(0, rows), self.weight.index_select(0, subset_rows)
                groups_a = None if data.groups is None else data.groups.index_select(0, subset_rows)
            out = self.weighted_loss(scores, data.labels.index_select(0, rows), reference, groups_b, groups_a,
                                     weight_b, weight_a)
            out.loss.backward()
            optimizer.step()
            total, count = total + float(out.loss.detach()), count + 1
            if reference.numel():
                threshold = out.threshold.detach()
        if count == 0:
            raise ValueError("The training data gave no batch in an epoch; pass at least one row.")
        return total / count, _as_floats(threshold)

    def fit_logistic_start(self, model) -> None:
        """The weighted maximum likelihood start, ``alpha = init_alpha`` or ``1 / sum(w)``."""
        settings = self.settings
        alpha = settings.init_alpha if settings.init_alpha is not None else 1 / float(self.weight.sum())
        fit_logistic(model, self.data.X, self.data.labels, alpha=alpha, sample_weight=self.weight.to(self.data.X.dtype))
