"""Peak memory of ``QuantileClassifier.fit`` against the size of its input.

Each size runs in a fresh child process: it makes a float32 ``X`` of (n, 100) (about 40 %
of it a copy that the generator frees), records the resident memory after the imports and
the data (the baseline), fits with one epoch and one restart (memory, not accuracy, is
measured; the epochs do not change the peak), and reports the peak resident memory
(``ru_maxrss``) above the baseline as a multiple of ``X``'s size. The target (issue 10):
at most 2.5x the data above the interpreter and torch.

Run from the repository root::

    python -m benchmarks.fit_memory --rows 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys
import numpy as np
import torch
from quantile_surrogate import QuantileClassifier

n, d, early = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
rng = np.random.default_rng(0)
X = np.empty((n, d), dtype=np.float32)
for start in range(0, n, 100_000):  # in chunks: no float64 temporary of the whole X
    X[start:start + 100_000] = rng.standard_normal((min(100_000, n - start), d), dtype=np.float32)
y = (X[:, 0] + X[:, 1] > 2.2).astype(np.int64)
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
clf = QuantileClassifier(objective="precision_at_rate", target=0.05, max_epochs=1, n_restarts=1,
                         early_stopping=early, random_state=0)
clf.fit(X, y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"n": n, "data_mib": X.nbytes / 2**20, "baseline_mib": baseline / 1024, "peak_mib": peak / 1024}))
"""


def measure(n: int, d: int, early_stopping: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(d), "1" if early_stopping else "0"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--split", choices=["both", "no", "yes"], default="both",
                        help="fit without and/or with the early-stopping validation split")
    args = parser.parse_args(argv)
    print("| rows | X (MiB) | early stopping | baseline RSS (MiB) | peak RSS (MiB) | peak - baseline | ratio to X |")
    print("|---:|---:|:---:|---:|---:|---:|---:|")
    for n in args.rows:
        for early in {"both": (False, True), "no": (False,), "yes": (True,)}[args.split]:
            r = measure(n, args.features, early)
            extra = r["peak_mib"] - r["baseline_mib"]
            print(f"| {n:,} | {r['data_mib']:.0f} | {'yes' if early else 'no'} | {r['baseline_mib']:.0f} | "
                  f"{r['peak_mib']:.0f} | {extra:.0f} | {extra / r['data_mib']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
