"""Inputs whose rows are the first dimension of several tensors: a dict of tensors, the input of a model that takes one.

A model may take more than one tensor: an image and a table of features, token ids and their
mask. ``train(model, {"image": images, "table": table}, y)`` holds such an input as a
:class:`RowDict`: a ``dict`` (so the model receives a dict, indexed by its keys as it expects)
whose values share their first dimension ``n``, the rows. It answers what the training code
asks of a tensor of rows (``shape[0]``, ``device``, ``dtype``), and takes rows of every value
at once. :mod:`quantile_surrogate._utils.sparse` dispatches its row functions (``take_rows``,
``slice_rows``, ``cat_rows``) to it, so the callers write one line for a dense tensor of any
shape, a sparse CSR matrix or a dict of tensors.
"""

from __future__ import annotations

import torch

__all__ = ["RowDict", "row_shape"]


class RowDict(dict):
    """A dict of dense tensors with the same first dimension ``n`` (the rows), as one model input.

    ``shape`` is ``(n,)``, so code that counts rows by ``X.shape[0]`` counts them; ``device``
    is that of the first value; ``dtype`` is the floating point dtype the model is cast to: the
    promotion of the floating values' dtypes (the default dtype if there is none, e.g. token
    ids only). The values are checked by :func:`quantile_surrogate._utils.row_checks.check_rows`.

    Examples
    --------
    >>> import torch
    >>> X = RowDict(image=torch.zeros(5, 1, 8, 8), ids=torch.zeros(5, 3, dtype=torch.int64))
    >>> X.shape[0], X.dtype, X.take(torch.tensor([0, 4]))["image"].shape
    (5, torch.float32, torch.Size([2, 1, 8, 8]))
    """

    @property
    def shape(self) -> torch.Size:
        """``(n,)``: the rows."""
        return torch.Size([next(iter(self.values())).shape[0]])

    @property
    def device(self) -> torch.device:
        return next(iter(self.values())).device

    @property
    def dtype(self) -> torch.dtype:
        dtypes = [value.dtype for value in self.values() if value.is_floating_point()]
        result = dtypes[0] if dtypes else torch.get_default_dtype()
        for dtype in dtypes[1:]:
            result = torch.promote_types(result, dtype)
        return result

    def take(self, rows: torch.Tensor) -> "RowDict":
        """Rows ``rows`` (integer indices, any order, repeats allowed) of every value (``index_select``)."""
        return RowDict({key: value.index_select(0, rows.to(value.device)) for key, value in self.items()})

    def slice(self, start: int, stop: int) -> "RowDict":
        """Rows ``start:stop`` of every value (views)."""
        return RowDict({key: value[start:stop] for key, value in self.items()})

    def cat(self, other) -> "RowDict":
        """The rows of ``self`` followed by those of ``other`` (a dict with the same keys)."""
        return RowDict({key: torch.cat([value, other[key]]) for key, value in self.items()})


def row_shape(X):
    """The shape of one row: ``X.shape[1:]`` of a tensor, and of every value of a dict (a dict of them).

    Examples
    --------
    >>> import torch
    >>> row_shape(torch.zeros(4, 1, 8, 8)), row_shape({"a": torch.zeros(4, 3), "b": torch.zeros(4)})
    ((1, 8, 8), {'a': (3,), 'b': ()})
    """
    if isinstance(X, dict):
        return {key: tuple(value.shape[1:]) for key, value in X.items()}
    return tuple(X.shape[1:])
