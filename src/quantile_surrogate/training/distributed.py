r"""Data-parallel training on ``torch.distributed``: the threshold is the quantile of the global batch.

Under ``DistributedDataParallel`` every rank holds a slice of the batch. A quantile of the
local slice is not the quantile of the batch, so :func:`distributed_loss` gathers the
scores that set the threshold from every rank (a differentiable all-gather), estimates the
threshold on the whole batch, and penalises the local rows against it:

.. math::
    \theta = \hat q\big(\mathrm{cat}_r f(A_r), 1 - c\big), \qquad
    L_r = W \cdot \frac{1}{P} \sum_{i \in P_r} l(\pm(f(x_i) - \theta)),

with ``W`` ranks, ``P_r`` the penalised rows of rank ``r`` and ``P = sum_r |P_r|`` (the
"mean" reduction divides by the global count). DDP averages gradients over ranks, so the
update is ``(1/W) sum_r grad L_r = grad (1/P) sum_i l(...)``, the single-process gradient on
the concatenated batch; the factor ``W`` undoes DDP's averaging.

Why the all-gather's backward sums: ``L_r`` depends on the scores of every rank through
``theta``. The gradient that rank ``s`` needs for its own scores is
``sum_r dL_r / d(scores_s)``, and only rank ``r`` can compute its term. The backward of
:func:`all_gather_scores` therefore all-reduces (SUM) the gradient of the gathered tensor
and keeps the local slice, which is a reduce-scatter (gloo has no reduce-scatter; the
scores are one number per row, so the all-reduce costs little). A plain ``dist.all_gather``
into a buffer (no autograd) drops the other ranks' terms, and a backward that keeps only
the local slice of the local gradient does too: both give a wrong gradient through the
threshold, whereas the per-row term is right, so the error is easy to miss.
``torch.distributed.nn.functional.all_gather`` has the right (summing) backward but is
deprecated in torch 2.13 and needs equal sizes on every rank; the local subset size varies
from batch to batch (the positives of a batch), so this module pads to the largest size.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.distributed as dist
from torch import nn

from .. import losses
from .._utils.checks import NOT_1D_MESSAGE, NOT_TENSOR_MESSAGE, check_reduction
from ..losses import QuantileLossOutput
from ..objectives import OBJECTIVES, Objective

__all__ = ["all_gather_scores", "distributed_loss", "DistributedQuantileLoss", "world_size"]


def world_size(group=None) -> int:
    """Ranks in ``group``; 1 when ``torch.distributed`` is not initialised.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group; None for the default (world) group.

    Returns
    -------
    int

    Examples
    --------
    >>> from quantile_surrogate.training.distributed import world_size
    >>> world_size()  # a single process
    1
    """
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(group)
    return 1


class _AllGatherScores(torch.autograd.Function):
    """Concatenate 1-D tensors of (possibly) different lengths from every rank, in rank order."""

    @staticmethod
    def forward(ctx, local: torch.Tensor, sizes: tuple[int, ...], group):
        padded = local.new_zeros(max(sizes))
        padded[: local.numel()] = local
        pieces = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(pieces, padded, group=group)
        ctx.sizes, ctx.group = sizes, group
        ctx.start = sum(sizes[: dist.get_rank(group)])
        return torch.cat([piece[:size] for piece, size in zip(pieces, sizes)])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        # d(sum_r L_r)/d(local) = sum over ranks of each rank's gradient for this slice.
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=ctx.group)
        size = ctx.sizes[dist.get_rank(ctx.group)]
        return grad[ctx.start : ctx.start + size], None, None


def all_gather_scores(local: torch.Tensor, group=None) -> torch.Tensor:
    """Differentiable all-gather of 1-D ``local`` tensors of any lengths, concatenated in rank order.

    The backward sums, over ranks, the gradients with respect to this rank's slice of the
    output (see the module docstring). Without ``torch.distributed`` it returns ``local``.

    Parameters
    ----------
    local : Tensor of shape (n_r,)
        This rank's scores; ``n_r`` may differ between ranks and may be 0.
    group : ProcessGroup, optional

    Returns
    -------
    Tensor of shape (sum_r n_r,)

    Raises
    ------
    ValueError
        If ``local`` is not 1-D.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.distributed import all_gather_scores
    >>> all_gather_scores(torch.tensor([0.5, -1.0]))  # one process: the local scores
    tensor([ 0.5000, -1.0000])
    """
    if local.ndim != 1:
        raise ValueError(NOT_1D_MESSAGE.format(name="local", shape=tuple(local.shape)))
    if world_size(group) == 1:
        return local
    count = torch.tensor([local.numel()], dtype=torch.int64, device=local.device)
    counts = [torch.empty_like(count) for _ in range(dist.get_world_size(group))]
    dist.all_gather(counts, count, group=group)
    sizes = tuple(int(c) for c in counts)
    if max(sizes) == 0:
        return local
    return _AllGatherScores.apply(local, sizes, group)


SUBSET_NEEDED_MESSAGE = "Pass `subset=` (a bool row mask of A on this rank, or a name) or `threshold_scores=`."


class _Rows(NamedTuple):
    subset: Callable  # (positive, kwargs) -> bool mask of A in this batch
    penalized: Callable  # (positive, kwargs) -> bool mask of the penalised rows


def _rate_subset(positive, kwargs):
    subset = kwargs.get("subset")
    if subset is None:
        raise ValueError(SUBSET_NEEDED_MESSAGE)
    if isinstance(subset, str):  # "positives", "negatives" or "all", as rate_constrained_loss takes it
        return {"positives": positive, "negatives": ~positive, "all": positive | ~positive}[subset]
    return subset


def _objective_rows(spec: Objective) -> _Rows:
    """The rows of an objective's loss, read off the registry: its subset ``A`` and, per form, its penalised rows."""
    first_form = next(iter(spec.penalized))

    def penalized(positive, kwargs):
        return positive if spec.penalized.get(kwargs.get("form", first_form)) == "positives" else ~positive

    return _Rows(lambda p, kw: spec.subset_mask(p), penalized)


LOSS_ROWS: dict[Callable, _Rows] = {
    **{spec.loss: _objective_rows(spec) for spec in OBJECTIVES.values()},
    losses.rate_constrained_loss: _Rows(
        _rate_subset, lambda p, kw: ~p if kw.get("penalize", "negatives") == "negatives" else p
    ),
    losses.pr_auc_loss: _Rows(lambda p, kw: p, lambda p, kw: ~p),
}
"""For each loss: which rows set the threshold (subset ``A``) and which rows it penalises."""

UNSUPPORTED_LOSS_MESSAGE = (
    "`loss_fn` must be one of the losses in quantile_surrogate.losses ({names}); got {got!r}. "
    "Wrap a custom loss by gathering its threshold scores with all_gather_scores."
)
GROUPS_UNSUPPORTED_MESSAGE = "`groups=` is not supported by distributed_loss; gather per group instead."
NOT_A_LOSS_MODULE_MESSAGE = "`loss` must be a loss module of quantile_surrogate.losses.modules; got {type_name}."


def distributed_loss(
    loss_fn: Callable,
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    threshold_scores: torch.Tensor | None = None,
    reduction: str = "mean",
    average_gradients: bool = True,
    return_threshold: bool = False,
    group=None,
    **kwargs,
):
    r"""Any loss of :mod:`quantile_surrogate.losses` with its threshold set on the global batch.

    .. math::
        \theta = \hat q(\mathrm{cat}_r f(A_r), 1 - c), \qquad
        L_r = W \cdot \frac{1}{P} \sum_{i \in P_r} \ell_i(\theta) \quad (\text{"mean"}),
        \qquad L_r = W \sum_{i \in P_r} \ell_i(\theta) \quad (\text{"sum"}),

    where ``A_r`` is this rank's rows of the subset (``scores[subset]``, or
    ``threshold_scores`` if given), ``P`` the number of penalised rows on all ranks and
    ``W`` the world size. With ``average_gradients=True`` (DDP's convention) the average of
    ``L_r`` over ranks, and the DDP-averaged gradient, are the single-process loss and
    gradient on the concatenated batch. Without ``torch.distributed`` this is ``loss_fn``.

    Parameters
    ----------
    loss_fn : callable
        One of ``rate_constrained_loss``, ``precision_at_recall_loss``,
        ``precision_at_rate_loss``, ``recall_at_fpr_loss``, ``pr_auc_loss``.
    scores, labels : Tensor of shape (n_r,)
        This rank's rows.
    threshold_scores : Tensor of shape (m_r,), optional
        This rank's separate minibatch of the subset (Algorithm 1, step 2); ``m_r`` may
        differ between ranks. Gathered like ``scores[subset]``.
    reduction : {"mean", "sum", "none"}
        ``"none"`` returns this rank's per-row losses against the global threshold,
        unscaled.
    average_gradients : bool
        Multiply by ``W`` so that averaging gradients over ranks (as DDP does) gives the
        full-batch gradient. Pass ``False`` if you sum gradients across ranks yourself;
        then ``L_r`` sums to the single-process loss.
    return_threshold : bool
        Return ``QuantileLossOutput(loss, threshold)``; the threshold is the same on every rank.
    group : ProcessGroup, optional
    **kwargs
        The loss's own arguments (``recall=``, ``rate=``, ``subset=``, ``quantile=``, ...).

    Returns
    -------
    Tensor of shape () (or (n_r,) for ``"none"``), or :class:`~quantile_surrogate.losses.QuantileLossOutput`.

    Raises
    ------
    TypeError
        If ``loss_fn`` is not one of the losses above, or ``labels`` is not a tensor.
    ValueError
        For ``groups=``, a bad ``reduction``, or ``rate_constrained_loss`` without ``subset=``
        or ``threshold_scores=``.

    See Also
    --------
    DistributedQuantileLoss : The same for a loss module.
    all_gather_scores : The differentiable gather it uses.

    Notes
    -----
    Every rank estimates the same threshold from the same gathered scores (a sort or a
    selection of the global subset, repeated on each rank); the per-row part stays local.
    The backward runs one all-reduce of the gathered scores' gradient, so every rank must
    call ``backward`` (as DDP requires anyway). To log the global loss:
    ``dist.all_reduce(loss.detach()) / W``.

    Examples
    --------
    Launched with ``torchrun --nproc_per_node=2``, each rank passes its own rows::

        loss = distributed_loss(precision_at_recall_loss, ddp_model(x).squeeze(-1), y, recall=0.9)
        loss.backward()  # DDP averages: the gradient of the full-batch loss

    In a single process it is the loss itself:

    >>> import torch
    >>> from quantile_surrogate import precision_at_recall_loss
    >>> from quantile_surrogate.training.distributed import distributed_loss
    >>> scores = torch.linspace(-2, 2, 20, dtype=torch.float64)
    >>> labels = torch.arange(20) % 3 == 0
    >>> loss = distributed_loss(precision_at_recall_loss, scores, labels, recall=0.9)
    >>> round(float(loss), 4), round(float(precision_at_recall_loss(scores, labels, recall=0.9)), 4)
    (2.2509, 2.2509)
    """
    rows = LOSS_ROWS.get(loss_fn)
    if rows is None:
        names = ", ".join(sorted(fn.__name__ for fn in LOSS_ROWS))
        raise TypeError(UNSUPPORTED_LOSS_MESSAGE.format(names=names, got=loss_fn))
    check_reduction(reduction)
    if not isinstance(labels, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name="labels", type_name=type(labels).__name__))
    if kwargs.get("groups") is not None:
        raise ValueError(GROUPS_UNSUPPORTED_MESSAGE)
    positive = labels if labels.dtype == torch.bool else labels == 1
    if threshold_scores is None:
        threshold_scores = scores[rows.subset(positive, kwargs)]
    kwargs.pop("subset", None)  # replaced by the gathered threshold scores
    global_scores = all_gather_scores(threshold_scores, group)
    output = loss_fn(
        scores, labels, threshold_scores=global_scores,
        reduction="none" if reduction == "none" else "sum", return_threshold=True, **kwargs,
    )
    loss = output.loss
    if reduction == "mean":
        count = rows.penalized(positive, kwargs).sum().to(scores.dtype).reshape(1)
        if world_size(group) > 1:
            dist.all_reduce(count, op=dist.ReduceOp.SUM, group=group)
        loss = loss / count.clamp(min=1).squeeze(0)
    if average_gradients and reduction != "none":
        loss = loss * world_size(group)
    return QuantileLossOutput(loss, output.threshold) if return_threshold else loss


class DistributedQuantileLoss(nn.Module):
    """Wrap a loss module of :mod:`quantile_surrogate.losses.modules` so that its threshold is global.

    ``DistributedQuantileLoss(PrecisionAtRecallLoss(0.9))(scores, labels)`` calls
    :func:`distributed_loss` with the wrapped module's settings; ``threshold`` keeps the
    last (global) threshold, as the wrapped module does.

    Parameters
    ----------
    loss : torch.nn.Module
        A loss module of :mod:`quantile_surrogate.losses.modules` (``PrecisionAtRecallLoss``, ...).
    average_gradients : bool, default=True
        As in :func:`distributed_loss`: scale by the world size for DDP's averaging.
    group : ProcessGroup, optional
        The process group; None for the default one.

    Attributes
    ----------
    threshold : Tensor of shape ()
        The last global threshold (NaN before the first call); not saved in ``state_dict``.

    Raises
    ------
    TypeError
        If ``loss`` is not a loss module of :mod:`quantile_surrogate.losses.modules`.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import PrecisionAtRecallLoss
    >>> from quantile_surrogate.training.distributed import DistributedQuantileLoss
    >>> criterion = DistributedQuantileLoss(PrecisionAtRecallLoss(0.9))
    >>> scores = torch.linspace(-2, 2, 20, dtype=torch.float64)
    >>> loss = criterion(scores, torch.arange(20) % 3 == 0)  # one process: the wrapped loss
    >>> round(float(loss), 4), round(float(criterion.threshold), 4)
    (2.2509, -1.9991)
    """

    def __init__(self, loss: nn.Module, *, average_gradients: bool = True, group=None):
        super().__init__()
        if getattr(type(loss), "_function", None) not in LOSS_ROWS:
            raise TypeError(NOT_A_LOSS_MODULE_MESSAGE.format(type_name=type(loss).__name__))
        self.loss = loss
        self.average_gradients = average_gradients
        self.group = group
        self.register_buffer("threshold", torch.tensor(float("nan")), persistent=False)

    def forward(self, scores, labels, threshold_scores=None, **kwargs):
        inner = self.loss
        output = distributed_loss(
            type(inner)._function, scores, labels, threshold_scores=threshold_scores,
            reduction=inner.reduction, average_gradients=self.average_gradients,
            return_threshold=True, group=self.group,
            **{inner._target_name: inner.target}, quantile=inner.quantile, bandwidth=inner.bandwidth,
            surrogate=inner.surrogate, **inner.settings, **kwargs,
        )
        self.threshold = output.threshold.detach()
        return output.loss
