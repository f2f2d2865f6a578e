"""One XGBoost worker's arrays for the distributed objective's per-row arithmetic, kept from round to round.

Why: a Dask worker does not allocate as a plain Python process does. Dask's nanny starts every worker with
``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``), and setting glibc's trim
threshold (or its top pad, mmap threshold or mmap maximum) turns off its dynamic mmap threshold: every array above 128 KiB is then mapped
afresh and its pages faulted in on first write. On this machine a NumPy ``a * 2`` on 500,000 float64
took 0.33 ms in a plain process and 1.70 ms with that variable set, and a call of the objective on a
worker's 500,000 rows made about seven such temporaries (docs/distributed.md). XGBoost's own
objectives write into buffers they keep. :class:`Workspace` gives the objective the same: arrays by
name, allocated on the first call and reused while the worker's row count stays the same. It also remembers
the labels it last saw checked (:meth:`Workspace.known_labels`): XGBoost hands the same labels every round, and
checking that they are binary made four fresh row-sized masks a call.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["Workspace"]


class Workspace:
    """Named arrays, made on first use and handed out again while the size and dtype stay the same.

    An array handed out is overwritten by the next call that asks for its name, so a caller
    returns one only to a consumer that copies it (XGBoost copies ``grad`` and ``hess`` into
    its own buffer before the next round).
    """

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}
        self._labels: np.ndarray | None = None  # a copy of the last labels that passed check_binary

    def known_labels(self, labels: np.ndarray) -> bool:
        """Whether ``labels`` equal, entry by entry, the labels last given to :meth:`keep_labels`.

        Compared in a kept mask (no fresh memory); a NaN never equals itself, so labels holding
        one are never known.
        """
        kept = self._labels
        if kept is None or kept.shape != labels.shape or kept.dtype != labels.dtype:
            return False
        return bool(np.equal(labels, kept, out=self.array("same_labels", labels.size, bool)).all())

    def keep_labels(self, labels: np.ndarray) -> None:
        """Remember a copy of ``labels``, which the caller has just checked."""
        self._labels = np.array(labels, copy=True)

    def array(self, name: str, size: int, dtype=np.float64) -> np.ndarray:
        """The 1-D array ``name`` of ``size`` entries of ``dtype`` (its contents are whatever the last user left)."""
        array = self._arrays.get(name)
        if array is None or array.size != size or array.dtype != dtype:
            array = self._arrays[name] = np.empty(size, dtype=dtype)
        return array

    def tensor(self, name: str, size: int, dtype=np.float64) -> torch.Tensor:
        """:meth:`array` as a tensor sharing its memory."""
        return torch.from_numpy(self.array(name, size, dtype))
