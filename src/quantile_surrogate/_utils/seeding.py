"""Seeds and copies of the training loop: per-restart seeds, seeding torch, snapshots of a model's state."""

from __future__ import annotations

import copy

import numpy as np
import torch

__all__ = ["restart_seeds", "clone_state", "seed_torch", "draw_seed"]


def restart_seeds(seed: int, n_restarts: int) -> list:
    """``[model seed, shuffling seed]`` for each restart, from ``seed``.

    ``SeedSequence`` children depend on their index only, so restart ``r`` has the same seeds
    whatever ``n_restarts`` is (``n_restarts=3`` then contains the ``n_restarts=1`` run).
    """
    children = np.random.SeedSequence(int(seed)).spawn(n_restarts)
    return [[int(v) for v in child.generate_state(2, np.uint64) % (2**63)] for child in children]


def clone_state(state: dict) -> dict:
    """A copy of a ``state_dict`` that later steps cannot change: tensors cloned, anything else deep-copied.

    ``copy.deepcopy`` of a state dict walks every tensor's Python state (about 0.25 ms for a
    two-tensor linear model); cloning the tensors is the same copy without that walk. The
    ``_metadata`` that ``load_state_dict`` reads is kept.
    """
    copied = type(state)((key, value.detach().clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value))
                         for key, value in state.items())
    if hasattr(state, "_metadata"):
        copied._metadata = copy.deepcopy(state._metadata)
    return copied


def seed_torch(seed: int, cuda: bool = False) -> None:
    """Seed torch's CPU generator, and every CUDA device's with ``cuda``: ``torch.manual_seed`` for our use.

    ``torch.manual_seed`` also queues the seeding of CUDA, XPU and MTIA devices and records a
    stack trace for each queued call (about 0.7 ms a call), which a fit with K-fold selection
    would pay for every restart of every fold. Models are built on the CPU, so its generator
    decides their start; CUDA's matters only for randomness inside a model trained there.
    """
    torch.default_generator.manual_seed(int(seed))
    if cuda:
        torch.cuda.manual_seed_all(int(seed))


def draw_seed() -> int:
    """A fresh seed from the operating system's entropy (for ``random_state=None``)."""
    return int(np.random.SeedSequence().entropy % (2**63))
