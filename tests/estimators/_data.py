"""Small data sets and settings shared by the estimator tests."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

# The maths above the adapters needs neither library; the tests that train boosters need both (the `boost` extra).
try:
    import lightgbm as lgb
    import xgboost as xgb
except ImportError:  # pragma: no cover - CI installs the extra
    lgb = xgb = None
needs_backends = pytest.mark.skipif(lgb is None, reason="needs the `boost` extra (lightgbm, xgboost-cpu)")

QUICK = dict(max_epochs=15, n_restarts=1, random_state=0)
"""A short QuantileClassifier fit: 15 epochs, one restart, seeded."""


def tabular(n=800, seed=0):
    """Imbalanced tabular data (20 % positives, 8 features, 5 % label noise) for the boosted models."""
    return make_classification(n, n_features=8, weights=[0.8, 0.2], flip_y=0.05, random_state=seed)


def blobs(n=200, seed=0):
    """Two Gaussian blobs in 4-D, 30 % positives shifted by 1.5 in every feature."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = rng.standard_normal((n, 4)) + 1.5 * y[:, None]
    return X, y


def interaction(n=600, seed=0):
    """A label no linear model can rank (an interaction of two features), about 25 % positives, in 4-D."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 4))
    return X, (X[:, 0] * X[:, 1] > 0.15).astype(np.int64)
