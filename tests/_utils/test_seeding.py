"""quantile_surrogate._utils.seeding: per-restart seeds, seeding torch, snapshots of a model's state."""

from collections import OrderedDict

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate._utils.seeding import clone_state, draw_seed, restart_seeds, seed_torch


def test_restart_seeds_are_numpys_seed_sequence_children():
    # The reference, written out: child r of SeedSequence(seed) gives two uint64 words, taken mod 2**63.
    seeds = restart_seeds(7, 3)
    for r, child in enumerate(np.random.SeedSequence(7).spawn(3)):
        assert seeds[r] == [int(v) % 2**63 for v in child.generate_state(2, np.uint64)]
    assert all(0 <= v < 2**63 and type(v) is int for pair in seeds for v in pair)
    # Pinned: a change here changes every fit's restarts (and the committed result tables).
    assert restart_seeds(0, 2) == [[8668861027912758289, 5360815723185672023],
                                   [4881901421217228719, 4795412428835145193]]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.integers(1, 6))
def test_a_restarts_seeds_do_not_depend_on_how_many_restarts_run(seed, n, m):
    short, long = sorted((n, m))
    assert restart_seeds(seed, long)[:short] == restart_seeds(seed, short)
    assert len({tuple(pair) for pair in restart_seeds(seed, long)}) == long  # distinct restarts


def test_seed_torch_is_torch_manual_seed_on_the_cpu():
    seed_torch(123)
    ours = torch.rand(5)
    torch.manual_seed(123)
    assert torch.equal(ours, torch.rand(5))


def test_clone_state_is_a_copy_later_steps_cannot_change():
    model = torch.nn.Linear(3, 1)
    state = model.state_dict()
    copied = clone_state(state)
    assert type(copied) is type(state) and copied._metadata == state._metadata
    with torch.no_grad():
        model.weight.add_(1.0)
    assert not torch.equal(copied["weight"], model.weight)
    assert torch.equal(copied["weight"] + 1.0, model.weight)
    fresh = torch.nn.Linear(3, 1)
    fresh.load_state_dict(copied)  # still a state dict load_state_dict accepts
    assert torch.equal(fresh.weight + 1.0, model.weight)
    plain = clone_state(OrderedDict(step=[1, 2], value=torch.ones(2)))
    assert plain["step"] == [1, 2] and not hasattr(plain, "_metadata")


def test_draw_seed_is_a_fresh_non_negative_int63():
    seeds = {draw_seed() for _ in range(4)}
    assert len(seeds) == 4 and all(type(s) is int and 0 <= s < 2**63 for s in seeds)
