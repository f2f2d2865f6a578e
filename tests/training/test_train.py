"""Algorithm 1 (quantile_surrogate.training): batches, restarts, starts, stopping, checkpoints."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import quantile_surrogate._utils.checks as validation_module
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.objectives import OBJECTIVES
from quantile_surrogate.objectives.thresholds import TiedScoresWarning, allowed_count
from quantile_surrogate.training.models import fit_logistic, mlp_scorer
from quantile_surrogate.objectives.thresholds import constraint_threshold
from quantile_surrogate.training import (
    TrainingDivergedError,
    objective_loss,
    predict_scores,
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


@pytest.mark.parametrize("rows, label, held", [(10, 0, "one class only"), (10, 1, "one class only"), (0, 0, "no rows")])
def test_a_validation_set_of_one_class_is_refused_before_training(rows, label, held):
    # Its metric is 0/0 at every epoch; it used to surface as "training diverged" after the first one.
    X, y = blobs(n=40)
    with pytest.raises(ValueError, match=rf"`validation\[1\]` holds {held}"):
        train(linear(), X, y, validation=(X[:rows], torch.full((rows,), label)), max_epochs=2, random_state=0)


@pytest.mark.parametrize("kwargs,name", [
    (dict(batch_size=1.5), "batch_size"), (dict(max_epochs=True), "max_epochs"), (dict(n_restarts="2"), "n_restarts"),
    (dict(learning_rate="0.1"), "learning_rate"), (dict(momentum=None), "momentum"), (dict(tol=[1]), "tol"),
])
def test_arguments_of_the_wrong_type_are_type_errors(kwargs, name):
    X, y = blobs(n=40)
    with pytest.raises(TypeError, match=f"`{name}`"):
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
    with pytest.raises(TypeError, match="`X` must be a torch.Tensor"):
        train(linear(), X.numpy(), y)
    with pytest.raises(TypeError, match="`X` must be a floating point tensor"):
        train(linear(), X.long(), y)
    with pytest.raises(TypeError, match="`y` must be a torch.Tensor"):
        train(linear(), X, y.tolist())
    with pytest.raises(ValueError, match="`y` must be binary"):
        train(linear(), X, 2 * y)


def test_finite_check_runs_in_chunks_and_still_finds_nan(monkeypatch):
    monkeypatch.setattr(validation_module, "FINITE_CHECK_VALUES", 14)  # 7 rows of 2 columns a chunk
    X = torch.randn(50, 2, dtype=torch.float64)
    y = (torch.arange(50) % 2).long()
    X[45, 1] = float("inf")  # in the 7th chunk
    with pytest.raises(ValueError, match="`X` contains NaN or inf"):
        train(lambda: torch.nn.Linear(2, 1), X, y, max_epochs=1)
    X[45, 1] = 0.0
    train(lambda: torch.nn.Linear(2, 1), X, y, max_epochs=1)


# -- the exact training threshold ------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=4, max_size=30), st.integers(0, 2**31 - 1),
       st.sampled_from(["precision_at_recall", "precision_at_rate", "recall_at_fpr"]),
       st.floats(0.05, 0.95))
def test_constraint_threshold_is_the_tightest_one_that_holds(values, seed, objective, target):
    scores = np.array(values, dtype=float)  # small integers: many ties
    labels = np.random.default_rng(seed).integers(0, 2, scores.size)
    labels[:2] = [0, 1]
    spec = OBJECTIVES[objective]
    subset = np.asarray(spec.subset_mask(labels == 1))
    k = allowed_count(objective, int(subset.sum()), target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)  # ties may make exactly k impossible
        theta = constraint_threshold(scores, labels, objective=objective, target=target)
    predicted = scores > theta
    if spec.bound == "at_most":  # a ceiling: never more than k rows of A
        assert predicted[subset].sum() <= k
        # Lowering theta to the next score below would let in more than k rows of A.
        below = scores[scores <= theta]
        if below.size:
            assert (scores[subset] >= below.max()).sum() > k
    else:  # a floor: never fewer than k rows of A
        assert predicted[subset].sum() >= k
        # Raising theta to the lowest predicted score would break the constraint.
        assert (scores[subset] > scores[predicted].min()).sum() < k
    assert not np.isin(theta, scores)  # strictly between scores: rounding cannot flip a row


def test_objective_loss_matches_the_named_losses():
    X, y = blobs()
    scores = X[:, 0]
    out = objective_loss(scores, y, objective="recall_at_fpr", target=0.1, threshold_scores=scores[y == 0],
                         quantile="point")
    from quantile_surrogate.losses import recall_at_fpr_loss

    assert torch.equal(out.loss, recall_at_fpr_loss(scores, y, fpr=0.1, quantile="point"))


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
    with pytest.raises(ValueError, match="`validation_weight` weights the rows of `validation`"):
        train(linear(), X, y, validation_weight=w, **common)
