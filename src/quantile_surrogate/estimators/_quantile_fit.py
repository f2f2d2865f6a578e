"""The steps of :meth:`QuantileClassifier.fit`, and its K-fold selection on small data.

Kept apart from the estimator's parameters and docstring (``quantile_classifier.py``): the
validation split, the one standardised working copy, the refit on every row, the linear
coefficients in the original units, and :func:`cross_fit_selection`, which picks the restart,
the number of epochs, and "trained" against "the logistic start as it is" from held-out
folds when the data are too few for a validation split. Both held-out paths leave the logistic
start only for a gain above its noise (:mod:`._start_rule`).
"""

from __future__ import annotations

import dataclasses
from numbers import Integral

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.utils import check_random_state

from ..training import TrainingDivergedError, train
from .._utils.seeding import restart_seeds, seed_torch
from ..training.checkpoint import checkpoint_seed
from ..training.models import build_scorer
from ..selection._cross_fit import FoldData, build_start, held_out_value, scored_run
from ._groups import split_strata
from ._standardize import standardize_columns, standardizer
from ..selection._start_rule import metric_noise, metric_noises, select_over_start

__all__ = ["AUTO_FULL_BATCH_ROWS", "AUTO_VALIDATION_ROWS", "MIN_VALIDATION_ROWS_PER_CLASS", "WORKING_COPY_CHUNK",
           "QuantileFitSteps", "cross_fit_selection", "epoch_grid"]

AUTO_FULL_BATCH_ROWS = 10_000
"""``batch_size="auto"``: full-batch gradient descent up to this many rows, minibatches of 1000 above."""

AUTO_VALIDATION_ROWS = 10_000
"""``early_stopping="auto"``: a validation split above this many training rows, K-fold selection below."""

MIN_VALIDATION_ROWS_PER_CLASS = 4

WORKING_COPY_CHUNK = 65536
"""Rows copied at a time into the working copy, so that reordering rows makes no full-size temporary."""

EPOCH_GRID = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""Epoch counts compared by the K-fold selection (and ``max_epochs``). Roughly geometric: every
extra candidate is one more noisy comparison, so 600 per-epoch candidates would overfit the
folds (the winner's curse) where about ten do not, and the metric changes slowly in log-epochs."""


def epoch_grid(max_epochs: int) -> np.ndarray:
    """0 (the start), the entries of :data:`EPOCH_GRID` below ``max_epochs``, and ``max_epochs``."""
    return np.array(sorted({0, int(max_epochs), *(e for e in EPOCH_GRID if e < max_epochs)}))


def cross_fit_selection(factory, Xt, yt, in_subset, *, folds, seed, settings, max_epochs, n_restarts, init,
                        n_se=2.0, sample_weight=None) -> dict:
    r"""Held-out value of every (restart, epoch count) candidate by stratified K-fold cross-fitting.

    Each fold trains all ``n_restarts`` restarts for ``max_epochs`` on the other folds (the
    same seeds, so restart ``r`` has the same random start in every fold) and scores the
    model after each epoch count in :func:`epoch_grid` on the held-out fold, with the
    objective's exact metric and the surrogate loss. The logistic start (epoch 0 of a
    logistic restart) is a candidate; a random start's epoch 0 is not. Each restart's start is
    built once per fold (:func:`~._cv_search.build_start`, as :func:`train` makes it) and
    trained from as it is, so the logistic start is fitted once, not again inside ``train``.
    With ``sample_weight`` (frequency weights, NumPy, one per row of ``Xt``) the folds' training,
    their held-out metric and loss (:func:`~._cv_search.held_out_value`) and the noise floor are
    weighted; the folds themselves are drawn by row, stratified by class.

    The choice (:func:`select_over_start`): the logistic start :math:`s` stays unless a
    candidate's mean paired held-out gain exceeds ``n_se`` standard errors,

    .. math::
        \bar d(r, e) = \tfrac1K \sum_k \big(m_k(r, e) - m_k(s)\big)
        > z \max\big(\hat\sigma(r, e),\ \sigma_0(r, e)\big),

    :math:`\hat\sigma` the standard error of the K paired gains, :math:`\sigma_0(r, e)` the
    binomial noise of the difference of the start's and the candidate's metrics from their
    held-out row counts, taken as independent (:func:`metric_noises`); among such candidates
    the largest mean gain wins, ties by the lower mean loss. Without a logistic restart
    (``init="random"``) the best mean metric wins, ties by the lower mean loss.

    Returns a dict: ``epochs`` (the grid), ``fold_metric`` and ``fold_loss`` of shape
    (folds, n_restarts, n_epochs) (NaN where not a candidate), ``mean_metric``, ``mean_loss``,
    ``mean_gain``, ``gain_se`` and ``bar`` (same shape; None without a logistic restart),
    ``floor`` (:math:`\sigma_0(r, e)`), ``noise_floor`` (the start's part), ``restart``, ``epochs_`` (the chosen count) and
    ``start`` ("logistic" or "random").
    """
    grid = epoch_grid(max_epochs)
    position = {int(e): i for i, e in enumerate(grid)}
    seeds = restart_seeds(seed, n_restarts)
    logistic = [init == "logistic" or (init == "mixed" and r == 0) for r in range(n_restarts)]
    metric = np.full((folds, n_restarts, len(grid)), np.nan)
    loss = np.full_like(metric, np.nan)
    candidate_noise = np.full_like(metric, np.nan)
    y_np = yt.cpu().numpy()
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed % (2**32))
    for k, (fit_rows, held_rows) in enumerate(splitter.split(np.zeros((len(y_np), 1)), y_np)):
        fit = FoldData(Xt, yt, fit_rows, sample_weight)
        held = FoldData(Xt, yt, held_rows, sample_weight, in_subset=in_subset)
        for r in range(n_restarts):
            start = build_start(factory, fit, seeds[r][0], logistic[r])
            scored_run(start, fit, held, settings, max_epochs=max_epochs, shuffle_seed=seeds[r][1], position=position,
                       metric_row=metric[k, r], loss_row=loss[k, r], score_start=logistic[r])
        if any(logistic):
            candidate_noise[k] = metric_noises(settings["objective"], settings["target"], held.y_np, metric[k],
                                               held.weight_np)
    mean_metric, mean_loss = metric.mean(axis=0), loss.mean(axis=0)
    gains = dict(mean_gain=None, gain_se=None, bar=None, floor=None, noise_floor=None)
    if any(logistic):
        start = (logistic.index(True), 0)
        (restart, column), gains = select_over_start(metric, loss, start, candidate_noise[(slice(None), *start)],
                                                     n_se, candidate_noise)
    else:
        order = np.lexsort((np.nan_to_num(mean_loss, nan=np.inf).ravel(),
                            -np.nan_to_num(mean_metric, nan=-np.inf).ravel()))
        restart, column = np.unravel_index(order[0], mean_metric.shape)
    return dict(epochs=grid, fold_metric=metric, fold_loss=loss, mean_metric=mean_metric, mean_loss=mean_loss,
                **gains, restart=int(restart), epochs_=int(grid[column]),
                start="logistic" if logistic[restart] else "random")


class QuantileFitSteps:
    """Mixin with the steps of :meth:`QuantileClassifier.fit` (``self`` holds the parameters)."""

    def _torch_device(self) -> torch.device:
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as error:
            raise ValueError(
                f"`device` must name a torch device such as 'cpu' or 'cuda'; got {self.device!r}."
            ) from error
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"`device` is {self.device!r} but torch sees no CUDA GPU; use device='cpu'.")
        return device

    def _hidden_sizes(self) -> tuple:
        sizes = tuple(self.hidden_layer_sizes)
        if not all(isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in sizes):
            raise ValueError(
                "`hidden_layer_sizes` must be a tuple of integers >= 1, e.g. (32, 16); "
                f"got {self.hidden_layer_sizes!r}."
            )
        return sizes

    def _early_stopping(self, n: int) -> bool:
        if self.early_stopping == "auto":
            return n > AUTO_VALIDATION_ROWS
        return bool(self.early_stopping)

    def _draw_seed(self) -> int:
        if isinstance(self.random_state, Integral):
            return int(self.random_state)
        if self.random_state is None and self.checkpoint is not None:
            saved = checkpoint_seed(self.checkpoint)  # resume the interrupted fit with the seed it drew
            if saved is not None:
                return saved
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _scorer_factory(self, n_features):
        hidden, module_factory = self._hidden_sizes(), self.module_factory
        return lambda: build_scorer(n_features, hidden, module_factory)

    def _split(self, y01, seed, codes=None):
        """Indices (fit, validation) for early stopping, or (all, None) when a class is too small to split.

        With group codes the split is stratified by (class, group), so every group keeps its
        rows of A on both sides; a (class, group) cell with fewer than
        MIN_VALIDATION_ROWS_PER_CLASS rows means no split.
        """
        n = y01.shape[0]
        strata = split_strata(y01, codes)  # an empty (class, group) cell is no constraint
        counts = np.bincount(strata)
        counts = counts[counts > 0] if codes is not None else np.bincount(y01, minlength=2)
        n_val = int(round(self.validation_fraction * n))
        if not self._early_stopping(n) or counts.min() < MIN_VALIDATION_ROWS_PER_CLASS or n_val < 2 or n - n_val < 2:
            return np.arange(n), None
        fit_rows, val_rows = train_test_split(np.arange(n), test_size=n_val, stratify=strata, random_state=seed)
        if codes is not None:
            # Rounding can leave a small group's rows of A all on one side; then its threshold is undefined there.
            in_subset = self._objective_spec().subset_mask(y01 == 1)
            for rows in (fit_rows, val_rows):
                if len(np.unique(codes[rows][in_subset[rows]])) < len(np.unique(codes)):
                    return np.arange(n), None
        return fit_rows, val_rows

    def _cross_fit_folds(self, y01, codes) -> int | None:
        """The number of folds for K-fold selection, or None where it does not apply.

        It applies with ``early_stopping="auto"`` up to :data:`AUTO_VALIDATION_ROWS` rows,
        without groups or a checkpoint (a checkpoint resumes one training run), and when every
        class has at least MIN_VALIDATION_ROWS_PER_CLASS rows in every fold.
        """
        if self.early_stopping != "auto" or len(y01) > AUTO_VALIDATION_ROWS or codes is not None:
            return None
        if self.checkpoint is not None or self.selection_folds < 2:
            return None
        if np.bincount(y01, minlength=2).min() < MIN_VALIDATION_ROWS_PER_CLASS * self.selection_folds:
            return None
        return int(self.selection_folds)

    def _working_tensor(self, X, order, sample_weight=None):
        """The one working copy of the data: rows in ``order``, standardised, float64 (float32 on a GPU), as torch.

        Ordering the rows as (fit rows, validation rows) makes both parts views of one array,
        so a validation split costs no second copy of X. ``sample_weight`` (in the rows' original
        order) weights the standardisation's mean and spread.
        """
        if self.standardize:
            self.mean_, self.scale_ = standardizer(X, sample_weight=sample_weight)
        else:
            self.mean_, self.scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        work = np.empty(X.shape, dtype=np.float64)
        for start in range(0, X.shape[0], WORKING_COPY_CHUNK):  # X[order] whole would be a second copy of X
            rows = slice(start, start + WORKING_COPY_CHUNK)
            work[rows] = X[rows] if order is None else X[order[rows]]
        standardize_columns(work, self.mean_, self.scale_, out=work)
        device = self._torch_device()
        return torch.as_tensor(work, dtype=torch.float64 if device.type == "cpu" else torch.float32, device=device)

    def _train_settings(self, seed, n_rows):
        batch_size = self.batch_size
        if batch_size == "auto":
            batch_size = None if n_rows <= AUTO_FULL_BATCH_ROWS else 1000
        return dict(
            objective=self.objective, target=self._target(), form=self.form, quantile=self.quantile,
            bandwidth=self.bandwidth, surrogate=self.surrogate, learning_rate=self.learning_rate,
            momentum=self.momentum, weight_decay=self.alpha, batch_size=batch_size,
            subset_batch_size=self.subset_batch_size, subset_from_batch=self.subset_from_batch,
            random_state=seed, progress=bool(self.verbose),
        )

    def _keep_result(self, result):
        self.model_ = result.model
        self.loss_curve_ = list(result.loss_curve)
        self.validation_curve_ = result.validation_curve
        self.restart_losses_ = list(result.restart_losses)
        self.train_loss_ = result.loss
        self.n_iter_ = result.n_iter
        self.best_epoch_ = result.best_epoch

    def _refit_on_all_rows(self, result, factory, Xt, yt, gt, settings):
        """Same start, same number of epochs, every row: a validation split need not cost data."""
        if result.start == "logistic":
            start, init = factory, "logistic"
        else:
            with torch.random.fork_rng(devices=[]):
                start = factory()
            start.load_state_dict(result.initial_state)
            init = "model"
        refitted = train(start, Xt, yt, groups=gt, max_epochs=result.best_epoch, n_restarts=1, init=init, **settings)
        self.model_ = refitted.model
        self.loss_curve_ = list(refitted.loss_curve)
        self.train_loss_ = refitted.loss

    def _fit_cross_fitted(self, factory, Xt, yt, folds, seed, settings, **extra):
        """K-fold selection (:func:`cross_fit_selection`), then the chosen candidate refitted on every row."""
        in_subset = self._objective_spec().subset_mask(yt == 1)
        fold_settings = {k: v for k, v in settings.items() if k != "random_state"}
        selection = cross_fit_selection(factory, Xt, yt, in_subset, folds=folds, seed=seed, settings=fold_settings,
                                        max_epochs=self.max_epochs, n_restarts=self.n_restarts, init=self.init,
                                        n_se=self.selection_se, sample_weight=extra.get("sample_weight"))
        if selection["start"] == "logistic":
            start, init = factory, "logistic"
        else:
            with torch.random.fork_rng(devices=[]):  # restart r's random start, as in every fold
                seed_torch(restart_seeds(seed, self.n_restarts)[selection["restart"]][0])
                start = factory()
            init = "model"
        result = train(start, Xt, yt, max_epochs=selection["epochs_"], n_restarts=1, init=init, **settings, **extra)
        self._keep_result(result)
        self.best_epoch_ = selection["epochs_"]
        self.selection_ = selection
        return result

    def _keep_start_unless_gain(self, result, factory, Xt, yt, n_fit, settings, weight):
        """After a validation split: go back to the logistic start unless the chosen model beats it by a real gain.

        The rule of :func:`select_over_start` with one fold: the chosen model's validation metric
        must exceed the start's by more than ``selection_se`` times the binomial standard error of
        their difference on the validation rows (both models' :func:`metric_noise`, taken as
        independent), all weighted with ``weight``; the start
        is trained on the fit rows as :func:`train` makes restart 0's, with the same weights. Returns the (possibly replaced)
        result; ``selection_`` records ``validation_gain``, ``noise_floor`` and ``start_kept``.
        """
        if self.init == "random" or self.selection_se <= 0 or (result.start == "logistic" and result.best_epoch == 0):
            return result
        extra = {} if weight is None else {"sample_weight": weight[:n_fit]}
        start = train(factory, Xt[:n_fit], yt[:n_fit], max_epochs=0, n_restarts=1, init="logistic",
                      **settings, **extra)
        held = FoldData(Xt, yt, np.arange(n_fit, len(yt)), weight,
                        in_subset=self._objective_spec().subset_mask(yt == 1))
        chosen, _ = held_out_value(result.model, held, settings)
        reference, _ = held_out_value(start.model, held, settings)
        noise = float(np.hypot(metric_noise(self.objective, self._target(), held.y_np, reference, held.weight_np),
                               metric_noise(self.objective, self._target(), held.y_np, chosen, held.weight_np)))
        kept = not chosen - reference > self.selection_se * noise
        self.selection_ = dict(validation_gain=chosen - reference, noise_floor=noise, start_kept=kept)
        if not kept:
            return result
        self._keep_result(start)
        self.validation_curve_, self.best_epoch_ = result.validation_curve, 0
        return dataclasses.replace(start, start="logistic", best_epoch=0)

    def _check_scores_finite(self, scores):
        if not np.isfinite(scores).all():
            raise TrainingDivergedError(
                f"Training diverged: the model's scores are NaN or inf. Use a smaller learning_rate than "
                f"{self.learning_rate:g}, e.g. {self.learning_rate / 10:g}.")

    def _set_linear_coefficients(self):
        """``coef_`` and ``intercept_`` in the original units, for a linear model (threshold included without groups)."""
        if not isinstance(self.model_, torch.nn.Linear):
            return
        w = self.model_.weight.detach().double().cpu().numpy().reshape(1, -1) / self.scale_
        b = float(self.model_.bias.detach().double().cpu()) if self.model_.bias is not None else 0.0
        shift = self.threshold_ if self.groups_ is None else 0.0
        self.coef_ = w
        self.intercept_ = np.array([b - float(w[0] @ self.mean_) - shift])
