"""Train precision at recall 0.95 from a Dataset that reads its rows from a file, one row at a time.

The features are written to a ``.npy`` file on disk in chunks and read back through a
memory map, row by row, by a ``torch.utils.data.Dataset``: the data set is never held in
memory as one tensor. Only the labels (one byte a row) are in memory, because
``SubsetBatchSampler`` needs to know the rows of the subset A (here the positives) to draw
Algorithm 1's separate minibatch of A in every step.

    python examples/train_from_dataset.py
    python examples/train_from_dataset.py --n-samples 200000 --epochs 5 --workers 2

The data are the paper's synthetic mixture (section 5.2), where thresholded logistic
regression reaches a precision of about 0.14 at recall 0.95 and the best line about 0.38.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from quantile_surrogate import metrics
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.objectives import predict_scores
from quantile_surrogate.training import train
from quantile_surrogate.training.sampling import SubsetBatchSampler

CHUNK = 50_000


class RowsOnDisk(Dataset):
    """The rows of a float32 ``.npy`` file, memory-mapped; each item reads one row (and its label)."""

    def __init__(self, path, labels: np.ndarray):
        self.path, self.labels = str(path), labels
        self.rows = None  # opened on first use, so that each worker process opens its own map

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        if self.rows is None:
            self.rows = np.load(self.path, mmap_mode="r")
        row = np.array(self.rows[index])  # copied out of the map: the batch owns its memory
        return torch.from_numpy(row), torch.tensor(self.labels[index])


def write_rows(path: Path, n: int, seed: int) -> np.ndarray:
    """Write ``n`` rows of the mixture to ``path`` chunk by chunk; returns the labels."""
    rows = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, 2))
    labels = np.empty(n, dtype=np.int64)
    for chunk, start in enumerate(range(0, n, CHUNK)):
        stop = min(start + CHUNK, n)
        rows[start:stop], labels[start:stop] = make_gaussian_mixture(stop - start, random_state=(seed, chunk))
    rows.flush()
    del rows
    return labels


def run(n_samples=40_000, epochs=10, batch_size=1000, subset_batch_size=1000, recall=0.95, workers=0, seed=0,
        folder=None) -> dict:
    """Write the data, train from the file, and return the held-out precision at ``recall``."""
    with tempfile.TemporaryDirectory(dir=folder) as temporary:
        path = Path(temporary) / "rows.npy"
        labels = write_rows(path, n_samples, seed)
        sampler = SubsetBatchSampler(labels, batch_size, objective="precision_at_recall",
                                     subset_batch_size=subset_batch_size)
        loader = DataLoader(RowsOnDisk(path, labels), batch_sampler=sampler, collate_fn=sampler.collate,
                            num_workers=workers)
        model = torch.nn.Linear(2, 1)  # float32, as the rows are
        result = train(model, loader, objective="precision_at_recall", target=recall, max_epochs=epochs,
                       learning_rate=0.1, random_state=seed)
    X_test, y_test = make_gaussian_mixture(10_000, random_state=seed + 1)
    scores = predict_scores(result.model, torch.as_tensor(X_test, dtype=torch.float32)).numpy()
    return {"precision": metrics.precision_at_recall(y_test, scores, recall), "loss_curve": result.loss_curve,
            "loss": result.loss}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=40_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--recall", type=float, default=0.95)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = run(args.n_samples, args.epochs, args.batch_size, args.batch_size, args.recall, args.workers, args.seed)
    for epoch, loss in enumerate(out["loss_curve"], 1):
        print(f"epoch {epoch:3d}  mean loss {loss:.4f}")
    print(f"held-out precision at recall {args.recall}: {out['precision']:.3f}")
    return out


if __name__ == "__main__":
    main()
