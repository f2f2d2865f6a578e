"""Peak memory of ``quantile-surrogate predict`` as the input file grows: streamed against whole-file.

A linear model is fitted once (10,000 rows). Then for each size a CSV (or Parquet) file of
``N`` rows (an id, four numeric columns, a three-level text column and the label; about
60 bytes a row in CSV) is scored by ``predict ... --out``, each run in a fresh subprocess
whose own peak resident memory (``ru_maxrss`` of that child, from ``os.wait4``) is reported:

- ``streamed``: the command as shipped, which reads ``CHUNK_ROWS`` (100,000) rows at a time;
- ``whole file``: the same code with ``CHUNK_ROWS`` raised above ``N``, i.e. the file read at
  once as before issue 10 (only up to ``--whole-up-to`` rows, default 1e6).

Streamed memory should stay flat: the interpreter, torch and pandas (about 0.3 GB) plus
one chunk, whatever ``N``. Run from the repository root, gently on a shared machine::

    nice -n 10 python -m benchmarks.predict_memory                  # 1e5 and 1e6 rows, about a minute
    nice -n 10 python -m benchmarks.predict_memory --rows 1e5 1e6 1e7 --whole-up-to 1e6
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

RUN = ("import sys; from quantile_surrogate.cli import _file_io, main; "
       "_file_io.CHUNK_ROWS = int(sys.argv[1]); sys.exit(main(sys.argv[2:]))")


def write_data(path: Path, n: int, seed: int = 0, block: int = 1_000_000) -> None:
    """``n`` rows written block by block, so that making a 1e7-row file needs little memory itself."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, block):
        size = min(block, n - start)
        y = rng.random(size) < 0.3
        frame = pd.DataFrame({"id": np.arange(start, start + size)})
        for j in range(4):
            frame[f"x{j}"] = np.round(rng.normal(size=size) + (j + 1) * 0.5 * y, 6)
        frame["colour"] = np.where(rng.random(size) < 0.5 + 0.3 * y, "red", rng.choice(["blue", "green"], size))
        frame["y"] = np.where(y, "yes", "no")
        if path.suffix == ".parquet":
            if start:
                raise ValueError("Parquet files are written in one block here; use CSV for sizes above it.")
            frame.to_parquet(path, row_group_size=100_000)
        else:
            frame.to_csv(path, mode="a" if start else "w", header=not start, index=False)


def run_child(chunk_rows: int, argv: list[str]) -> tuple[float, float]:
    """(peak resident memory in GB, wall seconds) of one command in its own process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", RUN, str(chunk_rows), *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    err = child.stderr.read().decode()
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv}: {err}")
    return usage.ru_maxrss / 1024**2, seconds  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e5, 1e6], help="file sizes in rows")
    parser.add_argument("--whole-up-to", type=float, default=1e6, help="largest size for the whole-file run")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv")
    args = parser.parse_args()
    from quantile_surrogate.cli._file_io import CHUNK_ROWS

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        write_data(folder / "train.csv", 10_000, seed=1)
        subprocess.run([sys.executable, "-m", "quantile_surrogate.cli", "fit", str(folder / "train.csv"), "--label",
                        "y", "--target", "0.9", "--drop", "id", "--max-epochs", "20", "--quiet", "--out",
                        str(folder / "model.qs")], check=True)
        print(f"| rows | {args.format.upper()} size | streamed peak RSS | streamed time | whole-file peak RSS |")
        print("|---|---|---|---|---|")
        for n in (int(r) for r in args.rows):
            data = folder / f"data{n}.{args.format}"
            write_data(data, n)
            argv = ["predict", str(folder / "model.qs"), str(data), "--keep", "id", "--out", str(folder / "p.csv")]
            streamed, seconds = run_child(CHUNK_ROWS, argv)
            whole = f"{run_child(n + 1, argv)[0]:.2f} GB" if n <= args.whole_up_to else "-"
            print(f"| {n:.0e} | {data.stat().st_size / 1e6:.0f} MB | {streamed:.2f} GB | {seconds:.0f} s | {whole} |",
                  flush=True)
            data.unlink()


if __name__ == "__main__":
    main()
