"""The restart loop behind :func:`quantile_surrogate.training.train`.

Kept apart from the public entry point so that each file reads in one sitting; the
behaviour is documented on :func:`~quantile_surrogate.training.train`. :class:`TrainingLoop`
runs the epochs of :mod:`._steps` (Algorithm 1) for each restart, with its start (random,
logistic or given), early stopping (:mod:`.early_stopping`) and validation, keeps its progress
in the records of :mod:`._state`, writes them to a checkpoint (:mod:`.checkpoint`) after every
epoch, and raises :class:`~quantile_surrogate._utils.errors.TrainingDivergedError` when a loss or
a parameter becomes NaN or inf.
"""

from __future__ import annotations

import copy
import functools
import math
import sys
import warnings

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .checkpoint import fingerprint, load_checkpoint, save_checkpoint
from .early_stopping import EarlyStopping
from .models import NOT_A_MODULE_MESSAGE, decayed_parameters, fit_logistic, reset_parameters
from .._utils.checks import all_finite
from .._utils.errors import TrainingDivergedError
from .._utils.seeding import clone_state, draw_seed, restart_seeds, seed_torch
from ._state import Candidate, LoopState, RunState, TrainingData, TrainingSettings, TrainResult
from ._reweighted_start import reweighted_start
from ._steps import EpochSteps, parameters_changed
from ..constraints import largest_excess
from ..metrics._held_out import held_out_metric
from ..objectives import get_objective, objective_loss, objective_metric, predict_scores

__all__ = ["TrainingLoop", "draw_seed", "restart_seeds"]

MODEL_SHAPE_MESSAGE = "`model` must map n rows of `X` to scores of shape (n,) or (n, 1); got shape {shape} for n={n}."
#: The one line per restart that ``train(verbose=True)`` writes to stderr when it is not a terminal (a log, a pipe).
PROGRESS_SUMMARY_MESSAGE = "restart {restart}/{n_restarts}: {epochs} of {max_epochs} epochs, training loss {loss:.4g}"
#: How many times its first epoch's value the training loss may grow before ``train`` warns (still finite).
LOSS_GROWTH_FACTOR = 1e9
#: The ``RuntimeWarning`` when a restart's epoch loss passes ``LOSS_GROWTH_FACTOR`` times its first epoch's.
LOSS_GROWTH_MESSAGE = (
    "The training loss grew {growth:.2g}-fold, from {first:.4g} at epoch 1 to {loss:.4g} at epoch {epoch} "
    "of restart {restart}: learning_rate={learning_rate:g} is likely far too large; try a smaller one."
)


class TrainingLoop:
    """Algorithm 1 with restarts, early stopping and checkpoints: the epochs of ``steps`` (on its ``data``).

    ``validation`` holds the held-out rows, with their weight column if they are weighted.
    """

    def __init__(self, settings: TrainingSettings, model, steps: EpochSteps, validation: TrainingData | None = None,
                 validation_metric=None, callback=None, progress: bool = False):
        self.settings = settings
        self.template = model
        self.steps = steps
        self.data = steps.data
        self.validation = validation
        self.metric = validation_metric or functools.partial(_exact_metric, settings.objective, settings.target)
        self.callback, self.progress = callback, progress
        self.cuda = self.data.device.type == "cuda"
        self.constraints = steps.constraints
        self.last_excess = math.nan

    # -- building blocks ------------------------------------------------------------------
    def new_model(self) -> nn.Module:
        if isinstance(self.template, nn.Module):
            model = copy.deepcopy(self.template)
            if self.settings.init != "model":
                reset_parameters(model)
        else:
            model = self.template()
            if not isinstance(model, nn.Module):
                raise TypeError(NOT_A_MODULE_MESSAGE.format(name="model", type_name=type(model).__name__))
        return model.to(device=self.data.device, dtype=self.data.dtype)

    def new_optimizer(self, model: nn.Module) -> torch.optim.SGD:
        weights, others = decayed_parameters(model)
        groups = [{"params": weights, "weight_decay": self.settings.weight_decay},
                  {"params": others, "weight_decay": 0.0}]
        # On the CPU SGD's default (foreach=None) resolves to the per-tensor loop anyway; naming it skips that
        # resolution, about a quarter of SGD's step on a small model (same arithmetic). Elsewhere the default stays.
        foreach = False if self.data.device.type == "cpu" else None
        return torch.optim.SGD([g for g in groups if g["params"]], lr=self.settings.learning_rate,
                               momentum=self.settings.momentum, foreach=foreach)

    def diverged(self, restart, epoch) -> TrainingDivergedError:
        """The error for a NaN or inf loss or parameter at ``epoch`` (``"end"``: the restart's full loss)."""
        return TrainingDivergedError("the loss or the parameters", f"at epoch {epoch} of restart {restart}",
                                     self.settings.learning_rate)

    def validate(self, model) -> list:
        """``[metric, -loss]`` on the validation rows (``[-loss, metric]`` with ``monitor="loss"``).

        Compared lexicographically: the exact metric at a small rate on a small validation
        set is coarse (the top 2 of 21 rows, say) and often flat; the validation surrogate
        loss breaks its ties. With ``constraints`` the value starts with ``-max(0, e)``, ``e`` the
        largest excess of a constraint over its bound on the training rows, or on the validation rows
        beyond one standard error of the value there, at the threshold an estimator deploys (exact, on
        the training and validation rows together): a model that meets every constraint there beats one that does not, and of
        two that do not, the smaller excess wins (issue 25: the best feasible iterate).
        """
        val = self.validation
        scores = predict_scores(model, val.X)
        if not bool(torch.isfinite(scores).all()):
            return [math.nan] * (3 if self.constraints is not None else 2)
        threshold_groups = None if val.groups is None else val.groups[val.in_subset]
        weight = val.weight
        weights = {} if weight is None else dict(weight=weight, threshold_weight=weight[val.in_subset])
        out = objective_loss(scores, val.labels, objective=self.settings.objective, target=self.settings.target,
                             threshold_scores=scores[val.in_subset], groups=val.groups,
                             threshold_groups=threshold_groups, **weights, **self.settings.loss_settings())
        loss = out.loss
        arguments = (val.labels.cpu().numpy().astype(np.int64), scores.double().cpu().numpy())
        if val.groups is not None:
            arguments += (val.groups.cpu().numpy(),)
        metric = self.metric(*arguments, **({} if weight is None else {"sample_weight": weight.cpu().numpy()}))
        value = [-float(loss), float(metric)] if self.settings.monitor == "loss" else [float(metric), -float(loss)]
        if self.constraints is None:
            return value
        fit_scores = self.constraints.pop_fit_scores()  # the epoch's multiplier step scored the same model
        if fit_scores is None:
            fit_scores = predict_scores(model, self.data.X)
        threshold = self.constraints.deployed_threshold(fit_scores, scores, val)
        # Met on both sides: on a few hundred held-out rows a gap's noise alone lets some epochs pass by luck (so the
        # fit rows too, strictly), and makes good ones fail (so the held-out rows within one standard error).
        self.last_excess = max(largest_excess(self.constraints.evaluate(scores, val, threshold), within_noise=True),
                               self.constraints.fit_excess(fit_scores, threshold))
        return [-max(0.0, self.last_excess)] + value

    def _validation_value(self, model, run: RunState, untrained: bool = False) -> list:
        """:meth:`validate`'s value; with constraints its excess goes to the run's ``validation_excess``.

        ``untrained``: a random start before its first epoch. With constraints it is no candidate (its
        excess is taken as infinite): random scores meet every gap, and where no trained epoch met the
        constraints, the smallest excess would keep a random model.
        """
        value = self.validate(model)
        if self.constraints is not None:
            if untrained:
                self.last_excess = math.inf
                value[0] = -math.inf
            run.validation_excess.append(self.last_excess)
        return value

    def _curve_entry(self, value) -> float:
        """The validation curve's entry of a value: the metric (the loss with ``monitor="loss"``)."""
        return value[(self.settings.monitor == "loss") + (self.constraints is not None)]

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
            raise ValueError(MODEL_SHAPE_MESSAGE.format(shape=shape, n=n))
        return probe

    def initial_state(self, random_state, checkpoint, architecture: str) -> LoopState:
        """The checkpoint's state if it resumes this fit, else a fresh one (its seed drawn if ``random_state`` is None)."""
        key = None
        if checkpoint is not None:
            data, val = self.data, self.validation
            tensors = {"X": data.X, "y": data.labels, "groups": data.groups,
                       "validation": None if val is None else tuple(
                           t for t in (val.X, val.labels, val.groups, val.weight, val.constraint_groups)
                           if t is not None)}
            texts = None
            if self.constraints is not None:
                tensors["constraint_groups"] = data.constraint_groups
                texts = {"constraints": self.constraints.describe()}
            key = fingerprint(self.settings, tensors, random_state, architecture, texts)
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
                           start=best.start, initial_state=best.initial_model,
                           threshold_curve=best.threshold_curve, constraint_curve=best.constraint_curve,
                           validation_excess=best.validation_excess, start_reweighting=best.start_reweighting)

    def fit_logistic_start(self, model) -> dict | None:
        """The logistic start: penalised (weighted) maximum likelihood, ``alpha = init_alpha`` or ``1 / sum(w)``.

        Without weights ``sum(w)`` is ``n``, every row of weight one. With gap constraints it is then
        reweighted by group until they hold on the training rows (:mod:`._reweighted_start`), whose record
        is returned (None: not reweighted).
        """
        data, alpha = self.data, self.settings.init_alpha
        if data.weight is None:
            alpha = alpha if alpha is not None else 1 / data.n
            fit_logistic(model, data.X, data.labels, alpha=alpha)
        else:
            alpha = alpha if alpha is not None else 1 / float(data.weight.sum())
            fit_logistic(model, data.X, data.labels, alpha=alpha, sample_weight=data.weight.to(data.X.dtype))
        return None if self.constraints is None else reweighted_start(model, self.constraints, alpha)

    def _start_run(self, restart: int, model_seed: int):
        """A new restart: a fresh model (random, logistic or given start) and optimizer, and its state."""
        settings = self.settings
        seed_torch(model_seed, self.cuda)
        model = self.new_model()
        start, reweighting = ("model" if settings.init == "model" else "random"), None
        # "mixed" starts at random where the logistic start cannot fit X (not a matrix; train refuses "logistic").
        if settings.init == "logistic" or (settings.init == "mixed" and restart == 0 and self.data.tabular):
            start = "logistic"
            reweighting = self.fit_logistic_start(model)
        # With validation the start's value is epoch 0's; early stopping then compares with it.
        patience = settings.n_iter_no_change if settings.early_stopping else None
        tol = 0.0 if self.validation is not None else settings.tol
        run = RunState(start=start, initial_model=clone_state(model.state_dict()),
                       stopping=EarlyStopping(patience=patience, tol=tol), start_reweighting=reweighting)
        if self.constraints is not None:
            self.constraints.reset()
            run.constraint_curve, run.validation_excess = [], []
        if self.steps.memory is not None:
            self.steps.memory.reset()
        if self.validation is not None:
            value = self._validation_value(model, run, untrained=start == "random")
            run.stopping.update(value, 0)
            run.validation_curve.append(self._curve_entry(value))
            run.best_model = clone_state(model.state_dict())
        return model, self.new_optimizer(model), run

    def _resume_run(self, run: RunState, generator: torch.Generator):
        """The model and optimizer of a checkpointed restart, with the random states (and multipliers) it had."""
        model = self.new_model()
        model.load_state_dict(run.model)
        optimizer = self.new_optimizer(model)
        optimizer.load_state_dict(run.optimizer)
        generator.set_state(run.generator)
        torch.set_rng_state(run.torch_rng)
        if self.cuda and run.cuda_rng is not None:
            torch.cuda.set_rng_state(run.cuda_rng, self.data.device)
        if self.steps.memory is not None:
            self.steps.memory.load_state_dict(run.memory, self.data.device)
        if self.constraints is not None:
            self.constraints.load_state_dict(run.multipliers)
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
        # A bar on a terminal only (tqdm's disable=None); none at all without epochs to run (its only frame
        # would be "0it"). Anywhere else verbose writes one summary line per restart, after it.
        running = self.progress and len(run.loss_curve) < settings.max_epochs
        bar = tqdm(total=settings.max_epochs, initial=len(run.loss_curve), disable=None if running else True,
                   desc=f"restart {r + 1}/{settings.n_restarts}", leave=False)
        summary = self.progress and bar.disable
        try:
            while len(run.loss_curve) < settings.max_epochs:
                epoch = len(run.loss_curve) + 1
                loss, threshold = self.steps.epoch(model, optimizer, generator)
                if not (math.isfinite(loss) and parameters_finite(model)):
                    raise self.diverged(r, epoch)
                run.loss_curve.append(loss)
                run.threshold_curve.append(self.steps.step_thresholds)
                if self.constraints is not None:
                    run.constraint_curve.append(self.constraints.record)
                self._warn_growth(run.loss_curve, r)
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
        if summary:
            print(PROGRESS_SUMMARY_MESSAGE.format(restart=r + 1, n_restarts=settings.n_restarts,
                                                  epochs=len(run.loss_curve), max_epochs=settings.max_epochs,
                                                  loss=state.restart_losses[-1]), file=sys.stderr, flush=True)

    def _warn_growth(self, curve: list, restart: int) -> None:
        """Warn once per restart, at the epoch where the loss first passes LOSS_GROWTH_FACTOR times epoch 1's."""
        first, loss = curve[0], curve[-1]
        limit = LOSS_GROWTH_FACTOR * first
        if first > 0 and loss > limit and all(value <= limit for value in curve[1:-1]):
            warnings.warn(LOSS_GROWTH_MESSAGE.format(growth=loss / first, first=first, loss=loss, epoch=len(curve),
                                                     restart=restart, learning_rate=self.settings.learning_rate),
                          RuntimeWarning, stacklevel=5)  # at the call of train()

    def _save_run(self, state, run, model, optimizer, generator, checkpoint) -> None:
        run.model, run.optimizer = model.state_dict(), optimizer.state_dict()
        run.generator, run.torch_rng = generator.get_state(), torch.get_rng_state()
        run.cuda_rng = torch.cuda.get_rng_state(self.data.device) if self.cuda else None
        run.memory = None if self.steps.memory is None else self.steps.memory.state_dict()
        run.multipliers = None if self.constraints is None else self.constraints.state_dict()
        state.run = run
        save_checkpoint(checkpoint, state)

    def _finish_restart(self, state: LoopState, run: RunState, model, checkpoint) -> None:
        """Score the restart on all the training rows and keep it if it beats the best so far."""
        r, validated = state.restart, self.validation is not None
        if validated:
            model.load_state_dict(run.best_model)
            parameters_changed()
        loss = self.steps.full_loss(model)
        if not math.isfinite(loss):
            raise self.diverged(r, "end")
        state.restart_losses.append(loss)
        candidate = Candidate(
            restart=r, loss=loss, model=clone_state(model.state_dict()), loss_curve=run.loss_curve,
            n_iter=len(run.loss_curve), start=run.start, initial_model=run.initial_model,
            threshold_curve=run.threshold_curve, constraint_curve=run.constraint_curve,
            validation_excess=run.validation_excess if validated else None,
            validation_curve=run.validation_curve if validated else None,
            best_epoch=run.stopping.best_epoch if validated else None,
            best_value=run.stopping.best if validated else None, start_reweighting=run.start_reweighting)
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
        value = self._validation_value(model, run)
        if not all(math.isfinite(v) for v in value):
            raise self.diverged(restart, epoch)
        run.validation_curve.append(self._curve_entry(value))
        if run.stopping.update(value, epoch):
            run.best_model = clone_state(model.state_dict())
        return run.stopping.stop


def _exact_metric(objective, target, y_true, scores, groups=None, sample_weight=None) -> float:
    """The objective's exact metric on the validation rows; unweighted without groups by one sort (:mod:`..metrics._held_out`)."""
    if groups is None and sample_weight is None:
        return held_out_metric(y_true == 1, scores, get_objective(objective).name, target)
    return objective_metric(y_true, scores, objective=objective, target=target, groups=groups,
                            sample_weight=sample_weight)


def _format_threshold(threshold) -> str:
    if isinstance(threshold, tuple):
        return "(" + ", ".join(f"{t:.3g}" for t in threshold[:4]) + (", ...)" if len(threshold) > 4 else ")")
    return f"{threshold:.4g}"


def parameters_finite(model) -> bool:
    """Whether every parameter of ``model`` is finite (checked after every epoch).

    :func:`~quantile_surrogate._utils.checks.all_finite` per tensor (one sum each, the exact check only
    when a sum overflows): a fraction of ``isfinite(p).all()``'s cost, which on a small model is a few
    per cent of an epoch.
    """
    return all(all_finite(p) for p in model.parameters())
