"""Checks of group codes given as arrays (the objectives' ``groups=``), and their messages.

The tensor forms (the losses' ``groups``, ``train``'s) are :func:`~quantile_surrogate._utils.checks.check_groups`
and :func:`~quantile_surrogate._utils.checks.check_group_codes`; this is their NumPy twin, with the same
shape and sign messages.
"""

from __future__ import annotations

import numpy as np
import torch

from .checks import GROUPS_NEGATIVE_MESSAGE, GROUPS_SHAPE_MESSAGE

__all__ = ["check_group_array", "GROUP_ARRAY_TYPE_MESSAGE", "GROUP_CODE_RANGE_MESSAGE"]

#: Group codes that are not integers (strings, floats, bools): the codes must be encoded first.
GROUP_ARRAY_TYPE_MESSAGE = (
    "`{name}` must hold integer group codes 0..G-1; got dtype {dtype}. Encode group labels with "
    "numpy.unique(labels, return_inverse=True)[1]."
)
#: A code at or past ``n_groups`` (the number of group names given).
GROUP_CODE_RANGE_MESSAGE = (
    "`{name}` holds code {value}, but there are {n_groups} groups; codes must be in 0..{last}."
)


def check_group_array(groups, n: int, name: str = "groups", n_groups: int | None = None) -> np.ndarray:
    """Integer group codes ``0..G-1``, one per row of ``n``, as a NumPy array (tensors are copied to the CPU).

    Parameters
    ----------
    groups : array-like or Tensor of shape (n,)
        Integer codes (any integer dtype; bools, floats and strings are refused).
    n : int
        The number of rows.
    name : str, default="groups"
        The argument's name, for the message.
    n_groups : int, optional
        ``G``: every code must be below it.

    Returns
    -------
    ndarray of int, shape (n,)

    Raises
    ------
    TypeError
        :data:`GROUP_ARRAY_TYPE_MESSAGE` for codes that are not integers.
    ValueError
        ``GROUPS_SHAPE_MESSAGE`` for a wrong shape, ``GROUPS_NEGATIVE_MESSAGE`` for a negative code,
        :data:`GROUP_CODE_RANGE_MESSAGE` for a code ``>= n_groups``.

    Examples
    --------
    >>> check_group_array([0, 1, 1], 3)
    array([0, 1, 1])
    """
    if isinstance(groups, torch.Tensor):
        groups = groups.detach().cpu().numpy()
    values = np.asarray(groups)
    if values.dtype.kind not in "iu":
        raise TypeError(GROUP_ARRAY_TYPE_MESSAGE.format(name=name, dtype=values.dtype))
    if values.ndim != 1 or values.shape[0] != n:
        raise ValueError(GROUPS_SHAPE_MESSAGE.format(name=name, shape=values.shape, n=n))
    if values.size and values.min() < 0:
        raise ValueError(GROUPS_NEGATIVE_MESSAGE.format(name=name, value=int(values.min())))
    if n_groups is not None and values.size and values.max() >= n_groups:
        raise ValueError(GROUP_CODE_RANGE_MESSAGE.format(name=name, value=int(values.max()), n_groups=n_groups,
                                                         last=n_groups - 1))
    return values
