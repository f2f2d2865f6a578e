"""Eban et al. (AISTATS 2017), "Scalable Learning of Non-Decomposable Objectives": the Lagrangian saddle point."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import RateBaseline

__all__ = ["LagrangianBaseline", "EBAN_SURROGATES"]

#: The surrogates ``surrogate=`` accepts: base-2 logistic and hinge, both >= the 0-1 loss.
EBAN_SURROGATES = ("logistic", "hinge")

_LN2 = math.log(2.0)


def _surrogate(z, kind):
    """``l(z) >= 1[z <= 0]`` and its derivative: hinge ``max(0, 1 - z)`` or base-2 logistic ``log2(1 + e^-z)``."""
    if kind == "hinge":
        return np.maximum(0.0, 1.0 - z), -(z < 1.0).astype(np.float64)
    # log2 so that l(0) = 1: the bound on the 0-1 loss is then tight at the origin.
    return np.logaddexp(0.0, -z) / _LN2, -expit(-z) / _LN2


class LagrangianBaseline(RateBaseline):
    r"""Precision at recall by the Lagrangian saddle-point method of Eban et al. (2017).

    Eban, Schain, Mackey, Gordon, Rifkin & Elidan, "Scalable Learning of Non-Decomposable
    Objectives", AISTATS 2017 ("global objectives"): the constrained-optimisation family
    that Mackey, Luo & Eban (2018, section 2) argue against.

    **Formulation.** A linear score :math:`f(x) = w \cdot x + b`, labels :math:`y_i \in \{0, 1\}`
    (1 for ``classes_[1]``), :math:`P`/:math:`N` the positive/negative rows, :math:`n_+ = |P|`,
    and a surrogate :math:`\ell(z) \ge \mathbb 1[z \le 0]` (base-2 logistic
    :math:`\log_2(1 + e^{-z})` or hinge :math:`\max(0, 1 - z)`). Then
    :math:`TP \ge \sum_{i \in P} (1 - \ell(f(x_i)))` and :math:`FP \le \sum_{i \in N} \ell(-f(x_i))`.

    - ``"precision_at_recall"`` (Eban et al.'s P@R): minimise the bound on FP subject to the
      bound on TP reaching ``target`` :math:`= r` times :math:`n_+`, i.e.
      :math:`\sum_{i \in P} \ell(f(x_i)) \le (1 - r)\, n_+`. Its Lagrangian, scaled by
      :math:`1/n` and with an L2 penalty, is

      .. math::

          \mathcal L(w, b, \lambda) = \frac1n \Bigl[\sum_{i \in N} \ell(-f(x_i))
              + \lambda \Bigl(\sum_{i \in P} \ell(f(x_i)) - (1 - r)\, n_+\Bigr)\Bigr]
              + \tfrac{\alpha}{2} \lVert w \rVert^2 .

    - ``"precision_at_rate"`` (the same recipe applied to a rate; our extension, not in
      Eban et al.): maximise the bound on TP subject to the bound on the number of predicted
      positives, :math:`\sum_i \ell(-f(x_i)) \le \tau n`:

      .. math::

          \mathcal L(w, b, \lambda) = \frac1n \Bigl[\sum_{i \in P} \ell(f(x_i))
              + \lambda \Bigl(\sum_{i} \ell(-f(x_i)) - \tau n\Bigr)\Bigr]
              + \tfrac{\alpha}{2} \lVert w \rVert^2 .

      This relaxation is very loose: every row pays for its score even far below zero, so
      the fit drives all scores down and ranks the top poorly. Measured on Ionosphere
      (30 % train, tau = 0.05, 3 splits) it gave P@tau 0.15 to 0.46 where thresholded
      logistic regression gave 0.92 to 1.0; it is here for completeness, not as a strong
      baseline.

    **Optimisation.** The saddle point :math:`\min_{w, b} \max_{\lambda \ge 0} \mathcal L` is
    sought by simultaneous full-batch steps: Adam descent on :math:`(w, b)` (step
    ``learning_rate``) and projected gradient ascent
    :math:`\lambda \leftarrow \max(0, \lambda + \eta_\lambda \partial_\lambda \mathcal L)`
    (step ``dual_learning_rate``), from :math:`\lambda = 1` and a small random :math:`(w, b)`
    drawn from ``random_state``. The last iterate is returned. Eban et al. use stochastic
    steps; full batches remove one source of noise on small data.

    ``intercept_`` is the learned :math:`b`, so :math:`f > 0` is the method's own classifier
    (its training recall is in ``constrained_rate_``); ``threshold_`` is then moved on the
    training data to meet the constraint exactly, as for every baseline here.

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        The recall, or the predicted positive rate tau; None is the objective's default target (0.95 for a recall, 0.05 for a rate or an FPR).
    alpha : float >= 0, default=1e-4
    surrogate : {"logistic", "hinge"}, default="logistic"
    learning_rate : float > 0, default=0.05
    dual_learning_rate : float > 0, default=10.0
    max_iter : int, default=2000
    random_state : None, int or RandomState, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    threshold_ : float
    classes_ : ndarray of shape (2,)
    dual_ : float
        Final multiplier :math:`\lambda`.
    constraint_curve_ : list of float
        Relaxed constraint value (``<= 0`` when met), divided by :math:`n`, at each step.
    constrained_rate_ : float
        Training recall of :math:`f > 0` (precision_at_recall) or training predicted positive
        rate of :math:`f > 0` (precision_at_rate).
    n_iter_ : int

    Notes
    -----
    With ``sample_weight`` (frequency weights :math:`v_i`, see :meth:`fit`) every sum over
    rows is weighted, :math:`\sum_i v_i \ell(\cdot)`, and :math:`n`, :math:`n_+` become
    :math:`\sum_i v_i` and :math:`\sum_{i \in P} v_i`: the Lagrangian of the rows repeated.

    Examples
    --------
    >>> from quantile_surrogate.datasets import make_gaussian_mixture
    >>> X, y = make_gaussian_mixture(300, random_state=0)
    >>> clf = LagrangianBaseline(target=0.9, max_iter=200, random_state=0).fit(X, y)
    >>> bool((clf.predict(X)[y == 1] == 1).mean() >= 0.9)  # training recall >= target
    True
    """

    _objectives = ("precision_at_recall", "precision_at_rate")

    _parameter_constraints: dict = {
        **RateBaseline._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "surrogate": [StrOptions(set(EBAN_SURROGATES))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "dual_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        objective="precision_at_recall",
        target=None,
        alpha=1e-4,
        surrogate="logistic",
        learning_rate=0.05,
        dual_learning_rate=10.0,
        max_iter=2000,
        random_state=None,
    ):
        self.objective = objective
        self.target = target
        self.alpha = alpha
        self.surrogate = surrogate
        self.learning_rate = learning_rate
        self.dual_learning_rate = dual_learning_rate
        self.max_iter = max_iter
        self.random_state = random_state

    def _gradients(self, X, positive, w, b, lam, weight):
        """``(dL/dw, dL/db, dL/dlambda)`` of the scaled Lagrangian; ``weight`` (n,) counts each row's copies."""
        total = weight.sum()
        f = X @ w + b
        objective = self._objective_spec()
        constraint_rows = objective.subset_mask(positive)
        # The rate form maximises true positives (eq. (10)); precision at recall bounds false positives (eq. (7)).
        penalized = objective.penalized["tp" if "tp" in objective.forms() else "fp"]
        objective_rows = positive if penalized == "positives" else ~positive
        objective_sign = 1.0 if penalized == "positives" else -1.0  # a TP bound uses l(f), an FP bound l(-f)
        floor = objective.bound == "at_least"  # recall: a budget of misses; a rate: a budget of positives
        constraint_sign = 1.0 if floor else -1.0
        budget = ((1.0 - self._target()) if floor else self._target()) * weight[constraint_rows].sum()
        obj_loss, obj_slope = _surrogate(objective_sign * f[objective_rows], self.surrogate)
        con_loss, con_slope = _surrogate(constraint_sign * f[constraint_rows], self.surrogate)
        grad_f = np.zeros(X.shape[0])
        grad_f[objective_rows] += weight[objective_rows] * objective_sign * obj_slope / total
        grad_f[constraint_rows] += weight[constraint_rows] * lam * constraint_sign * con_slope / total
        constraint = (weight[constraint_rows] @ con_loss - budget) / total
        return X.T @ grad_f + self.alpha * w, grad_f.sum(), constraint

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sample_weight=None):
        """Run simultaneous primal descent and dual ascent on the Lagrangian.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two classes
        sample_weight : array-like of shape (n,), >= 0, or None
            Frequency weights: every sum over rows in the Lagrangian (and ``n``, ``n_+``) is a
            sum of weights, so an integer weight is the row repeated and a zero weight drops
            it; ``threshold_`` is the weighted empirical quantile.

        Returns
        -------
        self : LagrangianBaseline
        """
        self._check_objective()
        X, positive = self._validate_fit_data(X, y)
        X = np.asarray(X, dtype=np.float64)
        checked = self._fit_weight(sample_weight, positive)
        weight = np.ones(X.shape[0]) if checked is None else checked
        rng = check_random_state(self.random_state)
        theta = 0.01 * rng.standard_normal(X.shape[1] + 1)  # (w, b)
        lam = 1.0
        # Adam state; the usual constants (Kingma & Ba 2015).
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        first, second = np.zeros_like(theta), np.zeros_like(theta)
        self.constraint_curve_ = []
        for t in range(1, self.max_iter + 1):
            grad_w, grad_b, constraint = self._gradients(X, positive, theta[:-1], theta[-1], lam, weight)
            grad = np.append(grad_w, grad_b)
            first = beta1 * first + (1 - beta1) * grad
            second = beta2 * second + (1 - beta2) * grad**2
            theta = theta - self.learning_rate * (first / (1 - beta1**t)) / (np.sqrt(second / (1 - beta2**t)) + eps)
            lam = max(0.0, lam + self.dual_learning_rate * constraint)
            self.constraint_curve_.append(float(constraint))
        self.dual_ = float(lam)
        self.n_iter_ = self.max_iter
        w, b = theta[:-1], theta[-1]
        above = X @ w + b > 0
        rows = self._objective_spec().subset_mask(positive)
        self.constrained_rate_ = float(weight[rows] @ above[rows] / weight[rows].sum())
        return self._finish_fit(X, positive, w, b, sample_weight=checked)
