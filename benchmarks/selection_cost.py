"""What the K-fold selection and the start rule cost: QuantileClassifier fit time on 10,000 rows (issue 12).

Three settings of the linear default, on ``make_classification`` (20 features, 10 informative,
10 % positives, seed 0), precision at recall 0.9 and precision at a 5 % rate:

- ``early_stopping=False``: the protocol before the selection existed (every row, all
  ``max_epochs``, the lowest training loss picks the restart): the reference of the issue's
  "at most 3x" target;
- ``selection_se=0``: K-fold selection, the best held-out mean wins;
- the defaults: K-fold selection with the start rule (``selection_se=2``).

Times are CPU seconds of this process (``time.process_time``) with one thread for torch and
BLAS, the best and the median of ``--repeats`` (the settings interleaved), which a busy shared machine disturbs less than wall time. Run::

    nice -n 10 .venv/bin/python -m benchmarks.selection_cost --rows 10000 --repeats 3

``--reference-commit REV`` also times the defaults of the code at ``REV`` (checked out with
``git worktree`` into a temporary folder and run in a subprocess on the same data), the literal
reading of issue 12's "at most 3x today's": ``ec68dc1`` is the last commit before the issue was
filed, when the defaults on 10,000 rows were the ``early_stopping=False`` protocol of the slower
code of the time. The current ``early_stopping=False`` row is the stricter reference (the same
protocol on today's faster loss and loop).

``--sets NAMES --reference-commit REV`` times the defaults on development sets instead (issue 21's
"fit time at most today's on the development suite"): two worker processes, one importing this
checkout's ``src`` and one the code at ``REV``, fit the same models (each set subsampled to 10,000
rows as in the committed tables, stratified half/half splits ``0..--splits-1``, recall 0.9 and a 5 %
rate, seeded by the split) one after the other, fit by fit, ``--repeats`` times; each fit's best CPU
seconds are summed per set. Alternating fit by fit keeps a busy spell from landing on one side::

    nice -n 10 .venv/bin/python -m benchmarks.selection_cost --reference-commit a6d5b81 --splits 2 --repeats 3 \
        --sets 7_Cardiotocography,41_Waveform,29_Pima,33_skin,28_pendigits,12_fault
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from quantile_surrogate import QuantileClassifier

SETTINGS = (("early_stopping=False", dict(early_stopping=False)), ("selection_se=0", dict(selection_se=0.0)),
            ("defaults", {}))
OPERATING_POINTS = (("precision_at_recall", 0.9), ("precision_at_rate", 0.05))


def measure(rows: int, repeats: int) -> list[dict]:
    X, y = make_classification(rows, n_features=20, n_informative=10, weights=[0.9, 0.1], random_state=0)
    seconds = {}
    for repeat in range(repeats):  # settings interleaved, so that a busy spell slows them alike
        for objective, target in OPERATING_POINTS:
            for name, params in SETTINGS:
                model = QuantileClassifier(objective=objective, target=target, random_state=repeat, **params)
                start = time.process_time()
                model.fit(X, y)
                seconds.setdefault((objective, name), []).append(time.process_time() - start)
    return [dict(objective=objective, setting=name, seconds=min(times), median=float(np.median(times)))
            for (objective, name), times in seconds.items()]


REFERENCE_SNIPPET = """
import json, sys, time, torch
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits
from quantile_surrogate import QuantileClassifier
torch.set_num_threads(1)
rows, repeats = int(sys.argv[1]), int(sys.argv[2])
X, y = make_classification(rows, n_features=20, n_informative=10, weights=[0.9, 0.1], random_state=0)
times = {}
with threadpool_limits(1):
    for repeat in range(repeats):
        for objective, target in (("precision_at_recall", 0.9), ("precision_at_rate", 0.05)):
            start = time.process_time()
            QuantileClassifier(objective=objective, target=target, random_state=repeat).fit(X, y)
            times.setdefault(objective, []).append(time.process_time() - start)
print(json.dumps(times))
"""


@contextmanager
def reference_tree(commit: str):
    """The ``src`` folder of a temporary ``git worktree`` of ``commit``, removed afterwards."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        tree = os.path.join(folder, "reference")
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", "-q", tree, commit], check=True)
        try:
            yield os.path.join(tree, "src")
        finally:
            subprocess.run(["git", "-C", root, "worktree", "remove", "--force", tree], check=True)


def reference_times(commit: str, rows: int, repeats: int) -> dict:
    """CPU seconds of the defaults at ``commit`` (objective -> list), in a subprocess on its own checkout."""
    with reference_tree(commit) as src:
        out = subprocess.run([sys.executable, "-c", REFERENCE_SNIPPET, str(rows), str(repeats)],
                             env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


WORKER_SNIPPET = """
import sys, time, warnings
import numpy as np, torch
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits
from quantile_surrogate import QuantileClassifier
warnings.simplefilter("ignore")
torch.set_num_threads(1)
data, loaded = sys.argv[1], {}
with threadpool_limits(1):
    for line in sys.stdin:
        name, objective, target, split = line.split()
        if name not in loaded:
            with np.load(f"{data}/{name}.npz") as archive:
                X, y = archive["X"].astype(np.float64), archive["y"].astype(np.int64)
            if len(y) > 10_000:  # benchmarks/real_data.py's --max-rows 10000
                keep = train_test_split(np.arange(len(y)), train_size=10_000, stratify=y, random_state=0)[0]
                X, y = X[keep], y[keep]
            loaded[name] = X, y
        X, y = loaded[name]
        train = train_test_split(np.arange(len(y)), test_size=0.5, stratify=y, random_state=int(split))[0]
        model = QuantileClassifier(objective=objective, target=float(target), random_state=int(split))
        start = time.process_time()
        model.fit(X[train], y[train])
        print(time.process_time() - start, flush=True)
"""


def paired_set_times(commit: str, sets, splits: int, repeats: int, data: str) -> dict:
    """``{(set, objective, split): (best CPU s here, best CPU s at commit)}``, the two codes alternating fit by fit."""
    fits = [(name, objective, target, split) for name in sets for objective, target in OPERATING_POINTS
            for split in range(splits)]
    here = str(Path(__file__).resolve().parents[1] / "src")
    seconds = {fit: ([], []) for fit in fits}
    with reference_tree(commit) as there:
        workers = [subprocess.Popen([sys.executable, "-c", WORKER_SNIPPET, data], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": src})
                   for src in (here, there)]
        try:
            for _ in range(repeats):
                for fit in fits:
                    for side, worker in enumerate(workers):
                        worker.stdin.write(" ".join(map(str, fit)) + "\n")
                        worker.stdin.flush()
                        line = worker.stdout.readline()
                        if not line:  # the worker died; its traceback went to this process's stderr
                            raise RuntimeError(f"the worker timing {('this checkout', commit)[side]} stopped on {fit}")
                        seconds[fit][side].append(float(line))
        finally:
            for worker in workers:
                worker.stdin.close()
                worker.wait()
    return {(name, objective, split): (min(mine), min(theirs))
            for (name, objective, _, split), (mine, theirs) in seconds.items()}


def print_set_times(times: dict, commit: str) -> None:
    print(f"QuantileClassifier defaults, CPU seconds (each fit's best, summed), one thread, against {commit}:\n")
    print(f"| set | fits | here | at {commit} | ratio |\n|---|---|---|---|---|")
    for name in dict.fromkeys(key[0] for key in times):
        pairs = [value for key, value in times.items() if key[0] == name]
        mine, theirs = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
        print(f"| {name} | {len(pairs)} | {mine:.2f} | {theirs:.2f} | {mine / theirs:.3f} |")
    mine, theirs = sum(v[0] for v in times.values()), sum(v[1] for v in times.values())
    print(f"| all | {len(times)} | {mine:.2f} | {theirs:.2f} | **{mine / theirs:.3f}** |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference-commit", help="also time the defaults of the code at this git revision")
    parser.add_argument("--sets", help="comma-separated development sets: time the defaults there against "
                        "--reference-commit, fit by fit, instead of the make_classification settings")
    parser.add_argument("--splits", type=int, default=2, help="with --sets: splits 0..K-1 of each set")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "adbench"),
                        help="with --sets: the folder of the development suite's .npz files")
    args = parser.parse_args(argv)
    if args.sets:
        if not args.reference_commit:
            parser.error("--sets needs --reference-commit REV: the code to time against")
        missing = [name for name in args.sets.split(",") if not (Path(args.data) / f"{name}.npz").is_file()]
        if missing:
            parser.error(f"--sets: no {', '.join(f'{name}.npz' for name in missing)} in {args.data} (--data)")
        times = paired_set_times(args.reference_commit, args.sets.split(","), args.splits, args.repeats, args.data)
        print_set_times(times, args.reference_commit)
        return times
    torch.set_num_threads(1)
    reference = reference_times(args.reference_commit, args.rows, args.repeats) if args.reference_commit else {}
    with threadpool_limits(1):
        results = measure(args.rows, args.repeats)
    for objective, times in reference.items():
        results.append(dict(objective=objective, setting=f"defaults at {args.reference_commit}",
                            seconds=min(times), median=float(np.median(times))))
    print(f"{args.rows} rows, 20 features, CPU seconds, best of {args.repeats}, one thread:\n")
    print("| objective | setting | CPU s (best) | x early_stopping=False | CPU s (median) | x |\n|---|---|---|---|---|---|")
    for objective, _ in OPERATING_POINTS:
        rows = [r for r in results if r["objective"] == objective]
        base, middle = rows[0]["seconds"], rows[0]["median"]
        for r in rows:
            print(f"| {objective} | {r['setting']} | {r['seconds']:.2f} | {r['seconds'] / base:.2f} "
                  f"| {r['median']:.2f} | {r['median'] / middle:.2f} |")
        if reference:
            old, new = rows[-1], next(r for r in rows if r["setting"] == "defaults")
            print(f"| {objective} | defaults / defaults at {args.reference_commit} | | {new['seconds'] / old['seconds']:.2f} "
                  f"| | {new['median'] / old['median']:.2f} |")
    return np.array([r["seconds"] for r in results])


if __name__ == "__main__":
    main()
