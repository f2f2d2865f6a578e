"""Benchmark: QuantileBoostingClassifier above 10,000 training rows, with and without the refit on every row (issue 24).

Above 10,000 rows the estimator chooses its quantile rounds on one validation split (20 % held
out). Until issue 24 it then kept that split's model, trained on 80 % of the rows; now it refits
the log-loss start and the chosen rounds on every row (``refit=True``, the default). This compares
both with LightGBM + threshold (the same 100 log-loss rounds on every row, threshold moved) on the
two development sets with more than 10,000 training rows after a half/half split that do not
saturate (33_skin scores 1.000 for every method):

- ``amazon_codes``: the one-hot development set's nine categorical columns as integer codes (one
  column each, as a tree model takes them; ``../shared/data/amazon_access``), 32,769 rows, 5.8 %
  positive;
- ``synthetic40k``: ``make_classification(40000, 20, n_informative=8, weights=[0.9], flip_y=0.03,
  class_sep=0.8, random_state=0)``.

Stratified half/half splits (seed = split), precision at recall 0.9 and at a 5 % rate (the
methods and scoring of ``benchmarks/real_data.py``). ``--quick`` runs a 3,000-row synthetic set
with ``validation_splits=1`` (the single-split path on small data) in seconds; the tests use it.

Run from the repository root::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/boosting_refit.py --splits 10 --out results/real_data/boosting_refit_10splits.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_data  # noqa: E402  (benchmarks/real_data.py: its methods, scoring and summary)
from _output import out_problem  # noqa: E402
from quantile_surrogate._utils.files import atomic_writes  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
VARIANTS = {"lightgbm": ("lightgbm", {}), "qb_kept_80pct": ("qb_lightgbm", {"refit": False}),
            "qb_refit": ("qb_lightgbm", {"refit": True})}


def load(name: str, data: Path, quick: bool = False):
    if name == "amazon_codes":
        frame = pd.read_csv(data / "amazon_access" / "amazon_access.csv.gz")
        columns = [c for c in frame.columns if c != "label"]
        X = np.column_stack([pd.factorize(frame[c])[0] for c in columns]).astype(np.float64)
        return X, frame["label"].to_numpy()
    if name == "synthetic40k":
        return make_classification(3000 if quick else 40000, 20, n_informative=8, weights=[0.9], flip_y=0.03,
                                   class_sep=0.8, random_state=0)
    raise ValueError(f"unknown set {name!r}; choose from amazon_codes, synthetic40k")


def run(sets, splits: int, data: Path, quick: bool) -> pd.DataFrame:
    rows = []
    for name in sets:
        X, y = load(name, data, quick)
        for label, (method, overrides) in VARIANTS.items():
            if quick and method == "qb_lightgbm":
                overrides = dict(overrides, validation_splits=1)
            for split in range(splits):
                for row in real_data.run_split(name, X, y, split, [method], 10 if quick else 100, quick, overrides):
                    rows.append(dict(row, method=label))
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> str:
    """Per set and operating point: mean ± standard error per variant, and each paired difference to LightGBM."""
    lines = ["| set | point | " + " | ".join(VARIANTS) + " | kept - lightgbm | refit - lightgbm | fit s (kept / refit) |",
             "|---|---|" + "---|" * (len(VARIANTS) + 3)]
    for (name, objective, target), block in frame.groupby(["set", "objective", "target"], sort=False):
        value = {label: block[block.method == label].sort_values("split") for label in VARIANTS}
        cells = [real_data._mean_se(value[label].value) for label in VARIANTS]
        gaps = [real_data._mean_se(value[label].value.to_numpy() - value["lightgbm"].value.to_numpy())
                for label in ("qb_kept_80pct", "qb_refit")]
        seconds = f"{value['qb_kept_80pct'].fit_seconds.mean():.2f} / {value['qb_refit'].fit_seconds.mean():.2f}"
        lines.append(f"| {name} | {objective} {target} | " + " | ".join(cells + gaps) + f" | {seconds} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sets", default="amazon_codes,synthetic40k")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, help="CSV of the per-split rows (and a .md beside it); never overwritten")
    args = parser.parse_args(argv)
    problem = None if args.out is None else out_problem(args.out)
    if problem:
        parser.error(problem)
    sets = ["synthetic40k"] if args.quick else args.sets.split(",")
    frame = run(sets, 2 if args.quick else args.splits, args.data, args.quick)
    text = summary(frame)
    print(text)
    if args.out is not None:  # both files or neither
        atomic_writes([(args.out, lambda path: frame.to_csv(path, index=False)),
                       (args.out.with_suffix(".md"), lambda path: path.write_text(text + "\n"))])


if __name__ == "__main__":
    main()
