"""Benchmark 2: fit time as N grows, QuantileClassifier against LogisticRegression and AATP.

Data: ``sklearn.datasets.make_classification`` (20 features, 10 informative, 10 %
positives), standardised. Objective: precision at a predicted positive rate of 5 %.

- ``QuantileClassifier``: Algorithm 1 with a fixed budget, so that the work per epoch
  is what grows with N: minibatches of 1000 (plus a minibatch of A), 10 epochs, 1 restart,
  random start, no early stopping (``--epochs`` to change).
- ``LogisticRegression(solver="lbfgs", max_iter=1000)``.
- ``AccuracyAtTheTop`` (Boyd et al. 2012) with its defaults: one convex (liblinear hinge)
  solve per training point, O(N) solves of O(N d) each. It runs for growing N as long as
  one fit is predicted (from the last one, as N^2) to take at most ``--aatp-budget``
  seconds: "as far as it gets in 10 minutes".

The exponent ``b`` is the least-squares slope of log(time) against log(N); N log N has a
slope of about 1.1 over 1e3..1e6, N^2 a slope of 2. Times are CPU seconds of this process
with one thread (torch and BLAS), which a busy shared machine disturbs less than wall time.

Run from the repository root::

    python -m benchmarks.fit_time --quick       # N up to 1e5, AATP fits up to 60 s; ~5 minutes
    python -m benchmarks.fit_time               # N up to 1e6, AATP fits up to 600 s; ~20 minutes
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings

import numpy as np
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from quantile_surrogate.baselines import AccuracyAtTheTop
from quantile_surrogate.estimators import QuantileClassifier

from .per_step import machine_description

RATE = 0.05


def make_data(n: int, seed: int):
    X, y = make_classification(
        n_samples=n, n_features=20, n_informative=10, n_redundant=0, weights=[0.9], flip_y=0.01, random_state=seed
    )
    return StandardScaler().fit_transform(X), y


def make_estimators(epochs: int, seed: int):
    return {
        "QuantileClassifier": lambda: QuantileClassifier(
            objective="precision_at_rate", target=RATE, batch_size=1000, max_epochs=epochs, n_restarts=1,
            init="random", early_stopping=False, random_state=seed,
        ),
        "LogisticRegression": lambda: LogisticRegression(solver="lbfgs", max_iter=1000),
        "AATP": lambda: AccuracyAtTheTop(target=RATE, random_state=seed),
    }


def cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def slope(sizes, times) -> float:
    if len(sizes) < 2:
        return math.nan
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fit time against N.")
    parser.add_argument("--quick", action="store_true", help="N up to 1e5 and a 60 s AATP budget")
    parser.add_argument("--sizes", type=float, nargs="+")
    parser.add_argument("--aatp-budget", type=float, default=None, help="CPU seconds one AATP fit may take")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    args = parser.parse_args(argv)
    default_sizes = [1e3, 2e3, 5e3, 1e4, 3e4, 1e5] + ([] if args.quick else [3e5, 1e6])
    sizes = [int(s) for s in (args.sizes or default_sizes)]
    budget = args.aatp_budget if args.aatp_budget is not None else (60.0 if args.quick else 600.0)
    torch.set_num_threads(1)
    estimators = make_estimators(args.epochs, args.seed)

    text = ["## Benchmark 2: fit time against N", "", machine_description(1) + ", clock cpu"]
    print("\n".join(text), flush=True)
    times = {name: {} for name in estimators}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        X, y = make_data(200, args.seed)
        for make in estimators.values():  # warm-up: imports and first-call initialisation
            make().fit(X, y)
        for n in sizes:
            X, y = make_data(n, args.seed)
            for name, make in estimators.items():
                if name == "AATP":
                    done = sorted(times["AATP"])
                    if done:
                        last = done[-1]
                        if times["AATP"][last] * (n / last) ** 2 > budget:
                            continue
                times[name][n] = cpu_seconds(lambda: make().fit(X, y))
                print(f"  {name:20s} N={n:>8d}: {times[name][n]:9.3f} s", flush=True)

    lines = ["", "| N | " + " | ".join(estimators) + " | AATP / QuantileClassifier |", "|---" * (len(estimators) + 2) + "|"]
    for n in sizes:
        cells = [f"{times[name][n]:.3f}" if n in times[name] else "-" for name in estimators]
        ratio = times["AATP"].get(n, math.nan) / times["QuantileClassifier"][n]
        lines.append(f"| {n:.0e} | " + " | ".join(cells) + f" | {'-' if math.isnan(ratio) else f'{ratio:.0f}x'} |")
    lines += ["", "| method | exponent b (all N) | exponent b (N >= 1e4) | N range |", "|---|---|---|---|"]
    for name, measured in times.items():
        ns = sorted(measured)
        big = [n for n in ns if n >= 10_000]
        lines.append(
            f"| {name} | {slope(ns, [measured[n] for n in ns]):.2f} | "
            f"{slope(big, [measured[n] for n in big]):.2f} | {ns[0]:.0e} to {ns[-1]:.0e} |"
        )
    qc = times["QuantileClassifier"]
    big = [n for n in sorted(qc) if n >= 10_000]
    b = slope(big, [qc[n] for n in big])
    nlogn = slope(big, [n * math.log(n) for n in big])
    at_5000 = times["AATP"].get(5000, math.nan) / qc.get(5000, math.nan)
    lines += [
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| QuantileClassifier grows no faster than N log N (slope {nlogn:.2f} over the same N) | {b:.2f} | "
        f"{'not reached (no N >= 1e4)' if len(big) < 2 else ('yes' if b <= nlogn + 0.05 else 'no')} |",
        f"| AATP >= 100x slower at N = 5000 | {'-' if math.isnan(at_5000) else f'{at_5000:.0f}x'} | "
        f"{'not reached' if math.isnan(at_5000) else ('yes' if at_5000 >= 100 else 'no')} |",
        "",
        f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
    ]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(text + lines) + "\n")


if __name__ == "__main__":
    main()
