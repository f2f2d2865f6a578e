r"""Minibatches for Algorithm 1: a shuffled pass over the data, and step 2's separate minibatch of ``A``.

.. code-block:: text

    gather a minibatch (X_b, Y_b) from (X, Y)
    gather a minibatch A_b from A                      # step 2, \label{alg:step2}

:func:`epoch_batches` draws one epoch of both as index tensors, from a seeded
``torch.Generator`` and nothing else, so that the same generator state gives the same
batches (the training loop's checkpoints rely on it). The rows of ``A`` come as a stream of
passes over ``A``, each pass reshuffled, so that an epoch visits distinct rows of ``A``
before it repeats any. With groups, every group of ``A`` is drawn on its own, so that each
group's threshold has rows in every step. :func:`~quantile_surrogate.training.subset_size.subset_plan`
decides, once per fit, whether a step draws a separate minibatch of ``A`` and how many rows.
:class:`SubsetBatchSampler` serves
the same batches to a :class:`torch.utils.data.DataLoader`, for data sets read one batch at a time.

**Every step holds rows of A.** A step's threshold is a quantile of its rows of ``A`` (of each
group's ``A``, with groups); without any, the loss has no threshold and no gradient, and SGD
would still move the parameters by its momentum and weight decay. So no step runs without them:

- a separate minibatch of ``A`` (the default wherever a batch holds fewer rows of ``A`` than
  the threshold needs, e.g. ``batch_size=32`` with 10 % positives at recall 0.9; any
  ``subset_batch_size``) has ``m >= 1`` rows of ``A`` in every step, and at least one of every
  group's (:func:`group_shares`, capped at the group's rows);
- where ``A_b`` is the batch's own rows of ``A`` (``subset_from_batch=True``, or batches that
  hold enough of ``A`` in expectation), a batch without a row of ``A`` (of some group's ``A``),
  the last and shorter batch of an epoch say, draws a separate minibatch for its step
  (:func:`batches_without_subset`, of the size of
  :func:`~quantile_surrogate.training.subset_size.separate_plan`);
- full-batch training takes all of ``A``; a loader's batch ``(X_b, y_b)`` without a row of ``A``
  is skipped (:mod:`quantile_surrogate.training._streaming`).

The cost is the rows of the separate minibatch, forwarded and back-propagated with the batch's:
``m`` more rows per step, by default ``m = min(|A|, ceil(50 / min(c, 1 - c)))``
(:func:`~quantile_surrogate.training.subset_size.subset_plan`; with groups, the sum of every
group's). At ``batch_size=32`` and ``target=0.9`` with ``|A| >= 500`` that is 500 rows beside the
batch's 32, 16 times the rows of a step; on the 1797 digits with 180 positives, 180 (all of
``A``). ``subset_batch_size`` lowers it (the threshold is noisier: relative error
``1 / sqrt(m min(c, 1 - c))``), and so does ``subset_from_batch=True``: only the batches without
a row of ``A`` draw it, a share ``(1 - |A| / n)^B`` of the steps (``0.9^32`` = 3.4 %, so 17 rows
per step on average at ``m = 500``), plus one pass over the epoch's row indices on the CPU to
find them.
"""

from __future__ import annotations

import math

import torch
from torch.utils.data import Sampler, default_collate

from .._utils.checks import check_group_codes, check_integer, check_labels, check_target
from ..objectives import get_objective, subset_mask
from .subset_size import default_subset_batch_size

__all__ = ["MIN_GROUP_SUBSET_ROWS", "SubsetBatchSampler", "batches_without_subset", "epoch_batches", "group_shares",
           "subset_batches"]

#: With groups, each group's share of the separate minibatch of A is at least this many rows
#: (at most ``subset_batch_size``; all of its rows of A if it has fewer): a rare group's quantile
#: from a handful of rows would be mostly noise (:func:`group_shares`).
MIN_GROUP_SUBSET_ROWS = 64

SAMPLER_NO_SUBSET_MESSAGE = (
    "`labels` has no row of the subset A ({subset}) for {objective!r}; the separate minibatch of A would be empty."
)


def group_shares(group_sizes, subset_size: int) -> list[int]:
    r"""Rows of each group in a minibatch of ``subset_size`` rows of ``A``.

    .. math::
        m_g = \max\big(\lceil m \, |A_g| / |A| \rceil, \min(\mathrm{MIN\_GROUP\_SUBSET\_ROWS}, m)\big),

    capped at ``|A_g|`` when the batch is drawn (a group with fewer rows gives all of them).
    The total can exceed ``m``: the floor gives a rare group's threshold enough rows.

    Parameters
    ----------
    group_sizes : sequence of int
        ``|A_g|``, the rows of ``A`` in each group.
    subset_size : int
        ``m``, the rows of the separate minibatch of ``A`` (``subset_batch_size``).

    Returns
    -------
    list of int
        ``m_g`` for each group, in the order of ``group_sizes``.

    Examples
    --------
    >>> from quantile_surrogate.training.sampling import group_shares
    >>> group_shares([900, 90, 10], 100)
    [90, 64, 64]
    >>> group_shares([50, 50], 30)  # the floor is min(MIN_GROUP_SUBSET_ROWS, 30)
    [30, 30]
    """
    total = sum(group_sizes)
    return [max(math.ceil(subset_size * size / total), min(MIN_GROUP_SUBSET_ROWS, subset_size)) for size in group_sizes]


def _stream(index: torch.Tensor, n_batches: int, size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """``n_batches`` slices of ``size`` rows of ``index`` from passes over it, each pass reshuffled."""
    n = index.numel()
    if size >= n:
        return [index] * n_batches
    repeats = math.ceil(n_batches * size / n)
    stream = torch.cat([torch.randperm(n, generator=generator) for _ in range(repeats)])
    return list(index.index_select(0, stream.to(index.device)).split(size))[:n_batches]


def subset_batches(subset_index: torch.Tensor, n_batches: int, subset_size: int, generator: torch.Generator,
                   subset_groups: torch.Tensor | None = None, per_group: bool = False) -> list[torch.Tensor]:
    """Step 2 of Algorithm 1: ``n_batches`` index tensors of rows of ``A``, ``subset_size`` rows each.

    Parameters
    ----------
    subset_index : int64 Tensor of shape ``(|A|,)``
        The rows of ``A`` (indices into the data).
    n_batches, subset_size : int
        How many minibatches of ``A``, and their size; a size of at least ``|A|`` gives all
        of ``A`` in every batch.
    generator : torch.Generator
        The only source of randomness.
    subset_groups : int64 Tensor of shape ``(|A|,)``, optional
        The group code of each row of ``A``. Each group is then drawn on its own, its
        :func:`group_shares` of ``subset_size`` rows, and the groups are concatenated in
        the order of their codes.
    per_group : bool
        With ``subset_groups``: every group gets ``subset_size`` rows (all of its rows if it
        has fewer) instead of its share.

    Returns
    -------
    list of int64 Tensor
        ``n_batches`` index tensors. The rows of ``A`` come as a stream of passes over ``A``,
        each pass reshuffled, so that distinct rows come before any repeats.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.sampling import subset_batches
    >>> A = torch.tensor([0, 3, 7])  # the rows of A
    >>> batches = subset_batches(A, n_batches=3, subset_size=2, generator=torch.Generator().manual_seed(0))
    >>> [len(rows) for rows in batches], sorted(torch.cat(batches)[:3].tolist())  # a pass first
    ([2, 2, 2], [0, 3, 7])
    """
    if subset_groups is None:
        return _stream(subset_index, n_batches, subset_size, generator)
    codes = torch.unique(subset_groups).tolist()
    indices = [subset_index[subset_groups == g] for g in codes]
    sizes = [index.numel() for index in indices]
    shares = [subset_size] * len(sizes) if per_group else group_shares(sizes, subset_size)
    parts = [_stream(index, n_batches, share, generator) for index, share in zip(indices, shares)]
    return [torch.cat(rows) for rows in zip(*parts)]


def epoch_batches(n: int, batch_size: int, generator: torch.Generator, *, subset_index: torch.Tensor | None = None,
                  subset_size: int | None = None, subset_groups: torch.Tensor | None = None, per_group: bool = False,
                  subset_codes: torch.Tensor | None = None):
    """One epoch of Algorithm 1's minibatches as ``[(rows, subset_rows), ...]`` index tensors.

    ``rows`` is a shuffled pass over ``range(n)`` in slices of ``batch_size`` (the last one
    shorter); ``subset_rows`` is the separate minibatch of ``A``
    (:func:`subset_batches` with ``subset_size`` rows, ``per_group`` as there), or None when ``subset_index`` is None
    (``A_b`` is then taken from the batch itself). With ``subset_codes``, ``A_b`` is taken from
    the batch, except in the batches that :func:`batches_without_subset` finds: only they get a
    separate minibatch, so that every step has rows of ``A`` (of every group's ``A``). The batch
    permutation is drawn first, then the subset stream, both from ``generator``, so the same
    generator state gives the same epoch (what :func:`~quantile_surrogate.training.train`'s
    checkpoints rely on); an epoch whose every batch holds ``A`` draws no subset stream.

    Parameters
    ----------
    n : int
        Rows of the data.
    batch_size : int
        Rows per minibatch.
    generator : torch.Generator
        The only source of randomness.
    subset_index : int64 Tensor of shape ``(|A|,)``, optional
        The rows of ``A``; None takes ``A_b`` from the batch (no separate minibatch).
    subset_size, subset_groups, per_group
        As in :func:`subset_batches`.
    subset_codes : int64 Tensor of shape (n,), optional
        As in :func:`batches_without_subset`: ``A_b`` from the batch where it has rows of ``A``.

    Returns
    -------
    list of (Tensor, Tensor or None)
        One ``(rows, subset_rows)`` pair per step.

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate.training.sampling import epoch_batches
    >>> epoch = epoch_batches(10, 4, torch.Generator().manual_seed(0), subset_index=torch.tensor([0, 3, 7]),
    ...                       subset_size=2)
    >>> [(len(rows), len(subset_rows)) for rows, subset_rows in epoch]
    [(4, 2), (4, 2), (2, 2)]
    >>> sorted(torch.cat([rows for rows, _ in epoch]).tolist()) == list(range(10))  # every row once
    True
    """
    batches = torch.randperm(n, generator=generator).split(batch_size)
    if subset_index is None:
        return [(rows, None) for rows in batches]
    if subset_codes is not None:
        lacking = batches_without_subset(batches, subset_codes)
        drawn = subset_batches(subset_index, len(lacking), subset_size, generator, subset_groups, per_group) \
            if lacking else []
        separate = dict(zip(lacking, drawn))
        return [(rows, separate.get(b)) for b, rows in enumerate(batches)]
    subsets = subset_batches(subset_index, len(batches), subset_size, generator, subset_groups, per_group)
    return list(zip(batches, subsets))


def batches_without_subset(batches, subset_codes: torch.Tensor) -> list[int]:
    """The indices of the batches without a row of ``A``, or without one of some group's ``A``.

    Parameters
    ----------
    batches : sequence of int64 Tensor
        Row indices of each batch (on the CPU).
    subset_codes : int64 Tensor of shape (n,)
        Per row: its group code (0 without groups) if it is in ``A``, else -1.

    Returns
    -------
    list of int
        In increasing order; empty when every batch holds a row of every group of ``A``.

    Examples
    --------
    >>> import torch
    >>> codes = torch.tensor([-1, 0, -1, 1, -1, 0])  # rows 1 and 5 in A of group 0, row 3 in A of group 1
    >>> batches_without_subset([torch.tensor([0, 1, 3]), torch.tensor([2, 5]), torch.tensor([4])], codes)
    [1, 2]
    """
    groups = torch.unique(subset_codes[subset_codes >= 0])
    width = int(groups.max()) + 1
    sizes = torch.tensor([rows.numel() for rows in batches])
    batch_of = torch.repeat_interleave(torch.arange(len(batches)), sizes)
    codes = subset_codes[torch.cat(list(batches))]
    inside = codes >= 0
    seen = torch.zeros(len(batches) * width, dtype=torch.bool)
    seen[batch_of[inside] * width + codes[inside]] = True
    missing = ~seen.view(len(batches), width)[:, groups]
    return torch.nonzero(missing.any(1)).reshape(-1).tolist()


class SubsetBatchSampler(Sampler):
    r"""Algorithm 1's minibatches for a :class:`torch.utils.data.DataLoader`: each step, a batch and a batch of ``A``.

    Each item it yields is one step's indices: a shuffled minibatch of ``batch_size`` rows of
    the data set, followed by a separate minibatch of ``subset_batch_size`` rows of ``A``
    (step 2 of Algorithm 1, :func:`subset_batches`; with ``groups``, every group's share).
    Pass it as ``batch_sampler`` and :meth:`collate` as ``collate_fn``; every batch of the
    loader is then ``(batch, subset_batch)``, each collated by PyTorch's ``default_collate``::

        sampler = SubsetBatchSampler(labels, batch_size=1024, objective="precision_at_recall")
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=sampler.collate)
        for (X_b, y_b), (X_a, y_a) in loader:
            scores = model(torch.cat([X_b, X_a])).squeeze(-1)      # one forward pass
            loss = precision_at_recall_loss(scores[:len(y_b)], y_b, recall=0.95,
                                            threshold_scores=scores[len(y_b):])

    ``train(model, loader)`` accepts such a loader too. Only the labels are needed up front
    (to know the rows of ``A``); the rows themselves are read by the data set, one batch at
    a time. The separate minibatch has the same number of rows in every step, which is how
    :meth:`collate` finds where it starts, in worker processes too.

    Parameters
    ----------
    labels : Tensor or array of shape (n,)
        Binary labels of the data set's rows, in its order (True or 1 for a positive).
    batch_size : int
        Rows of the data set per step; the last batch of an epoch is shorter unless ``drop_last``.
    objective : str
        Its subset ``A`` (:data:`~quantile_surrogate.objectives.OBJECTIVES`): the positives, the
        negatives or every row.
    subset_batch_size : int, optional
        Rows of ``A`` per step, all of ``A`` if it is at least ``|A|``. If None:
        :func:`default_subset_batch_size` at ``target`` when ``target`` is given (every group
        its own, with ``groups``), else ``batch_size``.
    target : float in (0, 1), optional
        The objective's target (the recall, rate or false positive rate), for the default
        size above; as :func:`~quantile_surrogate.training.train` sizes its separate minibatch
        (a sampler always yields one, even where ``train`` would reuse the batch's rows of ``A``).
    groups : integer Tensor or array of shape (n,), optional
        Group codes; each group of ``A`` then gets its :func:`group_shares` in every step.
    generator : torch.Generator, optional
        The source of randomness. If None, each epoch draws a seed from PyTorch's global
        generator, as :class:`~torch.utils.data.RandomSampler` does (so ``torch.manual_seed``
        makes the epochs reproducible).
    drop_last : bool
        Skip the last, shorter batch of each epoch.

    Attributes
    ----------
    subset_rows : int
        Rows of ``A`` in every step's separate minibatch (each group's share capped at its size).

    Raises
    ------
    ValueError
        If ``labels`` has no row of ``A`` for ``objective``, or a group has none.

    See Also
    --------
    quantile_surrogate.training.train : Accepts a loader built with this sampler.

    Examples
    --------
    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from quantile_surrogate import SubsetBatchSampler
    >>> X = torch.randn(100, 3, generator=torch.Generator().manual_seed(0))
    >>> y = (torch.arange(100) % 10 == 0).long()  # 10 positives: A for precision at recall
    >>> sampler = SubsetBatchSampler(y, batch_size=32, subset_batch_size=8,
    ...                              generator=torch.Generator().manual_seed(0))
    >>> loader = DataLoader(TensorDataset(X, y), batch_sampler=sampler, collate_fn=sampler.collate)
    >>> [(len(y_b), len(y_a), int(y_a.sum())) for (X_b, y_b), (X_a, y_a) in loader]
    [(32, 8, 8), (32, 8, 8), (32, 8, 8), (4, 8, 8)]
    """

    def __init__(self, labels, batch_size: int, *, objective: str = "precision_at_recall",
                 subset_batch_size: int | None = None, target: float | None = None, groups=None,
                 generator: torch.Generator | None = None, drop_last: bool = False):
        labels = check_labels(torch.as_tensor(labels), len(labels))
        self.batch_size = check_integer(batch_size, "batch_size", 1)
        self.subset_batch_size = check_integer(subset_batch_size, "subset_batch_size", 1, allow_none=True)
        self.target = None if target is None else check_target(target, "target")
        in_subset = subset_mask(labels, objective)
        if not bool(in_subset.any()):
            raise ValueError(SAMPLER_NO_SUBSET_MESSAGE.format(subset=get_objective(objective).subset, objective=objective))
        self.n = labels.numel()
        self.subset_index = torch.nonzero(in_subset).reshape(-1)
        self.subset_groups = None
        if groups is not None:
            codes = check_group_codes(torch.as_tensor(groups), in_subset, subset=get_objective(objective).subset,
                                      objective=objective)
            self.subset_groups = codes[self.subset_index]
        self.generator, self.drop_last = generator, bool(drop_last)
        self.subset_size, self.per_group = self._subset_size()
        self.subset_rows = self._subset_rows()

    def _subset_size(self) -> tuple[int, bool]:
        """(size, per_group) of the separate minibatch, as :func:`subset_batches` takes them."""
        if self.subset_batch_size is not None or self.target is None:
            return self.subset_batch_size or self.batch_size, False
        grouped = self.subset_groups is not None
        return default_subset_batch_size(self.subset_index.numel(), self.target, batch_size=self.batch_size), grouped

    def _subset_rows(self) -> int:
        """Rows of ``A`` in every step (each group's share, capped at its size)."""
        size = self.subset_size
        if self.subset_groups is None:
            return min(size, self.subset_index.numel())
        counts = torch.bincount(self.subset_groups)
        counts = counts[counts > 0].tolist()
        shares = [size] * len(counts) if self.per_group else group_shares(counts, size)
        return sum(min(share, count) for share, count in zip(shares, counts))

    def __len__(self) -> int:
        return self.n // self.batch_size if self.drop_last else math.ceil(self.n / self.batch_size)

    def __iter__(self):
        generator = self.generator
        if generator is None:
            generator = torch.Generator().manual_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
        batches = epoch_batches(self.n, self.batch_size, generator, subset_index=self.subset_index,
                                subset_size=self.subset_size, subset_groups=self.subset_groups,
                                per_group=self.per_group)
        for rows, subset_rows in batches:
            if self.drop_last and rows.numel() < self.batch_size:
                continue
            yield rows.tolist() + subset_rows.tolist()

    def collate(self, items: list):
        """``(default_collate(batch rows), default_collate(rows of A))`` from one step's samples."""
        split = len(items) - self.subset_rows
        return default_collate(items[:split]), default_collate(items[split:])
