"""The constraint vocabulary: a rate of the classifier "score above the threshold", bounded, or its gap between groups.

Issue 25. Four rates, each the share of some rows whose score exceeds the threshold ``t`` (the
threshold the objective's quantile sets, shared by every constraint), or for precision the share of
positives among the rows above it:

=========================  ===================================  ==============================
name                       rows it counts                       also called
=========================  ===================================  ==============================
``"recall"``               positives (``y = 1``)                true positive rate
``"false_positive_rate"``  negatives (``y = 0``)                FPR, false alarm rate
``"positive_rate"``        every row                            selection rate, review budget
``"precision"``            the rows above ``t``                 positive predictive value
=========================  ===================================  ==============================

A constraint bounds the rate on all rows (:func:`rate`), in each group (``in_each_group=True``) or
its gap between groups, :math:`\\max_g r_g - \\min_g r_g \\le v` (:func:`gap`: equal opportunity for
recall, demographic parity for the positive rate). A precision floor is linear in the counts at
the threshold (:math:`p \\ge v \\iff (1 - v)\\,TP - v\\,FP \\ge 0`), so it fits the multipliers and the
feasibility program like the others: "precision at least 0.8 in each group" is a floor of predictive
parity with one group-blind threshold. A group that selects no row has no false positive and meets
it (its precision counts as 1). Left out: a ceiling on precision, the gap of precision between groups
(a difference of two ratios whose denominators both move with the threshold: bound each group's
precision instead) and rate ratios (the four-fifths rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._utils.checks import check_number, check_option

__all__ = ["RATES", "RateConstraint", "rate", "gap", "BOUND_MESSAGE", "BOUND_RANGE_MESSAGE", "PRECISION_GAP_MESSAGE",
           "PRECISION_CEILING_MESSAGE"]

RATES = ("recall", "false_positive_rate", "positive_rate", "precision")
"""The rates a constraint can bound (see the module's table)."""
ALIASES = {"tpr": "recall", "true_positive_rate": "recall", "fpr": "false_positive_rate",
           "selection_rate": "positive_rate", "ppv": "precision"}
BOUND_MESSAGE = "{what} needs exactly one bound: pass at_least=... or at_most=...{extra}; got {got}."
BOUND_RANGE_MESSAGE = "`{name}` must be a rate in [0, 1]; got {value!r}."
PRECISION_CEILING_MESSAGE = ("rate('precision') takes a floor only (at_least=...): a ceiling on precision bounds how "
                             "well the model may do; got at_most={value!r}.")
PRECISION_GAP_MESSAGE = ("A gap of precision between groups is left out: each group's precision has its own denominator "
                         "(the rows above the threshold), and both move with it. Bound each group's precision instead: "
                         "rate('precision', at_least=..., in_each_group=True).")


@dataclass(frozen=True)
class RateConstraint:
    """One constraint on a rate at the shared threshold; build it with :func:`rate` or :func:`gap`.

    Parameters
    ----------
    rate : {"recall", "false_positive_rate", "positive_rate", "precision"}
        The rate (:data:`RATES`).
    scope : {"all", "each_group", "gap"}
        The rate over every row it counts, the rate in every group, or ``max_g r_g - min_g r_g``
        (bounded above).
    at_least, at_most : float in [0, 1] or None
        The bound; exactly one is set.

    Examples
    --------
    >>> c = gap("recall", at_most=0.05)
    >>> c.rate, c.scope, c.at_most, c.needs_groups
    ('recall', 'gap', 0.05, True)
    """

    rate: str
    scope: str
    at_least: float | None = None
    at_most: float | None = None

    @property
    def name(self) -> str:
        """A readable name, e.g. ``"recall gap <= 0.05"`` or ``"positive_rate >= 0.1 in each group"``."""
        bound = f">= {self.at_least:g}" if self.at_least is not None else f"<= {self.at_most:g}"
        if self.scope == "gap":
            return f"{self.rate} gap {bound}"
        return f"{self.rate} {bound}" + (" in each group" if self.scope == "each_group" else "")

    @property
    def needs_groups(self) -> bool:
        return self.scope != "all"


def _bound(value, name):
    if value is None:
        return None
    value = check_number(value, name)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(BOUND_RANGE_MESSAGE.format(name=name, value=value))
    return value


def _rate_name(name: str) -> str:
    """The canonical name of a rate (an alias such as "fpr" mapped), or one clear error."""
    name = check_option(name, RATES + tuple(ALIASES), "rate")
    return ALIASES.get(name, name)


def rate(name: str, *, at_least=None, at_most=None, in_each_group: bool = False) -> RateConstraint:
    """The rate ``name`` at least ``at_least`` or at most ``at_most``, on all rows or in each group.

    Parameters
    ----------
    name : str
        ``"recall"`` (alias ``"tpr"``), ``"false_positive_rate"`` (``"fpr"``), ``"positive_rate"``
        (``"selection_rate"``) or ``"precision"`` (``"ppv"``; a floor, over all rows or in each group;
        a group that selects no row meets it).
    at_least, at_most : float in [0, 1]
        Exactly one: the floor or the ceiling of the rate.
    in_each_group : bool, default=False
        Bound the rate in every group (one multiplier each) instead of over all rows.

    Returns
    -------
    RateConstraint

    Examples
    --------
    >>> rate("fpr", at_most=0.05).name
    'false_positive_rate <= 0.05'
    >>> rate("recall", at_least=0.8, in_each_group=True).name
    'recall >= 0.8 in each group'
    >>> rate("ppv", at_least=0.7, in_each_group=True).name
    'precision >= 0.7 in each group'
    """
    name = _rate_name(name)
    at_least, at_most = _bound(at_least, "at_least"), _bound(at_most, "at_most")
    if (at_least is None) == (at_most is None):
        raise ValueError(BOUND_MESSAGE.format(what=f"rate({name!r})", extra="",
                                              got=f"at_least={at_least}, at_most={at_most}"))
    if name == "precision" and at_most is not None:
        raise ValueError(PRECISION_CEILING_MESSAGE.format(value=at_most))
    return RateConstraint(name, "each_group" if in_each_group else "all", at_least, at_most)


def gap(name: str, *, at_most) -> RateConstraint:
    """The gap ``max_g r_g - min_g r_g`` of the rate ``name`` between groups, at most ``at_most``.

    Parameters
    ----------
    name : str
        The rate, as in :func:`rate`: ``"recall"`` for equal opportunity, ``"positive_rate"`` for
        demographic parity (not ``"precision"``: see the module docstring).
    at_most : float in [0, 1]
        The largest gap allowed.

    Returns
    -------
    RateConstraint

    Examples
    --------
    >>> gap("recall", at_most=0.05).name
    'recall gap <= 0.05'
    """
    name = _rate_name(name)
    if name == "precision":
        raise ValueError(PRECISION_GAP_MESSAGE)
    if at_most is None:
        raise ValueError(BOUND_MESSAGE.format(what=f"gap({name!r})", extra=" (a gap has an upper bound only)",
                                              got="at_most=None"))
    return RateConstraint(name, "gap", None, _bound(at_most, "at_most"))
