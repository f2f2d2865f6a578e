"""Benchmark: one forward and backward step of a linear layer on a sparse CSR batch, ours against torch's.

A step is ``layer(X)`` on a ``torch.sparse_csr`` batch ``X``, a sum of the outputs times a fixed
upstream gradient, and ``backward()``. Rows (each timed interleaved with the baseline, as in
``benchmarks/per_step.py``: the median over rounds of the ratio measured in the same round):

- *torch nn.Linear* (the baseline): ``torch.nn.Linear`` on the CSR batch, whose backward goes
  through the transposed layout;
- *ours, first pass*: :class:`quantile_surrogate.training._sparse_linear.Linear` on a batch seen for the
  first time (a minibatch): on the CPU the product and the gradient are SciPy's CSR and CSC products
  on the batch's own arrays (their views made anew), on a GPU a transpose and one CSR product;
- *ours, kept transpose*: the same layer on a batch that comes back (the full batch of every epoch,
  every L-BFGS step): on a GPU one CSR product with the transpose kept on the batch; on the CPU the
  same SciPy products as the first pass, with the two views kept on the batch (no copy);
- *dense nn.Linear*: the densified batch (where it fits in 1 GB), for scale.

Batches: ``text``, 10,000 rows of 7,600 columns with 12 entries a row (the TF-IDF development set's
shape) and ``one-hot``, 100,000 rows of 100,000 columns with 20 entries a row; a linear model's
layer (1 output) and an MLP's first layer (64 outputs). float32 values, int32 indices.

Run from the repository root::

    python -m benchmarks.sparse_step --quick                 # the text batch, 1 output; seconds
    python -m benchmarks.sparse_step --out results.md        # both batches, both layers, one CPU thread
    python -m benchmarks.sparse_step --device cuda           # on a GPU machine (CUDA events)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from benchmarks.per_step import interleaved, machine_description
from quantile_surrogate._utils.sparse import csr_tensor
from quantile_surrogate.training import _sparse_linear

BATCHES = {"text": (10_000, 7_600, 12), "one-hot": (100_000, 100_000, 20)}
OUTPUTS = (1, 64)
DENSE_MAX_BYTES = 1 << 30


def batch(rows: int, columns: int, per_row: int, device, seed: int = 0) -> torch.Tensor:
    """A CSR batch with ``per_row`` entries in every row at distinct random columns, positive float32 values."""
    rng = np.random.default_rng(seed)
    # Row i takes columns start_i + k step_i (mod columns), k < per_row: distinct, as the steps stay below columns / per_row.
    start = rng.integers(0, columns, size=(rows, 1))
    step = rng.integers(1, max(2, columns // per_row), size=(rows, 1))
    indices = np.sort((start + step * np.arange(per_row)) % columns, axis=1).astype(np.int32)
    matrix = sp.csr_matrix((rng.random(rows * per_row, dtype=np.float32), indices.ravel(),
                            np.arange(0, rows * per_row + 1, per_row, dtype=np.int32)), shape=(rows, columns))
    return csr_tensor(matrix, device=device)


def step_of(layer: nn.Module, X: torch.Tensor, upstream: torch.Tensor, *, first_pass: bool = False):
    params = list(layer.parameters())

    def step():
        if first_pass:  # forget the batch: every step is its first, as for a minibatch seen once
            setattr(X, _sparse_linear.TRANSPOSE, None)
            setattr(X, _sparse_linear.VIEWS, None)  # the CPU's SciPy views too
        for p in params:
            p.grad = None
        (layer(X) * upstream).sum().backward()

    return step


def measure(name: str, outputs: int, device: str, rounds: int, clock) -> dict:
    rows, columns, per_row = BATCHES[name]
    X = batch(rows, columns, per_row, device)
    upstream = torch.randn(rows, outputs, generator=torch.Generator().manual_seed(1)).to(device)
    torch.manual_seed(0)
    ours = _sparse_linear.Linear(columns, outputs).to(device)
    theirs = nn.Linear(columns, outputs).to(device)
    theirs.load_state_dict(ours.state_dict())
    steps = {"ours, first pass": step_of(ours, X, upstream, first_pass=True),
             "ours, kept transpose": step_of(ours, batch(rows, columns, per_row, device), upstream)}
    if rows * columns * 4 <= DENSE_MAX_BYTES:
        steps["dense nn.Linear"] = step_of(theirs, X.to_dense(), upstream)
    return interleaved(steps, step_of(theirs, X, upstream), rounds, clock)


def table(results: dict) -> str:
    names = ["ours, first pass", "ours, kept transpose", "dense nn.Linear"]
    lines = ["| batch | outputs | torch nn.Linear (ms) | " + " | ".join(names) + " |", "|---" * (3 + len(names)) + "|"]
    for (name, outputs), row in results.items():
        rows, columns, per_row = BATCHES[name]
        cells = [f"{row[n][3] * 1e3:.2f} ms ({row[n][0]:.3f}x)" if n in row else "-" for n in names]
        lines.append(f"| {name} ({rows:,} x {columns:,}, {per_row}/row) | {outputs} | {row['BCE'][3] * 1e3:.2f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Forward + backward of a linear layer on a sparse CSR batch.")
    parser.add_argument("--quick", action="store_true", help="the text batch, one output, 3 rounds")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here; never overwritten")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; name a new file")
    torch.set_num_threads(args.threads)
    clock = "cuda" if args.device == "cuda" else time.process_time
    plan = [("text", 1)] if args.quick else [(name, k) for name in BATCHES for k in OUTPUTS]
    results = {(name, k): measure(name, k, args.device, 3 if args.quick else args.rounds, clock) for name, k in plan}
    text = (f"{machine_description(args.threads, args.device)}\n\nmedian ms per step (ratio to torch nn.Linear "
            f"on the same CSR batch, median over {3 if args.quick else args.rounds} interleaved rounds)\n\n"
            + table(results))
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
