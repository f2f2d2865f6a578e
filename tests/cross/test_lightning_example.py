"""examples/lightning_train.py: a LightningModule on our loss, monitored by torchmetrics (the `lightning` extra)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("lightning", reason="the `lightning` extra is not installed")
pytest.importorskip("torchmetrics", reason="the `lightning` extra is not installed")

from quantile_surrogate.metrics import precision_at_recall  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def load_example():
    spec = importlib.util.spec_from_file_location("lightning_train", ROOT / "examples" / "lightning_train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.mark.filterwarnings("ignore::UserWarning")  # Lightning's advice on worker counts and the like
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_lightning_example_trains_two_epochs_on_cpu(tmp_path):
    torch.set_num_threads(1)
    out = load_example().run(n_samples=4000, epochs=2, batch_size=500, subset_batch_size=300, folder=tmp_path)
    trainer, module = out["trainer"], out["module"]
    assert trainer.current_epoch == 2
    sampler = trainer.train_dataloader.batch_sampler
    assert trainer.global_step == 2 * len(sampler)  # the sampler set the batches; Lightning did not replace it
    # Validation ran (and was logged) once per epoch, each time from a reset metric.
    assert [epoch for epoch, _ in out["history"]] == [0, 1]
    # The logged torchmetrics value is the exact precision at recall 0.95 of the final model.
    module.eval()
    with torch.no_grad():
        scores, labels = zip(*((module(X), y) for X, y in out["val_loader"]))
    expected = precision_at_recall(torch.cat(labels).numpy(), torch.cat(scores).double().numpy(), 0.95)
    logged = float(trainer.callback_metrics["val_precision_at_recall"])
    assert out["history"][-1][1] == pytest.approx(logged)
    assert logged == pytest.approx(expected, abs=1e-6)
    # Trained on the quantile surrogate: thresholded logistic regression (BCE) reaches about 0.14 here,
    # the best line about 0.38. The best epoch is compared (what a checkpoint callback would keep): at
    # recall 0.95 on 1000 validation rows one epoch's value swings by 0.1 or more.
    assert max(precision for _, precision in out["history"]) > 0.25
    assert np.isfinite(float(trainer.callback_metrics["threshold"]))
    assert list(tmp_path.iterdir()) == []  # no logs or checkpoints left behind
