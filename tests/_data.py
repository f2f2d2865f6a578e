"""Small synthetic data sets shared by several test modules."""

import numpy as np


def shifted_gaussians(n, seed):
    """Two Gaussian classes with one covariance: the best linear rule at every operating point is
    logistic regression's direction, so training can only add noise to it."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(np.int64)
    return rng.standard_normal((n, 3)) + 0.8 * y[:, None] * np.array([1.0, 0.5, 0.0]), y
