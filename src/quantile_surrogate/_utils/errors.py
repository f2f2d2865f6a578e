"""The library's own exception, below every layer so that each layer raises the same one.

Training diverges in several places: the SGD loop of :mod:`quantile_surrogate.training`, a
boosting round (:mod:`quantile_surrogate.boosting`), an estimator's final scores, the
experiments' batched heads. Each reports it with :class:`TrainingDivergedError` and its one
message, :data:`DIVERGED_MESSAGE`, filled with what became NaN or inf and where.
"""

from __future__ import annotations

__all__ = ["DIVERGED_MESSAGE", "TrainingDivergedError"]

#: The message of every :class:`TrainingDivergedError`. ``{what}`` became NaN or inf ``{where}``;
#: ``{rate}`` is `` (learning_rate=0.1)`` and ``{smaller}`` is ``, e.g. 0.01`` when the learning
#: rate is known (both empty otherwise); ``{remedy}`` is the other way out.
DIVERGED_MESSAGE = (
    "Training diverged: {what} became NaN or inf {where}{rate}. Use a smaller learning_rate{smaller}, or {remedy}."
)


class TrainingDivergedError(FloatingPointError):
    """Training produced NaN or inf (a loss, parameters or scores); no model is returned.

    A ``FloatingPointError``, so ``except FloatingPointError`` catches it. The message is
    :data:`DIVERGED_MESSAGE`; it names where training diverged and suggests a learning rate
    ten times smaller.

    Parameters
    ----------
    what : str
        What became NaN or inf, e.g. ``"the loss or the parameters"``.
    where : str
        Where, e.g. ``"at epoch 3 of restart 0"``.
    learning_rate : float or None, default=None
        The learning rate in force, if the raiser knows it.
    remedy : str, default="standardise the features"
        The other way out, after a smaller learning rate.

    Attributes
    ----------
    what, where, learning_rate, remedy
        As in Parameters.

    Examples
    --------
    >>> from quantile_surrogate._utils.errors import TrainingDivergedError
    >>> print(TrainingDivergedError("the loss", "at epoch 2 of restart 0", learning_rate=0.5))
    ... # doctest: +NORMALIZE_WHITESPACE
    Training diverged: the loss became NaN or inf at epoch 2 of restart 0 (learning_rate=0.5).
    Use a smaller learning_rate, e.g. 0.05, or standardise the features.

    Training raises it, e.g. at an absurd learning rate:

    >>> import torch
    >>> from quantile_surrogate import train
    >>> X = torch.randn(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
    >>> train(model, X, X[:, 0] > 0, learning_rate=1e308, random_state=0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    TrainingDivergedError: Training diverged: the loss or the parameters became NaN or inf at epoch 2 ...
    """

    def __init__(self, what: str, where: str, learning_rate: float | None = None,
                 remedy: str = "standardise the features"):
        self.what, self.where, self.learning_rate, self.remedy = what, where, learning_rate, remedy
        known = learning_rate is not None
        super().__init__(DIVERGED_MESSAGE.format(
            what=what, where=where, remedy=remedy, rate=f" (learning_rate={learning_rate:g})" if known else "",
            smaller=f", e.g. {learning_rate / 10:g}" if known else ""))

    def __reduce__(self):
        # Rebuilt from the fields, not from the message (a joblib worker's error is pickled to the parent).
        return type(self), (self.what, self.where, self.learning_rate, self.remedy)
