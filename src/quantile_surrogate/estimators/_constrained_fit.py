"""``QuantileClassifier(constraints=...)``: the group attribute's two roles, and the report of every constraint.

``sensitive_features`` is the one group attribute. It sets one threshold per group (the objective's
rate in every group; the group is then needed to predict), or only enters the extra constraints (one
group-blind threshold). ``group_thresholds="auto"`` takes the first without ``constraints`` (the
estimator as before) and the second with them; True or False chooses. After training,
:func:`constraint_report` measures every constraint at the deployed threshold on the fit rows and the
held-out rows; a constraint not met there (on the fit rows, or beyond one standard error held out) is
reported and warned about, never hidden.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..constraints import ConstraintSet, RateConstraint, largest_excess
from ..training import GAP_MARGIN
from ._groups import encode_groups

__all__ = ["ConstrainedFitSteps", "constraint_report", "CONSTRAINT_NOT_MET_MESSAGE"]

CONSTRAINTS_TYPE_MESSAGE = ("`constraints` must be a list of constraints built by quantile_surrogate.constraints.rate "
                            "or .gap, e.g. [gap('recall', at_most=0.05)]; got {got}.")
GROUP_THRESHOLDS_NEED_GROUPS = ("group_thresholds=True sets one threshold per group: pass `sensitive_features=` to fit, "
                                "or use group_thresholds='auto'.")
GROUPS_ENTER_NOTHING = ("`sensitive_features` set no threshold (group_thresholds={value!r}) and no constraint is measured "
                        "per group: add one, e.g. constraints=[gap('recall', at_most=0.05)], or set group_thresholds=True "
                        "for one threshold per group.")
CONSTRAINT_NOT_MET_MESSAGE = ("The constraint {name!r} could not be met: held out {value} (standard error {se}), training "
                              "rows {train}, against its bound {bound:g}; no epoch met every constraint on the fit rows "
                              "and within one standard error held out. See constraint_report_.")
CONSTRAINT_NOT_MET_TRAIN_MESSAGE = ("The constraint {name!r} is not met on the training rows: {train} against its bound "
                                    "{bound:g}, and no rows were held out to check it on ({why}). See "
                                    "constraint_report_.")
NO_HELD_OUT_EARLY_STOPPING = "early_stopping=False"
NO_HELD_OUT_SPLIT = ("no validation split was possible: some (class, group) has too few rows; more rows, or fewer, "
                     "larger groups")


def _rounded(value):
    return [round(v, 4) for v in value] if isinstance(value, list) else round(value, 4)


def _start_entry(result, group_names) -> dict:
    """``constraint_report_["start"]``: how the kept restart started, and the logistic start's reweighting by group."""
    record = result.start_reweighting
    if record is None:
        description = {"random": "a random start", "model": "the model's own parameters"}.get(
            result.start, "the plain logistic start (reweighted only where every constraint is a gap of the recall, "
                          "the false positive rate or the positive rate)")
        return dict(kind=result.start, refits=0, margin=None, held=None, weights=None, description=description)
    names = [str(name) for name in group_names] if group_names is not None else list(range(len(record["weights"])))
    weights = {name: dict(negatives=round(w[0], 4), positives=round(w[1], 4))
               for name, w in zip(names, record["weights"])}
    inside = f"every gap {record['margin']:g} inside its bound on the training rows"
    refits = f"{record['refits']} refit{'' if record['refits'] == 1 else 's'}"
    if not record["held"]:
        description = f"the plain logistic start: {refits} with reweighted groups did not bring {inside}"
    elif record["refits"] == 0:
        description = f"the plain logistic start, which had {inside}"
    else:
        times = "once" if record["refits"] == 1 else f"{record['refits']} times"
        description = f"the logistic start refitted {times} with row weights by (group, class) until it had {inside}"
    return dict(kind="logistic", refits=record["refits"], margin=record["margin"], held=record["held"],
                weights=weights if record["held"] else None, description=description)


def constraint_report(constraints, scores, labels, codes, threshold, n_fit: int, result, weight=None,
                      group_names=None) -> dict:
    """Every constraint at the deployed ``threshold`` on the fit rows (``:n_fit``) and the held-out rows (the rest).

    Returns ``{"constraints": [...], "feasible", "checked_on", "best_epoch", "feasible_epochs", "chosen",
    "held_out_excess", "start"}``; each constraint's entry holds ``constraint`` (its name), ``bound``, ``train``
    and ``held_out`` (its exact value; a list per group for ``in_each_group``; None without held-out
    rows), ``held_out_se`` (the binomial standard error of the held-out value), ``met`` (on the held-out
    rows, else on the training rows), ``feasible`` (the selection's test: met on the fit rows and within
    one standard error on the held-out rows), ``multiplier`` (after the last epoch), and per epoch of the
    kept restart ``train_curve`` (the value the multiplier stepped on: the model after that epoch, on
    the fit rows at its exact threshold there) and ``multiplier_curve`` (after that step). The report's
    ``feasible``: every constraint's; ``held_out_excess``: per epoch (0: the start) the largest excess
    the selection read, on the fit rows or held out beyond one standard error (at most 0: feasible;
    ``inf`` for a random start), None without held-out rows. ``start``: the kept restart's start, ``kind``
    ("logistic", "random", "model"), and for a logistic start with gap constraints its reweighting by group
    (:mod:`~quantile_surrogate.training._reweighted_start`): ``refits``, ``margin``, ``held`` (the kept start has every gap
    ``margin`` inside its bound on the training rows), ``weights`` (per group of ``group_names``, the factors of its
    negatives' and positives' row weights, geometric mean 1; None where the plain start was restored), and a
    ``description`` in words.
    """
    n_groups = None if codes is None else int(codes.max()) + 1
    evaluator = ConstraintSet(constraints, n_groups=max(n_groups or 2, 2))
    scores = torch.as_tensor(scores, dtype=torch.float64)
    labels = torch.as_tensor(labels).bool()
    groups = None if codes is None else torch.as_tensor(codes)
    threshold = torch.as_tensor(threshold, dtype=torch.float64)
    weight = None if weight is None else torch.as_tensor(weight, dtype=torch.float64)

    def measure(rows):
        pick = (lambda column: None if column is None else column[rows])
        row_threshold = threshold if threshold.ndim == 0 else threshold[groups[rows]]
        return evaluator.evaluate(scores[rows], labels[rows], row_threshold, pick(groups), pick(weight))

    train = measure(slice(0, n_fit))
    held = measure(slice(n_fit, None)) if n_fit < scores.shape[0] else None
    checked = held if held is not None else train
    curve = result.constraint_curve or []
    multipliers = [r["multiplier"] for r in curve[-1]] if curve else [0.0] * len(constraints)
    entries = [dict(constraint=c.name, bound=c.at_most if c.at_most is not None else c.at_least,
                    train=_rounded(t["value"]), held_out=None if held is None else _rounded(held[j]["value"]),
                    held_out_se=None if held is None else _rounded(held[j]["noise"]),
                    met=bool(largest_excess([checked[j]]) <= 0),
                    feasible=bool(largest_excess([t]) <= 0 and (held is None or
                                                                largest_excess([held[j]], within_noise=True) <= 0)),
                    multiplier=m, train_curve=[record[j]["value"] for record in curve],
                    multiplier_curve=[record[j]["multiplier"] for record in curve])
               for j, (c, t, m) in enumerate(zip(constraints, train, multipliers))]
    excess = result.validation_excess
    feasible_epochs = None if excess is None else int(sum(e <= 0 for e in excess))  # held out and fit rows
    if excess is None:
        chosen = "no held-out rows: the last epoch (of the restart with the lowest training loss); checked on the training rows"
    else:
        gaps = any(c.scope == "gap" for c in constraints)
        fit_rows = "the fit rows" + (f" (a gap {GAP_MARGIN:g} inside its bound)" if gaps else "")
        if excess[result.best_epoch] <= 0:
            chosen = (f"epoch {result.best_epoch} of restart {result.restart}: the best held-out metric among the "
                      f"{feasible_epochs} epochs that meet every constraint on {fit_rows} and within one standard "
                      f"error on the held-out rows (ties: the lower held-out loss)")
        else:
            chosen = (f"epoch {result.best_epoch} of restart {result.restart}: no epoch met every constraint on "
                      f"{fit_rows} and within one standard error on the held-out rows; this one had the smallest "
                      f"largest excess ({excess[result.best_epoch]:.4f})")
    return dict(constraints=entries, feasible=all(e["feasible"] for e in entries),
                checked_on="train" if held is None else "held_out", best_epoch=result.best_epoch,
                feasible_epochs=feasible_epochs, chosen=chosen,
                held_out_excess=None if excess is None else [float(e) for e in excess],
                start=_start_entry(result, group_names))


class ConstrainedFitSteps:
    """Mixin: the constraints and the group attribute's role for :class:`QuantileClassifier` (``self``: its parameters)."""

    def _constraint_list(self) -> list:
        constraints = self.constraints
        if constraints is None:
            return []
        if not isinstance(constraints, (list, tuple)) or not all(isinstance(c, RateConstraint) for c in constraints):
            raise TypeError(CONSTRAINTS_TYPE_MESSAGE.format(got=repr(constraints)[:120]))
        return list(constraints)

    def _group_roles(self, sensitive_features, y01):
        """``(threshold codes or None, constraint codes or None)``; sets ``groups_`` and ``constraint_groups_``."""
        constraints = self._constraint_list()
        per_group = self.group_thresholds is True or (self.group_thresholds == "auto" and not constraints)
        self.constraint_groups_ = None
        if per_group:
            if sensitive_features is None and self.group_thresholds is True:
                raise ValueError(GROUP_THRESHOLDS_NEED_GROUPS)
            codes = self._encode_fit_groups(sensitive_features, y01)
            self.constraint_groups_ = self.groups_ if constraints else None
            return codes, codes
        self._encode_fit_groups(None, y01)
        if sensitive_features is None:
            return None, None
        if not any(c.needs_groups for c in constraints):
            raise ValueError(GROUPS_ENTER_NOTHING.format(value=self.group_thresholds))
        labels, codes = encode_groups(sensitive_features, len(y01))
        self.constraint_groups_ = labels
        return None, codes

    def _constraint_settings(self, threshold_codes) -> dict:
        """The keyword arguments of :func:`~quantile_surrogate.training.train` for the constraints ({} without)."""
        constraints = self._constraint_list()
        if not constraints:
            return {}
        return dict(constraints=constraints, constraint_step_size=self.constraint_step_size,
                    group_thresholds=threshold_codes is not None)

    def _report_constraints(self, scores, y01, codes, n_fit, weight, result) -> None:
        """``constraint_report_`` (None without constraints), and a warning for each constraint not met held out, or
        not met on the training rows where none were held out."""
        constraints = self._constraint_list()
        if not constraints:
            self.constraint_report_ = None
            return
        threshold = self.threshold_ if self.groups_ is None else np.asarray(self.group_thresholds_)
        report = constraint_report(constraints, scores, y01, codes, threshold, n_fit, result, weight,
                                   group_names=self.constraint_groups_)
        self.constraint_report_ = report
        if report["checked_on"] != "held_out":
            why = NO_HELD_OUT_SPLIT if self.early_stopping else NO_HELD_OUT_EARLY_STOPPING  # "auto" or True
            for entry in report["constraints"]:
                if not entry["met"]:
                    warnings.warn(CONSTRAINT_NOT_MET_TRAIN_MESSAGE.format(name=entry["constraint"], train=entry["train"],
                                                                          bound=entry["bound"], why=why),
                                  UserWarning, stacklevel=4)
            return
        for entry in report["constraints"]:
            if not entry["feasible"]:
                warnings.warn(CONSTRAINT_NOT_MET_MESSAGE.format(name=entry["constraint"], value=entry["held_out"],
                                                                se=entry["held_out_se"], bound=entry["bound"],
                                                                train=entry["train"]), UserWarning, stacklevel=4)
