"""Benchmark 3: training throughput (rows per second) and peak memory on 10 million rows x 100 features.

A linear model is trained by minibatch SGD on ``N`` rows of 100 float32 features (4 GB at
N = 1e7). Each method runs in a fresh subprocess that builds the data and trains, so that
its peak resident memory (``ru_maxrss``) is its own:

- ``bce loop``: the baseline, plain ``binary_cross_entropy_with_logits`` in a hand-written
  loop over ``torch.randperm(N).split(batch)``, gathering ``X.index_select(0, rows)``;
- ``bce loop, X[rows]``: the same loop gathering with ``X[rows]``, as most loops are written (on
  the CPU advanced indexing copies element by element and costs several times a row gather,
  so this baseline is slow; the ratio against it is the one issue 13 first measured);
- ``bce loop, two minibatches``: the same loop, each step also gathering and forwarding (in
  the same pass) ``batch`` rows of the positives, as Algorithm 1's separate minibatch of A:
  the cost floor of step 2 with ``subset_batch_size = batch`` (BCE on all the rows forwarded);
- ``train, kernel``: :func:`quantile_surrogate.training.train` with its defaults, precision at
  recall 0.95, Algorithm 1 (each step also forwards a separate minibatch of positives, the
  subset A; by the default's tail count rule, ``min(|A|, ceil(50 / 0.05))`` = 1000 rows here,
  since a batch holds only ~800 positives);
- ``train, point``: the same with the point estimator;
- ``train, kernel, A_b from batch``: ``subset_from_batch=True`` (A_b = X_b n A, one forward);
- ``train, kernel, subset_batch_size=1000``: a separate minibatch of 1000 rows of A, explicitly;
- ``train, kernel, subset_batch_size=batch``: ``batch`` rows of A, the default before issue 13;
- ``train, threshold = mean``: the defaults with the estimator replaced by the mean of the
  minibatch of A (``quantile=`` a callable): the loop and the loss without the quantile's cost.

Throughput is measured on the *second* epoch (epoch timestamps from ``train``'s
``callback``), so that it excludes data checks and the first-call set-up; "train() total"
is everything ``train`` does, including the final full-batch loss for restart selection.
``--interleaved E`` adds a steadier reading on a busy machine: every ``train`` method again,
for E epochs in the parent process, with one BCE-loop epoch run inside each of its epoch
callbacks, the ratio read per adjacent pair of epochs. With ``--repeats R`` the methods run R
times, interleaved, and each keeps its fastest run (on a shared machine the slow runs measure
the neighbours); one column gives the spread of the CPU-time ratio over the repeats, each run
against the BCE loop run of the same repeat.

The data are generated chunk by chunk into one preallocated tensor (``Tensor.normal_`` on
row slices), labels from a planted linear model with Gaussian noise (~8 % positives), so
that the 4 GB are never held twice; the table reports the data size next to each peak.

Run from the repository root::

    python -m benchmarks.throughput --quick     # 1e6 rows; about 2 minutes
    python -m benchmarks.throughput             # 1e7 rows (4 GB per subprocess); about 10 minutes
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from .per_step import machine_description

FEATURES = 100
CHUNK = 1_000_000
METHODS = ("bce loop", "bce loop, X[rows]", "bce loop, two minibatches", "train, kernel", "train, point",
           "train, kernel, A_b from batch", "train, kernel, subset_batch_size=1000",
           "train, kernel, subset_batch_size=batch", "train, threshold = mean")


def clocks() -> tuple:
    """(wall, process CPU) seconds: on a shared machine the CPU time is the steadier of the two."""
    return time.perf_counter(), time.process_time()


def peak_rss_bytes() -> int:
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def make_data(n: int, seed: int):
    """``X`` (n, 100) float32 filled in place chunk by chunk, and labels from a planted linear model."""
    generator = torch.Generator().manual_seed(seed)
    w = torch.randn(FEATURES, generator=generator) / math.sqrt(FEATURES)
    X = torch.empty((n, FEATURES), dtype=torch.float32)
    y = torch.empty(n, dtype=torch.long)
    for start in range(0, n, CHUNK):
        chunk = X[start : start + CHUNK]
        chunk.normal_(generator=generator)
        logits = chunk @ w + torch.randn(chunk.shape[0], generator=generator)
        y[start : start + CHUNK] = logits > 2.0  # P(N(0, 2) > 2): about 8 % positives
    return X, y


def bce_loop(X, y, batch_size, epochs, lr, seed, advanced_indexing=False, two_minibatches=False):
    """The baseline; ``advanced_indexing`` gathers with ``X[rows]`` instead of ``X.index_select(0, rows)``;
    ``two_minibatches`` appends ``batch_size`` rows of the positives to every step's rows."""
    torch.manual_seed(seed)
    model = nn.Linear(FEATURES, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    generator = torch.Generator().manual_seed(seed)
    target = y.float()
    positives = torch.nonzero(y).reshape(-1)
    stamps = [clocks()]
    for _ in range(epochs):
        for rows in torch.randperm(X.shape[0], generator=generator).split(batch_size):
            if two_minibatches:
                draw = torch.randint(positives.numel(), (batch_size,), generator=generator)
                rows = torch.cat([rows, positives.index_select(0, draw)])
            optimizer.zero_grad()
            X_b, y_b = (X[rows], target[rows]) if advanced_indexing else (X.index_select(0, rows),
                                                                          target.index_select(0, rows))
            F.binary_cross_entropy_with_logits(model(X_b).squeeze(-1), y_b).backward()
            optimizer.step()
        stamps.append(clocks())
    return stamps


def _mean_threshold(scores, level):
    return scores.mean()


def train_run(X, y, batch_size, epochs, lr, seed, method, callback=None):
    from quantile_surrogate.training import train

    stamps = []
    train(
        nn.Linear(FEATURES, 1), X, y, objective="precision_at_recall", target=0.95,
        quantile=_mean_threshold if "mean" in method else "point" if "point" in method else "kernel",
        subset_from_batch="from batch" in method,
        subset_batch_size={"1000": 1000, "batch": batch_size}.get(method.partition("subset_batch_size=")[2]),
        batch_size=batch_size, max_epochs=epochs, learning_rate=lr, random_state=seed,
        callback=callback or (lambda info: stamps.append(clocks())),
    )
    return stamps


def interleaved(args):
    """``--interleaved E``: each ``train`` method in this process, one BCE-loop epoch run inside every epoch's callback.

    Train epoch ``e + 1`` runs between the BCE epochs ``e`` and ``e + 1``, so that each pair
    sees the same neighbours on a shared machine; the ratio is read per pair, in CPU time.
    """
    torch.set_num_threads(args.threads)
    X, y = make_data(args.rows, args.seed)
    lines = ["", f"Interleaved in one process, {args.interleaved} epochs per method (ratios over epochs 2 to "
                 f"{args.interleaved}, each against the BCE-loop epoch just before it), CPU time:", "",
             "| method | vs BCE loop, CPU time: median (min to max) over epoch pairs | BCE epoch, median (CPU s) |",
             "|---|---|---|"]
    for method in [m for m in args.methods if m.startswith("train")]:
        train_seconds, bce_seconds, last = [], [], []

        def callback(info):
            now = clocks()[1]
            if last:
                train_seconds.append(now - last[0])
            stamps = bce_loop(X, y, args.batch_size, 1, args.lr, args.seed)
            bce_seconds.append(stamps[-1][1] - stamps[0][1])
            last[:] = [clocks()[1]]

        train_run(X, y, args.batch_size, args.interleaved, args.lr, args.seed, method, callback)
        ratios = sorted(b / t for b, t in zip(bce_seconds, train_seconds))
        middle = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
        lines.append(f"| {method} | {middle:.2f}x ({ratios[0]:.2f} to {ratios[-1]:.2f}) | "
                     f"{sorted(bce_seconds)[len(bce_seconds) // 2]:.3f} |")
        print(lines[-1], flush=True)
    return lines


def worker(args):
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    X, y = make_data(args.rows, args.seed)
    data_seconds = time.perf_counter() - start
    rss_data = peak_rss_bytes()
    start = time.perf_counter()
    if args.worker.startswith("bce loop"):
        stamps = bce_loop(X, y, args.batch_size, args.epochs, args.lr, args.seed, "X[rows]" in args.worker,
                          "two minibatches" in args.worker)
    else:
        stamps = train_run(X, y, args.batch_size, args.epochs, args.lr, args.seed, args.worker)
    total = time.perf_counter() - start
    epoch, cpu = (stamps[-1][0] - stamps[-2][0]), (stamps[-1][1] - stamps[-2][1])
    print(json.dumps({
        "method": args.worker, "rows_per_s": args.rows / epoch, "epoch_s": epoch, "total_s": total,
        "rows_per_cpu_s": args.rows / cpu, "epoch_cpu_s": cpu,
        "data_s": data_seconds, "data_bytes": X.numel() * X.element_size() + y.numel() * y.element_size(),
        "rss_after_data": rss_data, "peak_rss": peak_rss_bytes(), "positives": float(y.float().mean()),
    }))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Training throughput and peak memory.")
    parser.add_argument("--quick", action="store_true", help="1e6 rows instead of 1e7")
    parser.add_argument("--rows", type=float, default=None)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=2, help="throughput is read on the last epoch")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs per method; the fastest is kept")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    parser.add_argument("--interleaved", type=int, default=0, metavar="EPOCHS",
                        help="also run the train methods for EPOCHS epochs in one process, a BCE epoch between "
                             "their epochs")
    parser.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.rows = int(args.rows or (1e6 if args.quick else 1e7))
    if args.epochs < 2 and args.worker is None:
        parser.error("--epochs must be >= 2: throughput is read on an epoch after the first")
    if args.worker:
        return worker(args)

    text = [
        "## Benchmark 3: training throughput", "",
        machine_description(args.threads) + ", clock wall",
        f"N = {args.rows:.0e} rows x {FEATURES} float32 features, batch {args.batch_size}, {args.epochs} epochs",
    ]
    print("\n".join(text), flush=True)
    best, runs = {}, {method: [] for method in args.methods}
    for _ in range(args.repeats):
        for method in args.methods:
            command = [sys.executable, "-m", "benchmarks.throughput", "--worker", method, "--rows", str(args.rows),
                       "--batch-size", str(args.batch_size), "--epochs", str(args.epochs), "--lr", str(args.lr),
                       "--threads", str(args.threads), "--seed", str(args.seed)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  {method}: {result['rows_per_s']:.3g} rows/s, {result['rows_per_cpu_s']:.3g} rows/CPU s",
                  flush=True)
            runs[method].append(result)
            if method not in best or result["rows_per_s"] > best[method]["rows_per_s"]:
                best[method] = result
    results = [best[method] for method in args.methods]
    gib = 2.0**30
    def ratio(result, method, key):
        return f"{result[key] / best[method][key]:.2f}x" if method in best else "-"

    def spread(method):
        """The CPU-time ratio to the BCE loop of the same repeat: median (min to max) over the repeats."""
        if "bce loop" not in runs:
            return "-"
        values = sorted(r["rows_per_cpu_s"] / b["rows_per_cpu_s"] for r, b in zip(runs[method], runs["bce loop"]))
        middle = (values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2
        return f"{middle:.2f}x ({values[0]:.2f} to {values[-1]:.2f})"

    lines = [
        "", "| method | rows/s (epoch 2) | vs BCE loop | vs BCE loop, X[rows] | vs BCE loop, CPU time "
        "| vs BCE loop, CPU time, per repeat: median (min to max) "
        "| epoch (s) | train() total (s) | data (GiB) | peak RSS after data (GiB) | peak RSS (GiB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['method']} | {r['rows_per_s']:.3g} | {ratio(r, 'bce loop', 'rows_per_s')} | "
            f"{ratio(r, 'bce loop, X[rows]', 'rows_per_s')} | {ratio(r, 'bce loop', 'rows_per_cpu_s')} | "
            f"{spread(r['method'])} | {r['epoch_s']:.2f} | {r['total_s']:.1f} | "
            f"{r['data_bytes'] / gib:.2f} | {r['rss_after_data'] / gib:.2f} | {r['peak_rss'] / gib:.2f} |"
        )
    if args.interleaved >= 2:
        lines += interleaved(args)
    lines += ["", f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(text + lines) + "\n")


if __name__ == "__main__":
    main()
