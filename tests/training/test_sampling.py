"""Algorithm 1's minibatches (quantile_surrogate.training.sampling): which rows set the threshold. The full-batch
epoch (one forward pass, theta from all of A) is tested in test_steps.py."""

import numpy as np
import pytest
import torch

from quantile_surrogate.objectives import subset_mask
from quantile_surrogate.training import train
from quantile_surrogate._utils.checks import BINARY_01, INTEGER_TYPE_MESSAGE, NOT_BINARY_MESSAGE
from quantile_surrogate.training.sampling import (
    MIN_GROUP_SUBSET_ROWS,
    SAMPLER_NO_SUBSET_MESSAGE,
    SubsetBatchSampler,
    epoch_batches,
    group_shares,
    subset_batches,
)
from tests._messages import exact
from tests.training._helpers import Recorder, blobs, trained

torch.set_num_threads(1)


# -- in the training loop ------------------------------------------------------------------------
@pytest.mark.parametrize("objective,in_subset", [
    ("precision_at_recall", lambda flag: flag == 1),
    ("recall_at_fpr", lambda flag: flag == 0),
    ("precision_at_rate", lambda flag: flag >= 0),
])
def test_the_subset_minibatch_comes_from_A_only(objective, in_subset):
    X, y = blobs(n=200)
    X = torch.cat([X, y[:, None].double()], dim=1)  # last column: the label, to see where rows come from
    built = []  # train deep-copies a module template, so record through a factory

    def factory():
        built.append(Recorder(4))
        return built[-1]

    train(factory, X, y, objective=objective, target=0.5, batch_size=50, subset_batch_size=7, max_epochs=2,
          random_state=0)
    inputs = trained(built)
    assert len(inputs) == 2 * 4  # 2 epochs of 200 / 50 batches, one forward pass each
    for x in inputs:
        assert x.shape[0] == 50 + 7
        assert bool(in_subset(x[50:, -1]).all())
    # Over one epoch the subset stream visits distinct rows of A before repeating any.
    a_rows = torch.cat([x[50:] for x in inputs[:4]])
    n_subset = int(subset_mask(y, objective).sum())
    assert torch.unique(a_rows, dim=0).shape[0] == min(28, n_subset)


def test_subset_from_batch_uses_the_batch_rows_of_A():
    X, y = blobs(n=200)
    seen = []

    def quantile(scores, level):
        seen.append(scores.numel())
        return scores.min()

    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    train(factory, X, y, objective="precision_at_recall", target=0.5, batch_size=50, subset_from_batch=True,
          quantile=quantile, max_epochs=1, random_state=0)
    batches = trained(built)
    positives = [int(y[(X[:, None, :] == b[None]).all(-1).any(-1)].sum()) for b in batches]
    assert [x.shape[0] for x in batches] == [50] * 4
    assert seen[:4] == positives  # then one full-batch call for the final training loss


def test_epoch_batches_are_a_seeded_pass_over_the_rows_and_a_stream_over_A():
    subset_index = torch.tensor([1, 4, 5, 8, 9, 12, 17])
    draw = lambda: epoch_batches(20, 6, torch.Generator().manual_seed(3), subset_index=subset_index, subset_size=3)
    batches = draw()
    assert [(len(rows), len(sub)) for rows, sub in batches] == [(6, 3), (6, 3), (6, 3), (2, 3)]
    assert sorted(torch.cat([rows for rows, _ in batches]).tolist()) == list(range(20))  # a pass over the rows
    stream = torch.cat([sub for _, sub in batches]).tolist()
    assert sorted(stream[:7]) == subset_index.tolist()  # a pass over A before any row of A repeats
    assert set(stream) <= set(subset_index.tolist())
    again = draw()
    assert all(torch.equal(a, b) and torch.equal(c, d) for (a, c), (b, d) in zip(batches, again))
    # A_b taken from the batch: no separate stream, and the same batch permutation.
    from_batch = epoch_batches(20, 6, torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) and sub is None for (a, _), (b, sub) in zip(batches, from_batch))


def test_the_subset_minibatch_carries_every_group():
    rng = np.random.default_rng(0)
    codes = torch.tensor(rng.choice(3, size=600, p=[0.6, 0.3, 0.1]))
    y = torch.tensor(rng.random(600) < 0.3)
    index = torch.nonzero(y).reshape(-1)
    batches = subset_batches(index, 12, 40, torch.Generator().manual_seed(0), codes[index])
    assert len(batches) == 12
    positives_per_group = torch.bincount(codes[y], minlength=3)
    for rows in batches:
        assert bool(y[rows].all())  # rows of A only
        per_group = torch.bincount(codes[rows], minlength=3)
        # Each group: its share of 40, at least min(MIN_GROUP_SUBSET_ROWS, 40) (or all of its positives).
        assert bool((per_group >= torch.clamp(positives_per_group, max=min(MIN_GROUP_SUBSET_ROWS, 40))).all())
        assert bool((per_group <= torch.clamp(positives_per_group, max=40)).all())


def test_group_shares_are_proportional_with_a_floor():
    assert group_shares([900, 90, 10], 100) == [90, 64, 64]
    assert group_shares([50, 50], 30) == [30, 30]  # the floor is min(MIN_GROUP_SUBSET_ROWS, 30)
    assert group_shares([1000, 1000, 1], 200) == [100, 100, MIN_GROUP_SUBSET_ROWS]


def test_per_group_draws_give_every_group_the_size_or_all_of_its_rows():
    codes = torch.tensor([0] * 50 + [1] * 8 + [2] * 30)
    index = torch.arange(88) + 100
    for rows in subset_batches(index, 5, 20, torch.Generator().manual_seed(0), codes, per_group=True):
        assert torch.bincount(codes[rows - 100], minlength=3).tolist() == [20, 8, 20]


# -- SubsetBatchSampler ---------------------------------------------------------------------------
def test_subset_batch_sampler_yields_a_pass_over_the_rows_then_a_minibatch_of_A():
    y = torch.tensor(np.random.default_rng(0).random(103) < 0.3)
    sampler = SubsetBatchSampler(y, 20, subset_batch_size=9, objective="recall_at_fpr",
                                 generator=torch.Generator().manual_seed(0))
    steps = list(sampler)
    assert len(steps) == len(sampler) == 6 and sampler.subset_rows == 9
    batches, subsets = [s[:-9] for s in steps], [s[-9:] for s in steps]
    assert [len(b) for b in batches] == [20] * 5 + [3]
    assert sorted(i for b in batches for i in b) == list(range(103))
    assert all(not bool(y[s].any()) for s in subsets)  # recall at FPR: A is the negatives
    # The indices are those of epoch_batches with the same generator (train's tensor path).
    expected = epoch_batches(103, 20, torch.Generator().manual_seed(0), subset_index=torch.nonzero(~y).reshape(-1),
                             subset_size=9)
    assert steps == [rows.tolist() + sub.tolist() for rows, sub in expected]
    assert len(list(SubsetBatchSampler(y, 20, drop_last=True))) == 5


def test_subset_batch_sampler_draws_from_the_global_rng_without_a_generator():
    y = torch.arange(50) % 3 == 0
    torch.manual_seed(1)
    first = list(SubsetBatchSampler(y, 16, subset_batch_size=4))
    torch.manual_seed(1)
    assert list(SubsetBatchSampler(y, 16, subset_batch_size=4)) == first
    assert list(SubsetBatchSampler(y, 16, subset_batch_size=4)) != first  # the next epoch is reshuffled


def test_subset_batch_sampler_gives_every_group_its_share():
    rng = np.random.default_rng(0)
    codes = rng.choice(3, size=600, p=[0.6, 0.3, 0.1])
    y = rng.random(600) < 0.3
    sampler = SubsetBatchSampler(y, 100, subset_batch_size=40, groups=codes, generator=torch.Generator().manual_seed(0))
    positives = np.bincount(codes[y], minlength=3)
    assert sampler.subset_rows == sum(min(s, c) for s, c in zip(group_shares(list(positives), 40), positives))
    for step in sampler:
        subset = np.array(step[-sampler.subset_rows:])
        assert y[subset].all() and (np.bincount(codes[subset], minlength=3) >= np.minimum(positives, 40)).all()


def test_subset_batch_sampler_sizes_its_minibatch_of_A_by_the_target():
    rng = np.random.default_rng(1)
    y = rng.random(3000) < 0.4  # ~1200 positives
    codes = (rng.random(3000) < 0.1).astype(int)  # group 1: ~120 positives
    sampler = SubsetBatchSampler(y, 300, target=0.8, generator=torch.Generator().manual_seed(0))
    assert sampler.subset_rows == 250 and all(len(step) == 300 + 250 for step in sampler)
    assert SubsetBatchSampler(y, 100, target=0.8).subset_rows == 100  # never more than the batch (train's cap)
    assert SubsetBatchSampler(y, 8, target=0.8).subset_rows == 16  # ... but at least 16
    assert SubsetBatchSampler(y, 100, target=0.8, subset_batch_size=30).subset_rows == 30  # explicit wins
    assert SubsetBatchSampler(y, 100).subset_rows == 100  # no target: batch_size, as before
    grouped = SubsetBatchSampler(y, 300, target=0.8, groups=codes, generator=torch.Generator().manual_seed(0))
    per_group = np.bincount(codes[y])
    assert per_group[1] < 250 < per_group[0] and grouped.subset_rows == 250 + per_group[1]
    for step in grouped:
        assert np.bincount(codes[np.array(step[300:])], minlength=2).tolist() == [250, per_group[1]]
    with pytest.raises(ValueError, match="`target`"):
        SubsetBatchSampler(y, 100, target=1.5)


@pytest.mark.parametrize("workers", [0, 2])
def test_subset_batch_sampler_collates_the_two_minibatches_in_a_dataloader(workers):
    X = torch.arange(90, dtype=torch.float64).reshape(45, 2)
    y = (torch.arange(45) % 4 == 0).long()
    sampler = SubsetBatchSampler(y, 10, subset_batch_size=6, generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_sampler=sampler,
                                         collate_fn=sampler.collate, num_workers=workers)
    seen = []
    for (X_b, y_b), (X_a, y_a) in loader:
        assert X_b.shape == (len(y_b), 2) and X_a.shape == (6, 2) and bool((y_a == 1).all())
        assert bool((X_b[:, 1] == X_b[:, 0] + 1).all())  # whole rows (row i is [2i, 2i + 1])
        assert bool((y[(X_a[:, 0] / 2).long()] == 1).all())  # the rows of A are positives of the data set
        seen += (X_b[:, 0] / 2).long().tolist()
    assert sorted(seen) == list(range(45))


def test_subset_batch_sampler_refuses_bad_input():
    with pytest.raises(ValueError, match=exact(SAMPLER_NO_SUBSET_MESSAGE, subset="positives", objective="precision_at_recall")):
        SubsetBatchSampler(torch.zeros(10), 4)
    with pytest.raises(TypeError, match=exact(INTEGER_TYPE_MESSAGE, name="batch_size", wanted="an integer >= 1",
                                              type_name="float", value=4.0, example=1)):
        SubsetBatchSampler(torch.ones(10), 4.0)
    with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01, values=[2])):
        SubsetBatchSampler(torch.full((10,), 2), 4)


def test_subset_batch_sampler_is_exported_from_the_package():
    import quantile_surrogate
    from quantile_surrogate import training

    assert quantile_surrogate.SubsetBatchSampler is SubsetBatchSampler is training.SubsetBatchSampler
    assert "SubsetBatchSampler" in quantile_surrogate.__all__ and "SubsetBatchSampler" in training.__all__
