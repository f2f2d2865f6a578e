"""Patience-based early stopping for :func:`quantile_surrogate.training.train`.

One :class:`EarlyStopping` per restart tracks the best value seen so far, the epoch it came
from and how many epochs in a row have failed to beat it. Values are maximised and compared
as sequences, so that a coarse first entry (an exact metric on a small validation set) can
have its ties broken by the next (the negated validation loss). Its fields are plain
numbers and lists, so a checkpoint stores it as a dict (:meth:`EarlyStopping.to_dict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

__all__ = ["EarlyStopping"]


@dataclass
class EarlyStopping:
    r"""Track the best of a sequence of values to maximise; say when to stop.

    ``value`` improves on ``best`` when

    .. math::
        v_1 > b_1 + \mathrm{tol} \quad\text{or}\quad (v_1 = b_1 \text{ and } (v_2, \dots) > (b_2, \dots)),

    the second clause comparing lexicographically (with ``tol = 0`` this is Python's
    comparison of lists). The first value always improves. Training stops after ``patience``
    epochs in a row without improvement.

    Parameters
    ----------
    patience : int or None
        Epochs without improvement before :attr:`stop` is True; None never stops (the best
        epoch is still tracked).
    tol : float
        The margin by which the first entry must improve.

    Examples
    --------
    >>> stopping = EarlyStopping(patience=2)
    >>> [stopping.update([v], epoch) for epoch, v in enumerate([0.5, 0.7, 0.6, 0.7])]
    [True, True, False, False]
    >>> stopping.best, stopping.best_epoch, stopping.stop
    ([0.7], 1, True)
    >>> EarlyStopping(patience=None).update([0.5, -1.0], 0)
    True
    """

    patience: int | None
    tol: float = 0.0
    best: list | None = None
    """The best value so far (None before the first)."""
    best_epoch: int = 0
    """The epoch of :attr:`best`."""
    bad_epochs: int = 0
    """Epochs in a row since the last improvement."""

    def improves(self, value: Sequence[float]) -> bool:
        """Whether ``value`` beats :attr:`best` (see the class docstring); NaN never does."""
        if self.best is None:
            return True
        first, best_first = value[0], self.best[0]
        return first > best_first + self.tol or (first == best_first and list(value[1:]) > list(self.best[1:]))

    def update(self, value: Sequence[float], epoch: int) -> bool:
        """Record ``value`` measured after ``epoch``; returns whether it improved on the best."""
        improved = self.improves(value)
        if improved:
            self.best, self.best_epoch, self.bad_epochs = list(value), epoch, 0
        else:
            self.bad_epochs += 1
        return improved

    @property
    def stop(self) -> bool:
        """True once ``patience`` epochs in a row have not improved."""
        return self.patience is not None and self.bad_epochs >= self.patience

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, state: dict) -> "EarlyStopping":
        return cls(**state)
