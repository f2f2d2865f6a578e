"""The steps of :meth:`QuantileClassifier.fit`, kept apart from the estimator's parameters and docstring.

The one standardised working copy, the training settings, the refit on every row, the linear
coefficients in the original units, and the estimator's two held-out paths, whose splits, scorer
and rules live in :mod:`quantile_surrogate.selection`: the validation split (then
:func:`~quantile_surrogate.selection._start_rule.keep_start_unless_gain`) and, on small data, the
K-fold selection (:func:`~quantile_surrogate.selection._cross_fit.cross_fit_selection`). Why:
``docs/selection.md``. The methods under "the interface of QuantileClassifierCV" are the only ones
that class calls.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state

from .._utils.seeding import restart_seeds, seed_torch
from ..objectives import predict_scores
from .._utils.sparse import check_columns, slice_rows
from ..selection._cross_fit import cross_fit_selection
from ..selection._scorer import FoldData, held_out_value
from ..selection._splits import MIN_ROWS_PER_STRATUM, shuffle_splits
from ..selection._start_rule import keep_start_unless_gain, metric_noise
from ..training import TrainingDivergedError, train
from ..training.checkpoint import checkpoint_seed
from ..training.models import build_scorer
from ._standardize import sparse_scaler, sparse_working_rows, standardize_columns, standardizer

__all__ = ["AUTO_CONSTRAINED_FULL_BATCH_ROWS", "AUTO_FULL_BATCH_ROWS", "AUTO_RESTARTS", "AUTO_SPARSE_FULL_BATCH_ROWS",
           "AUTO_VALIDATION_ROWS", "WORKING_COPY_CHUNK", "QuantileFitSteps"]

AUTO_FULL_BATCH_ROWS = 10_000
"""``batch_size="auto"``: full-batch gradient descent up to this many rows, minibatches of 1000 above."""

AUTO_SPARSE_FULL_BATCH_ROWS = 100_000
"""``batch_size="auto"`` on sparse input: full batch up to this many rows. A full-batch step on sparse rows costs
about their stored entries (no row gather, and the batch's transpose is reused by every step): on 13,000 one-hot
rows the default fit took 4.8 s in minibatches of 1000 and 1.8 s full-batch, with the same test precision
(docs/sparse.md)."""

AUTO_CONSTRAINED_FULL_BATCH_ROWS = 100_000
"""``batch_size="auto"`` with ``constraints``: full batch up to this many rows. The multipliers step once an
epoch on every row's exact rates; on development splits of UCI Adult above 10,000 rows (each benchmark training
half split 90/10, never a test half; 60 fits), with the fit rows' gap margin (``training.GAP_MARGIN``), full-batch
steps trained in 0.54 of the time of minibatches of 1000, with precision +0.013 and 24 fits within bound + 0.02
against 23 (docs/decisions.md)."""

AUTO_VALIDATION_ROWS = 10_000
"""``early_stopping="auto"``: a validation split above this many training rows, K-fold selection below."""

AUTO_RESTARTS = 3
"""``n_restarts="auto"`` without constraints (the default before "auto" existed)."""

WORKING_COPY_CHUNK = 65536
"""Rows copied at a time into the working copy, so that reordering rows makes no full-size temporary."""

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

    def _restarts(self, sparse: bool = False) -> int:
        """``n_restarts``, with "auto" resolved: 3, or 1 with ``constraints`` or on sparse ``X`` from a logistic start.

        (See its docstring: with ``init="random"`` sparse ``X`` keeps 3, as that case was not measured.)
        """
        if self.n_restarts == "auto":
            one = getattr(self, "constraints", None) or (sparse and self.init != "random")
            return 1 if one else AUTO_RESTARTS
        return int(self.n_restarts)

    def _early_stopping(self, n: int) -> bool:
        if self.early_stopping == "auto":  # constraints are checked on held-out rows (the best feasible epoch)
            return n > AUTO_VALIDATION_ROWS or bool(getattr(self, "constraints", None))
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
        """Indices (fit, validation) for early stopping, or (all, None) without a split.

        :func:`~quantile_surrogate.selection._splits.shuffle_splits`' one split, stratified by
        (class, group) with group codes; none where a stratum is too small or a group would miss
        rows of A on a side.
        """
        n = y01.shape[0]
        pairs = [] if not self._early_stopping(n) else shuffle_splits(
            y01, codes, fraction=self.validation_fraction, n_splits=1, seed=seed,
            in_subset=self._objective_spec().subset_mask(y01 == 1))
        return pairs[0] if pairs else (np.arange(n), None)

    def _cross_fit_folds(self, y01, codes) -> int | None:
        """The number of folds for K-fold selection, or None where it does not apply.

        It applies with ``early_stopping="auto"`` up to :data:`AUTO_VALIDATION_ROWS` rows,
        without groups, constraints (the folds would drop their groups; a constrained fit that
        could not split off validation rows trains on every row) or a checkpoint (a checkpoint
        resumes one training run), and when every class has at least ``MIN_ROWS_PER_STRATUM``
        rows in every fold.
        """
        if self.early_stopping != "auto" or len(y01) > AUTO_VALIDATION_ROWS or codes is not None:
            return None
        if getattr(self, "constraints", None):
            return None
        if self.checkpoint is not None or self.selection_folds < 2:
            return None
        if np.bincount(y01, minlength=2).min() < MIN_ROWS_PER_STRATUM * self.selection_folds:
            return None
        return int(self.selection_folds)

    def _working_tensor(self, X, order, sample_weight=None):
        """The one working copy of the data: rows in ``order``, standardised, float64 (float32 on a GPU), as torch.

        Ordering the rows as (fit rows, validation rows) makes both parts views of one array,
        so a validation split costs no second copy of X. ``sample_weight`` (in the rows' original
        order) weights the standardisation's mean and spread. A sparse ``X`` becomes a torch
        sparse CSR tensor of its own dtype (float32 stays float32) by :func:`sparse_working_rows`.
        """
        if sp.issparse(X):
            check_columns(X)
            self.mean_, self.scale_ = sparse_scaler(X, self.standardize is True, sample_weight)
            return sparse_working_rows(X, order, self.scale_, self._torch_device())
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

    def _train_settings(self, seed, n_rows, sparse=False):
        batch_size = self.batch_size
        if batch_size == "auto":
            limit = AUTO_SPARSE_FULL_BATCH_ROWS if sparse else AUTO_CONSTRAINED_FULL_BATCH_ROWS if getattr(
                self, "constraints", None) else AUTO_FULL_BATCH_ROWS
            batch_size = None if n_rows <= limit else 1000
        return dict(
            objective=self.objective, target=self._target(), form=self.form, quantile=self.quantile,
            bandwidth=self.bandwidth, surrogate=self.surrogate, learning_rate=self.learning_rate,
            momentum=self.momentum, alpha=self.alpha, batch_size=batch_size,
            subset_batch_size=self.subset_batch_size, subset_from_batch=self.subset_from_batch,
            random_state=seed, verbose=bool(self.verbose),
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
            start, init = _model_from_state(factory, result.initial_state, Xt), "model"
        refitted = train(start, Xt, yt, groups=gt, max_epochs=result.best_epoch, n_restarts=1, init=init, **settings)
        self.model_ = refitted.model
        self.loss_curve_ = list(refitted.loss_curve)
        self.train_loss_ = refitted.loss

    def _fit_cross_fitted(self, factory, Xt, yt, folds, seed, settings, **extra):
        """K-fold selection (:func:`~quantile_surrogate.selection._cross_fit.cross_fit_selection`), then the chosen candidate refitted on every row."""
        in_subset = self._objective_spec().subset_mask(yt == 1)
        sparse = Xt.layout == torch.sparse_csr
        fold_settings = {k: v for k, v in settings.items() if k != "random_state"}
        selection = cross_fit_selection(factory, Xt, yt, in_subset, folds=folds, seed=seed, settings=fold_settings,
                                        max_epochs=self.max_epochs, n_restarts=self._restarts(sparse), init=self.init,
                                        sample_weight=extra.get("sample_weight"), plain=self.selection_se <= 0)
        if selection["start"] == "logistic":
            start, init = factory, "logistic"
        else:
            with torch.random.fork_rng(devices=[]):  # restart r's random start, as in every fold
                seed_torch(restart_seeds(seed, self._restarts(sparse))[selection["restart"]][0])
                start = factory()
            init = "model"
        result = train(start, Xt, yt, max_epochs=selection["epochs_"], n_restarts=1, init=init, **settings, **extra)
        self._keep_result(result)
        self.best_epoch_ = selection["epochs_"]
        self.selection_ = selection
        return result

    def _keep_start_unless_gain(self, result, factory, Xt, yt, n_fit, settings, weight):
        """After a validation split: go back to the logistic start unless the chosen model beats it by a real gain.

        :func:`~quantile_surrogate.selection._start_rule.keep_start_unless_gain` on the
        validation rows (weighted with ``weight``), with the noise of the difference of both
        models' metrics (:func:`~quantile_surrogate.selection._start_rule.metric_noise`, taken as
        independent); the start is trained on the fit rows as :func:`train` makes restart 0's, or, where
        the chosen model is restart 0 (``init="mixed"``: the only logistic start), taken from its
        ``initial_state``: the same seed and rows give the same start, without a second L-BFGS fit.
        Returns the (possibly replaced) result; ``selection_`` keeps the rule's record.
        """
        if self.init == "random" or self.selection_se <= 0 or (result.start == "logistic" and result.best_epoch == 0):
            return result
        extra = {} if weight is None else {"sample_weight": weight[:n_fit]}
        if self.init == "mixed" and result.start == "logistic":
            start = train(_model_from_state(factory, result.initial_state, Xt), slice_rows(Xt, 0, n_fit), yt[:n_fit], max_epochs=0, n_restarts=1, init="model",
                          **settings, **extra)
        else:
            start = train(factory, slice_rows(Xt, 0, n_fit), yt[:n_fit], max_epochs=0, n_restarts=1, init="logistic",
                          **settings, **extra)
        held = FoldData(Xt, yt, np.arange(n_fit, len(yt)), weight,
                        in_subset=self._objective_spec().subset_mask(yt == 1))
        chosen, _ = held_out_value(result.model, held, settings)
        reference, _ = held_out_value(start.model, held, settings)
        noise = float(np.hypot(*(metric_noise(self.objective, self._target(), held.y_np, value, held.weight_np)
                                 for value in (reference, chosen))))
        self.selection_ = keep_start_unless_gain(chosen, reference, noise, self.selection_se)
        if not self.selection_["start_kept"]:
            return result
        self._keep_result(start)
        self.validation_curve_, self.best_epoch_ = result.validation_curve, 0
        return dataclasses.replace(start, start="logistic", best_epoch=0)

    # -- the interface of QuantileClassifierCV ---------------------------------------------------
    def _fold_settings(self, seed, n_rows, sparse=False) -> dict:
        """The training settings of a fold or refit run: :meth:`_train_settings` without its seed, silent."""
        settings = self._train_settings(seed, n_rows, sparse)
        settings.pop("random_state")
        settings["verbose"] = False
        return settings

    def _adopt_fit(self, X, y, sensitive_features, mean, scale):
        """Validate ``X, y`` and encode the groups as :meth:`fit` does, with the standardisation ``(mean, scale)``."""
        _, y01 = self._validate_training_data(X, y)
        codes = self._encode_fit_groups(sensitive_features, y01)
        self.mean_, self.scale_ = mean, scale
        return y01, codes

    def _finish_fit(self, Xt, y01, codes, weight, result=None, best_epoch=None):
        """Keep ``result`` (where given), then the threshold on the training scores and the linear coefficients."""
        if result is not None:
            self._keep_result(result)
            self.best_epoch_, self.selection_ = best_epoch, None
        scores = predict_scores(self.model_, Xt).double().cpu().numpy()
        self._check_scores_finite(scores)
        self._set_threshold(scores, y01, codes, sample_weight=weight)
        self._set_linear_coefficients()
        return self

    def _check_scores_finite(self, scores):
        if not np.isfinite(scores).all():
            raise TrainingDivergedError("the model's scores", "on the training rows", self.learning_rate)

    def _set_linear_coefficients(self):
        """``coef_`` and ``intercept_`` in the original units, for a linear model (threshold included without groups)."""
        if not isinstance(self.model_, torch.nn.Linear):
            return
        w = self.model_.weight.detach().double().cpu().numpy().reshape(1, -1) / self.scale_
        b = float(self.model_.bias.detach().double().cpu()) if self.model_.bias is not None else 0.0
        shift = self.threshold_ if self.groups_ is None else 0.0
        self.coef_ = w
        self.intercept_ = np.array([b - float(w[0] @ self.mean_) - shift])


def _model_from_state(factory, state: dict, like: torch.Tensor) -> torch.nn.Module:
    """``factory()`` holding ``state`` exactly, on ``like``'s device and dtype; the global RNG stays as it was.

    Cast before loading: a float32 module would round a float64 state.
    """
    with torch.random.fork_rng(devices=[]):  # a throw-away random init
        model = factory().to(device=like.device, dtype=like.dtype)
    model.load_state_dict(state)
    return model
