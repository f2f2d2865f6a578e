"""Float64 loop-and-sort references written straight from the paper's definitions.

Deliberately naive: no vectorisation, no shared code with the package.
"""

import math

import numpy as np
from scipy import stats


def largest_k(n, level):
    """The largest integer k in 1..n with k / n <= level (k = 1 if none)."""
    k = 1
    for j in range(1, n + 1):
        if j / n <= level + 1e-12:
            k = j
    return k


def point(scores, level):
    s = sorted(float(v) for v in scores)
    return s[largest_k(len(s), level) - 1]


def lower_mean(scores, level):
    s = sorted(float(v) for v in scores)
    k = largest_k(len(s), level)
    return sum(s[:k]) / k


def kernel(scores, level, h, kind="gaussian"):
    s = sorted(float(v) for v in scores)
    n = len(s)
    weights = []
    for i in range(n):
        i_star = max(j + 1 for j in range(n) if s[j] == s[i])  # ties take the largest rank
        x = i_star / n - level
        if kind == "gaussian":
            weights.append(math.exp(-(x * x) / (2 * h * h)) / (h * math.sqrt(2 * math.pi)))
        else:
            u = x / h
            weights.append(0.75 * (1 - u * u) / h if abs(u) < 1 else 0.0)
    total = sum(weights)
    if total == 0.0:
        return point(scores, level)
    return sum(w * v for w, v in zip(weights, s)) / total


def interval(scores, low, high):
    s = sorted(float(v) for v in scores)
    n = len(s)
    first = math.floor(round(n * low, 6)) + 1
    last = math.floor(round(n * high, 6))
    first = min(first, n)
    last = max(last, first)
    chosen = [s[i - 1] for i in range(first, last + 1)]
    return sum(chosen) / len(chosen)


def harrell_davis(scores, level):
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = len(s)
    if n == 1 or level <= 0 or level >= 1:
        return float(s[0] if level <= 0.5 else s[-1])
    a, b = (n + 1) * level, (n + 1) * (1 - level)
    cdf = stats.beta.cdf(np.arange(n + 1) / n, a, b)
    w = np.diff(cdf)
    return float(np.dot(w / w.sum(), s))


def softplus(z):
    return math.log1p(math.exp(-abs(z))) + max(z, 0.0)


# --- vectorised float64 twins, for samples too large for the loops above (N > 65504) ---------
# Same definitions, written with NumPy; tests/quantiles/ checks them against the loops.


def point_np(scores, level):
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = s.size
    k = max(1, min(n, math.floor(round(level * n, 6))))
    return float(s[k - 1])


def lower_mean_np(scores, level):
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = s.size
    k = max(1, min(n, math.floor(round(level * n, 6))))
    return float(s[:k].mean())


def interval_np(scores, low, high):
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = s.size
    first = min(math.floor(round(n * low, 6)) + 1, n)
    last = max(math.floor(round(n * high, 6)), first)
    return float(s[first - 1:last].mean())


def kernel_np(scores, level, h, kind="gaussian"):
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = s.size
    i_star = np.searchsorted(s, s, side="right")  # ties take the largest rank
    x = i_star / n - level
    if kind == "gaussian":
        log_w = -(x * x) / (2 * h * h)
        w = np.exp(log_w - log_w.max())  # the constant factors cancel in the normalisation
    else:
        u = x / h
        w = np.where(np.abs(u) < 1, 0.75 * (1 - u * u) / h, 0.0)
    if w.sum() == 0.0:
        return point_np(scores, level)
    return float(np.dot(w, s) / w.sum())
