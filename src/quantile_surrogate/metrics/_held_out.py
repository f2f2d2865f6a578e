r"""The objectives' exact metrics on trusted arrays, for the selection loops that score many models.

The K-fold selection scores every (restart, epoch count) candidate on every fold, 75 calls per
default fit, on labels and scores it made itself, so these skip the public functions' checks and
warnings and go straight to the counting core (:mod:`._counting`): one sort, the counts at each
distinct score, the objective's reduce. The values are those of
:func:`quantile_surrogate.objectives.objective_metric` (tests/metrics/test_held_out.py checks
equality, not closeness, on random data with ties). A metric that is undefined (no positive; no
negative for the FPR) is NaN, without the public functions' warning.
"""

from __future__ import annotations

import numpy as np

from ._counting import OBJECTIVE_REDUCES, average_precision_from_counts, counts_at_thresholds

__all__ = ["held_out_average_precision", "held_out_metric"]


def held_out_metric(positive: np.ndarray, scores: np.ndarray, objective: str, target: float) -> float:
    """The exact metric of ``objective`` at ``target``, unweighted and ungrouped, on trusted arrays.

    Parameters
    ----------
    positive : bool ndarray of shape (n,)
    scores : float64 ndarray of shape (n,), finite
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}
    target : float in (0, 1)

    Returns
    -------
    float
        What :func:`quantile_surrogate.objectives.objective_metric` returns on these arrays
        (NaN, without a warning, where it is undefined).
    """
    return float(OBJECTIVE_REDUCES[objective](counts_at_thresholds(positive, scores), target))


def held_out_average_precision(positive: np.ndarray, scores: np.ndarray) -> float:
    r"""Average precision, :math:`\sum_j (R_j - R_{j-1}) P_j` over the distinct scores, highest first (:math:`R_0 = 0`).

    What ``sklearn.metrics.average_precision_score`` computes (the step-wise area under the
    precision-recall curve, no interpolation), from the same one sort as :func:`held_out_metric`;
    equal to it up to the order of the floating point sum. NaN without a positive.

    Parameters
    ----------
    positive : bool ndarray of shape (n,)
    scores : float64 ndarray of shape (n,), finite

    Returns
    -------
    float
    """
    return float(average_precision_from_counts(counts_at_thresholds(positive, scores)))
