"""``QuantileClassifier``: a scikit-learn estimator over :func:`quantile_surrogate.training.train`.

It uses scikit-learn's semi-private validation helpers (``validate_data``, new in 1.6,
``_fit_context``, ``Interval``/``StrOptions`` in ``_parameter_constraints``), as
scikit-learn-contrib's template does. Tested with scikit-learn 1.9.1; ``pyproject.toml``
pins ``scikit-learn>=1.6,<1.10`` because these helpers may change without deprecation.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ..losses import SURROGATES
from ..objectives import OBJECTIVES, predict_scores
from ..quantiles import QUANTILE_ESTIMATORS
from ..training import TrainingDivergedError, train
from ..training.checkpoint import checkpoint_seed
from ..training.models import build_scorer
from ._standardize import standardize_columns, standardizer
from ._threshold import ThresholdedClassifier

__all__ = ["QuantileClassifier", "DEFAULT_TARGETS"]

DEFAULT_TARGETS = {name: objective.default_target for name, objective in OBJECTIVES.items()}
"""``target=None`` means these (from :data:`~quantile_surrogate.objectives.OBJECTIVES`): the paper's
synthetic recall 0.95, and a 5 % rate."""

AUTO_FULL_BATCH_ROWS = 10_000
"""``batch_size="auto"``: full-batch gradient descent up to this many rows, minibatches of 1000 above."""

AUTO_VALIDATION_ROWS = 10_000
"""``early_stopping="auto"``: a validation split above this many training rows, none below."""

MIN_VALIDATION_ROWS_PER_CLASS = 4

WORKING_COPY_CHUNK = 65536
"""Rows copied at a time into the working copy, so that reordering rows makes no full-size temporary."""

class QuantileClassifier(ThresholdedClassifier):
    r"""A binary classifier trained for a rate-constrained operating point (Mackey, Luo & Eban 2018).

    Minimises the quantile surrogate loss of ``objective`` by Algorithm 1 (SGD with momentum
    on minibatches plus a minibatch of the threshold subset ``A``), then sets ``threshold_`` to
    the exact empirical quantile on the training data, so that the constraint holds there.

    ==========================  ==========================  ===========================
    objective                   constraint (``target``)     loss
    ==========================  ==========================  ===========================
    ``"precision_at_recall"``   recall >= target            eq. (7)
    ``"precision_at_rate"``     predicted pos. rate = target eq. (9) or (10) (``form``)
    ``"recall_at_fpr"``         FPR <= target               Neyman-Pearson form
    ==========================  ==========================  ===========================

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        The recall, predicted positive rate or FPR; None means :data:`DEFAULT_TARGETS`.
    form : {"fp", "tp"}, default="fp"
        For ``precision_at_rate``: bound the false positives (eq. (9)) or the true positives (eq. (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or ``f(scores, level)``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` on the rank scale (the paper uses 0.05 and 0.08).
    surrogate : {"logistic", "hinge"}, default="logistic"
    hidden_layer_sizes : tuple of int, default=()
        Empty for the paper's linear model, else a ReLU multi-layer perceptron.
    module_factory : callable or None, default=None
        ``module_factory(n_features) -> torch.nn.Module`` mapping (n, d) to (n,) or (n, 1) scores;
        overrides ``hidden_layer_sizes``.
    alpha : float >= 0, default=1e-3
        Weight decay (SGD's ``weight_decay``) on the weight matrices.
    learning_rate : float > 0, default=0.1
    momentum : float in [0, 1), default=0.9
    batch_size : int, "auto" or None, default="auto"
        None is full-batch; "auto" is full-batch up to 10,000 training rows, 1000 above.
    subset_batch_size : int or None, default=None
        Rows of ``A`` per step (Algorithm 1, step 2); None means ``batch_size``.
    subset_from_batch : bool, default=False
        Use ``A_b = X_b \cap A`` instead of a separate minibatch of ``A``.
    max_epochs : int, default=200
    n_restarts : int, default=3
        Independent runs. Without early stopping the lowest training loss wins (the paper's
        Q3); with it, the best validation metric (ties: the lower validation loss).
    init : {"random", "logistic", "mixed"}, default="mixed"
        "mixed" starts restart 0 from logistic regression's solution and the others at random.
    early_stopping : bool or "auto", default="auto"
        True: hold out ``validation_fraction`` of the rows (stratified), keep each restart's
        epoch with the best validation metric (its start included; ties go to the lower
        validation loss), stop after ``n_iter_no_change`` epochs without improvement, and
        pick the restart with the best validation value. False: every row trains for all
        ``max_epochs`` and the lowest training loss picks the restart (the paper's protocol).
        "auto": True above 10,000 training rows (where minibatches are used and random starts
        can land in poor minima), False below (where a validation split costs more data than
        its noisy metric is worth); docs/estimator.md has the measurements behind this.
    validation_fraction : float in (0, 1), default=0.2
    n_iter_no_change : int, default=20
    refit : bool, default=False
        After early stopping, train the selected restart again from the same start on every
        row (the validation rows included) for its best number of epochs; a logistic start
        is refitted on every row too. Without it the model stays the one fitted without the
        validation rows.
    standardize : bool, default=True
        Centre and scale the features internally (``coef_`` is reported in the original units).
    random_state : int, RandomState or None, default=None
    verbose : bool or int, default=False
        Show a tqdm progress bar over epochs with the loss and the threshold.
    device : str, default="cpu"
        A torch device such as "cuda"; float64 on the CPU, float32 elsewhere.
    checkpoint : str, path-like or None, default=None
        Save training state here after every epoch; a fit with the same path resumes from it.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    threshold_ : float, or ndarray of shape (n_groups,) when fitted with ``groups``
        The decision threshold on the raw score ``f(x)``; with groups, one per entry of ``groups_``
        (the same array as ``group_thresholds_``).
    groups_ : ndarray of shape (n_groups,) or None
        The sorted group labels seen in ``fit(X, y, groups=...)``; None without groups.
    group_thresholds_ : ndarray of shape (n_groups,) or None
        Each group's threshold, the exact empirical quantile on that group's training rows, so
        the constraint holds in every group there; None without groups.
    coef_ : ndarray of shape (1, n_features_in_)
        Linear models only, in the original feature units.
    intercept_ : ndarray of shape (1,)
        Linear models only; ``X @ coef_.T + intercept_`` equals :meth:`decision_function`.
        With groups the thresholds are not in it: ``decision_function(X, groups)`` is
        ``X @ coef_.T + intercept_ - group_thresholds_[code of the row's group]``.
    model_ : torch.nn.Module
        The trained scoring function; it takes standardised features ``(x - mean_) / scale_``.
    mean_, scale_ : ndarray of shape (n_features_in_,)
        The standardisation learned in ``fit`` (zeros and ones with ``standardize=False``),
        computed without overflow (a cell of 1e308 does not zero its column).
    loss_curve_ : list of float
        Mean training loss per epoch of the selected restart.
    validation_curve_ : list of float or None
        Validation metric per epoch (entry 0 is the start).
    restart_losses_ : list of float
    train_loss_ : float
    n_iter_ : int
        Epochs run by the selected restart (before early stopping restored its best epoch).
    best_epoch_ : int or None
        The epoch kept by early stopping (0: the start), None without it.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    quantile_surrogate.training.train : the training loop, without scikit-learn.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(500, weights=[0.9, 0.1], random_state=0)
    >>> clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y)
    >>> bool((clf.predict(X)[y == 1] == 1).mean() >= 0.9)  # the recall constraint on training data
    True

    Group-wise constraints (equal opportunity: recall >= 0.9 in each group):

    >>> groups = np.where(X[:, 0] > 0, "a", "b")
    >>> clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y, groups=groups)
    >>> predicted = clf.predict(X, groups=groups) == 1
    >>> [bool(predicted[(y == 1) & (groups == g)].mean() >= 0.9) for g in clf.groups_]
    [True, True]
    """

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": [Interval(Real, 0, 1, closed="neither"), None],
        "form": [StrOptions({"fp", "tp"})],
        "quantile": [StrOptions(set(QUANTILE_ESTIMATORS)), callable],
        "bandwidth": [Interval(Real, 0, None, closed="neither")],
        "surrogate": [StrOptions(set(SURROGATES))],
        "hidden_layer_sizes": ["array-like"],
        "module_factory": [callable, None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "subset_batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "subset_from_batch": ["boolean"],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"random", "logistic", "mixed"})],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "refit": ["boolean"],
        "standardize": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str, torch.device],
        "checkpoint": [str, os.PathLike, None],
    }

    def __init__(
        self,
        objective="precision_at_recall",
        target=None,
        *,
        form="fp",
        quantile="kernel",
        bandwidth=0.05,
        surrogate="logistic",
        hidden_layer_sizes=(),
        module_factory=None,
        alpha=1e-3,
        learning_rate=0.1,
        momentum=0.9,
        batch_size="auto",
        subset_batch_size=None,
        subset_from_batch=False,
        max_epochs=200,
        n_restarts=3,
        init="mixed",
        early_stopping="auto",
        validation_fraction=0.2,
        n_iter_no_change=20,
        refit=False,
        standardize=True,
        random_state=None,
        verbose=False,
        device="cpu",
        checkpoint=None,
    ):
        self.objective = objective
        self.target = target
        self.form = form
        self.quantile = quantile
        self.bandwidth = bandwidth
        self.surrogate = surrogate
        self.hidden_layer_sizes = hidden_layer_sizes
        self.module_factory = module_factory
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.subset_batch_size = subset_batch_size
        self.subset_from_batch = subset_from_batch
        self.max_epochs = max_epochs
        self.n_restarts = n_restarts
        self.init = init
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.refit = refit
        self.standardize = standardize
        self.random_state = random_state
        self.verbose = verbose
        self.device = device
        self.checkpoint = checkpoint

    # -- settings resolved at fit time ------------------------------------------------------
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

    def _split(self, y01, seed, codes=None):
        """Indices (fit, validation) for early stopping, or (all, None) when a class is too small to split.

        With group codes the split is stratified by (class, group), so every group keeps its
        rows of A on both sides; a (class, group) cell with fewer than
        MIN_VALIDATION_ROWS_PER_CLASS rows means no split.
        """
        n = y01.shape[0]
        strata = y01 if codes is None else y01 + 2 * codes  # an empty (class, group) cell is no constraint
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

    # -- the steps of fit --------------------------------------------------------------------
    def _working_tensor(self, X, order):
        """The one working copy of the data: rows in ``order``, standardised, float64 (float32 on a GPU), as torch.

        Ordering the rows as (fit rows, validation rows) makes both parts views of one array,
        so a validation split costs no second copy of X.
        """
        if self.standardize:
            self.mean_, self.scale_ = standardizer(X)
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

    def _scorer_factory(self, n_features):
        hidden, module_factory = self._hidden_sizes(), self.module_factory
        return lambda: build_scorer(n_features, hidden, module_factory)

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

    # -- the estimator API -------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, groups=None):
        """Train on ``X`` of shape (n, d) and ``y`` of shape (n,) with exactly two classes; returns self.

        ``groups`` (optional, shape (n,), any labels such as strings or integers) asks for the
        constraint in every group: each group's rows are compared with their own threshold
        ``q(f(A \\cap G_g), 1 - target)`` in the loss (:func:`~quantile_surrogate.losses.rate_constrained_loss`
        with ``groups``) and in ``group_thresholds_``. With ``precision_at_rate`` that is the
        same predicted positive rate in every group (demographic parity), with
        ``precision_at_recall`` recall >= target in every group (equal opportunity), with
        ``recall_at_fpr`` FPR <= target in every group. Every group needs a row of A.

        The steps: validate and encode the labels and groups, draw the seed, split off the
        validation rows, make one standardised working copy (the only NumPy -> torch crossing),
        :func:`~quantile_surrogate.training.train`, optionally refit on every row, score the
        training rows (the way back) and set ``threshold_`` at their exact empirical quantile.
        """
        X, y01 = self._validate_training_data(X, y)
        codes = self._encode_fit_groups(groups, y01)
        self._hidden_sizes()
        seed = self._draw_seed()
        fit_rows, val_rows = self._split(y01, seed, codes)
        order = None if val_rows is None else np.concatenate([fit_rows, val_rows])
        if order is not None:
            y01 = y01[order]
            codes = None if codes is None else codes[order]
        Xt = self._working_tensor(X, order)
        del X
        yt = torch.as_tensor(y01, device=Xt.device)
        gt = None if codes is None else torch.as_tensor(codes, device=Xt.device)
        n_fit = len(fit_rows)
        validation = None if val_rows is None else (Xt[n_fit:], yt[n_fit:]) + (() if gt is None else (gt[n_fit:],))
        factory = self._scorer_factory(Xt.shape[1])
        settings = self._train_settings(seed, n_fit)
        result = train(
            factory, Xt[:n_fit], yt[:n_fit], groups=None if gt is None else gt[:n_fit],
            max_epochs=self.max_epochs, n_restarts=self.n_restarts, init=self.init,
            early_stopping=self._early_stopping(len(y01)), n_iter_no_change=self.n_iter_no_change,
            validation=validation, select="loss" if validation is None else "validation",
            checkpoint=self.checkpoint, **settings,
        )
        self._keep_result(result)
        if validation is not None and self.refit:
            self._refit_on_all_rows(result, factory, Xt, yt, gt, settings)
        scores = predict_scores(self.model_, Xt).double().cpu().numpy()
        self._check_scores_finite(scores)
        self._set_threshold(scores, y01, codes)
        self._set_linear_coefficients()
        return self

    def _raw_scores(self, X) -> np.ndarray:
        """``f((x - mean_) / scale_)`` for validated ``X``, shape (n,), float64."""
        device = next(self.model_.parameters(), torch.empty(0)).device
        dtype = next(self.model_.parameters(), torch.empty(0, dtype=torch.float64)).dtype
        work = standardize_columns(X, self.mean_, self.scale_)
        return predict_scores(self.model_, torch.as_tensor(work, dtype=dtype, device=device)).double().cpu().numpy()
