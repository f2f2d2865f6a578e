"""Exact, non-differentiable evaluation metrics on NumPy arrays.

Each function takes ``y_true`` (binary: {0, 1}, bool, or {-1, 1} with 1 positive) and
``y_score`` (higher means more positive), as array-likes (lists, NumPy arrays, CPU
tensors), and returns a float. The estimator's ``score`` and the experiments use these,
so training and evaluation speak the same language.

A metric that cannot be computed (a recall without positives, a false positive rate
without negatives) returns NaN with an ``UndefinedMetricWarning``, as scikit-learn does,
never a silent 0.0: average such values with ``np.nanmean`` or drop the split.

The ranking metrics (:mod:`quantile_surrogate.metrics.ranking`) take a third array, the query of
each row, and average a per-query value over the queries: :func:`precision_at_k_per_query`,
:func:`ndcg_at_k` (graded relevance), and :func:`bootstrap_over_queries`, which resamples whole
queries. Queries without a relevant row are left out of their mean (and counted).
"""

from ._exact import precision_at_recall, predicted_positive_rate, recall_at_fpr
from ._top_k import count_at_rate, precision_at_k, precision_at_rate
from .ranking import QueryInterval, QueryScores, bootstrap_over_queries, ndcg_at_k, precision_at_k_per_query

__all__ = [
    "precision_at_recall",
    "precision_at_rate",
    "precision_at_k",
    "recall_at_fpr",
    "predicted_positive_rate",
    "count_at_rate",
    "precision_at_k_per_query",
    "ndcg_at_k",
    "bootstrap_over_queries",
    "QueryScores",
    "QueryInterval",
]
