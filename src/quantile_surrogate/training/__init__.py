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

import dataclasses
from typing import Callable

import torch

from ._constrained import GAP_MARGIN, constrained_data
from ._loop import TrainingLoop
from .sampling import SubsetBatchSampler
from ._state import TrainingData, TrainingSettings, TrainResult
from ._memory import MEMORY_MODES
from ._steps import EpochSteps
from ._streaming import LoaderSteps, check_loader, check_loader_options, is_loader
from .._utils.errors import TrainingDivergedError
from .._utils.row_checks import check_rows
from .._utils.sparse import as_rows
from .._utils.checks import (
    check_sample_weight,
    check_bandwidth,
    check_finite_number,
    check_group_codes,
    check_integer,
    check_option,
    check_target,
)
from ..losses import SURROGATES
from ..objectives import OBJECTIVES, get_objective, subset_mask
from ..quantiles import resolve_quantile

# TrainingDivergedError (from .._utils.errors) stays importable from here, where training raises it.
__all__ = [
    "train",
    "TrainResult",
    "TrainingDivergedError",
    "SubsetBatchSampler",
    "INITS",
    "GAP_MARGIN",
]

#: Values of ``init=``: ``"random"`` (the paper), ``"logistic"`` (logistic regression's solution,
#: :func:`~quantile_surrogate.training.models.fit_logistic`), ``"mixed"`` (the logistic start for
#: restart 0, random starts for the others), or ``"model"``: the parameters of the module passed
#: as ``model``, as they are (to continue or refit a model). The logistic start fits a matrix ``X``
#: of shape (n, d) only: for other inputs (images, sequences, a dict of tensors) ``"mixed"`` starts
#: every restart at random and ``"logistic"`` raises ``ValueError`` (:data:`LOGISTIC_ROWS_MESSAGE`).
INITS = ("random", "logistic", "mixed", "model")

LOADER_WEIGHT_MESSAGE = (
    "`sample_weight` needs tensor data (X, y); a loader cannot take it. Put the weights into the loss yourself, "
    "or pass X and y as tensors."
)
#: ``init="logistic"`` with an ``X`` that is not a matrix (n, d): the logistic start cannot fit it.
LOGISTIC_ROWS_MESSAGE = (
    "`init='logistic'` fits logistic regression on a matrix X of shape (n, d); `X` is {what}. Pass init='random' "
    "(or 'mixed', which starts at random for such inputs), or X flattened to (n, d) with a model that takes it."
)
CHECKPOINT_WEIGHT_MESSAGE = (
    "`sample_weight` cannot be combined with `checkpoint=` (the checkpoint's data fingerprint does not cover "
    "the weights); drop one of them."
)
NO_SUBSET_MESSAGE = "`y` has no row of the subset A ({subset}) for {objective!r}; training needs at least one."
SELECT_VALIDATION_MESSAGE = "`select='validation'` needs `validation=(X_val, y_val)`."
MEMORY_CALLABLE_MESSAGE = (
    "`threshold_memory` keeps scores relative to each batch's mean and adds it back, which needs a `quantile` "
    "estimator that moves with its scores (q(s + c) = q(s) + c, as the named ones do); pass quantile='kernel' "
    "(or another name), or threshold_memory=None."
)
VALIDATION_WEIGHT_MESSAGE = "`validation_weight` weights the rows of `validation`; pass `validation=` too."
VALIDATION_FORM_MESSAGE = "`validation` must be (X_val, y_val); {fix}"
VALIDATION_GROUPS_FIX = "with `groups`, (X_val, y_val, groups_val)."
VALIDATION_NO_GROUPS_FIX = "pass validation groups only together with `groups=`."
VALIDATION_ONE_CLASS_MESSAGE = (
    "`validation[1]` holds {held}; the validation metric of {objective!r} needs positive and negative rows. "
    "Split the data stratified (e.g. sklearn.model_selection.train_test_split(..., stratify=y))."
)


def train(
    model,
    X,
    y: torch.Tensor | None = None,
    *,
    objective: str = "precision_at_recall",
    target: float = 0.95,
    form: str = "fp",
    quantile="kernel",
    bandwidth: float = 0.05,
    surrogate: str = "logistic",
    learning_rate: float = 0.01,
    momentum: float = 0.9,
    alpha: float = 0.0,
    batch_size: int | None = None,
    subset_batch_size: int | None = None,
    subset_from_batch: bool = False,
    threshold_memory: str | None = None,
    max_epochs: int = 100,
    n_restarts: int = 1,
    init: str = "random",
    init_alpha: float | None = None,
    early_stopping: bool = False,
    n_iter_no_change: int = 10,
    tol: float = 1e-4,
    groups: torch.Tensor | None = None,
    sample_weight=None,
    validation: tuple | None = None,
    validation_metric: Callable | None = None,
    validation_weight=None,
    select: str = "loss",
    monitor: str = "metric",
    random_state: int | None = None,
    checkpoint=None,
    callback: Callable | None = None,
    verbose: bool = False,
    constraints=None,
    constraint_step_size: float = 1.0,
    group_thresholds: bool = True,
) -> TrainResult:
    r"""Minimise the objective's quantile surrogate loss by Algorithm 1 and return the best restart.

    Each step takes a minibatch ``(X_b, y_b)`` and a minibatch ``A_b`` of ``A`` (a separate one
    of ``subset_batch_size`` rows, or the batch's own rows of ``A`` when they are enough; see
    Notes), computes ``theta = q(f(A_b), 1 - target)`` and the loss of eq. (7), (9)/(10) or the
    recall-at-FPR form on ``(X_b, y_b)``, and takes an SGD step with momentum and weight decay
    (on weight matrices, not biases). ``batch_size=None`` is full-batch gradient descent: one
    forward pass per epoch, ``A_b = A``.

    Parameters
    ----------
    model : torch.nn.Module or callable
        The scoring function, mapping ``n`` rows of ``X`` to scores of shape (n,) or (n, 1). A module
        is deep-copied and its parameters redrawn (``reset_parameters``) for each restart; a
        zero-argument callable is called once per restart. It is moved to ``X``'s device and dtype
        (a dict's floating point dtype).
    X : Tensor of shape (n, ...), floating point; dict of Tensors of shape (n, ...); or an iterable of batches
        The rows are the first dimension: a matrix (n, d), dense or sparse, images (n, C, H, W),
        sequences (n, T, d), or a dict of tensors on one device with the same first dimension
        (the model receives a dict with the same keys; integer values such as token ids are
        allowed, floating point ones must be finite), whatever the model takes. Every batch,
        separate minibatch of ``A``, validation row and checkpoint fingerprint takes rows of it
        (:mod:`quantile_surrogate._utils.sparse`); only the logistic start needs a matrix (``init``).
        A sparse ``X`` (a SciPy sparse matrix or array, or a torch sparse tensor) is held as a torch
        sparse CSR tensor of its own dtype (:mod:`quantile_surrogate._utils.sparse`): minibatches take
        its rows, and ``torch.nn.Linear`` (a linear model, an MLP's first layer) multiplies it without
        densifying it; a custom model must accept a ``torch.sparse_csr`` input.
        A loader (with ``y=None``) is iterated once per epoch; each batch is ``(X_b, y_b)``
        (``A_b`` from the batch) or ``((X_b, y_b), (X_a, y_a))`` with a separate minibatch of
        ``A``, as a loader with :class:`~quantile_surrogate.training.sampling.SubsetBatchSampler`
        gives. Its rows are never held together (see :mod:`quantile_surrogate.training._streaming`
        for what that rules out: the logistic start, groups, checkpoints).
    y : Tensor of shape (n,), {0, 1} or bool; None when ``X`` is a loader
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}
    target : float in (0, 1)
        The recall, predicted positive rate, or false positive rate.
    form : {"fp", "tp"}
        For ``precision_at_rate``: eq. (9) or (10).
    quantile, bandwidth, surrogate
        As in :func:`quantile_surrogate.losses.rate_constrained_loss`.
    learning_rate, momentum : float
        ``torch.optim.SGD`` settings.
    alpha : float >= 0
        The L2 penalty: ``torch.optim.SGD``'s ``weight_decay`` on the weights (not the biases), the
        estimators' ``alpha``.
    batch_size : int or None
        Rows per minibatch; None for the full batch.
    subset_batch_size : int or None
        Rows of the separate minibatch of ``A`` per step (Algorithm 1, step 2); all of ``A`` if
        it is at least ``|A|``. None (the default) chooses by the tail count rule of the Notes:
        ``min(|A|, ceil(50 / min(target, 1 - target)), max(batch_size, 16))`` rows (1000 at a
        target of 0.95 or 0.05 and batches of at least 1000), or none at all, ``A_b = X_b \cap A``,
        when a batch holds that many rows of ``A`` in expectation. Ignored by full-batch training.
    subset_from_batch : bool
        Always take ``A_b = X_b \cap A`` instead of a separate minibatch, except in a batch
        without a row of ``A`` (of some group's ``A``): no step runs without them, so such a
        batch draws the separate minibatch for its step (:mod:`.sampling`, with the cost).
    threshold_memory : {"buffer", "ema"} or None
        How a minibatch step's threshold remembers earlier steps (:mod:`._memory`). ``"buffer"``:
        its value is the quantile over the step's scores of ``A`` and those of the last 10 steps
        (each relative to its batch's mean score), its gradient the step's own estimate's:
        ``theta = q(f(A_b)) + sg(theta_buffer - q(f(A_b)))``, ``sg`` a constant. ``"ema"``: a moving
        average (decay 0.9) of the steps' own estimates in place of ``theta_buffer``. With a memory
        ``A_b`` is the batch's own rows of ``A``: no separate minibatch unless ``subset_batch_size``
        asks for one (a batch without them draws ``ceil(batch_size |A| / n)`` rows of ``A``), so a
        step forwards its batch alone. None (the default) is Algorithm 1: every step's threshold
        from its ``A_b`` alone, the separate minibatch of the Notes. ``benchmarks/images.py``
        (a small CNN on digits, recall 0.9) measured ``"buffer"`` at batch 32: the threshold's
        rate unbiased and its spread 1/3 of the batch's own estimate's, at the precision of the
        default within noise (at batch 16 lower: 0.891 against 0.955); with a large ``A`` a sixth
        of the step time of the default before its cap (a 500-row minibatch of ``A`` a step), but
        0.11 lower in precision: those positives carry the threshold's gradient, which a memory of
        scores cannot. The capped default (32 rows at batch 32) kept most of that precision (0.970
        against 0.979) at 2.99x a BCE step against the buffer's 2.3x (``docs/pytorch.md``).
        Ignored by full-batch training (``A_b = A``).
    max_epochs : int >= 0
        Epoch budget per restart; 0 returns the start (logistic regression's fit, say).
    n_restarts : int
        Independent runs; the one with the lowest full-batch training loss is kept
        (``select="validation"`` keeps the best validation metric instead).
    init : {"random", "logistic", "mixed", "model"}
        See :data:`INITS`. The logistic start fits the model by penalised maximum likelihood
        with ``init_alpha`` (default ``1 / n``: ``LogisticRegression(C=1)`` for a linear model).
        It needs a matrix ``X`` of shape (n, d): with any other ``X``, ``"mixed"`` starts every
        restart at random and ``"logistic"`` raises ``ValueError``.
    groups : integer Tensor of shape (n,), optional
        Group codes 0..G-1. Each group gets its own threshold ``q(f(A \cap G_g), 1 - target)``,
        so the constraint is trained to hold in every group: the same predicted positive rate
        (``precision_at_rate``, demographic parity), recall >= target (``precision_at_recall``,
        equal opportunity) or FPR <= target (``recall_at_fpr``) in each. The separate minibatch
        of ``A`` then carries its rows' codes, and every group gets its share of
        ``subset_batch_size``, at least ``min(MIN_GROUP_SUBSET_ROWS, subset_batch_size)`` rows
        (all of its rows of ``A`` if it has fewer); with ``subset_batch_size=None``, the rule's
        rows for each group's own threshold. Every group must have a row of ``A``.
    early_stopping : bool
        Stop a restart when the monitored value has not improved for ``n_iter_no_change``
        epochs: the validation metric if ``validation`` is given (and then the best epoch's
        parameters are restored), else the epoch training loss (improvement by more than ``tol``).
    sample_weight : array-like or Tensor of shape (n,), optional
        Frequency weights ``w_i >= 0`` (0 drops a row): they weight the loss's sum and its
        quantile threshold (the weighted quantile of :mod:`quantile_surrogate.quantiles._weighted`) and
        the logistic start, so full-batch training on integer weights equals training on the
        rows repeated. Minibatches are drawn as without weights (the same draws) and each step
        on integer weights is the step on its rows repeated (:mod:`~quantile_surrogate.training._steps`).
        Tensor data only (a loader raises ``ValueError``); no checkpoints.
        The validation rows are weighted by ``validation_weight``, not by these.
    validation : (X_val, y_val) or, with ``groups``, (X_val, y_val, groups_val), optional
        Held-out rows on which ``validation_metric(y_val, scores)`` (default: the objective's
        exact metric at ``target``) is measured after every epoch and at the start (epoch 0).
        With groups it is called as ``validation_metric(y_val, scores, groups_val)``, and the
        default is the metric at every group's own constraint threshold
        (:func:`~quantile_surrogate.objectives.objective_metric` with ``groups``).
    validation_weight : array-like or Tensor of shape (n_val,), optional
        Frequency weights of the validation rows: the validation metric (the default is then
        :func:`~quantile_surrogate.objectives.objective_metric` with ``sample_weight``; a
        ``validation_metric`` is called with ``sample_weight=`` as a keyword) and the validation
        loss (weighted penalty and threshold) count a row ``w`` times. Needs ``validation``.
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
    verbose : bool
        On a terminal, a tqdm bar over each restart's epochs with the loss and the current
        threshold; into a file or a pipe (a scheduler's log), one line per restart instead
        (its epochs and training loss), without carriage-return frames.
    constraints : sequence of RateConstraint, optional
        Extra rate constraints at the objective's threshold (:mod:`quantile_surrogate.constraints`:
        ``rate(...)``, ``gap(...)``), trained by the proxy-Lagrangian: each step adds
        :math:`\sum_j \lambda_j \tilde c_j` (the surrogate excesses at the step's threshold) to the
        loss; after each epoch :math:`\lambda_j \leftarrow \max(0, \lambda_j + \eta c_j)` on the exact
        excesses of the model on every training row at its exact threshold there, the one an estimator
        deploys (:class:`~quantile_surrogate.constraints.ConstraintSet`;
        ``TrainResult.constraint_curve`` records them per epoch); a minibatch step draws its
        constraint rows per (group, class) cell (:mod:`._constrained`). With ``validation``
        the validation value starts with ``-max(0, largest excess)``: every restart keeps its best
        epoch that meets every constraint on the training rows (a gap between groups :data:`GAP_MARGIN`
        inside its bound) and within one standard error on the validation rows, or the one closest to it.
        Where every constraint is a gap of the recall, the false positive rate or the positive rate,
        a logistic start (``init="logistic"``, or restart 0 of ``"mixed"``) is first refitted with its
        groups' rows reweighted until the gaps hold on the training rows (:mod:`._reweighted_start`;
        ``TrainResult.start_reweighting`` says how). Per-group and gap constraints need ``groups``. Not
        with a loader.
    constraint_step_size : float > 0, default=1.0
        :math:`\eta`, the multipliers' step, taken once per epoch.
    group_thresholds : bool, default=True
        Whether ``groups`` set one threshold per group (the objective's rate in every group), or only
        enter the constraints (False: one threshold for every row, the group not needed to predict).

    Returns
    -------
    TrainResult

    Raises
    ------
    TrainingDivergedError
        If the loss or a parameter becomes NaN or inf.
    TypeError
        For an argument of the wrong type (the message names it).
    ValueError
        For a bad value: an unknown ``objective``, ``init`` or ``form``, a ``target`` outside
        (0, 1), labels that are not binary, no row of ``A`` (in a group, with ``groups``),
        ``select="validation"`` without ``validation``, ``sample_weight`` with a loader or a
        checkpoint, ``init="logistic"`` with an ``X`` that is not a matrix (n, d), or a
        ``checkpoint`` written by another fit; with ``constraints``: a gap over one
        group, a group without a row the rate counts, constraints that no classifier meets together
        (:func:`~quantile_surrogate.constraints.check_satisfiable`).

    See Also
    --------
    quantile_surrogate.QuantileClassifier : The scikit-learn estimator around it.
    quantile_surrogate.objectives.predict_scores : The trained model's scores.
    quantile_surrogate.objectives.thresholds.constraint_threshold : The exact threshold on those scores.
    quantile_surrogate.training.subset_size.subset_plan : The rule for ``subset_batch_size=None``.

    Notes
    -----
    **The loss.** With ``theta = q_hat(f(A_b), 1 - c)`` (eq. (2), Proposition 1), precision at
    recall ``c`` minimises eq. (7) on the batch's negatives,

    .. math::
        \sum_{i \in X_b,\ y_i = 0} l\big(f(x_i; w) - \hat q(f(A_b), 1 - c)\big), \qquad A = X^+,

    precision at a rate penalises the negatives (eq. (9)) or the positives (eq. (10),
    ``l(theta - f(x_i))``) with ``A`` every row, and recall at a false positive rate penalises
    the positives with ``A`` the negatives. ``l`` is ``surrogate`` and ``q_hat`` is ``quantile``
    (the normalised Gaussian kernel estimator of eq. (13) by default).

    **The size of the minibatch of A.** Step 2 of Algorithm 1 needs ``q(f(A), 1 - c)`` from a
    uniform sample of ``m`` rows of ``A`` (``c`` = ``target``). Let ``p = min(c, 1 - c)``, the
    share of ``A`` beyond the level on its shorter side, and ``F`` the distribution of ``f(A)``.
    The rate that the estimate gives is an order statistic's, ``F(theta_hat) ~ Beta(m p,
    m (1 - p))``, with standard error ``sqrt(p (1 - p) / (m + 1))``; relative to ``p``,

    .. math::
        \frac{\mathrm{sd}(F(\hat\theta))}{p} \approx \sqrt{\frac{1 - p}{m p}} \le \frac{1}{\sqrt{k}},
        \qquad k = m \, p,

    where ``k`` is the expected number of sampled rows beyond the level. The accuracy of the
    threshold is set by ``k``, not by ``m`` or by the batch size, so the default takes

    .. math::
        m = \min\big(|A|, \lceil k / \min(c, 1 - c) \rceil, \max(B, 16)\big), \qquad k = 50

    (:data:`~quantile_surrogate.training.subset_size.TAIL_ROWS`): 1000 rows at a target of 0.95
    or 0.05, 250 at 0.8, a relative error of at most ``1 / sqrt(50)`` = 14 % per step (recall
    0.95 +- 0.007 at ``target=0.95``, noise that SGD averages over steps like the batch's own),
    and never more rows than the batch's ``B`` (at least 16): beyond them the step's gradient is
    as noisy as its batch makes it (measured:
    :func:`~quantile_surrogate.training.subset_size.default_subset_batch_size`).
    A batch of ``B`` rows holds ``B |A| / n`` rows of ``A`` in expectation, themselves a uniform
    sample of ``A``: when that is at least ``m``, the step uses them (``A_b = X_b \cap A``) and
    forwards no second minibatch (always so for ``precision_at_rate`` without groups, where
    ``A`` is every row). With ``groups`` the rule holds for every group's threshold. The old
    default, a separate minibatch as large as the batch (10 000 rows at ``batch_size=10_000``),
    forwarded twice the rows of a step for a threshold that trained no better models
    (``benchmarks/RESULTS.md``, benchmark 3). Full-batch training uses all of ``A``.

    Examples
    --------
    Precision at recall 0.9 on the paper's synthetic mixture, where logistic regression with
    its threshold moved to the recall reaches a precision of about 0.15 on the training rows:

    >>> import torch
    >>> from quantile_surrogate import train
    >>> from quantile_surrogate.datasets import make_gaussian_mixture
    >>> from quantile_surrogate.metrics import precision_at_recall
    >>> from quantile_surrogate.objectives import predict_scores
    >>> X, y = make_gaussian_mixture(1000, random_state=0)
    >>> X, y = torch.as_tensor(X), torch.as_tensor(y)
    >>> result = train(torch.nn.Linear(2, 1, dtype=torch.float64), X, y, objective="precision_at_recall",
    ...                target=0.9, learning_rate=0.1, max_epochs=100, random_state=0)
    >>> result.n_iter, round(result.loss, 2)
    (100, 0.67)
    >>> round(precision_at_recall(y.numpy(), predict_scores(result.model, X).numpy(), 0.9), 2)
    0.3
    """
    settings = _check_settings(
        objective=objective, target=target, form=form, quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
        learning_rate=learning_rate, momentum=momentum, weight_decay=alpha, batch_size=batch_size,
        subset_batch_size=subset_batch_size, subset_from_batch=subset_from_batch,
        threshold_memory=threshold_memory, max_epochs=max_epochs,
        n_restarts=n_restarts, init=init, init_alpha=init_alpha, early_stopping=early_stopping,
        n_iter_no_change=n_iter_no_change, tol=tol, select=select, monitor=monitor)
    groups, validation, constraint_groups, validation_groups = _constraint_groups(groups, validation, group_thresholds)
    steps, validation = _checked_data(X, y, groups, sample_weight, validation, validation_weight, settings,
                                      checkpoint)
    refused = ([("a loader of batches", "the constraint rows of each step are drawn from every row; pass tensors")]
               if isinstance(steps, LoaderSteps) else [])
    data, validation, term = constrained_data(constraints, steps.data, validation, constraint_groups, validation_groups,
                                              settings=settings, step_size=constraint_step_size, refused=refused)
    if term is not None:
        steps = EpochSteps(settings, data, term)
    loop = TrainingLoop(settings, model, steps, validation, validation_metric, callback, verbose)
    return loop.run(random_state, checkpoint)


def _constraint_groups(groups, validation, group_thresholds: bool):
    """``(groups, validation, constraint_groups, validation_groups)``: with ``group_thresholds=False`` the group codes
    (of the rows and of ``validation[2]``) enter the constraints only, and set no threshold."""
    if group_thresholds or groups is None:
        return groups, validation, None, None
    if validation is None:
        return None, None, groups, None
    validation = tuple(validation)
    if len(validation) != 3:
        raise ValueError(VALIDATION_FORM_MESSAGE.format(fix=VALIDATION_GROUPS_FIX))
    return None, validation[:2], groups, validation[2]


def _check_settings(**settings) -> TrainingSettings:
    """:func:`train`'s keyword settings, checked (``TypeError`` for a wrong type, ``ValueError`` for a wrong value)."""
    check_option(settings["objective"], OBJECTIVES, "objective")
    settings["target"] = check_target(settings["target"], "target")
    check_option(settings["form"], ("fp", "tp"), "form")
    check_option(settings["surrogate"], SURROGATES, "surrogate")
    check_option(settings["init"], INITS, "init")
    check_option(settings["select"], ("loss", "validation"), "select")
    check_option(settings["monitor"], ("metric", "loss"), "monitor")
    settings["bandwidth"] = check_bandwidth(settings["bandwidth"])
    resolve_quantile(settings["quantile"], settings["bandwidth"])
    settings["learning_rate"] = check_finite_number(settings["learning_rate"], "learning_rate", low=0.0,
                                                    low_inclusive=False)
    settings["weight_decay"] = check_finite_number(settings["weight_decay"], "alpha", low=0.0,
                                                   low_inclusive=True)
    settings["momentum"] = check_finite_number(settings["momentum"], "momentum", low=0.0, low_inclusive=True,
                                               high=1.0)
    for name in ("batch_size", "subset_batch_size"):
        settings[name] = check_integer(settings[name], name, 1, allow_none=True)
    for name in ("n_restarts", "n_iter_no_change"):
        settings[name] = check_integer(settings[name], name, 1)
    settings["max_epochs"] = check_integer(settings["max_epochs"], "max_epochs", 0)
    if settings["init_alpha"] is not None:
        settings["init_alpha"] = check_finite_number(settings["init_alpha"], "init_alpha", low=0.0,
                                                     low_inclusive=True)
    settings["tol"] = check_finite_number(settings["tol"], "tol", low=0.0, low_inclusive=True)
    for name in ("subset_from_batch", "early_stopping"):
        settings[name] = bool(settings[name])
    if settings["threshold_memory"] is not None:
        check_option(settings["threshold_memory"], MEMORY_MODES, "threshold_memory")
        if callable(settings["quantile"]):
            raise ValueError(MEMORY_CALLABLE_MESSAGE)
    return TrainingSettings(**settings)


def _checked_data(X, y, groups, sample_weight, validation, validation_weight, settings: TrainingSettings,
                  checkpoint) -> tuple[EpochSteps, TrainingData | None]:
    """The epoch's steps over the checked training rows, and the checked validation rows; each with its weights.

    The row weights are a column of the data (:class:`~._state.TrainingData`), carried by every batch.
    """
    loader = is_loader(X, y)
    if sample_weight is not None and loader:
        raise ValueError(LOADER_WEIGHT_MESSAGE)
    if loader:
        check_loader_options(settings, groups, checkpoint)
        data = check_loader(X, settings.objective)
    else:
        data = _training_data(X, y, groups, settings.objective)
        if settings.init == "logistic" and not data.tabular:
            what = f"of shape {tuple(data.X.shape)}" if isinstance(data.X, torch.Tensor) else "a dict of tensors"
            raise ValueError(LOGISTIC_ROWS_MESSAGE.format(what=what))
    validation = _validation_data(validation, validation_weight, groups is not None, settings)
    if sample_weight is not None:
        if checkpoint is not None:
            raise ValueError(CHECKPOINT_WEIGHT_MESSAGE)
        data = dataclasses.replace(data, weight=_weight_column(sample_weight, data))
    return (LoaderSteps if loader else EpochSteps)(settings, data), validation


def _weight_column(weight, data: TrainingData) -> torch.Tensor:
    """Checked frequency weights of ``data``'s rows, on its device, floating point (float32 at least)."""
    weight = torch.as_tensor(check_sample_weight(weight, data.n), dtype=torch.float64)
    return weight.to(device=data.X.device, dtype=torch.promote_types(data.X.dtype, torch.float32))


def _training_data(X, y, groups, objective: str, names=("X", "y", "groups"), require_subset=True) -> TrainingData:
    """Checked rows, labels and group codes, with the subset ``A`` computed once (``require_subset``: not empty)."""
    X = as_rows(X)
    labels = check_rows(X, y, names[0], names[1])
    in_subset = subset_mask(labels, objective)
    spec = get_objective(objective)
    if require_subset and not bool(in_subset.any()):
        raise ValueError(NO_SUBSET_MESSAGE.format(subset=spec.subset, objective=objective))
    if groups is not None:
        groups = check_group_codes(groups, in_subset, subset=spec.subset, objective=objective, name=names[2])
    return TrainingData(X, labels, in_subset, groups)


def _validation_data(validation, weight, grouped: bool, settings: TrainingSettings) -> TrainingData | None:
    """The checked validation rows (None without ``validation``), with ``validation_weight`` as their weight column."""
    if validation is None:
        if settings.select == "validation":
            raise ValueError(SELECT_VALIDATION_MESSAGE)
        if weight is not None:
            raise ValueError(VALIDATION_WEIGHT_MESSAGE)
        return None
    objective = settings.objective
    validation = tuple(validation)
    if len(validation) != (3 if grouped else 2):
        raise ValueError(VALIDATION_FORM_MESSAGE.format(fix=VALIDATION_GROUPS_FIX if grouped else VALIDATION_NO_GROUPS_FIX))
    groups = validation[2] if grouped else None
    data = _training_data(validation[0], validation[1], groups, objective,
                          ("validation[0]", "validation[1]", "validation[2]"), require_subset=False)
    if bool(data.labels.all()) or not bool(data.labels.any()):  # the metric would be 0/0 at every epoch
        held = f"one class only ({int(data.labels[0])})" if data.labels.numel() else "no rows"
        raise ValueError(VALIDATION_ONE_CLASS_MESSAGE.format(held=held, objective=objective))
    return data if weight is None else dataclasses.replace(data, weight=_weight_column(weight, data))
