"""The restart loop behind :func:`quantile_surrogate.training.train`.

Kept apart from the public entry point so that each file reads in one sitting; the
behaviour is documented on :func:`~quantile_surrogate.training.train`. :class:`TrainingLoop`
runs Algorithm 1 for each restart (batches from :mod:`.sampling`, early stopping from
:mod:`.early_stopping`), keeps its progress in the records of :mod:`.state` and writes them
to a checkpoint (:mod:`.checkpoint`) after every epoch.
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .checkpoint import fingerprint, load_checkpoint, save_checkpoint
from .early_stopping import EarlyStopping
from .models import decayed_parameters, fit_logistic, reset_parameters
from .sampling import epoch_batches
from .subset_size import SubsetPlan, subset_plan
from .._utils.seeding import clone_state, draw_seed, restart_seeds, seed_torch
from ._state import Candidate, LoopState, RunState, TrainingData, TrainingSettings, TrainResult
from ..metrics._held_out import held_out_metric
from ..losses.general import _FixedLabelsLoss
from ..objectives import get_objective, objective_loss, objective_metric, predict_scores, training_loss

__all__ = ["TrainingDivergedError", "TrainingLoop", "draw_seed", "restart_seeds"]

DIVERGED_MESSAGE = (
    "Training diverged: the loss or the parameters became NaN or inf at epoch {epoch} of restart "
    "{restart} (learning_rate={lr:g}). Use a smaller learning_rate, e.g. {smaller:g}, or standardise "
    "the features."
)


class TrainingDivergedError(FloatingPointError):
    """The training loss or a parameter became NaN or inf; no model is returned.

    The message names the epoch and restart and suggests a smaller ``learning_rate``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import train
    >>> X = torch.randn(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
    >>> train(model, X, X[:, 0] > 0, learning_rate=1e308, random_state=0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    TrainingDivergedError: Training diverged: the loss or the parameters became NaN or inf at epoch 2 ...
    """


class TrainingLoop:
    """Algorithm 1 with restarts, early stopping and checkpoints on one data set."""

    def __init__(self, settings: TrainingSettings, model, data: TrainingData, validation: TrainingData | None = None,
                 validation_metric=None, callback=None, progress: bool = False, *, validation_weight=None):
        self.settings = settings
        self.template = model
        self.data = data
        self.validation = validation
        self.metric = validation_metric or functools.partial(_exact_metric, settings.objective, settings.target)
        self.validation_weight = validation_weight
        self.callback, self.progress = callback, progress
        self.cuda = data.device.type == "cuda"

    # -- building blocks ------------------------------------------------------------------
    def new_model(self) -> nn.Module:
        if isinstance(self.template, nn.Module):
            model = copy.deepcopy(self.template)
            if self.settings.init != "model":
                reset_parameters(model)
        else:
            model = self.template()
            if not isinstance(model, nn.Module):
                raise TypeError(f"`model` must return a torch.nn.Module; it returned {type(model).__name__}.")
        return model.to(device=self.data.device, dtype=self.data.dtype)

    def new_optimizer(self, model: nn.Module) -> torch.optim.SGD:
        weights, others = decayed_parameters(model)
        groups = [{"params": weights, "weight_decay": self.settings.weight_decay},
                  {"params": others, "weight_decay": 0.0}]
        return torch.optim.SGD([g for g in groups if g["params"]], lr=self.settings.learning_rate,
                               momentum=self.settings.momentum)

    def loss(self, scores, labels, threshold_scores, groups=None, threshold_groups=None):
        return objective_loss(scores, labels, objective=self.settings.objective, target=self.settings.target,
                              threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups,
                              **self.settings.loss_settings())

    def diverged(self, restart, epoch) -> TrainingDivergedError:
        rate = self.settings.learning_rate
        return TrainingDivergedError(DIVERGED_MESSAGE.format(epoch=epoch, restart=restart, lr=rate,
                                                             smaller=rate / 10))

    def full_loss(self, model, restart) -> float:
        data = self.data
        loss = training_loss(model, data.X, data.labels, objective=self.settings.objective,
                             target=self.settings.target, groups=data.groups, **self.settings.loss_settings())
        if not math.isfinite(loss):
            raise self.diverged(restart, "end")
        return loss

    def validate(self, model) -> list:
        """``[metric, -loss]`` on the validation rows (``[-loss, metric]`` with ``monitor="loss"``).

        Compared lexicographically: the exact metric at a small rate on a small validation
        set is coarse (the top 2 of 21 rows, say) and often flat; the validation surrogate
        loss breaks its ties.
        """
        val = self.validation
        scores = predict_scores(model, val.X)
        if not bool(torch.isfinite(scores).all()):
            return [math.nan, math.nan]
        threshold_groups = None if val.groups is None else val.groups[val.in_subset]
        weight = self.validation_weight
        weights = {} if weight is None else dict(weight=weight, threshold_weight=weight[val.in_subset])
        loss = objective_loss(scores, val.labels, objective=self.settings.objective, target=self.settings.target,
                              threshold_scores=scores[val.in_subset], groups=val.groups,
                              threshold_groups=threshold_groups, **weights, **self.settings.loss_settings()).loss
        arguments = (val.labels.cpu().numpy().astype(np.int64), scores.double().cpu().numpy())
        if val.groups is not None:
            arguments += (val.groups.cpu().numpy(),)
        metric = self.metric(*arguments, **({} if weight is None else {"sample_weight": weight.cpu().numpy()}))
        if self.settings.monitor == "loss":
            return [-float(loss), float(metric)]
        return [float(metric), -float(loss)]

    # -- one epoch ------------------------------------------------------------------------
    def epoch(self, model, optimizer, generator):
        """One pass over the data; returns (mean minibatch loss, last threshold(s)) as floats."""
        if self.settings.batch_size is None or self.settings.batch_size >= self.data.n:
            return self._full_batch_epoch(model, optimizer)
        return self._minibatch_epoch(model, optimizer, generator)

    @functools.cached_property
    def fixed_labels_loss(self):
        """The full-batch loss with the label work done once (no groups), or None (:class:`_FixedLabelsLoss`)."""
        settings, spec = self.settings, get_objective(self.settings.objective)
        if self.data.groups is not None:
            return None
        penalize = spec.penalized.get(settings.form, next(iter(spec.penalized.values())))
        return _FixedLabelsLoss(self.data.labels, self.data.dtype, rate=settings.target, subset=spec.subset,
                                penalize=penalize, **self.settings.loss_settings(with_form=False))

    def _full_batch_epoch(self, model, optimizer):
        """Gradient descent: one forward pass, the threshold from all of ``A`` (``A_b = A``)."""
        data = self.data
        optimizer.zero_grad()
        scores = model(data.X).reshape(-1)
        # A_b = A: the loss takes A's rows from the labels, without a gather and its backward.
        fixed = self.fixed_labels_loss
        out = fixed(scores) if fixed is not None else self.loss(scores, data.labels, None, data.groups, None)
        out.loss.backward()
        optimizer.step()
        return float(out.loss.detach()), _as_floats(out.threshold)

    @functools.cached_property
    def subset_plan(self) -> SubsetPlan:
        """Where a minibatch step takes ``A_b`` from, decided once per fit (:func:`.subset_size.subset_plan`)."""
        settings, data = self.settings, self.data
        sizes = [data.subset_index.numel()] if data.groups is None else \
            torch.bincount(data.subset_groups).tolist()
        return subset_plan(data.n, settings.batch_size, [size for size in sizes if size > 0], settings.target,
                           settings.subset_batch_size, settings.subset_from_batch)

    def epoch_batches(self, generator):
        """One epoch's ``[(rows, subset_rows or None), ...]`` under :attr:`subset_plan`."""
        plan, data = self.subset_plan, self.data
        return epoch_batches(data.n, self.settings.batch_size, generator,
                             subset_index=data.subset_index if plan.separate else None, subset_size=plan.size,
                             subset_groups=data.subset_groups, per_group=plan.per_group)

    def _minibatch_epoch(self, model, optimizer, generator):
        data = self.data
        X, labels, groups = data.X, data.labels, data.groups
        batches = self.epoch_batches(generator)

        def steps():
            # index_select, not X[rows]: on the CPU advanced indexing copies element by element, ~20x
            # slower than index_select's row copies at 100 float32 features (benchmarks/throughput.py).
            for rows, subset_rows in batches:
                rows = rows.to(X.device)
                batch_groups = None if groups is None else groups.index_select(0, rows)
                if subset_rows is None:
                    yield (X.index_select(0, rows), labels.index_select(0, rows),
                           data.in_subset.index_select(0, rows), None, batch_groups, None)
                else:
                    # One gather of both minibatches, stacked as the forward pass takes them (no torch.cat).
                    subset_rows = subset_rows.to(X.device)
                    stacked = X.index_select(0, torch.cat([rows, subset_rows]))
                    yield (stacked, labels.index_select(0, rows), None, subset_rows.numel(), batch_groups,
                           None if groups is None else groups.index_select(0, subset_rows))

        return self.run_steps(model, optimizer, steps())

    def run_steps(self, model, optimizer, steps):
        """SGD steps (:meth:`step`) over ``steps`` of its arguments; returns (mean loss, last threshold(s)) as floats."""
        total = torch.zeros((), dtype=self.data.dtype, device=self.data.device)
        threshold, count = torch.full((), float("nan")), 0
        for arguments in steps:
            loss, last = self.step(model, optimizer, *arguments)
            total, count = total + loss, count + 1
            if last is not None:
                threshold = last
        if count == 0:
            raise ValueError("The training data gave no batch in an epoch; pass at least one row.")
        return float(total) / count, _as_floats(threshold)

    def step(self, model, optimizer, X_b, labels_b, in_subset_b, X_a=None, groups_b=None, groups_a=None):
        """One step of Algorithm 1 on a minibatch; returns (loss, threshold or None if ``A_b`` is empty), detached.

        ``X_a`` is the separate minibatch of ``A`` (step 2), or an int ``m``: the last ``m`` rows of
        ``X_b`` are that minibatch, already stacked (which saves a copy); without it ``A_b`` is the
        batch's rows of ``A`` (the rows where ``in_subset_b``).
        """
        optimizer.zero_grad()
        if X_a is None:
            scores = model(X_b).reshape(-1)
            reference = scores[in_subset_b]
            groups_a = None if groups_b is None else groups_b[in_subset_b]
        else:
            # One forward pass over both minibatches (a model's batch statistics see both).
            both = X_b if isinstance(X_a, int) else torch.cat([X_b, X_a])
            n_batch = labels_b.shape[0]
            both = model(both).reshape(-1)
            scores, reference = both[:n_batch], both[n_batch:]
        out = self.loss(scores, labels_b, reference, groups_b, groups_a)
        out.loss.backward()
        optimizer.step()
        return out.loss.detach(), (out.threshold.detach() if reference.numel() else None)

    # -- the restart loop -----------------------------------------------------------------
    def _rng_devices(self) -> list:
        return [self.data.device.index or 0] if self.cuda else []

    def _probe(self) -> nn.Module:
        """A model of the architecture, with its output shape checked (the global RNG left as it was)."""
        sample = self.data.sample
        n = sample.shape[0]
        with torch.random.fork_rng(devices=self._rng_devices()), torch.no_grad():
            probe = self.new_model().eval()
            shape = tuple(probe(sample).shape)
        if shape not in ((n,), (n, 1)):
            raise ValueError(f"`model` must map (n, d) inputs to (n,) or (n, 1) scores; got shape {shape} for n=2.")
        return probe

    def initial_state(self, random_state, checkpoint, architecture: str) -> LoopState:
        """The checkpoint's state if it resumes this fit, else a fresh one (its seed drawn if ``random_state`` is None)."""
        key = None
        if checkpoint is not None:
            data, val = self.data, self.validation
            tensors = {"X": data.X, "y": data.labels, "groups": data.groups,
                       "validation": None if val is None else tuple(t for t in (val.X, val.labels, val.groups)
                                                                    if t is not None)}
            key = fingerprint(self.settings, tensors, random_state, architecture)
            state = load_checkpoint(checkpoint, key)
            if state is not None:
                return state
        seed = draw_seed() if random_state is None else int(random_state)
        return LoopState(key=key, seed=seed, seeds=restart_seeds(seed, self.settings.n_restarts))

    def run(self, random_state, checkpoint) -> TrainResult:
        state = self.initial_state(random_state, checkpoint, repr(self._probe()))
        devices = self._rng_devices()
        while not state.finished:
            with torch.random.fork_rng(devices=devices):
                self.run_restart(state, checkpoint)
        best = state.best
        with torch.random.fork_rng(devices=devices):  # leave the caller's global RNG as it was
            model = self.new_model()
        model.load_state_dict(best.model)
        model.eval()
        return TrainResult(model=model, loss=best.loss, loss_curve=best.loss_curve, n_iter=best.n_iter,
                           restart=best.restart, restart_losses=list(state.restart_losses),
                           validation_curve=best.validation_curve, best_epoch=best.best_epoch,
                           start=best.start, initial_state=best.initial_model)

    def fit_logistic_start(self, model) -> None:
        """The logistic start: penalised maximum likelihood, ``alpha = init_alpha`` or ``1 / n``."""
        alpha = self.settings.init_alpha if self.settings.init_alpha is not None else 1 / self.data.n
        fit_logistic(model, self.data.X, self.data.labels, alpha=alpha)

    def _start_run(self, restart: int, model_seed: int):
        """A new restart: a fresh model (random, logistic or given start) and optimizer, and its state."""
        settings = self.settings
        seed_torch(model_seed, self.cuda)
        model = self.new_model()
        start = "model" if settings.init == "model" else "random"
        if settings.init == "logistic" or (settings.init == "mixed" and restart == 0):
            start = "logistic"
            self.fit_logistic_start(model)
        # With validation the start's value is epoch 0's; early stopping then compares with it.
        patience = settings.n_iter_no_change if settings.early_stopping else None
        tol = 0.0 if self.validation is not None else settings.tol
        run = RunState(start=start, initial_model=clone_state(model.state_dict()),
                       stopping=EarlyStopping(patience=patience, tol=tol))
        if self.validation is not None:
            value = self.validate(model)
            run.stopping.update(value, 0)
            run.validation_curve.append(value[settings.monitor == "loss"])
            run.best_model = clone_state(model.state_dict())
        return model, self.new_optimizer(model), run

    def _resume_run(self, run: RunState, generator: torch.Generator):
        """The model and optimizer of a checkpointed restart, with the random states it had."""
        model = self.new_model()
        model.load_state_dict(run.model)
        optimizer = self.new_optimizer(model)
        optimizer.load_state_dict(run.optimizer)
        generator.set_state(run.generator)
        torch.set_rng_state(run.torch_rng)
        if self.cuda and run.cuda_rng is not None:
            torch.cuda.set_rng_state(run.cuda_rng, self.data.device)
        return model, optimizer

    def run_restart(self, state: LoopState, checkpoint) -> None:
        settings, r = self.settings, state.restart
        model_seed, shuffle_seed = state.seeds[r]
        generator = torch.Generator().manual_seed(shuffle_seed)
        if state.run is None:
            model, optimizer, run = self._start_run(r, model_seed)
        else:
            run = state.run
            model, optimizer = self._resume_run(run, generator)
        model.train()
        bar = tqdm(total=settings.max_epochs, initial=len(run.loss_curve), disable=not self.progress,
                   desc=f"restart {r + 1}/{settings.n_restarts}", leave=False)
        try:
            while len(run.loss_curve) < settings.max_epochs:
                epoch = len(run.loss_curve) + 1
                loss, threshold = self.epoch(model, optimizer, generator)
                if not (math.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in model.parameters())):
                    raise self.diverged(r, epoch)
                run.loss_curve.append(loss)
                stop = self.monitor(model, run, loss, epoch, r)
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.4g}", threshold=_format_threshold(threshold))
                if checkpoint is not None:
                    self._save_run(state, run, model, optimizer, generator, checkpoint)
                if self.callback is not None:
                    self.callback({"restart": r, "epoch": epoch, "loss": loss, "threshold": threshold,
                                   "model": model})
                if stop:
                    break
        finally:
            bar.close()
        self._finish_restart(state, run, model, checkpoint)

    def _save_run(self, state, run, model, optimizer, generator, checkpoint) -> None:
        run.model, run.optimizer = model.state_dict(), optimizer.state_dict()
        run.generator, run.torch_rng = generator.get_state(), torch.get_rng_state()
        run.cuda_rng = torch.cuda.get_rng_state(self.data.device) if self.cuda else None
        state.run = run
        save_checkpoint(checkpoint, state)

    def _finish_restart(self, state: LoopState, run: RunState, model, checkpoint) -> None:
        """Score the restart on all the training rows and keep it if it beats the best so far."""
        r, validated = state.restart, self.validation is not None
        if validated:
            model.load_state_dict(run.best_model)
        loss = self.full_loss(model, r)
        state.restart_losses.append(loss)
        candidate = Candidate(
            restart=r, loss=loss, model=clone_state(model.state_dict()), loss_curve=run.loss_curve,
            n_iter=len(run.loss_curve), start=run.start, initial_model=run.initial_model,
            validation_curve=run.validation_curve if validated else None,
            best_epoch=run.stopping.best_epoch if validated else None,
            best_value=run.stopping.best if validated else None)
        if state.best is None or candidate.beats(state.best, self.settings.select):
            state.best = candidate
        state.restart, state.run, state.finished = r + 1, None, r + 1 >= self.settings.n_restarts
        if checkpoint is not None:
            save_checkpoint(checkpoint, state)

    def monitor(self, model, run: RunState, loss: float, epoch: int, restart: int) -> bool:
        """Track the best epoch (the best parameters, with validation); True when early stopping says stop."""
        if self.validation is None:
            run.stopping.update([-loss], epoch)
            return run.stopping.stop
        value = self.validate(model)
        if not all(math.isfinite(v) for v in value):
            raise self.diverged(restart, epoch)
        run.validation_curve.append(value[self.settings.monitor == "loss"])
        if run.stopping.update(value, epoch):
            run.best_model = clone_state(model.state_dict())
        return run.stopping.stop


def _exact_metric(objective, target, y_true, scores, groups=None, sample_weight=None) -> float:
    """The objective's exact metric on the validation rows; unweighted without groups by one sort (:mod:`.._held_out_metrics`)."""
    if groups is None and sample_weight is None:
        return held_out_metric(y_true == 1, scores, get_objective(objective).name, target)
    return objective_metric(y_true, scores, objective=objective, target=target, groups=groups,
                            sample_weight=sample_weight)


def _as_floats(threshold: torch.Tensor):
    """A 0-d threshold as a float; per-group thresholds (shape (G,)) as a tuple of floats."""
    threshold = threshold.detach().cpu()
    return float(threshold) if threshold.ndim == 0 else tuple(float(t) for t in threshold)


def _format_threshold(threshold) -> str:
    if isinstance(threshold, tuple):
        return "(" + ", ".join(f"{t:.3g}" for t in threshold[:4]) + (", ...)" if len(threshold) > 4 else ")")
    return f"{threshold:.4g}"
