"""Several rate constraints at the objective's threshold (issue 25, first part: the vocabulary and the multipliers).

``rate`` and ``gap`` build constraints; :class:`ConstraintSet` holds their Lagrange multipliers and
turns them into a loss term (the proxy-Lagrangian): add ``constraint_set.penalty(scores, labels,
threshold, groups)`` to the objective's loss and call ``constraint_set.update(...)`` after each step.
:func:`check_satisfiable` refuses, before training, constraints that no classifier meets together.
:func:`parse_constraint` reads the command line's compact text, e.g. ``"recall gap <= 0.05 by sex"``.
"""

from ._feasibility import check_satisfiable
from ._lagrangian import ConstraintSet, largest_excess
from ._parse import parse_constraint
from ._rates import bound_rates, exact_rates
from ._vocabulary import RATES, RateConstraint, gap, rate

__all__ = ["ConstraintSet", "check_satisfiable", "largest_excess", "parse_constraint", "RATES", "RateConstraint", "bound_rates", "exact_rates", "gap", "rate"]
