r"""The named losses: :func:`~quantile_surrogate.losses.rate_constrained_loss` with a fixed subset.

==============================  =================  =========  ==================
loss                            subset A           penalised  paper
==============================  =================  =========  ==================
``precision_at_recall_loss``    ``"positives"``    negatives  eq. (7)
``precision_at_rate_loss`` fp   ``"all"``          negatives  eq. (9)
``precision_at_rate_loss`` tp   ``"all"``          positives  eq. (10)
``recall_at_fpr_loss``          ``"negatives"``    positives  Neyman-Pearson
``pr_auc_loss``                 ``"positives"``    negatives  eq. (7), Riemann sum
==============================  =================  =========  ==================

Each checks its target under the name the user typed (``recall``, ``rate``, ``fpr``,
``recalls``) and passes every other keyword argument on, unchanged; each spells out those
keywords, with the defaults of :func:`rate_constrained_loss`. They are importable from
:mod:`quantile_surrogate.losses` (and the package root), their documented entry point.
"""

from __future__ import annotations

from typing import Sequence

from ._rate_loss import _check_named_target
from .._utils.checks import check_option
from .general import rate_constrained_loss

__all__ = ["precision_at_recall_loss", "precision_at_rate_loss", "recall_at_fpr_loss", "pr_auc_loss"]


def precision_at_recall_loss(
        scores, labels, recall: float, *, threshold_scores=None, groups=None, threshold_groups=None,
        weight=None, threshold_weight=None, quantile="kernel", bandwidth=0.05, surrogate="logistic",
        reduction="mean", empty_subset="zero", return_threshold=False, validate_args=True):
    r"""Precision at a fixed recall: the false positives above the positives' quantile (eq. (7)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    recall : float in (0, 1)
        The recall the threshold must keep on the positives.
    threshold_scores : Tensor of shape (M,), optional
        Scores of positives (a separate minibatch of them) to estimate the threshold from;
        by default the positives of this batch.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1: one threshold per group, so that the constraint holds in every
        group (see :func:`rate_constrained_loss`); the threshold gets a trailing axis (G,).
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    weight : floating point Tensor of shape (N,), optional
        Row weights ``w_i >= 0`` (frequency weights) of the penalised sum and of the
        threshold, which becomes the weighted quantile.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores``.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` gives the per-row loss, shape (N,); ``"mean"`` divides the sum by the
        number of penalised rows, ``"sum"`` does not.
    empty_subset : {"zero", "raise"}, default="zero"
        A batch without a row of ``A``: a zero loss and a NaN threshold, or ``ValueError``.
    return_threshold : bool, default=False
        Return :class:`~quantile_surrogate.losses.QuantileLossOutput` ``(loss, threshold)``
        instead of the loss alone.
    validate_args : bool, default=True
        Check the arguments and the inputs (one device sync); a loop that checked its data
        once passes False.

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ``recall`` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.losses.modules.PrecisionAtRecallLoss : The module form.
    quantile_surrogate.metrics.precision_at_recall : The exact metric.
    pr_auc_loss : The mean over a grid of recalls.

    Notes
    -----
    Eq. (7) of the paper (``\label{eq:unconstrained_fp_at_r}``):

    .. math::
        L(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X^+), 1 - \text{recall})\big).

    Recall >= r on the positives fixes ``theta`` at their (1 - r)-quantile (Proposition 1);
    the loss bounds the false positives at that threshold, and fewer false positives at a
    fixed number of true positives is higher precision (eqs. (3) to (6)). It is
    :func:`rate_constrained_loss` with ``subset="positives"`` and ``penalize="negatives"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import precision_at_recall_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 1, 0])
    >>> # recall 2/3: threshold = q1 of {0, 1, 2} at level 1/3 = 0; negative at 0.5 costs softplus(0.5)
    >>> precision_at_recall_loss(scores, labels, recall=2 / 3, quantile="point")
    tensor(0.9741)
    """
    _check_named_target(recall, "recall", validate_args)
    return rate_constrained_loss(
        scores, labels, rate=recall, subset="positives", penalize="negatives",
        threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups, weight=weight,
        threshold_weight=threshold_weight, quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
        reduction=reduction, empty_subset=empty_subset, return_threshold=return_threshold, validate_args=validate_args,
    )


PRECISION_FORMS = {"fp": "negatives", "tp": "positives"}


def precision_at_rate_loss(
        scores, labels, rate: float, *, form: str = "fp", threshold_scores=None, groups=None, threshold_groups=None,
        weight=None, threshold_weight=None, quantile="kernel", bandwidth=0.05, surrogate="logistic",
        reduction="mean", empty_subset="zero", return_threshold=False, validate_args=True):
    r"""Precision at a predicted positive rate, i.e. Precision@K with ``rate = K / N`` (eqs. (9), (10)).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    rate : float in (0, 1)
        The predicted positive rate ``tau``: the fraction of all rows above the threshold.
    form : {"fp", "tp"}, default="fp"
        ``"fp"`` penalises negatives above the threshold (eq. (9)), ``"tp"`` positives
        below it (eq. (10)).
    threshold_scores : Tensor of shape (M,), optional
        Scores of any rows (a separate minibatch) to estimate the threshold from; by
        default every row of this batch.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1: one threshold per group, so that the constraint holds in every
        group (see :func:`rate_constrained_loss`); the threshold gets a trailing axis (G,).
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    weight : floating point Tensor of shape (N,), optional
        Row weights ``w_i >= 0`` (frequency weights) of the penalised sum and of the
        threshold, which becomes the weighted quantile.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores``.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` gives the per-row loss, shape (N,); ``"mean"`` divides the sum by the
        number of penalised rows, ``"sum"`` does not.
    empty_subset : {"zero", "raise"}, default="zero"
        A batch without a row of ``A``: a zero loss and a NaN threshold, or ``ValueError``.
    return_threshold : bool, default=False
        Return :class:`~quantile_surrogate.losses.QuantileLossOutput` ``(loss, threshold)``
        instead of the loss alone.
    validate_args : bool, default=True
        Check the arguments and the inputs (one device sync); a loop that checked its data
        once passes False.

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` for an unknown ``form``, and names ``rate`` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.losses.modules.PrecisionAtRateLoss : The module form.
    quantile_surrogate.metrics.precision_at_rate : The exact metric.

    Notes
    -----
    The FP form (eq. (9), ``\label{eq:unconstrained_fp_at_ppr}``) and the TP form
    (eq. (10), ``\label{eq:unconstrained_tp_at_ppr}``):

    .. math::
        L_{fp}(f) = \sum_{i: y_i = 0} l\big(f(x_i) - \hat q(f(X), 1 - \tau)\big), \qquad
        L_{tp}(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X), 1 - \tau) - f(x_i)\big).

    With ``tau N`` predicted positives ``TP + FP = tau N`` (eq. (8)), so fewer false positives
    and more true positives are the same goal; the two forms bound it from either side. It
    is :func:`rate_constrained_loss` with ``subset="all"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import precision_at_rate_loss
    >>> scores = torch.tensor([3.0, 2.0, 1.0, 0.0]); labels = torch.tensor([1, 0, 1, 0])
    >>> # rate 1/2: level 1/2, k = 2, threshold 1; the negatives at 2 and 0 cost softplus(1) + softplus(-1)
    >>> precision_at_rate_loss(scores, labels, rate=0.5, quantile="point", reduction="sum")
    tensor(1.6265)
    >>> # TP form: the positive at 1 sits on the threshold, softplus(0); the one at 3 softplus(-2)
    >>> precision_at_rate_loss(scores, labels, rate=0.5, form="tp", quantile="point", reduction="sum")
    tensor(0.8201)
    """
    check_option(form, PRECISION_FORMS, "form")
    _check_named_target(rate, "rate", validate_args)
    return rate_constrained_loss(
        scores, labels, rate=rate, subset="all", penalize=PRECISION_FORMS[form],
        threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups, weight=weight,
        threshold_weight=threshold_weight, quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
        reduction=reduction, empty_subset=empty_subset, return_threshold=return_threshold, validate_args=validate_args,
    )


def recall_at_fpr_loss(
        scores, labels, fpr: float, *, threshold_scores=None, groups=None, threshold_groups=None,
        weight=None, threshold_weight=None, quantile="kernel", bandwidth=0.05, surrogate="logistic",
        reduction="mean", empty_subset="zero", return_threshold=False, validate_args=True):
    r"""Recall at a fixed false positive rate (the Neyman-Pearson case).

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    fpr : float in (0, 1)
        The false positive rate not to exceed: the fraction of negatives above the threshold.
    threshold_scores : Tensor of shape (M,), optional
        Scores of negatives (a separate minibatch of them) to estimate the threshold from;
        by default the negatives of this batch.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1: one threshold per group, so that the constraint holds in every
        group (see :func:`rate_constrained_loss`); the threshold gets a trailing axis (G,).
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    weight : floating point Tensor of shape (N,), optional
        Row weights ``w_i >= 0`` (frequency weights) of the penalised sum and of the
        threshold, which becomes the weighted quantile.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores``.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` gives the per-row loss, shape (N,); ``"mean"`` divides the sum by the
        number of penalised rows, ``"sum"`` does not.
    empty_subset : {"zero", "raise"}, default="zero"
        A batch without a row of ``A``: a zero loss and a NaN threshold, or ``ValueError``.
    return_threshold : bool, default=False
        Return :class:`~quantile_surrogate.losses.QuantileLossOutput` ``(loss, threshold)``
        instead of the loss alone.
    validate_args : bool, default=True
        Check the arguments and the inputs (one device sync); a loop that checked its data
        once passes False.

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ``fpr`` when it is not
        strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.losses.modules.RecallAtFPRLoss : The module form.
    quantile_surrogate.metrics.recall_at_fpr : The exact metric.

    Notes
    -----
    Not one of the paper's worked examples, but the same construction (eq. (2) with the
    "<=" form of Proposition 1): FPR <= alpha on the negatives fixes ``theta`` at their
    (1 - alpha)-quantile, and the loss bounds the positives missed below it:

    .. math::
        L(f) = \sum_{i: y_i = 1} l\big(\hat q(f(X^-), 1 - \alpha) - f(x_i)\big).

    It is :func:`rate_constrained_loss` with ``subset="negatives"`` and
    ``penalize="positives"``.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import recall_at_fpr_loss
    >>> scores = torch.tensor([1.0, 0.0, 2.0, -1.0]); labels = torch.tensor([1, 1, 0, 0])
    >>> # fpr 1/2: level 1/2 of the negatives {2, -1}, k = 1, threshold -1; positives pay softplus(-2) + softplus(-1)
    >>> recall_at_fpr_loss(scores, labels, fpr=0.5, quantile="point", reduction="sum")
    tensor(0.4402)
    """
    _check_named_target(fpr, "fpr", validate_args)
    return rate_constrained_loss(
        scores, labels, rate=fpr, subset="negatives", penalize="positives",
        threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups, weight=weight,
        threshold_weight=threshold_weight, quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
        reduction=reduction, empty_subset=empty_subset, return_threshold=return_threshold, validate_args=validate_args,
    )


DEFAULT_PR_AUC_RECALLS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def pr_auc_loss(
        scores, labels, recalls: Sequence[float] = DEFAULT_PR_AUC_RECALLS, *, threshold_scores=None, groups=None, threshold_groups=None,
        weight=None, threshold_weight=None, quantile="kernel", bandwidth=0.05, surrogate="logistic",
        reduction="mean", empty_subset="zero", return_threshold=False, validate_args=True):
    r"""Area under the precision-recall curve as a Riemann sum of precision-at-recall losses.

    Parameters
    ----------
    scores : Tensor of shape (N,), floating point
        Raw scores ``f(x)``.
    labels : Tensor of shape (N,)
        Binary labels, {0, 1} of any numeric dtype, or bool.
    recalls : sequence of float in (0, 1), default=(0.1, 0.2, ..., 0.9)
        The grid ``R`` of recalls (an equal-width Riemann sum by default).
    threshold_scores : Tensor of shape (M,), optional
        Scores of positives to estimate the thresholds from, as in
        :func:`precision_at_recall_loss`.
    groups : integer Tensor of shape (N,), optional
        Group codes 0..G-1: one threshold per group, so that the constraint holds in every
        group (see :func:`rate_constrained_loss`); the threshold gets a trailing axis (G,).
    threshold_groups : integer Tensor of shape (M,), optional
        Group codes of ``threshold_scores``; required with both ``groups`` and ``threshold_scores``.
    weight : floating point Tensor of shape (N,), optional
        Row weights ``w_i >= 0`` (frequency weights) of the penalised sum and of the
        threshold, which becomes the weighted quantile.
    threshold_weight : floating point Tensor of shape (M,), optional
        Weights of ``threshold_scores``.
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or
        ``f(scores, level) -> 0-d tensor``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` (interval half-width for ``"interval"``).
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound ``l`` of the 0-1 step (:data:`~quantile_surrogate.losses.SURROGATES`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` gives the per-row loss, shape (N,); ``"mean"`` divides the sum by the
        number of penalised rows, ``"sum"`` does not.
    empty_subset : {"zero", "raise"}, default="zero"
        A batch without a row of ``A``: a zero loss and a NaN threshold, or ``ValueError``.
    return_threshold : bool, default=False
        Return :class:`~quantile_surrogate.losses.QuantileLossOutput` ``(loss, threshold)``
        instead of the loss alone.
    validate_args : bool, default=True
        Check the arguments and the inputs (one device sync); a loop that checked its data
        once passes False.

    Returns
    -------
    Tensor or QuantileLossOutput
        As :func:`rate_constrained_loss` returns. With ``reduction="none"`` the per-row
        losses are averaged over the grid, shape (N,); with ``return_threshold=True`` the
        threshold has shape (len(recalls),), and (len(recalls), G) with ``groups``.

    Raises
    ------
    TypeError, ValueError
        As :func:`rate_constrained_loss`; ``ValueError`` names ``recalls`` when it is empty or a
        recall is not strictly between 0 and 1.

    See Also
    --------
    precision_at_recall_loss : One term of the sum.
    quantile_surrogate.losses.modules.PRAUCLoss : The module form.

    Notes
    -----
    End of section 3.1 of the paper, after Eban et al. (2017):

    .. math::
        L(f) = \frac{1}{|R|} \sum_{r \in R} L_{P@R}(f; r),

    each term :func:`precision_at_recall_loss` (eq. (7)) at recall ``r`` with the same
    keyword arguments; all of them share one selection or sort of the positives' scores.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import pr_auc_loss
    >>> scores = torch.tensor([2.0, 1.0, 0.0, 0.5]); labels = torch.tensor([1, 1, 1, 0])
    >>> # thresholds 0 (recall 2/3) and 1 (recall 1/3): (softplus(0.5) + softplus(-0.5)) / 2
    >>> pr_auc_loss(scores, labels, recalls=(2 / 3, 1 / 3), quantile="point")
    tensor(0.7241)
    """
    _check_named_target(recalls, "recalls", validate_args)
    return rate_constrained_loss(
        scores, labels, rate=tuple(recalls), subset="positives", penalize="negatives",
        threshold_scores=threshold_scores, groups=groups, threshold_groups=threshold_groups, weight=weight,
        threshold_weight=threshold_weight, quantile=quantile, bandwidth=bandwidth, surrogate=surrogate,
        reduction=reduction, empty_subset=empty_subset, return_threshold=return_threshold, validate_args=validate_args,
    )
