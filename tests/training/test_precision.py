"""Mixed precision and saturated scores: no NaN or inf in a training step's loss or gradients (issue 28, item 3).

A step under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (and float16) scores in half precision; the
quantile estimators take their ranks and weights in float32 and the logistic surrogate is a softplus, which
cannot overflow. Scores of +-1e4 (a saturated model) at batches of 16 and 32 give finite losses and gradients
(each penalised row's gradient is at most 1 in the logistic and hinge surrogates, the threshold's weights sum to 1).
A whole ``train`` call inside one autocast region trains as in float32: autocast's cached half-precision copies
of the parameters are dropped after every step and every L-BFGS iteration of the logistic start
(``training._steps.parameters_changed``); before, every forward pass used the starting parameters.
"""

import itertools

import pytest
import torch

from quantile_surrogate import train
from quantile_surrogate.objectives import subset_mask
from quantile_surrogate.training._state import TrainingData, TrainingSettings
from quantile_surrogate.training._steps import Batch, EpochSteps
from tests.training.test_inputs import SmallCNN, digits

torch.set_num_threads(1)

OBJECTIVES = ["precision_at_recall", "precision_at_rate", "recall_at_fpr"]
QUANTILES = ["kernel", "point", "lower_mean", "interval", "harrell_davis"]
AUTOCAST = {"float32": None, "autocast bfloat16": torch.bfloat16, "autocast float16": torch.float16}


def _data(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, generator=g)
    y = (X[:, 0] + 0.5 * torch.randn(n, generator=g) > 0.8).long()
    y[:2] = torch.tensor([1, 0])  # both classes in every batch
    return X, y


def _steps(objective, quantile, surrogate, groups=None, n=32) -> EpochSteps:
    X, y = _data(n)
    settings = TrainingSettings(
        objective=objective, target=0.9 if objective == "precision_at_recall" else 0.1, form="fp",
        quantile=quantile, bandwidth=0.05, surrogate=surrogate, learning_rate=1e-3, momentum=0.9, weight_decay=1e-4,
        batch_size=None, subset_batch_size=None, subset_from_batch=False, max_epochs=1, n_restarts=1, init="random",
        init_alpha=None, early_stopping=False, n_iter_no_change=10, tol=1e-4, select="loss", monitor="metric")
    labels = y.bool()
    return EpochSteps(settings, TrainingData(X, labels, subset_mask(labels, objective), groups))


def _saturated_model(scale):
    """A linear model whose scores are about +-``scale`` (a saturated classifier's logits at scale 1e4)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    with torch.no_grad():
        model.weight.mul_(scale / model.weight.abs().sum())
        model.bias.zero_()
    return model


def _one_step(steps: EpochSteps, model, dtype, separate: bool):
    """One step of Algorithm 1 on all the rows (A_b from the batch, or the rows of A as a separate minibatch)."""
    data = steps.data
    groups = data.groups
    if separate:
        batch = Batch(data.X, data.labels, None, data.X[data.subset_index], groups=groups,
                      groups_a=None if groups is None else data.subset_groups)
    else:
        batch = Batch(data.X, data.labels, data.in_subset, groups=groups)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    context = torch.autocast("cpu", dtype=dtype) if dtype is not None else torch.autocast("cpu", enabled=False)
    with context:
        loss, threshold = steps.step(model, optimizer, batch)
    return loss, threshold, [p.grad for p in model.parameters()]


@pytest.mark.parametrize("dtype", AUTOCAST.values(), ids=AUTOCAST.keys())
@pytest.mark.parametrize("scale", [1.0, 1e4], ids=["scores ~ 1", "saturated scores ~ 1e4"])
@pytest.mark.parametrize("n", [16, 32])
def test_a_step_has_a_finite_loss_and_gradients(dtype, scale, n):
    failures = []
    for objective, quantile, surrogate, grouped, separate in itertools.product(
            OBJECTIVES, QUANTILES, ["logistic", "hinge"], [False, True], [False, True]):
        groups = torch.arange(n) % 2 if grouped else None
        steps = _steps(objective, quantile, surrogate, groups, n)
        model = _saturated_model(scale)
        loss, threshold, grads = _one_step(steps, model, dtype, separate)
        finite = bool(torch.isfinite(loss)) and bool(torch.isfinite(threshold).all()) \
            and all(bool(torch.isfinite(g).all()) for g in grads) \
            and all(bool(torch.isfinite(p).all()) for p in model.parameters())
        if not finite:
            failures.append((objective, quantile, surrogate, grouped, separate, float(loss)))
    assert not failures


def test_saturated_scores_still_give_a_gradient():
    """At +-1e4 the logistic surrogate's gradient is sigmoid(margin), 1 on the negatives above the threshold."""
    steps = _steps("precision_at_recall", "kernel", "logistic")
    model = _saturated_model(1e4)
    loss, _, grads = _one_step(steps, model, None, separate=False)
    assert float(loss) > 1.0 and float(grads[0].abs().sum()) > 0.1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("batch_size", [None, 16, 32], ids=["full batch", "batch 16", "batch 32"])
def test_training_inside_autocast_stays_finite_and_tracks_float32(dtype, batch_size):
    X, y = digits()
    X, y = X[:600], y[:600]
    settings = dict(objective="precision_at_recall", target=0.9, batch_size=batch_size, max_epochs=3,
                    learning_rate=0.05, random_state=0)
    reference = train(SmallCNN(), X, y, **settings)
    with torch.autocast("cpu", dtype=dtype):
        result = train(SmallCNN(), X, y, **settings)
    curve = torch.tensor(result.loss_curve + [result.loss])
    assert bool(torch.isfinite(curve).all())
    if batch_size is not None:  # three full-batch steps move the loss little, in float32 too
        assert result.loss_curve[-1] < 0.9 * result.loss_curve[0]
    assert result.loss_curve == pytest.approx(reference.loss_curve, rel=0.05)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_the_logistic_start_inside_autocast_fits_as_in_float32(dtype):
    from tests.training._helpers import blobs, params

    X, y = blobs()
    X = X.float()
    reference = train(torch.nn.Linear(3, 1), X, y, init="logistic", max_epochs=0, random_state=0)
    with torch.autocast("cpu", dtype=dtype):
        result = train(torch.nn.Linear(3, 1), X, y, init="logistic", max_epochs=0, random_state=0)
    assert torch.allclose(params(result.model), params(reference.model), atol=0.05)


@pytest.mark.parametrize("batch_size", [16, 32])
def test_training_from_saturated_scores_stays_finite(batch_size):
    X, y = _data(400)
    result = train(_saturated_model(1e4), X, y, objective="precision_at_recall", target=0.9, batch_size=batch_size,
                   init="model", max_epochs=2, learning_rate=1e-4, random_state=0)
    assert bool(torch.isfinite(torch.tensor(result.loss_curve + [result.loss])).all())
