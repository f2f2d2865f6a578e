"""Resumable training checkpoints for :func:`quantile_surrogate.training.train`.

A checkpoint is one ``torch.save`` file holding the restart loop's whole state after an
epoch (:class:`~quantile_surrogate.training._state.LoopState` as plain dicts, lists and
tensors): the current model, optimizer (momentum buffers), shuffling generator and global
RNG states, the epoch and restart index, the loss curve, early-stopping state, the best
finished restart so far, and the seed of the fit (drawn and stored when ``random_state`` is
None, so that such a fit can be resumed too). It is read with ``weights_only=True``: loading
one never runs code. A file that is not a readable checkpoint (corrupt, truncated, or
something else) raises ``ValueError`` with this module's message.

It is written atomically: to a temporary file ``.{name}.{pid}.tmp`` in the same folder,
flushed to disk, then moved over the old one with ``os.replace``, so a fit killed at any
moment leaves either the previous checkpoint or the new one, never a torn file. A process
killed during the write (SIGKILL runs no clean-up) leaves its temporary behind; the next
save or load of the same checkpoint removes the temporaries of processes that no longer run.

A fingerprint of the data, the settings, the seed and the model's architecture is stored
with it, one hash per part; resuming with another part raises ``ValueError`` that names it,
instead of silently continuing someone else's run.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from .._utils.files import atomic_write, remove_stale_temporaries
from ._state import LoopState, TrainingSettings

# fingerprint, load_checkpoint and save_checkpoint are the training loop's plumbing (they take its
# private records); users pass ``checkpoint=`` to train() or the estimators.
__all__ = ["checkpoint_seed", "CHECKPOINT_VERSION"]

#: The checkpoint format written and resumed. Version 2: the loop state as typed records, the
#: drawn seed, a fingerprint per part; a checkpoint of another version is refused (``ValueError``).
#: Version 3: each restart's threshold memory and per-step thresholds (``train(threshold_memory=)``), and
#: with ``constraints`` its multipliers and records.
CHECKPOINT_VERSION = 3

FORMAT = "quantile_surrogate.training checkpoint"

MISMATCH_MESSAGE = (
    "`checkpoint` {path} was written by a fit with other {parts}, so it cannot be resumed. "
    "Pass the same data and settings, or delete the file or pass another `checkpoint` path."
)
UNREADABLE_MESSAGE = (
    "`checkpoint` {path} is not a readable training checkpoint ({reason}). It may be truncated or corrupt "
    "(a full disk, an interrupted copy) or another kind of file; delete it or pass another `checkpoint` path."
)
VERSION_MESSAGE = (
    "`checkpoint` {path} was written in checkpoint format {found}; this version of quantile_surrogate "
    "resumes format {expected} only. Delete the file or pass another `checkpoint` path."
)
NOT_A_FILE_MESSAGE = (
    "`checkpoint` {path} exists and is not a regular file ({kind}); it is neither read nor replaced. "
    "Pass the path of a regular file (or of one to create)."
)


def _hash_tensor(tensor: torch.Tensor) -> str:
    if isinstance(tensor, dict):  # a dict input (RowDict): each value with its key, the keys in a fixed order
        return repr(sorted((repr(key), _hash_tensor(value)) for key, value in tensor.items()))
    if tensor.layout == torch.sparse_csr:  # its three arrays (and its shape, in the row pointer's and columns')
        return repr([tuple(tensor.shape)] + [_hash_tensor(part) for part in
                                             (tensor.crow_indices(), tensor.col_indices(), tensor.values())])
    digest = hashlib.sha256()
    array = tensor.detach().cpu().contiguous().numpy()
    digest.update(str((array.dtype, array.shape)).encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def fingerprint(settings: TrainingSettings, tensors: dict, random_state, architecture: str,
                texts: dict | None = None) -> dict:
    """sha256 per part of a fit: the settings, the seed, the architecture, each data tensor and each text.

    ``tensors`` maps names (``"X"``, ``"y"``, ``"groups"``, ``"validation"``, ...) to a
    tensor, a dict of tensors (a dict input), a tuple of them, or None; every tensor is hashed
    byte for byte (dtype and shape included; a dict's keys too). ``texts`` maps further parts
    to text (``"constraints"``: the constraints' repr). Returns ``{part: hex digest}``.
    """
    settings = {k: (repr(v) if callable(v) else v) for k, v in asdict(settings).items()}
    parts = {"settings": repr(sorted(settings.items())), "random_state": repr(random_state),
             "architecture": architecture, **(texts or {})}
    key = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in parts.items()}
    for name, value in tensors.items():
        values = () if value is None else (value,) if isinstance(value, (torch.Tensor, dict)) else tuple(value)
        key[name] = hashlib.sha256(repr([_hash_tensor(t) for t in values]).encode()).hexdigest()
    return key


def _check_regular(path: Path) -> None:
    """``ValueError`` if something other than a regular file (a link, a folder, a FIFO) is at ``path``."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a symbolic link" if path.is_symlink() else "a folder" if path.is_dir() else "a special file"
        raise ValueError(NOT_A_FILE_MESSAGE.format(path=str(path), kind=kind))


def _read(path: Path) -> dict | None:
    """The stored dict (format and version checked), or None if there is no file."""
    _check_regular(path)
    remove_stale_temporaries(path)
    if not path.exists():
        return None
    try:
        with warnings.catch_warnings():
            # A foreign pickle makes torch warn about its protocol before failing; the error below says it all.
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever torch's reader chokes on, the file is not ours
        # ``from None``: torch's own message suggests weights_only=False, i.e. running the file's code.
        raise ValueError(UNREADABLE_MESSAGE.format(path=str(path), reason=type(error).__name__)) from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(UNREADABLE_MESSAGE.format(path=str(path), reason="not written by train()"))
    if saved.get("version") != CHECKPOINT_VERSION:
        raise ValueError(VERSION_MESSAGE.format(path=str(path), found=saved.get("version"),
                                                expected=CHECKPOINT_VERSION))
    return saved


def load_checkpoint(path, key: dict) -> LoopState | None:
    """The saved state at ``path`` if it exists, else None.

    Raises ``ValueError`` if the file is not a readable checkpoint, or if it belongs to a fit
    whose fingerprint ``key`` differs (the message names the parts that differ).
    """
    path = Path(path)
    saved = _read(path)
    if saved is None:
        return None
    try:
        state = LoopState.from_dict(saved.get("state"))
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(UNREADABLE_MESSAGE.format(path=str(path), reason=str(error))) from None
    stored = state.key if isinstance(state.key, dict) else {}
    differ = [part for part in key if stored.get(part) != key[part]] or sorted(set(stored) - set(key))
    if differ:
        raise ValueError(MISMATCH_MESSAGE.format(path=str(path), parts=", ".join(differ)))
    return state


def checkpoint_seed(path) -> int | None:
    """The seed of the fit that wrote the checkpoint at ``path`` (None if there is no file).

    That is ``random_state``, or the seed drawn for ``random_state=None``. A caller that
    draws its own seed before calling :func:`~quantile_surrogate.training.train` (to split
    the data, say) reuses this one to resume.

    Parameters
    ----------
    path : str or path-like
        The ``checkpoint=`` path of a fit.

    Returns
    -------
    int or None
        The fit's seed; None if no file is at ``path``.

    Raises
    ------
    ValueError
        If ``path`` is not a regular file, or not a readable checkpoint of this version.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import torch
    >>> from quantile_surrogate.training import train
    >>> from quantile_surrogate.training.checkpoint import checkpoint_seed
    >>> X = torch.randn(60, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    >>> y = X[:, 0] > 0
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "run.pt"
    ...     first = train(torch.nn.Linear(2, 1, dtype=torch.float64), X, y, max_epochs=2, checkpoint=path)
    ...     seed = checkpoint_seed(path)  # drawn, since random_state=None
    ...     missing = checkpoint_seed(Path(folder) / "missing.pt")
    >>> again = train(torch.nn.Linear(2, 1, dtype=torch.float64), X, y, max_epochs=2, random_state=seed)
    >>> again.loss == first.loss, missing
    (True, None)
    """
    saved = _read(Path(path))
    if saved is None:
        return None
    state = saved.get("state")
    if not isinstance(state, dict) or not isinstance(state.get("seed"), int):
        raise ValueError(UNREADABLE_MESSAGE.format(path=str(path), reason="no seed"))
    return state["seed"]


def save_checkpoint(path, state: LoopState) -> None:
    """Write ``state`` to ``path`` atomically (temporary file in the same folder, fsync, ``os.replace``)."""
    path = Path(path)
    _check_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = {"format": FORMAT, "version": CHECKPOINT_VERSION, "state": state.to_dict()}
    atomic_write(path, lambda temporary: torch.save(saved, temporary))
