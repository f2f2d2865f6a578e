"""Algorithm 1 (quantile_surrogate.training): batches, restarts, starts, stopping, checkpoints."""

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.training.models import fit_logistic, mlp_scorer
from quantile_surrogate.training import (
    TrainingDivergedError,
    constraint_threshold,
    objective_loss,
    predict_scores,
    subset_mask,
    train,
    training_loss,
)

torch.set_num_threads(1)


def blobs(n=300, d=3, prior=0.3, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prior).astype(np.int64)
    X = rng.standard_normal((n, d)) + 1.5 * y[:, None]
    return torch.tensor(X), torch.tensor(y)


def linear(d=3):
    return lambda: torch.nn.Linear(d, 1)


def params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


FAST = dict(learning_rate=0.1, max_epochs=15)


# -- the loop itself ---------------------------------------------------------------------------
@pytest.mark.parametrize("batch_size", [None, 64])
@pytest.mark.parametrize("objective", ["precision_at_recall", "precision_at_rate", "recall_at_fpr"])
def test_training_lowers_the_loss_of_every_objective(objective, batch_size):
    X, y = blobs()
    target = 0.8 if objective == "precision_at_recall" else 0.1
    start = train(linear(), X, y, objective=objective, target=target, max_epochs=1, learning_rate=1e-12,
                  random_state=0)
    result = train(linear(), X, y, objective=objective, target=target, batch_size=batch_size, random_state=0, **FAST)
    assert len(result.loss_curve) == result.n_iter == 15
    assert result.loss < start.loss
    assert not result.model.training
    assert result.loss == pytest.approx(training_loss(result.model, X, y, objective=objective, target=target))


def test_same_seed_is_bit_identical_and_another_seed_differs():
    X, y = blobs()
    a, b, c = (train(linear(), X, y, batch_size=50, random_state=s, **FAST) for s in (3, 3, 4))
    assert torch.equal(params(a.model), params(b.model))
    assert a.loss_curve == b.loss_curve
    assert not torch.equal(params(a.model), params(c.model))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_restarts_never_raise_the_training_loss(seed):
    X, y = blobs(seed=seed)
    one = train(linear(), X, y, n_restarts=1, random_state=seed, batch_size=64, **FAST)
    three = train(linear(), X, y, n_restarts=3, random_state=seed, batch_size=64, **FAST)
    # Restart 0 is the same run in both (seeds depend on the restart index only).
    assert three.restart_losses[0] == one.loss
    assert three.loss == min(three.restart_losses) <= one.loss


def test_the_callers_global_rng_is_left_alone():
    X, y = blobs()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    train(linear(), X, y, n_restarts=2, init="mixed", batch_size=64, random_state=0, **FAST)
    assert torch.equal(torch.get_rng_state(), before)


def test_a_module_template_is_redrawn_for_each_restart():
    X, y = blobs()
    result = train(torch.nn.Linear(3, 1), X, y, n_restarts=2, random_state=0, **FAST)
    assert result.restart_losses[0] != result.restart_losses[1]


def test_mlp_and_a_user_module_train():
    X, y = blobs()
    result = train(lambda: mlp_scorer(3, (8,)), X, y, random_state=0, **FAST)
    assert math.isfinite(result.loss)

    class Scaled(torch.nn.Module):  # any module whose output is (n, 1)
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(3, 1)

        def forward(self, x):
            return 2.0 * self.inner(x)

    assert math.isfinite(train(Scaled, X, y, random_state=0, **FAST).loss)


def trained(built):
    """Inputs seen by the one model that trained (train also builds models only to probe and to load into)."""
    (model,) = [m for m in built if m.inputs]
    return model.inputs


# -- Algorithm 1, step 2: which rows set the threshold ----------------------------------------
class Recorder(torch.nn.Module):
    """A linear model that remembers the inputs of each forward pass."""

    def __init__(self, d):
        super().__init__()
        self.linear = torch.nn.Linear(d, 1)
        self.inputs = []

    def forward(self, x):
        if self.training:
            self.inputs.append(x.detach().clone())
        return self.linear(x)


@pytest.mark.parametrize("objective,in_subset", [
    ("precision_at_recall", lambda flag: flag == 1),
    ("recall_at_fpr", lambda flag: flag == 0),
    ("precision_at_rate", lambda flag: flag >= 0),
])
def test_the_subset_minibatch_comes_from_A_only(objective, in_subset):
    X, y = blobs(n=200)
    X = torch.cat([X, y[:, None].double()], dim=1)  # last column: the label, to see where rows come from
    built = []  # train deep-copies a module template, so record through a factory

    def factory():
        built.append(Recorder(4))
        return built[-1]

    train(factory, X, y, objective=objective, target=0.5, batch_size=50, subset_batch_size=7, max_epochs=2,
          random_state=0)
    inputs = trained(built)
    assert len(inputs) == 2 * 4  # 2 epochs of 200 / 50 batches, one forward pass each
    for x in inputs:
        assert x.shape[0] == 50 + 7
        assert bool(in_subset(x[50:, -1]).all())
    # Over one epoch the subset stream visits distinct rows of A before repeating any.
    a_rows = torch.cat([x[50:] for x in inputs[:4]])
    n_subset = int(subset_mask(y, objective).sum())
    assert torch.unique(a_rows, dim=0).shape[0] == min(28, n_subset)


def test_subset_from_batch_uses_the_batch_rows_of_A():
    X, y = blobs(n=200)
    seen = []

    def quantile(scores, level):
        seen.append(scores.numel())
        return scores.min()

    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    train(factory, X, y, objective="precision_at_recall", target=0.5, batch_size=50, subset_from_batch=True,
          quantile=quantile, max_epochs=1, random_state=0)
    batches = trained(built)
    positives = [int(y[(X[:, None, :] == b[None]).all(-1).any(-1)].sum()) for b in batches]
    assert [x.shape[0] for x in batches] == [50] * 4
    assert seen[:4] == positives  # then one full-batch call for the final training loss


def test_full_batch_is_one_forward_pass_per_epoch():
    X, y = blobs()
    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    train(factory, X, y, batch_size=None, max_epochs=3, random_state=0)
    assert [x.shape[0] for x in trained(built)] == [300] * 3


# -- starts, stopping, validation ---------------------------------------------------------------
def test_logistic_start_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    X, y = blobs()
    model = torch.nn.Linear(3, 1).double()
    fit_logistic(model, X, y, alpha=1 / X.shape[0])
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(X.numpy(), y.numpy())
    np.testing.assert_allclose(model.weight.detach().numpy(), reference.coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.bias.detach().numpy(), reference.intercept_, rtol=1e-4, atol=1e-6)


def test_mixed_init_starts_restart_zero_at_logistic_regression():
    X, y = blobs()
    mixed = train(linear(), X, y, init="mixed", n_restarts=2, max_epochs=1, learning_rate=1e-12, random_state=0)
    logistic = train(linear(), X, y, init="logistic", max_epochs=1, learning_rate=1e-12, random_state=0)
    assert mixed.restart_losses[0] == logistic.loss
    assert mixed.restart_losses[1] != logistic.loss


def test_model_init_starts_from_the_given_parameters_and_zero_epochs_return_the_start():
    X, y = blobs()
    start = torch.nn.Linear(3, 1).double()
    kept = train(start, X, y, init="model", max_epochs=0, random_state=0)
    assert torch.equal(params(kept.model), params(start)) and kept.n_iter == 0 and kept.start == "model"
    logistic = train(linear(), X, y, init="logistic", max_epochs=0, random_state=0)
    reference = torch.nn.Linear(3, 1).double()
    fit_logistic(reference, X, y, alpha=1 / X.shape[0])
    assert torch.allclose(params(logistic.model), params(reference), atol=1e-6)
    assert logistic.start == "logistic"
    assert torch.equal(params(logistic.model), torch.cat([v.reshape(-1) for v in logistic.initial_state.values()]))


def test_early_stopping_on_the_training_loss_stops_early():
    X, y = blobs()
    result = train(linear(), X, y, max_epochs=200, early_stopping=True, n_iter_no_change=3, tol=10.0,
                   random_state=0, learning_rate=0.1)
    assert result.n_iter == 4  # epoch 1 sets the best; 3 epochs fail to beat it by tol


def test_validation_keeps_the_best_epoch():
    X, y = blobs(n=400)
    Xv, yv = blobs(n=200, seed=9)
    result = train(linear(), X, y, objective="precision_at_recall", target=0.9, validation=(Xv, yv),
                   early_stopping=True, n_iter_no_change=5, random_state=0, **FAST)
    from quantile_surrogate.metrics import precision_at_recall

    curve = result.validation_curve
    assert len(curve) == result.n_iter + 1
    assert curve[result.best_epoch] == max(curve)
    kept = precision_at_recall(yv.numpy(), predict_scores(result.model, Xv).numpy(), 0.9)
    assert kept == max(curve)


def test_divergence_raises_and_suggests_a_smaller_learning_rate():
    X, y = blobs()
    with pytest.raises(TrainingDivergedError, match="smaller learning_rate"):
        train(lambda: mlp_scorer(3, (16,)), X, y, learning_rate=1e300, max_epochs=20, random_state=0)


def test_progress_bar_shows_loss_and_threshold(capsys):
    X, y = blobs()
    train(linear(), X, y, max_epochs=3, progress=True, random_state=0)
    err = capsys.readouterr().err
    assert "restart 1/1" in err and "loss=" in err and "threshold=" in err


@pytest.mark.parametrize("kwargs,name", [
    (dict(objective="nope"), "objective"), (dict(target=1.0), "target"), (dict(target=0.0), "target"),
    (dict(form="xx"), "form"), (dict(learning_rate=0.0), "learning_rate"), (dict(momentum=1.0), "momentum"),
    (dict(weight_decay=-1.0), "weight_decay"), (dict(batch_size=0), "batch_size"), (dict(max_epochs=-1), "max_epochs"),
    (dict(n_restarts=0), "n_restarts"), (dict(init="zeros"), "init"), (dict(bandwidth=0.0), "bandwidth"),
    (dict(surrogate="square"), "surrogate"), (dict(quantile="median"), "quantile"),
    (dict(select="validation"), "validation"),
])
def test_bad_arguments_name_themselves(kwargs, name):
    X, y = blobs(n=40)
    with pytest.raises(ValueError, match=name):
        train(linear(), X, y, **kwargs)


def test_bad_data_is_refused():
    X, y = blobs(n=40)
    bad = X.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="`X` contains NaN"):
        train(linear(), bad, y)
    with pytest.raises(ValueError, match="`y`"):
        train(linear(), X, y[:-1])
    with pytest.raises(ValueError, match="subset A"):
        train(linear(), X, torch.zeros_like(y), objective="precision_at_recall")


# -- the exact training threshold ------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=4, max_size=30), st.integers(0, 2**31 - 1),
       st.sampled_from(["precision_at_recall", "precision_at_rate", "recall_at_fpr"]),
       st.floats(0.05, 0.95))
def test_constraint_threshold_is_the_tightest_one_that_holds(values, seed, objective, target):
    scores = np.array(values, dtype=float)  # small integers: many ties
    labels = np.random.default_rng(seed).integers(0, 2, scores.size)
    labels[:2] = [0, 1]
    theta = constraint_threshold(scores, labels, objective=objective, target=target)
    predicted = scores > theta
    if objective == "recall_at_fpr":
        negatives = labels == 0
        allowed = math.floor(round(target * negatives.sum(), 6))
        assert predicted[negatives].sum() <= allowed
        # Lowering theta to the next score below would let in too many negatives or no new row.
        below = scores[scores <= theta]
        if below.size:
            assert (scores[negatives] >= below.max()).sum() > allowed
    else:
        subset = labels == 1 if objective == "precision_at_recall" else np.ones_like(labels, dtype=bool)
        needed = max(math.ceil(round(target * subset.sum(), 6)), 1)
        assert predicted[subset].sum() >= needed
        # Raising theta to the lowest predicted score would break the constraint.
        assert (scores[subset] > scores[predicted].min()).sum() < needed
    assert not np.isin(theta, scores)  # strictly between scores: rounding cannot flip a row


# -- checkpoints ------------------------------------------------------------------------------
CKPT = dict(batch_size=40, n_restarts=2, init="mixed", max_epochs=6, learning_rate=0.1, random_state=5)


def test_checkpoint_resume_after_an_interruption_is_bit_identical(tmp_path):
    X, y = blobs()
    Xv, yv = blobs(n=100, seed=7)
    settings_ = dict(CKPT, validation=(Xv, yv), early_stopping=True, n_iter_no_change=4)
    reference = train(linear(), X, y, **settings_)
    path = tmp_path / "fit.pt"

    def stop_in_restart_one(info):
        if info["restart"] == 1 and info["epoch"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(linear(), X, y, checkpoint=path, callback=stop_in_restart_one, **settings_)
    assert path.exists()
    epochs = []
    resumed = train(linear(), X, y, checkpoint=path, callback=lambda i: epochs.append((i["restart"], i["epoch"])),
                    **settings_)
    assert epochs[0] == (1, 3)  # it went on from where it stopped
    assert torch.equal(params(resumed.model), params(reference.model))
    assert resumed.restart_losses == reference.restart_losses
    assert resumed.loss_curve == reference.loss_curve
    assert [p.name for p in tmp_path.iterdir()] == ["fit.pt"]  # no temporary file left behind
    # A finished checkpoint returns the same result without training again.
    again = train(linear(), X, y, checkpoint=path, callback=lambda i: pytest.fail("trained again"), **settings_)
    assert torch.equal(params(again.model), params(reference.model))


def test_a_checkpoint_from_other_data_is_refused(tmp_path):
    X, y = blobs()
    path = tmp_path / "fit.pt"
    train(linear(), X, y, checkpoint=path, max_epochs=2, random_state=0)
    with pytest.raises(ValueError, match="checkpoint"):
        train(linear(), X + 1, y, checkpoint=path, max_epochs=2, random_state=0)


KILLED_SCRIPT = """
import sys, time, torch
sys.path.insert(0, {tests!r})
from test_training import blobs, linear, CKPT
from quantile_surrogate.training import train
X, y = blobs()
train(linear(), X, y, checkpoint={path!r}, callback=lambda info: time.sleep(0.3), **CKPT)
"""


@pytest.mark.slow
def test_checkpoint_resume_after_a_killed_process_is_bit_identical(tmp_path):
    X, y = blobs()
    reference = train(linear(), X, y, **CKPT)
    path = tmp_path / "fit.pt"
    script = KILLED_SCRIPT.format(tests=os.path.dirname(__file__), path=str(path))
    process = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not path.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert path.exists(), "the child wrote no checkpoint"
        process.kill()  # SIGKILL: no clean-up runs in the child
    finally:
        process.wait()
    resumed = train(linear(), X, y, checkpoint=path, **CKPT)
    assert torch.equal(params(resumed.model), params(reference.model))
    assert resumed.restart_losses == reference.restart_losses


def test_objective_loss_matches_the_named_losses():
    X, y = blobs()
    scores = X[:, 0]
    out = objective_loss(scores, y, objective="recall_at_fpr", target=0.1, threshold_scores=scores[y == 0],
                         quantile="point")
    from quantile_surrogate.losses import recall_at_fpr_loss

    assert torch.equal(out.loss, recall_at_fpr_loss(scores, y, fpr=0.1, quantile="point"))
