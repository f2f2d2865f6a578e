"""The check of ``train``'s rows in any shape a ``torch.nn.Module`` takes, and its messages.

:func:`~quantile_surrogate._utils.checks.check_training_data` checks a feature matrix (2-D,
dense or sparse), as the estimators take it. :func:`check_rows` is ``train``'s: it passes a
matrix to that check unchanged (same messages, same chunks), and checks the other inputs a
model can take in the same way: a dense tensor of rows with more dimensions (images
``(n, C, H, W)``, sequences ``(n, T, d)``), or a dict of tensors whose values share their
first dimension (:class:`~quantile_surrogate._utils.rows.RowDict`).
"""

from __future__ import annotations

import math

import torch

from .checks import (
    DATA_NONFINITE_MESSAGE,
    FINITE_CHECK_VALUES,
    LABELS_PER_ROW_MESSAGE,
    NOT_FLOAT_MESSAGE,
    NOT_TENSOR_MESSAGE,
    all_finite,
    check_binary,
    check_training_data,
)

__all__ = ["check_rows", "ROWS_NDIM_MESSAGE", "EMPTY_DICT_MESSAGE", "DICT_VALUE_MESSAGE", "DICT_ROWS_MESSAGE",
           "DICT_DEVICE_MESSAGE"]

#: A dense tensor without a dimension besides the rows (a 0-D or 1-D ``X``).
ROWS_NDIM_MESSAGE = (
    "`{name}` must hold one row per label along its first dimension and the features along the others: "
    "(n, d), (n, C, H, W), (n, T, d), ... or a dict of such tensors; got shape {shape}. Reshape a single "
    "feature with .reshape(-1, 1)."
)
#: A dict ``X`` without a value.
EMPTY_DICT_MESSAGE = "`{name}` is an empty dict; pass at least one tensor of rows."
#: A value of a dict ``X`` that is not a dense tensor with a row dimension (a sparse tensor, an array, a 0-D tensor).
DICT_VALUE_MESSAGE = (
    "`{name}[{key!r}]` must be a dense torch.Tensor with the rows along its first dimension; got {got}. "
    "Wrap arrays with torch.as_tensor (sparse values: densify them, or pass the sparse matrix alone as `{name}`)."
)
#: Values of a dict ``X`` with different numbers of rows.
DICT_ROWS_MESSAGE = (
    "`{name}[{key!r}]` has {rows} rows but `{name}[{first!r}]` has {expected}; every value of `{name}` must have "
    "one row per label along its first dimension."
)
#: Values of a dict ``X`` on different devices.
DICT_DEVICE_MESSAGE = (
    "`{name}[{key!r}]` is on {device} but `{name}[{first!r}]` is on {expected}; move them to one device."
)


def check_rows(X, y, name_x: str = "X", name_y: str = "y") -> torch.Tensor:
    """``X`` rows a model takes (finite), ``y`` binary with one label per row; returns ``y`` as bool.

    Parameters
    ----------
    X : Tensor or RowDict
        A 2-D matrix, dense or sparse CSR (:func:`~quantile_surrogate._utils.checks.check_training_data`,
        unchanged); a dense floating point tensor of shape ``(n, ...)`` with two or more dimensions; or a
        :class:`~quantile_surrogate._utils.rows.RowDict` of dense tensors of shape ``(n, ...)`` on one
        device, whose floating point values are checked finite (integer values, such as token ids, and
        bool masks are taken as they are).
    y : Tensor of shape (n,)
        Binary labels.
    name_x, name_y : str
        The arguments' names, for the messages.

    Returns
    -------
    Tensor of shape (n,), bool
        True for a positive.

    Raises
    ------
    TypeError
        ``X`` (a value of it) is not a tensor, or a plain tensor is not floating point.
    ValueError
        A tensor without a feature dimension, values with different rows or devices, NaN or inf, or ``y``
        not one binary label per row.
    """
    if isinstance(X, dict):
        n = _check_dict(X, name_x)
    elif isinstance(X, torch.Tensor) and X.layout == torch.strided and X.ndim != 2:
        if not X.is_floating_point():
            raise TypeError(NOT_FLOAT_MESSAGE.format(name=name_x, dtype=X.dtype))
        if X.ndim < 2:
            raise ValueError(ROWS_NDIM_MESSAGE.format(name=name_x, shape=tuple(X.shape)))
        _check_finite(X, name_x)
        n = X.shape[0]
    else:
        return check_training_data(X, y, name_x, name_y)
    if not isinstance(y, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name_y, type_name=type(y).__name__))
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(LABELS_PER_ROW_MESSAGE.format(name=name_y, name_x=name_x, n=n, shape=tuple(y.shape)))
    return check_binary(y, name_y)


def _check_dict(X: dict, name: str) -> int:
    """The rows of a dict of tensors, every value checked (see :func:`check_rows`)."""
    if not X:
        raise ValueError(EMPTY_DICT_MESSAGE.format(name=name))
    first = next(iter(X))
    for key, value in X.items():
        if not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.is_complex() \
                or value.ndim == 0:
            got = (f"a tensor of shape {tuple(value.shape)}, layout {value.layout}, dtype {value.dtype}"
                   if isinstance(value, torch.Tensor) else type(value).__name__)
            error = ValueError if isinstance(value, torch.Tensor) and value.ndim == 0 else TypeError
            raise error(DICT_VALUE_MESSAGE.format(name=name, key=key, got=got))
        expected = X[first]
        if value.shape[0] != expected.shape[0]:
            raise ValueError(DICT_ROWS_MESSAGE.format(name=name, key=key, rows=value.shape[0], first=first,
                                                      expected=expected.shape[0]))
        if value.device != expected.device:
            raise ValueError(DICT_DEVICE_MESSAGE.format(name=name, key=key, device=value.device, first=first,
                                                        expected=expected.device))
        if value.is_floating_point():
            _check_finite(value, f"{name}[{key!r}]")
    return X[first].shape[0]


def _check_finite(X: torch.Tensor, name: str) -> None:
    """``ValueError`` for NaN or inf, checked in chunks of rows of about
    :data:`~quantile_surrogate._utils.checks.FINITE_CHECK_VALUES` values (never a second copy of ``X``)."""
    rows = max(1, FINITE_CHECK_VALUES // max(1, math.prod(X.shape[1:])))
    for chunk in X.split(rows):
        if not all_finite(chunk):
            raise ValueError(DATA_NONFINITE_MESSAGE.format(name=name))
