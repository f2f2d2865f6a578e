"""The tree-library adapters: LightGBM and XGBoost custom objectives built on the maths.

:func:`lightgbm_objective` and :func:`xgboost_objective` check their settings once and return
a :class:`BoostingObjective`, a frozen (picklable) callable that each library accepts as its
custom objective: it reads the labels and row weights from whatever the library passes
(a ``lightgbm.Dataset``, an ``xgboost.DMatrix``, or the scikit-learn wrappers' arrays) and
returns the ``(grad, hess)`` of
:func:`~quantile_surrogate.boosting.gradient.objective_gradient_hessian`. Neither library is
imported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._utils.checks import check_bandwidth, check_number, check_option, check_target
from ..losses import SURROGATES
from ..objectives import get_objective
from ..quantiles import resolve_quantile
from .gradient import GradientHessian, objective_gradient_hessian

__all__ = [
    "BoostingObjective",
    "lightgbm_objective",
    "xgboost_objective",
]

GROUPS_LENGTH_MESSAGE = (
    "`groups` has {codes} codes but the library passed {rows} rows; build the objective with one group code per "
    "training row."
)
LOGLOSS_WEIGHT_MESSAGE = "`logloss_weight` must be a finite number >= 0; got {value!r}. 0 is the pure quantile loss."
MIN_HESSIAN_MESSAGE = "`min_hessian` must be a finite number > 0; got {value!r}, e.g. 1e-6."
GROUP_CODES_MESSAGE = (
    "`groups` must be a 1-D array of integer codes 0..G-1, one per training row; encode labels with "
    "numpy.unique(..., return_inverse=True)."
)


def _dataset_labels_and_weights(data):
    """``(labels, weights)`` of a LightGBM Dataset or an XGBoost DMatrix (weights None if unset)."""
    labels = np.asarray(data.get_label())
    weights = data.get_weight()
    if weights is not None and np.size(weights) == 0:
        weights = None
    return labels, weights


@dataclass(frozen=True)
class BoostingObjective:
    """A custom objective for LightGBM and XGBoost, built by :func:`lightgbm_objective` / :func:`xgboost_objective`.

    Called as ``fn(preds, dataset)`` (``lgb.train``: a ``lightgbm.Dataset``; ``xgb.train``:
    an ``xgboost.DMatrix``) or ``fn(y_true, y_pred, sample_weight=None)`` (``LGBMClassifier``,
    ``XGBClassifier``); returns ``(grad, hess)`` shaped like the predictions. The library's
    row weights, if any and not all 1, become frequency weights of the loss. Build it with
    the factories, which check the settings; a frozen dataclass, so it pickles with the model.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1), default=0.9
        The recall, rate or FPR.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Attributes
    ----------
    objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian
        As in Parameters (checked by the factories).

    See Also
    --------
    objective_gradient_hessian : The maths of each call.

    Examples
    --------
    >>> from quantile_surrogate.boosting import lightgbm_objective
    >>> fn = lightgbm_objective("recall_at_fpr", target=0.1)
    >>> fn.objective, fn.target, fn.quantile
    ('recall_at_fpr', 0.1, 'kernel')
    >>> out = fn.gradient_hessian([0.5, -0.5, 0.0], [1, 0, 0])  # the GradientHessian of one round
    >>> out.grad.shape
    (3,)
    """

    objective: str = "precision_at_recall"
    target: float = 0.9
    form: str = "fp"
    quantile: object = "kernel"
    bandwidth: float = 0.05
    surrogate: str = "logistic"
    groups: np.ndarray | None = None
    logloss_weight: float = 0.0
    min_hessian: float = 1e-6

    def gradient_hessian(self, scores, labels, sample_weight=None) -> GradientHessian:
        """:func:`objective_gradient_hessian` with these settings (and the library's row weights)."""
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        if self.groups is not None and np.shape(self.groups) != scores.shape:
            raise ValueError(GROUPS_LENGTH_MESSAGE.format(codes=np.size(self.groups), rows=scores.size))
        return objective_gradient_hessian(
            scores, labels, objective=self.objective, target=self.target, form=self.form, quantile=self.quantile,
            bandwidth=self.bandwidth, surrogate=self.surrogate, groups=self.groups,
            logloss_weight=self.logloss_weight, min_hessian=self.min_hessian, sample_weight=sample_weight)

    def __call__(self, first, second, sample_weight=None):
        """``(grad, hess)`` for ``(preds, dataset)`` (``lgb.train``, ``xgb.train``) or ``(y_true, y_pred[, weight])``."""
        if hasattr(second, "get_label"):  # lgb.train / xgb.train: (preds, Dataset or DMatrix)
            preds = first
            labels, sample_weight = _dataset_labels_and_weights(second)
        else:  # the scikit-learn wrappers: (y_true, y_pred[, weight])
            labels, preds = first, second
        if sample_weight is not None and np.all(np.asarray(sample_weight) == 1):
            sample_weight = None  # unit weights: the unweighted path, bit for bit
        preds = np.asarray(preds)
        out = self.gradient_hessian(preds, labels, sample_weight)
        return out.grad.reshape(preds.shape), out.hess.reshape(preds.shape)


def _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian):
    spec = get_objective(objective)
    target = spec.default_target if target is None else check_target(target, spec.target_keyword)
    check_option(form, spec.forms(), "form")
    resolve_quantile(quantile, bandwidth)  # a TypeError / ValueError for a bad name, here and not mid-training
    bandwidth = check_bandwidth(bandwidth)
    check_option(surrogate, SURROGATES, "surrogate")
    logloss_weight = check_number(logloss_weight, "logloss_weight")
    if not (math.isfinite(logloss_weight) and logloss_weight >= 0):
        raise ValueError(LOGLOSS_WEIGHT_MESSAGE.format(value=logloss_weight))
    min_hessian = check_number(min_hessian, "min_hessian")
    if not (math.isfinite(min_hessian) and min_hessian > 0):
        raise ValueError(MIN_HESSIAN_MESSAGE.format(value=min_hessian))
    if groups is not None:
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.dtype.kind not in "iu" or (groups.size and groups.min() < 0):
            raise ValueError(GROUP_CODES_MESSAGE)
    return BoostingObjective(spec.name, target, form, quantile, bandwidth, surrogate, groups, logloss_weight,
                             min_hessian)


def lightgbm_objective(objective="precision_at_recall", target=0.9, *, form="fp", quantile="kernel",
                       bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                       min_hessian=1e-6) -> BoostingObjective:
    r"""A LightGBM custom objective for ``objective`` at ``target``.

    Pass it as ``lgb.train(params={"objective": fn, ...})`` or ``LGBMClassifier(objective=fn)``.
    With a custom objective LightGBM returns raw margins: use ``predict(..., raw_score=True)``
    and threshold them yourself (e.g. with :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold`),
    or use :class:`~quantile_surrogate.estimators.QuantileBoostingClassifier`, which does. To start
    from a log-loss model pass its margins as ``init_score`` or the model as ``init_model``.
    Arguments are checked here, not mid-training.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Returns
    -------
    BoostingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``,
        returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, or ``groups`` is not 1-D of codes >= 0.

    See Also
    --------
    xgboost_objective : The same for XGBoost.
    objective_gradient_hessian : The maths.

    Notes
    -----
    Each round gets the gradient and a positive diagonal Hessian of

    .. math::
        L(F) = \sum_{i \in P} l\big(\pm(F_i - \theta(F))\big), \qquad \theta = \hat q(F_A, 1 - c),

    the objective's loss (eq. (7), (9)/(10) or the Neyman-Pearson form) summed over its
    penalised rows, through the threshold (:func:`objective_gradient_hessian`).

    Examples
    --------
    The objective as the scikit-learn wrappers call it, ``fn(y_true, y_pred)``:

    >>> from quantile_surrogate.boosting import lightgbm_objective
    >>> fn = lightgbm_objective("precision_at_recall", target=0.5, quantile="point")
    >>> grad, hess = fn([1, 1, 0], [0.0, 2.0, 0.0])
    >>> grad.tolist(), hess.tolist()
    ([-0.5, 0.0, 0.5], [0.25, 1e-06, 0.25])

    Training a booster (needs the ``boost`` extra):

    >>> import lightgbm as lgb
    >>> import numpy as np
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    >>> params = {"objective": lightgbm_objective(target=0.8), "verbose": -1, "num_threads": 1}
    >>> booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=10)
    >>> margins = booster.predict(X, raw_score=True)
    >>> bool(precision_at_recall(y, margins, 0.8) > y.mean())  # better than flagging every row
    True
    """
    return _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)


def xgboost_objective(objective="precision_at_recall", target=0.9, *, form="fp", quantile="kernel",
                      bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                      min_hessian=1e-6) -> BoostingObjective:
    r"""An XGBoost custom objective, for ``xgb.train(params, dtrain, obj=fn)`` or ``XGBClassifier(objective=fn)``.

    The same maths as :func:`lightgbm_objective`. XGBoost passes margins to a custom
    objective; predict with ``output_margin=True``. Start from a log-loss model with
    ``base_margin=`` or ``xgb_model=``. Arguments are checked here, not mid-training.

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``.
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` (eq. (9) or (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or a callable.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth ``h``.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    groups : array of int of shape (n,), optional
        Group codes ``0..G-1``, one per training row in the training set's order: one
        threshold per group.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss (0 is the pure quantile loss).
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Returns
    -------
    BoostingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``,
        returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, or ``groups`` is not 1-D of codes >= 0.

    See Also
    --------
    lightgbm_objective : The same for LightGBM.
    objective_gradient_hessian : The maths.

    Notes
    -----
    Each round gets the gradient and a positive diagonal Hessian of

    .. math::
        L(F) = \sum_{i \in P} l\big(\pm(F_i - \theta(F))\big), \qquad \theta = \hat q(F_A, 1 - c),

    the objective's loss (eq. (7), (9)/(10) or the Neyman-Pearson form) summed over its
    penalised rows, through the threshold (:func:`objective_gradient_hessian`).

    Examples
    --------
    >>> import numpy as np
    >>> import xgboost as xgb
    >>> from quantile_surrogate.boosting import xgboost_objective
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    >>> fn = xgboost_objective("precision_at_recall", target=0.8)
    >>> booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=y), num_boost_round=10, obj=fn)
    >>> margins = booster.predict(xgb.DMatrix(X), output_margin=True)
    >>> bool(precision_at_recall(y, margins, 0.8) > y.mean())
    True
    """
    return _build(objective, target, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)
