"""Thresholded logistic regression: the paper's LR column."""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.base import _fit_context
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import Interval

from .._utils.checks import check_sample_weight
from .._utils.sparse import SPARSE_INPUT
from ._base import RateBaseline

__all__ = ["LogisticRegressionBaseline"]


class LogisticRegressionBaseline(RateBaseline):
    r"""Logistic regression whose threshold is moved on the training data to meet a rate constraint.

    The paper's LR baseline (Mackey, Luo & Eban 2018, section 6, Tables 1-2 and Figure 1).
    The weights are scikit-learn's L2-regularised logistic regression (lbfgs), labels
    :math:`y_i \in \{-1, +1\}` with :math:`+1` for ``classes_[1]``:

    .. math::

        (w, b) = \arg\min_{w, b}\ \tfrac12 \lVert w \rVert^2
                 + C \sum_{i=1}^n \log\bigl(1 + e^{-y_i (w \cdot x_i + b)}\bigr),

    and the threshold :math:`t` is then the training quantile that meets the constraint, as
    the quantile loss would put it (see :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold`):

    - ``"precision_at_rate"``: :math:`t = q(f(X), 1 - \tau)`, so ``ceil(tau n)`` rows are
      predicted positive (eq. (9), ``\label{eq:unconstrained_fp_at_ppr}``, constraint);
    - ``"precision_at_recall"``: training recall :math:`\ge` ``target`` (eq. (7),
      ``\label{eq:unconstrained_fp_at_r}``, constraint);
    - ``"recall_at_fpr"``: training false positive rate :math:`\le` ``target``.

    Parameters
    ----------
    objective : {"precision_at_rate", "precision_at_recall", "recall_at_fpr"}, default="precision_at_rate"
    target : float in (0, 1) or None, default=None
        The predicted positive rate tau, the recall, or the false positive rate; None is the
        objective's default target (0.95 for a recall, 0.05 for a rate or an FPR).
    C : float > 0, default=1.0
        Inverse regularisation strength, as in :class:`sklearn.linear_model.LogisticRegression`.
    max_iter : int, default=1000
    tol : float, default=1e-6
    random_state : None, int or RandomState, default=None
        Unused by lbfgs (the fit is deterministic); kept for the common interface.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    threshold_ : float
        Threshold on ``X @ coef_[0] + intercept_[0]``.
    classes_ : ndarray of shape (2,)
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(20.0).reshape(-1, 1); y = (X[:, 0] > 9).astype(int)
    >>> clf = LogisticRegressionBaseline(target=0.1).fit(X, y)
    >>> int(clf.predict(X).sum())  # ceil(0.1 * 20) = 2 rows predicted positive
    2
    """

    _objectives = ("precision_at_rate", "precision_at_recall", "recall_at_fpr")
    _sparse_input = SPARSE_INPUT  # lbfgs takes CSR as it is

    _parameter_constraints: dict = {
        **RateBaseline._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self, *, objective="precision_at_rate", target=None, C=1.0, max_iter=1000, tol=1e-6, random_state=None
    ):
        self.objective = objective
        self.target = target
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sample_weight=None):
        """Fit logistic regression, then move the threshold on ``(X, y)`` to meet the constraint.

        ``sample_weight`` (frequency weights, >= 0) weights the likelihood (scikit-learn's
        ``LogisticRegression``) and the threshold (the weighted empirical quantile).
        """
        self._check_objective()
        X, positive = self._validate_fit_data(X, y)
        weight = None if sample_weight is None else check_sample_weight(sample_weight, X.shape[0])
        model = LogisticRegression(C=self.C, solver="lbfgs", max_iter=self.max_iter, tol=self.tol)
        model.fit(X, positive.astype(int), sample_weight=weight)
        self.n_iter_ = int(model.n_iter_[0])
        return self._finish_fit(X, positive, model.coef_[0], model.intercept_[0], sample_weight=weight)
