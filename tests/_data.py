"""Small synthetic data sets shared by several test modules."""

import numpy as np


def shifted_gaussians(n, seed):
    """Two Gaussian classes with one covariance: the best linear rule at every operating point is
    logistic regression's direction, so training can only add noise to it."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(np.int64)
    return rng.standard_normal((n, 3)) + 0.8 * y[:, None] * np.array([1.0, 0.5, 0.0]), y


def sparse_classification(n=300, d=60, density=0.1, seed=0):
    """A CSR matrix (``n`` x ``d``, about ``density`` stored, float64) and labels (about 25 % positive) that depend
    on it linearly: sparse rows as a TF-IDF or one-hot matrix has them, a few empty."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed, dtype=np.float64)
    score = X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    return X, (score > np.quantile(score, 0.75)).astype(np.int64)
