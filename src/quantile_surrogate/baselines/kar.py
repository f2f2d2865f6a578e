"""Kar, Narasimhan & Jain (ICML 2015): the average surrogate for precision@k, by subgradient descent."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from .. import metrics
from .._utils.checks import INTEGER_RANGE_MESSAGE, LENGTH_MISMATCH_MESSAGE, check_binary, check_integer
from ._base import RateBaseline

__all__ = ["KarAverageSurrogate", "prec_at_k_avg_surrogate", "KAR_NO_WEIGHTS_MESSAGE", "KAR_FIT_PARAMS_MESSAGE"]

KAR_NO_WEIGHTS_MESSAGE = (
    "KarAverageSurrogate.fit() takes no `sample_weight`: Kar et al.'s average surrogate is a maximum over "
    "sets of exactly k rows, which row weights do not define. For weighted precision at a rate use "
    "QuantileClassifier(objective='precision_at_rate'), AccuracyAtTheTop, LagrangianBaseline or "
    "LogisticRegressionBaseline, whose fit takes sample_weight."
)
"""The ``TypeError`` message of ``KarAverageSurrogate.fit(..., sample_weight=...)``."""
#: The ``TypeError`` message of ``KarAverageSurrogate.fit`` for a keyword it does not take.
KAR_FIT_PARAMS_MESSAGE = "KarAverageSurrogate.fit() got unexpected keyword arguments {names}; it takes only X and y."


def prec_at_k_avg_surrogate(scores, positive, k):
    r"""The average surrogate :math:`\ell^{avg}_{prec@k}` and one subgradient with respect to ``scores``.

    Let :math:`P` and :math:`N` be the positive and negative rows (:math:`n_+ = |P| \ge k`),
    :math:`s` the scores, and :math:`\mathcal Y_k` the sets :math:`S` of exactly :math:`k`
    rows. For :math:`S \in \mathcal Y_k` write :math:`S^- = S \cap N` for its negatives and
    :math:`\bar s_{P \setminus S}` for the mean score of the positives left out of it. Then

    .. math::

        \ell^{avg}(s) = \frac1k \max_{S \in \mathcal Y_k}
            \sum_{i \in S^-} \bigl(1 + s_i - \bar s_{P \setminus S}\bigr).

    Each negative in the predicted top :math:`k` pays a unit margin against the *average*
    left-out positive (the "avg" of the name; the "max" surrogate compares against single
    positives). For fixed :math:`S` the term is linear in :math:`s`, so the maximum is convex
    in :math:`s`, hence in :math:`w` for :math:`s = Xw`. Taking :math:`S` = the actual top
    :math:`k` (its :math:`m` negatives all score at least as high as every left-out positive)
    gives :math:`\ell^{avg}(s) \ge m / k = 1 - \mathrm{prec@}k(s)`: it is an upper bound, and it
    is 0 only when the top :math:`k` holds positives only, with a margin of 1 over the mean
    of the rest.

    The maximum is computed exactly in :math:`O(n \log n)`: for :math:`m` negatives in
    :math:`S` the best choice is the :math:`m` highest-scoring negatives and the
    :math:`k - m` highest-scoring positives (leaving out the :math:`n_+ - k + m` lowest), so

    .. math::

        k\,\ell^{avg}(s) = \max_{0 \le m \le \min(k, n_-)}
            \Bigl[m + \sum_{j \le m} s^-_{[j]} - m\, \mathrm{mean}\bigl(s^+_{(1)}, \dots, s^+_{(n_+ - k + m)}\bigr)\Bigr]

    with :math:`s^-_{[j]}` the negatives' scores in decreasing and :math:`s^+_{(j)}` the
    positives' in increasing order; :math:`m = 0` gives 0.

    Parameters
    ----------
    scores : ndarray of shape (n,), float
    positive : ndarray of shape (n,), bool
    k : int, 1 <= k <= n
        Used as ``min(k, n_+)`` (see Notes); with no positive the loss is 0.

    Returns
    -------
    (loss, grad) : float and ndarray of shape (n,)
        ``grad`` is the subgradient of the maximising :math:`S`: :math:`1/k` on its negatives,
        :math:`-m / (k (n_+ - k + m))` on each left-out positive, 0 elsewhere.

    Raises
    ------
    TypeError
        If ``k`` is not an integer.
    ValueError
        If ``k`` is not in ``[1, n]``, ``positive`` is not binary, or not one per score.

    Notes
    -----
    Reconstructed in our notation from the paper's idea (negatives in the top k against the
    average left-out positive); the paper's own text was not at hand, so check the
    normalisation against its section on :math:`\ell^{avg}` before citing it as exact. The
    properties claimed above (convexity, the upper bound, the closed-form maximum) are
    tested against enumeration over all :math:`S`. When :math:`k > n_+` no set of
    :math:`k` rows is all positive, the left-out mean can be empty, and the bound above fails;
    we then use :math:`k = n_+`, the largest cut at which a perfect ranking has precision 1.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([3.0, 2.0, 1.0, 0.0]); y = np.array([True, False, True, False])
    >>> float(prec_at_k_avg_surrogate(s, y, 1)[0])  # S = {row 1}: 1 + 2 - mean(3, 1) = 1
    1.0
    """
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(check_binary(positive, "positive"))
    if scores.ndim != 1 or positive.shape != scores.shape:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name="positive", got=positive.size, expected=scores.size))
    k = check_integer(k, "k", minimum=1)
    if k > scores.size:
        raise ValueError(INTEGER_RANGE_MESSAGE.format(name="k", wanted=f"an integer in [1, {scores.size}] "
                                                      "(at most the number of rows)", value=k))
    return _prec_at_k_avg_surrogate(scores, positive, k)


def _prec_at_k_avg_surrogate(scores: np.ndarray, positive: np.ndarray, k: int):
    """:func:`prec_at_k_avg_surrogate` without its checks (the fit's hot path, on checked arrays)."""
    scores, positive = np.asarray(scores, dtype=np.float64), np.asarray(positive, dtype=bool)
    grad = np.zeros_like(scores)
    n_pos = int(positive.sum())
    k = min(int(k), n_pos)
    neg_idx = np.flatnonzero(~positive)
    pos_idx = np.flatnonzero(positive)
    if k == 0 or neg_idx.size == 0:
        return 0.0, grad
    neg_order = neg_idx[np.argsort(-scores[neg_idx], kind="stable")]
    pos_order = pos_idx[np.argsort(scores[pos_idx], kind="stable")]
    top_m = min(k, neg_idx.size)
    m = np.arange(top_m + 1)
    neg_sums = np.concatenate([[0.0], np.cumsum(scores[neg_order[:top_m]])])
    pos_sums = np.concatenate([[0.0], np.cumsum(scores[pos_order])])
    left_out = n_pos - k + m
    with np.errstate(invalid="ignore", divide="ignore"):
        left_mean = np.where(left_out > 0, pos_sums[left_out] / np.maximum(left_out, 1), 0.0)
    values = m + neg_sums - m * left_mean
    best = int(np.argmax(values))  # first maximum, so m = 0 wins ties and a zero loss has zero gradient
    if best == 0:
        return 0.0, grad
    grad[neg_order[:best]] = 1.0 / k
    grad[pos_order[: left_out[best]]] = -best / (k * left_out[best])
    return float(values[best] / k), grad


class KarAverageSurrogate(RateBaseline):
    r"""A linear scorer trained on Kar et al.'s average surrogate for precision@k.

    Kar, Narasimhan & Jain, "Surrogate Functions for Maximizing Precision at the Top",
    ICML 2015; the paper compares against it on KDD Cup 2008 (Mackey, Luo & Eban 2018,
    section 6). With :math:`k = \lceil \tau b \rceil` on a batch of :math:`b` rows it minimises

    .. math::

        F(w) = \ell^{avg}_{prec@k}(X w) + \tfrac{\alpha}{2} \lVert w \rVert^2

    (:func:`prec_at_k_avg_surrogate` defines :math:`\ell^{avg}`) by subgradient descent with
    step :math:`\eta_t = \eta / \sqrt{t}`, from a small random start drawn from
    ``random_state``. A batch is all rows (``batch_size=None``, the default) or a random
    subset per step (Kar et al.'s SGD@k-avg form). The surrogate is not smooth and
    subgradient steps do not always descend, so the iterate with the lowest full-data
    :math:`F` (checked after every epoch) is kept.

    The surrogate needs a margin: at :math:`w = 0` it is 1 (for :math:`n_- \ge k`), and when
    no direction ranks the top :math:`k` clear of the other positives by a unit margin its
    minimiser stays near :math:`w = 0`. On the Gaussian mixture of
    :func:`~quantile_surrogate.datasets.make_gaussian_mixture` (tau = 0.05) it does, and the
    fit is poor; on Ionosphere it does well. Features should be standardised, since the
    margin is in score units.

    The surrogate is invariant to adding a constant to every score, so there is no
    intercept (``intercept_ = 0``); ``threshold_`` is moved on the training data so that
    ``ceil(tau n)`` rows are predicted positive, as for every baseline here.

    Parameters
    ----------
    objective : {"precision_at_rate"}, default="precision_at_rate"
    target : float in (0, 1) or None, default=None
        The predicted positive rate tau = k / n; None is the objective's default target (0.95 for a recall, 0.05 for a rate or an FPR).
    alpha : float >= 0, default=1e-3
        L2 penalty.
    learning_rate : float > 0, default=0.1
        :math:`\eta`.
    max_iter : int, default=300
        Epochs (passes over the data).
    batch_size : int or None, default=None
    random_state : None, int or RandomState, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,), zero
    threshold_ : float
    classes_ : ndarray of shape (2,)
    loss_curve_ : list of float
        Full-data :math:`F` after each epoch.
    n_iter_ : int
        Epoch of the kept iterate (0 = the start).

    Examples
    --------
    >>> from quantile_surrogate.datasets import load_ionosphere
    >>> X, y = load_ionosphere()
    >>> clf = KarAverageSurrogate(target=0.05, max_iter=20, random_state=0).fit(X, y)
    >>> int(clf.predict(X).sum())  # ceil(0.05 * 351) training rows predicted positive
    18
    """

    _parameter_constraints: dict = {
        **RateBaseline._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        objective="precision_at_rate",
        target=None,
        alpha=1e-3,
        learning_rate=0.1,
        max_iter=300,
        batch_size=None,
        random_state=None,
    ):
        self.objective = objective
        self.target = target
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.random_state = random_state

    def _objective(self, X, positive, w):
        k = metrics.count_at_rate(X.shape[0], self._target(), "ceil")
        loss, grad = _prec_at_k_avg_surrogate(X @ w, positive, k)
        return loss + 0.5 * self.alpha * (w @ w), X.T @ grad + self.alpha * w

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, **fit_params):
        """Minimise the average surrogate plus the L2 penalty by subgradient descent.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two classes
        **fit_params
            None is accepted. There is no ``sample_weight``: the surrogate is a maximum over
            sets of exactly ``k`` rows, which a fractional weight does not define, so weights
            are refused with a ``TypeError`` that names the estimators that take them (and
            metadata routing cannot request them).

        Returns
        -------
        self : KarAverageSurrogate
        """
        if fit_params:
            raise TypeError(KAR_NO_WEIGHTS_MESSAGE if "sample_weight" in fit_params else
                            KAR_FIT_PARAMS_MESSAGE.format(names=sorted(fit_params)))
        self._check_objective()
        X, positive = self._validate_fit_data(X, y)
        X = np.asarray(X, dtype=np.float64)
        rng = check_random_state(self.random_state)
        n, d = X.shape
        w = 0.01 * rng.standard_normal(d)
        best_w, best_value = w.copy(), self._objective(X, positive, w)[0]
        self.loss_curve_, self.n_iter_ = [], 0
        batch = n if self.batch_size is None else min(self.batch_size, n)
        step = 0
        for epoch in range(1, self.max_iter + 1):
            order = np.arange(n) if batch == n else rng.permutation(n)
            for start in range(0, n, batch):
                rows = order[start : start + batch]
                step += 1
                _, grad = self._objective(X[rows], positive[rows], w)
                w = w - self.learning_rate / np.sqrt(step) * grad
            value = self._objective(X, positive, w)[0]
            self.loss_curve_.append(float(value))
            if value < best_value:
                best_w, best_value, self.n_iter_ = w.copy(), value, epoch
        return self._finish_fit(X, positive, best_w, 0.0)
