"""``QuantileClassifierCV``: :class:`QuantileClassifier` with its penalty, bandwidth and model family chosen by K-fold.

As :class:`~sklearn.linear_model.LogisticRegressionCV` is to ``LogisticRegression``: a grid
of ``alpha`` x ``bandwidth`` x model family is scored by stratified K-fold on the objective's
exact metric (``QuantileClassifier.score``), the best is refitted on every row, and the
fitted estimator predicts through that refitted model.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ..objectives import OBJECTIVES
from ._threshold import ThresholdedClassifier
from .quantile_classifier import QuantileClassifier

__all__ = ["QuantileClassifierCV"]


class QuantileClassifierCV(ThresholdedClassifier):
    r"""A :class:`QuantileClassifier` whose ``alpha``, ``bandwidth`` and model family are chosen by cross-validation.

    Every combination in ``alphas`` x ``bandwidths`` x ``hidden_layer_sizes_grid`` is fitted
    on ``cv - 1`` stratified folds and scored on the held-out fold with the objective's
    exact metric at ``target`` (precision at recall, precision at a rate, recall at an FPR;
    :meth:`QuantileClassifier.score`); the best mean over folds (ties: the earlier entry of
    the grid, so the linear model and the larger penalty win ties) is refitted on every row.

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        As in :class:`QuantileClassifier`.
    alphas : sequence of float >= 0, default=(1e-2, 1e-3, 1e-4)
        Weight decays to try, largest first (ties go to the stronger penalty).
    bandwidths : sequence of float > 0, default=(0.05, 0.1)
        Kernel bandwidths on the rank scale. 0.05 is the paper's synthetic setting; a wider
        kernel averages the threshold over more rows of ``A`` (about ``2 h |A|`` of them), which
        matters on small sets where ``0.05 |A|`` is a handful of rows and the gradient through
        the threshold is noisy; beyond about 0.1 the smoothed threshold drifts from the exact
        quantile the metric uses. Two values keep the grid, and the fit time, small.
    hidden_layer_sizes_grid : sequence of tuples, default=((), (64,))
        Model families: ``()`` is the linear model, ``(64,)`` a one-hidden-layer ReLU MLP.
    cv : int >= 2, default=3
        Stratified folds (shuffled with ``random_state``).
    estimator : QuantileClassifier or None, default=None
        A template for every other setting (``objective`` and ``target`` of this class win);
        None means ``QuantileClassifier()``.
    n_jobs : int or None, default=1
        Candidate x fold fits run in parallel through joblib (``GridSearchCV``).
    random_state : int, RandomState or None, default=None
        Seeds the folds and every fit.

    Attributes
    ----------
    alpha_, bandwidth_, hidden_layer_sizes_ : the chosen values.
    best_score_ : float
        Their mean held-out metric.
    cv_results_ : dict of ndarrays
        ``GridSearchCV``'s record: ``param_alpha``, ``param_bandwidth``,
        ``param_hidden_layer_sizes``, ``split{k}_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, fit and score times.
    best_estimator_ : QuantileClassifier
        The chosen settings refitted on every row; predictions go through it.
    classes_, threshold_, n_features_in_, feature_names_in_ : as in :class:`QuantileClassifier`.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(400, weights=[0.9, 0.1], random_state=0)
    >>> clf = QuantileClassifierCV(target=0.9, alphas=(1e-3,), bandwidths=(0.05,),
    ...                            estimator=QuantileClassifier(max_epochs=10), random_state=0).fit(X, y)
    >>> clf.hidden_layer_sizes_ in [(), (64,)]
    True
    """

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": [Interval(Real, 0, 1, closed="neither"), None],
        "alphas": ["array-like"],
        "bandwidths": ["array-like"],
        "hidden_layer_sizes_grid": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "estimator": [QuantileClassifier, None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(self, objective="precision_at_recall", target=None, *, alphas=(1e-2, 1e-3, 1e-4),
                 bandwidths=(0.05, 0.1), hidden_layer_sizes_grid=((), (64,)), cv=3, estimator=None, n_jobs=1,
                 random_state=None):
        self.objective = objective
        self.target = target
        self.alphas = alphas
        self.bandwidths = bandwidths
        self.hidden_layer_sizes_grid = hidden_layer_sizes_grid
        self.cv = cv
        self.estimator = estimator
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _grid(self) -> dict:
        grid = {"alpha": [float(a) for a in self.alphas], "bandwidth": [float(h) for h in self.bandwidths],
                "hidden_layer_sizes": [tuple(s) for s in self.hidden_layer_sizes_grid]}
        for name, values in grid.items():
            if len(values) == 0:
                raise ValueError(f"The grid for `{name}` is empty; give at least one value.")
        return grid

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Score the grid by stratified K-fold, refit the best on every row; returns self."""
        X, y01 = self._validate_training_data(X, y)
        self._encode_fit_groups(None, y01)
        grid = self._grid()
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        base = QuantileClassifier() if self.estimator is None else clone(self.estimator)
        base.set_params(objective=self.objective, target=self.target, random_state=seed)
        folds = StratifiedKFold(self.cv, shuffle=True, random_state=seed)
        search = GridSearchCV(base, grid, cv=folds, n_jobs=self.n_jobs, refit=True, error_score="raise")
        search.fit(X, y01)
        self.cv_results_ = search.cv_results_
        self.best_estimator_ = search.best_estimator_
        self.best_score_ = float(search.best_score_)
        self.alpha_ = search.best_params_["alpha"]
        self.bandwidth_ = search.best_params_["bandwidth"]
        self.hidden_layer_sizes_ = search.best_params_["hidden_layer_sizes"]
        self.threshold_ = self.best_estimator_.threshold_
        return self

    def _raw_scores(self, X) -> np.ndarray:
        return self.best_estimator_._raw_scores(X)
