"""``QuantileBoostingClassifier``: gradient-boosted trees trained for a rate-constrained operating point.

Requires LightGBM or XGBoost (``pip install 'quantile-surrogate[boost]'``); they are imported
only when ``fit`` runs, so this module imports without them.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ..boosting import lightgbm_objective, xgboost_objective
from ..losses import SURROGATES
from ..objectives import OBJECTIVES
from ..quantiles import QUANTILE_ESTIMATORS
from ..selection._scorer import FoldData, HeldOutCurve
from ..selection._splits import shuffle_splits
from ..selection._start_rule import select_rounds
from ._boosting_backends import BACKENDS, make_backend
from ._threshold import TARGET_CONSTRAINT, ThresholdedClassifier
from .._utils.checks import check_sample_weight
from .._utils.errors import TrainingDivergedError
from .._utils.sparse import SPARSE_INPUT

__all__ = ["QuantileBoostingClassifier", "FORM_MESSAGE"]

#: The ``ValueError`` message of ``fit`` for a ``form`` the objective has not.
FORM_MESSAGE = "`form` must be one of {forms} for objective={objective!r}; got {form!r}."

AUTO_SINGLE_SPLIT_ROWS = 10_000
"""``validation_splits="auto"``: one validation split above this many training rows, three below."""

AUTO_BANDWIDTH_ROWS = 30
"""``bandwidth="auto"`` is ``30 / |A|`` (clipped to [0.05, 0.3]): about 60 rows of A inside the kernel's +-h."""


def adopt_booster(estimator, engine, start, booster, k: int, bandwidth, curve) -> None:
    """Set a boosted estimator's fitted model: ``booster`` cut after ``k`` quantile rounds over the start's trees.

    With its counts (``booster_``, ``backend_``, ``bandwidth_``, ``n_logloss_estimators_``,
    ``best_iteration_``, ``validation_curve_``); :class:`QuantileBoostingClassifier` and the Dask estimator
    share it.
    """
    estimator.booster_ = engine.truncate(booster, engine.n_trees(start) + k)
    estimator.backend_ = engine.name
    estimator.bandwidth_ = bandwidth
    estimator.n_logloss_estimators_ = engine.n_trees(start)
    estimator.best_iteration_ = engine.n_trees(estimator.booster_) - estimator.n_logloss_estimators_
    estimator.validation_curve_ = curve


class QuantileBoostingClassifier(ThresholdedClassifier):
    r"""Gradient-boosted trees (LightGBM or XGBoost) trained for a rate-constrained operating point.

    Boosting fits every tree to the gradient and Hessian of a loss of the raw scores, so the
    quantile losses of Mackey, Luo & Eban (2018) apply unchanged
    (:func:`~quantile_surrogate.boosting.objective_gradient_hessian`: eq. (7) for precision at
    recall, eqs. (9)/(10) for precision at a rate, the threshold's dependence on the scores
    of ``A`` included). ``fit`` runs in three steps:

    1. **Start from the log-loss model**: ``n_estimators`` rounds of the backend's own
       binary log loss, with the same tree settings (this is "LightGBM + threshold").
    2. **Choose the number of quantile rounds** ``k`` in ``0..n_quantile_estimators``:
       on ``validation_splits`` stratified splits (``validation_fraction`` held out), train
       step 1 on the rest, continue with the quantile objective and record the objective's
       exact metric on the held-out rows after every round; ``k`` maximises its mean over
       the splits, ties going to the lower held-out quantile loss, except that the start
       (``k = 0``) wins every tie: a quantile round is kept only where it raised the
       held-out metric, otherwise the model is the log-loss one.
    3. **Refit on every row** (``refit=True``, the default): step 1, then ``k`` quantile rounds.
       With ``refit=False`` the first split's model, cut after ``k`` quantile rounds, is kept:
       trained on 80 % of the rows, it lost 0.032 to LightGBM + threshold at 5 % on a set of 16,384
       training rows, where it was the default until issue 24 (``docs/boosting.md``). Either way
       ``threshold_`` is the exact empirical quantile of the training scores
       (:func:`~quantile_surrogate.objectives.thresholds.constraint_threshold`), so the constraint
       holds on the training rows.

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
        The metric to maximise under its rate constraint (:data:`~quantile_surrogate.objectives.OBJECTIVES`).
    target : float in (0, 1) or None, default=None
        The recall, predicted positive rate or FPR; None is the objective's default target.
    form : {"fp", "tp"}, default="fp"
        For ``precision_at_rate``: bound the false positives (eq. (9)) or the true positives (eq. (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or ``f(scores, level)``.
    bandwidth : float > 0 or "auto", default="auto"
        Kernel bandwidth on the rank scale. "auto" is ``30 / |A|`` clipped to [0.05, 0.3]
        (``|A|``: the training rows of ``A``, the smallest group's with groups), so that
        about 60 rows of ``A`` lie within ``+-h`` of the level: a tree fits each row's
        gradient, and a threshold pull concentrated on a dozen positives overfits them
        (docs/boosting.md has the measurement).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 loss.
    backend : {"lightgbm", "xgboost"}, default="lightgbm"
    n_estimators : int >= 1, default=100
        Log-loss rounds of the starting model.
    n_quantile_estimators : int >= 0 or None, default=None
        The most quantile rounds; None means ``n_estimators``.
    learning_rate : float > 0, default=0.1
        For both stages.
    num_leaves : int >= 2 or None, default=None
        LightGBM ``num_leaves`` (None: 31) or XGBoost ``max_leaves`` (None: no limit).
    max_depth : int or None, default=None
        None: the backend's default (LightGBM -1, no limit; XGBoost 6).
    min_child_samples : int >= 1 or None, default=None
        LightGBM ``min_child_samples`` (None: 20); must be None for XGBoost.
    backend_params : dict or None, default=None
        Other parameters of the backend (``lambda_l2``, ``subsample``, ``num_threads``, ...).
    logloss_weight : float >= 0, default=0.0
        Adds this multiple of the log loss to the quantile loss in step 2.
    early_stopping : bool, default=True
        False skips step 2's selection and keeps all ``n_quantile_estimators`` rounds.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out in each validation split of step 2.
    validation_splits : int >= 1 or "auto", default="auto"
        "auto": 3 up to 10,000 rows (a held-out metric on few rows is noisy), 1 above.
    n_iter_no_change : int >= 1 or None, default=20
        Stop a validation run after this many rounds without a better metric.
    refit : bool or "auto", default=True
        Refit on every row after the selection (one more log-loss fit and ``k`` rounds); False keeps
        the first validation split's model. "auto" (the default before issue 24, which kept that
        model above 10,000 rows) is now True.
    random_state : int, RandomState or None, default=None
        Seeds the validation splits and the backend.
    verbose : bool or int, default=False
        Print the selected number of rounds and the held-out metric.

    Attributes
    ----------
    booster_ : lightgbm.Booster or xgboost.Booster
        The whole model, log-loss trees then quantile trees; its raw score is ``f(x)``:
        ``booster_.predict(X, raw_score=True)`` (LightGBM) or
        ``booster_.predict(xgboost.DMatrix(X), output_margin=True)`` (XGBoost). The starting
        margin (LightGBM's averaged first-tree score, XGBoost's ``base_score``) is inside it,
        so the backend's own text format (``booster_.model_to_string()``; XGBoost
        ``booster_.save_raw("json")``) plus ``threshold_`` and ``classes_`` is the model.
    backend_ : str
        "lightgbm" or "xgboost".
    n_logloss_estimators_ : int
        Trees of the starting log-loss model (``n_estimators``, fewer if the backend found no split).
    bandwidth_ : float
        The bandwidth used (``bandwidth``, or its "auto" value on the training rows).
    best_iteration_ : int
        Quantile rounds kept (``k``); ``booster_`` has ``n_logloss_estimators_ + best_iteration_`` trees.
    validation_curve_ : ndarray of shape (rounds + 1, 2) or None
        Mean held-out (metric, loss) after 0, 1, ... quantile rounds; None without selection.
    threshold_ : float, or ndarray of shape (n_groups,) with groups
        The decision threshold on ``f(x)``: ``decision_function(X) = f(x) - threshold_``.
    groups_, group_thresholds_ : ndarray or None
        As in :class:`~quantile_surrogate.QuantileClassifier`.
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Raises
    ------
    ValueError
        From ``fit``: a ``form`` the objective has not, or a group without a row of ``A``.
    TrainingDivergedError
        From ``fit``: scores that became NaN or inf (lower ``learning_rate``).
    ImportError
        From ``fit``, when the chosen backend is not installed.

    See Also
    --------
    quantile_surrogate.QuantileClassifier : A linear model or MLP trained on the same losses.
    quantile_surrogate.boosting.objective_gradient_hessian : The gradient and Hessian each tree fits.

    Notes
    -----
    The quantile rounds minimise, for precision at recall ``c`` (eq. (7)),

    .. math::
        \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - c)\big),

    and eq. (9) or (10) for precision at a rate. Missing values (NaN) in ``X`` are allowed:
    both backends route them natively.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(600, weights=[0.8, 0.2], random_state=0)
    >>> clf = QuantileBoostingClassifier(target=0.9, n_estimators=20, random_state=0,
    ...                                  backend_params={"num_threads": 1}).fit(X, y)  # one thread: tiny data
    >>> bool((clf.predict(X)[y == 1] == 1).mean() >= 0.9)  # the recall constraint on training data
    True
    """

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": TARGET_CONSTRAINT,
        "form": [StrOptions({"fp", "tp"})],
        "quantile": [StrOptions(set(QUANTILE_ESTIMATORS)), callable],
        "bandwidth": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "surrogate": [StrOptions(set(SURROGATES))],
        "backend": [StrOptions(set(BACKENDS))],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "n_quantile_estimators": [Interval(Integral, 0, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, None, closed="left"), None],
        "max_depth": [Interval(Integral, None, None, closed="neither"), None],
        "min_child_samples": [Interval(Integral, 1, None, closed="left"), None],
        "backend_params": [dict, None],
        "logloss_weight": [Interval(Real, 0, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "validation_splits": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "refit": ["boolean", StrOptions({"auto"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, objective="precision_at_recall", target=None, form="fp", quantile="kernel",
                 bandwidth="auto", surrogate="logistic", backend="lightgbm", n_estimators=100,
                 n_quantile_estimators=None, learning_rate=0.1, num_leaves=None, max_depth=None,
                 min_child_samples=None, backend_params=None, logloss_weight=0.0, early_stopping=True,
                 validation_fraction=0.2, validation_splits="auto", n_iter_no_change=20, refit=True,
                 random_state=None, verbose=False):
        self.objective = objective
        self.target = target
        self.form = form
        self.quantile = quantile
        self.bandwidth = bandwidth
        self.surrogate = surrogate
        self.backend = backend
        self.n_estimators = n_estimators
        self.n_quantile_estimators = n_quantile_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.backend_params = backend_params
        self.logloss_weight = logloss_weight
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.validation_splits = validation_splits
        self.n_iter_no_change = n_iter_no_change
        self.refit = refit
        self.random_state = random_state
        self.verbose = verbose

    _sparse_input = SPARSE_INPUT  # LightGBM and XGBoost take SciPy CSR rows as they are

    def _allows_nan(self) -> bool:
        return True  # a tree sends a missing value down its learned default branch

    # -- helpers ------------------------------------------------------------------------------

    def _bandwidth(self, y01, codes):
        """``bandwidth="auto"``: ``30 / |A|`` clipped to [0.05, 0.3], ``|A|`` the smallest group's rows of A."""
        if self.bandwidth != "auto":
            return float(self.bandwidth)
        in_subset = self._objective_spec().subset_mask(y01 == 1)
        counts = np.bincount(codes[in_subset]) if codes is not None else [in_subset.sum()]
        return float(np.clip(AUTO_BANDWIDTH_ROWS / max(min(counts), 1), 0.05, 0.3))

    def _objective_fn(self, target, y01, codes):
        factory = lightgbm_objective if self.backend == "lightgbm" else xgboost_objective
        return factory(self.objective, target, form=self.form, quantile=self.quantile,
                       bandwidth=self._bandwidth(y01, codes), surrogate=self.surrogate, groups=codes,
                       logloss_weight=self.logloss_weight)

    def _backend(self, seed):
        return make_backend(self.backend, learning_rate=self.learning_rate, num_leaves=self.num_leaves,
                            max_depth=self.max_depth, min_child_samples=self.min_child_samples, seed=seed,
                            backend_params=self.backend_params)

    def _raw_scores(self, X) -> np.ndarray:
        # The backend object is rebuilt on demand, not pickled: the booster is the model.
        return BACKENDS[self.backend_]({}).margins(self.booster_, X)

    def _start_raw_scores(self, X) -> np.ndarray:
        """The margins of step 1's log-loss trees alone (LightGBM + threshold's scores) for validated ``X``."""
        engine = BACKENDS[self.backend_]({})
        return engine.margins(engine.truncate(self.booster_, self.n_logloss_estimators_), X)

    def _splits(self, y01, codes, seed):
        """Stratified (fit, validation) index pairs (:func:`~quantile_surrogate.selection._splits.shuffle_splits`)."""
        n_splits = self.validation_splits
        if n_splits == "auto":
            n_splits = 1 if len(y01) > AUTO_SINGLE_SPLIT_ROWS else 3
        return shuffle_splits(y01, codes, fraction=self.validation_fraction, n_splits=n_splits, seed=seed)

    def _curve(self, y01, codes, target, weight, lazy_loss):
        """The held-out curve of one validation split (:class:`~quantile_surrogate.selection._scorer.HeldOutCurve`)."""
        settings = dict(objective=self.objective, target=target, form=self.form, quantile=self.quantile,
                        bandwidth=0.05, surrogate=self.surrogate)
        return HeldOutCurve(FoldData.from_labels(y01, codes, weight), settings, self.n_iter_no_change, lazy_loss)

    def _fit_path(self, engine, X, y01, codes, target, rounds, held_out=None, weight=None):
        """``(start, booster, bandwidth)``: the log-loss start, then up to ``rounds`` quantile rounds.

        ``held_out = (rows, curve)`` trains on the other rows and records each round on these.
        """
        fit_rows = np.arange(len(y01)) if held_out is None else np.setdiff1d(np.arange(len(y01)), held_out[0])
        data = engine.data(X[fit_rows], y01[fit_rows], **({} if weight is None else {"weight": weight[fit_rows]}))
        start = engine.fit_logloss(data, self.n_estimators)
        fit_codes = None if codes is None else codes[fit_rows]
        objective = self._objective_fn(target, y01[fit_rows], fit_codes)
        if held_out is None:
            return start, engine.continue_training(start, data, objective, rounds), objective.bandwidth
        rows, curve = held_out
        curve.settings["bandwidth"] = objective.bandwidth
        if curve(engine.margins(start, X[rows])) or rounds == 0:
            return start, start, objective.bandwidth
        validation = engine.data(X[rows], y01[rows], reference=data,
                                 **({} if weight is None else {"weight": weight[rows]}))
        booster = engine.continue_training(start, data, objective, rounds, validation=validation, after_round=curve)
        return start, booster, objective.bandwidth

    def _select_rounds(self, engine, X, y01, codes, target, rounds, seed, weight=None):
        """``(k, curve, kept)``: the quantile rounds with the best mean held-out metric, the mean curve and
        the first split's ``(start, booster, bandwidth)``."""
        pairs = self._splits(y01, codes, seed) if self.early_stopping and rounds > 0 else []
        if not pairs:
            return rounds, None, None
        curves, kept = [], None
        for split, (_, rows) in enumerate(pairs):
            curve = self._curve(y01[rows], None if codes is None else codes[rows], target,
                                None if weight is None else weight[rows], lazy_loss=len(pairs) == 1)
            path = self._fit_path(engine, X, y01, codes, target, rounds, held_out=(rows, curve), weight=weight)
            curves.append(curve.values())
            if split == 0:
                kept = path
        length = min(len(c) for c in curves)  # runs stopped early are compared on their common rounds
        curve = np.mean([c[:length] for c in curves], axis=0)
        return select_rounds(curve[:, 0], curve[:, 1]), curve, kept

    def _refit(self) -> bool:
        return self.refit == "auto" or bool(self.refit)

    # -- the estimator API --------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sample_weight=None, sensitive_features=None):
        """Fit on ``X`` (n, d) and two-class ``y`` (n,); ``sensitive_features`` (n,) asks for the constraint in every group.

        With ``sensitive_features`` each group gets its own threshold, in the loss (one quantile per
        group, :func:`~quantile_surrogate.boosting.objective_gradient_hessian`), in the
        held-out metric and in ``group_thresholds_``; every group needs a row of ``A``.
        ``sample_weight`` (frequency weights, >= 0) weights the log-loss start (the library's
        own weights), the quantile objective's sum and threshold
        (:func:`~quantile_surrogate.boosting.objective_gradient_hessian`), the held-out metric
        and ``threshold_``; an integer weight equals repeating the row. Returns self.
        """
        X, y01 = self._validate_training_data(X, y, ensure_all_finite="allow-nan")
        weight = None if sample_weight is None else check_sample_weight(sample_weight, len(y01))
        codes = self._encode_fit_groups(sensitive_features, y01)
        spec = self._objective_spec()
        if self.form not in spec.forms():
            raise ValueError(FORM_MESSAGE.format(forms=list(spec.forms()), objective=self.objective, form=self.form))
        target = self._target()
        random_state = self.random_state
        seed = int(random_state) if isinstance(random_state, Integral) else int(
            check_random_state(random_state).randint(np.iinfo(np.int32).max))
        engine = self._backend(seed)
        rounds = self.n_estimators if self.n_quantile_estimators is None else self.n_quantile_estimators
        k, curve, kept = self._select_rounds(engine, X, y01, codes, target, rounds, seed, weight)
        if kept is None or self._refit():
            start, booster, bandwidth = self._fit_path(engine, X, y01, codes, target, k, weight=weight)
        else:  # keep the first validation run's model, cut after k quantile rounds
            start, booster, bandwidth = kept
        adopt_booster(self, engine, start, booster, k, bandwidth, curve)
        scores = engine.margins(self.booster_, X)
        if not np.isfinite(scores).all():
            raise TrainingDivergedError("the boosted model's scores", "on the training rows", self.learning_rate)
        self._set_threshold(scores, y01, codes, sample_weight=weight)
        if self.verbose:
            shown = "" if curve is None else f", held-out metric {curve[k, 0]:.4f} (start {curve[0, 0]:.4f})"
            print(f"QuantileBoostingClassifier: {self.best_iteration_} quantile rounds kept{shown}")
        return self
