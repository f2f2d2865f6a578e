"""Several rate constraints at the objective's threshold (issue 25, first part: the vocabulary and the multipliers).

``rate`` and ``gap`` build constraints; :class:`ConstraintSet` holds their Lagrange multipliers and
turns them into a loss term (the proxy-Lagrangian): add ``constraint_set.penalty(scores, labels,
threshold, groups)`` to the objective's loss and call ``constraint_set.update(...)`` after each step.
``train()`` and ``QuantileClassifier(constraints=...)`` do not take them yet.
"""

from ._lagrangian import ConstraintSet
from ._rates import bound_rates, exact_rates
from ._vocabulary import RATES, RateConstraint, gap, rate

__all__ = ["ConstraintSet", "RATES", "RateConstraint", "bound_rates", "exact_rates", "gap", "rate"]
