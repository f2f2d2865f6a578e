"""Small batches shared by the loss tests, and the message matcher (the fairlearn pattern)."""

import re
import string

import torch


def exact(message: str, *positional, **fields) -> str:
    """A ``match=`` pattern for a message constant with its fields filled in."""
    return re.escape(message.format(*positional, **fields))


def prefix(message: str, **fields) -> str:
    """A ``match=`` pattern for a message constant up to its first field not in ``fields``."""
    head = ""
    for literal, field, spec, conversion in string.Formatter().parse(message):
        head += literal
        if field is None or field not in fields:
            break
        value = fields[field]
        head += format(repr(value) if conversion == "r" else value, spec)
    return re.escape(head)


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

