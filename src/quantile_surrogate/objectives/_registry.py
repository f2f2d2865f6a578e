r"""The one table of objectives: the threshold subset, the loss, the exact metric of each.

Shared by :func:`~quantile_surrogate.training.train`, :class:`~quantile_surrogate.QuantileClassifier`
and the experiments, so that each objective's subset ``A``, its quantile loss and its exact
metric are named in one table (:data:`OBJECTIVES`). The exact threshold on given scores, and the
tie policy, are in :mod:`quantile_surrogate.objectives.thresholds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .. import metrics
from ..losses import precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss

# subset_mask is plumbing for the training loop and the estimators, not the public surface.
__all__ = ["Objective", "OBJECTIVES", "get_objective"]

SUBSETS = ("positives", "negatives", "all")


@dataclass(frozen=True)
class Objective:
    r"""One rate-constrained objective: what sets the threshold, what is penalised, how it is scored.

    A frozen record; every parameter is kept as an attribute of the same name (documented
    below each field). Use the entries of :data:`OBJECTIVES` rather than building one.

    Parameters
    ----------
    name : str
        The objective's name, as ``objective=`` takes it.
    subset : {"positives", "negatives", "all"}
        The rows of ``A``, whose rate the constraint is on.
    penalized : dict
        ``form -> rows`` whose surrogate the loss sums.
    loss : callable
        The functional loss of :mod:`quantile_surrogate.losses`.
    target_keyword : str
        The keyword under which ``loss`` takes the target.
    metric : callable
        The exact metric ``metric(y_true, y_score, target)``, higher is better.
    metric_name : str
        A label for reports, formatted with ``target``.
    constraint : str
        The constraint a held-out guarantee is about.
    bound : {"at_least", "at_most"}
        Whether the rate on ``A`` is a floor or a ceiling.
    rounding : {"ceil", "floor"}
        How the target becomes a count of rows of ``A`` above the threshold.
    default_target : float
        The target when none is given.
    equation : str
        Where the loss is in the paper.

    See Also
    --------
    get_objective : Look one up by name.

    Notes
    -----
    The constraint is on the rate of a subset ``A`` (Definition 3.1),

    .. math::
        r_A(f, \theta) = \frac{|\{x \in A : f(x) > \theta\}|}{|A|},

    and the threshold is the quantile :math:`\theta = q(f(A), 1 - c)` of Proposition 1: with
    ``bound="at_least"`` (the rate is a floor, e.g. recall) at least ``ceil(c |A|)`` rows of
    ``A`` score above it; with ``bound="at_most"`` (a ceiling) at most ``ceil(c |A|)`` rows
    (``rounding="ceil"``: a capacity of ``K`` rows, Precision@K) or ``floor(c |A|)`` rows
    (``rounding="floor"``: a false positive rate that must not exceed ``c``).

    Examples
    --------
    >>> from quantile_surrogate.objectives import OBJECTIVES
    >>> spec = OBJECTIVES["precision_at_recall"]
    >>> spec.subset, spec.bound, spec.target_keyword, spec.equation
    ('positives', 'at_least', 'recall', 'eq. (7)')
    """

    name: str
    """The objective's name, as ``objective=`` takes it."""
    subset: str
    """The rows of ``A``: ``"positives"``, ``"negatives"`` or ``"all"``."""
    penalized: dict
    """``form -> rows`` whose surrogate is summed (``"negatives"``: false positives, ``"positives"``:
    missed true positives); one entry unless the objective has several forms."""
    loss: Callable
    """The functional loss of :mod:`quantile_surrogate.losses`."""
    target_keyword: str
    """The keyword under which :attr:`loss` takes the target (``recall``, ``rate``, ``fpr``)."""
    metric: Callable
    """The exact metric ``metric(y_true, y_score, target)`` of :mod:`quantile_surrogate.metrics` (higher is better)."""
    metric_name: str
    """A label for reports, formatted with ``target``."""
    constraint: str
    """The constraint a held-out guarantee is about (:mod:`quantile_surrogate.estimators.calibration`)."""
    bound: str
    """``"at_least"``: the rate on ``A`` is a floor never missed; ``"at_most"``: a ceiling never exceeded."""
    rounding: str
    """How many rows of ``A`` the target allows above the threshold: ``"ceil"`` (``ceil(c |A|)``: at least
    that many for a floor, at most that many, K, for a capacity) or ``"floor"`` (``floor(c |A|)``: an FPR
    that must not exceed ``c``)."""
    default_target: float
    """The target when none is given."""
    equation: str
    """Where the loss is in the paper."""

    def subset_mask(self, positive):
        """The rows of ``A`` as a bool array of ``positive``'s kind (NumPy or torch)."""
        if self.subset == "positives":
            return positive
        if self.subset == "negatives":
            return ~positive
        return positive | ~positive

    def forms(self) -> tuple:
        """The forms ``form=`` accepts for this objective."""
        return tuple(self.penalized)


#: Every objective, by name (``"precision_at_recall"``, ``"precision_at_rate"``, ``"recall_at_fpr"``)
#: -> :class:`Objective`: the one table the estimators, the command line and the baselines read.
OBJECTIVES = {objective.name: objective for objective in (
    Objective("precision_at_recall", subset="positives", penalized={"fp": "negatives"},
              loss=precision_at_recall_loss, target_keyword="recall", metric=metrics.precision_at_recall,
              metric_name="precision at recall {target:g}", constraint="recall", bound="at_least",
              rounding="ceil", default_target=0.95, equation="eq. (7)"),
    Objective("precision_at_rate", subset="all", penalized={"fp": "negatives", "tp": "positives"},
              loss=precision_at_rate_loss, target_keyword="rate", metric=metrics.precision_at_rate,
              metric_name="precision at predicted positive rate {target:g}", constraint="rate",
              bound="at_most", rounding="ceil", default_target=0.05, equation="eqs. (9) and (10)"),
    Objective("recall_at_fpr", subset="negatives", penalized={"fp": "positives"},
              loss=recall_at_fpr_loss, target_keyword="fpr", metric=metrics.recall_at_fpr,
              metric_name="recall at FPR {target:g}", constraint="fpr", bound="at_most",
              rounding="floor", default_target=0.05, equation="Neyman-Pearson form of eq. (2)"),
)}

UNKNOWN_OBJECTIVE_MESSAGE = "`objective` must be one of {names}; got {value!r}."
OBJECTIVE_TYPE_MESSAGE = "`objective` must be a string such as 'precision_at_recall'; got {type_name}."


def get_objective(name) -> Objective:
    """The :class:`Objective` called ``name`` (an :class:`Objective` passes through).

    Parameters
    ----------
    name : str or Objective
        A key of :data:`OBJECTIVES`.

    Returns
    -------
    Objective

    Raises
    ------
    TypeError
        If ``name`` is neither a string nor an :class:`Objective`.
    ValueError
        If ``name`` is not a key of :data:`OBJECTIVES`; the message names the valid ones.

    Examples
    --------
    >>> from quantile_surrogate.objectives import get_objective
    >>> get_objective("recall_at_fpr").metric_name.format(target=0.05)
    'recall at FPR 0.05'
    """
    if isinstance(name, Objective):
        return name
    if not isinstance(name, str):
        raise TypeError(OBJECTIVE_TYPE_MESSAGE.format(type_name=type(name).__name__))
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(UNKNOWN_OBJECTIVE_MESSAGE.format(names=sorted(OBJECTIVES), value=name)) from None


def subset_mask(labels, objective) -> torch.Tensor:
    """The rows of ``A`` for ``objective``, as a bool array (internal).

    Parameters
    ----------
    labels : Tensor or ndarray of shape (n,)
        Bool or {0, 1} labels.
    objective : str or Objective

    Returns
    -------
    Tensor or ndarray of bool, shape (n,)
        Of the kind of ``labels``.
    """
    positive = labels if labels.dtype in (torch.bool, np.bool_) else labels == 1
    return get_objective(objective).subset_mask(positive)
