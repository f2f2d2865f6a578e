r"""Several rate constraints at one threshold, each with a Lagrange multiplier (the proxy-Lagrangian).

For constraints :math:`c_j(f) \le 0` (a rate's excess over its bound, or a gap's over its bound,
measured at the objective's threshold :math:`t`), training minimises

.. math::
    L(f) + \sum_j \lambda_j \, \tilde c_j(f), \qquad \tilde c_j \ge c_j,

with :math:`\tilde c_j` the constraint on the differentiable bounds of :mod:`._rates` (an upper
bound of the exact excess), while each multiplier follows the **exact** 0/1 excess,
:math:`\lambda_j \leftarrow \max(0, \lambda_j + \eta\, c_j(f))` (Cotter, Jiang & Sridharan, "Two-player
games for efficient non-convex constrained optimization", 2019: the proxy-Lagrangian, whose
multiplier player sees the true constraint and whose model player sees its surrogate). A constraint
in each group has one multiplier per group, a gap one multiplier.
"""

from __future__ import annotations

import math

import torch

from .._utils.checks import check_groups, check_labels, check_number, check_option, check_scores
from ..losses import SURROGATES
from ._rates import bound_rates, exact_rates, smooth_rates
from ._vocabulary import RateConstraint

__all__ = ["ConstraintSet", "largest_excess", "NOT_A_CONSTRAINT_MESSAGE", "GROUPS_NEEDED_MESSAGE", "N_GROUPS_MESSAGE"]

NOT_A_CONSTRAINT_MESSAGE = ("`constraints` must hold constraints built by quantile_surrogate.constraints.rate or "
                            ".gap; item {index} is {type_name}.")
GROUPS_NEEDED_MESSAGE = ("{name!r} is measured per group: pass `groups` (one code 0..G-1 per row) here and "
                         "`n_groups` when building the ConstraintSet.")
N_GROUPS_MESSAGE = "`n_groups` must be an integer >= 2 for per-group and gap constraints; got {value!r}."
STEP_MESSAGE = "`step_size` must be a finite number > 0; got {value!r}."
WEIGHT_SHAPE_MESSAGE = "`weight` must hold one weight per score, shape ({n},); got shape {shape}."


class ConstraintSet:
    """Rate constraints at the objective's threshold, with their multipliers (the module's formula).

    Parameters
    ----------
    constraints : sequence of RateConstraint
        From :func:`~quantile_surrogate.constraints.rate` and :func:`~quantile_surrogate.constraints.gap`.
    n_groups : int >= 2 or None
        The number of groups (codes 0..G-1), needed by per-group and gap constraints.
    step_size : float > 0, default=0.1
        :math:`\\eta` of the multiplier update.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The bound of the step in :math:`\\tilde c_j`.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.constraints import ConstraintSet, gap, rate
    >>> cs = ConstraintSet([rate("fpr", at_most=0.1), gap("recall", at_most=0.05)], n_groups=2)
    >>> scores = torch.tensor([2.0, 0.5, -1.0, 1.5, -0.5, 0.2], dtype=torch.float64)
    >>> labels = torch.tensor([1, 1, 0, 1, 0, 0]); groups = torch.tensor([0, 1, 0, 1, 0, 1])
    >>> record = cs.update(scores, labels, 0.3, groups)  # exact: FPR 0 (ok), recall 1 vs 1 (gap 0)
    >>> [round(r["value"], 3) for r in record], cs.multipliers
    ([0.0, 0.0], [0.0, 0.0])
    """

    def __init__(self, constraints, *, n_groups=None, step_size=0.1, surrogate="logistic"):
        self.constraints = list(constraints)
        for index, item in enumerate(self.constraints):
            if not isinstance(item, RateConstraint):
                raise TypeError(NOT_A_CONSTRAINT_MESSAGE.format(index=index, type_name=type(item).__name__))
        if any(c.needs_groups for c in self.constraints) and (
                isinstance(n_groups, bool) or not isinstance(n_groups, int) or n_groups < 2):
            raise ValueError(N_GROUPS_MESSAGE.format(value=n_groups))
        step = check_number(step_size, "step_size")
        if not (step > 0 and step < float("inf")):
            raise ValueError(STEP_MESSAGE.format(value=step_size))
        self.n_groups, self.step_size = n_groups, step
        self.surrogate = check_option(surrogate, tuple(SURROGATES) + ("sigmoid",), "surrogate")
        self._multipliers = [torch.zeros(n_groups if c.scope == "each_group" else 1, dtype=torch.float64)
                             for c in self.constraints]

    @property
    def multipliers(self) -> list:
        """Each constraint's multiplier (a float, or a list per group for ``in_each_group``)."""
        return [m.tolist() if c.scope == "each_group" else float(m[0]) for c, m in zip(self.constraints, self._multipliers)]

    def reset(self) -> None:
        """Set every multiplier back to 0 (a new restart)."""
        self._multipliers = [torch.zeros_like(m) for m in self._multipliers]

    def state_dict(self) -> dict:
        """The multipliers, as float64 tensors (what a checkpoint keeps)."""
        return {"multipliers": [m.clone() for m in self._multipliers]}

    def load_state_dict(self, state: dict) -> None:
        """The multipliers of :meth:`state_dict` (of a set with the same constraints)."""
        self._multipliers = [torch.as_tensor(m, dtype=torch.float64).clone() for m in state["multipliers"]]

    def _rates(self, constraint, scores, labels, threshold, groups, weight, exact):
        """``(high, low, counts)``: the rates the excess reads (exact, smoothed, or the bounds), per group."""
        grouped = constraint.needs_groups
        kw = dict(groups=groups if grouped else None, n_groups=self.n_groups if grouped else None, weight=weight)
        if exact or self.surrogate == "sigmoid":
            rates, counts = (exact_rates if exact else smooth_rates)(scores, labels, threshold, constraint.rate, **kw)
            return rates, rates, counts
        high = low = None  # only the bound(s) the excess reads: the upper for a ceiling, the lower for a floor
        if constraint.at_most is not None:
            high, counts = bound_rates(scores, labels, threshold, constraint.rate, upper=True,
                                       surrogate=self.surrogate, **kw)
        if constraint.at_least is not None or constraint.scope == "gap":
            low, counts = bound_rates(scores, labels, threshold, constraint.rate, upper=False,
                                      surrogate=self.surrogate, **kw)
        return high, low, counts

    @staticmethod
    def _excess_of(constraint, high, low, seen):
        """The constraint's excess over its bound, shape (G,) in each group, else (1,) (0 where unmeasured; for a
        precision floor where no row is selected, ``v - 1``).

        A gap has one multiplier, on :math:`\\max_g r_g - \\min_g r_g`: its direction follows whichever
        group is ahead now. One multiplier per ordered pair (:math:`r_g - r_h \\le v`) was tried and
        swung wider: after an overshoot the old pair's multiplier keeps pushing until it decays
        (on the synthetic set of ``tests/training/test_constrained.py``, the last 50 epochs' mean gap
        0.21-0.26 full-batch against 0.06-0.17 with one multiplier).
        """
        if constraint.scope == "gap":
            if int(seen.sum()) < 2:  # fewer than two groups in these rows: no gap to measure
                return low.new_zeros(1)
            return (high[seen].max() - low[seen].min() - constraint.at_most).reshape(1)
        excess = high - constraint.at_most if constraint.at_most is not None else constraint.at_least - low
        # A group that selects no row has no false positive: its precision floor holds (precision 1), and the
        # multiplier may decay; any other rate unmeasured there has no excess.
        unmeasured = constraint.at_least - 1.0 if constraint.rate == "precision" else 0.0
        return torch.where(seen, excess, torch.full_like(excess, unmeasured))

    def _excess(self, constraint, scores, labels, threshold, groups, weight, exact):
        """The constraint's excess over its bound (:meth:`_excess_of`) and the groups it saw."""
        high, low, counts = self._rates(constraint, scores, labels, threshold, groups, weight, exact)
        seen = counts > 0
        return self._excess_of(constraint, high, low, seen), seen

    def _check(self, scores, labels, groups, weight=None):
        scores = check_scores(scores)
        labels = check_labels(labels, scores.shape[0])
        if groups is not None:
            groups = check_groups(groups, scores.shape[0]).to(scores.device)
        for constraint in self.constraints:
            if constraint.needs_groups and groups is None:
                raise ValueError(GROUPS_NEEDED_MESSAGE.format(name=constraint.name))
        if weight is not None:
            weight = torch.as_tensor(weight, device=scores.device)
            if weight.shape != scores.shape:
                raise ValueError(WEIGHT_SHAPE_MESSAGE.format(shape=tuple(weight.shape), n=scores.shape[0]))
        return scores, labels.to(scores.device), groups, weight

    def penalty(self, scores, labels, threshold, groups=None, weight=None) -> torch.Tensor:
        """:math:`\\sum_j \\lambda_j \\tilde c_j`: the term to add to the objective's loss (the multipliers held fixed).

        ``threshold``: a float or 0-d Tensor (one threshold), or one per row (per-group thresholds
        taken at each row's group); ``weight``: optional row weights (:func:`exact_rates`).
        """
        scores, labels, groups, weight = self._check(scores, labels, groups, weight)
        total = scores.new_zeros(())
        for constraint, multiplier in zip(self.constraints, self._multipliers):
            excess, _ = self._excess(constraint, scores, labels, threshold, groups, weight, exact=False)
            total = total + (multiplier.to(scores) * excess).sum()
        return total

    def evaluate(self, scores, labels, threshold, groups=None, weight=None) -> list:
        """Per constraint ``name``, ``value``, ``excess`` and ``multiplier`` at ``threshold``, the multipliers unchanged.

        ``value`` is the exact rate (per group: a list) or gap at ``threshold`` (NaN for a gap in rows of
        fewer than two groups), ``excess`` its amount over the bound (<= 0 when met; 0 where unmeasured).
        """
        return self._record(scores, labels, threshold, groups, weight, step=False)

    def update(self, scores, labels, threshold, groups=None, weight=None) -> list:
        """One multiplier step on the exact excesses, :math:`\\lambda_j \\leftarrow \\max(0, \\lambda_j + \\eta c_j)`; returns :meth:`evaluate`'s record (the multipliers after the step)."""
        return self._record(scores, labels, threshold, groups, weight, step=True)

    def _record(self, scores, labels, threshold, groups, weight, step: bool) -> list:
        with torch.no_grad():
            scores, labels, groups, weight = self._check(scores, labels, groups, weight)
            record = []
            for j, constraint in enumerate(self.constraints):
                rates, _, counts = self._rates(constraint, scores, labels, threshold, groups, weight, exact=True)
                seen = counts > 0
                excess = self._excess_of(constraint, rates, rates, seen)
                if step:
                    self._multipliers[j] = (self._multipliers[j] + self.step_size * excess.double().cpu()).clamp(min=0.0)
                bound = constraint.at_most if constraint.at_most is not None else constraint.at_least
                value = excess + bound if constraint.at_most is not None else bound - excess
                if constraint.scope == "gap" and int(seen.sum()) < 2:
                    value = torch.full_like(value, float("nan"))  # no gap in rows of one group (the excess: 0)
                many = constraint.scope == "each_group"
                noise = self._noise(constraint, rates, counts)
                record.append(dict(name=constraint.name, value=value.tolist() if many else float(value[0]),
                                   excess=excess.tolist() if many else float(excess[0]),
                                   noise=noise.tolist() if many else float(noise[0]),
                                   multiplier=self.multipliers[j]))
        return record

    @staticmethod
    def _noise(constraint, rates, counts) -> torch.Tensor:
        """The binomial standard error of the exact value: :math:`\\sqrt{r (1 - r) / n}` per rate (``n`` its
        counted rows' weight), for a gap that of the largest minus the smallest group's rate."""
        seen = counts > 0
        se = torch.where(seen, (rates * (1 - rates) / torch.where(seen, counts, torch.ones_like(counts))).sqrt(),
                         torch.zeros_like(rates))
        if constraint.scope != "gap":
            return se
        if int(seen.sum()) < 2:
            return se.new_zeros(1)
        high = int(torch.where(seen, rates, torch.full_like(rates, -math.inf)).argmax())
        low = int(torch.where(seen, rates, torch.full_like(rates, math.inf)).argmin())
        return (se[high] ** 2 + se[low] ** 2).sqrt().reshape(1)


def largest_excess(record: list, within_noise: bool = False) -> float:
    """The largest excess over its bound in a record of :meth:`ConstraintSet.evaluate` (<= 0: every constraint met).

    Parameters
    ----------
    record : list of dict
        :meth:`ConstraintSet.evaluate`'s or :meth:`ConstraintSet.update`'s; each ``excess`` (and
        ``noise``) a float or a list per group.
    within_noise : bool, default=False
        Subtract each value's standard error (``noise``) from its excess first: the excess that the
        rows' sampling noise cannot explain.

    Returns
    -------
    float
        0.0 for an empty record.

    Examples
    --------
    >>> largest_excess([{"excess": -0.02, "noise": 0.01}, {"excess": [-0.1, 0.03], "noise": [0.02, 0.02]}])
    0.03
    >>> round(largest_excess([{"excess": -0.02, "noise": 0.01}, {"excess": [-0.1, 0.03], "noise": [0.02, 0.02]}],
    ...                      within_noise=True), 6)
    0.01
    """
    excesses = []
    for r in record:
        excess, noise = r["excess"], r.get("noise", 0.0) if within_noise else 0.0
        if isinstance(excess, list):
            noise = noise if isinstance(noise, list) else [noise] * len(excess)
            excesses.append(max(e - n for e, n in zip(excess, noise)))
        else:
            excesses.append(excess - noise)
    return max(excesses) if excesses else 0.0
