"""Argument checks shared by the public functions, and their messages.

The public functions validate once; internal hot paths (the training loop) call the
unchecked ``_`` versions afterwards, as scikit-learn does with ``check_input=False``.
Messages are module constants so that tests can ``match=`` them (the fairlearn habit).
"""

from __future__ import annotations

import math
from numbers import Real

import torch

LEVEL_RANGE_MESSAGE = (
    "`{name}` must be in [0, 1]; got {value!r}. A quantile level is a fraction of the "
    "sorted scores, e.g. recall=0.95 gives level 0.05."
)
TARGET_RANGE_MESSAGE = (
    "`{name}` must be strictly between 0 and 1; got {value!r}. Pass a rate such as "
    "recall=0.95 or rate=0.05 (precision@K on N rows is rate=K/N)."
)
BANDWIDTH_MESSAGE = "`bandwidth` must be a finite number > 0; got {value!r}. The paper uses 0.05 to 0.08."
EMPTY_MESSAGE = "`{name}` is empty; pass at least one score."
NONFINITE_MESSAGE = (
    "`{name}` contains NaN or inf ({count} of {total} values). Check the model's output "
    "or lower the learning rate if training diverged."
)
NOT_TENSOR_MESSAGE = "`{name}` must be a torch.Tensor; got {type_name}. Wrap it with torch.as_tensor."
NOT_FLOAT_MESSAGE = "`{name}` must be a floating point tensor; got dtype {dtype}. Call .float() on it."
NOT_1D_MESSAGE = "`{name}` must be 1-D of shape (n,); got shape {shape}. Flatten it with .reshape(-1)."
LABELS_NOT_BINARY_MESSAGE = (
    "`labels` must be binary with values in {{0, 1}} (or bool); got values {values}. "
    "Map the positive class to 1 and every other class to 0."
)
LENGTH_MISMATCH_MESSAGE = (
    "`{name}` has {got} entries but `scores` has {expected}; they must have one entry per row."
)
REDUCTION_MESSAGE = "`reduction` must be one of 'mean', 'sum', 'none'; got {value!r}."
OPTION_MESSAGE = "`{name}` must be one of {options}; got {value!r}."

REDUCTIONS = ("mean", "sum", "none")


def check_number(value, name: str) -> float:
    """Return ``value`` as a float, raising ``TypeError`` for non-numbers (bool included)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` must be a real number; got {type(value).__name__}.")
    return float(value)


def check_level(value, name: str = "level") -> float:
    """A quantile level in the closed interval [0, 1]."""
    value = check_number(value, name)
    if not 0.0 <= value <= 1.0:
        raise ValueError(LEVEL_RANGE_MESSAGE.format(name=name, value=value))
    return value


def check_target(value, name: str) -> float:
    """A target rate (recall, predicted positive rate, FPR) in the open interval (0, 1)."""
    value = check_number(value, name)
    if not 0.0 < value < 1.0:
        raise ValueError(TARGET_RANGE_MESSAGE.format(name=name, value=value))
    return value


def check_bandwidth(value) -> float:
    value = check_number(value, "bandwidth")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(BANDWIDTH_MESSAGE.format(value=value))
    return value


def check_option(value, options, name: str):
    if value not in options:
        raise ValueError(OPTION_MESSAGE.format(name=name, options=sorted(options), value=value))
    return value


def check_reduction(value: str) -> str:
    if value not in REDUCTIONS:
        raise ValueError(REDUCTION_MESSAGE.format(value=value))
    return value


def check_scores(scores, name: str = "scores") -> torch.Tensor:
    """A non-empty, finite, floating point 1-D tensor."""
    if not isinstance(scores, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name, type_name=type(scores).__name__))
    if not scores.is_floating_point():
        raise TypeError(NOT_FLOAT_MESSAGE.format(name=name, dtype=scores.dtype))
    if scores.ndim != 1:
        raise ValueError(NOT_1D_MESSAGE.format(name=name, shape=tuple(scores.shape)))
    if scores.numel() == 0:
        raise ValueError(EMPTY_MESSAGE.format(name=name))
    finite = torch.isfinite(scores.detach())
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise ValueError(NONFINITE_MESSAGE.format(name=name, count=bad, total=scores.numel()))
    return scores


def check_labels(labels, n: int) -> torch.Tensor:
    """Binary labels of length ``n``, returned as a bool tensor (True = positive)."""
    if not isinstance(labels, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name="labels", type_name=type(labels).__name__))
    if labels.ndim != 1:
        raise ValueError(NOT_1D_MESSAGE.format(name="labels", shape=tuple(labels.shape)))
    if labels.numel() != n:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name="labels", got=labels.numel(), expected=n))
    if labels.dtype == torch.bool:
        return labels
    values = torch.unique(labels.detach())
    if not bool(((values == 0) | (values == 1)).all()):
        shown = values[:6].tolist()
        raise ValueError(LABELS_NOT_BINARY_MESSAGE.format(values=shown))
    return labels == 1


def check_mask(mask, n: int, name: str) -> torch.Tensor:
    """A boolean row mask of length ``n``."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name, type_name=type(mask).__name__))
    if mask.dtype != torch.bool:
        raise TypeError(f"`{name}` must be a bool tensor (a row mask); got dtype {mask.dtype}. Use `mask == 1`.")
    if mask.ndim != 1 or mask.numel() != n:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name=name, got=mask.numel(), expected=n))
    return mask
