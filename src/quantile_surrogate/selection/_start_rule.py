r"""The one rule core of held-out selection, and its variants: leave a reference only for a gain above the noise.

Every held-out choice in the package compares entries with a *reference* on :math:`K` held-out
folds (:math:`K = 1` for a validation split). With :math:`d_k` the paired gains over the
reference, the core (:func:`clears_bar`) accepts an entry when

.. math::
    \bar d > z \max\big(\hat\sigma,\ \sigma_0\big), \qquad \bar d > 0, \qquad
    \hat\sigma = \operatorname{sd}_k(d_k) / \sqrt K \ (0 \text{ for } K = 1),

:math:`z` = ``n_se`` and :math:`\sigma_0` a binomial noise floor (:func:`metric_noises`). The variants differ only in the
reference, the floor and how the entries that clear the bar are ordered:

- :func:`select_over_start` (the start rule inside each family of QuantileClassifierCV; it was
  QuantileClassifier's K-fold rule until issue 21, now :mod:`._out_of_fold_rule`): the logistic
  start, both models' binomial noise, the largest gain (ties: the lower loss);
- :func:`keep_start_unless_gain` (QuantileClassifier's validation split): the same with one fold;
- :func:`select_rounds` (boosting's rounds): the log-loss start with ``z = 0``, ties the lower loss;
- :func:`~._family_rule.select_entries` and :func:`~._family_rule.select_by_family`
  (QuantileClassifierCV): the start rule in each model family, then between the families.

Why each rule is as it is, with the measurements: ``docs/selection.md``. NumPy only: the rules read
held-out values that :mod:`._scorer` has already computed.
"""

from __future__ import annotations

import numpy as np

from ..objectives import get_objective
from ..objectives.thresholds import allowed_count

__all__ = ["clears_bar", "keep_start_unless_gain", "metric_noise", "metric_noises", "paired_se",
           "select_over_start", "select_rounds"]


# -- the core ---------------------------------------------------------------------------------------
def paired_se(gains) -> np.ndarray:
    r""":math:`\hat\sigma = \operatorname{sd}_k(d_k) / \sqrt K` over axis 0 (ddof 1); zeros for one fold.

    An infinite gain on some fold (a diverged entry or reference) gives a NaN spread, so no bar is passed.
    """
    gains = np.asarray(gains, dtype=np.float64)
    folds = gains.shape[0]
    with np.errstate(invalid="ignore"):
        return gains.std(axis=0, ddof=1) / np.sqrt(folds) if folds > 1 else np.zeros(gains.shape[1:])


def clears_bar(mean_gain, bar):
    r"""The test of every rule: :math:`\bar d > \text{bar}` and :math:`\bar d > 0` (NaN never clears)."""
    with np.errstate(invalid="ignore"):
        return (mean_gain > bar) & (mean_gain > 0)


def metric_noise(objective: str, target: float, y_held, metric, sample_weight=None) -> float:
    r"""The binomial standard error of a held-out metric: :math:`\sqrt{p (1 - p) / n}`.

    ``n`` is the number of held-out rows the metric is a proportion of: the predicted positives
    for a precision (``ceil(c n_held)`` rows at a rate ``c``; ``ceil(c P) / p`` at a recall ``c``,
    ``P`` the held-out positives), the positives for a recall (``recall_at_fpr``); sums of
    ``sample_weight`` (frequency weights) when given. ``p`` is clipped to
    ``[1/(2n), 1 - 1/(2n)]``, so a held-out value of exactly 0 or 1 still has about one row's noise.

    Parameters
    ----------
    objective : str
        A name in :data:`~quantile_surrogate.objectives.OBJECTIVES`.
    target : float
        The constraint's level.
    y_held : array-like of shape (n_held,)
        The held-out labels (0/1).
    metric : float
        The held-out metric ``p`` of the model whose noise this is.
    sample_weight : array-like of shape (n_held,), optional
        The held-out rows' frequency weights.

    Returns
    -------
    float
        The standard error; 0 where the proportion has no rows.

    Examples
    --------
    >>> y = [1] * 20 + [0] * 180
    >>> round(metric_noise("precision_at_rate", 0.05, y, 0.5), 4)  # 10 rows at the top: sqrt(0.25 / 10)
    0.1581
    """
    return float(metric_noises(objective, target, y_held, np.float64(metric), sample_weight))


def metric_noises(objective: str, target: float, y_held, metrics, sample_weight=None) -> np.ndarray:
    """:func:`metric_noise` of every value of ``metrics`` (any shape) on the same held-out rows; NaN stays NaN."""
    spec = get_objective(objective)
    y_held = np.asarray(y_held)
    metrics = np.asarray(metrics, dtype=np.float64)
    if sample_weight is None:
        positives, total = int((y_held == 1).sum()), len(y_held)
    else:
        weight = np.asarray(sample_weight, dtype=np.float64)
        positives, total = float(weight[y_held == 1].sum()), float(weight.sum())
    if spec.subset == "negatives":  # the metric is a recall over the positives
        n = np.full(metrics.shape, float(positives))
    elif spec.subset == "all":  # the precision of the top ceil(c n) rows
        n = np.full(metrics.shape, float(allowed_count(spec, total, target)))
    else:  # ceil(c P) true positives among ceil(c P) / precision predicted positives
        n = allowed_count(spec, positives, target) / np.maximum(metrics, 1.0 / max(total, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(np.maximum(metrics, 0.5 / n), 1.0 - 0.5 / n)
        noise = np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n)
    return np.where(n > 0, noise, np.where(np.isnan(metrics), np.nan, 0.0))


# -- the variants -----------------------------------------------------------------------------------
def select_over_start(fold_metric, fold_loss, start, noise, n_se: float, candidate_noise=None) -> tuple:
    r"""The candidate to keep instead of the start, or the start: the core with both models' binomial floor.

    With :math:`m_k(c)` the held-out metric of candidate :math:`c` on fold :math:`k` of :math:`K`
    and :math:`s` = ``start``, the gains :math:`d_k(c) = m_k(c) - m_k(s)` pass :func:`clears_bar` with

    .. math::
        \text{bar}(c) = z \max\big(\hat\sigma(c),\ \sigma_0(c)\big), \qquad
        \sigma_0(c) = \tfrac1K \Big(\sum_k \sigma_{0,k}^2 + \sigma_{k}(c)^2\Big)^{1/2},

    :math:`\sigma_{0,k}` = ``noise[k]`` the start's binomial standard error on fold :math:`k` and
    :math:`\sigma_k(c)` = ``candidate_noise[k, c]`` the candidate's (0 when not given). The passing
    candidate with the largest :math:`\bar d` wins (ties: the lower mean loss); with none, the start
    stays. ``n_se=0`` is the plain argmax of the mean metric (a tie keeps the start). Why the
    floor, why both models' noise and why :math:`z = 2`: ``docs/selection.md``.

    Parameters
    ----------
    fold_metric, fold_loss : ndarray of shape (K, ...)
        Held-out metric and loss per fold and candidate, NaN where a candidate does not exist.
    start : tuple of int
        The start's index into the candidate axes (``fold_metric[:, *start]``).
    noise : array-like of shape (K,)
        The start's binomial standard error on each fold.
    n_se : float >= 0
        :math:`z`.
    candidate_noise : ndarray of the shape of ``fold_metric``, optional
        Each candidate's binomial standard error on each fold (:func:`metric_noises`).

    Returns
    -------
    (index, record) : tuple
        The chosen candidate's index (a tuple) and a dict of ``mean_gain`` and ``gain_se`` (arrays
        of the candidate shape), ``noise_floor`` (the start's part,
        :math:`\tfrac1K (\sum_k \sigma_{0,k}^2)^{1/2}`), ``floor`` (:math:`\sigma_0(c)`), ``bar`` and
        ``eligible`` (the candidates that pass, the start excluded).

    Examples
    --------
    >>> start_metric = np.array([0.5, 0.6, 0.55])
    >>> small = np.stack([start_metric, start_metric + 0.01], axis=1)  # +0.01 on every fold
    >>> large = np.stack([start_metric, start_metric + 0.2], axis=1)
    >>> loss = np.zeros((3, 2))
    >>> select_over_start(small, loss, (0,), [0.05] * 3, 2.0)[0]  # 0.01 < 2 x 0.029: noise
    (0,)
    >>> select_over_start(large, loss, (0,), [0.05] * 3, 2.0)[0]
    (1,)
    """
    fold_metric = np.asarray(fold_metric, dtype=np.float64)
    folds = fold_metric.shape[0]
    with np.errstate(invalid="ignore"):
        gains = fold_metric - fold_metric[(slice(None), *start)].reshape((folds,) + (1,) * (fold_metric.ndim - 1))
        mean_gain = gains.mean(axis=0)
    gain_se = paired_se(gains)
    start_variance = float(np.sum(np.square(noise)))
    own = 0.0 if candidate_noise is None else np.sum(np.square(np.asarray(candidate_noise, dtype=np.float64)), axis=0)
    floors = np.broadcast_to(np.sqrt(start_variance + own) / folds, mean_gain.shape)
    bar = n_se * np.maximum(gain_se, floors)
    eligible = clears_bar(mean_gain, bar)
    eligible[start] = False
    record = dict(mean_gain=mean_gain, gain_se=gain_se, noise_floor=float(np.sqrt(start_variance) / folds),
                  floor=floors, bar=bar, eligible=eligible)
    if not eligible.any():
        return tuple(int(i) for i in start), record
    mean_loss = np.nan_to_num(np.asarray(fold_loss, dtype=np.float64).mean(axis=0), nan=np.inf)
    order = np.lexsort((mean_loss.ravel(), -np.where(eligible, mean_gain, -np.inf).ravel()))
    return tuple(int(i) for i in np.unravel_index(order[0], mean_gain.shape)), record


def keep_start_unless_gain(chosen: float, start: float, noise: float, n_se: float) -> dict:
    r"""One fold (a validation split): keep the start unless ``chosen - start`` clears :math:`z \sigma_0`.

    ``noise`` is :math:`\sigma_0`, the binomial standard error of the difference of the two
    validation metrics (both models' :func:`metric_noise`, taken as independent). Returns
    ``validation_gain``, ``noise_floor``, ``start_kept``, ``decided_by`` ("start" or "metric") and
    ``rule`` (the decision in words), the record ``QuantileClassifier.selection_`` keeps.

    Examples
    --------
    >>> record = keep_start_unless_gain(0.62, 0.60, 0.015, 2.0)
    >>> record["start_kept"], record["rule"].startswith("start: the validation gain over the logistic start, 0.02,")
    (True, True)
    >>> record["rule"].split(", ")[-1]  # 0.02 < 2 x 0.015
    'is not above 2 x 0.015 (binomial standard error of the difference)'
    """
    gain = chosen - start
    kept = not bool(clears_bar(gain, n_se * noise))
    rule = (f"{'start' if kept else 'metric'}: the validation gain over the logistic start, {gain:.4g}, is "
            f"{'not ' if kept else ''}above {n_se:g} x {noise:.4g} (binomial standard error of the difference)")
    return dict(validation_gain=gain, noise_floor=noise, start_kept=kept, decided_by="start" if kept else "metric",
                rule=rule)


def select_rounds(metric, loss) -> int:
    """Boosting's number of quantile rounds: the best mean held-out metric, the start (round 0) winning ties.

    The core with ``z = 0`` against round 0: a round is kept only where it raised the metric;
    among the rounds at the best metric, the lowest held-out loss (NaN: not computed) wins.

    Examples
    --------
    >>> select_rounds(np.array([0.5, 0.6, 0.6]), np.array([1.0, 0.9, 0.8]))
    2
    >>> select_rounds(np.array([0.6, 0.6]), np.array([1.0, 0.1]))  # a tie keeps the start
    0
    """
    best = np.flatnonzero(metric == metric.max())
    with np.errstate(invalid="ignore"):  # every round -inf: a NaN gain, the start stays
        gain = metric[best[0]] - metric[0]
    if not clears_bar(gain, 0.0):
        return 0
    return int(best[np.nanargmin(loss[best])])
