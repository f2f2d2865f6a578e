"""Benchmark 1: the cost of one training step, quantile losses against plain BCE.

One step is ``model(X)`` forward, the loss, and ``backward()`` on a batch of ``n`` rows of
100 float32 features, for a linear model and a 2-layer MLP (100 -> 128 -> ReLU -> 1). The
baseline is ``binary_cross_entropy_with_logits`` on the same scores and model. Losses run
with their defaults, ``validate_args=True`` included (two rows show ``validate_args=False``).

- Table "estimators": ``precision_at_rate_loss`` (rate 0.05, the FP form) with each
  quantile estimator. Its threshold is a quantile of *all* n scores, the most expensive
  case; it includes the Gaussian and Epanechnikov kernels by full torch sort (the
  reference path, which ``torch.compile`` and other devices take) and by the default path
  (NumPy selection with the window), to show the gain. The row "threshold = mean" replaces
  the estimator by ``scores.mean()``: what is left is the cost of the loss itself (the
  checks, softplus, the reduction), not of the quantile.
- Table "losses": each loss with the default (Gaussian kernel) estimator; labels have
  prior 0.1, so precision at recall sets its threshold on ~0.1 n positives.

Timing: each row is measured *interleaved* with the BCE baseline: every round times one
BCE step, then one step of the row (a block of steps when a step is short), and the
row's ratio is the median over rounds of (row time / BCE time in the same round), so that
a load change on a shared machine moves both sides of each ratio. By default the clock is
this process's CPU time with 1 thread (``--clock cpu``): it does not count time spent
waiting for a core. With ``--device cuda`` the data, model and steps live on the GPU and each
block of steps is timed by CUDA events recorded on the stream around it (``--clock cuda``), so
the ratio counts the device's time, launch gaps included, not the host's. The "spread" of the targets table is the interquartile range of the
per-round ratios.

Targets (issue 13, at n = 1e5, linear model, default ``validate_args=True``): point
<= 1.15x BCE, Gaussian kernel <= 1.4x, ``pr_auc_loss`` with 9 recall levels <= 2x; and
(issue 5) MLP point <= 1.1x, MLP Gaussian kernel <= 1.2x.

Run from the repository root::

    python -m benchmarks.per_step --quick        # n = 1e5, linear model; about 1 minute
    python -m benchmarks.per_step                # n = 1e3..1e6, both models; about 15 minutes
    python -m benchmarks.per_step --sizes 1e5 --models linear mlp --out results.md
    python -m benchmarks.per_step --device cuda --out results_cuda.md   # on a GPU machine
    python -m benchmarks.per_step --device cuda --sizes 1e5 --models linear --compiled   # issue 28's rows
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

from quantile_surrogate import losses
from quantile_surrogate.quantiles.smooth import _kernel_quantile_sort

FEATURES = 100
HIDDEN = 128
PRIOR = 0.1
RATE = 0.05
MIN_BLOCK_SECONDS = 2e-3  # time blocks of steps at least this long, so that clock resolution does not matter

TARGETS = {  # (model, table, row) -> the largest ratio to BCE allowed at n = 1e5
    ("linear", "estimators", "point"): 1.15,
    ("linear", "estimators", "kernel (gaussian, default path)"): 1.4,
    ("linear", "losses", "pr_auc (9 recalls)"): 2.0,
    ("mlp", "estimators", "point"): 1.1,
    ("mlp", "estimators", "kernel (gaussian, default path)"): 1.2,
    # Issue 28, on a GPU: compiled, no host sync, against an eager BCE step.
    ("linear", "compiled", "point, compiled"): 1.5,
    ("linear", "compiled", "kernel (gaussian), compiled"): 1.5,
    ("linear", "compiled", "point, compiled with CUDA graphs"): 1.5,
    ("linear", "compiled", "kernel (gaussian), compiled with CUDA graphs"): 1.5,
}


def _full_sort(kernel):
    # The torch path of kernel_quantile: sort all scores, weight every order statistic.
    def estimate(scores, level):
        return _kernel_quantile_sort(scores, level, 0.05, kernel)

    return estimate


def _mean_threshold(scores, level):
    # Not a quantile: an O(n) stand-in that isolates the loss's own cost from the estimator's.
    return scores.mean()


ESTIMATORS = {
    "threshold = mean (loss without estimator)": dict(quantile=_mean_threshold),
    "point": dict(quantile="point"),
    "point, validate_args=False": dict(quantile="point", validate_args=False),
    "kernel (gaussian, default path)": dict(quantile="kernel"),
    "kernel (gaussian), validate_args=False": dict(quantile="kernel", validate_args=False),
    "kernel (gaussian, torch full sort)": dict(quantile=_full_sort("gaussian")),
    "epanechnikov (default path)": dict(quantile="epanechnikov"),
    "epanechnikov (torch full sort)": dict(quantile=_full_sort("epanechnikov")),
    "lower_mean": dict(quantile="lower_mean"),
    "interval": dict(quantile="interval"),
    "harrell_davis": dict(quantile="harrell_davis"),
}

#: ``--compiled``: the forward pass and the loss in one ``torch.compile``d function (its backward compiled by
#: AOTAutograd), the loss with ``validate_args=False``: the torch selection path, no host sync (issue 28).
COMPILED = {
    "BCE, compiled": None,
    "point, compiled": dict(quantile="point"),
    "kernel (gaussian), compiled": dict(quantile="kernel"),
    "BCE, compiled with CUDA graphs": None,
    "point, compiled with CUDA graphs": dict(quantile="point"),
    "kernel (gaussian), compiled with CUDA graphs": dict(quantile="kernel"),
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


def make_step(model, X, loss_fn):
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss_fn(model(X).squeeze(-1)).backward()

    return step


def make_compiled_step(model, X, loss_fn, graphs=False):
    """:func:`make_step` with ``model(X)`` and the loss compiled together; ``graphs``: replayed as CUDA graphs."""
    params = list(model.parameters())
    mode = "reduce-overhead" if graphs else "max-autotune-no-cudagraphs"
    forward = torch.compile(lambda: loss_fn(model(X).squeeze(-1)), mode=mode)

    def step():
        for p in params:
            p.grad = None
        forward().backward()

    return step


def _block(step, repeats: int, clock) -> float:
    if clock == "cuda":  # CUDA events: kernel time on the device's stream, not the host's launch time
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(repeats):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / repeats
    start = clock()
    for _ in range(repeats):
        step()
    return (clock() - start) / repeats


def interleaved(steps: dict, baseline, rounds: int, clock) -> dict:
    """``name -> (median ratio, 25th and 75th percentile ratio, median seconds)``, against ``baseline``."""
    baseline()  # warm-up: allocator, first-call dispatch
    repeats = max(1, round(MIN_BLOCK_SECONDS / max(_block(baseline, 3, clock), 1e-9)))
    pairs = {name: [] for name in steps}
    for step in steps.values():
        step()
    for _ in range(rounds):
        for name, step in steps.items():
            reference = _block(baseline, repeats, clock)
            pairs[name].append((_block(step, repeats, clock), reference))
    out = {}
    for name, times in pairs.items():
        ratios = np.array([t / b for t, b in times])
        out[name] = (float(np.median(ratios)), *np.percentile(ratios, [25, 75]).tolist(),
                     float(np.median([t for t, _ in times])))
    out["BCE"] = (1.0, 1.0, 1.0, float(np.median([b for times in pairs.values() for _, b in times])))
    return out


def machine_description(threads: int, device: str = "cpu") -> str:
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        return (f"{props.name} ({props.total_memory / 2**30:.0f} GiB, {props.multi_processor_count} SMs), "
                f"CUDA {torch.version.cuda}, torch {torch.__version__}, numpy {np.__version__}, "
                f"Python {platform.python_version()}")
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
    device = torch.device(args.device)
    X = torch.from_numpy(rng.standard_normal((n, FEATURES), dtype=np.float32)).to(device)
    y = torch.from_numpy(rng.random(n) < PRIOR).float().to(device)
    labels = y.long()
    model = make_model(model_kind).to(device)
    steps = {}
    for name, settings in ESTIMATORS.items():
        fn = partial(losses.precision_at_rate_loss, labels=labels, rate=RATE, **settings)
        steps["estimators", name] = make_step(model, X, fn)
    for name, loss in LOSSES.items():
        steps["losses", name] = make_step(model, X, partial(loss, labels=labels))
    baseline = make_step(model, X, lambda scores: F.binary_cross_entropy_with_logits(scores, y))
    if args.compiled:
        for name, settings in COMPILED.items():
            fn = (partial(losses.precision_at_rate_loss, labels=labels, rate=RATE, validate_args=False, **settings)
                  if settings is not None else (lambda scores: F.binary_cross_entropy_with_logits(scores, y)))
            graphs = "CUDA graphs" in name
            if not graphs or args.device.startswith("cuda"):  # CUDA graphs need a GPU
                steps["compiled", name] = make_compiled_step(model, X, fn, graphs)
    clock = {"cpu": time.process_time, "wall": time.perf_counter, "cuda": "cuda"}[args.clock]
    return interleaved(steps, baseline, args.rounds, clock)


def format_tables(results, sizes, models):
    lines = []
    for model_kind in models:
        lines.append(f"\n### {model_kind} model ({'100 -> 1' if model_kind == 'linear' else '100 -> 128 -> 1'})\n")
        lines += ["| | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
        lines.append("| BCE step (ms) | " + " | ".join(f"{results[model_kind, n]['BCE'][3] * 1e3:.2f}"
                                                     for n in sizes) + " |")
        for table, names in (("estimators", ESTIMATORS), ("losses", LOSSES), ("compiled", COMPILED)):
            if (table, next(iter(names))) not in results[model_kind, sizes[0]]:
                continue
            for name in names:
                if (table, name) not in results[model_kind, sizes[0]]:
                    continue
                label = f"{name}, kernel" if table == "losses" else (
                    name if name.startswith("BCE") else f"P@rate, {name}")
                cells = " | ".join(f"{results[model_kind, n][table, name][0]:.2f}x" for n in sizes)
                lines.append(f"| {label} | {cells} |")
    lines.append("\n### Targets (n = 1e5)\n")
    lines += ["| model | row | target | measured (spread) | met |", "|---|---|---|---|---|"]
    for (model_kind, table, name), target in TARGETS.items():
        if (model_kind, 100_000) not in results or (table, name) not in results[model_kind, 100_000]:
            continue
        ratio, low, high, _ = results[model_kind, 100_000][table, name]
        lines.append(f"| {model_kind} | {name} | <= {target}x | {ratio:.2f}x ({low:.2f}-{high:.2f}) | "
                     f"{'yes' if ratio <= target else 'no'} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Per-step cost of the quantile losses against BCE.")
    parser.add_argument("--quick", action="store_true", help="n = 1e5, linear model, fewer rounds")
    parser.add_argument("--sizes", type=float, nargs="+", help="batch sizes (default 1e3 1e4 1e5 1e6)")
    parser.add_argument("--models", nargs="+", choices=["linear", "mlp"], help="default: both (--quick: linear)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steadier on a shared machine)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per row (default 15, --quick 9)")
    parser.add_argument(
        "--clock", choices=["auto", "cpu", "wall", "cuda"], default="auto",
        help="cpu: this process's CPU time (time.process_time), which ignores time spent waiting for a "
        "core on a shared machine; only meaningful with 1 thread. cuda: CUDA events around each block "
        "of steps. auto: cuda on a CUDA device, cpu with 1 thread, else wall",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the data, model and steps live there)")
    parser.add_argument("--compiled", action="store_true",
                        help="add the compiled rows (forward and loss in one torch.compile; issue 28's GPU target)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ([1e5] if args.quick else [1e3, 1e4, 1e5, 1e6]))]
    models = args.models or (["linear"] if args.quick else ["linear", "mlp"])
    if args.rounds is None:
        args.rounds = 9 if args.quick else 15
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    if args.clock == "auto":
        args.clock = "cuda" if args.device.startswith("cuda") else ("cpu" if args.threads == 1 else "wall")
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)

    text = ["## Benchmark 1: per-step cost relative to BCE", "",
            machine_description(args.threads, "cuda" if args.device.startswith("cuda") else "cpu")
            + f", device {args.device}, clock {args.clock}, {args.rounds} interleaved rounds"]
    print("\n".join(text), flush=True)
    results = {}
    for model_kind in models:
        for n in sizes:
            results[model_kind, n] = run_block(model_kind, n, args, rng)
            print(f"  measured {model_kind} n={n}: BCE {results[model_kind, n]['BCE'][3] * 1e3:.2f} ms", flush=True)
    tables = format_tables(results, sizes, models)
    text += [tables, "", f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    print(tables)
    print(text[-1])
    if args.out:
        with open(args.out, "x") as handle:  # never overwrite an existing file
            handle.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
