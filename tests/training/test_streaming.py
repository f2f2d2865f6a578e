"""train(model, loader): training from a DataLoader or any iterable of batches (quantile_surrogate.training._streaming)."""

import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.objectives import training_loss
from quantile_surrogate.training import train
from quantile_surrogate._utils.seeding import restart_seeds
from quantile_surrogate.training.sampling import SubsetBatchSampler, epoch_batches
from quantile_surrogate._utils.checks import DATA_NONFINITE_MESSAGE
from quantile_surrogate.training._streaming import (BATCH_MESSAGE, BATCH_MISMATCH_MESSAGE, LOADER_NO_SUBSET_MESSAGE,
                                                    NO_ROWS_MESSAGE, SUBSET_BATCH_MESSAGE, UNSUPPORTED_MESSAGE)
from tests._messages import exact, prefix
from tests.training._helpers import blobs, linear, params

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]


def one_epoch_of_batches(X, y, seed, separate):
    """The batches the tensor path draws in restart 0's first epoch, as an iterable of batches."""
    generator = torch.Generator().manual_seed(restart_seeds(seed, 1)[0][1])
    subset_index = torch.nonzero(y == 1).reshape(-1) if separate else None
    batches = epoch_batches(len(y), 50, generator, subset_index=subset_index, subset_size=7)
    if separate:
        return [((X[rows], y[rows]), (X[sub], y[sub])) for rows, sub in batches]
    return [(X[rows], y[rows]) for rows, _ in batches]


@pytest.mark.parametrize("separate", [True, False], ids=["separate minibatch of A", "A_b from the batch"])
def test_an_iterable_of_batches_trains_as_the_tensors_do(separate):
    X, y = blobs()
    settings_ = dict(objective="precision_at_recall", target=0.8, max_epochs=1, learning_rate=0.1, random_state=3)
    tensors = train(linear(), X, y, batch_size=50, subset_batch_size=7, subset_from_batch=not separate, **settings_)
    batches = train(linear(), one_epoch_of_batches(X, y, 3, separate), **settings_)
    assert torch.equal(params(batches.model), params(tensors.model))
    assert batches.loss_curve == tensors.loss_curve
    assert batches.loss == pytest.approx(tensors.loss, rel=1e-12)  # the same rows, scored in another order


def loader(X, y, batch_size=64, subset_batch_size=16, **kwargs):
    sampler = SubsetBatchSampler(y, batch_size, subset_batch_size=subset_batch_size, **kwargs)
    return DataLoader(TensorDataset(X, y), batch_sampler=sampler, collate_fn=sampler.collate)


def test_a_dataloader_fit_is_reproducible_and_lowers_the_loss():
    X, y = blobs()
    settings_ = dict(objective="precision_at_recall", target=0.9, max_epochs=8, learning_rate=0.1)
    a, b = (train(linear(), loader(X, y), random_state=0, **settings_) for _ in range(2))
    c = train(linear(), loader(X, y), random_state=1, **settings_)
    assert torch.equal(params(a.model), params(b.model)) and a.loss_curve == b.loss_curve
    assert not torch.equal(params(a.model), params(c.model))
    start = torch.nn.Linear(3, 1).double()
    start.load_state_dict(a.initial_state)
    target = dict(objective="precision_at_recall", target=0.9)
    # The restart's loss is the full-batch loss over every row the loader gave, and training lowered it.
    assert a.loss == pytest.approx(training_loss(a.model, X, y, **target), rel=1e-12)
    assert a.loss < training_loss(start, X, y, **target) - 0.05


def test_a_shuffling_loader_leaves_the_callers_global_rng_as_it_was():
    # A DataLoader with shuffle=True draws its order from the global RNG: the checking pass, every
    # epoch, the restart's full loss and the validation all run inside train, which must not advance it.
    X, y = blobs()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    shuffled = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
    result = train(linear(), shuffled, max_epochs=2, n_restarts=2, validation=(X, y), random_state=0,
                   learning_rate=0.1)
    assert torch.equal(torch.get_rng_state(), before) and result.n_iter == 2
    again = train(linear(), shuffled, max_epochs=2, n_restarts=2, validation=(X, y), random_state=0,
                  learning_rate=0.1)
    assert torch.equal(params(again.model), params(result.model))  # the shuffles follow random_state


def test_validation_and_early_stopping_work_with_a_loader():
    X, y = blobs()
    Xv, yv = blobs(n=150, seed=9)
    result = train(linear(), loader(X, y), validation=(Xv, yv), early_stopping=True, n_iter_no_change=2,
                   max_epochs=30, learning_rate=0.1, random_state=0, target=0.9)
    assert result.n_iter < 30 and len(result.validation_curve) == result.n_iter + 1
    kept = precision_at_recall(yv.numpy(), result.model(Xv).detach().reshape(-1).numpy(), 0.9)
    assert kept == result.validation_curve[result.best_epoch] == max(result.validation_curve)


@pytest.mark.parametrize("kwargs,name", [
    (dict(init="logistic"), "init"), (dict(init="mixed"), "init"), (dict(groups=torch.zeros(300, dtype=torch.long)),
                                                                      "groups"),
    (dict(checkpoint="fit.pt"), "checkpoint"), (dict(batch_size=10), "batch_size"),
    (dict(subset_batch_size=10), "subset_batch_size"), (dict(subset_from_batch=True), "subset_from_batch"),
])
def test_settings_that_need_all_the_rows_are_refused_with_a_loader(kwargs, name):
    X, y = blobs()
    shown = "..." if name == "groups" else kwargs[name]  # the groups are not printed
    with pytest.raises(ValueError, match=prefix(UNSUPPORTED_MESSAGE, name=name, value=shown)):
        train(linear(), loader(X, y), **kwargs)


def test_bad_batches_are_refused():
    X, y = blobs()
    with pytest.raises(TypeError, match=exact(BATCH_MESSAGE, got="tuple of length 3")):
        train(linear(), [(X, y, y)])
    with pytest.raises(ValueError, match=exact(DATA_NONFINITE_MESSAGE, name="batch 1 X")):
        train(linear(), [(X[:10], y[:10]), (X[10:20] * float("nan"), y[10:20])])
    with pytest.raises(ValueError, match=exact(SUBSET_BATCH_MESSAGE, b=0, subset="positives", objective="precision_at_recall")):
        train(linear(), [((X, y), (X[:5], y[:5]))], objective="precision_at_recall")
    with pytest.raises(ValueError, match=exact(BATCH_MISMATCH_MESSAGE, b=1)):
        train(linear(), [(X[:10], y[:10]), (X[10:20].float(), y[10:20])])
    with pytest.raises(ValueError, match=exact(NO_ROWS_MESSAGE)):
        train(linear(), [])
    with pytest.raises(ValueError, match=exact(LOADER_NO_SUBSET_MESSAGE, subset="positives", objective="precision_at_recall")):
        train(linear(), [(X[y == 0], y[y == 0])])


def test_the_example_trains_from_a_dataset_on_disk(tmp_path):
    spec = importlib.util.spec_from_file_location("train_from_dataset", ROOT / "examples" / "train_from_dataset.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = example.run(n_samples=4000, epochs=4, batch_size=500, subset_batch_size=300, folder=tmp_path)
    # Thresholded logistic regression reaches about 0.14 on this mixture, the best line about 0.38.
    assert out["precision"] > 0.25
    assert out["loss_curve"][-1] < out["loss_curve"][0]
    assert list(tmp_path.iterdir()) == []  # the file was written to a temporary folder, and removed
