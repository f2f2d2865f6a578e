r"""Algorithm 1 of Mackey, Luo & Eban (2018): SGD on the quantile surrogate loss.

.. code-block:: text

    while not converged:
        gather a minibatch (X_b, Y_b) from (X, Y)
        gather a minibatch A_b from A                      # step 2, \label{alg:step2}
        w <- w - lr * grad_w L(X_b, Y_b, f(.; w), q(f(A_b), 1 - c))

``A`` is the subset whose rate the constraint fixes: the positives for precision at
recall, every row for precision at a rate, the negatives for recall at a false positive
rate. :func:`train` runs that loop with ``torch.optim.SGD`` (momentum, weight decay), an
epoch budget, optional early stopping, restarts (the lowest training loss wins, the
paper's Q1 against Q3), a random or logistic-regression start, and resumable checkpoints.
It knows nothing of scikit-learn's estimator API; :class:`~quantile_surrogate.QuantileClassifier`
wraps it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from ._loop import MIN_GROUP_SUBSET_ROWS, TrainingDivergedError, TrainResult, _Config, _Trainer
from .._validation import check_bandwidth, check_option, check_target
from ..losses import SURROGATES
from ..objectives import (
    OBJECTIVES,
    constraint_threshold,
    group_constraint_thresholds,
    objective_loss,
    objective_metric,
    predict_scores,
    subset_mask,
    training_loss,
)
from ..quantiles import resolve_quantile

__all__ = [
    "OBJECTIVES",
    "INITS",
    "MIN_GROUP_SUBSET_ROWS",
    "TrainResult",
    "TrainingDivergedError",
    "train",
    "objective_loss",
    "objective_metric",
    "constraint_threshold",
    "group_constraint_thresholds",
    "subset_mask",
    "training_loss",
    "predict_scores",
]

INITS = ("random", "logistic", "mixed", "model")
"""Starts: random (the paper), logistic regression's solution, ``mixed`` (the logistic start
for restart 0, random starts for the others), or ``model``: the parameters of the module
passed as ``model``, as they are (to continue or refit a model)."""


def _check_positive_int(value, name, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1{' or None' if allow_none else ''}; got {value!r}.")
    return int(value)


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"`{name}` must be an integer >= 0; got {value!r}.")
    return int(value)


FINITE_CHECK_VALUES = 1 << 22
"""Values per chunk of the NaN/inf check (32 MiB of float64). ``torch.isfinite(X)`` builds
temporaries as large as its input (``|X|`` and masks): 1.4x the size of X measured on all of
a float64 X, about 2x this chunk done in chunks."""


def _check_data(X, y, name_x="X", name_y="y"):
    if not isinstance(X, torch.Tensor) or not X.is_floating_point() or X.ndim != 2:
        raise ValueError(f"`{name_x}` must be a 2-D floating point torch.Tensor of shape (n, d).")
    # In chunks of rows: isfinite on all of X at once would hold the data (and more) a second time.
    for chunk in X.split(max(1, FINITE_CHECK_VALUES // max(1, X.shape[1]))):
        if not bool(torch.isfinite(chunk).all()):
            raise ValueError(f"`{name_x}` contains NaN or inf; impute or drop those rows first.")
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"`{name_y}` must be a 1-D tensor with one label per row of `{name_x}` ({X.shape[0]}).")
    values = torch.unique(y)
    if not bool(((values == 0) | (values == 1)).all()):
        raise ValueError(f"`{name_y}` must be binary in {{0, 1}}; got values {values[:6].tolist()}.")
    return y.bool()


def _check_groups(groups, labels, objective, name="groups"):
    """Integer group codes, one per row, each group with a row of ``A``; returned as int64 on ``labels``' device."""
    if not isinstance(groups, torch.Tensor) or groups.dtype == torch.bool or groups.is_floating_point() \
            or groups.is_complex():
        raise TypeError(f"`{name}` must be an integer torch.Tensor of group codes 0..G-1; encode labels with "
                        "numpy.unique(..., return_inverse=True) (QuantileClassifier.fit does this for you).")
    if groups.ndim != 1 or groups.shape[0] != labels.shape[0]:
        raise ValueError(f"`{name}` has shape {tuple(groups.shape)}; it needs one group code per row "
                         f"({labels.shape[0]}).")
    groups = groups.to(device=labels.device, dtype=torch.int64)
    if groups.numel() and int(groups.min()) < 0:
        raise ValueError(f"`{name}` must hold codes >= 0; got {int(groups.min())}.")
    present = torch.unique(groups)
    covered = torch.unique(groups[subset_mask(labels, objective)])
    missing = sorted(set(present.tolist()) - set(covered.tolist()))
    if missing:
        raise ValueError(
            f"Group {missing[0]} in `{name}` has no row of the subset A ({OBJECTIVES[objective].subset}) "
            f"for {objective!r}, so its threshold is undefined; merge it with another group or drop its rows"
            + (f" (groups without A: {missing[:6]})." if len(missing) > 1 else "."))
    return groups


def train(
    model,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    objective: str = "precision_at_recall",
    target: float = 0.95,
    form: str = "fp",
    quantile="kernel",
    bandwidth: float = 0.05,
    surrogate: str = "logistic",
    learning_rate: float = 0.01,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    subset_batch_size: int | None = None,
    subset_from_batch: bool = False,
    max_epochs: int = 100,
    n_restarts: int = 1,
    init: str = "random",
    init_alpha: float | None = None,
    early_stopping: bool = False,
    n_iter_no_change: int = 10,
    tol: float = 1e-4,
    groups: torch.Tensor | None = None,
    validation: tuple | None = None,
    validation_metric: Callable | None = None,
    select: str = "loss",
    monitor: str = "metric",
    random_state: int | None = None,
    checkpoint=None,
    callback: Callable | None = None,
    progress: bool = False,
) -> TrainResult:
    r"""Minimise the objective's quantile surrogate loss by Algorithm 1 and return the best restart.

    Each step takes a minibatch ``(X_b, y_b)`` and a separate minibatch ``A_b`` of
    ``subset_batch_size`` rows of ``A``, computes ``theta = q(f(A_b), 1 - target)`` and the loss
    of eq. (7), (9)/(10) or the recall-at-FPR form on ``(X_b, y_b)``, and takes an SGD step
    with momentum and weight decay (on weight matrices, not biases). ``batch_size=None`` is
    full-batch gradient descent: one forward pass per epoch, ``A_b = A``.

    Parameters
    ----------
    model : torch.nn.Module or callable
        The scoring function, mapping (n, d) to (n,) or (n, 1). A module is deep-copied and its
        parameters redrawn (``reset_parameters``) for each restart; a zero-argument callable is
        called once per restart. It is moved to ``X``'s device and dtype.
    X : Tensor of shape (n, d), floating point
    y : Tensor of shape (n,), {0, 1} or bool
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}
    target : float in (0, 1)
        The recall, predicted positive rate, or false positive rate.
    form : {"fp", "tp"}
        For ``precision_at_rate``: eq. (9) or (10).
    quantile, bandwidth, surrogate
        As in :func:`quantile_surrogate.losses.rate_constrained_loss`.
    learning_rate, momentum, weight_decay : float
        ``torch.optim.SGD`` settings.
    batch_size : int or None
        Rows per minibatch; None for the full batch.
    subset_batch_size : int or None
        Rows of ``A`` per step (Algorithm 1, step 2); None for ``batch_size``, and all of ``A``
        if it is at least ``|A|``.
    subset_from_batch : bool
        Take ``A_b = X_b \cap A`` instead of a separate minibatch (when ``A`` is common).
    max_epochs : int >= 0
        Epoch budget per restart; 0 returns the start (logistic regression's fit, say).
    n_restarts : int
        Independent runs; the one with the lowest full-batch training loss is kept
        (``select="validation"`` keeps the best validation metric instead).
    init : {"random", "logistic", "mixed", "model"}
        See :data:`INITS`. The logistic start fits the model by penalised maximum likelihood
        with ``init_alpha`` (default ``1 / n``: ``LogisticRegression(C=1)`` for a linear model).
    groups : integer Tensor of shape (n,), optional
        Group codes 0..G-1. Each group gets its own threshold ``q(f(A \cap G_g), 1 - target)``,
        so the constraint is trained to hold in every group: the same predicted positive rate
        (``precision_at_rate``, demographic parity), recall >= target (``precision_at_recall``,
        equal opportunity) or FPR <= target (``recall_at_fpr``) in each. The separate minibatch
        of ``A`` then carries its rows' codes, and every group gets its share of
        ``subset_batch_size``, at least ``min(MIN_GROUP_SUBSET_ROWS, subset_batch_size)`` rows
        (all of its rows of ``A`` if it has fewer). Every group must have a row of ``A``.
    early_stopping : bool
        Stop a restart when the monitored value has not improved for ``n_iter_no_change``
        epochs: the validation metric if ``validation`` is given (and then the best epoch's
        parameters are restored), else the epoch training loss (improvement by more than ``tol``).
    validation : (X_val, y_val) or, with ``groups``, (X_val, y_val, groups_val), optional
        Held-out rows on which ``validation_metric(y_val, scores)`` (default: the objective's
        exact metric at ``target``) is measured after every epoch and at the start (epoch 0).
        With groups it is called as ``validation_metric(y_val, scores, groups_val)``, and the
        default is the metric at every group's own constraint threshold
        (:func:`~quantile_surrogate.objectives.objective_metric` with ``groups``).
    select : {"loss", "validation"}
        How restarts are compared: full-batch training loss (the paper), or the validation
        value below (needs ``validation``).
    monitor : {"metric", "loss"}
        The validation value: ``"metric"`` compares ``(metric, -loss)`` lexicographically (the
        surrogate loss on the validation rows breaks the coarse metric's ties), ``"loss"``
        compares ``(-loss, metric)``.
    random_state : int or None
        Seeds the starts, the shuffling and any randomness inside the model; restart ``r``
        gets the same seed whatever ``n_restarts`` is.
    checkpoint : str or path-like, optional
        Saved atomically after every epoch; a call with the same path, data and settings
        resumes from it and gives the same model, bit for bit, as an uninterrupted run.
    callback : callable, optional
        Called after every epoch (after the checkpoint) with a dict: restart, epoch, loss,
        threshold, model. An exception raised in it stops training.
    progress : bool
        Show a tqdm bar over epochs with the loss and the current threshold.

    Returns
    -------
    TrainResult

    Raises
    ------
    TrainingDivergedError
        If the loss or a parameter becomes NaN or inf.
    """
    check_option(objective, OBJECTIVES, "objective")
    target = check_target(target, "target")
    check_option(form, ("fp", "tp"), "form")
    check_option(surrogate, SURROGATES, "surrogate")
    check_option(init, INITS, "init")
    check_option(select, ("loss", "validation"), "select")
    check_option(monitor, ("metric", "loss"), "monitor")
    bandwidth = check_bandwidth(bandwidth)
    resolve_quantile(quantile, bandwidth)
    for name, value, low in (("learning_rate", learning_rate, 0.0), ("weight_decay", weight_decay, None)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and (value > 0 if low == 0.0 else value >= 0)):
            raise ValueError(f"`{name}` must be a finite number {'> 0' if low == 0.0 else '>= 0'}; got {value!r}.")
    if not (isinstance(momentum, (int, float)) and 0 <= momentum < 1):
        raise ValueError(f"`momentum` must be in [0, 1); got {momentum!r}.")
    config = _Config(
        objective, target, form, quantile, bandwidth, surrogate, float(learning_rate), float(momentum),
        float(weight_decay), _check_positive_int(batch_size, "batch_size", True),
        _check_positive_int(subset_batch_size, "subset_batch_size", True), bool(subset_from_batch),
        _check_count(max_epochs, "max_epochs"), _check_positive_int(n_restarts, "n_restarts"),
        init, init_alpha, bool(early_stopping), _check_positive_int(n_iter_no_change, "n_iter_no_change"),
        float(tol), select, monitor,
    )
    labels = _check_data(X, y)
    if not bool(subset_mask(labels, objective).any()):
        raise ValueError(f"`y` has no row of the subset A ({OBJECTIVES[objective].subset}) for {objective!r}.")
    if groups is not None:
        groups = _check_groups(groups, labels, objective)
    if validation is not None:
        validation = tuple(validation)
        if len(validation) != (2 if groups is None else 3):
            raise ValueError("`validation` must be (X_val, y_val)" + (
                "; with `groups`, (X_val, y_val, groups_val)." if groups is not None else
                "; pass validation groups only together with `groups=`."))
        val_labels = _check_data(*validation[:2], "validation[0]", "validation[1]")
        if groups is not None:
            validation = validation[:2] + (_check_groups(validation[2], val_labels, objective, "validation[2]"),)
    if select == "validation" and validation is None:
        raise ValueError("`select='validation'` needs `validation=(X_val, y_val)`.")
    trainer = _Trainer(config, model, X, labels, validation, validation_metric, callback, progress, groups)
    return trainer.run(random_state, checkpoint)
