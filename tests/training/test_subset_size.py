"""The size of Algorithm 1's minibatch of A (quantile_surrogate.training.subset_size): the tail count rule
and the plan that reuses the batch's own rows of A when they are enough, alone and inside ``train``."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.training import train
from quantile_surrogate.training.subset_size import (MIN_SUBSET_ROWS, TAIL_ROWS, SubsetPlan, default_subset_batch_size,
                                                      subset_plan)
from tests.training._helpers import Recorder, blobs, params, trained

torch.set_num_threads(1)


# -- the default size of the minibatch of A (subset_batch_size=None) ----------------------------
@pytest.mark.parametrize("subset_rows,target,tail_rows,expected", [
    (50_000, 0.95, 50, 1000), (50_000, 0.05, 50, 1000),  # the tail is min(c, 1 - c), on either side
    (50_000, 0.8, 50, 250), (50_000, 0.9, 50, 500),  # 50 / (1 - 0.9) = 500.0000000000001: not 501
    (50_000, 0.5, 50, 100), (50_000, 0.99, 50, 5000), (50_000, 0.95, 25, 500),
    (600, 0.95, 50, 600), (1000, 0.95, 50, 1000),  # capped at |A|
])
def test_the_default_takes_k_rows_beyond_the_level(subset_rows, target, tail_rows, expected):
    assert default_subset_batch_size(subset_rows, target, tail_rows) == expected
    assert default_subset_batch_size(subset_rows, target, tail_rows, batch_size=10**6) == expected  # no cap here
    assert TAIL_ROWS == 50


@pytest.mark.parametrize("subset_rows,target,batch_size,expected", [
    (50_000, 0.9, 32, 32), (50_000, 0.99, 1000, 1000),  # never more rows of A than the step's batch ...
    (50_000, 0.9, 8, MIN_SUBSET_ROWS), (10, 0.9, 8, 10),  # ... but at least 16 (all of A if fewer)
    (50_000, 0.8, 1000, 250),  # the tail count rule below the cap
])
def test_the_default_is_capped_at_the_batch_size(subset_rows, target, batch_size, expected):
    assert default_subset_batch_size(subset_rows, target, batch_size=batch_size) == expected
    assert MIN_SUBSET_ROWS == 16


@pytest.mark.parametrize("n,batch_size,sizes,target,expected", [
    (10**6, 10**4, [80_000], 0.95, SubsetPlan(True, 1000)),  # 800 rows of A per batch < 1000: separate
    (10**6, 10**4, [100_000], 0.95, SubsetPlan(False)),  # 1000 per batch: the batch's own rows of A
    (10**6, 10**4, [10**6], 0.05, SubsetPlan(False)),  # precision at a rate: A is every row
    (10**6, 500, [10**6], 0.05, SubsetPlan(False)),  # ... a batch of 500 too: no more than the batch's rows
    (10**6, 500, [80_000], 0.95, SubsetPlan(True, 500)),  # 40 rows of A per batch: 500 separate, not 1000
    (10**5, 10**3, [300], 0.95, SubsetPlan(True, 300)),  # a small A: all of it, every step
    (10**6, 10**4, [50_000, 2_000], 0.95, SubsetPlan(True, 1000, per_group=True)),  # every group's threshold
    (10**6, 10**4, [200_000, 150_000], 0.95, SubsetPlan(False)),  # 2000 and 1500 per batch
    (10**6, 10**4, [200_000, 50_000], 0.95, SubsetPlan(True, 1000, per_group=True)),  # 500 of group 1: too few
])
def test_the_plan_reuses_the_batch_only_when_it_holds_enough_rows_of_A(n, batch_size, sizes, target, expected):
    assert subset_plan(n, batch_size, sizes, target) == expected


def test_explicit_settings_override_the_plan():
    assert subset_plan(10**6, 10**4, [10**6], 0.05, subset_batch_size=77) == SubsetPlan(True, 77)
    assert subset_plan(10**6, 10**4, [10], 0.95, subset_from_batch=True) == SubsetPlan(False)
    assert subset_plan(10**6, 10**4, [10, 20], 0.95, subset_batch_size=8) == SubsetPlan(True, 8)  # shares of 8


# -- inside train ---------------------------------------------------------------------------------
def recorded_sizes(**settings):
    """Rows of every training forward pass of ``train`` on 4000 rows with 25 % positives, batches of 500."""
    X, y = blobs(n=4000, prior=0.25, seed=1)
    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    result = train(factory, X, y, batch_size=500, max_epochs=2, random_state=0, **settings)
    return [x.shape[0] for x in trained(built)], params(result.model), int(y.sum())


@pytest.mark.parametrize("weighted", [False, True])
def test_the_default_separate_minibatch_has_the_rules_size(weighted):
    weight = dict(sample_weight=torch.rand(4000, generator=torch.Generator().manual_seed(0))) if weighted else {}
    # recall 0.8: 50 / 0.2 = 250 rows of A; a batch holds ~125 positives, so a separate minibatch of 250.
    sizes, default, n_subset = recorded_sizes(objective="precision_at_recall", target=0.8, **weight)
    assert n_subset > 250 and sizes == [500 + 250] * 16
    _, explicit, _ = recorded_sizes(objective="precision_at_recall", target=0.8, subset_batch_size=250, **weight)
    assert torch.equal(default, explicit)  # the same batches, bit for bit
    sizes, _, _ = recorded_sizes(objective="precision_at_recall", target=0.98, **weight)
    assert n_subset > 500 and sizes == [500 + 500] * 16  # 2500 rows wanted, ~1000 in A: the batch's 500 (the cap)


def test_the_default_takes_A_b_from_the_batch_when_it_is_enough():
    # A predicted positive rate of 0.2: A is every row, 250 rows needed, 500 in every batch.
    sizes, default, _ = recorded_sizes(objective="precision_at_rate", target=0.2)
    assert sizes == [500] * 16
    _, from_batch, _ = recorded_sizes(objective="precision_at_rate", target=0.2, subset_from_batch=True)
    assert torch.equal(default, from_batch)
    sizes, _, _ = recorded_sizes(objective="precision_at_rate", target=0.02)  # 2500 rows wanted, capped at 500
    assert sizes == [500] * 16


def test_the_default_with_groups_gives_every_group_its_own_rows():
    X, y = blobs(n=4000, prior=0.25, seed=1)
    groups = torch.tensor(np.random.default_rng(0).random(4000) < 0.2).long()  # ~200 and ~800 positives
    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    train(factory, X, y, objective="precision_at_recall", target=0.8, batch_size=500, groups=groups, max_epochs=1,
          random_state=0)
    per_group = torch.bincount(groups[y == 1]).tolist()
    assert per_group[0] > 250 > per_group[1]
    assert [x.shape[0] for x in trained(built)] == [500 + 250 + per_group[1]] * 8


@settings(max_examples=300, deadline=None)
@given(subset_rows=st.integers(1, 10**7), target=st.floats(0.001, 0.999), batch=st.integers(1, 10**5))
def test_the_cap_bounds_the_rule_by_the_batch_and_never_raises_it(subset_rows, target, batch):
    uncapped = default_subset_batch_size(subset_rows, target)
    capped = default_subset_batch_size(subset_rows, target, batch_size=batch)
    assert capped == min(uncapped, max(batch, MIN_SUBSET_ROWS))
    assert 1 <= capped <= min(subset_rows, uncapped)
    assert capped <= default_subset_batch_size(subset_rows, target, batch_size=batch + 1)  # monotone in the batch
    plan = subset_plan(10 * subset_rows, batch, [subset_rows], target)
    assert not plan.separate or plan.size == capped  # a separate minibatch has the capped size
