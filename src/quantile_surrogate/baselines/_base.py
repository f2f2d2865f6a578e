"""The shared scikit-learn shell of the baselines: labels, threshold, ``score``.

Every baseline learns a linear score ``s(x) = x . w + b`` (``coef_``, ``intercept_``) in its
own way, and then this base class moves the threshold on the training data to meet the
constraint, exactly as the paper's quantile threshold would:

- ``"precision_at_rate"``: at least ``K = ceil(target n)`` training rows score above the
  threshold (exactly ``K`` when scores are distinct): ``q(f(X), 1 - target)``.
- ``"precision_at_recall"``: training recall >= ``target``: ``q(f(X+), 1 - target)``.
- ``"recall_at_fpr"``: training false positive rate <= ``target``: ``q(f(X-), 1 - target)``.

Prediction is ``s(x) > threshold_`` (strict, Definition 3.1 of the paper), so
``decision_function(X) = X . w + b - threshold_`` and ``predict`` maps its sign through
``classes_``. ``score`` is the objective's metric at ``target`` from
:mod:`quantile_surrogate.metrics`, computed on ``decision_function``.

The positive class is ``classes_[1]``, the larger label in sorted order (1 for {0, 1} and
{-1, 1}, True for booleans), as in scikit-learn's binary classifiers.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import StrOptions

from .._utils.checks import check_sample_weight
from ..estimators._threshold import TARGET_CONSTRAINT, ThresholdedClassifier
from ..objectives import OBJECTIVES

__all__ = ["RateBaseline", "UNSUPPORTED_OBJECTIVE_MESSAGE", "SUBSET_NO_WEIGHT_MESSAGE"]

UNSUPPORTED_OBJECTIVE_MESSAGE = (
    "`objective` must be one of {supported} for {name}; got {objective!r}. Use LogisticRegressionBaseline for the "
    "other objectives."
)
SUBSET_NO_WEIGHT_MESSAGE = (
    "`sample_weight` is zero on every row of the subset A ({subset}) for {objective!r}, so the constraint has no "
    "rows; give some of them a positive weight."
)


class RateBaseline(ThresholdedClassifier):
    """Base class: a linear score learned by ``_fit_scores`` plus a threshold moved on the training data.

    Subclasses set ``_objectives`` (the objective names they support), extend
    ``_parameter_constraints``, and call :meth:`_validate_fit_data` and :meth:`_finish_fit`
    in ``fit``; ``decision_function``, ``predict`` and ``score`` come from
    :class:`~quantile_surrogate.estimators._threshold.ThresholdedClassifier`.

    Parameters
    ----------
    objective : str
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES` that the subclass supports.
    target : float in (0, 1) or None
        The rate, recall or false positive rate of the constraint; None is the objective's default target (0.95 for a recall, 0.05 for a rate or an FPR).

    Examples
    --------
    A subclass with a fixed score (the first feature) and the threshold moved to a 25 % rate:

    >>> class FirstFeature(RateBaseline):
    ...     def __init__(self, objective="precision_at_rate", target=0.25):
    ...         self.objective, self.target = objective, target
    ...     def fit(self, X, y):
    ...         X, positive = self._validate_fit_data(X, y)
    ...         return self._finish_fit(X, positive, np.eye(X.shape[1])[0], 0.0)
    >>> X = np.arange(8.0).reshape(-1, 1); y = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    >>> FirstFeature().fit(X, y).predict(X).tolist()
    [0, 0, 0, 0, 0, 0, 1, 1]
    """

    _objectives: tuple[str, ...] = ("precision_at_rate",)

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": TARGET_CONSTRAINT,
    }

    def _check_objective(self):
        if self.objective not in self._objectives:
            raise ValueError(UNSUPPORTED_OBJECTIVE_MESSAGE.format(supported=sorted(self._objectives),
                                                                  name=type(self).__name__, objective=self.objective))

    def _validate_fit_data(self, X, y):
        """``(X, positive)``: validated features and a bool array, True for ``classes_[1]``."""
        X, y01 = self._validate_training_data(X, y, y_numeric=False)  # more than two classes: NOT_BINARY_MESSAGE
        self.groups_ = self.group_thresholds_ = None
        return X, y01 == 1

    def _fit_weight(self, sample_weight, positive):
        """Checked frequency weights as a float64 array, or None; the rows of ``A`` need a positive total."""
        if sample_weight is None:
            return None
        weight = check_sample_weight(sample_weight, positive.shape[0])
        in_subset = self._objective_spec().subset_mask(positive)
        if not weight[in_subset].sum() > 0:
            raise ValueError(SUBSET_NO_WEIGHT_MESSAGE.format(subset=self._objective_spec().subset,
                                                             objective=self.objective))
        return weight

    def _finish_fit(self, X, positive, coef, intercept, sample_weight=None):
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array([float(intercept)])
        self._set_threshold(self._raw_scores(X), positive.astype(np.int64), sample_weight=sample_weight)
        return self

    def _raw_scores(self, X):
        return X @ self.coef_[0] + self.intercept_[0]
