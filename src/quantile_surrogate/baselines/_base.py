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

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import metrics
from ..objectives import constraint_threshold

__all__ = ["RateBaseline", "OBJECTIVES", "NOT_BINARY_MESSAGE"]

# objective name -> the metric that `score` reports, called as metric(y01, scores, target)
OBJECTIVES = {
    "precision_at_rate": metrics.precision_at_rate,
    "precision_at_recall": metrics.precision_at_recall,
    "recall_at_fpr": metrics.recall_at_fpr,
}

NOT_BINARY_MESSAGE = (
    "Only binary classification is supported by {name}; `y` has {count} classes ({classes}). "
    "Map the class of interest to 1 and every other class to 0."
)


class RateBaseline(ClassifierMixin, BaseEstimator):
    """Base class: a linear score learned by ``_fit_scores`` plus a threshold moved on the training data.

    Subclasses set ``_objectives`` (the objective names they support), extend
    ``_parameter_constraints``, and implement ``_fit_scores(X, positive) -> (coef, intercept)``
    with ``coef`` of shape (n_features,) and ``positive`` a bool array (True = ``classes_[1]``).
    """

    _objectives: tuple[str, ...] = ("precision_at_rate",)

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": [Interval(Real, 0, 1, closed="neither")],
    }

    def _check_objective(self):
        if self.objective not in self._objectives:
            raise ValueError(
                f"`objective` must be one of {sorted(self._objectives)} for {type(self).__name__}; "
                f"got {self.objective!r}. Use LogisticRegressionBaseline for the other objectives."
            )

    def _validate_fit_data(self, X, y):
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], y_numeric=False)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.shape[0] != 2:
            raise ValueError(
                NOT_BINARY_MESSAGE.format(
                    name=type(self).__name__, count=classes.shape[0], classes=classes[:6].tolist()
                )
            )
        self.classes_ = classes
        return X, y == classes[1]

    def _finish_fit(self, X, positive, coef, intercept):
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array([float(intercept)])
        scores = self._raw_scores(X)
        self.threshold_ = constraint_threshold(scores, positive, objective=self.objective, target=self.target)
        return self

    def _raw_scores(self, X):
        return X @ self.coef_[0] + self.intercept_[0]

    def decision_function(self, X):
        """``x . coef_ + intercept_ - threshold_``: positive where the constrained classifier predicts ``classes_[1]``.

        Returns an array of shape (n_samples,).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return np.asarray(self._raw_scores(X), dtype=np.float64) - self.threshold_

    def predict(self, X):
        """``classes_[1]`` where ``decision_function(X) > 0``, else ``classes_[0]``."""
        above = self.decision_function(X) > 0
        return self.classes_[above.astype(np.intp)]

    def score(self, X, y, sample_weight=None):
        """The objective's metric at ``target`` on ``(X, y)``, from :mod:`quantile_surrogate.metrics`.

        ``precision_at_rate`` is precision among the top ``ceil(target n)`` rows of ``X`` (the
        threshold plays no part); ``precision_at_recall`` is the best precision at recall
        ``>= target``; ``recall_at_fpr`` the best recall at false positive rate ``<= target``.
        Higher is better, as scikit-learn's model selection expects.
        """
        if sample_weight is not None:
            raise ValueError("`sample_weight` is not supported by score; pass None.")
        check_is_fitted(self)
        y = np.asarray(y)
        known = np.isin(y, self.classes_)
        if not known.all():
            raise ValueError(
                f"`y` has labels {np.unique(y[~known])[:6].tolist()} not seen in fit; "
                f"the classes are {self.classes_.tolist()}."
            )
        positive = (y == self.classes_[1]).astype(np.int64)
        return OBJECTIVES[self.objective](positive, self.decision_function(X), self.target)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
