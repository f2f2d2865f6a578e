"""The boosted family of :class:`~quantile_surrogate.QuantileClassifierCV`: gradient-boosted trees on the same folds.

A :class:`~quantile_surrogate.estimators.boosted.QuantileBoostingClassifier` is fitted on each
fold's training rows, as its own ``fit`` would fit it (the log-loss trees, then the quantile
rounds chosen on its own validation splits *inside* those rows: the held-out fold never chose
anything it scores), and scored on the held-out fold twice, as two entries of the family rule's
arrays (restart ``r0``, the first logistic restart, and the epoch columns 0 and 1):

- column 0, the family's *start*: its log-loss trees alone, which is "LightGBM + threshold";
- column 1: the same trees with the quantile rounds kept.

So the start rule applies inside this family as inside the others (the quantile rounds replace the
plain trees only for a held-out gain above noise), and the family competes with the linear and MLP
families by the same rule between families. The refit fits the estimator on every row: without
quantile rounds (``n_quantile_estimators=0``) where column 0 was chosen.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import clone

from ..selection._scorer import held_out_scores
from .boosted import QuantileBoostingClassifier

__all__ = ["BOOSTED", "MISSING_NOTE", "NAN_NOTE", "SPARSE_TREES_NOTE", "boosted_entries", "boosted_fold",
           "boosted_refit", "boosted_template", "has_nan"]

BOOSTED = "boosted"
"""The family's name in ``cv_results_["param_family"]`` and ``family_``."""
MISSING_NOTE = ("boosting='auto' left the boosted family out: LightGBM is not installed "
                "(pip install 'quantile-surrogate[boost]').")
SPARSE_TREES_NOTE = ("boosting='auto' left the boosted family out: X is sparse, and on the sparse text and one-hot "
                     "sets measured the family rule never chose the trees, which took a fifth of the fit "
                     "(docs/sparse.md). Pass boosting=QuantileBoostingClassifier() to score them anyway.")
NAN_NOTE = ("X has missing values (NaN): only the boosted family was trained (trees take NaN; the linear and MLP "
            "families do not). Impute X (e.g. sklearn.impute.SimpleImputer) to compare them too.")


def has_nan(X) -> bool:
    """Whether a dense or SciPy sparse ``X`` holds a NaN (among its stored values)."""
    values = X.data if sp.issparse(X) else X
    return bool(np.isnan(values).any())


def boosted_template(boosting, objective, target, seed, sparse=False):
    """``(template or None, notes)``: the family's unfitted estimator with the CV's objective, target and seed.

    ``boosting`` is None (no boosted family), "auto" (``QuantileBoostingClassifier()`` with LightGBM
    where it is installed and ``X`` is dense, else none and :data:`MISSING_NOTE` or
    :data:`SPARSE_TREES_NOTE`) or a ``QuantileBoostingClassifier`` whose other settings are kept.
    """
    if boosting is None:
        return None, []
    if isinstance(boosting, str):  # "auto": the parameter validation admits no other string
        if sparse:  # never chosen on the sparse development sets, at a fifth of the fit (docs/sparse.md)
            return None, [SPARSE_TREES_NOTE]
        if importlib.util.find_spec("lightgbm") is None:
            return None, [MISSING_NOTE]
        boosting = QuantileBoostingClassifier()
    return clone(boosting).set_params(objective=objective, target=target, random_state=seed), []


def boosted_fold(template, X, y01, fit_rows, held_rows, held, settings, weight=None, codes=None) -> tuple:
    """One fold: ``(metric, loss, average precision, seconds)``, the first three of shape (2,) (start, quantile rounds).

    ``held`` is the held-out fold's :class:`~quantile_surrogate.selection._scorer.FoldData` (labels,
    weights, group codes, the subset ``A``); ``settings`` the loss settings of the held-out loss
    (:func:`~quantile_surrogate.selection._scorer.held_out_scores`, which scores every family).
    """
    model = clone(template)
    start = time.perf_counter()
    model.fit(X[fit_rows], y01[fit_rows], sample_weight=None if weight is None else weight[fit_rows],
              sensitive_features=None if codes is None else codes[fit_rows])
    seconds = time.perf_counter() - start
    rows = X[held_rows]
    values = [held_out_scores(torch.as_tensor(scores), held, settings, average_precision=True)
              for scores in (model._start_raw_scores(rows), model._raw_scores(rows))]
    metric, loss, ranking = (np.array(v, dtype=np.float64) for v in zip(*values))
    return metric, loss, ranking, seconds


def boosted_refit(template, quantile_rounds: bool, X, y, weight=None, sensitive_features=None):
    """The family's estimator fitted on every row; only its log-loss trees where ``quantile_rounds`` is False."""
    model = clone(template)
    if not quantile_rounds:
        model.set_params(n_quantile_estimators=0)
    return model.fit(X, y, sample_weight=weight, sensitive_features=sensitive_features)


def boosted_entries(result, shape, restart) -> tuple:
    """One fold's :func:`boosted_fold` result as the family rule's entries.

    ``(metric, loss, ranking, seconds)``: the first three of shape ``(1, *shape)`` = (1, restarts, epoch
    counts), NaN but at ``(restart, 0)`` (the log-loss trees) and ``(restart, 1)`` (with the quantile
    rounds; absent where the epoch grid has one column, ``max_epochs=0``); ``seconds`` of shape (1,).
    """
    columns = min(2, shape[1])
    entries = []
    for values in result[:3]:
        full = np.full((1, *shape), np.nan)
        full[0, restart, :columns] = values[:columns]
        entries.append(full)
    return (*entries, np.array([result[3]]))
