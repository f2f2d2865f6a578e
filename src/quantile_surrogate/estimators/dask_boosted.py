"""``DaskQuantileBoostingClassifier``: :class:`QuantileBoostingClassifier`'s model trained on Dask partitions (XGBoost).

Requires ``dask[distributed]`` and XGBoost (``pip install 'quantile-surrogate[boost,dask]'``);
they are imported only when ``fit`` or a prediction runs, so this module imports without them.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils.checks import check_two_classes
from .._utils.errors import TrainingDivergedError
from ..boosting import xgboost_objective
from ..boosting._distributed import DISTRIBUTED_ESTIMATORS
from ..objectives import get_objective, objective_metric
from ..selection._scorer import FoldData, HeldOutCurve
from ..selection._start_rule import select_rounds
from ._boosting_backends import BACKENDS, make_backend
from ._dask_paths import (DaskBoosting, as_dask_labels, as_dask_rows, as_dask_weights, dask_client, pin_partitions,
                          take_partitions)
from ._dask_threshold import dask_constraint_threshold
from ._threshold import ONE_CLASS_MESSAGE
from .boosted import AUTO_BANDWIDTH_ROWS, FORM_MESSAGE, QuantileBoostingClassifier, adopt_booster

__all__ = ["DaskQuantileBoostingClassifier", "DASK_BACKEND_MESSAGE", "PARTITIONS_MESSAGE", "SPLIT_CLASSES_MESSAGE"]

#: ``ValueError`` of ``fit`` for ``backend="lightgbm"``.
DASK_BACKEND_MESSAGE = (
    "DaskQuantileBoostingClassifier trains with XGBoost only; got backend={backend!r}. On several machines a "
    "LightGBM custom objective sees one worker's rows and has nothing to communicate with, so the threshold "
    "would be that worker's quantile (docs/distributed.md). Pass backend='xgboost', or train LightGBM on one "
    "machine with QuantileBoostingClassifier(backend='lightgbm')."
)
#: ``ValueError`` of ``fit`` when whole partitions cannot be held out.
PARTITIONS_MESSAGE = (
    "`X` has {parts} partition(s); the selection of quantile rounds holds out whole partitions and trains on "
    "the others, so it needs at least 2. Rechunk X and y into more partitions, or pass early_stopping=False."
)
#: ``ValueError`` of ``fit`` for a side of a validation split without both classes.
SPLIT_CLASSES_MESSAGE = (
    "Validation split {split}: the {side} partitions {parts} hold only one class; each side of the split needs "
    "both. Shuffle rows across partitions, use smaller partitions, or pass early_stopping=False."
)
MISSING_LABEL_MESSAGE = "`y` holds NaN labels; every row needs one of the two classes."
FEATURES_MESSAGE = "`X` has {got} features; {name} was fitted with {expected}."

_SHARED = ("objective", "target", "form", "bandwidth", "surrogate", "n_estimators", "n_quantile_estimators",
           "learning_rate", "num_leaves", "max_depth", "backend_params", "logloss_weight", "early_stopping",
           "validation_fraction", "n_iter_no_change", "random_state", "verbose")


def _partition_counts(labels, objective: str, weights=None) -> tuple:
    """``(rows of A, positives, rows, weight of the positives, weight)`` of one partition's {0, 1} labels (the
    weights are the counts without ``weights``)."""
    positive = np.asarray(labels) == 1
    counts = (int(get_objective(objective).subset_mask(positive).sum()), int(positive.sum()), int(positive.size))
    if weights is None:
        return counts + counts[1:]
    weights = np.asarray(weights, dtype=np.float64)
    return counts + (float(weights[positive].sum()), float(weights.sum()))


def _label_mean(counts, weighted: bool) -> tuple:
    """``(positives, rows)`` of some partitions' :func:`_partition_counts`: counts, or with weights their weights."""
    if weighted:
        return float(counts[:, 3].sum()), float(counts[:, 4].sum())
    return int(counts[:, 1].sum()), int(counts[:, 2].sum())


def _class_labels(decision, classes):
    """``classes[1]`` where the decision is > 0, else ``classes[0]`` (one partition)."""
    return classes[(decision > 0).astype(np.intp)]


class DaskQuantileBoostingClassifier(ClassifierMixin, BaseEstimator):
    r"""Gradient-boosted trees for a rate-constrained operating point, trained on Dask partitions (XGBoost).

    The model of :class:`~quantile_surrogate.QuantileBoostingClassifier` (``backend="xgboost"``)
    for data that stay on Dask workers: every round runs under ``xgboost.dask.train``, where
    :func:`~quantile_surrogate.boosting.xgboost_objective` sets the threshold over every worker's
    rows exactly (docs/distributed.md, "Trees on Dask"). ``fit`` runs the same three steps:

    1. **Start from the log-loss model**: ``n_estimators`` rounds of ``binary:logistic``.
    2. **Choose the number of quantile rounds** ``k`` in ``0..n_quantile_estimators`` on held-out
       **partitions**: a split holds out ``round(validation_fraction x P)`` of the ``P`` row
       partitions of ``X`` (at least 1, at most ``P - 1``), drawn with ``random_state``
       (``validation_partitions_`` says which); step 1 and the quantile rounds train on the other
       partitions only, and the held-out margins after every round are scored on the client with
       the objective's exact metric (:class:`~quantile_surrogate.selection._scorer.HeldOutCurve`);
       ``k`` is :func:`~quantile_surrogate.selection._start_rule.select_rounds` of the mean curve
       over ``validation_splits`` splits (the start wins ties).
    3. **Refit on every partition** (``refit=True``): step 1, then ``k`` quantile rounds continuing
       from it (``xgb_model=``).

    ``threshold_`` is the exact quantile of the training scores, computed on the workers
    (histogram refinement, ``_dask_threshold``): equal to
    :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold` of the gathered scores,
    so the constraint holds on the training rows.

    ``sample_weight`` (frequency weights, a Dask array or Series) weights all of it as it does on
    one machine: the log-loss start (the DMatrix's ``weight=``, intercept the weighted label mean),
    the quantile objective's sum and threshold (the workers' weighted selection, docs/distributed.md),
    the held-out metric and ``threshold_``; an integer weight equals repeating the row.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        None: Dask's default client (the last one created), looked up at each call.
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        The recall, predicted positive rate or FPR; None is the objective's default target.
    form : {"fp", "tp"}, default="fp"
        For ``precision_at_rate``: eq. (9) or eq. (10).
    quantile : str, default="kernel"
        One of ``"kernel"``, ``"gaussian"``, ``"epanechnikov"``, ``"point"``, ``"lower_mean"``,
        ``"interval"``, ``"harrell_davis"``: the estimators the distributed objective computes exactly
        (docs/distributed.md; ``lower_mean`` gathers every score of ``A`` below its level on every
        worker each round: at scale prefer the point estimate or the kernel). At 10^6 rows on 2
        workers a quantile round after the log-loss start took 1.4 to 1.5 (point) and 1.7 (Gaussian
        kernel) times a round of ``binary:logistic``; with the objective free (its gradients replayed)
        1.1 to 1.2: the rest is the objective's call on the workers.
    bandwidth : float > 0 or "auto", default="auto"
        As in ``QuantileBoostingClassifier``: "auto" is ``30 / |A|`` clipped to [0.05, 0.3], ``|A|`` the
        training partitions' rows of ``A``.
    surrogate : {"logistic", "hinge"}, default="logistic"
    backend : {"xgboost"}, default="xgboost"
        "lightgbm" raises ``ValueError`` in ``fit`` (:data:`DASK_BACKEND_MESSAGE`).
    n_estimators : int >= 1, default=100
        Log-loss rounds of the start.
    n_quantile_estimators : int >= 0 or None, default=None
        The most quantile rounds; None means ``n_estimators``.
    learning_rate : float > 0, default=0.1
    num_leaves : int >= 2 or None, default=None
        XGBoost ``max_leaves`` (None: no limit).
    max_depth : int or None, default=None
        None: XGBoost's 6.
    backend_params : dict or None, default=None
        Other XGBoost parameters (``lambda``, ``subsample``, ``max_bin``, ...).
    logloss_weight : float >= 0, default=0.0
    early_stopping : bool, default=True
        False skips step 2 and keeps all ``n_quantile_estimators`` rounds.
    validation_fraction : float in (0, 1), default=0.2
        The share of partitions held out in each split (rounded, at least one, at least one left).
    validation_splits : int >= 1, default=1
        Splits of step 2, each with its own draw of partitions; each costs a start and a quantile run.
    n_iter_no_change : int >= 1 or None, default=20
        Stop a validation run after this many rounds without a better metric. The rounds run in
        blocks of this many (one ``xgboost.dask.train`` call and one held-out prediction each).
    refit : bool, default=True
        False keeps the first split's model, cut after ``k`` quantile rounds.
    random_state : int, RandomState or None, default=None
        Seeds the held-out partitions and XGBoost.
    verbose : bool or int, default=False

    Attributes
    ----------
    booster_ : xgboost.Booster
        Log-loss trees then quantile trees; ``f(x)`` is its margin (``output_margin=True``).
    backend_ : str
        "xgboost".
    n_logloss_estimators_, best_iteration_ : int
        Trees of the start; quantile rounds kept.
    bandwidth_ : float
    validation_partitions_ : ndarray of shape (validation_splits, n_held) or None
        The held-out partitions (indices of ``X``'s row blocks) of each split; None without selection.
    validation_curve_ : ndarray of shape (rounds + 1, 2) or None
        Mean held-out (metric, loss) after 0, 1, ... quantile rounds.
    threshold_ : float
        ``decision_function(X) = f(x) - threshold_``.
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a Dask DataFrame.

    Raises
    ------
    TypeError
        From ``fit``: ``X`` or ``y`` that are not Dask collections (NumPy arrays are refused, not
        wrapped: their partitions decide what is held out).
    ValueError
        From ``fit``: ``backend="lightgbm"``, no client, a form the objective has not, one partition
        with ``early_stopping``, a side of a split with one class, ``sample_weight`` with NaN, a
        negative value or a zero total.

    See Also
    --------
    quantile_surrogate.QuantileBoostingClassifier : The same model on one machine (rows held out, not partitions).
    quantile_surrogate.boosting.xgboost_objective : The objective each worker calls.

    Notes
    -----
    The quantile rounds minimise, for precision at recall ``c`` (eq. (7),
    ``\label{eq:unconstrained_fp_at_r}``),

    .. math::
        \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - c)\big),

    with :math:`\hat q` over every partition's positives. Where it departs from
    ``QuantileBoostingClassifier``: no ``sensitive_features`` (the distributed objective refuses
    per-group thresholds), whole partitions held out rather than stratified rows, and the client
    gathers the held-out labels and, per block of rounds, the held-out margins
    (``4 (n_iter_no_change + 1)`` bytes per held-out row). With ``early_stopping=False`` the model
    is ``QuantileBoostingClassifier(backend="xgboost", early_stopping=False)``'s on the gathered
    rows, up to float summation order (tests hold them to 1e-9 where XGBoost's bins coincide), for
    every quantile estimator (the point, ``lower_mean``, ``interval`` and ``harrell_davis`` give tied
    rows their coefficients in worker order, which ``fit`` makes the rows' order).
    ``fit`` computes ``X``, ``y`` and ``sample_weight`` on the workers with consecutive row blocks,
    balanced by rows, on the workers in XGBoost's rank order (copying a block that Dask put
    elsewhere): the same seed on the same workers gives the same model whatever placement Dask chose.
    ``decision_function`` and ``predict`` return lazy Dask arrays. ``clone`` shares ``client``;
    pickling drops it (None: the default client).

    Examples
    --------
    >>> import pytest; _ = pytest.importorskip("distributed")
    >>> import dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(2000, weights=[0.8, 0.2], random_state=0)
    >>> with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
    ...     with Client(cluster) as client:
    ...         Xd, yd = da.from_array(X, chunks=(400, -1)), da.from_array(y, chunks=400)  # 5 partitions
    ...         clf = DaskQuantileBoostingClassifier(client=client, target=0.9, n_estimators=30,
    ...                                              random_state=0).fit(Xd, yd)
    ...         recall = float((clf.predict(Xd)[yd == 1] == 1).mean().compute())
    >>> clf.validation_partitions_.shape, recall >= 0.9  # one split, 1 of 5 partitions held out
    ((1, 1), True)
    """

    _parameter_constraints: dict = {
        **{name: QuantileBoostingClassifier._parameter_constraints[name] for name in _SHARED},
        "client": "no_validation",
        "quantile": [StrOptions(set(DISTRIBUTED_ESTIMATORS))],
        "backend": [StrOptions(set(BACKENDS))],
        "validation_splits": [Interval(Integral, 1, None, closed="left")],
        "refit": ["boolean"],
    }

    def __init__(self, *, client=None, objective="precision_at_recall", target=None, form="fp", quantile="kernel",
                 bandwidth="auto", surrogate="logistic", backend="xgboost", n_estimators=100,
                 n_quantile_estimators=None, learning_rate=0.1, num_leaves=None, max_depth=None, backend_params=None,
                 logloss_weight=0.0, early_stopping=True, validation_fraction=0.2, validation_splits=1,
                 n_iter_no_change=20, refit=True, random_state=None, verbose=False):
        self.client = client
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
        self.backend_params = backend_params
        self.logloss_weight = logloss_weight
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.validation_splits = validation_splits
        self.n_iter_no_change = n_iter_no_change
        self.refit = refit
        self.random_state = random_state
        self.verbose = verbose

    # -- helpers ------------------------------------------------------------------------------
    def _target(self) -> float:
        return get_objective(self.objective).default_target if self.target is None else float(self.target)

    def _bandwidth(self, n_subset: int) -> float:
        """``QuantileBoostingClassifier``'s "auto" rule on a count of rows of ``A``: ``30 / |A|`` in [0.05, 0.3]."""
        if self.bandwidth != "auto":
            return float(self.bandwidth)
        return float(np.clip(AUTO_BANDWIDTH_ROWS / max(n_subset, 1), 0.05, 0.3))

    def _classes(self, client, y) -> np.ndarray:
        import dask.array as da

        classes = client.compute(da.unique(y)).result()
        if classes.dtype.kind == "f" and np.isnan(classes).any():
            raise ValueError(MISSING_LABEL_MESSAGE)
        if classes.shape[0] == 1:
            raise ValueError(ONE_CLASS_MESSAGE.format(shown=classes.tolist(), name=type(self).__name__))
        return check_two_classes(classes, "y")

    def _splits(self, counts, seed) -> list:
        """Held-out partitions of each split: ``round(fraction x P)`` (in ``[1, P - 1]``) drawn with ``seed``."""
        parts = counts.shape[0]
        if parts < 2:
            raise ValueError(PARTITIONS_MESSAGE.format(parts=parts))
        n_held = int(np.clip(round(self.validation_fraction * parts), 1, parts - 1))
        rng = np.random.default_rng(seed)
        splits = [np.sort(rng.choice(parts, n_held, replace=False)) for _ in range(self.validation_splits)]
        for split, held in enumerate(splits):
            for side, which in (("training", np.setdiff1d(np.arange(parts), held)), ("held-out", held)):
                positives, rows = counts[which, 1].sum(), counts[which, 2].sum()
                if positives == 0 or positives == rows:
                    raise ValueError(SPLIT_CLASSES_MESSAGE.format(split=split, side=side, parts=which.tolist()))
        return splits

    def _fit_path(self, path, X, y01, parts, counts, target, rounds, held=None, weight=None):
        """``(start, booster, bandwidth)`` on the partitions ``parts``: the log-loss start, then up to ``rounds``.

        ``held = (X_held, curve)`` records the held-out margins after the start and every round, in
        blocks of ``n_iter_no_change`` rounds, until ``curve`` says stop.
        """
        dtrain = path.matrix(take_partitions(X, parts), take_partitions(y01, parts),
                             None if weight is None else take_partitions(weight, parts))
        start = path.fit_logloss(dtrain, self.n_estimators, *_label_mean(counts[parts], weight is not None))
        objective = xgboost_objective(self.objective, target, form=self.form, quantile=self.quantile,
                                      bandwidth=self._bandwidth(int(counts[parts, 0].sum())),
                                      surrogate=self.surrogate, logloss_weight=self.logloss_weight)
        if held is None:
            return start, path.continue_training(start, dtrain, objective, rounds), objective.bandwidth
        X_held, curve = held
        curve.settings["bandwidth"] = objective.bandwidth
        n_start = start.num_boosted_rounds()
        if curve(path.held_out_margins(start, X_held, n_start, n_start)[:, 0].astype(np.float64)) or rounds == 0:
            return start, start, objective.bandwidth
        booster, done = start, 0
        while done < rounds:
            step = min(self.n_iter_no_change or rounds, rounds - done)
            booster = path.continue_training(booster, dtrain, objective, step)
            margins = path.held_out_margins(booster, X_held, n_start + done, n_start + done + step)
            done += step
            if any(curve(column.astype(np.float64)) for column in margins[:, 1:].T):  # stops feeding at the stop
                break
        return start, booster, objective.bandwidth

    def _select_rounds(self, path, X, y01, counts, target, rounds, seed, weight=None):
        """``(k, mean curve, first split's (start, booster, bandwidth))``; ``(rounds, None, None)`` if no selection."""
        self.validation_partitions_ = None
        if not self.early_stopping or rounds == 0:
            return rounds, None, None
        splits = self._splits(counts, seed)
        self.validation_partitions_ = np.array(splits)
        settings = dict(objective=self.objective, target=target, form=self.form, quantile=self.quantile,
                        bandwidth=0.05, surrogate=self.surrogate)
        curves, kept = [], None
        for split, held in enumerate(splits):
            labels = path.client.compute(take_partitions(y01, held)).result().astype(np.int64)
            held_weight = None if weight is None else path.client.compute(take_partitions(weight, held)).result()
            curve = HeldOutCurve(FoldData.from_labels(labels, None, held_weight), dict(settings), self.n_iter_no_change,
                                 lazy_loss=len(splits) == 1)
            train = np.setdiff1d(np.arange(counts.shape[0]), held)
            found = self._fit_path(path, X, y01, train, counts, target, rounds, (take_partitions(X, held), curve),
                                   weight)
            curves.append(curve.values())
            kept = found if split == 0 else kept
        length = min(len(c) for c in curves)  # runs stopped early are compared on their common rounds
        curve = np.mean([c[:length] for c in curves], axis=0)
        return select_rounds(curve[:, 0], curve[:, 1]), curve, kept

    # -- the estimator API --------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sample_weight=None):
        """Fit on a Dask ``X`` (n, d) (array or DataFrame) and two-class ``y`` (n,) (array or Series); returns self.

        The row blocks of ``X`` are the partitions ``validation_partitions_`` refers to; ``y`` and
        ``sample_weight`` (n,) (frequency weights >= 0, a Dask array or Series) are rechunked to them
        when their blocks differ.
        """
        if self.backend != "xgboost":
            raise ValueError(DASK_BACKEND_MESSAGE.format(backend=self.backend))
        spec = get_objective(self.objective)
        if self.form not in spec.forms():
            raise ValueError(FORM_MESSAGE.format(forms=list(spec.forms()), objective=self.objective, form=self.form))
        client = dask_client(self.client)
        import dask.array as da
        from dask import delayed

        X, names = as_dask_rows(X)
        y = as_dask_labels(y, X.chunks[0])
        weight = None if sample_weight is None else as_dask_weights(client, sample_weight, X.chunks[0])
        self.classes_ = self._classes(client, y)
        X, y01, *weight = pin_partitions(client, [X, (y == self.classes_[1]).astype(np.float64)]
                                         + ([] if weight is None else [weight]))
        weight = weight[0] if weight else None
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):  # from an earlier fit on a DataFrame
            del self.feature_names_in_
        weight_blocks = [None] * y01.numblocks[0] if weight is None else weight.to_delayed().ravel()
        counts = np.array(client.gather(client.compute(  # (rows of A, positives, rows, their weights) per partition
            [delayed(_partition_counts, pure=True)(block, spec.name, w)
             for block, w in zip(y01.to_delayed().ravel(), weight_blocks)])))
        target, random_state = self._target(), self.random_state
        seed = int(random_state) if isinstance(random_state, Integral) else int(
            check_random_state(random_state).randint(np.iinfo(np.int32).max))
        engine = make_backend("xgboost", learning_rate=self.learning_rate, num_leaves=self.num_leaves,
                              max_depth=self.max_depth, min_child_samples=None, seed=seed,
                              backend_params=self.backend_params)
        path = DaskBoosting(client, engine.params)
        rounds = self.n_estimators if self.n_quantile_estimators is None else self.n_quantile_estimators
        k, curve, kept = self._select_rounds(path, X, y01, counts, target, rounds, seed, weight)
        if kept is None or self.refit:
            start, booster, bandwidth = self._fit_path(path, X, y01, np.arange(counts.shape[0]), counts, target, k,
                                                       weight=weight)
        else:  # the first split's model, cut after k quantile rounds
            start, booster, bandwidth = kept
        adopt_booster(self, engine, start, booster, k, bandwidth, curve)
        scores = client.persist(path.margins(self.booster_, X))
        if not client.compute(da.isfinite(scores).all()).result():
            raise TrainingDivergedError("the boosted model's scores", "on the training rows", self.learning_rate)
        self.threshold_ = dask_constraint_threshold(client, scores, y01, objective=spec.name, target=target,
                                                    weights=weight)
        if self.verbose:
            shown = "" if curve is None else f", held-out metric {curve[k, 0]:.4f} (start {curve[0, 0]:.4f})"
            print(f"DaskQuantileBoostingClassifier: {self.best_iteration_} quantile rounds kept{shown}")
        return self

    def decision_function(self, X):
        """``f(x) - threshold_`` of a Dask ``X``: a lazy float64 Dask array of shape (n,), one block per partition."""
        check_is_fitted(self, "threshold_")
        X, _ = as_dask_rows(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(FEATURES_MESSAGE.format(got=X.shape[1], name=type(self).__name__,
                                                     expected=self.n_features_in_))
        return DaskBoosting(dask_client(self.client), {}).margins(self.booster_, X) - self.threshold_

    def predict(self, X):
        """``classes_[1]`` where :meth:`decision_function` is > 0, else ``classes_[0]``: a lazy Dask array."""
        decision = self.decision_function(X)
        return decision.map_blocks(_class_labels, self.classes_, dtype=self.classes_.dtype)

    def score(self, X, y, sample_weight=None):
        """The objective's exact metric at ``target`` (as ``QuantileBoostingClassifier.score``), computed on the client.

        Gathers the decision values and labels (16 bytes per row; 24 with ``sample_weight``, which
        weights the metric as frequency weights).
        """
        decision = self.decision_function(X)
        y = as_dask_labels(y, decision.chunks[0])
        client = dask_client(self.client)
        weight = None if sample_weight is None else as_dask_weights(client, sample_weight, decision.chunks[0])
        decision, y, *weight = client.compute([decision, y] + ([] if weight is None else [weight]), sync=True)
        weight = weight[0] if weight else None
        return objective_metric((y == self.classes_[1]).astype(np.int64), decision, objective=self.objective,
                                target=self._target(), sample_weight=weight)

    def __sklearn_clone__(self):
        # A Client cannot be deep-copied (clone's rule for a parameter that is not an estimator): share it.
        client, self.client = self.client, None
        try:
            twin = super().__sklearn_clone__()
        finally:
            self.client = client
        twin.client = client
        return twin

    def __getstate__(self):
        return {**super().__getstate__(), "client": None}  # a Client does not pickle; None: the default client

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = True  # trees route a missing value down their default branch
        return tags
