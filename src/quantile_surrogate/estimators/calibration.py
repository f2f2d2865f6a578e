r"""Decision thresholds with a held-out guarantee: the scikit-learn side.

The order statistics that carry the guarantee, and their proof, are in
:mod:`quantile_surrogate.objectives.guarantees` (:func:`~quantile_surrogate.objectives.guarantees.recall_threshold`,
:func:`~quantile_surrogate.objectives.guarantees.fpr_threshold`,
:func:`~quantile_surrogate.objectives.guarantees.rate_threshold`). This module wraps them for estimators:
:class:`GuaranteedThresholdClassifier` fits an estimator (or takes a frozen one) and sets the
guaranteed threshold on held-out rows, one per group with ``sensitive_features=``, and
:func:`calibrate_threshold` does that for an estimator that is already fitted.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._utils.checks import BINARY_CLASSES, NOT_BINARY_MESSAGE, check_two_classes
from ..objectives.guarantees import (
    BOUNDS,
    guaranteed_rank,
    fpr_threshold,
    min_calibration_size,
    rate_threshold,
    recall_threshold,
)
from ..objectives import OBJECTIVES
from ..selection._splits import calibration_split
from ._groups import encode_groups
from ._threshold import TARGET_CONSTRAINT, ThresholdedClassifier, check_labels_present, short_input_errors

# The functions of quantile_surrogate.objectives.guarantees imported above are documented there, not here.
__all__ = ["GuaranteedThresholdClassifier", "calibrate_threshold", "CONSTRAINTS"]

#: Values of ``constraint=``, one per objective of :data:`~quantile_surrogate.objectives.OBJECTIVES`:
#: ``"recall"`` (on the positives), ``"rate"`` (on every row) and ``"fpr"`` (on the negatives).
CONSTRAINTS = tuple(objective.constraint for objective in OBJECTIVES.values())

GROUP_TOO_FEW_MESSAGE = (
    "Group {group!r} has {got} held-out {rows}; guaranteeing {what} in it with probability {confidence:g} needs "
    "at least {needed}. Hold out more of that group's rows (a larger `calibration_size` or X_cal), merge it with "
    "another group, or relax `target` or `delta`."
)
NO_RESPONSE_MESSAGE = (
    "{name} has neither `decision_function` nor `predict_proba`; a threshold needs a "
    "real-valued score. Use a classifier such as LogisticRegression or QuantileClassifier."
)

GROUPED_ESTIMATOR_MESSAGE = (
    "`estimator` ({name}) was fitted with `sensitive_features`: its scores subtract a threshold per group and need "
    "each row's group, which a guaranteed threshold does not pass on to it (whether or not `sensitive_features` is "
    "given here). Calibrate an estimator fitted without `sensitive_features`, and pass the groups here "
    "(sensitive_features=) for a guaranteed threshold per group."
)


def _response(estimator, X, method: str) -> np.ndarray:
    if method == "auto":
        method = "decision_function" if hasattr(estimator, "decision_function") else "predict_proba"
    if not hasattr(estimator, method):
        raise TypeError(NO_RESPONSE_MESSAGE.format(name=type(estimator).__name__))
    values = np.asarray(getattr(estimator, method)(X), dtype=np.float64)
    if method == "predict_proba":
        values = values[:, 1]
    return values.reshape(-1)


UNEXPECTED_FIT_PARAMS_MESSAGE = "GuaranteedThresholdClassifier.fit() got unexpected keyword arguments {names}."
Y_NONE_MESSAGE = "GuaranteedThresholdClassifier requires y to be passed, but the target y is None."
UNKNOWN_LABELS_MESSAGE = "`y` has labels {unknown} that `estimator` does not know ({classes})."
NO_CALIBRATION_ROWS_MESSAGE = "The calibration rows contain no {side} row; a {constraint} guarantee needs them."
SAMPLE_WEIGHT_GUARANTEE_MESSAGE = (
    "GuaranteedThresholdClassifier does not support `sample_weight`: its guarantee P(constraint holds) >= "
    "1 - delta is an order-statistic (binomial) bound on i.i.d., unweighted held-out rows, and row weights "
    "would make it a claim about a different population that the bound does not cover. Fit the wrapped "
    "estimator with weights yourself and wrap it frozen, calibrating on a sample drawn from the population "
    "the guarantee should hold for (e.g. undo the negative downsampling)."
)


class GuaranteedThresholdClassifier(ThresholdedClassifier):
    r"""A binary classifier whose threshold carries a held-out guarantee.

    ``fit(X, y)`` fits a clone of ``estimator`` on part of the data and picks the threshold
    on the rest with :func:`recall_threshold`, :func:`fpr_threshold` or
    :func:`rate_threshold`. To calibrate a model that is already fitted, wrap it in
    ``sklearn.frozen.FrozenEstimator`` (then every row of ``X`` is used for calibration),
    or call :func:`calibrate_threshold`.

    Parameters
    ----------
    estimator : classifier with ``decision_function`` or ``predict_proba``
        Binary; its ``classes_[1]`` is the positive class, as in scikit-learn.
    constraint : {"recall", "fpr", "rate"}, default="recall"
        The rate to guarantee (:data:`CONSTRAINTS`): recall (measured on the positives),
        false positive rate (on the negatives) or predicted positive rate (on every row).
    target : float in (0, 1) or None, default=None
        Recall >= target, FPR <= target, or the rate bounded as ``bound`` says; None is the
        default target of the objective whose constraint this is (0.95 for a recall, 0.05 for
        an FPR or a rate: :data:`~quantile_surrogate.objectives.OBJECTIVES`).
    delta : float in (0, 1), default=0.05
        The constraint holds on new data with probability at least ``1 - delta``.
    bound : {"upper", "lower"}, default="upper"
        Only for ``constraint="rate"``: rate <= target or rate >= target.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        The score that is thresholded; "auto" prefers ``decision_function``.
    calibration_size : float in (0, 1), default=0.3
        Fraction of ``X`` held out for the threshold when ``estimator`` is not frozen
        (stratified split).
    random_state : int, RandomState or None, default=None
        Seeds that split.

    Attributes
    ----------
    estimator_ : estimator
        The fitted estimator.
    classes_ : ndarray of shape (2,)
        ``estimator_.classes_``.
    threshold_ : float, or ndarray of shape (n_groups,) with ``groups``
        On the scale of the response; positive iff ``response > threshold_``. With ``groups``
        the same array as ``group_thresholds_``.
    groups_ : ndarray of shape (n_groups,) or None
        The sorted group labels seen in ``fit(X, y, sensitive_features=...)``; None without groups.
    group_thresholds_ : ndarray of shape (n_groups,) or None
        One guaranteed threshold per entry of ``groups_``; row ``i`` is positive iff
        ``response_i > group_thresholds_[group of i]``.
    n_calibration_ : int or ndarray of shape (n_groups,)
        Held-out rows the constraint was measured on (per group with ``groups``).
    calibration_value_ : float or ndarray of shape (n_groups,)
        The constrained rate on those rows at ``threshold_`` (per group with ``groups``).

    Raises
    ------
    ValueError
        From ``fit``: a target that is not binary, ``sample_weight`` (see ``fit``), or too
        few held-out rows of the constrained subset (of a group, with ``groups``) for the
        guarantee: fewer than :func:`~quantile_surrogate.objectives.guarantees.min_calibration_size`.
    TypeError
        From ``fit`` and ``predict``: an estimator with neither ``decision_function`` nor
        ``predict_proba``.

    See Also
    --------
    calibrate_threshold : The same for an estimator that is already fitted.
    quantile_surrogate.objectives.guarantees.recall_threshold : The order statistic and its proof.
    quantile_surrogate.QuantileClassifier : Trains for the operating point; wrap it here to guarantee it.

    Notes
    -----
    Not in the paper, which sets the threshold at the training scores' quantile
    :math:`q(f(A), 1 - c)` (Proposition 1): on new data that meets a recall target only
    about half the time. Here, for recall, with :math:`S_{(1)} \le \dots \le S_{(n)}` the
    held-out positives' scores, the threshold sits just below :math:`S_{(k)}` with

    .. math::
        k = \max\{k : P(\mathrm{Binomial}(n, 1 - c) \ge k) \ge 1 - \delta\},

    so that :math:`P(\text{recall on new data} \ge c) \ge 1 - \delta` over the draw of the
    held-out rows, whatever the score distribution; FPR and rate use the same rank
    function (:func:`~quantile_surrogate.objectives.guarantees.guaranteed_rank` has the proof).

    With ``groups`` the guarantee holds in each group separately, with probability at least
    ``1 - delta`` each. Given the group of every held-out row, the groups' held-out scores are
    independent, so all ``G`` groups meet the constraint at once with probability at least
    ``(1 - delta) ** G``; for a simultaneous ``1 - delta'``, pass ``delta = 1 - (1 - delta') ** (1 / G)``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from quantile_surrogate import GuaranteedThresholdClassifier
    >>> X, y = make_classification(2000, weights=[0.8, 0.2], random_state=0)
    >>> clf = GuaranteedThresholdClassifier(LogisticRegression(), constraint="recall", target=0.9,
    ...                                     delta=0.05, random_state=0).fit(X, y)
    >>> clf.n_calibration_  # held-out positives the threshold was set on
    122
    >>> bool(clf.calibration_value_ >= 0.9)  # their recall; >= 0.9 on new data with probability 0.95
    True
    >>> clf.predict(X[:5])
    array([1, 0, 0, 0, 1])
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "constraint": [StrOptions(set(CONSTRAINTS))],
        "target": TARGET_CONSTRAINT,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "bound": [StrOptions(set(BOUNDS))],
        "response_method": [StrOptions({"auto", "decision_function", "predict_proba"})],
        "calibration_size": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator, *, constraint="recall", target=None, delta=0.05, bound="upper",
                 response_method="auto", calibration_size=0.3, random_state=None):
        self.estimator = estimator
        self.constraint = constraint
        self.target = target
        self.delta = delta
        self.bound = bound
        self.response_method = response_method
        self.calibration_size = calibration_size
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sensitive_features=None, **fit_params):
        """Fit ``estimator`` (unless frozen) and set the guaranteed threshold(s) on the held-out rows.

        ``sample_weight=`` is refused (``ValueError``, :data:`SAMPLE_WEIGHT_GUARANTEE_MESSAGE`): the
        guarantee is a binomial bound on i.i.d. unweighted held-out rows, which weights would void.
        (It is caught from ``**fit_params`` rather than named, so that scikit-learn does not take
        the estimator for one that supports weights.) Any other keyword is a ``TypeError``.

        ``sensitive_features`` (optional, shape (n,), any labels) gives each group its own threshold, each
        picked on that group's held-out rows of ``A``, so the guarantee holds in every group:
        ``P(constraint holds in group g) >= 1 - delta`` for each ``g``. The split is stratified
        by (class, group). The wrapped estimator is fitted and scores without groups.
        """
        if "sample_weight" in fit_params:
            raise ValueError(SAMPLE_WEIGHT_GUARANTEE_MESSAGE)
        if fit_params:
            raise TypeError(UNEXPECTED_FIT_PARAMS_MESSAGE.format(names=sorted(fit_params)))
        if y is None:
            raise ValueError(Y_NONE_MESSAGE)
        check_labels_present(y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)  # a continuous y: scikit-learn's "Unknown label type" message
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            # The phrase scikit-learn's common checks look for comes first.
            raise ValueError(NOT_BINARY_MESSAGE.format(name="y", accepted=BINARY_CLASSES, values=np.unique(y)[:6].tolist()))
        labels, codes = (None, None) if sensitive_features is None else encode_groups(sensitive_features, len(y))
        estimator = clone(self.estimator)
        if isinstance(estimator, FrozenEstimator):
            X_cal, y_cal, codes_cal = X, y, codes
        else:
            with short_input_errors(X, type(estimator).__name__):
                X_cal, y_cal, codes_cal = self._split(estimator, X, y, codes)
        self.estimator_ = estimator
        inner = estimator.estimator if isinstance(estimator, FrozenEstimator) else estimator
        if isinstance(inner, ThresholdedClassifier) and getattr(inner, "groups_", None) is not None:
            raise ValueError(GROUPED_ESTIMATOR_MESSAGE.format(name=type(inner).__name__))
        self.classes_ = np.asarray(estimator.classes_)
        check_two_classes(self.classes_, "estimator.classes_")
        unknown = np.setdiff1d(np.unique(y_cal), self.classes_)
        if unknown.size:
            raise ValueError(UNKNOWN_LABELS_MESSAGE.format(unknown=unknown.tolist(), classes=self.classes_.tolist()))
        with short_input_errors(X, type(inner).__name__):
            scores = _response(estimator, X_cal, self.response_method)
        in_subset = self._objective_spec().subset_mask(y_cal == self.classes_[1])
        if codes is None:
            self._calibrate_one(scores[in_subset])
        else:
            self._calibrate_groups(scores, in_subset, codes_cal, labels)
        return self

    def _split(self, estimator, X, y, codes):
        """Fit ``estimator`` on one part of the rows; return ``(X_cal, y_cal, codes_cal)``, the rest.

        Stratified by class, and by (class, group) with groups so that every group is held out
        in proportion (:func:`~quantile_surrogate.selection._splits.calibration_split`).
        """
        arrays = (X, y) if codes is None else (X, y, codes)
        parts = calibration_split(arrays, y, codes, size=self.calibration_size, random_state=self.random_state)
        X_fit, X_cal, y_fit, y_cal = parts[:4]  # with codes, parts[4:] are the codes of the two parts
        estimator.fit(X_fit, y_fit)
        return X_cal, y_cal, (None if codes is None else parts[5])

    def _calibrate_one(self, subset):
        if subset.size == 0:
            side = "positive" if self.constraint == "recall" else "negative"
            raise ValueError(NO_CALIBRATION_ROWS_MESSAGE.format(side=side, constraint=self.constraint))
        self.threshold_ = CALIBRATORS[self.constraint](subset, self._target(), self.delta, self.bound)
        self.groups_ = self.group_thresholds_ = None
        self.n_calibration_ = int(subset.size)
        self.calibration_value_ = float(np.mean(subset > self.threshold_))

    def _calibrate_groups(self, scores, in_subset, codes, labels):
        """One guaranteed threshold per group, each on the group's own held-out rows of ``A``.

        Rows are i.i.d., so given which rows fall in which group (and class), the held-out
        scores of group ``g`` are an i.i.d. sample of that group's score distribution and
        the single-group proof (:func:`guaranteed_rank`) applies to each group as it stands.
        """
        tail, what, rows = _tail(self.constraint, self._target(), self.bound)
        needed = min_calibration_size(tail, self.delta)
        thresholds, counts, values = [], [], []
        for g, label in enumerate(labels):
            subset = scores[in_subset & (codes == g)]
            if subset.size < needed:
                raise ValueError(GROUP_TOO_FEW_MESSAGE.format(
                    group=label.item() if hasattr(label, "item") else label, got=subset.size, rows=rows,
                    what=what, confidence=1 - self.delta, needed=needed))
            thresholds.append(CALIBRATORS[self.constraint](subset, self._target(), self.delta, self.bound))
            counts.append(subset.size)
            values.append(np.mean(subset > thresholds[-1]))
        self.groups_ = labels
        self.group_thresholds_ = self.threshold_ = np.asarray(thresholds, dtype=np.float64)
        self.n_calibration_ = np.asarray(counts, dtype=np.int64)
        self.calibration_value_ = np.asarray(values, dtype=np.float64)

    def _objective_spec(self):
        """The objective whose constraint this classifier guarantees; ``score`` reports its metric."""
        return next(objective for objective in OBJECTIVES.values() if objective.constraint == self.constraint)

    def _check_X(self, X):
        return X  # the wrapped estimator validates its own input

    def _raw_scores(self, X) -> np.ndarray:
        inner = self.estimator_.estimator if isinstance(self.estimator_, FrozenEstimator) else self.estimator_
        with short_input_errors(X, type(inner).__name__):
            return _response(self.estimator_, X, self.response_method)

    @property
    def n_features_in_(self):
        check_is_fitted(self, "threshold_")  # NotFittedError is an AttributeError: hasattr() is False
        return self.estimator_.n_features_in_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # The threshold serves a rate constraint, not accuracy (scikit-learn's checks expect > 0.83).
        tags.classifier_tags.poor_score = True
        tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags


def _tail(constraint: str, target: float, bound: str):
    """``(tail, what, rows)``: the population fraction allowed on the wrong side, and words for errors."""
    if constraint == "recall":
        return 1.0 - target, f"recall >= {target:g}", "positive rows"
    if constraint == "fpr":
        return target, f"FPR <= {target:g}", "negative rows"
    if bound == "upper":
        return target, f"rate <= {target:g}", "rows"
    return 1.0 - target, f"rate >= {target:g}", "rows"


CALIBRATORS = {
    "recall": lambda scores, target, delta, bound: recall_threshold(scores, target, delta),
    "fpr": lambda scores, target, delta, bound: fpr_threshold(scores, target, delta),
    "rate": lambda scores, target, delta, bound: rate_threshold(scores, target, delta, bound=bound),
}
"""constraint -> the guaranteed threshold on the held-out rows of ``A`` (``bound`` is read by "rate" only)."""


def calibrate_threshold(estimator, X_cal, y_cal, *, constraint="recall", target=None, delta=0.05,
                        bound="upper", response_method="auto", sensitive_features=None) -> GuaranteedThresholdClassifier:
    """Calibrate the threshold of a fitted ``estimator`` on held-out ``(X_cal, y_cal)``.

    Shorthand for ``GuaranteedThresholdClassifier(FrozenEstimator(estimator), ...).fit(X_cal, y_cal, sensitive_features=sensitive_features)``:
    the estimator is not refitted. ``X_cal`` must not overlap its training data. With ``sensitive_features``
    (one label per row of ``X_cal``) each group gets its own guaranteed threshold, and the result
    needs ``sensitive_features=`` in ``predict``, ``decision_function`` and ``score``.

    Parameters
    ----------
    estimator : fitted binary classifier with ``decision_function`` or ``predict_proba``
        Not refitted; ``estimator.classes_[1]`` is the positive class.
    X_cal : array-like of shape (n, d)
        Held-out rows, not used to fit ``estimator``.
    y_cal : array-like of shape (n,)
        Their labels.
    constraint, target, delta, bound, response_method
        As in :class:`GuaranteedThresholdClassifier`.
    sensitive_features : array-like of shape (n,), optional
        A group label per row of ``X_cal``: one guaranteed threshold per group.

    Returns
    -------
    GuaranteedThresholdClassifier
        Fitted, around ``FrozenEstimator(estimator)``; ``threshold_`` is the guaranteed threshold.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    ValueError
        As :meth:`GuaranteedThresholdClassifier.fit`: too few held-out rows of the constrained
        subset for the guarantee, or labels ``estimator`` does not know; an ``estimator`` fitted
        with ``sensitive_features`` (:data:`GROUPED_ESTIMATOR_MESSAGE`).

    See Also
    --------
    GuaranteedThresholdClassifier : Fits the estimator and calibrates on a split of the rows.
    quantile_surrogate.objectives.guarantees.recall_threshold : The threshold from held-out scores alone.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from quantile_surrogate import calibrate_threshold
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2)); y = (X[:, 0] + rng.normal(size=2000) > 1).astype(int)
    >>> lr = LogisticRegression().fit(X[:1000], y[:1000])
    >>> clf = calibrate_threshold(lr, X[1000:], y[1000:], constraint="recall", target=0.9)
    >>> bool(clf.calibration_value_ >= 0.9)
    True
    """
    check_is_fitted(estimator)
    return GuaranteedThresholdClassifier(
        FrozenEstimator(estimator), constraint=constraint, target=target, delta=delta,
        bound=bound, response_method=response_method,
    ).fit(X_cal, y_cal, sensitive_features=sensitive_features)
