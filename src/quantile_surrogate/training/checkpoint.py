"""Resumable training checkpoints for :func:`quantile_surrogate.training.train`.

A checkpoint is one ``torch.save`` file holding the restart loop's whole state after an
epoch: the current model, optimizer (momentum buffers), shuffling generator and global RNG
states, the epoch and restart index, the loss curve, early-stopping state and the best
finished restart so far. It is written atomically: to a temporary file in the same folder,
flushed to disk, then moved over the old one with ``os.replace``, so a fit killed at any
moment leaves either the previous checkpoint or the new one, never a torn file.

A fingerprint of the data and settings is stored with it; resuming with other data or
settings raises ``ValueError`` instead of silently continuing someone else's run.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict
from pathlib import Path

import torch

__all__ = ["fingerprint", "load_checkpoint", "save_checkpoint", "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 1

MISMATCH_MESSAGE = (
    "`checkpoint` {path} was written by a fit with other data or settings, so it cannot be resumed. "
    "Delete the file or pass another `checkpoint` path."
)


def _hash_tensor(digest, tensor: torch.Tensor) -> None:
    array = tensor.detach().cpu().contiguous().numpy()
    digest.update(str((array.dtype, array.shape)).encode())
    digest.update(array.tobytes())


def fingerprint(config, X, labels, validation, random_state, architecture: str) -> str:
    """sha256 of the settings, the seed, the model's architecture and the exact bytes of the data."""
    digest = hashlib.sha256()
    settings = {k: (repr(v) if callable(v) else v) for k, v in asdict(config).items()}
    digest.update(repr((CHECKPOINT_VERSION, sorted(settings.items()), random_state, architecture)).encode())
    for tensor in (X, labels) + (tuple(validation) if validation is not None else ()):
        _hash_tensor(digest, tensor)
    return digest.hexdigest()


def load_checkpoint(path, key: str):
    """The saved state at ``path`` if it exists, else None; ``ValueError`` if it belongs to another fit."""
    path = Path(path)
    if not path.exists():
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or state.get("key") != key:
        raise ValueError(MISMATCH_MESSAGE.format(path=str(path)))
    return state


def save_checkpoint(path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically (temporary file in the same folder, fsync, ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
