"""Sparse, high-dimensional data: QuantileClassifier on TF-IDF text and one-hot categoricals against what users pick.

Two development sets of ``--data`` (default: the data folder beside a development checkout;
nothing is copied into the package): ``hate_speech`` (24,783 tweets, 5.8 % hate speech) as TF-IDF
(``TfidfVectorizer(sublinear_tf=True, min_df=2)`` fitted on the training half: about 7,600
columns, 12 stored entries a row) and ``amazon_access`` (32,769 access requests, 5.8 % denied,
9 id columns) as one-hot (``OneHotEncoder(handle_unknown="ignore")``: about 12,000 columns, 9
entries a row). Stratified 50/50 splits (seed = split index); three operating points (precision
at recall 0.9 and 0.95, precision among the top 5 %), each scored by the exact metric on the
test half from the model's raw scores (the threshold moved to the operating point).

Methods (the sparse matrix as it is, no scaling; one thread each; fit seconds are process time, after one
untimed warm-up fit of every method on a small synthetic set, so that no method's first fit carries the
process's one-time loading; since 2026-11-28):

================  ===========================================================================
``logistic``      LogisticRegression(max_iter=1000): scikit-learn's defaults (C=1, lbfgs)
``logistic_cv``   LogisticRegressionCV(max_iter=1000): C among 10 values by 5-fold accuracy
``sgd``           SGDClassifier(loss="log_loss", random_state=seed)
``lightgbm``      LGBMClassifier(100 rounds, num_leaves=31) on the same CSR matrix
``quantile``      QuantileClassifier(objective, target, random_state=seed): the defaults, one fit per point
``quantile_cv``   QuantileClassifierCV(objective, target, random_state=seed): its defaults (on sparse input the linear family)
================  ===========================================================================

Run (docs/sparse.md's tables came from this; results/README.md has the command)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sparse_data.py --splits 10 --out results/sparse_data/splits10.csv

``--quick`` runs two splits of a small synthetic text-like and one-hot-like set in seconds
(the tests use it; no data folder needed); ``--points objective:target,...`` changes the operating points. ``--scaling`` instead compares the column scalings a sparse
matrix allows (none, ``StandardScaler(with_mean=False)``, ``MaxAbsScaler``) under LogisticRegression()
with a moved threshold (what ``standardize="auto"`` was chosen on). ``--memory ROWS COLUMNS NONZEROS`` instead fits one
epoch on a random CSR matrix in a child process and prints the peak resident memory above the
baseline (the resident set after the imports, one small fit and the matrix, sampled every 5 ms during
the fit) as a multiple of the matrix's bytes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
METHODS = ("logistic", "logistic_cv", "sgd", "lightgbm", "quantile", "quantile_cv")
POINTS = (("precision_at_recall", 0.9), ("precision_at_recall", 0.95), ("precision_at_rate", 0.05))
PER_POINT = ("quantile", "quantile_cv")  # trained for the operating point: one fit each


def load(name: str, data: Path):
    """``(raw, y, encoder factory)`` of a development set (the encoder is fitted on each training half)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import OneHotEncoder

    if name == "hate_speech":
        frame = pd.read_csv(data / "hate_speech" / "hate_speech.csv")
        return frame["text"].to_numpy(), frame["label"].to_numpy(), lambda: TfidfVectorizer(sublinear_tf=True, min_df=2)
    if name == "amazon_access":
        frame = pd.read_csv(data / "amazon_access" / "amazon_access.csv.gz")
        return (frame.drop(columns="label").to_numpy(), frame["label"].to_numpy(),
                lambda: OneHotEncoder(handle_unknown="ignore"))
    raise ValueError(f"unknown set {name!r}; choose from hate_speech, amazon_access")


def synthetic(name: str, n: int = 1200, seed: int = 0):
    """Small stand-ins for ``--quick``: short texts over 300 words, and 4 id columns of up to 60 values."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(seed)
    if name == "text":
        words = np.array([f"w{i}" for i in range(300)])
        y = (rng.random(n) < 0.1).astype(np.int64)
        # A positive text draws each word from the first 40 with probability 0.3: overlapping classes.
        docs = [" ".join(np.where(rng.random(8) < 0.3 * label, rng.choice(words[:40], 8), rng.choice(words, 8)))
                for label in y]
        return np.array(docs), y, lambda: TfidfVectorizer()
    ids = rng.integers(0, 60, size=(n, 4))
    y = (((ids[:, 0] % 9 == 0) & (rng.random(n) < 0.6)) | (rng.random(n) < 0.03)).astype(np.int64)
    return ids, y, lambda: OneHotEncoder(handle_unknown="ignore")


def make(method: str, objective: str, target: float, seed: int, quick: bool):
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, SGDClassifier

    from quantile_surrogate import QuantileClassifier, QuantileClassifierCV

    if method == "logistic":
        return LogisticRegression(max_iter=1000)
    if method == "logistic_cv":
        return LogisticRegressionCV(max_iter=1000)
    if method == "sgd":
        return SGDClassifier(loss="log_loss", random_state=seed)
    if method == "lightgbm":
        import lightgbm as lgb

        return lgb.LGBMClassifier(n_estimators=20 if quick else 100, num_leaves=31, random_state=seed, verbose=-1,
                                  n_jobs=1)
    short = dict(max_epochs=20) if quick else {}
    if method == "quantile":
        return QuantileClassifier(objective=objective, target=target, random_state=seed, **short)
    return QuantileClassifierCV(objective=objective, target=target, random_state=seed,
                                **({"estimator": QuantileClassifier(**short)} if quick else {}))


def scores_of(model, X) -> np.ndarray:
    if hasattr(model, "decision_function"):
        return np.asarray(model.decision_function(X), dtype=np.float64)
    return np.asarray(model.predict_proba(X)[:, 1], dtype=np.float64)


def warm_up(methods, points=POINTS) -> None:
    """One short untimed fit of every method on a small synthetic text set: the first fit of a process pays for
    one-time loading (torch's first optimizer imports ``torch._dynamo``, about 1 s), which no later fit pays."""
    raw, y, encoder = synthetic("text", n=300)
    X = encoder().fit_transform(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in methods:
            make(method, *points[0], seed=0, quick=True).fit(X, y)


def run_split(name, raw, y, encoder, split, methods, quick, points=POINTS) -> list[dict]:
    import torch
    from sklearn.model_selection import train_test_split

    from quantile_surrogate.objectives import objective_metric

    torch.set_num_threads(1)
    train, test = train_test_split(np.arange(len(y)), test_size=0.5, stratify=y, random_state=split)
    enc = encoder()
    X_train, X_test = enc.fit_transform(raw[train]), enc.transform(raw[test])
    rows = []
    for method in methods:
        for point in (points if method in PER_POINT else (None,)):
            model = make(method, *(point or points[0]), seed=split, quick=quick)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scikit-learn's FutureWarnings, convergence notes
                start = time.process_time()
                model.fit(X_train, y[train])
                seconds = time.process_time() - start
            test_scores = scores_of(model, X_test)
            selection = getattr(model, "selection_", None) or {}
            # The logistic start deployed as it is: the held-out rule kept it, or epoch 0 had the best validation value.
            kept = selection.get("decided_by") == "start" or getattr(model, "best_epoch_", None) == 0 or (
                getattr(model, "epochs_", None) == 0 and getattr(model, "start_", None) == "logistic")  # the CV's
            for objective, target in (points if point is None else (point,)):
                rows.append(dict(set=name, split=split, method=method, objective=objective, target=target,
                                 metric=objective_metric(y[test], test_scores, objective=objective, target=target),
                                 fit_seconds=seconds, start_kept=kept,
                                 rows=X_train.shape[0], columns=X_train.shape[1], nonzeros=X_train.nnz))
    return rows


def summary(frame: pd.DataFrame) -> str:
    """Markdown: mean (standard error) per set, point and method; the quantile model's gap to the better logistic.

    The quantile model is ``quantile`` where the table has it, else ``quantile_cv``; "start kept" is how often
    it deployed its logistic start as it is.
    """
    ours = "quantile" if "quantile" in set(frame.method) else "quantile_cv"
    lines = ["| set | point | " + " | ".join(sorted(frame.method.unique())) + f" | {ours} - best logistic "
             "(worst split) | start kept |", "|---|---|" + "---:|" * (frame.method.nunique() + 2)]
    for (name, objective, target), part in frame.groupby(["set", "objective", "target"], sort=False):
        table = part.pivot(index="split", columns="method", values="metric")
        cells = [f"{table[m].mean():.4f} ({table[m].std(ddof=1) / np.sqrt(len(table)):.4f})" if len(table) > 1
                 else f"{table[m].mean():.4f}" for m in sorted(table.columns)]
        gap = "" if ours not in table else _gap(table, ours)
        kept = part[part.method == ours].start_kept.mean() if ours in table else float("nan")
        point = ("recall " if objective == "precision_at_recall" else "rate ") + f"{target:g}"
        lines.append(f"| {name} | {point} | " + " | ".join(cells) + f" | {gap} | {kept:.0%} |")
    seconds = frame.groupby(["set", "method"]).fit_seconds.mean().unstack()
    lines += ["", "Mean fit seconds (process time, one thread; a per-point method's fit is one point's):", "",
              "| set | " + " | ".join(seconds.columns) + " |", "|---|" + "---:|" * len(seconds.columns)]
    lines += [f"| {name} | " + " | ".join(f"{v:.2f}" for v in row) + " |" for name, row in seconds.iterrows()]
    return "\n".join(lines)


def _gap(table: pd.DataFrame, ours: str) -> str:
    logistic = [m for m in ("logistic", "logistic_cv") if m in table]
    if not logistic:
        return ""
    best = max(logistic, key=lambda m: table[m].mean())
    difference = table[ours] - table[best]
    return f"{difference.mean():+.4f} vs {best} ({difference.min():+.4f})"


def scaling(names, data: Path, splits: int, quick: bool) -> str:
    """Markdown: LogisticRegression() at every point after each scaling of the sparse matrix, mean over splits."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MaxAbsScaler, StandardScaler

    from quantile_surrogate.objectives import objective_metric

    scalers = {"none": None, "std (with_mean=False)": lambda: StandardScaler(with_mean=False), "maxabs": MaxAbsScaler}
    lines = ["| set | scaling | " + " | ".join(f"{o.split('_')[-1]} {t:g}" for o, t in POINTS) + " |",
             "|---|---|" + "---:|" * len(POINTS)]
    for name in names:
        raw, y, encoder = synthetic(name) if quick else load(name, data)
        values = {label: [] for label in scalers}
        for split in range(splits):
            train, test = train_test_split(np.arange(len(y)), test_size=0.5, stratify=y, random_state=split)
            enc = encoder()
            X_train, X_test = enc.fit_transform(raw[train]), enc.transform(raw[test])
            for label, make_scaler in scalers.items():
                a, b = X_train, X_test
                if make_scaler is not None:
                    scaler = make_scaler().fit(X_train)
                    a, b = scaler.transform(X_train), scaler.transform(X_test)
                scores = LogisticRegression(max_iter=1000).fit(a, y[train]).decision_function(b)
                values[label].append([objective_metric(y[test], scores, objective=o, target=t) for o, t in POINTS])
        for label, rows in values.items():
            lines.append(f"| {name} | {label} | " + " | ".join(f"{v:.4f}" for v in np.mean(rows, axis=0)) + " |")
    return "\n".join(lines)


CHILD = r"""
import json, sys, threading, time
import numpy as np
import scipy.sparse as sp
import torch
from quantile_surrogate import QuantileClassifier

# One small fit first: the modules a fit imports lazily (torch.optim's first step imports torch._dynamo,
# about 76 MiB) belong to the baseline, as in any process that has fitted a model once.
QuantileClassifier(objective="precision_at_rate", target=0.05, max_epochs=1, n_restarts=1, random_state=0).fit(
    sp.random(2000, 50, density=0.1, format="csr", random_state=0), np.arange(2000) % 7 == 0)
n, d, nnz = (int(v) for v in sys.argv[1:4])
rng = np.random.default_rng(0)
rows = np.sort(rng.integers(0, n, size=nnz)).astype(np.int32)
indptr = np.zeros(n + 1, dtype=np.int32)
np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
del rows
X = sp.csr_matrix((rng.random(nnz), rng.integers(0, d, size=nnz).astype(np.int32), indptr), shape=(n, d))
X.sum_duplicates()
y = (X @ np.where(np.arange(d) < d // 2, 1.0, -1.0) + 0.3 * rng.standard_normal(n) > 1.0).astype(np.int64)
matrix = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def resident():  # the resident set now (Linux), in bytes
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


baseline, peak, done = resident(), [0], threading.Event()


def sample():  # the peak of the resident set, every 5 ms (ru_maxrss would count the matrix's construction too)
    while not done.is_set():
        peak[0] = max(peak[0], resident())
        time.sleep(0.005)


sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
clf = QuantileClassifier(objective="precision_at_rate", target=0.05, max_epochs=1, n_restarts=1, random_state=0)
start = time.process_time()
clf.fit(X, y)
seconds = time.process_time() - start
done.set()
sampler.join()
print(json.dumps({"rows": n, "columns": d, "nonzeros": int(X.nnz), "matrix_mib": matrix / 2**20,
                  "baseline_mib": baseline / 2**20, "peak_mib": peak[0] / 2**20,
                  "ratio": (peak[0] - baseline) / matrix, "fit_seconds": seconds}))
"""


def memory(rows: int, columns: int, nonzeros: int) -> dict:
    """One fit in a fresh child process (Linux: it reads /proc/self/statm); its JSON line as a dict."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(rows), str(columns), str(nonzeros)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sets", default="hate_speech,amazon_access")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--memory", type=int, nargs=3, metavar=("ROWS", "COLUMNS", "NONZEROS"))
    parser.add_argument("--points", default="precision_at_recall:0.9,precision_at_recall:0.95,precision_at_rate:0.05",
                        help="operating points, objective:target separated by commas")
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--summarize", type=Path, metavar="CSV", help="print the tables of a written CSV again")
    args = parser.parse_args(argv)
    if args.summarize:
        print(summary(pd.read_csv(args.summarize)))
        return
    if args.scaling:
        names = ("text", "onehot") if args.quick else tuple(args.sets.split(","))
        print(scaling(names, args.data, 2 if args.quick else args.splits, args.quick))
        return
    if args.memory:
        print(json.dumps(memory(*args.memory)))
        return
    points = tuple((o, float(t)) for o, t in (p.split(":") for p in args.points.split(",") if p))
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; choose a new file name (results are never overwritten).")
    names = ("text", "onehot") if args.quick else tuple(args.sets.split(","))
    warm_up(methods, points)
    rows = []
    for name in names:
        raw, y, encoder = synthetic(name) if args.quick else load(name, args.data)
        for split in range(2 if args.quick else args.splits):
            rows += run_split(name, raw, y, encoder, split, methods, args.quick, points)
            print(f"{name} split {split} done", file=sys.stderr, flush=True)
    frame = pd.DataFrame(rows)
    text = summary(frame)
    if args.out:  # both files or neither, never half-written
        from quantile_surrogate._utils.files import atomic_writes

        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_writes([(args.out, lambda path: frame.to_csv(path, index=False)),
                       (args.out.with_suffix(".md"), lambda path: Path(path).write_text(text + "\n"))])
    print(text)


if __name__ == "__main__":
    main()
