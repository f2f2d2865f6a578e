"""The restart loop behind :func:`quantile_surrogate.training.train` (private).

Kept apart from the public entry point so that each file reads in one sitting; the
behaviour is documented on :func:`~quantile_surrogate.training.train`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .checkpoint import fingerprint, load_checkpoint, save_checkpoint
from .models import decayed_parameters, fit_logistic, reset_parameters
from ..objectives import objective_loss, objective_metric, predict_scores, subset_mask, training_loss

DIVERGED_MESSAGE = (
    "Training diverged: the loss or the parameters became NaN or inf at epoch {epoch} of restart "
    "{restart} (learning_rate={lr:g}). Use a smaller learning_rate, e.g. {smaller:g}, or standardise "
    "the features."
)


MIN_GROUP_SUBSET_ROWS = 64
"""With groups, each group's share of the separate minibatch of A is at least this many rows
(at most ``subset_batch_size``; all of its rows of A if it has fewer): a rare group's quantile
from a handful of rows would be mostly noise."""


class TrainingDivergedError(FloatingPointError):
    """The training loss or a parameter became NaN or inf; no model is returned."""


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    model: nn.Module
    """The selected restart's model, in eval mode."""
    loss: float
    """Its full-batch training loss (the restart selection criterion)."""
    loss_curve: list = field(default_factory=list)
    """Mean minibatch loss per epoch of the selected restart."""
    n_iter: int = 0
    """Epochs run by the selected restart."""
    restart: int = 0
    """Index of the selected restart."""
    restart_losses: list = field(default_factory=list)
    """Full-batch training loss of every restart."""
    validation_curve: list | None = None
    """Validation metric per epoch (entry 0 is the start), if ``validation`` was given."""
    best_epoch: int | None = None
    """Epoch whose parameters were kept, if ``validation`` was given."""
    start: str = "random"
    """How the selected restart started: "random", "logistic" or "model"."""
    initial_state: dict | None = None
    """The selected restart's parameters before its first epoch (a ``state_dict``)."""


@dataclass
class _Config:
    objective: str
    target: float
    form: str
    quantile: object
    bandwidth: float
    surrogate: str
    learning_rate: float
    momentum: float
    weight_decay: float
    batch_size: int | None
    subset_batch_size: int | None
    subset_from_batch: bool
    max_epochs: int
    n_restarts: int
    init: str
    init_alpha: float | None
    early_stopping: bool
    n_iter_no_change: int
    tol: float
    select: str
    monitor: str

    def loss_settings(self):
        return dict(form=self.form, quantile=self.quantile, bandwidth=self.bandwidth, surrogate=self.surrogate)


def _restart_seeds(random_state, n_restarts):
    # SeedSequence children depend on their index only, so restart r has the same seeds
    # whatever n_restarts is (n_restarts=3 then contains the n_restarts=1 run).
    if random_state is None:
        random_state = int(np.random.SeedSequence().entropy % (2**63))
    children = np.random.SeedSequence(int(random_state)).spawn(n_restarts)
    return [[int(v) for v in child.generate_state(2, np.uint64) % (2**63)] for child in children]


class _Trainer:
    def __init__(self, config, model, X, labels, validation, validation_metric, callback, progress, groups=None):
        self.c = config
        self.template = model
        self.X, self.labels = X, labels
        self.n = X.shape[0]
        self.subset_index = torch.nonzero(subset_mask(labels, config.objective)).reshape(-1)
        self.subset = subset_mask(labels, config.objective)
        self.subset_is_all = self.subset_index.numel() == self.n
        self.groups = groups
        self.subset_groups = None if groups is None else groups[self.subset_index]
        self.validation = validation
        self.metric = validation_metric or (
            lambda yv, s, gv=None: objective_metric(yv, s, objective=config.objective, target=config.target,
                                                    groups=gv))
        self.callback, self.progress = callback, progress
        self.cuda = X.device.type == "cuda"

    # -- building blocks ------------------------------------------------------------------
    def new_model(self) -> nn.Module:
        if isinstance(self.template, nn.Module):
            model = copy.deepcopy(self.template)
            if self.c.init != "model":
                reset_parameters(model)
        else:
            model = self.template()
            if not isinstance(model, nn.Module):
                raise TypeError(f"`model` must return a torch.nn.Module; it returned {type(model).__name__}.")
        return model.to(device=self.X.device, dtype=self.X.dtype)

    def new_optimizer(self, model):
        weights, others = decayed_parameters(model)
        groups = [{"params": weights, "weight_decay": self.c.weight_decay}, {"params": others, "weight_decay": 0.0}]
        return torch.optim.SGD([g for g in groups if g["params"]], lr=self.c.learning_rate, momentum=self.c.momentum)

    def loss(self, scores, labels, threshold_scores, groups=None, threshold_groups=None):
        return objective_loss(scores, labels, objective=self.c.objective, target=self.c.target,
                              threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups,
                              **self.c.loss_settings())

    def diverged(self, restart, epoch):
        return TrainingDivergedError(DIVERGED_MESSAGE.format(
            epoch=epoch, restart=restart, lr=self.c.learning_rate, smaller=self.c.learning_rate / 10))

    def full_loss(self, model, restart) -> float:
        loss = training_loss(model, self.X, self.labels, objective=self.c.objective, target=self.c.target,
                             groups=self.groups, **self.c.loss_settings())
        if not math.isfinite(loss):
            raise self.diverged(restart, "end")
        return loss

    def validate(self, model) -> list:
        """``[metric, -loss]`` on the validation rows, compared lexicographically.

        The exact metric at a small rate on a small validation set is coarse (the top 2 of
        21 rows, say) and often flat; the validation surrogate loss breaks its ties.
        """
        X_val, y_val = self.validation[:2]
        g_val = self.validation[2] if len(self.validation) > 2 else None
        scores = predict_scores(model, X_val)
        if not bool(torch.isfinite(scores).all()):
            return [math.nan, math.nan]
        labels = y_val.bool()
        in_subset = subset_mask(labels, self.c.objective)
        loss = self.loss(scores, labels, scores[in_subset], g_val,
                         None if g_val is None else g_val[in_subset]).loss
        arguments = (y_val.cpu().numpy().astype(np.int64), scores.double().cpu().numpy())
        if g_val is not None:
            arguments += (g_val.cpu().numpy(),)
        metric = self.metric(*arguments)
        if self.c.monitor == "loss":
            return [-float(loss), float(metric)]
        return [float(metric), -float(loss)]

    def subset_batches(self, n_batches, subset_size, generator):
        """Step 2 of Algorithm 1: ``n_batches`` index tensors into X of rows of A, each a pass-wise reshuffled draw.

        With groups, each group of A is drawn on its own: its share of ``subset_size``, at
        least ``min(MIN_GROUP_SUBSET_ROWS, subset_size)`` rows (all of its rows if it has
        fewer), so that every group's threshold has rows in every step.
        """
        if self.groups is None:
            return self._stream(self.subset_index, n_batches, subset_size, generator)
        n_subset = self.subset_index.numel()
        parts = []
        for g in torch.unique(self.subset_groups).tolist():
            index = self.subset_index[self.subset_groups == g]
            share = max(math.ceil(subset_size * index.numel() / n_subset), min(MIN_GROUP_SUBSET_ROWS, subset_size))
            parts.append(self._stream(index, n_batches, share, generator))
        return [torch.cat(rows) for rows in zip(*parts)]

    def _stream(self, index, n_batches, size, generator):
        n = index.numel()
        if size >= n:
            return [index] * n_batches
        # A stream of passes over the rows, reshuffled each pass.
        repeats = math.ceil(n_batches * size / n)
        stream = torch.cat([torch.randperm(n, generator=generator) for _ in range(repeats)])
        return list(index[stream.to(index.device)].split(size))[:n_batches]

    def epoch(self, model, optimizer, generator):
        """One pass over the data; returns (mean minibatch loss, last threshold(s)) as floats."""
        c, X, labels, groups = self.c, self.X, self.labels, self.groups
        if c.batch_size is None or c.batch_size >= self.n:
            optimizer.zero_grad()
            scores = model(X).reshape(-1)
            if self.subset_is_all:
                out = self.loss(scores, labels, scores, groups, groups)
            else:
                out = self.loss(scores, labels, scores[self.subset_index], groups, self.subset_groups)
            out.loss.backward()
            optimizer.step()
            return float(out.loss.detach()), _as_floats(out.threshold)
        batches = torch.randperm(self.n, generator=generator).split(c.batch_size)
        if not c.subset_from_batch:
            subset_batches = self.subset_batches(len(batches), c.subset_batch_size or c.batch_size, generator)
        total = torch.zeros((), dtype=X.dtype, device=X.device)
        threshold = torch.full((), float("nan"))
        for b, rows in enumerate(batches):
            rows = rows.to(X.device)
            optimizer.zero_grad()
            batch_groups = reference_groups = None
            if c.subset_from_batch:
                scores = model(X[rows]).reshape(-1)
                in_subset = self.subset[rows]
                reference = scores[in_subset]
                if groups is not None:
                    batch_groups = groups[rows]
                    reference_groups = batch_groups[in_subset]
            else:
                # One forward pass over both minibatches.
                both = model(torch.cat([X[rows], X[subset_batches[b]]])).reshape(-1)
                scores, reference = both[: rows.numel()], both[rows.numel():]
                if groups is not None:
                    batch_groups, reference_groups = groups[rows], groups[subset_batches[b]]
            out = self.loss(scores, labels[rows], reference, batch_groups, reference_groups)
            out.loss.backward()
            optimizer.step()
            total = total + out.loss.detach()
            if reference.numel():
                threshold = out.threshold.detach()
        return float(total) / len(batches), _as_floats(threshold)

    # -- the restart loop -----------------------------------------------------------------
    def run(self, random_state, checkpoint) -> TrainResult:
        c = self.c
        seeds = _restart_seeds(random_state, c.n_restarts)
        devices = [self.X.device.index or 0] if self.cuda else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            probe = self.new_model().eval()
            shape = tuple(probe(self.X[:2]).shape)
        if shape not in ((min(2, self.n),), (min(2, self.n), 1)):
            raise ValueError(f"`model` must map (n, d) inputs to (n,) or (n, 1) scores; got shape {shape} for n=2.")
        key, state = None, None
        if checkpoint is not None:
            # Groups join the hashed tensors; without them the key is what it was before groups existed.
            hashed = tuple(self.validation or ()) + (() if self.groups is None else (self.groups,))
            key = fingerprint(c, self.X, self.labels, hashed or None, random_state, repr(probe))
            state = load_checkpoint(checkpoint, key)
        if state is None:
            state = {"key": key, "seeds": seeds, "restart": 0, "restart_losses": [], "best": None,
                     "finished": False, "run": None}
        while not state["finished"]:
            r = state["restart"]
            with torch.random.fork_rng(devices=devices):
                self.run_restart(r, state["seeds"][r], state, checkpoint)
        best = state["best"]
        with torch.random.fork_rng(devices=devices):  # leave the caller's global RNG as it was
            model = self.new_model()
        model.load_state_dict(best["model"])
        model.eval()
        return TrainResult(model=model, loss=best["loss"], loss_curve=best["loss_curve"], n_iter=best["n_iter"],
                           restart=best["restart"], restart_losses=list(state["restart_losses"]),
                           validation_curve=best["validation_curve"], best_epoch=best["best_epoch"],
                           start=best["start"], initial_state=best["initial_model"])

    def run_restart(self, r, seeds, state, checkpoint):
        c = self.c
        generator = torch.Generator().manual_seed(seeds[1])
        run = state["run"]
        if run is None:
            torch.manual_seed(seeds[0])
            model = self.new_model()
            start = "model" if c.init == "model" else "random"
            if c.init == "logistic" or (c.init == "mixed" and r == 0):
                start = "logistic"
                fit_logistic(model, self.X, self.labels, alpha=c.init_alpha if c.init_alpha is not None else 1 / self.n)
            optimizer = self.new_optimizer(model)
            run = {"loss_curve": [], "validation_curve": [], "best_value": None, "best_epoch": 0,
                   "best_model": None, "bad_epochs": 0, "start": start,
                   "initial_model": copy.deepcopy(model.state_dict())}
            if self.validation is not None:
                run["best_value"] = self.validate(model)
                run["validation_curve"].append(run["best_value"][self.c.monitor == "loss"])
                run["best_model"] = copy.deepcopy(model.state_dict())
        else:
            model = self.new_model()
            model.load_state_dict(run["model"])
            optimizer = self.new_optimizer(model)
            optimizer.load_state_dict(run["optimizer"])
            generator.set_state(run["generator"])
            torch.set_rng_state(run["torch_rng"])
            if self.cuda and run.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(run["cuda_rng"], self.X.device)
        model.train()
        bar = tqdm(total=c.max_epochs, initial=len(run["loss_curve"]), disable=not self.progress,
                   desc=f"restart {r + 1}/{c.n_restarts}", leave=False)
        stop = False
        while len(run["loss_curve"]) < c.max_epochs and not stop:
            epoch = len(run["loss_curve"]) + 1
            loss, threshold = self.epoch(model, optimizer, generator)
            finite = math.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in model.parameters())
            if not finite:
                bar.close()
                raise self.diverged(r, epoch)
            run["loss_curve"].append(loss)
            stop = self.monitor(model, run, loss, epoch, r)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4g}", threshold=_format_threshold(threshold))
            if checkpoint is not None:
                run.update(model=model.state_dict(), optimizer=optimizer.state_dict(),
                           generator=generator.get_state(), torch_rng=torch.get_rng_state(),
                           cuda_rng=torch.cuda.get_rng_state(self.X.device) if self.cuda else None)
                state["run"] = run
                save_checkpoint(checkpoint, state)
            if self.callback is not None:
                self.callback({"restart": r, "epoch": epoch, "loss": loss, "threshold": threshold, "model": model})
        bar.close()
        if self.validation is not None:
            model.load_state_dict(run["best_model"])
        loss = self.full_loss(model, r)
        state["restart_losses"].append(loss)
        candidate = {"restart": r, "loss": loss, "model": copy.deepcopy(model.state_dict()),
                     "loss_curve": run["loss_curve"], "n_iter": len(run["loss_curve"]),
                     "validation_curve": run["validation_curve"] if self.validation is not None else None,
                     "best_epoch": run["best_epoch"] if self.validation is not None else None,
                     "best_value": run["best_value"] if self.validation is not None else None,
                     "start": run["start"], "initial_model": run["initial_model"]}
        best = state["best"]
        if best is None or self._better(candidate, best):
            state["best"] = candidate
        state.update(restart=r + 1, run=None, finished=r + 1 >= c.n_restarts)
        if checkpoint is not None:
            save_checkpoint(checkpoint, state)

    def _better(self, candidate, best) -> bool:
        if self.c.select == "validation" and candidate["best_value"] != best["best_value"]:
            return candidate["best_value"] > best["best_value"]
        return candidate["loss"] < best["loss"]

    def monitor(self, model, run, loss, epoch, restart) -> bool:
        """Track the best epoch; True when early stopping says stop."""
        c = self.c
        if self.validation is not None:
            value = self.validate(model)
            if not all(math.isfinite(v) for v in value):
                raise self.diverged(restart, epoch)
            run["validation_curve"].append(value[self.c.monitor == "loss"])
            improved = value > run["best_value"]
            if improved:
                run.update(best_value=value, best_epoch=epoch, best_model=copy.deepcopy(model.state_dict()))
        else:
            improved = run["best_value"] is None or loss < run["best_value"] - c.tol
            if improved:
                run["best_value"] = loss
        run["bad_epochs"] = 0 if improved else run["bad_epochs"] + 1
        return c.early_stopping and run["bad_epochs"] >= c.n_iter_no_change


def _as_floats(threshold: torch.Tensor):
    """A 0-d threshold as a float; per-group thresholds (shape (G,)) as a tuple of floats."""
    threshold = threshold.detach().cpu()
    return float(threshold) if threshold.ndim == 0 else tuple(float(t) for t in threshold)


def _format_threshold(threshold) -> str:
    if isinstance(threshold, tuple):
        return "(" + ", ".join(f"{t:.3g}" for t in threshold[:4]) + (", ...)" if len(threshold) > 4 else ")")
    return f"{threshold:.4g}"
