"""Small estimators and data shared by the baseline tests."""

from __future__ import annotations

import numpy as np

from quantile_surrogate.baselines import (
    AccuracyAtTheTop,
    KarAverageSurrogate,
    LagrangianBaseline,
    LogisticRegressionBaseline,
)


def separable(n=200, d=3, seed=0):
    """Positives (40 %) sit at x0 >= 1, negatives at x0 <= -1; other features are noise."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    X = rng.standard_normal((n, d))
    X[:, 0] = np.where(y == 1, 1.0 + rng.random(n), -1.0 - rng.random(n))
    return X, y


def small_estimators():
    """One fast instance of each baseline."""
    return [
        LogisticRegressionBaseline(),
        AccuracyAtTheTop(n_candidates=5, random_state=0),
        KarAverageSurrogate(max_iter=30, random_state=0),
        LagrangianBaseline(max_iter=100, random_state=0),
    ]
