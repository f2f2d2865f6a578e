r"""Extra rate constraints during training (issue 25): each step's constraint rows, the penalty and the multipliers.

Every step adds :meth:`~quantile_surrogate.constraints.ConstraintSet.penalty` (the multipliers times
the surrogate excesses, at the step's own threshold) to the objective's loss; after the epoch the
multipliers move once on the exact excesses of the model as it stands, on every training row, at its
exact threshold there (:func:`~quantile_surrogate.objectives.thresholds.constraint_threshold`, the
threshold an estimator deploys): the proxy-Lagrangian of :mod:`quantile_surrogate.constraints._lagrangian`,
whose multiplier player sees the true constraint. Once per epoch, not per step: a gap measured on one
step's rows is biased upwards (the largest minus the smallest of noisy group rates: about 0.056 for
two equal groups at 128 rows each, more than a bound of 0.05), and a multiplier fed that bias grows
without end. Not on the epoch's constraint rows either, each compared with its own step's threshold
(the rule before 2026-11-28): a minibatch's threshold is noisy, and the gap it measures is not the
deployed one. On UCI Adult (race, a 10 % rate, a selection-rate gap of at most 0.05, 1,163-row
minibatches) that measure settled at the bound (0.043 to 0.058 over the last 100 of 200 epochs, mean
0.050) while the gap at the exact threshold on the same rows ended at 0.063, and the multiplier at 0.14.

**The constraint rows of a minibatch step** are drawn as Algorithm 1 draws ``A_b``: a separate
sample, here stratified by (group, class), :data:`CELL_ROWS` rows of each cell with replacement
(every row of a smaller cell), each row weighted by its cell's size over the rows drawn from it. So a
rare group's positives are in every step, and each group's rate is an unbiased estimate of its rate
on all the rows (with sample weights, of the weighted rate). A full-batch step uses every row.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings

import torch

from .._utils.checks import check_groups
from .._utils.sparse import take_rows
from ..constraints import ConstraintSet, check_satisfiable, largest_excess
from ..constraints._rates import counted_rows
from ..objectives import get_objective, predict_scores
from ..objectives.thresholds import constraint_threshold, group_constraint_thresholds

__all__ = ["CELL_ROWS", "GAP_MARGIN", "ConstraintTerm", "constrained_data"]

GROUPS_UNUSED_MESSAGE = ("`groups` with group_thresholds=False set no threshold and enter no constraint: pass constraints "
                         "measured per group (gap(...) or rate(..., in_each_group=True)), or group_thresholds=True.")
GROUPS_NEEDED_MESSAGE = "{name!r} is measured per group: pass `groups=` (one group code per row)."
ONE_GROUP_MESSAGE = ("{name!r} is a gap between groups, but the rows hold one group only ({group}); pass rows of at "
                     "least two groups, or bound the rate itself with rate(...).")
EMPTY_GROUP_MESSAGE = ("{name!r} is measured in every group, but group {group} has no row that the rate counts "
                       "({counted}); merge it with another group or drop its rows.")
REFUSED_MESSAGE = "`constraints` cannot be combined with {what}: {why}."
TRAINING_SURROGATE = "sigmoid"
#: The rate that the objective's threshold sets, by the objective's subset ``A``.
FIXED_RATE = {"positives": "recall", "negatives": "false_positive_rate", "all": "positive_rate"}
COUNTED = {"recall": "positives", "false_positive_rate": "negatives", "positive_rate": "rows",
           "precision": "positives: without one its precision is 0 wherever it selects"}

GAP_MARGIN = 0.01
"""How far inside its bound a gap between groups must be on the training rows to count as held, both where the
logistic start is reweighted (:mod:`._reweighted_start`) and where the epoch to keep is chosen (its excess on the
fit rows): a gap at its bound on the training rows exceeds it on new rows about half the time. With full-batch
steps the epochs kept sat nearer the bound than with minibatches; on development splits of UCI Adult the margin
brought the splits within bound + 0.02 from 22 of 60 to 24 (docs/constraints.md)."""

CELL_ROWS = 128
"""Rows drawn per (group, class) cell for a minibatch step's constraints: the rate of a cell with a
rate near 0.5 is then estimated to about +-0.044 (one standard error) per step, noise that the
multipliers' small steps average out."""


class ConstraintTerm:
    """The constraints of one fit: their rows per step, their penalty, and one :class:`ConstraintSet` per restart.

    ``data`` is the training rows (:class:`~._state.TrainingData`, with ``constraint_groups``).
    """

    def __init__(self, constraints, data, *, step_size: float, surrogate: str, objective: str, target: float):
        groups = data.constraint_groups
        n_groups = None if groups is None else int(groups.max()) + 1
        self.template = ConstraintSet(constraints, n_groups=n_groups, step_size=step_size, surrogate=surrogate)
        self.data, self.objective, self.target = data, objective, target
        self.current = copy.deepcopy(self.template)
        self.record: list = []
        self._fit_scores = None  # the last end_epoch's scores of every training row, until pop_fit_scores takes them
        codes = torch.zeros(data.n, dtype=torch.long, device=data.device) if groups is None else groups
        cell = codes * 2 + data.labels.long()
        self.cells = [torch.nonzero(cell == k).reshape(-1).cpu() for k in torch.unique(cell).tolist()]

    def reset(self) -> None:
        """Multipliers back to 0 for a new restart."""
        self.current = copy.deepcopy(self.template)
        self.record, self._fit_scores = [], None

    def state_dict(self) -> dict:
        """The multipliers and the last epoch's record (at an epoch's end, where a checkpoint is written)."""
        return {"multipliers": self.current.state_dict(), "record": self.record}

    def load_state_dict(self, state: dict) -> None:
        self.current.load_state_dict(state["multipliers"])
        self.record, self._fit_scores = state["record"], None

    def describe(self) -> str:
        """The constraints and their settings as text: a checkpoint's fingerprint part."""
        template = self.template
        return repr((template.constraints, template.step_size, template.surrogate, template.n_groups))

    def draw(self, generator: torch.Generator):
        """One minibatch step's constraint rows and their weights (see the module docstring)."""
        rows, weights = [], []
        for members in self.cells:
            size = members.numel()
            if size <= CELL_ROWS:
                rows.append(members)
                weights.append(torch.ones(size, dtype=torch.float64))
            else:
                rows.append(members[torch.randint(size, (CELL_ROWS,), generator=generator)])
                weights.append(torch.full((CELL_ROWS,), size / CELL_ROWS, dtype=torch.float64))
        return torch.cat(rows), torch.cat(weights)

    def _columns(self, rows, weight):
        data = self.data
        pick = (lambda column: column) if rows is None else (lambda column: None if column is None else column[rows])
        if data.weight is not None:
            weight = pick(data.weight) if weight is None else weight.to(data.weight) * pick(data.weight)
        return pick(data.labels), pick(data.constraint_groups), pick(data.groups), weight

    def term(self, scores, rows, threshold, weight=None) -> torch.Tensor:
        """The penalty on ``scores`` of ``rows`` (None: every row) at ``threshold``."""
        labels, groups, threshold_groups, row_weight = self._columns(rows, weight)
        threshold = threshold.expand(scores.shape) if threshold.ndim == 0 else threshold[threshold_groups]
        return self.current.penalty(scores, labels, threshold, groups, row_weight)

    def scores_at_threshold(self, model) -> tuple:
        """``(scores, threshold)`` of ``model`` on every training row: its exact threshold there (float64; with
        threshold groups, each row's group's), the one an estimator deploys."""
        data = self.data
        scores = predict_scores(model, data.X)
        numpy = lambda t: t.cpu().numpy()  # noqa: E731
        weight = None if data.weight is None else numpy(data.weight.double())
        threshold = self._exact_threshold(numpy(scores.double()), numpy(data.labels), weight,
                                          None if data.groups is None else numpy(data.groups))
        threshold = torch.as_tensor(threshold, dtype=torch.float64, device=scores.device)
        return scores, (threshold[data.groups] if threshold.ndim else threshold)

    def end_epoch(self, model) -> None:
        """The multiplier step on ``model``'s exact excesses on every training row at its exact threshold there
        (see the module docstring); ``record`` is its record."""
        data = self.data
        scores, threshold = self.scores_at_threshold(model)
        self.record = self.current.update(scores.double(), data.labels, threshold, data.constraint_groups,
                                          data.weight)
        self._fit_scores = scores

    def pop_fit_scores(self):
        """The scores of every training row that the last :meth:`end_epoch` computed (None if taken or none yet).

        The validation after the epoch reads the same model's scores: taken once, so none can be stale."""
        scores, self._fit_scores = self._fit_scores, None
        return scores

    def minibatch_term(self, model, rows, weight, threshold) -> torch.Tensor:
        """:meth:`term` on a separate forward pass over the drawn ``rows``."""
        rows = rows.to(self.data.device)
        scores = model(take_rows(self.data.X, rows)).reshape(-1)
        return self.term(scores, rows, threshold, weight.to(device=self.data.device))

    def deployed_threshold(self, fit_scores, scores, validation) -> torch.Tensor:
        """The threshold an estimator deploys: the exact one on the training and the validation rows together.

        :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold` (per group with
        threshold groups), so that the validation rows are judged at the threshold that will be used.
        """
        data = self.data
        both = lambda a, b: torch.cat([a, b]).cpu().numpy()  # noqa: E731
        scores_np = both(fit_scores.double(), scores.double())
        labels = both(data.labels, validation.labels)
        weight = None
        if data.weight is not None or validation.weight is not None:
            ones = lambda d: torch.ones(d.n, dtype=torch.float64, device=d.device)  # noqa: E731
            weight = both((ones(data) if data.weight is None else data.weight).double(),
                          (ones(validation) if validation.weight is None else validation.weight).double())
        groups = None if data.groups is None else both(data.groups, validation.groups)
        value = self._exact_threshold(scores_np, labels, weight, groups)
        return torch.as_tensor(value, dtype=scores.dtype, device=scores.device)

    def _exact_threshold(self, scores, labels, weight, groups):
        """The objective's exact threshold on these rows (NumPy arrays), one per threshold group with ``groups``."""
        with warnings.catch_warnings():  # ties at the threshold are the deployed fit's to report, not every epoch's
            warnings.simplefilter("ignore")
            if groups is None:
                return constraint_threshold(scores, labels, objective=self.objective, target=self.target,
                                            sample_weight=weight)
            return group_constraint_thresholds(scores, labels, groups, objective=self.objective, target=self.target,
                                               n_groups=int(self.data.groups.max()) + 1, sample_weight=weight)

    def fit_excess(self, scores, threshold) -> float:
        """The largest excess of a constraint over its bound on the training rows at ``threshold``, a gap between
        groups counted :data:`GAP_MARGIN` inside its bound (<= 0: every constraint held there)."""
        record = self.evaluate(scores, self.data, threshold)
        return max((largest_excess([r]) + (GAP_MARGIN if c.scope == "gap" else 0.0)
                    for r, c in zip(record, self.template.constraints)), default=0.0)

    def evaluate(self, scores, data, threshold) -> list:
        """The exact record on other rows (``data``: validation :class:`~._state.TrainingData`), multipliers unchanged."""
        if threshold.ndim:
            threshold = threshold[data.groups]
        return self.current.evaluate(scores, data.labels, threshold, data.constraint_groups, data.weight)


def _check_groups_cover(constraints, labels, codes) -> None:
    """Before training: a gap needs two groups; a per-group rate needs counted rows in every group."""
    present = torch.unique(codes)
    n_groups = int(codes.max()) + 1
    for constraint in constraints:
        if not constraint.needs_groups:
            continue
        if constraint.scope == "gap" and present.numel() < 2:
            raise ValueError(ONE_GROUP_MESSAGE.format(name=constraint.name, group=int(present[0])))
        counted = torch.bincount(codes[counted_rows(constraint.rate, labels)], minlength=n_groups)
        empty = torch.nonzero(counted == 0).reshape(-1).tolist()
        if empty:
            raise ValueError(EMPTY_GROUP_MESSAGE.format(name=constraint.name, group=empty[0],
                                                        counted=COUNTED[constraint.rate]))


def _with_constraint_groups(data, codes, name):
    """``data`` whose constraint groups are its threshold groups (``codes`` None) or the checked ``codes``."""
    if data is None:
        return None
    if codes is None:
        return dataclasses.replace(data, constraint_groups=data.groups)
    codes = check_groups(codes, data.n, name).to(device=data.device, dtype=torch.int64)
    return dataclasses.replace(data, constraint_groups=codes)


def constrained_data(constraints, data, validation, groups=None, validation_groups=None, *, settings, step_size,
                     refused=()):
    """``(data, validation, term)``: the rows with their constraint groups, and the :class:`ConstraintTerm` (or None).

    ``groups`` and ``validation_groups`` are group codes that set no threshold
    (``group_thresholds=False``; None where the threshold groups of ``data`` are the constraints'
    groups too). ``refused``: ``(what, why)`` pairs of options given that do not combine with
    constraints (a loader, a checkpoint). Every check that can be made before training is made
    here (the messages above and :func:`~quantile_surrogate.constraints.check_satisfiable`).
    """
    constraints = list(constraints or ())
    if not constraints:
        if groups is not None:
            raise ValueError(GROUPS_UNUSED_MESSAGE)
        return data, validation, None
    for what, why in refused:
        raise ValueError(REFUSED_MESSAGE.format(what=what, why=why))
    checked = ConstraintSet(constraints, n_groups=2, step_size=step_size, surrogate=settings.surrogate).constraints
    if groups is not None and not any(c.needs_groups for c in checked):
        raise ValueError(GROUPS_UNUSED_MESSAGE)
    data = _with_constraint_groups(data, groups, "groups")
    validation = _with_constraint_groups(validation, validation_groups, "validation[2]")
    if data.constraint_groups is None:
        named = [c for c in checked if c.needs_groups]
        if named:
            raise ValueError(GROUPS_NEEDED_MESSAGE.format(name=named[0].name))
    else:
        _check_groups_cover(checked, data.labels, data.constraint_groups)
    check_satisfiable(checked, FIXED_RATE[get_objective(settings.objective).subset], settings.target,
                      data.labels.cpu().numpy(),
                      None if data.constraint_groups is None else data.constraint_groups.cpu().numpy())
    return data, validation, ConstraintTerm(checked, data, step_size=step_size, surrogate=TRAINING_SURROGATE,
                                            objective=settings.objective, target=settings.target)
