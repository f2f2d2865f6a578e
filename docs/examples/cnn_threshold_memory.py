"""A small CNN trained for precision at recall 0.9 on 8x8 digit images, with and without the threshold's memory.

Run from the repository root (about a minute on one core):

    python docs/examples/cnn_threshold_memory.py

scikit-learn's bundled digits (no download), digit 3 against the rest (10 % positives), a
stratified half/half split with seed 0; the CNN of ``benchmarks/images.py`` (conv 3x3 with 8
channels, ReLU, 2x2 max pool, a linear head), ``batch_size=32``, 30 epochs, SGD with learning
rate 0.05 and momentum 0.9, three ways:

- ``threshold_memory="buffer"``: each step's threshold is the quantile of its own positives'
  scores together with those of the last 10 steps (kept relative to each step's mean score), its
  gradient the step's own estimate's;
- ``subset_from_batch=True``: Algorithm 1 from the batch alone, about 3 positives per step
  (their minimum, mostly);
- the default: the separate minibatch of ``A`` of the tail count rule, here every training
  positive, scored with the batch at every step.

It prints, for each, the test precision at recall 0.9 and the mean and spread of the last
epoch's thresholds, each mapped through the final model to the recall it gives on the training
positives (a step's threshold trains the model; the one to deploy is set afterwards on held-out
scores, :mod:`quantile_surrogate.guarantees`). It writes
``cnn_threshold_memory.png`` beside this file: every step's threshold (left) and the last
epoch's thresholds as recalls (right).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.images import SmallCNN, digits_task  # noqa: E402
from quantile_surrogate import train  # noqa: E402
from quantile_surrogate._utils.files import atomic_write  # noqa: E402
from quantile_surrogate.metrics import precision_at_recall  # noqa: E402
from quantile_surrogate.objectives import predict_scores  # noqa: E402

RUNS = {
    "buffer (threshold_memory)": dict(threshold_memory="buffer"),
    "from the batch alone": dict(subset_from_batch=True),
    "default (all positives every step)": dict(),
}


def main(epochs=30, out=Path(__file__).with_suffix(".png")):
    torch.manual_seed(0)
    X_all, y_all = digits_task(3)
    train_rows, test_rows = train_test_split(np.arange(len(y_all)), test_size=0.5, stratify=y_all.numpy(),
                                             random_state=0)
    X, y = X_all[train_rows], y_all[train_rows]
    X_test, y_test = X_all[test_rows], y_all[test_rows].numpy()
    start = SmallCNN()
    figure, (steps_axis, recall_axis) = plt.subplots(1, 2, figsize=(11, 4))
    for name, settings in RUNS.items():
        result = train(start, X, y, objective="precision_at_recall", target=0.9, batch_size=32, learning_rate=0.05,
                       max_epochs=epochs, init="model", random_state=0, **settings)
        thresholds = np.array([t for epoch in result.threshold_curve for t in epoch])
        positives = np.sort(predict_scores(result.model, X).double().numpy()[y.numpy() == 1])
        last = np.asarray(result.threshold_curve[-1])
        recalls = 1 - np.searchsorted(positives, last, side="right") / positives.size
        test_scores = predict_scores(result.model, X_test).double().numpy()
        print(f"{name:36s} test precision at recall 0.9 {precision_at_recall(y_test, test_scores, 0.9):.3f}; "
              f"the last epoch's thresholds as training recalls: mean {recalls.mean():.3f}, "
              f"sd {recalls.std(ddof=1):.3f}")
        steps_axis.plot(thresholds, lw=0.8, label=name)
        recall_axis.plot(recalls, marker=".", lw=0.8, label=name)
    steps_axis.set(xlabel="step", ylabel="threshold (score)", title="Every step's threshold")
    recall_axis.axhline(0.9, color="black", lw=0.8, ls="--")
    recall_axis.set(xlabel="step of the last epoch", ylabel="recall on the training positives",
                    title="Last epoch's thresholds, through the final model")
    steps_axis.legend(), recall_axis.legend()
    figure.tight_layout()
    # Through a temporary file: an interrupted run leaves the old picture or the new one, never half of one.
    atomic_write(out, lambda path: figure.savefig(path, dpi=110, format="png"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
