"""The paper's protocols and reported numbers (Mackey, Luo & Eban 2018, tables 1 and 2).

:class:`Protocol` records one precision@tau experiment (section 5.1), :data:`PROTOCOLS` the
three this library runs, and :data:`PAPER_TABLES` the paper's numbers: mean and standard
deviation of P@tau over 100 random splits, copied from the LaTeX source; docs/paper_notes.md
prints them beside the corrections the code makes. The KDD Cup 2008 figure has no numbers
in the source; our ``cover`` experiment is a stand-in on other data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Protocol", "PROTOCOLS", "PAPER_TABLES"]


DEFAULT_GRIDS = {
    "LR": ("C", (0.01, 0.1, 1.0, 10.0, 100.0)),
    "AATP": ("C", (0.01, 0.1, 1.0, 10.0, 100.0)),
    "Kar": ("alpha", (1e-4, 1e-3, 1e-2, 1e-1, 1.0)),
    "Eban": ("alpha", (1e-4, 1e-3, 1e-2, 1e-1, 1.0)),
    "Q": ("weight_decay", (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)),
}


@dataclass(frozen=True)
class Protocol:
    """One precision@tau experiment: data, split, targets and the methods' fixed settings.

    A frozen record; change a field with :func:`dataclasses.replace`.

    Parameters
    ----------
    dataset : {"ionosphere", "housing", "cover"}
        The data set (loaded by :mod:`quantile_surrogate.datasets`).
    train_fraction : float in (0, 1)
        Fraction of the rows in the training part of each split (0.30 Ionosphere, 0.66 Housing).
    taus : tuple of float
        The predicted positive rates tau; every method is trained and evaluated at each.
    bandwidth : float
        The Gaussian kernel's bandwidth ``h`` of the quantile loss (0.05 Ionosphere, 0.08 Housing).
    form : {"fp", "tp"}, default="fp"
        The quantile loss for precision at a rate: eq. (9) ("fp") or eq. (10) ("tp").
    max_epochs : int, default=1000
        Epochs of gradient descent with momentum for the quantile loss.
    learning_rate : float, default=0.2
        Its learning rate.
    batch_size : int or None, default=None
        Minibatch size; None is full-batch gradient descent.
    grids : dict, default=a copy of ``DEFAULT_GRIDS``
        Per method family, ``(parameter, values)``: the regularisation values tried per tau.
    n_splits : int, default=100
        Random train/test splits.
    families : tuple of str, default=("LR", "AATP", "Kar", "Q")
        Method families: logistic regression, Accuracy at the Top, Kar et al.'s surrogate,
        the quantile loss (run as Q1 and Q3), and "Eban" (Lagrangian) on request.
    aatp_candidates : int or None, default=30
        Training points Accuracy at the Top tries as its threshold, those nearest in rank to
        the tau-quantile (None: every training point, as the original does).
    note : str, default=""
        Printed with the results.

    See Also
    --------
    quantile_surrogate.experiments.precision_at_k.run_precision_at_k : Runs a protocol.

    Examples
    --------
    >>> import dataclasses
    >>> from quantile_surrogate.experiments import PROTOCOLS
    >>> protocol = PROTOCOLS["ionosphere"]
    >>> protocol.train_fraction, protocol.taus, protocol.bandwidth
    (0.3, (0.01, 0.05, 0.095, 0.14, 0.19), 0.05)
    >>> protocol.methods
    ('LR', 'AATP', 'Kar', 'Q1', 'Q3')
    >>> dataclasses.replace(protocol, families=("LR", "Q")).methods
    ('LR', 'Q1', 'Q3')
    """

    dataset: str
    train_fraction: float
    taus: tuple
    bandwidth: float
    form: str = "fp"
    # Full-batch gradient descent with momentum (section 5.1.1): enough steps for Housing,
    # where a few hundred steps left Q3 no better than LR (issue 4's measurements).
    max_epochs: int = 1000
    learning_rate: float = 0.2
    batch_size: int | None = None
    # Regularisation grids, one per method family: (parameter, values). The paper picks the
    # value per tau; which values it tried is not said, so each grid spans five decades.
    grids: dict = field(default_factory=lambda: dict(DEFAULT_GRIDS))
    n_splits: int = 100
    families: tuple = ("LR", "AATP", "Kar", "Q")
    aatp_candidates: int | None = 30
    note: str = ""

    @property
    def methods(self) -> tuple:
        """Column names: the quantile family gives Q1 (one random start) and Q3 (best of three)."""
        return tuple(m for f in self.families for m in (("Q1", "Q3") if f == "Q" else (f,)))


#: The protocols of ``quantile-surrogate reproduce``: ``"ionosphere"`` and ``"housing"`` (the
#: paper's tables 1 and 2) and ``"cover"``, the stand-in for its KDD Cup 2008 figure.
PROTOCOLS = {
    "ionosphere": Protocol("ionosphere", 0.30, (0.01, 0.05, 0.095, 0.14, 0.19), bandwidth=0.05),
    "housing": Protocol("housing", 0.66, (0.01, 0.02, 0.03, 0.04, 0.05, 0.06), bandwidth=0.08),
    "cover": Protocol(
        "cover", 0.70, (0.005, 0.01, 0.02, 0.05), bandwidth=0.05, form="tp",
        max_epochs=3, learning_rate=0.05, batch_size=1000, n_splits=20, families=("LR", "Kar", "Q"),
        grids={"LR": ("C", (1.0,)), "Kar": ("alpha", (1e-4,)), "Q": ("weight_decay", (1e-4,))},
        note=("Stand-in for the paper's KDD Cup 2008 experiment (that data cannot be had here): UCI "
              "Covertype, class 4 against class 2, 0.96 % positive. TP-form loss (eq. (10)), minibatches "
              "of 1000, 3 epochs of SGD with momentum, random start, 70 % train, as in the paper."),
    ),
}

_PRINTED_TABLES = {  # as printed: one (mean, std) per tau of the protocol, in order
    "ionosphere": {
        "LR": [(0.52, 0.38), (0.76, 0.14), (0.83, 0.08), (0.87, 0.05), (0.89, 0.04)],
        "AATP": [(0.85, 0.24), (0.91, 0.14), (0.93, 0.06), (0.91, 0.05), (0.89, 0.04)],
        "Q1": [(0.87, 0.27), (0.93, 0.11), (0.91, 0.10), (0.90, 0.08), (0.88, 0.06)],
        "Q3": [(0.98, 0.10), (0.98, 0.07), (0.96, 0.08), (0.92, 0.08), (0.88, 0.05)],
    },
    "housing": {
        "LR": [(0.26, 0.44), (0.12, 0.19), (0.09, 0.10), (0.09, 0.10), (0.11, 0.09), (0.11, 0.08)],
        "AATP": [(0.20, 0.27), (0.23, 0.10), (0.20, 0.12), (0.19, 0.13), (0.17, 0.07), (0.14, 0.05)],
        "Q1": [(0.40, 0.49), (0.23, 0.23), (0.18, 0.17), (0.16, 0.14), (0.14, 0.12), (0.13, 0.12)],
        "Q3": [(0.43, 0.50), (0.28, 0.23), (0.25, 0.16), (0.23, 0.14), (0.21, 0.13), (0.18, 0.10)],
    },
}
#: The paper's tables 1 and 2: ``PAPER_TABLES[dataset][method][tau] = (mean, std)`` of P@tau over
#: 100 splits, for ``dataset`` in {"ionosphere", "housing"} and ``method`` in {"LR", "AATP", "Q1", "Q3"}.
PAPER_TABLES = {
    dataset: {method: dict(zip(PROTOCOLS[dataset].taus, values)) for method, values in table.items()}
    for dataset, table in _PRINTED_TABLES.items()
}
