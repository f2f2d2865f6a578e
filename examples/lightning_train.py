"""Precision at recall 0.95 with PyTorch Lightning: our loss in ``training_step``, torchmetrics for monitoring.

The quantile surrogate needs one thing a usual Lightning setup lacks: in every step, a
separate minibatch of the subset A (here the positives) from which the threshold
``theta = q(f(A_b), 1 - recall)`` is estimated (step 2 of Algorithm 1). A
``SubsetBatchSampler`` passed as the training loader's ``batch_sampler`` supplies it; each
batch is then ``((X_b, y_b), (X_a, y_a))``, and ``training_step`` scores both in one forward
pass. Validation uses torchmetrics' ``BinaryPrecisionAtFixedRecall`` (exact, ``thresholds=None``);
no stateful metric of our own is needed.

    pip install "quantile-surrogate[lightning]"
    python examples/lightning_train.py --epochs 10

The data are the paper's synthetic mixture (section 5.2), where thresholded logistic
regression reaches a precision of about 0.14 at recall 0.95 and the best line about 0.38.
"""

from __future__ import annotations

import argparse
import tempfile

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import BinaryPrecisionAtFixedRecall

from quantile_surrogate import PrecisionAtRecallLoss, SubsetBatchSampler
from quantile_surrogate.datasets import make_gaussian_mixture


class PrecisionAtRecallModule(L.LightningModule):
    """A linear scorer trained by SGD on the precision-at-recall quantile surrogate (eq. (7))."""

    def __init__(self, n_features: int, recall: float = 0.95, learning_rate: float = 0.1, momentum: float = 0.9):
        super().__init__()
        self.save_hyperparameters()
        self.model = torch.nn.Linear(n_features, 1)
        self.loss_fn = PrecisionAtRecallLoss(recall)
        self.val_precision = BinaryPrecisionAtFixedRecall(min_recall=recall)
        self.history = []  # (epoch, validation precision at the recall), for the caller

    def forward(self, X):
        return self.model(X).squeeze(-1)

    def training_step(self, batch, batch_idx):
        (X_b, y_b), (X_a, _) = batch
        # One forward pass over the batch and the separate minibatch of A (the positives).
        scores = self(torch.cat([X_b, X_a]))
        loss = self.loss_fn(scores[: len(y_b)], y_b, threshold_scores=scores[len(y_b):])
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(y_b))
        self.log("threshold", self.loss_fn.threshold, on_step=False, on_epoch=True, batch_size=len(y_b))
        return loss

    def validation_step(self, batch, batch_idx):
        X, y = batch
        # Raw scores: torchmetrics squashes scores outside [0, 1] with a sigmoid, a monotone map
        # that leaves the precision at a recall unchanged.
        self.val_precision.update(self(X), y)

    def on_validation_epoch_end(self):
        precision, _ = self.val_precision.compute()
        self.val_precision.reset()
        self.log("val_precision_at_recall", precision)
        self.history.append((self.current_epoch, float(precision)))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate, momentum=self.hparams.momentum)


def loaders(n_samples: int, batch_size: int, subset_batch_size: int, seed: int):
    """The training loader (with Algorithm 1's separate minibatch of positives) and a validation loader."""
    X, y = make_gaussian_mixture(n_samples, random_state=seed)
    X_val, y_val = make_gaussian_mixture(max(n_samples // 4, 1000), random_state=seed + 1)
    train_set = TensorDataset(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y))
    sampler = SubsetBatchSampler(y, batch_size, objective="precision_at_recall", subset_batch_size=subset_batch_size)
    train_loader = DataLoader(train_set, batch_sampler=sampler, collate_fn=sampler.collate)
    val_set = TensorDataset(torch.as_tensor(X_val, dtype=torch.float32), torch.as_tensor(y_val))
    return train_loader, DataLoader(val_set, batch_size=4096)


def run(n_samples=20_000, epochs=10, batch_size=500, subset_batch_size=500, recall=0.95, seed=0, folder=None):
    """Train on CPU for ``epochs`` epochs; returns the module and its validation history."""
    L.seed_everything(seed, verbose=False)  # the sampler draws each epoch's shuffle from the global generator
    train_loader, val_loader = loaders(n_samples, batch_size, subset_batch_size, seed)
    module = PrecisionAtRecallModule(n_features=train_loader.dataset.tensors[0].shape[1], recall=recall)
    with tempfile.TemporaryDirectory(dir=folder) as root:
        trainer = L.Trainer(
            max_epochs=epochs, accelerator="cpu", devices=1, default_root_dir=root, logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
            num_sanity_val_steps=0,
            use_distributed_sampler=False,  # keep SubsetBatchSampler: it decides the batches
        )
        trainer.fit(module, train_loader, val_loader)
    return {"module": module, "trainer": trainer, "history": module.history, "val_loader": val_loader}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--recall", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = run(args.n_samples, args.epochs, args.batch_size, args.batch_size, args.recall, args.seed)
    for epoch, precision in out["history"]:
        print(f"epoch {epoch + 1:3d}  validation precision at recall {args.recall}: {precision:.3f}")
    return out


if __name__ == "__main__":
    main()
