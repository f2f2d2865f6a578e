r"""Differentiable quantile estimators (Mackey, Luo & Eban 2018, section 4).

Every estimator takes a 1-D floating point tensor of scores ``s_1..s_N`` and a level
``c`` and returns a 0-d tensor of the same dtype that autograd differentiates with
respect to the scores. All of them are L-estimators: a weighted mean of the order
statistics ``s_(1) <= ... <= s_(N)`` whose weights depend on ranks only, so the
gradient with respect to ``s_(i)`` is its weight.

==========================  ===============================================  ====================
name                        estimate                                         paper
==========================  ===============================================  ====================
``point``                   ``s_(k)``, ``k = max(1, floor(c N))``            q1, section 4
``kernel`` / ``gaussian``   ``sum_i w_i s_(i)``, ``w_i ~ phi_h(i*/N - c)``   eq. (13)
``epanechnikov``            same, compact kernel ``3/4 (1 - u^2)_+``         eq. (13)
``lower_mean``              ``mean(s_(1..k))``                               qm, eq. (14)
``interval``                ``mean(s_(i))`` for ``i/N`` in ``(lo, hi]``      qI, eq. (16)
``harrell_davis``           Beta-weighted order statistics                   Harrell & Davis 1982
==========================  ===============================================  ====================

:func:`segment_quantile` gives the point or kernel estimate of many segments (the queries of a
ranking data set) at once, each at its own level, batched with segment operations.

The names are the keys of :data:`QUANTILE_ESTIMATORS`, which ``quantile=`` of the losses and
estimators accepts; :func:`kernel_weights` shows the kernel estimator's weights.

Precision: every estimator computes its ranks, counts and weights in at least float32 and
returns the scores' dtype, so float16 and bfloat16 scores (autocast) give the float32
estimate rounded once. On the CPU the selection runs in NumPy; under ``torch.compile`` (and
on other devices) the point and kernel estimators take a torch path with no graph break
(:mod:`quantile_surrogate.quantiles._rank_selection`).

Conventions (docs/paper_notes.md): ``q(S, c)`` is the quantile from below, so a
constraint "rate on A >= c" uses the threshold ``q(f(A), 1 - c)``; the losses in
:mod:`quantile_surrogate.losses` do that conversion, callers of this module pass levels.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from .._utils.checks import check_option
from ._rank_selection import SELECTION_ESTIMATORS, selection_estimates
from ._weighted import weighted_estimates
from .kernels import KERNELS
from .order_statistics import interval_quantile, lower_mean_quantile, point_quantile
from .segments import segment_quantile
from .smooth import harrell_davis_quantile, kernel_quantile, kernel_weights

# resolve_quantile and quantile_estimates are the losses' and the boosting objective's entry point
# to the estimators, not in the public surface.
__all__ = [
    "point_quantile",
    "kernel_quantile",
    "lower_mean_quantile",
    "interval_quantile",
    "harrell_davis_quantile",
    "kernel_weights",
    "segment_quantile",
    "KERNELS",
    "QUANTILE_ESTIMATORS",
]

#: ``TypeError`` of :func:`resolve_quantile` for a ``quantile=`` that is neither a name nor callable.
ESTIMATOR_TYPE_MESSAGE = (
    "`quantile` must be an estimator name such as 'kernel' or a callable f(scores, level); got {type_name}."
)
#: ``ValueError`` of :func:`quantile_estimates` (and the losses) for row weights with a callable ``quantile=``.
WEIGHTED_CALLABLE_MESSAGE = (
    "Row weights need a named quantile estimator; a callable `quantile` cannot take "
    "`weight=`. Pass quantile='kernel' (or another name) or drop the weights."
)

#: ``TypeError`` of :func:`quantile_estimates` (and the losses) when a callable ``quantile=`` returns no tensor.
CALLABLE_RESULT_TYPE_MESSAGE = (
    "The callable `quantile` returned {type_name} for level {level:g}; it must return one estimate as a 0-d "
    "tensor on the scores' graph, e.g. lambda scores, level: torch.quantile(scores, level)."
)
#: ``ValueError`` of :func:`quantile_estimates` (and the losses) when a callable ``quantile=`` returns several values.
CALLABLE_RESULT_SHAPE_MESSAGE = (
    "The callable `quantile` returned a tensor of shape {shape} for level {level:g}; it must return one estimate "
    "(shape () or (1,)), e.g. lambda scores, level: torch.quantile(scores, level)."
)


def _interval_around(scores, level, bandwidth, *, weight=None, validate_args=True):
    # As a loss's estimator the interval is centred on the level, with half-width h.
    return interval_quantile(
        scores, max(level - bandwidth, 0.0), min(level + bandwidth, 1.0), weight=weight, validate_args=validate_args
    )


#: Quantile estimators accepted by ``quantile=`` (the losses, the estimators and
#: :func:`~quantile_surrogate.training.train`), name -> ``f(scores, level, bandwidth, *, weight=None,
#: validate_args=True)``: ``"point"``
#: (:func:`point_quantile`), ``"kernel"`` and ``"gaussian"`` (:func:`kernel_quantile`, Gaussian),
#: ``"epanechnikov"``, ``"lower_mean"`` (:func:`lower_mean_quantile`), ``"interval"``
#: (:func:`interval_quantile` on ``[level - bandwidth, level + bandwidth]``, clipped to [0, 1]) and
#: ``"harrell_davis"``. ``point``, ``lower_mean`` and ``harrell_davis`` ignore the bandwidth.
QUANTILE_ESTIMATORS: dict[str, Callable] = {
    "point": lambda s, c, h, **kw: point_quantile(s, c, **kw),
    "kernel": lambda s, c, h, **kw: kernel_quantile(s, c, h, "gaussian", **kw),
    "gaussian": lambda s, c, h, **kw: kernel_quantile(s, c, h, "gaussian", **kw),
    "epanechnikov": lambda s, c, h, **kw: kernel_quantile(s, c, h, "epanechnikov", **kw),
    "lower_mean": lambda s, c, h, **kw: lower_mean_quantile(s, c, **kw),
    "interval": _interval_around,
    "harrell_davis": lambda s, c, h, **kw: harrell_davis_quantile(s, c, **kw),
}


def resolve_quantile(quantile, bandwidth: float = 0.05) -> Callable[[torch.Tensor, float], torch.Tensor]:
    """Turn ``quantile=`` (a name in :data:`QUANTILE_ESTIMATORS` or a callable) into ``f(scores, level)``.

    Internal (not in ``__all__``): the training loop and the boosting objective resolve
    ``quantile=`` once with it, so that a bad name fails before training starts.

    Parameters
    ----------
    quantile : str or callable
        A name in :data:`QUANTILE_ESTIMATORS`, or ``quantile(scores, level) -> 0-d tensor``
        (returned unchanged).
    bandwidth : float, default=0.05
        Passed to the named estimator (not checked here).

    Returns
    -------
    callable
        ``f(scores, level)`` that calls the estimator without argument checks.

    Raises
    ------
    TypeError
        If ``quantile`` is neither a string nor callable.
    ValueError
        If ``quantile`` is not a name in :data:`QUANTILE_ESTIMATORS`.
    """
    if callable(quantile):
        return quantile
    if not isinstance(quantile, str):
        raise TypeError(ESTIMATOR_TYPE_MESSAGE.format(type_name=type(quantile).__name__))
    check_option(quantile, QUANTILE_ESTIMATORS, "quantile")
    estimator = QUANTILE_ESTIMATORS[quantile]

    def estimate(scores: torch.Tensor, level: float) -> torch.Tensor:
        return estimator(scores, level, bandwidth, validate_args=False)

    estimate.__name__ = f"{quantile}_quantile"
    return estimate


def quantile_estimates(quantile, scores: torch.Tensor, levels: Sequence[float], *, bandwidth: float = 0.05,
                       subset: torch.Tensor | None = None, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``q(scores[subset], c)`` for each ``c`` in ``levels``: the losses' thresholds (internal, nothing validated).

    ``quantile`` is a name in :data:`QUANTILE_ESTIMATORS` or a callable (see
    :func:`resolve_quantile`). The point and kernel estimators share one selection (one
    partition or one sort) across the levels and, on the CPU, never index the subset in
    torch (:mod:`quantile_surrogate.quantiles._rank_selection`); the others run on ``scores[subset]`` once
    per level. ``weight`` gives the weighted estimates of :mod:`quantile_surrogate.quantiles._weighted`
    (one sort shared by the levels).

    Parameters
    ----------
    quantile : str or callable
    scores : Tensor of shape (N,), floating point
    levels : sequence of float in [0, 1]
    bandwidth : float, default=0.05
    subset : bool Tensor of shape (N,), optional
        The rows of ``A``; None is every row.
    weight : Tensor of shape (N,), optional
        Frequency weights; a callable ``quantile`` cannot take them.

    Returns
    -------
    Tensor of shape (len(levels),)
        NaN where ``A`` is empty (or holds no weight).

    Raises
    ------
    ValueError
        If ``weight`` is given with a callable ``quantile``, or a callable ``quantile`` returns
        more or fewer than one value (:data:`CALLABLE_RESULT_SHAPE_MESSAGE`).
    TypeError
        If a callable ``quantile`` returns something other than a tensor (:data:`CALLABLE_RESULT_TYPE_MESSAGE`).
    """
    if weight is not None:
        if not isinstance(quantile, str):
            raise ValueError(WEIGHTED_CALLABLE_MESSAGE)
        return weighted_estimates(quantile, scores, weight, levels, bandwidth, subset)
    if isinstance(quantile, str) and quantile in SELECTION_ESTIMATORS:
        return selection_estimates(quantile, scores, levels, bandwidth, subset)
    reference = scores if subset is None else scores[subset]
    if reference.numel() == 0:
        return scores.new_full((len(levels),), math.nan)
    estimate = resolve_quantile(quantile, bandwidth)
    if callable(quantile):  # the user's function: one estimate per level, checked
        return torch.stack([_one_estimate(estimate(reference, level), level) for level in levels])
    return torch.stack([estimate(reference, level) for level in levels])


def _one_estimate(value, level: float) -> torch.Tensor:
    """A callable quantile's result as a 0-d tensor; ``TypeError`` or ``ValueError`` for anything else."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(CALLABLE_RESULT_TYPE_MESSAGE.format(type_name=type(value).__name__, level=level))
    if value.numel() != 1:
        raise ValueError(CALLABLE_RESULT_SHAPE_MESSAGE.format(shape=tuple(value.shape), level=level))
    return value if value.dim() == 0 else value.reshape(())
