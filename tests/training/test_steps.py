"""One epoch of Algorithm 1 (quantile_surrogate.training._steps): the full-batch fast path, and row weights
carried as a column through batches, ``A_b``, the threshold and the loss.

Whole minibatch epochs on weighted rows cannot equal epochs on the rows repeated: the batches
are drawn uniformly over rows, and the repeated data has other rows to draw. What holds, and is
tested here, is the identity step by step: one SGD step (and a pass over fixed batches) on rows
with integer weights is the step on those rows repeated, in every form of ``A_b``. Full-batch
training on integer weights equals training on the repeated rows (tests/cross/test_weights.py).
"""

import numpy as np
import pytest
import torch

from quantile_surrogate.objectives import objective_loss, subset_mask
from quantile_surrogate.training import train
from quantile_surrogate.training._state import TrainingData, TrainingSettings
from quantile_surrogate.training._steps import Batch, EpochSteps
from tests.training._helpers import Recorder, blobs, linear, params, trained

torch.set_num_threads(1)

SETTINGS = dict(objective="precision_at_recall", target=0.8, form="fp", quantile="kernel", bandwidth=0.05,
                surrogate="logistic", learning_rate=0.1, momentum=0.9, weight_decay=0.0, batch_size=None,
                subset_batch_size=None, subset_from_batch=False, max_epochs=1, n_restarts=1, init="random",
                init_alpha=None, early_stopping=False, n_iter_no_change=10, tol=1e-4, select="loss", monitor="metric")


def _steps(X, y, objective, quantile, groups=None, weight=None) -> EpochSteps:
    settings = TrainingSettings(**dict(SETTINGS, objective=objective, quantile=quantile,
                                       target=0.8 if objective == "precision_at_recall" else 0.3))
    labels = y.bool()
    return EpochSteps(settings, TrainingData(X, labels, subset_mask(labels, objective), groups, weight))


def _batch(steps: EpochSteps, rows, subset_rows=None, stacked=False) -> Batch:
    """The batch of ``rows`` (``A_b`` from it, or the separate minibatch ``subset_rows``) with its columns."""
    data = steps.data
    take = lambda column, index: None if column is None else column[index]  # noqa: E731
    columns = dict(groups=take(data.groups, rows), weight=take(data.weight, rows))
    if subset_rows is None:
        return Batch(data.X[rows], data.labels[rows], data.in_subset[rows], **columns)
    X_a = len(subset_rows) if stacked else data.X[subset_rows]
    X = torch.cat([data.X[rows], data.X[subset_rows]]) if stacked else data.X[rows]
    return Batch(X, data.labels[rows], None, X_a, **columns, groups_a=take(data.groups, subset_rows),
                 weight_a=take(data.weight, subset_rows))


def _one_pass(steps: EpochSteps, batches):
    """A model from a fixed start after SGD with momentum over ``batches``; (mean loss, last threshold, parameters)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss, threshold = steps.run_steps(model, optimizer, batches)
    return loss, threshold, params(model)


@pytest.mark.parametrize("objective", ["precision_at_recall", "precision_at_rate", "recall_at_fpr"])
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
@pytest.mark.parametrize("form", ["batch", "separate", "stacked", "groups"])
def test_steps_on_integer_weights_are_the_steps_on_the_rows_repeated(objective, quantile, form):
    X, y = blobs(n=120, seed=4)
    w = torch.as_tensor(np.random.default_rng(1).integers(0, 4, 120)).double()
    w[:10] = 1  # every batch keeps rows of A with weight
    groups = torch.arange(120) % 2 if form == "groups" else None
    weighted = _steps(X, y, objective, quantile, groups, w)
    repeat = torch.repeat_interleave(torch.arange(120), w.long())  # row i, w_i times, in order
    repeated = _steps(X[repeat], y[repeat], objective, quantile, None if groups is None else groups[repeat])
    position = torch.cumsum(w.long(), 0) - w.long()  # where row i's copies start in the repeated data

    def copies(rows):
        return torch.cat([position[i] + torch.arange(int(w[i])) for i in rows.tolist()])

    order = torch.randperm(120, generator=torch.Generator().manual_seed(2))
    subset = torch.nonzero(weighted.data.in_subset).reshape(-1)
    passes = []
    for steps, rows_of in ((weighted, lambda rows: rows), (repeated, copies)):
        batches = []
        for b in range(3):  # three batches of 40 rows; a separate minibatch of 15 rows of A each
            rows = order[40 * b: 40 * (b + 1)]
            subset_rows = None if form in ("batch", "groups") else subset[(torch.arange(15) * 7 + b) % len(subset)]
            batches.append(_batch(steps, rows_of(rows), None if subset_rows is None else rows_of(subset_rows),
                                  stacked=form == "stacked"))
        passes.append(_one_pass(steps, batches))
    (loss_w, threshold_w, params_w), (loss_r, threshold_r, params_r) = passes
    assert loss_w == pytest.approx(loss_r, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(threshold_w, threshold_r, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(params_w, params_r, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("settings", [
    dict(batch_size=32), dict(batch_size=32, subset_from_batch=True), dict(batch_size=32, subset_batch_size=10),
    dict(batch_size=32, objective="precision_at_rate", target=0.2), dict(batch_size=32, grouped=True),
    dict(batch_size=None), dict(batch_size=None, grouped=True), dict(batch_size=32, init="logistic"),
], ids=["separate", "from batch", "subset 10", "rate", "groups", "full batch", "full batch groups", "logistic"])
def test_unit_weights_take_the_unweighted_steps(settings):
    # Weights of one are the unweighted fit: the same batches (the same random draws), the same steps to rounding.
    X, y = blobs(n=240)
    settings = dict(settings)
    groups = torch.arange(240) % 2 if settings.pop("grouped", False) else None
    common = dict(groups=groups, max_epochs=4, learning_rate=0.1, random_state=0, **settings)
    plain = train(linear(), X, y, **common)
    ones = train(linear(), X, y, sample_weight=np.ones(240), **common)
    torch.testing.assert_close(params(ones.model), params(plain.model), rtol=0,
                               atol=1e-6 if settings.get("init") == "logistic" else 1e-12)
    np.testing.assert_allclose(ones.loss_curve, plain.loss_curve, rtol=1e-12)
    assert ones.loss == pytest.approx(plain.loss, rel=1e-6 if settings.get("init") == "logistic" else 1e-12)


@pytest.mark.parametrize("subset_from_batch", [False, True], ids=["separate A_b", "A_b from the batch"])
def test_weights_change_the_minibatch_steps_and_weight_zero_drops_a_row(subset_from_batch):
    # Through train(): the epoch's batches must carry the weights whichever way A_b is taken.
    X, y = blobs(n=240)
    w = np.random.default_rng(0).integers(0, 3, 240).astype(float)
    common = dict(batch_size=32, max_epochs=3, learning_rate=0.1, random_state=0, subset_from_batch=subset_from_batch)
    plain = train(linear(), X, y, **common)
    weighted = train(linear(), X, y, sample_weight=w, **common)
    assert not torch.equal(params(plain.model), params(weighted.model))
    # A row of weight 0 leaves the steps as they were whatever its features (batches are drawn alike).
    X_moved = X.clone()
    X_moved[w == 0] += 100.0
    moved = train(linear(), X_moved, y, sample_weight=w, **common)
    torch.testing.assert_close(params(moved.model), params(weighted.model), rtol=0, atol=1e-12)


@pytest.mark.parametrize("objective, form", [("precision_at_recall", "fp"), ("precision_at_rate", "fp"),
                                             ("precision_at_rate", "tp"), ("recall_at_fpr", "fp")])
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_full_batch_loss_with_fixed_labels_is_objective_loss_bit_for_bit(objective, form, quantile, dtype):
    from quantile_surrogate.losses.general import _FixedLabelsLoss
    from quantile_surrogate.objectives import get_objective, objective_loss

    g = torch.Generator().manual_seed(1)
    scores = torch.randn(3000, dtype=dtype, generator=g).round(decimals=1).requires_grad_()  # ties
    labels = (torch.rand(3000, generator=g) < 0.2).long()
    spec = get_objective(objective)
    fixed = _FixedLabelsLoss(labels, dtype, rate=0.1, subset=spec.subset, penalize=spec.penalized[form],
                             quantile=quantile, bandwidth=0.05, surrogate="logistic")
    a = fixed(scores)
    b = objective_loss(scores, labels, objective=objective, target=0.1, form=form, quantile=quantile, bandwidth=0.05)
    assert torch.equal(a.loss, b.loss) and torch.equal(a.threshold, b.threshold)
    assert torch.equal(torch.autograd.grad(a.loss, scores)[0], torch.autograd.grad(b.loss, scores)[0])


# -- the full-batch epoch: one forward pass, theta from all of A ----------------------------------
def test_full_batch_is_one_forward_pass_per_epoch():
    X, y = blobs()
    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    train(factory, X, y, batch_size=None, max_epochs=3, random_state=0)
    assert [x.shape[0] for x in trained(built)] == [300] * 3


@pytest.mark.parametrize("objective", ["precision_at_recall", "recall_at_fpr"])
def test_the_full_batch_threshold_is_the_quantile_of_A_only(objective):
    X, y = blobs()
    seen = []
    result = train(linear(), X, y, objective=objective, target=0.3, max_epochs=1, random_state=0, callback=seen.append)
    start = torch.nn.Linear(3, 1).double()
    start.load_state_dict(result.initial_state)
    with torch.no_grad():
        scores = start(X).reshape(-1)
    expected = objective_loss(scores, y.bool(), objective=objective, target=0.3,
                              threshold_scores=scores[subset_mask(y, objective)])
    # The first epoch's loss and threshold are those of the start, with theta = q(f(A), 1 - c).
    assert result.loss_curve[0] == pytest.approx(float(expected.loss), rel=1e-12)
    assert seen[0]["threshold"] == pytest.approx(float(expected.threshold), rel=1e-12)
    everyone = objective_loss(scores, y.bool(), objective=objective, target=0.3, threshold_scores=scores)
    assert abs(float(everyone.threshold) - float(expected.threshold)) > 0.05  # all rows would be another threshold


@pytest.mark.parametrize("objective", ["precision_at_recall", "precision_at_rate"])
def test_full_batch_training_is_unchanged_by_the_subset_settings(objective):
    X, y = blobs(n=300, seed=2)
    runs = [train(linear(), X, y, objective=objective, target=0.9, max_epochs=4, random_state=3, **settings)
            for settings in ({}, dict(subset_batch_size=7), dict(subset_from_batch=True))]
    assert all(torch.equal(params(runs[0].model), params(run.model)) for run in runs[1:])
    # ... and is gradient descent on the loss with theta from all of A: one step by hand, bit for bit.
    start = torch.nn.Linear(3, 1).double()
    start.load_state_dict(runs[0].initial_state)
    optimizer = torch.optim.SGD(start.parameters(), lr=0.01, momentum=0.9)
    for _ in range(4):
        optimizer.zero_grad()
        scores = start(X).reshape(-1)
        objective_loss(scores, y.bool(), objective=objective, target=0.9,
                       threshold_scores=scores[subset_mask(y, objective)]).loss.backward()
        optimizer.step()
    assert torch.equal(params(start), params(runs[0].model))


HALF_ROWS = 100_000  # 80 % negatives: a half-precision count of them (80,000) or a rank of A's 100,000 rows is inf
HALF_START = (0.4, -0.2, -0.6)  # weight of each feature, then the bias: the same start in every dtype


def _half_run(X, y, objective, target, dtype):
    model = torch.nn.Linear(2, 1, dtype=dtype)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([HALF_START[:2]]))
        model.bias.fill_(HALF_START[2])
    result = train(model, X.to(dtype), y, objective=objective, target=target, init="model", learning_rate=0.1,
                   max_epochs=3, random_state=0)
    return result.loss_curve, params(result.model).double()


# precision_at_recall: the mean over 80,000 negatives; precision_at_rate at 5 %: ranks of all 100,000 rows
# (95,000 at the level).
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("objective, target", [("precision_at_recall", 0.9), ("precision_at_rate", 0.05)])
def test_full_batch_half_precision_training_on_100000_rows_follows_float32(objective, target, dtype):
    # The model and its scores are in half precision; the quantile's ranks and the loss's counts
    # and sums are taken in float32, so each epoch's loss and the parameters stay within a few
    # half-precision roundings of the float32 run (kept in half, 80,000 is inf: the loss is 0 or NaN).
    rng = np.random.default_rng(0)
    y = torch.as_tensor((rng.random(HALF_ROWS) < 0.2).astype(np.int64))
    X = torch.as_tensor(rng.standard_normal((HALF_ROWS, 2)) + y.numpy()[:, None])
    curve32, params32 = _half_run(X, y, objective, target, torch.float32)
    curve, found = _half_run(X, y, objective, target, dtype)
    eps = torch.finfo(dtype).eps
    assert len(curve) == len(curve32) == 3
    np.testing.assert_allclose(curve, curve32, rtol=2 * eps, atol=0)
    np.testing.assert_allclose(found.numpy(), params32.numpy(), rtol=0, atol=2 * eps)
