"""The training loop's settings, data, state and result, as typed records.

:func:`~quantile_surrogate.training.train` checks its arguments once into a
:class:`TrainingSettings` and a :class:`TrainingData`, and returns a :class:`TrainResult`.
The loop keeps what it learns in a :class:`LoopState` (the restart index, every finished
restart's loss, the best :class:`Candidate` so far) and, for the restart in progress, a
:class:`RunState`. A checkpoint is ``LoopState.to_dict()``: nested
dicts and lists of tensors, numbers and strings that ``torch.load(weights_only=True)``
reads back without running code, and that ``LoopState.from_dict`` turns into the records
again (a missing or unknown field is an error, not a silent default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch
from torch import nn

from .early_stopping import EarlyStopping
from .._utils.sparse import slice_rows

__all__ = ["TrainingSettings", "TrainingData", "TrainResult", "RunState", "Candidate", "LoopState"]

FIELDS_MESSAGE = "a {record} needs the fields {names}; got {got}"


@dataclass(frozen=True)
class TrainingSettings:
    """:func:`~quantile_surrogate.training.train`'s checked settings (see its docstring for each).

    Hashed into a checkpoint's fingerprint, so that a checkpoint is resumed only with the
    same settings.
    """

    objective: str
    target: float
    form: str
    quantile: object
    bandwidth: float
    surrogate: str
    learning_rate: float
    momentum: float
    weight_decay: float
    batch_size: int | None
    subset_batch_size: int | None
    subset_from_batch: bool
    max_epochs: int
    n_restarts: int
    init: str
    init_alpha: float | None
    early_stopping: bool
    n_iter_no_change: int
    tol: float
    select: str
    monitor: str
    threshold_memory: str | None = None

    def loss_settings(self, with_form: bool = True) -> dict:
        """The keyword arguments of :func:`~quantile_surrogate.objectives.objective_loss` besides the target."""
        settings = dict(quantile=self.quantile, bandwidth=self.bandwidth, surrogate=self.surrogate)
        return {"form": self.form, **settings} if with_form else settings


@dataclass
class TrainResult:
    """What :func:`~quantile_surrogate.training.train` returns: the selected restart and its record.

    Attributes
    ----------
    model : torch.nn.Module
        The selected restart's model, in eval mode.
    loss : float
        Its full-batch training loss (the restart selection criterion).
    loss_curve : list of float
        Mean minibatch loss per epoch of the selected restart.
    n_iter : int
        Epochs run by the selected restart.
    restart : int
        Index of the selected restart.
    restart_losses : list of float
        Full-batch training loss of every restart.
    validation_curve : list or None
        Validation metric per epoch (entry 0 is the start), if ``validation`` was given.
    best_epoch : int or None
        Epoch whose parameters were kept, if ``validation`` was given.
    start : {"random", "logistic", "model"}
        How the selected restart started.
    initial_state : dict or None
        The selected restart's parameters before its first epoch (a ``state_dict``).
    threshold_curve : list of list
        Per epoch of the selected restart, the threshold of each step (see the field).

    Examples
    --------
    >>> import torch
    >>> from quantile_surrogate import train
    >>> g = torch.Generator().manual_seed(0)
    >>> X = torch.randn(100, 2, dtype=torch.float64, generator=g)
    >>> y = X[:, 0] + 0.5 * torch.randn(100, dtype=torch.float64, generator=g) > 0.5
    >>> result = train(torch.nn.Linear(2, 1, dtype=torch.float64), X, y, max_epochs=5, n_restarts=2,
    ...                random_state=0)
    >>> result.n_iter, len(result.loss_curve), len(result.restart_losses), result.start
    (5, 5, 2, 'random')
    >>> result.loss == min(result.restart_losses), result.model.training
    (True, False)
    """

    model: nn.Module
    """The selected restart's model, in eval mode."""
    loss: float
    """Its full-batch training loss (the restart selection criterion)."""
    loss_curve: list = field(default_factory=list)
    """Mean minibatch loss per epoch of the selected restart."""
    n_iter: int = 0
    """Epochs run by the selected restart."""
    restart: int = 0
    """Index of the selected restart."""
    restart_losses: list = field(default_factory=list)
    """Full-batch training loss of every restart."""
    validation_curve: list | None = None
    """Validation metric per epoch (entry 0 is the start), if ``validation`` was given."""
    best_epoch: int | None = None
    """Epoch whose parameters were kept, if ``validation`` was given."""
    start: str = "random"
    """How the selected restart started: "random", "logistic" or "model"."""
    initial_state: dict | None = None
    """The selected restart's parameters before its first epoch (a ``state_dict``)."""
    threshold_curve: list = field(default_factory=list)
    """Per epoch of the selected restart, the threshold of each step (a float; a tuple per group with
    ``groups``): one per epoch for the full batch. With a threshold memory it is the memory's value
    (``train(threshold_memory=)``); its spread over an epoch is the threshold's step-to-step noise and drift."""
    constraint_curve: list | None = None
    """With ``constraints``: per epoch of the selected restart, the record of its multiplier step
    (:meth:`~quantile_surrogate.constraints.ConstraintSet.update`: each constraint's ``name``,
    exact ``value`` and ``excess`` on every training row at the model's exact threshold there after
    the epoch, and ``multiplier``)."""
    validation_excess: list | None = None
    """With ``constraints`` and ``validation``: per epoch (entry 0: the start) the largest excess of a
    constraint over its bound, on the training rows or on the validation rows beyond one standard error
    there, at the deployed threshold (<= 0: every constraint met in that sense; inf: a random start)."""
    start_reweighting: dict | None = None
    """With gap constraints and a logistic start: how it was reweighted by group
    (:func:`~quantile_surrogate.training._reweighted_start.reweighted_start`'s record: ``refits``, ``held``,
    ``weights``, ``margin``); None otherwise."""


@dataclass
class TrainingData:
    """Rows with their labels, the subset ``A`` (computed once per fit) and optional columns: group codes, weights.

    Each optional column is carried by every batch drawn from the rows (None: no groups, every
    row of weight one); ``subset_index``, ``subset_groups`` and ``subset_weight`` are the rows of
    ``A`` and their columns, gathered once.
    """

    X: torch.Tensor
    """The rows along the first dimension: a matrix (dense or sparse CSR), a dense tensor of any shape
    ``(n, ...)``, or a :class:`~quantile_surrogate._utils.rows.RowDict` of them (which has ``shape[0]``,
    ``device`` and ``dtype`` as a tensor has)."""
    labels: torch.Tensor
    """Bool, True for a positive."""
    in_subset: torch.Tensor
    """Bool mask of the rows of ``A``."""
    groups: torch.Tensor | None = None
    """int64 group codes, one per row."""
    weight: torch.Tensor | None = None
    """Frequency weights ``w_i >= 0``, one per row, floating point (``train(..., sample_weight=)``)."""
    constraint_groups: torch.Tensor | None = None
    """int64 group codes of the extra constraints (``train(..., constraints=)``): ``groups`` itself, or the
    group codes that set no threshold (``group_thresholds=False``)."""

    def __post_init__(self):
        self.subset_index = torch.nonzero(self.in_subset).reshape(-1)
        self.subset_groups = None if self.groups is None else self.groups[self.subset_index]
        self.subset_weight = None if self.weight is None else self.weight[self.subset_index]

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def device(self) -> torch.device:
        return self.X.device

    @property
    def dtype(self) -> torch.dtype:
        return self.X.dtype

    @property
    def tabular(self) -> bool:
        """Whether ``X`` is a matrix of shape (n, d), dense or sparse: what the logistic start can fit."""
        return isinstance(self.X, torch.Tensor) and self.X.ndim == 2

    @property
    def sample(self) -> torch.Tensor:
        """A few rows, to check the model's output shape."""
        return slice_rows(self.X, 0, 2)


def _plain(record) -> dict:
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _exact_fields(cls, state) -> dict:
    """``state`` if it is a dict with exactly ``cls``'s fields, else ``ValueError`` (a checkpoint of another shape)."""
    names = {f.name for f in fields(cls)}
    if not isinstance(state, dict) or set(state) != names:
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(FIELDS_MESSAGE.format(record=cls.__name__, names=sorted(names), got=got))
    return state


@dataclass
class RunState:
    """The restart in progress: where it started, its curves, its early stopping, its best epoch.

    The last five fields are filled just before a checkpoint is written (None otherwise):
    the parameters, the optimizer (momentum buffers), the shuffling generator and the global
    CPU (and CUDA) random states, so that a resumed run draws the same batches and the same
    dropout masks as an uninterrupted one.
    """

    start: str
    """How the restart started: "random", "logistic" or "model"."""
    initial_model: dict
    """The parameters before the first epoch (a ``state_dict``)."""
    stopping: EarlyStopping
    """The monitored value: the validation value if there is validation, else the negated epoch loss."""
    loss_curve: list = field(default_factory=list)
    validation_curve: list = field(default_factory=list)
    best_model: dict | None = None
    """The parameters of the best validation epoch (None without validation)."""
    model: dict | None = None
    optimizer: dict | None = None
    generator: torch.Tensor | None = None
    torch_rng: torch.Tensor | None = None
    cuda_rng: torch.Tensor | None = None
    memory: dict | None = None
    """The threshold's memory across steps (:meth:`._memory.ThresholdMemory.state_dict`), or None."""
    threshold_curve: list = field(default_factory=list)
    """Per epoch, the threshold of each of its steps."""
    constraint_curve: list | None = None
    """With ``constraints``: the record of every epoch (``TrainResult.constraint_curve``)."""
    validation_excess: list | None = None
    """With ``constraints``: the held-out excess of every validation (entry 0: the start)."""
    multipliers: dict | None = None
    """With ``constraints``, at a checkpoint: the multipliers and last record (``ConstraintTerm.state_dict``)."""
    start_reweighting: dict | None = None
    """The start's reweighting record (``TrainResult.start_reweighting``)."""

    def to_dict(self) -> dict:
        return dict(_plain(self), stopping=self.stopping.to_dict())

    @classmethod
    def from_dict(cls, state: dict) -> "RunState":
        state = _exact_fields(cls, state)
        return cls(**dict(state, stopping=EarlyStopping.from_dict(state["stopping"])))


@dataclass
class Candidate:
    """A finished restart: the model kept from it and how it compares with the others."""

    restart: int
    loss: float
    """Full-batch training loss (the paper's restart selection)."""
    model: dict
    loss_curve: list
    n_iter: int
    start: str
    initial_model: dict
    validation_curve: list | None = None
    best_epoch: int | None = None
    best_value: list | None = None
    """The best validation value, compared lexicographically (None without validation)."""
    threshold_curve: list = field(default_factory=list)
    constraint_curve: list | None = None
    validation_excess: list | None = None
    start_reweighting: dict | None = None

    def beats(self, other: "Candidate", select: str) -> bool:
        """Whether this restart is kept over ``other``: the higher best validation value with
        ``select="validation"`` (ties go to the loss), else the lower training loss."""
        if select == "validation" and self.best_value != other.best_value:
            return self.best_value > other.best_value
        return self.loss < other.loss

    def to_dict(self) -> dict:
        return _plain(self)

    @classmethod
    def from_dict(cls, state: dict) -> "Candidate":
        return cls(**_exact_fields(cls, state))


@dataclass
class LoopState:
    """The restart loop: its seeds, how far it got, the best finished restart so far."""

    key: str | None
    """The fingerprint of the data and settings (None without a checkpoint)."""
    seed: int
    """The seed of the whole fit: ``random_state``, or the one drawn when it was None."""
    seeds: list
    """Per restart, ``[model seed, shuffling seed]``."""
    restart: int = 0
    restart_losses: list = field(default_factory=list)
    best: Candidate | None = None
    finished: bool = False
    run: RunState | None = None

    def to_dict(self) -> dict:
        return dict(_plain(self), best=None if self.best is None else self.best.to_dict(),
                    run=None if self.run is None else self.run.to_dict())

    @classmethod
    def from_dict(cls, state: dict) -> "LoopState":
        state = _exact_fields(cls, state)
        best = None if state["best"] is None else Candidate.from_dict(state["best"])
        run = None if state["run"] is None else RunState.from_dict(state["run"])
        return cls(**dict(state, best=best, run=run))
