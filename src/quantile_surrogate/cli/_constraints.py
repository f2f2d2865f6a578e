"""``fit --constraint TEXT``: rate constraints at one group-blind threshold, reported by fit and measured by evaluate.

::

    quantile-surrogate fit data.csv --label y --target 0.9 --constraint "recall gap <= 0.05 by sex" \\
        --constraint "fpr <= 5%"

Each text follows :func:`~quantile_surrogate.constraints.parse_constraint`'s grammar. The ``by`` column
holds the groups (not a feature; ``predict`` does not need it); every constraint names the same one,
and ``--groups``, if given too, must be that column (one threshold per group as well). ``fit`` prints
each constraint's value on the training and held-out rows; ``evaluate`` measures each again on its
file at the model's threshold, with a percentile-bootstrap interval over resamples of the rows.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np
import torch

from ..constraints import exact_rates, parse_constraint
from ..objectives.bootstrap import MAX_CELLS, _resample_counts
from ._args import OPTION_CONFLICT_LINE

__all__ = ["ConstraintText", "constraint_text", "saved_constraints", "check_constraint_options", "constraint_by",
           "by_role", "fit_report_lines", "measure_constraints", "constraint_lines"]

# After "argument --constraint: " (exit status 2, before any file is read).
BY_COLUMNS_MESSAGE = ("the constraints name different group columns ({columns}); every constraint measured in groups "
                      "must end in the same 'by COLUMN'")
GROUPS_NOT_BY_MESSAGE = ("measures its constraints in the groups of column {by!r} but --groups names {groups!r}; give "
                         "--groups {by} for one threshold per group of that column as well, or leave out --groups")
DELTA_MESSAGE = ("cannot be combined with --delta: a guaranteed threshold is set on held-out rows without the "
                 "constraints; leave out one of them")
NOT_MEASURED = "n/a"


class ConstraintText(NamedTuple):
    """One ``--constraint``: the text as given, the constraint it describes, and its ``by`` column (or None)."""

    text: str
    constraint: object
    by: str | None


def constraint_text(text: str) -> ConstraintText:
    """``type=`` for ``--constraint``: a bad text is a usage error, the parser's message in one line."""
    try:
        return ConstraintText(text, *parse_constraint(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(" ".join(str(error).split())) from None


def saved_constraints(saved) -> list[ConstraintText]:
    """The constraints of a model file (``SavedModel.constraints``), each with its text and ``by`` column."""
    return [ConstraintText(text, *parsed) for text, parsed in zip(saved.constraints or [], saved.parsed_constraints)]


def constraint_by(specs) -> str | None:
    """The column the constraints' groups come from (None where none is measured in groups)."""
    return next((spec.by for spec in specs or () if spec.by is not None), None)


def by_role(specs) -> str:
    """What the ``by`` column is in an error about it (missing, empty, named twice): the first constraint naming it."""
    return "--constraint " + repr(next(spec.text for spec in specs if spec.by is not None))


def check_constraint_options(args) -> str | None:
    """The line for ``--constraint`` options that cannot work together, or None."""
    specs = args.constraint or []
    columns = list(dict.fromkeys(spec.by for spec in specs if spec.by is not None))
    problem = None
    if len(columns) > 1:
        problem = BY_COLUMNS_MESSAGE.format(columns=", ".join(repr(c) for c in columns))
    elif columns and args.groups is not None and args.groups != columns[0]:
        problem = GROUPS_NOT_BY_MESSAGE.format(by=columns[0], groups=args.groups)
    elif specs and args.delta is not None:
        problem = DELTA_MESSAGE
    return None if problem is None else OPTION_CONFLICT_LINE.format(flag="--constraint", message=problem)


def _values(value, groups) -> str:
    if value is None:
        return NOT_MEASURED
    if isinstance(value, list):
        return ", ".join(f"{g} {v:.4f}" for g, v in zip(groups, value))
    return NOT_MEASURED if not np.isfinite(value) else f"{value:.4f}"


def _verdict(entry: dict, groups) -> str:
    """"met", or "NOT MET", with the reason the fit still counted it as met where it did (the held-out value within
    one standard error of the bound)."""
    if entry["met"]:
        return "met"
    if not entry.get("feasible"):
        return "NOT MET"
    return (f"NOT MET held out, but within one standard error ({_values(entry.get('held_out_se'), groups)}) "
            "of the bound, which the fit counts as met")


def fit_report_lines(report: dict, texts, groups) -> list[str]:
    """``constraint_report_`` in a few lines: each constraint on the training and held-out rows, met or not, the choice.

    ``groups``: the labels of a constraint's per-group values (``constraint_groups_``).
    """
    held = report["checked_on"] == "held_out"
    lines = [f"Constraints at the model's threshold (met or NOT MET on the "
             f"{'held-out rows' if held else 'training rows; none were held out'}):"]
    for text, entry in zip(texts, report["constraints"]):
        where = f", held out {_values(entry['held_out'], groups)}" if held else ""
        lines.append(f"  {text}: train {_values(entry['train'], groups)}{where}, {_verdict(entry, groups)}")
    lines.append(f"  start: {report['start']['description']}")
    lines.append(f"  chosen: {report['chosen']}")
    return lines


def _rates(constraint, scores, labels, codes, n_groups, weight=None):
    """``(rates, seen)`` at ``score > 0``: one rate per group (one in all for a rate over all rows); ``seen``: the
    groups with a row the rate counts."""
    grouped = constraint.needs_groups
    rates, counts = exact_rates(scores, labels, 0.0, constraint.rate, groups=codes if grouped else None,
                                n_groups=n_groups if grouped else None, weight=weight)
    return rates, counts > 0


def _statistic(constraint, rates, seen) -> float:
    """The rate; the gap over the seen groups; in each group the worst one (lowest for a floor); NaN if unmeasured."""
    rates = rates[seen]
    if rates.numel() < (2 if constraint.scope == "gap" else 1):
        return float("nan")
    if constraint.scope == "gap":
        return float(rates.max() - rates.min())
    return float(rates.min() if constraint.at_least is not None else rates.max())


def measure_constraints(saved, positive, score, groups, n_resamples: int, seed: int) -> list[tuple]:
    """Per saved constraint ``(text, constraint, value, low, high, per_group)`` on these rows at the model's threshold.

    ``groups``: the ``by`` column's labels per row (None if no constraint needs them); ``low``, ``high``: the
    2.5 % and 97.5 % percentiles of the value over ``n_resamples`` resamples of the rows (seeded with ``seed``) where
    it is measured; ``per_group``: ``{group: rate}`` of a constraint measured in groups, else None.
    """
    specs = saved_constraints(saved)
    scores = torch.tensor(score, dtype=torch.float64)  # copies: a column of a frame may be read-only
    labels = torch.tensor(np.asarray(positive, dtype=bool))
    names, codes, n_groups = None, None, None
    if groups is not None:
        names, inverse = np.unique(groups, return_inverse=True)
        codes, n_groups = torch.as_tensor(inverse.reshape(-1), dtype=torch.long), len(names)
    n, rng, draws = len(score), np.random.default_rng(seed), []
    chunk = max(1, MAX_CELLS // n)
    for start in range(0, n_resamples, chunk):
        counts = torch.as_tensor(_resample_counts(rng, n, min(chunk, n_resamples - start), np.arange(n)),
                                 dtype=torch.float64)
        draws += [[_statistic(spec.constraint, *_rates(spec.constraint, scores, labels, codes, n_groups, weight))
                   for spec in specs] for weight in counts]
    draws = np.asarray(draws, dtype=np.float64).reshape(-1, len(specs))
    rows = []
    for j, spec in enumerate(specs):
        rates, seen = _rates(spec.constraint, scores, labels, codes, n_groups)
        per_group = None if spec.by is None else \
            {name: float(r) for name, r, s in zip(names, rates.tolist(), seen.tolist()) if s}
        column = draws[:, j][np.isfinite(draws[:, j])]
        low, high = np.percentile(column, [2.5, 97.5]) if column.size else (np.nan, np.nan)
        rows.append((spec.text, spec.constraint, _statistic(spec.constraint, rates, seen), float(low), float(high),
                     per_group))
    return rows


def constraint_lines(by: str | None, rows, n_resamples: int, seed: int) -> list[str]:
    """The report's constraint table: one line per constraint, its value, interval, bound and whether it is met."""
    where = f" (groups of column '{by}')" if by is not None else ""
    lines = [f"## Constraints{where}", "", "| constraint | value | 95 % bootstrap interval | bound | met |",
             "|---|---|---|---|---|"]
    for text, constraint, value, low, high, per_group in rows:
        bound = f">= {constraint.at_least:g}" if constraint.at_least is not None else f"<= {constraint.at_most:g}"
        if not np.isfinite(value):
            met = NOT_MEASURED
        else:
            met = "met" if (value >= constraint.at_least if constraint.at_least is not None
                            else value <= constraint.at_most) else "NOT MET"
        shown = NOT_MEASURED if not np.isfinite(value) else f"{value:.4f}"
        if per_group:
            shown += " (" + ", ".join(f"{name} {rate:.4f}" for name, rate in per_group.items()) + ")"
        interval = f"[{low:.4f}, {high:.4f}]" if np.isfinite(low) else "[n/a]"
        lines.append(f"| {text} | {shown} | {interval} | {bound} | {met} |")
    lines += ["", f"Each value is at the model's threshold on this file's rows: the rate, a gap's largest minus smallest "
                  f"group rate, or in each group the worst group's rate (each group's rate in parentheses); the interval: 2.5 and 97.5 percentiles over "
                  f"{n_resamples} resamples of the rows, seed {seed} (n/a: fewer than two groups, or no row the rate "
                  f"counts).", ""]
    return lines
