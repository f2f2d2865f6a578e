"""train() takes any input a torch.nn.Module takes: images (n, C, H, W), sequences (n, T, d), a dict of tensors,
and a loader of such batches (issue 28, item 0).

The rows are the first dimension; every place that takes rows (full batch, minibatches, the separate minibatch of A
stacked with the batch, validation rows, checkpoints' fingerprint, the probe of the output shape) takes them of any
of these. A matrix reshaped to (n, 1, 1, d) with a model that flattens it trains to the same weights, bit for bit.
"""

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from quantile_surrogate import train
from quantile_surrogate.constraints import gap
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.objectives import predict_scores
from quantile_surrogate.training import LOGISTIC_ROWS_MESSAGE
from quantile_surrogate.training.checkpoint import MISMATCH_MESSAGE
from quantile_surrogate.training.sampling import SubsetBatchSampler
from quantile_surrogate._utils.row_checks import DICT_ROWS_MESSAGE, ROWS_NDIM_MESSAGE
from quantile_surrogate._utils.sparse import as_rows
from tests._benchmarks import load
from tests._messages import exact
from tests.training._helpers import blobs, params

torch.set_num_threads(1)
IMAGES = load("images")  # the small CNN and the digit images of benchmarks/images.py


SmallCNN = IMAGES.SmallCNN
"""Conv 3x3 (8 channels), ReLU, 2x2 max pool, then a linear head: benchmarks/images.py's, the model it measures."""


class ImageAndTable(nn.Module):
    """A model of a dict input: a CNN on ``x["image"]`` plus a linear term of ``x["table"]``."""

    def __init__(self):
        super().__init__()
        self.cnn = SmallCNN(4)
        self.table = nn.Linear(2, 1, bias=False)

    def forward(self, x):
        return self.cnn(x["image"]) + self.table(x["table"])


class DictLinear(nn.Module):
    """``nn.Linear`` of ``x["x"]``: the 2-D problem as a dict input."""

    def __init__(self, d=3):
        super().__init__()
        self.linear = nn.Linear(d, 1)

    def forward(self, x):
        return self.linear(x["x"])


def digits(digit=3):
    """sklearn's 8x8 digits as float32 images (n, 1, 8, 8) in [0, 1], one digit (about 10 %) against the rest."""
    return IMAGES.digits_task(digit)


DIGITS = dict(objective="precision_at_recall", target=0.9, batch_size=32, learning_rate=0.05, random_state=0)


def _precision(model, X, y):
    # as_rows: predict_scores counts a dict's rows by its RowDict's shape[0], as train holds it.
    return precision_at_recall(y.numpy(), predict_scores(model, as_rows(X)).double().numpy(), 0.9)


def test_a_small_cnn_trains_on_digit_images():
    X, y = digits()
    result = train(SmallCNN(), X, y, max_epochs=4, **DIGITS)
    assert result.loss_curve[-1] < 0.5 * result.loss_curve[0]
    start = SmallCNN()
    start.load_state_dict(result.initial_state)
    assert _precision(result.model, X, y) > 0.9 > 0.5 > _precision(start, X, y)


def test_a_model_of_a_dict_input_trains_with_validation():
    X, y = digits()
    table = torch.stack([X.mean((1, 2, 3)), X[:, 0, 3, 3]], 1)
    inputs = {"image": X, "table": table}
    fit, held = torch.arange(0, len(y), 2), torch.arange(1, len(y), 2)
    take = lambda rows: {key: value[rows] for key, value in inputs.items()}  # noqa: E731
    result = train(ImageAndTable(), take(fit), y[fit], max_epochs=3, validation=(take(held), y[held]),
                   **dict(DIGITS, batch_size=64))
    assert result.loss_curve[-1] < result.loss_curve[0]
    assert len(result.validation_curve) == 4 and result.validation_curve[result.best_epoch] > 0.5
    scores = predict_scores(result.model, as_rows(take(held)))  # the trained model takes the dict, as given
    assert scores.shape == (len(held),) and bool(torch.isfinite(scores).all())


SETTINGS = {
    "full batch": dict(),
    "separate minibatch of A": dict(batch_size=32),
    "A_b from the batch": dict(batch_size=32, subset_from_batch=True),
    "groups": dict(batch_size=64, groups=torch.arange(300) % 2),
    "restarts, early stopping": dict(batch_size=50, n_restarts=2, early_stopping=True,
                                                  n_iter_no_change=2),
    "sample weights": dict(batch_size=32, sample_weight=torch.arange(300) % 3),
    "constraints": dict(batch_size=64, groups=torch.arange(300) % 2, group_thresholds=False,
                        constraints=[gap("recall", at_most=0.05)]),
}


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
@pytest.mark.parametrize("form", ["images (n, 1, 1, d)", "dict"])
def test_a_matrix_as_images_or_a_dict_trains_to_the_same_weights(form, settings):
    X, y = blobs()
    Xv, yv = blobs(n=100, seed=1)
    groups_val = (torch.arange(100) % 2,) if "groups" in settings else ()
    common = dict(objective="precision_at_recall", target=0.8, max_epochs=3, learning_rate=0.1, random_state=0,
                  **settings)
    if form == "dict":
        as_input, model = (lambda M: {"x": M}), DictLinear()
    else:
        as_input, model = (lambda M: M.reshape(-1, 1, 1, 3)), nn.Sequential(nn.Flatten(), nn.Linear(3, 1))
    reference = train(nn.Linear(3, 1), X, y, validation=(Xv, yv, *groups_val), **common)
    result = train(model, as_input(X), y, validation=(as_input(Xv), yv, *groups_val), **common)
    assert torch.equal(params(result.model), params(reference.model))
    assert result.loss_curve == reference.loss_curve and result.restart_losses == reference.restart_losses
    assert result.validation_curve == reference.validation_curve


def test_the_logistic_start_needs_a_matrix_and_mixed_starts_at_random_without_one():
    X, y = blobs()
    images = X.reshape(-1, 1, 1, 3)
    flat = lambda: nn.Sequential(nn.Flatten(), nn.Linear(3, 1))  # noqa: E731
    common = dict(max_epochs=2, n_restarts=2, batch_size=50, random_state=0)
    mixed = train(flat, images, y, init="mixed", **common)
    random = train(nn.Linear(3, 1), X, y, init="random", **common)
    assert mixed.start == "random" and torch.equal(params(mixed.model), params(random.model))
    assert train(nn.Linear(3, 1), X, y, init="mixed", **common).restart_losses[0] != random.restart_losses[0]
    with pytest.raises(ValueError, match=exact(LOGISTIC_ROWS_MESSAGE, what="of shape (300, 1, 1, 3)")):
        train(flat, images, y, init="logistic")
    with pytest.raises(ValueError, match=exact(LOGISTIC_ROWS_MESSAGE, what="a dict of tensors")):
        train(DictLinear(), {"x": X}, y, init="logistic")


def test_a_sequence_model_takes_n_t_d_rows():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(200, 5, 2, generator=g, dtype=torch.float64)
    y = (X[:, :, 0].sum(1) > 1.0).long()

    class MeanOverTime(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 1)

        def forward(self, x):
            return self.linear(x).mean(1)

    result = train(MeanOverTime(), X, y, batch_size=32, max_epochs=3, learning_rate=0.1, random_state=0)
    assert result.loss_curve[-1] < result.loss_curve[0]


@pytest.mark.parametrize("form", ["images", "dict"])
def test_images_and_dicts_resume_from_a_checkpoint_bit_identically(tmp_path, form):
    X, y = blobs()
    settings = dict(batch_size=40, n_restarts=2, init="mixed", max_epochs=4, learning_rate=0.1, random_state=5)
    as_input = (lambda M: {"x": M}) if form == "dict" else (lambda M: M.reshape(-1, 1, 1, 3))
    factory = DictLinear if form == "dict" else (lambda: nn.Sequential(nn.Flatten(), nn.Linear(3, 1)))
    reference = train(factory, as_input(X), y, **settings)
    path = tmp_path / "fit.pt"

    def stop(info):
        if (info["restart"], info["epoch"]) == (1, 2):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(factory, as_input(X), y, checkpoint=path, callback=stop, **settings)
    resumed = train(factory, as_input(X), y, checkpoint=path, **settings)
    assert torch.equal(params(resumed.model), params(reference.model))
    other = X.clone()
    other[0, 0] += 1.0
    with pytest.raises(ValueError, match=exact(MISMATCH_MESSAGE, path=str(path), parts="X")):
        train(factory, as_input(other), y, checkpoint=path, **settings)


class DictImages(Dataset):
    """``({"image": x}, y)`` pairs, which a DataLoader collates into a dict of image batches."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"image": self.X[i]}, self.y[i]


class DictCNN(SmallCNN):
    def forward(self, x):
        return super().forward(x["image"])


@pytest.mark.parametrize("form", ["image batches", "image batches with SubsetBatchSampler", "dict batches"])
def test_a_dataloader_of_image_batches_trains(form):
    X, y = digits()
    torch.manual_seed(0)
    if form == "dict batches":
        loader, model = DataLoader(DictImages(X, y), batch_size=64, shuffle=True), DictCNN()
    elif form == "image batches":
        loader, model = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True), SmallCNN()
    else:
        sampler = SubsetBatchSampler(y, 64, subset_batch_size=32, generator=torch.Generator().manual_seed(0))
        loader, model = DataLoader(TensorDataset(X, y), batch_sampler=sampler, collate_fn=sampler.collate), SmallCNN()
    result = train(model, loader, objective="precision_at_recall", target=0.9, max_epochs=3, learning_rate=0.05,
                   random_state=0)
    assert result.loss_curve[-1] < 0.7 * result.loss_curve[0]
    assert _precision(result.model, {"image": X} if form == "dict batches" else X, y) > 0.6


def test_rows_of_another_shape_are_refused_with_a_message_that_says_how():
    X, y = blobs()
    with pytest.raises(ValueError, match=exact(ROWS_NDIM_MESSAGE, name="X", shape=(300,))):
        train(nn.Linear(1, 1), X[:, 0], y)
    with pytest.raises(ValueError, match=exact(DICT_ROWS_MESSAGE, name="X", key="b", rows=299, first="a",
                                               expected=300)):
        train(DictLinear(), {"a": X, "b": X[1:]}, y)
    images = np.zeros((300, 1, 2, 2))
    with pytest.raises(TypeError):  # an array, not a tensor: wrap it with torch.as_tensor
        train(SmallCNN(), images, y)
