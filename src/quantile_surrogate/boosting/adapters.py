"""The tree-library adapters: LightGBM and XGBoost custom objectives built on the maths.

:func:`lightgbm_objective` and :func:`xgboost_objective` check their settings once and return
a :class:`BoostingObjective`, a frozen (picklable) callable that each library accepts as its
custom objective: it reads the labels and row weights from whatever the library passes
(a ``lightgbm.Dataset``, an ``xgboost.DMatrix``, or the scikit-learn wrappers' arrays) and
returns the ``(grad, hess)`` of
:func:`~quantile_surrogate.boosting.gradient.objective_gradient_hessian`. The per-query objective
``"precision_at_k"`` is a :class:`RankingObjective` instead: it reads the query sizes off the
library's data too (LightGBM ``Dataset.get_group()``, XGBoost ``DMatrix`` ``group_ptr``) and returns
:func:`~quantile_surrogate.boosting.ranking.precision_at_k_gradient_hessian`'s. Neither library is
imported here.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from .._utils.checks import check_bandwidth, check_number, check_option, check_target
from ..losses import SURROGATES
from ..objectives import get_objective
from ..quantiles import resolve_quantile
from ._collective import in_lightgbm_network, xgboost_communicator
from ._distributed import distributed_gradient_hessian
from ._hint import HINT_SLOTS, SelectionHint
from ._workspace import Workspace
from .gradient import GradientHessian, objective_gradient_hessian
from .ranking import RANKING_OBJECTIVES, check_ranking_settings, precision_at_k_gradient_hessian, query_codes

__all__ = [
    "BoostingObjective",
    "RankingObjective",
    "lightgbm_objective",
    "xgboost_objective",
]

GROUPS_LENGTH_MESSAGE = (
    "`groups` has {codes} codes but the library passed {rows} rows; build the objective with one group code per "
    "training row."
)
LOGLOSS_WEIGHT_MESSAGE = "`logloss_weight` must be a finite number >= 0; got {value!r}. 0 is the pure quantile loss."
MIN_HESSIAN_MESSAGE = "`min_hessian` must be a finite number > 0; got {value!r}, e.g. 1e-6."
#: ``ValueError`` of a :class:`RankingObjective` called on data without query groups.
NO_QUERY_GROUPS_MESSAGE = (
    "objective='precision_at_k' needs the query of every row, and the library passed none. LightGBM: "
    "lgb.Dataset(X, y, group=sizes) or LGBMRanker(objective=fn).fit(X, y, group=sizes); XGBoost: "
    "xgb.train(params, DMatrix(X, y, qid=...) or a DMatrix with set_group(sizes), obj=fn) (XGBRanker and "
    "XGBClassifier pass no groups to a custom objective)."
)
#: ``ValueError`` of a :class:`RankingObjective` called with row weights.
RANKING_WEIGHT_MESSAGE = (
    "objective='precision_at_k' does not take row weights (precision@k counts rows); the data has "
    "weights that are not all 1. Drop them from the Dataset / DMatrix."
)
#: ``ValueError`` of the factories for ``k`` and ``groups`` given to the wrong kind of objective.
RANKING_ARGUMENTS_MESSAGE = "{argument} is for {which}; got objective={objective!r}{given}. {fix}"
#: ``ValueError`` of a :class:`BoostingObjective` called by LightGBM training on several machines.
LIGHTGBM_DISTRIBUTED_MESSAGE = (
    "LightGBM is training on several machines (lightgbm.dask or `machines=`): a custom objective sees one "
    "worker's rows, so the threshold would be that worker's quantile, not the data's. Train on Dask with "
    "xgboost.dask.train(client, params, dtrain, obj=xgboost_objective(...)), which sets the global threshold "
    "exactly (docs/distributed.md), or with LightGBM on one machine."
)
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

    On several workers (``xgboost.dask.train``, where XGBoost's collective has more than one
    worker) each worker's call computes the threshold over every worker's rows, exactly, and
    returns its own rows' ``(grad, hess)``, row for row those of the concatenated data
    (docs/distributed.md, "Trees on Dask"); ``groups``, row weights and estimators other than
    ``"point"`` and the kernels raise ``ValueError`` there. Under LightGBM training on several
    machines (``lightgbm.dask``) it raises ``ValueError`` (``LIGHTGBM_DISTRIBUTED_MESSAGE``).

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
    # Each XGBoost worker's state between rounds, (rank, thread) -> (SelectionHint or None, Workspace): its memory
    # of the last threshold (boosting._hint: fewer reductions a round) and its per-row arrays (boosting._workspace:
    # no fresh memory a round). Never other numbers; one process's state, so it is not pickled with the settings.
    # By thread too: a threaded Dask worker may run two trainings with this object at once, each with its rank 0,
    # and a shared workspace would mix their rows (a training runs all its rounds in one thread).
    _workers: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __getstate__(self):
        return {name: value for name, value in self.__dict__.items() if name != "_workers"}

    def __setstate__(self, state):
        self.__dict__.update(state, _workers={})

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
        if in_lightgbm_network():
            raise ValueError(LIGHTGBM_DISTRIBUTED_MESSAGE)
        comm = xgboost_communicator()
        if comm is None:
            out = self.gradient_hessian(preds, labels, sample_weight)
        else:  # xgboost.dask: this worker's rows, the threshold over every worker's (docs/distributed.md)
            worker = (comm.rank, threading.get_ident())
            if worker not in self._workers:
                slots = HINT_SLOTS.get(self.quantile, 0) if isinstance(self.quantile, str) else 0
                self._workers[worker] = (SelectionHint(slots) if slots else None, Workspace())
            hint, workspace = self._workers[worker]
            out = distributed_gradient_hessian(
                comm, preds, labels, objective=self.objective, target=self.target, form=self.form,
                quantile=self.quantile, bandwidth=self.bandwidth, surrogate=self.surrogate, groups=self.groups,
                logloss_weight=self.logloss_weight, min_hessian=self.min_hessian, sample_weight=sample_weight,
                with_loss=False, hint=hint, workspace=workspace)  # a tree needs the gradient only; XGBoost copies it
        return out.grad.reshape(preds.shape), out.hess.reshape(preds.shape)


def _dataset_query_sizes(data):
    """Rows per query of a LightGBM Dataset (``get_group()``) or an XGBoost DMatrix (``group_ptr``), or None."""
    if hasattr(data, "get_uint_info"):  # XGBoost: boundaries [0, n_1, n_1 + n_2, ...], empty without groups
        pointers = np.asarray(data.get_uint_info("group_ptr"), dtype=np.int64)
        return np.diff(pointers) if pointers.size else None
    sizes = data.get_group()
    return None if sizes is None or np.size(sizes) == 0 else np.asarray(sizes)


@dataclass(frozen=True)
class RankingObjective:
    """Precision@k within each query as a LightGBM / XGBoost custom objective (``objective="precision_at_k"``).

    Built by :func:`lightgbm_objective` or :func:`xgboost_objective`. Called as
    ``fn(preds, dataset)`` (``lgb.train`` with a ``lightgbm.Dataset`` that has ``group=``;
    ``xgb.train`` with a ``DMatrix`` that has ``qid=`` or ``set_group``) or as
    ``fn(y_true, y_pred, weight, group)`` (``LGBMRanker(objective=fn)``); returns ``(grad, hess)``
    of :func:`~quantile_surrogate.boosting.ranking.precision_at_k_gradient_hessian`, the rows of
    each query consecutive, as both libraries store them. A frozen dataclass: it pickles.

    Parameters
    ----------
    k : int >= 1, default=5
        The ``K`` of precision@K.
    form : {"fp", "tp"}, default="fp"
        Eq. (9) or eq. (10) in each query.
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.segments.SEGMENT_ESTIMATORS`.
    bandwidth : float > 0, default=0.05
        The kernel bandwidth, on each query's own rank scale.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    logloss_weight : float >= 0, default=0.0
        Weight ``mu`` of an added log loss.
    min_hessian : float > 0, default=1e-6
        The floor of the Hessian.

    Attributes
    ----------
    objective : str
        ``"precision_at_k"``.

    See Also
    --------
    precision_at_k_gradient_hessian : The maths of each call.

    Examples
    --------
    >>> from quantile_surrogate.boosting import lightgbm_objective
    >>> fn = lightgbm_objective("precision_at_k", k=1, quantile="point")
    >>> grad, hess = fn([1, 0, 0], [0.0, 1.0, 2.0], None, [3])  # LGBMRanker's call: one query of 3 rows
    >>> grad.shape, bool((hess > 0).all())
    ((3,), True)
    """

    k: int = 5
    form: str = "fp"
    quantile: str = "kernel"
    bandwidth: float = 0.05
    surrogate: str = "logistic"
    logloss_weight: float = 0.0
    min_hessian: float = 1e-6
    objective = "precision_at_k"  # a class attribute, not a field: the one ranking objective

    def gradient_hessian(self, scores, labels, sizes) -> GradientHessian:
        """:func:`precision_at_k_gradient_hessian` with these settings, the queries given by their ``sizes``."""
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        return precision_at_k_gradient_hessian(
            scores, labels, self.k, query=query_codes(sizes, scores.size), form=self.form, quantile=self.quantile,
            bandwidth=self.bandwidth, surrogate=self.surrogate, logloss_weight=self.logloss_weight,
            min_hessian=self.min_hessian)

    def __call__(self, first, second, weight=None, group=None):
        """``(grad, hess)`` for ``(preds, dataset)`` or LightGBM's ranker call ``(y_true, y_pred, weight, group)``."""
        if hasattr(second, "get_label"):
            preds = first
            labels, weight = _dataset_labels_and_weights(second)
            group = _dataset_query_sizes(second)
        else:
            labels, preds = first, second
        if group is None or np.size(group) == 0:
            raise ValueError(NO_QUERY_GROUPS_MESSAGE)
        if weight is not None and np.size(weight) and not np.all(np.asarray(weight) == 1):
            raise ValueError(RANKING_WEIGHT_MESSAGE)
        preds = np.asarray(preds)
        out = self.gradient_hessian(preds, labels, group)
        return out.grad.reshape(preds.shape), out.hess.reshape(preds.shape)


def _check_mixing(logloss_weight, min_hessian):
    """``(logloss_weight, min_hessian)`` checked: a finite number >= 0 and a finite number > 0."""
    logloss_weight = check_number(logloss_weight, "logloss_weight")
    if not (math.isfinite(logloss_weight) and logloss_weight >= 0):
        raise ValueError(LOGLOSS_WEIGHT_MESSAGE.format(value=logloss_weight))
    min_hessian = check_number(min_hessian, "min_hessian")
    if not (math.isfinite(min_hessian) and min_hessian > 0):
        raise ValueError(MIN_HESSIAN_MESSAGE.format(value=min_hessian))
    return logloss_weight, min_hessian


def _build_ranking(objective, k, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian):
    if groups is not None:
        raise ValueError(RANKING_ARGUMENTS_MESSAGE.format(
            argument="`groups`", which="the rate objectives (one threshold per group)", given=" with `groups`",
            objective=objective, fix="precision_at_k reads its queries from the Dataset / DMatrix."))
    if k is None:
        raise ValueError(RANKING_ARGUMENTS_MESSAGE.format(
            argument="`k`", which="precision_at_k, and it is required", given=" without `k`", objective=objective,
            fix="Pass k=, e.g. k=5 for precision@5."))
    bandwidth = check_ranking_settings(k, form, quantile, bandwidth, surrogate, "sum", False)
    logloss_weight, min_hessian = _check_mixing(logloss_weight, min_hessian)
    return RankingObjective(k, form, quantile, bandwidth, surrogate, logloss_weight, min_hessian)


def _build(objective, target, k, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian):
    if objective in RANKING_OBJECTIVES:
        return _build_ranking(objective, k, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)
    if k is not None:
        raise ValueError(RANKING_ARGUMENTS_MESSAGE.format(
            argument="`k`", which="objective='precision_at_k' only", given=f" with k={k!r}", objective=objective,
            fix="A rate objective takes its level as `target`."))
    spec = get_objective(objective)
    target = spec.default_target if target is None else check_target(target, spec.target_keyword)
    check_option(form, spec.forms(), "form")
    resolve_quantile(quantile, bandwidth)  # a TypeError / ValueError for a bad name, here and not mid-training
    bandwidth = check_bandwidth(bandwidth)
    check_option(surrogate, SURROGATES, "surrogate")
    logloss_weight, min_hessian = _check_mixing(logloss_weight, min_hessian)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.dtype.kind not in "iu" or (groups.size and groups.min() < 0):
            raise ValueError(GROUP_CODES_MESSAGE)
    return BoostingObjective(spec.name, target, form, quantile, bandwidth, surrogate, groups, logloss_weight,
                             min_hessian)


def lightgbm_objective(objective="precision_at_recall", target=0.9, *, k=None, form="fp", quantile="kernel",
                       bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                       min_hessian=1e-6) -> BoostingObjective | RankingObjective:
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
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`, or ``"precision_at_k"``:
        precision@k within each query, one threshold per query read off the library's data
        (a :class:`RankingObjective`).
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``. Ignored by
        ``"precision_at_k"``, whose level is ``1 - k/n_q`` in each query.
    k : int >= 1 or None, default=None
        The ``K`` of ``"precision_at_k"`` (required there, refused elsewhere).
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` and ``precision_at_k`` (eq. (9) or (10)).
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
    BoostingObjective or RankingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``
        (a :class:`RankingObjective`: ``fn(y_true, y_pred, weight, group)``), returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, ``groups`` is not 1-D of codes >= 0, ``k`` is missing or
        below 1 for ``"precision_at_k"`` or given for another objective. The objective itself
        raises when called on data without query groups or with row weights.

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

    Precision@3 within each query of 10 rows (the query sizes are the Dataset's ``group``):

    >>> from quantile_surrogate.metrics import precision_at_k_per_query
    >>> params = {"objective": lightgbm_objective("precision_at_k", k=3), "verbose": -1, "num_threads": 1}
    >>> booster = lgb.train(params, lgb.Dataset(X, y, group=[10] * 30), num_boost_round=50)
    >>> query = np.repeat(np.arange(30), 10)
    >>> bool(precision_at_k_per_query(y, booster.predict(X, raw_score=True), query, 3) > 0.5)
    True
    """
    return _build(objective, target, k, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)


def xgboost_objective(objective="precision_at_recall", target=0.9, *, k=None, form="fp", quantile="kernel",
                      bandwidth=0.05, surrogate="logistic", groups=None, logloss_weight=0.0,
                      min_hessian=1e-6) -> BoostingObjective | RankingObjective:
    r"""An XGBoost custom objective, for ``xgb.train(params, dtrain, obj=fn)`` or ``XGBClassifier(objective=fn)``.

    The same maths as :func:`lightgbm_objective`. XGBoost passes margins to a custom
    objective; predict with ``output_margin=True``. Start from a log-loss model with
    ``base_margin=`` or ``xgb_model=``. Arguments are checked here, not mid-training.
    Under ``xgboost.dask.train(client, params, dtrain, obj=fn)`` the threshold is computed over
    every worker's rows, exactly (docs/distributed.md, "Trees on Dask (XGBoost)").

    Parameters
    ----------
    objective : str, default="precision_at_recall"
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`, or ``"precision_at_k"``:
        precision@k within each query, one threshold per query read off the library's data
        (a :class:`RankingObjective`).
    target : float in (0, 1) or None, default=0.9
        The recall, rate or FPR; None is the objective's ``default_target``. Ignored by
        ``"precision_at_k"``, whose level is ``1 - k/n_q`` in each query.
    k : int >= 1 or None, default=None
        The ``K`` of ``"precision_at_k"`` (required there, refused elsewhere).
    form : {"fp", "tp"}, default="fp"
        The form of ``precision_at_rate`` and ``precision_at_k`` (eq. (9) or (10)).
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
    BoostingObjective or RankingObjective
        Callable as ``fn(preds, dataset)`` or ``fn(y_true, y_pred, sample_weight=None)``
        (a :class:`RankingObjective`: ``fn(y_true, y_pred, weight, group)``), returning ``(grad, hess)``.

    Raises
    ------
    TypeError
        If ``target``, ``bandwidth``, ``logloss_weight`` or ``min_hessian`` is not a real
        number, or ``quantile`` is neither a name nor callable.
    ValueError
        If the objective, ``form``, ``quantile`` or ``surrogate`` is unknown, ``target`` is not
        strictly between 0 and 1, ``bandwidth`` or ``min_hessian`` is not > 0,
        ``logloss_weight`` is negative, ``groups`` is not 1-D of codes >= 0, ``k`` is missing or
        below 1 for ``"precision_at_k"`` or given for another objective. The objective itself
        raises when called on data without query groups or with row weights.

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

    Precision@3 within each query: XGBoost hands the DMatrix (and its ``qid`` groups) to the objective:

    >>> from quantile_surrogate.metrics import precision_at_k_per_query
    >>> query = np.repeat(np.arange(30), 10)
    >>> dtrain = xgb.DMatrix(X, label=y, qid=query)
    >>> booster = xgb.train({"max_depth": 3, "nthread": 1}, dtrain, num_boost_round=50,
    ...                     obj=xgboost_objective("precision_at_k", k=3))
    >>> margins = booster.predict(dtrain, output_margin=True)
    >>> bool(precision_at_k_per_query(y, margins, query, 3) > 0.5)  # a random order: about 0.25
    True
    """
    return _build(objective, target, k, form, quantile, bandwidth, surrogate, groups, logloss_weight, min_hessian)
