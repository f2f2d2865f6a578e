"""The restart loop (quantile_surrogate.training._loop): restarts, starts, early stopping, validation,
eval-mode scoring, the progress bar and the one divergence error."""

import io
import math
import re
import sys
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from quantile_surrogate._utils.errors import DIVERGED_MESSAGE, TrainingDivergedError
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.objectives import objective_loss, predict_scores, training_loss
from quantile_surrogate.training import VALIDATION_WEIGHT_MESSAGE, train
from quantile_surrogate.training._loop import LOSS_GROWTH_MESSAGE, PROGRESS_SUMMARY_MESSAGE, parameters_finite
from quantile_surrogate.training.models import fit_logistic, mlp_scorer
from tests._messages import exact, prefix
from tests.training._helpers import blobs, linear, params

torch.set_num_threads(1)


# -- the loop itself ---------------------------------------------------------------------------
FAST = dict(learning_rate=0.1, max_epochs=15)

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

class Scaled(torch.nn.Module):
    """A user's module whose output is (n, 1)."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(3, 1)

    def forward(self, x):
        return 2.0 * self.inner(x)

@pytest.mark.parametrize("factory", [lambda: mlp_scorer(3, (8,)), Scaled], ids=["mlp", "user module"])
def test_mlp_and_a_user_module_train(factory):
    X, y = blobs()
    result = train(factory, X, y, random_state=0, **FAST)
    start = factory().double()
    start.load_state_dict(result.initial_state)
    settings_ = dict(objective="precision_at_recall", target=0.95)
    # The reported loss is the full-batch loss of the returned parameters, and training lowered it.
    assert result.loss == pytest.approx(training_loss(result.model, X, y, **settings_), rel=1e-12)
    assert result.loss < training_loss(start, X, y, **settings_) - 0.01

@pytest.mark.parametrize("template", [linear(), torch.nn.Linear(3, 1)], ids=["factory", "module"])
def test_restart_zero_follows_random_state_not_the_global_rng(template):
    X, y = blobs()
    runs = []
    for global_seed, random_state in ((1, 7), (2, 7), (1, 8)):
        torch.manual_seed(global_seed)
        # Full batch: the random start is the only random choice.
        runs.append(train(template, X, y, max_epochs=2, random_state=random_state))
    a, b, c = runs
    assert all(torch.equal(a.initial_state[k], b.initial_state[k]) for k in a.initial_state)
    assert torch.equal(params(a.model), params(b.model))
    assert not torch.equal(a.initial_state["weight"], c.initial_state["weight"])

class DropoutScorer(nn.Module):
    """An MLP with dropout that records, for every forward pass, (autograd on, training mode)."""

    def __init__(self, d=3):
        super().__init__()
        self.hidden, self.drop, self.out = nn.Linear(d, 16), nn.Dropout(0.5), nn.Linear(16, 1)
        self.modes = []

    def forward(self, x):
        self.modes.append((torch.is_grad_enabled(), self.training))
        return self.out(self.drop(torch.tanh(self.hidden(x))))

def test_scoring_is_in_eval_mode_and_training_steps_in_train_mode():
    X, y = blobs()
    Xv, yv = blobs(n=150, seed=9)
    built = []

    def factory():
        built.append(DropoutScorer())
        return built[-1]

    result = train(factory, X, y, validation=(Xv, yv), batch_size=100, max_epochs=3, learning_rate=0.1, random_state=0)
    modes = [mode for model in built for mode in model.modes]
    # A pass with autograd is a training step (dropout on); one without is scoring (dropout off).
    assert {grad for grad, _ in modes} == {True, False}
    assert all(training == grad for grad, training in modes)
    # The reported loss and validation values are those of the deterministic (eval-mode) model.
    with torch.no_grad():
        scores, val_scores = result.model(X).reshape(-1), result.model(Xv).reshape(-1)
    expected = objective_loss(scores, y.bool(), objective="precision_at_recall", target=0.95,
                              threshold_scores=scores[y == 1]).loss
    assert result.loss == pytest.approx(float(expected), rel=1e-12)
    assert result.validation_curve[result.best_epoch] == precision_at_recall(yv.numpy(), val_scores.numpy(), 0.95)


# -- starts, stopping, validation ---------------------------------------------------------------
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

@pytest.mark.parametrize("select", ["validation", "loss"])
def test_validation_keeps_the_best_epoch_of_the_best_restart(select):
    X, y = blobs(n=300)
    Xv, yv = blobs(n=150, seed=9)
    recorded = []

    def separation(y_true, scores):
        """A continuous validation value (no ties, so the validation loss never decides)."""
        return float((scores[y_true == 1].mean() - scores[y_true == 0].mean()) / scores.std())

    def metric(y_true, scores):
        recorded.append(separation(y_true, scores))
        return recorded[-1]

    result = train(linear(), X, y, validation=(Xv, yv), validation_metric=metric, select=select, n_restarts=3,
                   batch_size=64, max_epochs=6, learning_rate=0.3, random_state=0)
    per_restart = np.array(recorded).reshape(3, 7)  # restart by restart: the start, then 6 epochs
    if select == "validation":
        assert result.restart == int(np.argmax(per_restart.max(axis=1)))
    else:
        assert result.restart == int(np.argmin(result.restart_losses))
    assert result.validation_curve == per_restart[result.restart].tolist()
    assert result.best_epoch == int(np.argmax(per_restart[result.restart]))
    kept = separation(yv.numpy(), predict_scores(result.model, Xv).numpy())
    assert kept == pytest.approx(per_restart[result.restart].max(), rel=1e-12)
    assert len(set(per_restart.max(axis=1).round(12))) == 3  # the restarts differ: the choice was real

@pytest.mark.parametrize("objective", ["precision_at_recall", "precision_at_rate"])
def test_validation_weights_count_as_repeated_validation_rows(objective):
    X, y = blobs(n=200)
    Xv, yv = blobs(n=60, seed=5)
    w = torch.randint(0, 4, (60,), generator=torch.Generator().manual_seed(0))
    w[:2] = 1
    rows = torch.repeat_interleave(torch.arange(60), w)
    common = dict(objective=objective, target=0.2, max_epochs=6, learning_rate=0.1, random_state=0)
    weighted = train(linear(), X, y, validation=(Xv, yv), validation_weight=w, **common)
    repeated = train(linear(), X, y, validation=(Xv[rows], yv[rows]), **common)
    plain = train(linear(), X, y, validation=(Xv, yv), **common)
    np.testing.assert_allclose(weighted.validation_curve, repeated.validation_curve, rtol=1e-12)
    assert weighted.validation_curve != plain.validation_curve  # the weights matter here
    with pytest.raises(ValueError, match=exact(VALIDATION_WEIGHT_MESSAGE)):
        train(linear(), X, y, validation_weight=w, **common)


# -- divergence and progress --------------------------------------------------------------------
def test_divergence_raises_the_one_error_naming_the_epoch_and_a_smaller_learning_rate():
    X, y = blobs()
    with pytest.raises(TrainingDivergedError, match=prefix(DIVERGED_MESSAGE, what="the loss or the parameters")) as info:
        train(lambda: mlp_scorer(3, (16,)), X, y, learning_rate=1e300, max_epochs=20, random_state=0)
    error = info.value
    assert re.fullmatch(r"at epoch \d+ of restart 0", error.where)
    assert (error.what, error.learning_rate) == ("the loss or the parameters", 1e300)
    assert str(error) == DIVERGED_MESSAGE.format(what="the loss or the parameters", where=error.where,
                                                 rate=" (learning_rate=1e+300)", smaller=", e.g. 1e+299",
                                                 remedy="standardise the features")


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 4)), min_size=1, max_size=4),
       bad=st.sampled_from([None, math.nan, math.inf, -math.inf]), where=st.integers(0, 10**6),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.float16]), seed=st.integers(0, 2**16))
def test_parameters_finite_agrees_with_isfinite_on_every_tensor(shapes, bad, where, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    module = nn.Module()
    for i, shape in enumerate(shapes):  # empty tensors included (a dimension of 0)
        module.register_parameter(f"p{i}", nn.Parameter((1e3 * torch.randn(shape, generator=generator)).to(dtype)))
    sizes = [p.numel() for p in module.parameters()]
    if bad is not None and sum(sizes):
        flat = where % sum(sizes)
        for p, size in zip(module.parameters(), sizes):
            if flat < size:
                with torch.no_grad():
                    p.view(-1)[flat] = bad
                break
            flat -= size
    reference = all(bool(torch.isfinite(p).all()) for p in module.parameters())
    assert parameters_finite(module) is reference
    assert reference is (bad is None or sum(sizes) == 0)


def test_the_cpu_loop_names_sgds_per_tensor_path_which_takes_the_defaults_steps_bit_for_bit(monkeypatch):
    # foreach=None resolves to the per-tensor loop on the CPU; the loop names it (cheaper), nothing else changes.
    seen = []
    original = torch.optim.SGD

    def recording(*args, **kwargs):
        seen.append(kwargs.get("foreach", "absent"))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "SGD", recording)
    X, y = blobs()
    train(linear(), X, y, max_epochs=2, random_state=0)
    assert seen and set(seen) == {False}
    monkeypatch.undo()
    a, b = linear()(), linear()()
    b.load_state_dict(a.state_dict())
    named = original(a.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3, foreach=False)
    default = original(b.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        grads = [torch.randn(p.shape, generator=generator) for p in a.parameters()]
        for model, optimizer in ((a, named), (b, default)):
            for p, g in zip(model.parameters(), grads):
                p.grad = g.clone()
            optimizer.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_a_loss_that_grows_a_billion_fold_warns_once_naming_the_learning_rate():
    # Full batch: epoch 1's loss is the start's (1.94); one step at 1e11 makes it about 2e10 at epoch 2,
    # finite, so nothing raises; 1e3 (120-fold) stays below the factor and is silent.
    X, y = blobs()
    common = dict(max_epochs=4, random_state=0)
    with pytest.warns(RuntimeWarning) as record:
        result = train(lambda: nn.Linear(3, 1, dtype=torch.float64), X, y, learning_rate=1e11, **common)
    curve = result.loss_curve
    growth = [w for w in record if str(w.message).startswith(LOSS_GROWTH_MESSAGE.split("{")[0])]
    assert len(growth) == 1 and curve[1] > 1e9 * curve[0] and growth[0].filename == __file__
    assert str(growth[0].message) == LOSS_GROWTH_MESSAGE.format(
        growth=curve[1] / curve[0], first=curve[0], loss=curve[1], epoch=2, restart=0, learning_rate=1e11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(lambda: nn.Linear(3, 1, dtype=torch.float64), X, y, learning_rate=1e3, **common)


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, as tqdm's ``disable=None`` asks."""

    def isatty(self):
        return True


def test_on_a_terminal_the_progress_bar_shows_loss_and_threshold(monkeypatch):
    X, y = blobs()
    monkeypatch.setattr(sys, "stderr", _Terminal())
    train(linear(), X, y, max_epochs=3, verbose=True, random_state=0)
    err = sys.stderr.getvalue()
    assert "restart 1/1" in err and "loss=" in err and "threshold=" in err and "\r" in err
    assert "training loss" not in err  # the bar, not the summary line


def test_into_a_file_or_pipe_verbose_writes_one_summary_line_per_restart(capsys):
    # pytest's captured stderr is no terminal, as a scheduler's log is not: no carriage-return frames.
    X, y = blobs()
    result = train(linear(), X, y, max_epochs=3, n_restarts=2, verbose=True, random_state=0)
    err = capsys.readouterr().err
    lines = [PROGRESS_SUMMARY_MESSAGE.format(restart=r + 1, n_restarts=2, epochs=3, max_epochs=3, loss=loss)
             for r, loss in enumerate(result.restart_losses)]
    assert err.splitlines() == lines
    train(linear(), X, y, max_epochs=3, random_state=0)  # not verbose: silent
    assert capsys.readouterr().err == ""


def test_without_epochs_to_run_there_is_no_empty_bar(monkeypatch):
    # max_epochs=0 (a refit that keeps its start): tqdm's only frame would be "restart 1/1: 0it"; the
    # summary line says what happened instead, on a terminal too.
    X, y = blobs()
    monkeypatch.setattr(sys, "stderr", _Terminal())
    result = train(linear(), X, y, max_epochs=0, verbose=True, random_state=0)
    assert sys.stderr.getvalue() == PROGRESS_SUMMARY_MESSAGE.format(restart=1, n_restarts=1, epochs=0, max_epochs=0,
                                                                    loss=result.loss) + "\n"
