r"""What an objective is: the one table of objectives, exact thresholds and the tie policy,
evaluation, held-out guarantees and bootstrap intervals.

- :data:`OBJECTIVES` (:class:`Objective` records, :func:`get_objective`): each objective's subset
  ``A`` that sets the threshold, its quantile loss and its exact metric, named once;
- :func:`objective_loss`, :func:`objective_metric`, :func:`predict_scores`
  (:mod:`quantile_surrogate.objectives.evaluation`): what training and evaluation call by name;
- :mod:`quantile_surrogate.objectives.thresholds`: the exact threshold on given scores and the tie
  policy (:class:`TiedScoresWarning`);
- :mod:`quantile_surrogate.objectives.guarantees`: thresholds set on held-out rows with a
  probability guarantee;
- :mod:`quantile_surrogate.objectives.bootstrap`: bootstrap intervals of the metrics.
"""

from . import bootstrap, guarantees, thresholds
from ._registry import OBJECTIVES, Objective, get_objective, subset_mask
from .evaluation import objective_loss, objective_metric, predict_scores, training_loss
from .thresholds import TiedScoresWarning

__all__ = [
    "Objective",
    "OBJECTIVES",
    "get_objective",
    "objective_loss",
    "objective_metric",
    "predict_scores",
    "TiedScoresWarning",
]
