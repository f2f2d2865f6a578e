"""Precision@tau experiments: the paper's tables 1 and 2 (Ionosphere, Housing) and the Cover stand-in.

Protocol (section 5.1): random train/test splits (stratified by the label, so that every
training part has positives); features standardised on the training part; for every tau,
each method is trained for that tau and evaluated by P@tau on the test part, with
``K = ceil(tau n_test)`` by default (``rounding="floor"`` is the paper's apparent choice at
Housing tau = 1 %, see docs/paper_notes.md).

Regularisation is chosen per tau in one of two ways:

- ``select="paper"``: every value of the grid is run on every split, and the value with the
  best mean *test* P@tau is reported (as the paper and AATP did). It flatters every method.
- ``select="cv"`` (default): for each split, stratified k-fold cross-validation on the
  training part picks the value with the best mean validation P@tau, and the method is
  refit on the whole training part with it. Honest, and costs ``k + 1`` fits per value.

The quantile family "Q" runs the quantile loss from three random starts; Q1 is the first
start, Q3 the start with the lowest training loss (the paper's two columns).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from .. import datasets, metrics
from ..baselines import BASELINES
from ..objectives import predict_scores
from ..training import train
from ._heads import train_linear_heads
from .paper import Protocol

__all__ = ["run_precision_at_k", "summarise"]

SELECT_MESSAGE = "`select` must be 'cv' or 'paper'; got {value!r}."

# Protocol.dataset -> its loader (used when run_precision_at_k gets no `data=`).
LOADERS = {
    "ionosphere": datasets.load_ionosphere,
    "housing": datasets.load_housing,
    "cover": datasets.load_cover,
}


def _quantile_scores(X_train, y_train, X_evals, tau, values, seed, protocol: Protocol):
    """Q1 and Q3 for each weight decay in ``values``: three random starts, Q3 the lowest training loss."""
    X = torch.as_tensor(X_train, dtype=torch.float64)
    y = torch.as_tensor(y_train)
    evals = [torch.as_tensor(E, dtype=torch.float64) for E in X_evals]
    seeds = [seed * 7 + start for start in range(3)]
    if protocol.batch_size is None:
        # Full batch: every (value, start) run as one head of a vectorised model.
        decays = [v for v in values for _ in seeds]
        W, b, losses = train_linear_heads(X, y, rate=tau, weight_decays=decays, seeds=seeds * len(values),
                                          bandwidth=protocol.bandwidth, form=protocol.form,
                                          learning_rate=protocol.learning_rate, max_epochs=protocol.max_epochs)
        heads = [[(lambda E, h=3 * i + j: (E @ W[:, h] + b[h]).numpy(), float(losses[3 * i + j])) for j in range(3)]
                 for i in range(len(values))]
    else:
        heads = []
        for value in values:
            runs = [train(torch.nn.Linear(X.shape[1], 1, dtype=torch.float64), X, y, objective="precision_at_rate",
                          target=tau, form=protocol.form, bandwidth=protocol.bandwidth,
                          learning_rate=protocol.learning_rate, momentum=0.9, alpha=value,
                          batch_size=protocol.batch_size, max_epochs=protocol.max_epochs, init="random",
                          random_state=s) for s in seeds]
            heads.append([(lambda E, m=r.model: predict_scores(m, E).numpy(), r.loss) for r in runs])
    out = {}
    for value, runs in zip(values, heads):
        best = min(range(3), key=lambda j: runs[j][1])
        out[("Q1", value)] = [runs[0][0](E) for E in evals]
        out[("Q3", value)] = [runs[best][0](E) for E in evals]
    return out


def family_scores(family, X_train, y_train, X_evals, tau, values, seed, protocol: Protocol):
    """``{(method, value): [scores on each array of X_evals]}`` for each regularisation value."""
    if family == "Q":
        return _quantile_scores(X_train, y_train, X_evals, tau, values, seed, protocol)
    parameter = protocol.grids[family][0]
    out = {}
    for value in values:
        settings = {parameter: value, "random_state": seed, "objective": "precision_at_rate", "target": tau}
        if family == "AATP":
            settings["n_candidates"] = protocol.aatp_candidates
        estimator = BASELINES[family](**settings).fit(X_train, y_train)
        out[(family, value)] = [estimator.decision_function(E) for E in X_evals]
    return out


def _precision(y, scores, tau, rounding):
    return metrics.precision_at_rate(y, scores, tau, rounding=rounding)


def _run_split(split, X, y, protocol: Protocol, select, folds, rounding):
    torch.set_num_threads(1)
    train_idx, test_idx = train_test_split(
        np.arange(len(y)), train_size=protocol.train_fraction, random_state=split, stratify=y
    )
    scaler = StandardScaler().fit(X[train_idx])
    X_train, X_test = scaler.transform(X[train_idx]), scaler.transform(X[test_idx])
    y_train, y_test = y[train_idx], y[test_idx]
    rows = []

    def record(method, value, test_scores, validation=np.nan):
        rows.append(dict(split=split, tau=tau, method=method, parameter=protocol.grids[family][0], value=value,
                         validation=validation, test=_precision(y_test, test_scores, tau, rounding)))

    for tau in protocol.taus:
        for family in protocol.families:
            grid = protocol.grids[family][1]
            if select == "paper" or len(grid) == 1:
                for (method, value), (test_scores,) in family_scores(
                        family, X_train, y_train, [X_test], tau, grid, split, protocol).items():
                    record(method, value, test_scores)
                continue
            validation = {}
            kfold = StratifiedKFold(folds, shuffle=True, random_state=split)
            for fold, (fit_idx, val_idx) in enumerate(kfold.split(X_train, y_train)):
                for key, (val_scores,) in family_scores(family, X_train[fit_idx], y_train[fit_idx],
                                                        [X_train[val_idx]], tau, grid, split * 31 + fold,
                                                        protocol).items():
                    validation.setdefault(key, []).append(_precision(y_train[val_idx], val_scores, tau, rounding))
            methods = sorted({m for m, _ in validation})
            chosen = {m: max(grid, key=lambda v: np.mean(validation[(m, v)])) for m in methods}
            refit = family_scores(family, X_train, y_train, [X_test], tau, sorted(set(chosen.values())), split,
                                  protocol)
            for method, value in chosen.items():
                record(method, value, refit[(method, value)][0], float(np.mean(validation[(method, value)])))
    return rows


def run_precision_at_k(protocol: Protocol, *, n_splits=None, select="cv", folds=3, rounding="ceil",
                       n_jobs=1, verbose=True, data=None) -> pd.DataFrame:
    r"""Run the protocol on ``n_splits`` random splits; one row per (split, tau, method, value).

    Splits run in parallel with joblib, each on one torch thread. Split ``s`` is seeded by
    ``s``, so a run is reproducible and its first splits do not depend on ``n_splits``.

    Parameters
    ----------
    protocol : Protocol
        The experiment (:data:`~quantile_surrogate.experiments.paper.PROTOCOLS`, or one
        changed with :func:`dataclasses.replace`).
    n_splits : int or None, default=None
        Random train/test splits; None for ``protocol.n_splits``.
    select : {"cv", "paper"}, default="cv"
        How the regularisation value is chosen per tau (see the module docstring):
        cross-validation on the training part, or the best mean test score (the paper's).
    folds : int, default=3
        Inner cross-validation folds for ``select="cv"``.
    rounding : {"ceil", "floor"}, default="ceil"
        ``K = ceil(tau n)`` or ``floor(tau n)`` test rows counted as predicted positive.
    n_jobs : int, default=1
        Parallel processes (``-1``: all cores).
    verbose : bool, default=True
        Show a tqdm bar over the splits.
    data : (X, y), optional
        Run the protocol on these arrays instead of ``protocol.dataset``.

    Returns
    -------
    pandas.DataFrame
        Columns ``split, tau, method, parameter, value, validation, test``: the method's
        regularisation ``parameter`` and its ``value``, the inner cross-validated P@tau
        (``validation``, NaN for ``select="paper"``) and the test P@tau. With
        ``select="cv"`` one row per (split, tau, method), at the selected value.

    Raises
    ------
    ValueError
        If ``select`` is neither ``"cv"`` nor ``"paper"``.

    See Also
    --------
    summarise : Mean and std per (tau, method), as the paper's tables print them.

    Notes
    -----
    The test score is precision at the predicted positive rate tau (section 5.1),

    .. math::
        P@\tau = \frac{1}{K} \sum_{i \in \mathrm{top}_K(f)} \mathbf{1}[y_i = 1],
        \qquad K = \lceil \tau n_{\mathrm{test}} \rceil,

    and the quantile family minimises eq. (9) (``form="fp"``) or eq. (10) (``"tp"``) with
    the Gaussian kernel estimator (eq. (13), normalised) at ``protocol.bandwidth``.

    Examples
    --------
    Logistic regression on a small synthetic data set, two splits (the paper's protocols
    take minutes to hours):

    >>> import dataclasses
    >>> from quantile_surrogate.datasets import make_gaussian_mixture
    >>> from quantile_surrogate.experiments import PROTOCOLS, run_precision_at_k, summarise
    >>> protocol = dataclasses.replace(PROTOCOLS["ionosphere"], taus=(0.1,), families=("LR",),
    ...                                grids={"LR": ("C", (0.1, 1.0))})
    >>> results = run_precision_at_k(protocol, n_splits=2, select="paper", verbose=False,
    ...                              data=make_gaussian_mixture(400, random_state=0))
    >>> results.shape, list(results.columns)
    ((4, 7), ['split', 'tau', 'method', 'parameter', 'value', 'validation', 'test'])
    >>> [round(v, 3) for v in results.test]  # P@tau counts K = ceil(0.1 * 280) = 28 test rows
    [0.357, 0.357, 0.357, 0.393]
    >>> summarise(results)[["method", "value", "mean"]].round(3).values.tolist()
    [['LR', 1.0, 0.375]]
    """
    if select not in ("cv", "paper"):
        raise ValueError(SELECT_MESSAGE.format(value=select))
    X, y = data if data is not None else LOADERS[protocol.dataset]()
    n_splits = protocol.n_splits if n_splits is None else n_splits
    jobs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(_run_split)(split, X, y, protocol, select, folds, rounding) for split in range(n_splits)
    )
    rows = []
    for split_rows in tqdm(jobs, total=n_splits, desc=f"{protocol.dataset} splits", disable=not verbose):
        rows.extend(split_rows)
    return pd.DataFrame(rows).sort_values(["tau", "method", "value", "split"], ignore_index=True)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std of test P@tau per (tau, method) at the selected regularisation.

    With one value per split (``select="cv"``) that is the plain mean; with every value on
    every split (``select="paper"``) the value with the best mean test P@tau is kept.

    Parameters
    ----------
    results : pandas.DataFrame
        The output of :func:`run_precision_at_k`.

    Returns
    -------
    pandas.DataFrame
        One row per (tau, method) with columns ``tau, method, value, mean, std, n`` (in the
        order ``tau, method, mean, std, n, value`` for ``select="cv"``, where ``value`` is the
        value chosen most often); ``n`` counts the splits.

    See Also
    --------
    quantile_surrogate.experiments.report.markdown_table : Prints it beside the paper's table.

    Examples
    --------
    >>> import pandas as pd
    >>> from quantile_surrogate.experiments import summarise
    >>> results = pd.DataFrame({"split": [0, 1, 0, 1], "tau": 0.1, "method": "LR", "parameter": "C",
    ...                         "value": [0.1, 0.1, 1.0, 1.0], "validation": float("nan"),
    ...                         "test": [0.5, 0.7, 0.6, 0.8]})
    >>> row = summarise(results).iloc[0]  # every value on every split: the best mean is kept
    >>> float(row.value), round(float(row["mean"]), 3), int(row.n)
    (1.0, 0.7, 2)
    """
    stats = (results.groupby(["tau", "method", "value"])["test"]
             .agg(mean="mean", std="std", n="count").reset_index())
    per_split_choice = results.groupby(["tau", "method", "split"]).size().max() == 1
    if per_split_choice:
        grouped = results.groupby(["tau", "method"])["test"]
        out = grouped.agg(mean="mean", std="std", n="count").reset_index()
        out["value"] = results.groupby(["tau", "method"])["value"].agg(lambda v: v.mode().iloc[0]).values
        return out
    best = stats.loc[stats.groupby(["tau", "method"])["mean"].idxmax()]
    return best.reset_index(drop=True)
