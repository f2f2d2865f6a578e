"""Training from a :class:`~torch.utils.data.DataLoader`, or any iterable of batches: ``train(model, loader)``.

Each pass over the iterable is one epoch. A batch is either

- ``(X_b, y_b)``: the minibatch's rows of ``A`` set the threshold (``A_b = X_b`` and ``A``,
  as ``subset_from_batch=True``), or
- ``((X_b, y_b), (X_a, y_a))``: with a separate minibatch of ``A`` (Algorithm 1, step 2), as a
  loader with :class:`~quantile_surrogate.training.sampling.SubsetBatchSampler` gives.

``X_b`` is whatever the model takes, as in the tensor path: a matrix, images ``(b, C, H, W)``,
sequences, or a dict of tensors (a ``DataLoader`` collates a data set of ``(dict, label)``
pairs into one), every batch with the same row shape. A batch ``(X_b, y_b)`` without a row of
``A`` is skipped: its loss would have no threshold (and no gradient), and SGD would still move
the parameters by its momentum and weight decay (:mod:`.sampling`: every step holds rows of
``A``). A loader whose batches often lack ``A`` (``batch_size=32`` with a few per cent of
positives) should take its separate minibatch from a ``SubsetBatchSampler``.

The rows are never held together: before training, one pass checks every batch (types,
shapes, finite features, binary labels, the separate minibatch in ``A``) and counts the
rows; after each restart, one pass scores every batch for the full training loss that
selects the restart. Both passes and every epoch draw their shuffling from PyTorch's
global generator (unless the loader has its own), which ``train`` seeds per restart from
``random_state``, so a fit is reproducible.

What needs all the rows at once is refused with a ``ValueError``: the logistic start,
groups, checkpoints (a loader's position cannot be saved) and the tensor path's batch
settings (the loader sets the batches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import torch

from ._steps import Batch, EpochSteps
from .._utils.row_checks import check_rows
from .._utils.rows import row_shape
from .._utils.sparse import as_rows, slice_rows
from ..objectives import get_objective, predict_scores, subset_mask

__all__ = ["LoaderData", "LoaderSteps", "check_loader", "is_loader", "split_batch"]

BATCH_MESSAGE = (
    "Each batch of `X` (a DataLoader or iterable of batches) must be (X_b, y_b) or ((X_b, y_b), (X_a, y_a)) "
    "with tensors; got {got}. Build the loader from a Dataset of (x, y) pairs, with "
    "SubsetBatchSampler(...).collate as collate_fn for a separate minibatch of A."
)
UNSUPPORTED_MESSAGE = (
    "`{name}={value!r}` is not supported when `X` is a DataLoader or iterable of batches: {why}."
)
BATCH_MISMATCH_MESSAGE = (
    "Batch {b} of `X` differs from batch 0 in its row shape, device, dtype or form (with or without a separate "
    "minibatch of A); every batch must match."
)
SUBSET_BATCH_MESSAGE = (
    "The separate minibatch of batch {b} must hold rows of A ({subset}) for {objective!r} with X_b's features; "
    "build SubsetBatchSampler with objective={objective!r}."
)
NO_ROWS_MESSAGE = "`X` gave no batch (or only empty ones); it needs at least one row."
LOADER_NO_SUBSET_MESSAGE = "The batches of `X` have no row of the subset A ({subset}) for {objective!r}."


def is_loader(X, y) -> bool:
    """Whether ``train(model, X, y)`` was called with an iterable of batches (``y`` None, ``X`` not an array)."""
    return y is None and not isinstance(X, (torch.Tensor, np.ndarray)) and hasattr(X, "__iter__")


def split_batch(item):
    """``(X_b, y_b, X_a, y_a)`` from one batch (``X_a``, ``y_a`` None without a separate minibatch of A).

    A dict ``X_b`` (``X_a``) comes as a :class:`~quantile_surrogate._utils.rows.RowDict`.
    """
    if isinstance(item, (tuple, list)) and len(item) == 2:
        first, second = item
        if isinstance(first, (torch.Tensor, dict)):
            return as_rows(first) if isinstance(first, dict) else first, second, None, None
        if all(isinstance(part, (tuple, list)) and len(part) == 2 for part in item):
            X_b, X_a = (as_rows(X) if isinstance(X, dict) else X for X in (first[0], second[0]))
            return X_b, first[1], X_a, second[1]
    got = type(item).__name__ + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else "")
    raise TypeError(BATCH_MESSAGE.format(got=got))


@dataclass
class LoaderData:
    """An iterable of batches, checked once: its row count, features, dtype, device and batch form."""

    loader: Iterable
    n: int
    row_shape: tuple | dict
    """The shape of one row (:func:`~quantile_surrogate._utils.rows.row_shape`), the same in every batch."""
    device: torch.device
    dtype: torch.dtype
    sample: torch.Tensor
    """The first rows of the first batch, to check the model's output shape."""
    separate: bool
    """Whether the batches carry a separate minibatch of ``A``."""
    subset_rows: int = 0
    """Rows of ``A`` among the batches' rows (``X_b``)."""
    threshold_rows: float = 0.0
    """Rows of ``A`` that set a step's threshold (the separate minibatch's, or the batch's own), per batch."""
    groups: None = None
    weight: None = None
    """No row weights: ``train`` refuses ``sample_weight`` with a loader."""


def check_loader_options(settings, groups, checkpoint) -> None:
    """``ValueError`` for the settings that need every row at once, or that the loader decides."""
    refused = [
        ("init", settings.init, settings.init in ("logistic", "mixed"),
         "the logistic start fits on all the rows at once; use init='random' or 'model'"),
        ("groups", "...", groups is not None, "pass group-wise thresholds with in-memory tensors"),
        ("checkpoint", checkpoint, checkpoint is not None, "a loader's position cannot be saved and resumed"),
        ("batch_size", settings.batch_size, settings.batch_size is not None, "the loader sets the batches"),
        ("subset_batch_size", settings.subset_batch_size, settings.subset_batch_size is not None,
         "set it on SubsetBatchSampler"),
        ("subset_from_batch", True, settings.subset_from_batch,
         "batches of (X_b, y_b) already take A_b from the batch"),
    ]
    for name, value, wrong, why in refused:
        if wrong:
            raise ValueError(UNSUPPORTED_MESSAGE.format(name=name, value=value, why=why))


def check_loader(loader, objective: str) -> LoaderData:
    """One pass over ``loader`` that checks every batch; returns what the loop needs to know of it.

    The global random state is left as it was (the pass may shuffle).
    """
    spec, first, n = get_objective(objective), None, 0
    has_subset, subset_rows, threshold_rows, batches = False, 0, 0, 0
    with torch.random.fork_rng(devices=[]):
        for b, item in enumerate(loader):
            X_b, y_b, X_a, y_a = split_batch(item)
            labels = check_rows(X_b, y_b, f"batch {b} X", f"batch {b} y")
            if first is None:
                first = (row_shape(X_b), X_b.device, X_b.dtype, X_a is not None, _sample(X_b))
            if (row_shape(X_b), X_b.device, X_b.dtype, X_a is not None) != first[:4]:
                raise ValueError(BATCH_MISMATCH_MESSAGE.format(b=b))
            if X_a is not None:
                subset_labels = check_rows(X_a, y_a, f"batch {b} X_a", f"batch {b} y_a")
                if row_shape(X_a) != row_shape(X_b) or not bool(subset_mask(subset_labels, objective).all()):
                    raise ValueError(SUBSET_BATCH_MESSAGE.format(b=b, subset=spec.subset, objective=objective))
                has_subset = has_subset or X_a.shape[0] > 0
            in_subset = int(subset_mask(labels, objective).sum())
            has_subset = has_subset or in_subset > 0
            subset_rows += in_subset
            threshold_rows += in_subset if X_a is None else X_a.shape[0]
            n, batches = n + X_b.shape[0], batches + 1
    if first is None or n == 0:
        raise ValueError(NO_ROWS_MESSAGE)
    if not has_subset:
        raise ValueError(LOADER_NO_SUBSET_MESSAGE.format(subset=spec.subset, objective=objective))
    return LoaderData(loader, n, first[0], first[1], first[2], first[4], first[3], subset_rows,
                      threshold_rows / batches)


def _sample(X):
    """The first two rows of a batch, copied (a loader may reuse its memory)."""
    if isinstance(X, torch.Tensor):
        return X[:2].clone()
    return type(X)({key: value.clone() for key, value in slice_rows(X, 0, 2).items()})


class LoaderSteps(EpochSteps):
    """:class:`~quantile_surrogate.training._steps.EpochSteps` over an iterable of batches (see the module doc)."""

    minibatches = True
    """A loader's batches are minibatches: ``threshold_memory`` applies to them."""

    def memory_rows(self) -> list[tuple[int, float]]:
        """``[(|A|, rows of A per step)]``, counted by the checking pass (:func:`check_loader`)."""
        return [(self.data.subset_rows, self.data.threshold_rows)]

    def epoch(self, model, optimizer, generator):
        objective = self.settings.objective

        def steps():
            for item in self.data.loader:
                X_b, y_b, X_a, _ = split_batch(item)
                labels = y_b.bool()
                in_subset = subset_mask(labels, objective) if X_a is None else None
                if in_subset is not None and not bool(in_subset.any()):
                    continue  # no row of A: no threshold, and no step (see the module docstring)
                yield Batch(X_b, labels, in_subset, X_a)

        return self.run_steps(model, optimizer, steps())

    def full_loss(self, model) -> float:
        """The loss on every row of one pass, the threshold from all of its rows of ``A`` (scored in chunks)."""
        scores, labels = [], []
        for item in self.data.loader:
            X_b, y_b, _, _ = split_batch(item)
            scores.append(predict_scores(model, X_b))
            labels.append(y_b.bool())
        scores, labels = torch.cat(scores), torch.cat(labels)
        in_subset = subset_mask(labels, self.settings.objective)
        with torch.no_grad():
            return float(self.loss(scores, labels, scores[in_subset]).loss)
