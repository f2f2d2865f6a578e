"""Does a smaller separate minibatch of A cost test quality? (issue 13, the default ``subset_batch_size``).

Trains a linear model with :func:`quantile_surrogate.training.train` (minibatches of 10 000,
the kernel estimator, SGD with momentum) under several sizes of Algorithm 1's separate
minibatch of ``A`` and reports the test metric, mean +- standard error over seeds, and the
paired difference against the old default (``subset_batch_size = batch_size``). Each seed
redraws the train/test split (or the synthetic data) and the model's start; every
configuration of a seed sees the same data and the same start.

Tasks:

- ``cover``: UCI Covertype class 4 against 2 (0.96 % positives; 70/30 stratified split,
  standardised), precision at recall 0.95;
- ``mixture``: the paper's Gaussian mixture (section 5.2), 300 000 training and 300 000 test
  rows, prior 0.08, precision at recall 0.95;
- ``mixture-rate``: the same data, precision at a predicted positive rate of 0.05 (``A`` is
  every row).

Configurations: ``batch`` (the old default: ``batch_size`` rows of ``A``, all of ``A`` if
fewer), ``k=50`` and ``k=25`` (``min(|A|, ceil(k / min(c, 1 - c)))`` rows, the rule of
:func:`quantile_surrogate.training.subset_size.default_subset_batch_size` with its ``k`` = 50 and
half of it), ``from batch`` (``subset_from_batch=True``) and ``default`` (``subset_batch_size=None``
as ``train`` now resolves it).

Run from the repository root (about 10 minutes on one core)::

    python -m benchmarks.subset_batch_quality --seeds 10
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from torch import nn

from quantile_surrogate.datasets import load_cover, make_gaussian_mixture
from quantile_surrogate.objectives import objective_metric
from quantile_surrogate.training import train

TASKS = {"cover": ("precision_at_recall", 0.95), "mixture": ("precision_at_recall", 0.95),
         "mixture-rate": ("precision_at_rate", 0.05)}
CONFIGS = ("batch", "k=50", "k=25", "from batch", "default")


def standardised(train_X, test_X):
    mean, std = train_X.mean(0), train_X.std(0) + 1e-12
    return (train_X - mean) / std, (test_X - mean) / std


def task_data(task: str, seed: int):
    if task == "cover":
        X, y = load_cover()
        rng = np.random.default_rng(seed)
        test = np.zeros(len(y), bool)
        for label in (0, 1):
            rows = np.flatnonzero(y == label)
            test[rng.choice(rows, size=int(round(0.3 * rows.size)), replace=False)] = True
        Xtr, Xte, ytr, yte = X[~test], X[test], y[~test], y[test]
    else:
        Xtr, ytr = make_gaussian_mixture(300_000, prior=0.08, random_state=2 * seed)
        Xte, yte = make_gaussian_mixture(300_000, prior=0.08, random_state=2 * seed + 1)
    Xtr, Xte = standardised(Xtr, Xte)
    return (torch.as_tensor(Xtr, dtype=torch.float32), torch.as_tensor(ytr), torch.as_tensor(Xte, dtype=torch.float32),
            yte)


def subset_size(config: str, n_subset: int, batch_size: int, target: float):
    if config == "batch":
        return dict(subset_batch_size=batch_size)
    if config == "from batch":
        return dict(subset_from_batch=True)
    if config == "default":
        return {}
    k = int(config.split("=")[1])
    return dict(subset_batch_size=min(n_subset, math.ceil(k / min(target, 1 - target) - 1e-9)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS),
                        help=f"among {', '.join(CONFIGS)}, or k=N for any tail count N")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for config in args.configs:
        if config not in CONFIGS and not (config.startswith("k=") and config[2:].isdigit()):
            parser.error(f"unknown configuration {config!r}")
    torch.set_num_threads(args.threads)
    print(f"batch {args.batch_size}, {args.epochs} epochs, lr {args.lr}, kernel estimator, linear model, "
          f"{args.seeds} seeds; test metric mean +- s.e.; paired difference against 'batch'")
    for task in args.tasks:
        objective, target = TASKS[task]
        values = {config: [] for config in args.configs}
        seconds = {config: 0.0 for config in args.configs}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            Xtr, ytr, Xte, yte = task_data(task, seed)
            n_subset = int((ytr == 1).sum()) if objective == "precision_at_recall" else len(ytr)
            for config in args.configs:
                start = time.process_time()
                result = train(nn.Linear(Xtr.shape[1], 1), Xtr, ytr, objective=objective, target=target,
                               batch_size=args.batch_size, max_epochs=args.epochs, learning_rate=args.lr,
                               random_state=seed, **subset_size(config, n_subset, args.batch_size, target))
                seconds[config] += time.process_time() - start
                with torch.no_grad():
                    scores = result.model(Xte).reshape(-1).double().numpy()
                values[config].append(objective_metric(yte, scores, objective=objective, target=target))
        print(f"\n{task}: {objective} at {target}, {len(ytr)} training rows, |A| = {n_subset}")
        print("| configuration | test metric | paired difference vs batch | CPU s per fit |")
        print("|---|---|---|---|")
        for config in args.configs:
            v = np.array(values[config])
            line = f"| {config} | {v.mean():.4f} +- {v.std(ddof=1) / math.sqrt(v.size):.4f} | "
            if "batch" in values and config != "batch":
                d = v - np.array(values["batch"])
                line += f"{d.mean():+.4f} +- {d.std(ddof=1) / math.sqrt(d.size):.4f} | "
            else:
                line += "- | "
            print(line + f"{seconds[config] / args.seeds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
