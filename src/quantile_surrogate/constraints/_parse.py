"""The compact text of a constraint, as the command line takes it: ``"recall gap <= 0.05 by sex"``.

Grammar (keywords and rate names in any case, spaces flexible; the column as written)::

    <rate> [gap] (<=|>=) <number>[%] [in each group] [by <column>]

``<rate>`` is a name or alias of :data:`~quantile_surrogate.constraints.RATES` (``recall``/``tpr``,
``false_positive_rate``/``fpr``, ``positive_rate``/``selection_rate``, ``precision``/``ppv``),
``<number>`` a rate in [0, 1] or a percentage (``5%``). A gap (``max_g r_g - min_g r_g``, bounded above;
not of precision) and a rate ``in each group`` are measured in the groups of ``by <column>``, which they
need; a rate over all rows takes no ``by``.
"""

from __future__ import annotations

import math
import re

from ._vocabulary import ALIASES, RATES, RateConstraint, gap, rate

__all__ = ["parse_constraint", "CONSTRAINT_GRAMMAR", "PARSE_MESSAGE"]

#: The grammar and an example, the end of every error of :func:`parse_constraint`.
CONSTRAINT_GRAMMAR = ("write <rate> [gap] (<=|>=) <number> [in each group] [by <column>], e.g. "
                      "'recall gap <= 0.05 by sex' or 'fpr <= 5%'")
#: An error of :func:`parse_constraint`: the text, what is wrong (one of the ``*_PROBLEM`` texts), the grammar.
PARSE_MESSAGE = "Constraint {text!r}: {problem}; " + CONSTRAINT_GRAMMAR + "."
NOT_TEXT_MESSAGE = "A constraint must be a text such as 'recall gap <= 0.05 by sex'; got {type_name}."
# What is wrong, after "Constraint 'TEXT': ".
SHAPE_PROBLEM = "it does not read as a constraint"
RATE_PROBLEM = "{rate!r} is not a rate; the rates are {known}"
NUMBER_PROBLEM = "the bound {number!r} is not a number"
RANGE_PROBLEM = "the bound {number!r} is not a rate in [0, 1] (or a percentage from 0% to 100%)"
GAP_FLOOR_PROBLEM = "a gap has an upper bound only: use <="
PRECISION_GAP_PROBLEM = ("a gap of precision is left out (each group's precision has its own moving denominator): "
                         "bound it in each group instead, e.g. 'precision >= 0.8 in each group by sex'")
PRECISION_CEILING_PROBLEM = "precision takes a floor only: use >="
GAP_EACH_PROBLEM = "a gap is one number across the groups, not one in each group: leave out 'in each group'"
BY_NEEDED_PROBLEM = "{what} is measured in groups: add 'by <column>' naming the column of group labels"
BY_UNUSED_PROBLEM = ("a rate over all rows has no groups, so 'by {column}' would measure nothing: leave it out, or "
                     "add 'gap' or 'in each group'")

_PATTERN = re.compile(
    r"^\s*(?P<rate>\w+)(?:\s+(?P<gap>gap))?\s*(?P<op><=|>=|≤|≥)\s*(?P<number>[^\s%]+)\s*(?P<percent>%)?"
    r"(?P<each>\s+in\s+each\s+group)?(?:\s+by\s+(?P<by>\S.*?))?(?P<each_after>\s+in\s+each\s+group)?\s*$",
    re.IGNORECASE)
_KNOWN_RATES = ", ".join(f"{name} ({', '.join(a for a, r in ALIASES.items() if r == name)})" for name in RATES)


def _bound(number: str, percent: bool, fail) -> float:
    try:
        value = float(number)
    except ValueError:
        raise fail(NUMBER_PROBLEM.format(number=number)) from None
    value = value / 100 if percent else value
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise fail(RANGE_PROBLEM.format(number=number + ("%" if percent else "")))
    return value


def parse_constraint(text: str) -> tuple[RateConstraint, str | None]:
    """The constraint a compact text describes, and the column of its groups (None for a rate over all rows).

    Parameters
    ----------
    text : str
        ``<rate> [gap] (<=|>=) <number>[%] [in each group] [by <column>]`` (the module's grammar):
        keywords and rate names in any case, spaces flexible; ``<column>`` is kept as written.

    Returns
    -------
    constraint : RateConstraint
        As :func:`~quantile_surrogate.constraints.rate` or :func:`~quantile_surrogate.constraints.gap`
        build it, so its ``name`` is the text in canonical form (without ``by``).
    by : str or None
        The column named by ``by``: needed by a gap or a rate in each group, refused for a rate over
        all rows.

    Raises
    ------
    ValueError
        If the text does not follow the grammar, names no known rate, bounds a gap from below, asks for a
        gap of precision or a ceiling on it, or has
        ``by`` where it is refused or lacks it where it is needed; the message quotes the text, says
        what is wrong and shows the grammar with an example.

    Examples
    --------
    >>> parse_constraint("recall gap <= 0.05 by sex")
    (RateConstraint(rate='recall', scope='gap', at_least=None, at_most=0.05), 'sex')
    >>> constraint, by = parse_constraint("FPR <= 5%")
    >>> constraint.name, by
    ('false_positive_rate <= 0.05', None)
    >>> parse_constraint("recall >= 0.7 in each group by race")[0].name
    'recall >= 0.7 in each group'
    """
    if not isinstance(text, str):
        raise TypeError(NOT_TEXT_MESSAGE.format(type_name=type(text).__name__))

    def fail(problem: str) -> ValueError:
        return ValueError(PARSE_MESSAGE.format(text=text, problem=problem))

    match = _PATTERN.match(text)
    if match is None:
        raise fail(SHAPE_PROBLEM)
    name = match["rate"].lower()
    if name not in RATES and name not in ALIASES:
        raise fail(RATE_PROBLEM.format(rate=match["rate"], known=_KNOWN_RATES))
    precision = ALIASES.get(name, name) == "precision"
    bound = _bound(match["number"], match["percent"] is not None, fail)
    floor = match["op"] in (">=", "≥")
    each, by = match["each"] is not None or match["each_after"] is not None, match["by"]
    if match["gap"] is not None:
        if floor:
            raise fail(GAP_FLOOR_PROBLEM)
        if each:
            raise fail(GAP_EACH_PROBLEM)
        if precision:
            raise fail(PRECISION_GAP_PROBLEM)
        constraint = gap(name, at_most=bound)
    else:
        if precision and not floor:
            raise fail(PRECISION_CEILING_PROBLEM)
        constraint = rate(name, in_each_group=each, **{"at_least" if floor else "at_most": bound})
    if constraint.needs_groups and by is None:
        raise fail(BY_NEEDED_PROBLEM.format(what="a gap" if constraint.scope == "gap" else "a rate in each group"))
    if not constraint.needs_groups and by is not None:
        raise fail(BY_UNUSED_PROBLEM.format(column=by))
    return constraint, by
