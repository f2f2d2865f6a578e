"""Which label did the paper use? Candidates scored by how well thresholded LR reproduces its LR column.

The paper says neither which Ionosphere class is positive nor how Housing was made binary.
Thresholded logistic regression has no tuning beyond ``C``, so the candidate label under
which its P@tau is closest to the paper's LR column is the most plausible reading. For each
candidate this runs the paper's protocol for LR alone (``select="paper"``) and reports the
mean absolute difference from the paper's LR means.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .. import datasets
from .paper import PAPER_TABLES, PROTOCOLS
from .precision_at_k import run_precision_at_k, summarise

__all__ = ["candidate_labels", "label_evidence"]

DATASET_MESSAGE = "`dataset` must be 'ionosphere' or 'housing'; got {value!r}."


def candidate_labels(dataset: str) -> dict:
    """The plausible binary versions of a data set the paper uses without saying how it made it binary.

    Parameters
    ----------
    dataset : {"ionosphere", "housing"}
        Ionosphere: either class positive. Housing: ``CHAS = 1`` (CHAS removed), or the top
        10 % or 5 %, or the bottom 5 % or 10 %, of ``MEDV`` (MEDV removed).

    Returns
    -------
    dict
        ``{description: (X, y)}``, ``y`` int64 in {0, 1}.

    Raises
    ------
    ValueError
        For another ``dataset``.

    Examples
    --------
    >>> from quantile_surrogate.experiments.labels import candidate_labels
    >>> {name: int(y.sum()) for name, (X, y) in candidate_labels("ionosphere").items()}
    {'class g positive': 225, 'class b positive': 126}
    >>> len(candidate_labels("housing"))
    5
    """
    if dataset == "ionosphere":
        return {f"class {c} positive": datasets.load_ionosphere(positive=c) for c in ("g", "b")}
    if dataset != "housing":
        raise ValueError(DATASET_MESSAGE.format(value=dataset))
    table, _ = datasets.load_housing(label="raw")
    medv = table[:, -1]
    out = {"CHAS = 1, CHAS removed": datasets.load_housing()}
    for q in (90, 95):
        cut = np.percentile(medv, q)
        out[f"MEDV > {cut:g} (top {100 - q} %), MEDV removed"] = (table[:, :-1], (medv > cut).astype(np.int64))
    for q in (5, 10):
        cut = np.percentile(medv, q)
        out[f"MEDV < {cut:g} (bottom {q} %), MEDV removed"] = (table[:, :-1], (medv < cut).astype(np.int64))
    return out


def label_evidence(dataset: str, *, n_splits: int = 100, grid=None, n_jobs: int = 1,
                   verbose: bool = False) -> pd.DataFrame:
    r"""LR's P@tau per candidate label, and its mean absolute difference from the paper's LR column.

    Runs the paper's protocol (:data:`~quantile_surrogate.experiments.paper.PROTOCOLS`) for
    logistic regression alone, with the paper's selection (best mean test P@tau), on every
    label of :func:`candidate_labels`.

    Parameters
    ----------
    dataset : {"ionosphere", "housing"}
    n_splits : int, default=100
        Random splits per candidate.
    grid : sequence of float, optional
        The values of ``C`` tried; the protocol's five by default.
    n_jobs : int, default=1
        Parallel processes (``-1``: all cores).
    verbose : bool, default=False
        Show a progress bar per candidate.

    Returns
    -------
    pandas.DataFrame
        One row per candidate, best first: ``label``, ``positives``, ``mean_abs_gap`` and one
        column ``P@{tau}%`` per tau of the protocol.

    Raises
    ------
    KeyError
        For a ``dataset`` without a protocol.
    ValueError
        For ``"cover"``, which has no candidate list.

    Notes
    -----
    With :math:`\bar P_\tau` our mean P@tau and :math:`P^{\mathrm{paper}}_\tau` the paper's LR
    mean (tables 1 and 2), over the protocol's taus :math:`T`,

    .. math::
        \mathrm{mean\_abs\_gap} = \frac{1}{|T|} \sum_{\tau \in T} |\bar P_\tau - P^{\mathrm{paper}}_\tau|.

    Examples
    --------
    >>> from quantile_surrogate.experiments.labels import label_evidence
    >>> evidence = label_evidence("ionosphere", n_splits=1, grid=[0.1])
    >>> evidence.label.tolist()  # the reading closest to the paper's LR column comes first
    ['class g positive', 'class b positive']
    """
    protocol = PROTOCOLS[dataset]
    grids = dict(protocol.grids)
    if grid is not None:
        grids["LR"] = ("C", tuple(grid))
    protocol = dataclasses.replace(protocol, families=("LR",), grids=grids)
    paper = PAPER_TABLES[dataset]["LR"]
    rows = []
    for name, (X, y) in candidate_labels(dataset).items():
        summary = summarise(run_precision_at_k(protocol, n_splits=n_splits, select="paper", n_jobs=n_jobs,
                                               verbose=verbose, data=(X, y)))
        means = dict(zip(summary.tau, summary["mean"]))
        gap = float(np.mean([abs(means[t] - paper[t][0]) for t in protocol.taus]))
        rows.append(dict(label=name, positives=int(y.sum()), mean_abs_gap=gap,
                         **{f"P@{100 * t:g}%": means[t] for t in protocol.taus}))
    return pd.DataFrame(rows).sort_values("mean_abs_gap", ignore_index=True)
