"""Small batches shared by the loss tests; the message matchers (the fairlearn pattern) are tests/_messages.py."""

import torch

from tests._messages import exact, prefix  # noqa: F401 (re-exported for the loss tests)


def small_example():
    scores = torch.tensor([2.0, 1.0, 0.0, 0.5, -1.0, 1.5], dtype=torch.float64)
    labels = torch.tensor([1, 1, 1, 0, 0, 0])
    return scores, labels


def random_batch(n=60, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, generator=gen, dtype=dtype)
    labels = (torch.rand(n, generator=gen) < 0.3).long()
    labels[:2] = torch.tensor([0, 1])
    return scores, labels

