r"""Constraints that no classifier can meet together, found before training by a small linear program.

In group :math:`g` with :math:`P_g` positives and :math:`N_g` negatives, any classifier has a recall
:math:`r_g \in [0, 1]` and a false positive rate :math:`f_g \in [0, 1]`; every rate of the vocabulary
is linear in them:

.. math::
    \mathrm{recall} = \frac{\sum_g P_g r_g}{\sum_g P_g}, \quad
    \mathrm{FPR} = \frac{\sum_g N_g f_g}{\sum_g N_g}, \quad
    \mathrm{positive\ rate}_g = \frac{P_g r_g + N_g f_g}{P_g + N_g},

and so is a gap (:math:`r_g - r_h \le v` for every pair), and a bound on precision after multiplying
out its denominator: :math:`\mathrm{precision} \ge v \iff \sum_g \big((1 - v) P_g r_g - v N_g f_g\big) \ge 0`
(a classifier that selects no row meets it). The objective's threshold fixes its own rate
at ``target`` (recall for precision at recall, the positive rate for precision at a rate, the FPR
for recall at an FPR). If the linear program over :math:`(r_g, f_g)` has no solution, no classifier
(randomised ones included) meets the constraints on these rows: "recall >= 0.9 and positive rate
<= 0.01" where 5 % of the rows are positive, or a floor on the objective's own rate above its target.
The converse does not hold (a threshold on one score reaches fewer points than the program allows), so
training still reports a constraint that it could not meet.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

__all__ = ["check_satisfiable", "CONTRADICTION_MESSAGE"]

CONTRADICTION_MESSAGE = (
    "The constraints {names} cannot hold together with the objective's own rate ({fixed} = {target:g}, which its "
    "threshold sets) on these rows: no classifier, whatever its scores, meets them ({counts}). Relax or drop one of them."
)
#: Slack on every inequality, so that a bound met exactly (recall >= target) is not called a contradiction.
SLACK = 1e-9


def _rate_row(rate: str, group, positives, negatives):
    """Coefficients of ``rate`` (over the rows of ``group``, or all rows with None) on the variables (r_0, f_0, r_1, ...)."""
    n_groups = len(positives)
    row = np.zeros(2 * n_groups)
    members = range(n_groups) if group is None else [group]
    p = sum(positives[g] for g in members)
    n = sum(negatives[g] for g in members)
    for g in members:
        if rate == "recall":
            row[2 * g] = positives[g] / max(p, 1)
        elif rate == "false_positive_rate":
            row[2 * g + 1] = negatives[g] / max(n, 1)
        else:
            row[2 * g], row[2 * g + 1] = positives[g] / max(p + n, 1), negatives[g] / max(p + n, 1)
    return row


def _precision_row(bound: float, group, positives, negatives):
    """``a`` of ``a @ x <= 0`` for precision at least ``bound`` over ``group`` (None: all rows).

    ``(1 - v) TP - v FP >= 0`` in shares of the group's rows (TP = P_g r_g, FP = N_g f_g); the caller adds
    :data:`SLACK` to the bound 0.
    """
    n_groups = len(positives)
    members = range(n_groups) if group is None else [group]
    total = max(sum(positives[g] + negatives[g] for g in members), 1)
    row = np.zeros(2 * n_groups)
    for g in members:
        row[2 * g], row[2 * g + 1] = (1 - bound) * positives[g] / total, -bound * negatives[g] / total
    return -row


def _inequalities(constraint, positives, negatives):
    """Rows ``a`` and bounds ``b`` of ``a @ x <= b`` for one constraint."""
    n_groups = len(positives)
    if constraint.rate == "precision":  # a floor, on all rows or in each group (the vocabulary refuses the rest)
        groups = range(n_groups) if constraint.scope == "each_group" else [None]
        return [_precision_row(constraint.at_least, g, positives, negatives) for g in groups], [SLACK] * len(groups)
    if constraint.scope == "gap":
        rows = [_rate_row(constraint.rate, g, positives, negatives) - _rate_row(constraint.rate, h, positives, negatives)
                for g in range(n_groups) for h in range(n_groups) if g != h]
        return rows, [constraint.at_most + SLACK] * len(rows)
    groups = range(n_groups) if constraint.scope == "each_group" else [None]
    rows, bounds = [], []
    for group in groups:
        row = _rate_row(constraint.rate, group, positives, negatives)
        if constraint.at_most is not None:
            rows.append(row), bounds.append(constraint.at_most + SLACK)
        else:
            rows.append(-row), bounds.append(-constraint.at_least + SLACK)
    return rows, bounds


def _feasible(constraints, fixed, target, positives, negatives) -> bool:
    a, b = [], []
    for constraint in constraints:
        rows, bounds = _inequalities(constraint, positives, negatives)
        a += rows
        b += bounds
    equality = _rate_row(fixed, None, positives, negatives).reshape(1, -1)
    result = linprog(np.zeros(2 * len(positives)), A_ub=np.array(a) if a else None, b_ub=np.array(b) if b else None,
                     A_eq=equality, b_eq=[target], bounds=[(0.0, 1.0)] * (2 * len(positives)), method="highs")
    return result.status == 0


def check_satisfiable(constraints, fixed: str, target: float, labels, groups=None) -> None:
    """``ValueError`` naming a smallest set of ``constraints`` that contradict each other and the objective's rate.

    Parameters
    ----------
    constraints : sequence of RateConstraint
    fixed : {"recall", "false_positive_rate", "positive_rate"}
        The rate the objective's threshold sets to ``target``.
    target : float
    labels : bool array of shape (n,)
        True for a positive.
    groups : int array of shape (n,) or None
        Codes 0..G-1 (the groups of per-group and gap constraints).

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.constraints import rate
    >>> labels = np.arange(100) < 5  # 5 % positives
    >>> check_satisfiable([rate("recall", at_least=0.9), rate("positive_rate", at_most=0.01)], "false_positive_rate",
    ...                   0.001, labels)
    Traceback (most recent call last):
    ...
    ValueError: The constraints ['recall >= 0.9', 'positive_rate <= 0.01'] cannot hold together ...
    >>> check_satisfiable([rate("precision", at_least=0.2)], "positive_rate", 0.5, labels)  # at most 5 of 50
    Traceback (most recent call last):
    ...
    ValueError: The constraints ['precision >= 0.2'] cannot hold together ...
    """
    labels = np.asarray(labels, dtype=bool)
    codes = np.zeros(labels.shape[0], dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    n_groups = int(codes.max()) + 1 if codes.size else 1
    positives = np.bincount(codes[labels], minlength=n_groups).tolist()
    negatives = np.bincount(codes[~labels], minlength=n_groups).tolist()
    constraints = list(constraints)
    if _feasible(constraints, fixed, target, positives, negatives):
        return
    conflict = list(constraints)  # drop every constraint that the contradiction does not need (a minimal set)
    for constraint in constraints:
        rest = [c for c in conflict if c is not constraint]
        if not _feasible(rest, fixed, target, positives, negatives):
            conflict = rest
    counts = f"{sum(positives)} positives and {sum(negatives)} negatives" + (
        f" in {n_groups} groups" if n_groups > 1 else "")
    raise ValueError(CONTRADICTION_MESSAGE.format(names=[c.name for c in conflict], fixed=fixed, target=target,
                                                  counts=counts))
