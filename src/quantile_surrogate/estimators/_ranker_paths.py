"""The two model paths of :class:`~quantile_surrogate.estimators.ranker.QuantileRanker` (private).

A *path* fits a start (log loss), then up to ``rounds`` rounds of the per-query precision@k loss,
reporting the held-out scores after the start and after every round to a
:class:`~quantile_surrogate.selection._query_splits.QueryCurve` (which may stop it). The ranker
chooses the number of rounds from those curves and calls the same path once more, on every query,
for exactly that many rounds. Rows come sorted by query (each query's rows consecutive).

- :class:`BoostedPath`: LightGBM or XGBoost through the backends of
  :class:`~quantile_surrogate.QuantileBoostingClassifier` (``_boosting_backends``): ``n_estimators``
  binary log-loss rounds, then rounds of ``lightgbm_objective("precision_at_k", k=...)``, which reads
  the query sizes set on the library's data; and the blend's second member, ``n_estimators`` rounds of
  the library's own LambdaMART (:meth:`BoostedPath.fit_ranking`).
- :class:`LinearPath`: a linear score on standardised features, started at logistic regression
  (:func:`~quantile_surrogate.training.models.fit_logistic`), then full-batch SGD steps (all queries
  in every step) on :func:`~quantile_surrogate.losses.precision_at_k_loss`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from .._utils.errors import TrainingDivergedError
from ..losses.ranking import precision_at_k_loss
from ..training.models import fit_logistic
from ._standardize import standardize_columns, standardizer

__all__ = ["BoostedPath", "LinearModel", "LinearPath", "query_sizes"]

SGD_MOMENTUM = 0.9
"""The momentum of :class:`LinearPath`'s SGD steps (as ``train``'s default)."""


def query_sizes(codes) -> np.ndarray:
    """Rows per query of rows sorted by query, in row order (the ``group`` LightGBM and XGBoost take)."""
    return np.unique(codes, return_counts=True)[1]


class BoostedPath:
    """``n_start`` log-loss rounds, then up to ``rounds`` rounds of ``objective`` (a ranking objective)."""

    def __init__(self, engine, n_start: int, objective):
        self.engine, self.n_start, self.objective = engine, n_start, objective

    def fit(self, X, relevant, codes, rounds: int, held=None) -> tuple:
        """``(booster, start trees)``: log-loss trees, then the quantile trees; ``held = (X_held, curve)`` may stop it."""
        engine = self.engine
        data = engine.data(X, relevant.astype(np.float64))
        data.set_group(query_sizes(codes))
        start = engine.fit_logloss(data, self.n_start)
        n_start = engine.n_trees(start)
        if held is None:
            return engine.continue_training(start, data, self.objective, rounds), n_start
        X_held, curve = held
        if curve(engine.margins(start, X_held)) or rounds == 0:
            return start, n_start
        validation = engine.data(X_held, np.zeros(X_held.shape[0]), reference=data)
        booster = engine.continue_training(start, data, self.objective, rounds, validation=validation,
                                           after_round=curve)
        return booster, n_start

    def fit_ranking(self, X, relevant, codes):
        """A learning-to-rank booster of ``n_start`` rounds on the same relevance and queries (the ranker's blend)."""
        data = self.engine.data(X, relevant.astype(np.float64))
        data.set_group(query_sizes(codes))
        return self.engine.fit_ranking(data, self.n_start)

    def scores(self, booster, X) -> np.ndarray:
        return self.engine.margins(booster, X)


class LinearModel:
    """``f(x) = x @ coef_ + intercept_`` in the original feature units (picklable, no torch inside)."""

    def __init__(self, coef, intercept):
        self.coef_, self.intercept_ = coef, intercept

    def scores(self, X) -> np.ndarray:
        return np.asarray(X @ self.coef_, dtype=np.float64).reshape(-1) + self.intercept_


class LinearPath:
    """A linear score: logistic regression, then ``rounds`` full-batch SGD steps of the per-query loss."""

    def __init__(self, k: int, loss_settings: dict, learning_rate: float, logloss_weight: float):
        self.k, self.loss_settings = k, loss_settings
        self.learning_rate, self.logloss_weight = learning_rate, logloss_weight

    @staticmethod
    def _dense(X) -> np.ndarray:
        return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)

    def fit(self, X, relevant, codes, rounds: int, held=None) -> tuple:
        """``(LinearModel, 0)``: the model after the logistic start and up to ``rounds`` steps (no start trees)."""
        X = self._dense(X)
        mean, scale = standardizer(X)
        Xt = torch.as_tensor(standardize_columns(X, mean, scale))
        target = torch.as_tensor(relevant, dtype=torch.float64)
        query = torch.as_tensor(codes, dtype=torch.int64)
        model = torch.nn.Linear(X.shape[1], 1, dtype=torch.float64)
        with torch.no_grad():  # a fixed start: L-BFGS from zero, the same model for the same data
            model.weight.zero_()
            model.bias.zero_()
        fit_logistic(model, Xt, target, alpha=1.0 / max(len(X), 1))
        held_X = None if held is None else torch.as_tensor(standardize_columns(self._dense(held[0]), mean, scale))
        stop = held is not None and held[1](self._held_scores(model, held_X))
        optimizer = torch.optim.SGD(model.parameters(), lr=self.learning_rate, momentum=SGD_MOMENTUM)
        for step in range(rounds if not stop else 0):
            optimizer.zero_grad()
            scores = model(Xt).reshape(-1)
            loss = precision_at_k_loss(scores, target, self.k, query=query, reduction="mean", validate_args=False,
                                       **self.loss_settings)
            if self.logloss_weight:
                loss = loss + self.logloss_weight * F.binary_cross_entropy_with_logits(scores, target)
            if not bool(torch.isfinite(loss)):
                raise TrainingDivergedError("the loss", f"at step {step + 1}", self.learning_rate)
            loss.backward()
            optimizer.step()
            if held is not None and held[1](self._held_scores(model, held_X)):
                break
        weight = model.weight.detach().numpy().reshape(-1) / scale
        return LinearModel(weight, float(model.bias.detach()) - float(weight @ mean)), 0

    @staticmethod
    def _held_scores(model, X) -> np.ndarray:
        with torch.no_grad():
            return model(X).reshape(-1).numpy()

    def scores(self, model: LinearModel, X) -> np.ndarray:
        return model.scores(X)
