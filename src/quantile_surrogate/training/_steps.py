r"""One epoch of Algorithm 1: its batches, each batch's ``A_b``, and one SGD step on each.

:class:`EpochSteps` holds the checked settings and the rows (:class:`~._state.TrainingData`)
and runs an epoch: full-batch gradient descent (one forward pass, ``A_b = A``), or minibatches
drawn by :func:`.sampling.epoch_batches` with ``A_b`` taken where the plan of
:mod:`.subset_size` says (the batch's own rows of ``A``, or a separate minibatch of ``A``,
Algorithm 1's step 2; a batch without a row of ``A`` always gets one, see :mod:`.sampling`).
The rows are those of any input a model takes (a matrix, images, sequences, a dict of tensors),
taken by :mod:`quantile_surrogate._utils.sparse`. It also gives the loss on all the rows that
selects a restart. The restarts around it are :mod:`._loop`'s; :mod:`._streaming` runs the same steps over a loader.

**Row weights are a column, not another loop.** Frequency weights ``w_i >= 0``
(``train(..., sample_weight=)``) travel with the rows: every batch carries its rows' weights
and those of its ``A_b``, which weight the loss's terms and the quantile threshold
(:mod:`quantile_surrogate.quantiles._weighted`); the "mean" reduction divides by the weight of
the penalised rows. Minibatches are drawn uniformly over rows, with or without weights (the
same random draws), and each is weighted: an unbiased estimate of the weighted sum. So a step on
a batch with integer weights is the step on its rows repeated ``w_i`` times, and full-batch
training on integer weights is training on the rows repeated.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from ._memory import ThresholdMemory, memory_capacity
from .sampling import epoch_batches
from .subset_size import SubsetPlan, separate_plan, subset_plan
from ._state import TrainingData, TrainingSettings
from .._utils.sparse import cat_rows, take_rows
from ..losses.general import _FixedLabelsLoss
from ..objectives import get_objective, objective_loss, training_loss

__all__ = ["Batch", "EpochSteps", "parameters_changed"]

NO_BATCH_MESSAGE = "The training data gave no batch in an epoch; pass at least one row."


class Batch(NamedTuple):
    """One step's rows and, when ``A_b`` is not the batch's own rows of ``A``, its separate minibatch of ``A``.

    ``X_a`` is the separate minibatch of ``A`` (step 2), or an int ``m``: the last ``m`` rows of
    ``X`` are that minibatch, already stacked (which saves a copy); without it, ``A_b`` is the
    batch's rows where ``in_subset``. ``groups_a`` and ``weight_a`` are the columns of a separate
    minibatch (those of the batch's own rows of ``A`` are taken from ``groups`` and ``weight``).
    """

    X: torch.Tensor
    labels: torch.Tensor
    in_subset: torch.Tensor | None
    X_a: torch.Tensor | int | None = None
    groups: torch.Tensor | None = None
    groups_a: torch.Tensor | None = None
    weight: torch.Tensor | None = None
    weight_a: torch.Tensor | None = None
    constraint_rows: tuple | None = None
    """(rows, weights) of the step's constraint rows (:meth:`._constrained.ConstraintTerm.draw`), with constraints."""


def parameters_changed() -> None:
    """Drop autocast's copies of the parameters: call it after every in-place change of them (a step, a load).

    Inside a caller's ``torch.autocast`` region (``with torch.autocast("cpu", dtype=torch.bfloat16): train(...)``)
    autocast keeps the half-precision copy of every parameter it casts until the region ends
    (``cache_enabled=True``, the default), and ``train`` runs all its steps in that one region: without this,
    every forward pass after the first step would use the parameters of before it, and training would not move
    (the loss curve stays flat). Outside autocast the cache is empty and this costs nothing.
    """
    torch.clear_autocast_cache()


def _take(column: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor | None:
    """The rows of an optional column (group codes, weights)."""
    return None if column is None else column.index_select(0, rows)


class EpochSteps:
    """The SGD steps of one epoch over ``data`` under ``settings`` (see the module docstring)."""

    def __init__(self, settings: TrainingSettings, data: TrainingData, constraints=None):
        self.settings = settings
        self.data = data
        self.constraints = constraints
        """The extra constraints' :class:`._constrained.ConstraintTerm`, or None."""
        self.step_thresholds: list = []
        """The threshold of every step of the last epoch, as floats (a tuple per step with groups)."""

    @property
    def minibatches(self) -> bool:
        """Whether an epoch takes several steps (``batch_size < n``)."""
        return self.settings.batch_size is not None and self.settings.batch_size < self.data.n

    @property
    def memory_mode(self) -> str | None:
        """``threshold_memory`` (``"buffer"`` or ``"ema"``) for minibatches, else None."""
        return self.settings.threshold_memory if self.minibatches else None

    @functools.cached_property
    def memory(self) -> ThresholdMemory | None:
        """The threshold's memory across steps (:mod:`._memory`), or None (see :attr:`memory_mode`)."""
        if self.memory_mode is None:
            return None
        settings = self.settings
        capacities = [memory_capacity(size, settings.target, rows) for size, rows in self.memory_rows()]
        return ThresholdMemory(self.memory_mode, settings.quantile, settings.bandwidth, 1.0 - settings.target,
                               capacities)

    def memory_rows(self) -> list[tuple[int, float]]:
        """Per group code (one entry without groups): ``(|A_g|, rows of A_g a step scores in expectation)``."""
        data, plan = self.data, self.subset_plan
        if data.groups is None:
            sizes = [data.subset_index.numel()]
        else:
            sizes = torch.bincount(data.subset_groups.cpu(), minlength=int(data.groups.max()) + 1).tolist()
        if not plan.separate:
            return [(size, self.settings.batch_size * size / data.n) for size in sizes]
        if plan.per_group:
            return [(size, min(size, plan.size)) for size in sizes]
        return [(size, plan.size * size / sum(sizes)) for size in sizes]

    def loss(self, scores, labels, threshold_scores, groups=None, threshold_groups=None, weight=None,
             threshold_weight=None):
        """:func:`~quantile_surrogate.objectives.objective_loss` under the settings, with optional row weights."""
        return objective_loss(scores, labels, objective=self.settings.objective, target=self.settings.target,
                              threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups,
                              weight=weight, threshold_weight=threshold_weight, **self.settings.loss_settings())

    def full_loss(self, model) -> float:
        """The loss on every row, the threshold from all of ``A`` (the restart selection criterion)."""
        data = self.data
        return training_loss(model, data.X, data.labels, objective=self.settings.objective,
                             target=self.settings.target, groups=data.groups, sample_weight=data.weight,
                             **self.settings.loss_settings())

    def epoch(self, model, optimizer, generator):
        """One pass over the data; returns (mean minibatch loss, last threshold(s)) as floats."""
        if not self.minibatches:
            out = self._full_batch_epoch(model, optimizer)
        else:
            out = self._minibatch_epoch(model, optimizer, generator)
        if self.constraints is not None:
            self.constraints.end_epoch(model)
        return out

    # -- full batch -----------------------------------------------------------------------
    @functools.cached_property
    def fixed_labels_loss(self):
        """The full-batch loss with the label work done once (:class:`_FixedLabelsLoss`); None with groups, weights."""
        settings, spec = self.settings, get_objective(self.settings.objective)
        if self.data.groups is not None or self.data.weight is not None:
            return None
        penalize = spec.penalized.get(settings.form, next(iter(spec.penalized.values())))
        return _FixedLabelsLoss(self.data.labels, self.data.dtype, rate=settings.target, subset=spec.subset,
                                penalize=penalize, **self.settings.loss_settings(with_form=False))

    def _full_batch_epoch(self, model, optimizer):
        """Gradient descent: one forward pass, the threshold from all of ``A`` (``A_b = A``)."""
        data = self.data
        optimizer.zero_grad()
        scores = model(data.X).reshape(-1)
        fixed = self.fixed_labels_loss
        if fixed is not None:  # A_b = A: the loss takes A's rows from the labels, without a gather and its backward.
            out = fixed(scores)
        elif data.weight is None:
            out = self.loss(scores, data.labels, None, data.groups, None)
        else:
            out = self.loss(scores, data.labels, scores[data.subset_index], data.groups, data.subset_groups,
                            data.weight, data.subset_weight)
        total = out.loss
        if self.constraints is not None:
            total = total + self.constraints.term(scores, None, out.threshold)
        total.backward()
        optimizer.step()
        parameters_changed()
        self.step_thresholds = [_as_floats(out.threshold)]
        return float(out.loss.detach()), self.step_thresholds[0]

    # -- minibatches ----------------------------------------------------------------------
    @functools.cached_property
    def subset_sizes(self) -> list[int]:
        """``[|A|]``, or with groups every group's ``|A_g|`` (the groups with rows of ``A``)."""
        data = self.data
        sizes = [data.subset_index.numel()] if data.groups is None else torch.bincount(data.subset_groups).tolist()
        return [size for size in sizes if size > 0]

    @functools.cached_property
    def subset_plan(self) -> SubsetPlan:
        """Where a minibatch step takes ``A_b`` from, decided once per fit (:func:`.subset_size.subset_plan`).

        With a threshold memory (and no ``subset_batch_size``) the batch's own rows of ``A``: the
        memory holds the rows that a separate minibatch would add, without their forward pass.
        """
        settings = self.settings
        from_batch = settings.subset_from_batch or (self.memory_mode is not None and settings.subset_batch_size is None)
        return subset_plan(self.data.n, settings.batch_size, self.subset_sizes, settings.target,
                           settings.subset_batch_size, from_batch)

    @functools.cached_property
    def subset_codes(self) -> torch.Tensor:
        """Per row, on the CPU: its group code (0 without groups) if it is in ``A``, else -1."""
        data = self.data
        codes = torch.full((data.n,), -1, dtype=torch.int64)
        codes[data.subset_index.cpu()] = 0 if data.subset_groups is None else data.subset_groups.cpu()
        return codes

    def epoch_batches(self, generator):
        """One epoch's ``[(rows, subset_rows or None), ...]`` under :attr:`subset_plan`.

        Where the plan takes ``A_b`` from the batch, a batch without a row of ``A`` (of some group's
        ``A``) gets the separate minibatch of :func:`.subset_size.separate_plan` (:mod:`.sampling`).
        """
        plan, data, settings = self.subset_plan, self.data, self.settings
        codes = None
        if not plan.separate:
            codes = self.subset_codes
            # With a memory, such a batch needs a few rows of A for its gradient, not a full estimate:
            # as many as a batch holds in expectation (at least one per group).
            size = settings.subset_batch_size
            if self.memory_mode is not None and size is None:
                size = max(len(self.subset_sizes), math.ceil(settings.batch_size * sum(self.subset_sizes) / data.n))
            plan = separate_plan(self.subset_sizes, settings.target, size, batch_size=settings.batch_size)
        return epoch_batches(data.n, settings.batch_size, generator, subset_index=data.subset_index,
                             subset_size=plan.size, subset_groups=data.subset_groups, per_group=plan.per_group,
                             subset_codes=codes)

    def _minibatch_epoch(self, model, optimizer, generator):
        data = self.data
        X, labels = data.X, data.labels
        batches = self.epoch_batches(generator)

        term = self.constraints
        # The constraint rows of every step, drawn after the batches from the same generator (a seed gives both).
        extra = [None] * len(batches) if term is None else [term.draw(generator) for _ in batches]

        def steps():
            # take_rows (index_select, or a CSR gather), not X[rows]: on the CPU advanced indexing copies element by
            # element, ~20x slower than index_select's row copies at 100 float32 features (benchmarks/throughput.py).
            for (rows, subset_rows), constraint_rows in zip(batches, extra):
                rows = rows.to(X.device)
                columns = dict(groups=_take(data.groups, rows), weight=_take(data.weight, rows),
                               constraint_rows=constraint_rows)
                if subset_rows is None:
                    yield Batch(take_rows(X, rows), labels.index_select(0, rows),
                                data.in_subset.index_select(0, rows), **columns)
                else:
                    # One gather of both minibatches, stacked as the forward pass takes them (no torch.cat).
                    subset_rows = subset_rows.to(X.device)
                    stacked = take_rows(X, torch.cat([rows, subset_rows]))
                    yield Batch(stacked, labels.index_select(0, rows), None, subset_rows.numel(), **columns,
                                groups_a=_take(data.groups, subset_rows), weight_a=_take(data.weight, subset_rows))

        return self.run_steps(model, optimizer, steps())

    def run_steps(self, model, optimizer, batches):
        """One :meth:`step` per :class:`Batch` of ``batches``; returns (mean loss, last threshold(s)) as floats."""
        # The mean is summed on the device in the data's dtype (no synchronisation per step); with weights in
        # Python floats (float64), as the weighted loop summed it before it joined this one (so its curves stay).
        weighted = self.data.weight is not None
        total = 0.0 if weighted else torch.zeros((), dtype=self.data.dtype, device=self.data.device)
        thresholds, count = [], 0
        for batch in batches:
            loss, last = self.step(model, optimizer, batch)
            total, count = total + (float(loss) if weighted else loss), count + 1
            if last is not None:
                thresholds.append(last)
        if count == 0:
            raise ValueError(NO_BATCH_MESSAGE)
        # One copy to the host per epoch, not per step (steps whose group count differs: one copy each).
        if thresholds and len({t.shape for t in thresholds}) == 1:
            thresholds = torch.stack(thresholds).cpu()
        self.step_thresholds = [_as_floats(t) for t in thresholds]
        last = self.step_thresholds[-1] if self.step_thresholds else math.nan
        return float(total) / count, last

    def step(self, model, optimizer, batch: Batch):
        """One step of Algorithm 1 on a :class:`Batch`; returns (loss, threshold or None if ``A_b`` is empty)."""
        optimizer.zero_grad()
        if batch.X_a is None:
            scores = model(batch.X).reshape(-1)
            reference = scores[batch.in_subset]
            groups_a = None if batch.groups is None else batch.groups[batch.in_subset]
            weight_a = None if batch.weight is None else batch.weight[batch.in_subset]
        else:
            # One forward pass over both minibatches (a model's batch statistics see both).
            both = batch.X if isinstance(batch.X_a, int) else cat_rows(batch.X, batch.X_a)
            n_batch = batch.labels.shape[0]
            both = model(both).reshape(-1)
            scores, reference = both[:n_batch], both[n_batch:]
            groups_a, weight_a = batch.groups_a, batch.weight_a
        if self.memory is not None and reference.numel():
            # The memory's value with the step's own gradient, one threshold per group, handed to the loss as
            # one-row threshold scores (the quantile of one value is that value; see ._memory).
            reference, groups_a = self.memory.thresholds(reference, _anchor(scores.detach(), batch.weight), groups_a,
                                                         weight_a)
            weight_a = None
        out = self.loss(scores, batch.labels, reference, batch.groups, groups_a, batch.weight, weight_a)
        total = out.loss
        if batch.constraint_rows is not None and reference.numel():
            total = total + self.constraints.minibatch_term(model, *batch.constraint_rows, out.threshold)
        total.backward()
        optimizer.step()
        parameters_changed()
        return out.loss.detach(), (out.threshold.detach() if reference.numel() else None)


def _anchor(scores: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """The batch's (weighted) mean score in float32 at least: where the memory's scores are kept from (:mod:`._memory`)."""
    wide = torch.promote_types(scores.dtype, torch.float32)
    if weight is None:
        return scores.mean(dtype=wide)
    weight = weight.to(wide)
    return (scores.to(wide) * weight).sum() / weight.sum().clamp(min=torch.finfo(wide).tiny)


def _as_floats(threshold: torch.Tensor):
    """A 0-d threshold as a float; per-group thresholds (shape (G,)) as a tuple of floats."""
    threshold = threshold.detach().cpu()
    return float(threshold) if threshold.ndim == 0 else tuple(float(t) for t in threshold)
