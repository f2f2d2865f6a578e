"""Issue 28: a small CNN on scikit-learn's digits, precision at recall 0.9, by batch size and threshold memory.

Data: ``sklearn.datasets.load_digits`` (1,797 8x8 images, bundled with scikit-learn, nothing is
downloaded), one digit against the rest (``--digits``, default 3, 8, 9: about 10 % positives
each), pixels / 16 as float32 images ``(n, 1, 8, 8)``. Split ``s`` (``--seeds``) is a stratified
half/half split with seed ``s``; every model is seeded with ``s`` and trained on the first half,
and measured on the second: precision at recall 0.9 (the threshold at the test positives'
0.1-quantile, the same for every method) and average precision (scikit-learn's).

Model: ``SmallCNN`` (conv 3x3, 8 channels by default, ReLU, 2x2 max pool, linear head; 1,241 parameters).
Every method runs SGD with momentum 0.9 and learning rate ``--learning-rate`` (0.05) for
``--epochs`` epochs (30), except ``aploss`` (Adam, 1e-3, LibAUC's own example's optimiser). The
full batch (``--batch-sizes ...,full``) takes as many steps as batch 32 does, so that it is the
converged reference the issue compares batch 32 with, not a 30-step fit.

==================  ==========================================================================
``default``         ``train(objective="precision_at_recall", target=0.9, batch_size=B)``: each step
                    forwards the tail count rule's separate minibatch of ``A`` with its batch
                    (``min(|A|, 500, max(B, 16))`` rows: B rows at batch 16 and 32, every
                    training positive at 256)
``buffer``          the same with ``threshold_memory="buffer"`` (``A_b`` from the batch, the value
                    from it and the last 10 steps' scores of ``A``)
``ema``             the same with ``threshold_memory="ema"``
``from_batch``      ``subset_from_batch=True``: Algorithm 1 with ``A_b`` the batch's own positives,
                    about 3 at batch 32 (a batch without one draws the rule's minibatch)
``bce``             binary cross-entropy (``BCEWithLogitsLoss``), the same batches
``bce_stacked``     ``bce`` whose forward pass also takes as many training positives as ``default``'s
                    separate minibatch of ``A`` holds (drawn uniformly; their scores enter no loss):
                    the cost of those rows alone, the floor of any step that forwards them
``focal``           focal loss, ``alpha=0.25, gamma=2`` (Lin et al. 2017), the same batches
``floor``           the least an Algorithm 1 step costs in eager PyTorch, in this file's own loop: the
                    point estimate of the batch's own positives by ``torch.kthvalue`` (every batch
                    score where the batch holds none), a hinge ``relu(1 + s - q)`` on the batch's
                    negatives, no checks and no recorded thresholds
``floor_stacked``   ``floor`` whose threshold comes from ``bce_stacked``'s extra rows of ``A`` (the
                    default's separate minibatch, forwarded with the batch): the floor of a step
                    that forwards them
``bce_start``       ``bce`` for the first half of the epochs, then ``default`` from that model for the rest
                    (``init="model"``): a cross-entropy start, LibAUC's own advice for its losses
``separate_64``     a separate minibatch of 64 rows of ``A`` a step (``subset_batch_size=64``)
``buffer_64``       the same with ``threshold_memory="buffer"`` (the value from the buffer, the
                    gradient from the 64 rows)
``aploss``          LibAUC 2.0.1's ``APLoss`` (``margin=1, gamma=0.9``, squared hinge on sigmoid
                    outputs, its per-row state indexed by row) on batches that each hold the
                    data's positive rate, drawn by this file's ``stratified_batches`` in place of
                    LibAUC's ``DualSampler``: ``libauc.sampler`` imports torchvision, and no
                    torchvision wheel matches the CPU torch 2.13 (installing one pulls another
                    torch). LibAUC is not a dependency: ``pip install --no-deps libauc==2.0.1``
                    (its losses need only torch, NumPy and SciPy); without it ``aploss`` is skipped.
==================  ==========================================================================

Threshold (the quantile methods): ``threshold_sd`` is the standard deviation of the per-step
thresholds over the last epoch (``TrainResult.threshold_curve``), in units of the final model's
standard deviation of the training scores (the raw scale of a CNN's scores drifts between runs);
``threshold_recall_sd`` and ``threshold_recall_bias`` map each of those thresholds through the
final model to the recall it gives on the training positives (standard deviation, and mean minus
0.9): an approximation that assumes the model moved little in the last epoch.

Cost: ``seconds`` (the fit's wall time) and ``step_ms`` (wall time per step: the fit's time over
its steps, with the fit's fixed costs; on a GPU, CUDA events around the steps of a timed epoch).

Full run (one core; refuses to overwrite):

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/images.py --out results/images/digits_5seeds.csv

``--quick`` is a seconds-long smoke run (one digit, one seed, batch 32 and full, 2 epochs; the tests use it),
``--device cuda`` runs on a GPU. ``--copies K`` adds K shifted, noisy copies of every training image (a
larger ``A``: with 20, the uncapped rule's minibatch of ``A`` would be 500 rows a step) and ``--channels``
widens the CNN:

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/images.py --digits 3,8,9 --seeds 3 --batch-sizes 32 \
        --methods default,buffer,from_batch,bce --copies 20 --channels 32 --epochs 3 --out results/images/digits_x21_cnn32.csv
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.metrics import average_precision_score
from sklearn.model_selection import train_test_split
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import mean_se, names, out_problem, report  # noqa: E402
from quantile_surrogate import train  # noqa: E402
from quantile_surrogate.metrics import precision_at_recall  # noqa: E402
from quantile_surrogate.objectives import predict_scores  # noqa: E402
from quantile_surrogate.training.subset_size import subset_plan  # noqa: E402

METHODS = ("default", "buffer", "ema", "from_batch", "bce", "focal", "aploss", "separate_64", "buffer_64",
           "bce_stacked", "floor", "floor_stacked", "bce_start")
QUANTILE = {"default": {}, "buffer": {"threshold_memory": "buffer"}, "ema": {"threshold_memory": "ema"},
            "from_batch": {"subset_from_batch": True}, "separate_64": {"subset_batch_size": 64},
            "buffer_64": {"threshold_memory": "buffer", "subset_batch_size": 64}}
DEFAULT_METHODS = METHODS[:7]
"""What a run measures without ``--methods``."""
BATCH_SIZES = ("16", "32", "256", "full")
RECALL = 0.9
REFERENCE_BATCH = 32
"""The full batch takes as many steps as this batch size does."""


class SmallCNN(nn.Module):
    """Conv 3x3 (8 channels), ReLU, 2x2 max pool, then a linear head: (n, 1, 8, 8) images to (n, 1) scores."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(1, channels, 3, padding=1)
        self.head = nn.Linear(channels * 4 * 4, 1)

    def forward(self, x):
        return self.head(F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1))


def digits_task(digit: int):
    """``(X, y)``: the digit images as float32 ``(n, 1, 8, 8)`` in [0, 1], and 1 where the image is ``digit``."""
    data = load_digits()
    X = torch.tensor(data.images / 16.0, dtype=torch.float32).unsqueeze(1)
    return X, torch.tensor(data.target == digit, dtype=torch.long)


def augmented(X: torch.Tensor, y: torch.Tensor, copies: int, seed: int):
    """``X`` and ``copies`` noisy copies of it: each image shifted by up to one pixel each way, plus N(0, 0.1) noise.

    A larger training set (``--copies``) with the same task: ``A`` grows, and with it the uncapped tail
    count rule's separate minibatch of ``A`` per step (500 rows at recall 0.9; the default caps it at the batch).
    """
    if copies == 0:
        return X, y
    g = torch.Generator().manual_seed(seed)
    parts = [X]
    for _ in range(copies):
        shift = torch.randint(-1, 2, (2,), generator=g).tolist()
        noise = 0.1 * torch.randn(X.shape, generator=g, dtype=X.dtype)
        parts.append(torch.roll(X, shifts=shift, dims=(2, 3)) + noise)
    return torch.cat(parts), y.repeat(copies + 1)


def stratified_batches(y: np.ndarray, batch_size: int, rng: np.random.Generator) -> list:
    """One epoch of batches that each hold the data's positive rate (every row once): what ``DualSampler`` fixes.

    The positives and the negatives are shuffled apart and dealt round-robin into
    ``ceil(n / batch_size)`` batches, so batch sizes differ by at most one and positive counts too.
    """
    n_batches = max(1, math.ceil(y.size / batch_size))
    positives, negatives = rng.permutation(np.flatnonzero(y == 1)), rng.permutation(np.flatnonzero(y != 1))
    order = np.concatenate([positives, negatives])
    batches = [order[b::n_batches] for b in range(n_batches)]
    return [rng.permutation(batch) for batch in batches]


def focal_loss(scores, y, alpha=0.25, gamma=2.0):
    r"""``mean -alpha_t (1 - p_t)^gamma log p_t`` (Lin et al. 2017), ``p_t`` the probability of the true class."""
    y = y.to(scores.dtype)
    ce = F.binary_cross_entropy_with_logits(scores, y, reduction="none")
    p_t = torch.exp(-ce)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return (alpha_t * (1 - p_t) ** gamma * ce).mean()


def floor_loss(scores, target, subset_scores=None):
    """Algorithm 1 at its barest: ``mean relu(1 + s_i - q)`` over the negatives, ``q`` the point estimate of ``A``.

    ``q`` is the ``k``-th smallest of ``subset_scores`` (the batch's positives when None, every batch
    score where it holds none), ``k = max(1, floor(0.1 m))`` for recall 0.9, by ``torch.kthvalue``:
    one selection, one hinge, no validation. What any eager quantile step costs at least (``floor``).
    """
    if subset_scores is None:
        subset_scores = scores[target == 1]
        if subset_scores.numel() == 0:
            subset_scores = scores
    k = max(1, math.floor(round((1 - RECALL) * subset_scores.numel(), 6)))
    threshold = torch.kthvalue(subset_scores, k).values
    return F.relu(1 + scores[target == 0] - threshold).mean()


def has_libauc() -> bool:
    try:
        from libauc.losses import APLoss  # noqa: F401
    except ImportError:
        return False
    return True


class _Clock:
    """Wall time of the timed steps: CUDA events on a GPU (no host sync inside the loop), else perf_counter."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.start, self.stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.start.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.stop.record()
            torch.cuda.synchronize()
            self.seconds = self.start.elapsed_time(self.stop) / 1000
        else:
            self.seconds = time.perf_counter() - self.t0


def _loop(model, X, y, method, batch_size, epochs, lr, seed, device) -> tuple[float, int]:
    """The baselines' own training loop; returns (seconds, steps)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    if method == "aploss":
        from libauc.losses import APLoss

        loss_fn = APLoss(data_len=n, margin=1.0, gamma=0.9, device=torch.device(device))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    y_np, steps = y.cpu().numpy(), 0
    stacks = method in ("bce_stacked", "floor_stacked")
    positives, extra = stacked_rows(y_np, batch_size) if stacks else (None, 0)
    stack_rng = np.random.default_rng([seed, 1])  # its own stream: the batches stay bce's
    with _Clock(device) as clock:
        for _ in range(epochs):
            if method == "aploss":
                batches = stratified_batches(y_np, batch_size, rng)
            else:
                batches = np.array_split(rng.permutation(n), max(1, math.ceil(n / batch_size)))
            for rows in batches:
                index = torch.as_tensor(rows, device=device)
                subset_scores = None
                if extra:  # one forward pass over the batch and the stacked positives, as train()'s default
                    stacked = torch.as_tensor(positives[stack_rng.integers(positives.size, size=extra)], device=device)
                    scores = model(X.index_select(0, torch.cat([index, stacked]))).reshape(-1)
                    scores, subset_scores = scores[:index.numel()], scores[index.numel():]
                else:
                    scores = model(X.index_select(0, index)).reshape(-1)
                target = y.index_select(0, index)
                if method in ("bce", "bce_stacked"):
                    loss = F.binary_cross_entropy_with_logits(scores, target.to(scores.dtype))
                elif method == "focal":
                    loss = focal_loss(scores, target)
                elif method in ("floor", "floor_stacked"):
                    loss = floor_loss(scores, target, subset_scores)
                else:
                    loss = loss_fn(torch.sigmoid(scores).reshape(-1, 1), target.reshape(-1, 1).float(), index)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
    return clock.seconds, steps


def stacked_rows(y: np.ndarray, batch_size: int) -> tuple[np.ndarray, int]:
    """``bce_stacked``: (the training positives, how many of them a step stacks), as ``default`` plans it.

    ``train()``'s own plan for precision at recall 0.9 (:func:`~quantile_surrogate.training.subset_size.subset_plan`):
    its separate minibatch of ``A``, or 0 rows where the batch's own rows of ``A`` serve (full batch included).
    """
    positives = np.flatnonzero(y == 1)
    if batch_size >= y.size:
        return positives, 0
    plan = subset_plan(y.size, batch_size, [positives.size], RECALL)
    return positives, plan.size if plan.separate else 0


def _threshold_rows(result, model, X, y) -> dict:
    """The last epoch's per-step thresholds: sd in units of the scores' sd, and the recall each gives on the positives."""
    last = np.asarray(result.threshold_curve[-1], dtype=float) if result.threshold_curve else np.array([])
    scores = predict_scores(model, X).double().cpu().numpy()
    positives = np.sort(scores[y.cpu().numpy() == 1])
    if last.size < 2:
        return dict(threshold_sd=math.nan, threshold_recall_sd=math.nan, threshold_recall_bias=math.nan)
    recall = 1.0 - np.searchsorted(positives, last, side="right") / positives.size
    return dict(threshold_sd=float(last.std(ddof=1) / scores.std()), threshold_recall_sd=float(recall.std(ddof=1)),
                threshold_recall_bias=float(recall.mean() - RECALL))


def fit_one(method, X, y, batch_size, epochs, lr, seed, device, channels=8) -> tuple[nn.Module, dict]:
    """One method's model on ``(X, y)`` and its row of measurements (besides the test metrics)."""
    torch.manual_seed(seed)
    model = SmallCNN(channels).to(device)
    n = X.shape[0]
    full = batch_size is None
    if full:  # as many steps as the reference batch size takes
        epochs = epochs * math.ceil(n / REFERENCE_BATCH)
    if method in QUANTILE or method == "bce_start":
        start_seconds, start_steps = 0.0, 0
        if method == "bce_start":  # half the epochs of BCE, then the default from that model
            start_seconds, start_steps = _loop(model, X, y, "bce", n if full else batch_size, epochs // 2, lr, seed,
                                               device)
            epochs -= epochs // 2
        kwargs = dict(objective="precision_at_recall", target=RECALL, batch_size=batch_size, learning_rate=lr,
                      max_epochs=epochs, random_state=seed, init="model", **QUANTILE.get(method, {}))
        with _Clock(device) as clock:
            result = train(model, X, y, **kwargs)
        steps = start_steps + sum(len(epoch) for epoch in result.threshold_curve)
        return result.model, dict(seconds=start_seconds + clock.seconds, steps=steps,
                                  **_threshold_rows(result, result.model, X, y))
    seconds, steps = _loop(model, X, y, method, n if full else batch_size, epochs, lr, seed, device)
    model.eval()
    return model, dict(seconds=seconds, steps=steps)


def _warm_up(methods, lr, device) -> None:
    """One short untimed fit of every method: the first call of each code path pays for loading and caching."""
    X, y = digits_task(3)
    for method in methods:
        fit_one(method, X[:128].to(device), y[:128].to(device), 32, 1, lr, 0, device)


def run(digits=(3, 8, 9), seeds=range(5), batch_sizes=BATCH_SIZES, methods=DEFAULT_METHODS, epochs=30, lr=0.05,
        device="cpu", progress=False, copies=0, channels=8) -> pd.DataFrame:
    """Every (digit, seed, batch size, method) fit's row (training halves with ``copies`` augmented copies)."""
    rows = []
    _warm_up(methods, lr, device)
    for digit in digits:
        X_all, y_all = digits_task(digit)
        for seed in seeds:
            train_rows, test_rows = train_test_split(np.arange(len(y_all)), test_size=0.5, stratify=y_all.numpy(),
                                                     random_state=seed)
            X, y = augmented(X_all[train_rows], y_all[train_rows], copies, seed)
            X, y = X.to(device), y.to(device)
            X_test, y_test = X_all[test_rows].to(device), y_all[test_rows].numpy()
            for batch in batch_sizes:
                batch_size = None if batch == "full" else int(batch)
                for method in methods:
                    model, row = fit_one(method, X, y, batch_size, epochs, lr, seed, device, channels)
                    scores = predict_scores(model, X_test).double().cpu().numpy()
                    row = dict(digit=digit, seed=seed, batch=batch, method=method,
                               precision=precision_at_recall(y_test, scores, RECALL),
                               average_precision=average_precision_score(y_test, scores), **row)
                    row["step_ms"] = 1000 * row["seconds"] / max(row["steps"], 1)
                    rows.append(row)
                    if progress:
                        print(f"digit {digit} seed {seed} batch {batch} {method}: precision {row['precision']:.3f}, "
                              f"{row['seconds']:.1f} s", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame) -> str:
    """Per batch size and method: mean ± s.e. over digit x seed, and the issue's targets at batch 32."""
    lines = ["| batch | method | precision at recall 0.9 | average precision | threshold sd (score sd) | "
             "recall of the step thresholds: sd | bias | step ms |", "|---|---|---|---|---|---|---|---|"]
    for (batch, method), part in rows.groupby(["batch", "method"], sort=False):
        cells = [mean_se(part[c]) if c in part and part[c].notna().any() else "" for c in
                 ("precision", "average_precision", "threshold_sd", "threshold_recall_sd", "threshold_recall_bias")]
        lines.append(f"| {batch} | {method} | " + " | ".join(cells) + f" | {part['step_ms'].median():.2f} |")
    return "\n".join(lines + [""] + targets(rows))


def targets(rows: pd.DataFrame) -> list:
    """The issue's targets at batch 32, from differences paired over (digit, seed)."""
    def mean_of(batch, method, column):
        part = rows[(rows.batch == batch) & (rows.method == method)]
        return part.set_index(["digit", "seed"])[column]

    out = []
    if "32" not in set(rows.batch):
        return out
    for ours in ("default", "buffer", "bce_start"):
        if ours not in set(rows.method):
            continue
        mine = mean_of("32", ours, "precision")
        for batch, method in (("full", "default"), ("32", "bce"), ("32", "aploss")):
            other = mean_of(batch, method, "precision")
            if len(other):
                out.append(f"- precision, {ours} at batch 32 minus {method} at batch {batch}: "
                           f"{mean_se((mine - other).dropna())}")
    if {"buffer", "from_batch"} <= set(rows.method):
        spread = [mean_of("32", method, "threshold_recall_sd").mean() for method in ("from_batch", "buffer")]
        if spread[1] > 0:
            out.append("- threshold spread (sd of the step thresholds' recall), from_batch / buffer at batch 32: "
                       f"{spread[0] / spread[1]:.2f}x")
    bce = rows[(rows.batch == "32") & (rows.method == "bce")].step_ms.median()
    for method in ("default", "buffer", "from_batch", "bce_stacked", "floor", "floor_stacked"):
        mine = rows[(rows.batch == "32") & (rows.method == method)].step_ms.median()
        if not math.isnan(bce) and not math.isnan(mine):
            out.append(f"- step cost, {method} / bce at batch 32: {mine / bce:.2f}x (median ms per step)")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", default="3,8,9", help="comma-separated digits, each against the rest")
    parser.add_argument("--seeds", type=int, help="splits and model seeds 0.. (default 5; 1 with --quick)")
    parser.add_argument("--batch-sizes", default=",".join(BATCH_SIZES), help="comma-separated from 16,32,256,full")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated from {', '.join(METHODS)} (default: the first seven)")
    parser.add_argument("--epochs", type=int, help="epochs per fit (default 30; 2 with --quick)")
    parser.add_argument("--learning-rate", type=float, default=0.05, help="SGD's learning rate (not aploss's)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--copies", type=int, default=0,
                        help="augmented copies of each training image (shifted, noisy): a larger A (default 0)")
    parser.add_argument("--channels", type=int, default=8, help="the CNN's convolution channels (default 8)")
    parser.add_argument("--quick", action="store_true", help="digit 3, one seed, batch 32 and full, 2 epochs")
    parser.add_argument("--progress", action="store_true", help="print one line per fit")
    parser.add_argument("--out", help="write every fit's row to this new .csv file, and the summary as .md")
    args = parser.parse_args(argv)
    try:
        digits = [int(d) for d in names(args.digits, [str(d) for d in range(10)], "--digits")]
        batch_sizes = names("32,full" if args.quick else args.batch_sizes, BATCH_SIZES, "--batch-sizes")
        methods = names(args.methods, METHODS, "--methods")
    except ValueError as error:
        parser.error(str(error))
    if args.quick:
        digits = digits[:1]
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else 5)
    epochs = args.epochs if args.epochs is not None else (2 if args.quick else 30)
    if seeds < 1 or epochs < 1 or args.copies < 0 or args.channels < 1:
        parser.error("--seeds, --epochs and --channels must be >= 1, --copies >= 0")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no GPU is visible to torch")
    if "aploss" in methods and not has_libauc():
        print("aploss skipped: LibAUC is not installed (pip install --no-deps libauc==2.0.1)", file=sys.stderr)
        methods = [m for m in methods if m != "aploss"]
    problem = None if args.out is None else out_problem(args.out)
    if problem:
        parser.error(problem)
    rows = run(digits, range(seeds), batch_sizes, methods, epochs, args.learning_rate, args.device, args.progress,
               args.copies, args.channels)
    text = summary(rows)
    return report(rows, text, args.out)


if __name__ == "__main__":
    main()
