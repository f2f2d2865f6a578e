"""Benchmark 1: the cost of one training step, quantile losses against plain BCE.

One step is ``model(X)`` forward, the loss, and ``backward()`` on a batch of ``n`` rows of
100 float32 features, for a linear model and a 2-layer MLP (100 -> 128 -> ReLU -> 1). The
baseline is ``binary_cross_entropy_with_logits`` on the same scores and model; every
other row of the tables is its ratio to that baseline at the same (model, n). Losses run
with ``validate_args=False``, as the training loop calls them after checking once.

- Table "estimators": ``precision_at_rate_loss`` (rate 0.05, the FP form) with each
  quantile estimator. Its threshold is a quantile of *all* n scores, the most expensive
  case; it includes the Gaussian and Epanechnikov kernels by full sort (the reference
  path) and windowed (the fast path), to show the gain.
  The row "threshold = mean" replaces the estimator by ``scores.mean()``: what is left is
  the cost of the loss itself (masks, softplus, reductions), not of the quantile.
- Table "losses": each loss with the default (Gaussian kernel) estimator; labels have
  prior 0.1, so precision at recall sets its threshold on ~0.1 n positives.

Targets (issue 5), checked at n >= 1e5 on the "estimators" table: point estimator <= 1.2x
(linear) and <= 1.1x (MLP); Gaussian kernel <= 1.5x (linear) and <= 1.2x (MLP).

Run from the repository root::

    python -m benchmarks.per_step --quick        # n = 1e3, 1e4, 1e5; about 2 minutes
    python -m benchmarks.per_step                # n up to 1e6; about 10-15 minutes
    python -m benchmarks.per_step --threads 2 --out results.md

Timing is ``torch.utils.benchmark.Timer.blocked_autorange`` (median of blocks), by default
on this process's CPU time with 1 thread (``--clock cpu``): on a shared machine wall time
also counts the time spent waiting for a core, CPU time does not (cache and memory
bandwidth contention still show). The BCE
baseline is measured before and after each (model, n) block; the "drift" column is their
relative difference, a direct reading of how noisy the machine was during the block.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.benchmark import Timer

from quantile_surrogate import losses, quantiles

FEATURES = 100
HIDDEN = 128
PRIOR = 0.1
RATE = 0.05

TARGETS = {  # (model, estimator row) -> the largest ratio to BCE allowed at n >= 1e5
    ("linear", "point"): 1.2,
    ("mlp", "point"): 1.1,
    ("linear", "kernel (gaussian, windowed)"): 1.5,
    ("mlp", "kernel (gaussian, windowed)"): 1.2,
}


def _full_sort(kernel):
    # The reference path of kernel_quantile: sort all scores, weight every order statistic.
    def estimate(scores, level):
        return quantiles._kernel_quantile_sort(scores, level, 0.05, kernel)

    return estimate


def _mean_threshold(scores, level):
    # Not a quantile: an O(n) stand-in that isolates the loss's own cost from the estimator's.
    return scores.mean()


ESTIMATORS = {
    "threshold = mean (loss without estimator)": _mean_threshold,
    "point": "point",
    "kernel (gaussian, windowed)": "kernel",
    "kernel (gaussian, full sort)": _full_sort("gaussian"),
    "epanechnikov (windowed)": "epanechnikov",
    "epanechnikov (full sort)": _full_sort("epanechnikov"),
    "lower_mean": "lower_mean",
    "interval": "interval",
    "harrell_davis": "harrell_davis",
}

LOSSES = {
    "precision_at_recall (0.95)": partial(losses.precision_at_recall_loss, recall=0.95),
    "precision_at_rate fp (0.05)": partial(losses.precision_at_rate_loss, rate=RATE, form="fp"),
    "precision_at_rate tp (0.05)": partial(losses.precision_at_rate_loss, rate=RATE, form="tp"),
    "recall_at_fpr (0.05)": partial(losses.recall_at_fpr_loss, fpr=0.05),
    "pr_auc (9 recalls)": losses.pr_auc_loss,
}


def make_model(kind: str) -> nn.Module:
    if kind == "linear":
        return nn.Linear(FEATURES, 1)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))


def make_step(model, X, y, loss_fn):
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss_fn(model(X).squeeze(-1)).backward()

    return step


def measure(step, args) -> float:
    step()  # warm-up: allocator, first-call dispatch
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    timer = Timer(stmt="step()", globals={"step": step}, num_threads=args.threads, timer=clock)
    return timer.blocked_autorange(min_run_time=args.min_run_time).median


def machine_description(threads: int) -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        wanted = ("Model name", "CPU(s):", "Thread(s) per core", "Core(s) per socket", "L2 cache", "L3 cache")
        cpu = "; ".join(" ".join(line.split()) for line in lscpu.splitlines() if line.startswith(wanted))
    except (OSError, subprocess.CalledProcessError):
        cpu = platform.processor() or "unknown CPU"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{cpu}\ntorch {torch.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"torch threads {threads} (of {os.cpu_count()} logical CPUs), load average {load}"
    )


def run_block(model_kind, n, args, rng):
    torch.manual_seed(0)
    X = torch.from_numpy(rng.standard_normal((n, FEATURES), dtype=np.float32))
    y = torch.from_numpy(rng.random(n) < PRIOR).float()
    labels = y.long()
    model = make_model(model_kind)

    def bce(scores):
        return F.binary_cross_entropy_with_logits(scores, y)

    rows = {}
    bce_before = measure(make_step(model, X, y, bce), args)
    for name, quantile in ESTIMATORS.items():
        fn = partial(losses.precision_at_rate_loss, labels=labels, rate=RATE, quantile=quantile, validate_args=False)
        rows[("estimators", name)] = measure(make_step(model, X, y, fn), args)
    for name, loss in LOSSES.items():
        fn = partial(loss, labels=labels, validate_args=False)
        rows[("losses", name)] = measure(make_step(model, X, y, fn), args)
    fn = partial(losses.precision_at_recall_loss, labels=labels, recall=0.95)
    rows[("losses", "precision_at_recall, validate_args=True")] = measure(
        make_step(model, X, y, fn), args
    )
    bce_after = measure(make_step(model, X, y, bce), args)
    bce_time = 0.5 * (bce_before + bce_after)
    drift = abs(bce_after - bce_before) / bce_time
    return bce_time, drift, {key: t / bce_time for key, t in rows.items()}


def format_tables(results, sizes, models):
    lines = []
    for model_kind in models:
        lines.append(f"\n### {model_kind} model ({'100 -> 1' if model_kind == 'linear' else '100 -> 128 -> 1'})\n")
        header = "| | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |"
        lines += [header, "|---" * (len(sizes) + 1) + "|"]
        lines.append("| BCE step (ms) | " + " | ".join(f"{results[model_kind, n][0] * 1e3:.2f}" for n in sizes) + " |")
        lines.append("| BCE drift before/after | " + " | ".join(f"{results[model_kind, n][1]:.0%}" for n in sizes) + " |")
        for table, names in (("estimators", ESTIMATORS), ("losses", [*LOSSES, "precision_at_recall, validate_args=True"])):
            for name in names:
                label = f"P@rate, {name}" if table == "estimators" else name
                cells = " | ".join(f"{results[model_kind, n][2][table, name]:.2f}x" for n in sizes)
                lines.append(f"| {label} | {cells} |")
    lines.append("\n### Targets (n >= 1e5, precision_at_rate loss)\n")
    lines += ["| model | estimator | target | measured | met |", "|---|---|---|---|---|"]
    for (model_kind, name), target in TARGETS.items():
        measured = [results[model_kind, n][2]["estimators", name] for n in sizes if n >= 100_000 and (model_kind, n) in results]
        if model_kind not in models or not measured:
            continue
        worst = max(measured)
        shown = ", ".join(f"{m:.2f}x" for m in measured)
        lines.append(f"| {model_kind} | {name} | <= {target}x | {shown} | {'yes' if worst <= target else 'no'} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Per-step cost of the quantile losses against BCE.")
    parser.add_argument("--quick", action="store_true", help="n = 1e3..1e5 and short timing blocks")
    parser.add_argument("--sizes", type=float, nargs="+", help="batch sizes (default 1e3 1e4 1e5 1e6)")
    parser.add_argument("--models", nargs="+", default=["linear", "mlp"], choices=["linear", "mlp"])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steadier on a shared machine)")
    parser.add_argument("--min-run-time", type=float, default=None, help="seconds per measurement")
    parser.add_argument(
        "--clock", choices=["auto", "cpu", "wall"], default="auto",
        help="cpu: this process's CPU time (time.process_time), which ignores time spent waiting for a "
        "core on a shared machine; only meaningful with 1 thread. auto: cpu with 1 thread, else wall",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ([1e3, 1e4, 1e5] if args.quick else [1e3, 1e4, 1e5, 1e6]))]
    if args.min_run_time is None:
        args.min_run_time = 0.2 if args.quick else 1.0
    if args.clock == "auto":
        args.clock = "cpu" if args.threads == 1 else "wall"
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)

    text = [
        "## Benchmark 1: per-step cost relative to BCE", "",
        machine_description(args.threads) + f", clock {args.clock}",
    ]
    print("\n".join(text), flush=True)
    results = {}
    for model_kind in args.models:
        for n in sizes:
            results[model_kind, n] = run_block(model_kind, n, args, rng)
            print(f"  measured {model_kind} n={n}: BCE {results[model_kind, n][0] * 1e3:.2f} ms", flush=True)
    tables = format_tables(results, sizes, args.models)
    text += [tables, "", f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    print(tables)
    print(text[-1])
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
