"""train(constraints=...): the penalty and multipliers per epoch, the constraint rows of a minibatch, the best feasible epoch."""

import numpy as np
import pytest
import torch

from quantile_surrogate import train
from quantile_surrogate.constraints import ConstraintSet, gap, rate
from quantile_surrogate.training import _constrained, _reweighted_start
from quantile_surrogate.training._state import TrainingData


@pytest.fixture(autouse=True)
def plain_start(monkeypatch):
    """The multipliers' tests start where the plain logistic start is: no reweighted refit (0 rounds; the reweighted
    start, which would meet these gaps before the first epoch, has tests/training/test_reweighted_start.py)."""
    monkeypatch.setattr(_reweighted_start, "ROUNDS", 0)


def _data(n=1200, seed=0):
    """Group 1's positives rank far more easily: one threshold at recall 0.8 leaves a large recall gap."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, size=n)
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = np.c_[rng.normal(size=n) + y * (0.5 + 2.5 * g), g + 0.0, rng.normal(size=n)]
    return torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(g)


def _gap(model, X, y, g, target=0.8):
    with torch.no_grad():
        s = model(X).reshape(-1).numpy()
    y, g = y.numpy(), g.numpy()
    t = np.quantile(s[y == 1], 1 - target)
    return abs((s[(y == 1) & (g == 0)] > t).mean() - (s[(y == 1) & (g == 1)] > t).mean())


def _fit(X, y, g, constrained=True, **kw):
    settings = dict(objective="precision_at_recall", target=0.8, learning_rate=0.1, max_epochs=150, init="logistic",
                    random_state=0)
    settings.update(kw)
    if constrained:
        settings.update(constraints=[gap("recall", at_most=0.05)], groups=g, group_thresholds=False)
    return train(torch.nn.Linear(3, 1, dtype=torch.float64), X, y, **settings)


def test_a_recall_gap_narrows_at_one_threshold_full_batch():
    X, y, g = _data()
    free = _gap(_fit(X, y, g, constrained=False).model, X, y, g)
    result = _fit(X, y, g, max_epochs=200)
    assert free > 0.25
    # The iterates swing around the bound (the multipliers' game; here the group is a feature, a lever that moves a
    # whole group's recall at once): the last 50 epochs' gaps average 0.064 against 0.29 without the constraint.
    values = [record[0]["value"] for record in result.constraint_curve]
    assert np.mean(values[-50:]) < 0.1 and min(values) <= 0.05
    assert len(result.constraint_curve) == result.n_iter


def test_minibatch_iterates_meet_it_and_the_validation_value_keeps_one_that_does():
    # Minibatch iterates move around the bound (the last one need not meet it); the rows of `validation` pick the best
    # epoch that does: here the training rows themselves, so the kept model meets the gap there.
    X, y, g = _data()
    result = _fit(X, y, g, batch_size=300, validation=(X, y, g), select="validation")
    assert min(result.validation_excess) <= 0 < result.validation_excess[0]
    assert result.validation_excess[result.best_epoch] <= 0
    assert _gap(result.model, X, y, g) <= 0.05 + 1e-9


def test_the_multipliers_follow_the_projected_step_on_each_epochs_exact_excess():
    X, y, g = _data(600)
    result = _fit(X, y, g, max_epochs=30, constraint_step_size=0.7)
    previous = 0.0
    for record in result.constraint_curve:
        (entry,) = record
        assert entry["multiplier"] == pytest.approx(max(0.0, previous + 0.7 * entry["excess"]), abs=1e-12)
        previous = entry["multiplier"]
    assert previous > 0


def test_full_batch_penalty_is_the_constraint_sets_penalty_on_every_row():
    X, y, g = _data(200)
    data = TrainingData(X, y.bool(), y.bool(), constraint_groups=g)
    term = _constrained.ConstraintTerm([gap("recall", at_most=0.05), rate("fpr", at_most=0.2)], data, step_size=1.0,
                                       surrogate="sigmoid", objective="precision_at_recall", target=0.8)
    term.current._multipliers = [torch.tensor([0.7], dtype=torch.float64), torch.tensor([1.3], dtype=torch.float64)]
    reference = ConstraintSet(term.current.constraints, n_groups=2, step_size=1.0, surrogate="sigmoid")
    reference._multipliers = [m.clone() for m in term.current._multipliers]
    scores = X[:, 0].clone()
    threshold = torch.tensor(0.4, dtype=torch.float64)
    torch.testing.assert_close(term.term(scores, None, threshold), reference.penalty(scores, y, 0.4, g))


def test_the_fit_rows_count_a_gap_as_held_only_gap_margin_inside_its_bound():
    # Brute force at a fixed threshold: per-group recalls, the FPR; the gap's excess gains GAP_MARGIN, the rate's none.
    X, y, g = _data(300)
    data = TrainingData(X, y.bool(), y.bool(), constraint_groups=g)
    scores, threshold = X[:, 0].clone(), torch.tensor(0.3, dtype=torch.float64)
    above, positive = (scores > 0.3).numpy(), y.bool().numpy()
    recalls = [above[positive & (g.numpy() == k)].mean() for k in (0, 1)]
    gap_value, fpr = max(recalls) - min(recalls), above[~positive].mean()
    for bound_gap, bound_fpr in ((gap_value, 1.0), (gap_value + 0.005, 1.0), (1.0, fpr - 0.02)):
        term = _constrained.ConstraintTerm([gap("recall", at_most=bound_gap), rate("fpr", at_most=bound_fpr)], data,
                                           step_size=1.0, surrogate="sigmoid", objective="precision_at_recall",
                                           target=0.8)
        expected = max(gap_value - bound_gap + _constrained.GAP_MARGIN, fpr - bound_fpr)
        assert term.fit_excess(scores, threshold) == pytest.approx(expected, abs=1e-12)
    # One margin, the start's and the epoch kept's: the reweighted start reads GAP_MARGIN itself (no copy of its own).
    assert _constrained.GAP_MARGIN == 0.01 and not hasattr(_reweighted_start, "MARGIN")
    assert _reweighted_start.GAP_MARGIN is _constrained.GAP_MARGIN


def test_the_multiplier_step_reads_the_model_on_every_row_at_its_exact_threshold():
    # Brute force: at recall 0.8 the deployed threshold selects the k = ceil(0.8 n+) highest-scoring positives and
    # every negative above the lowest of them (distinct scores); the step reads the gap and the FPR there.
    X, y, g = _data(300)
    data = TrainingData(X, y.bool(), y.bool(), constraint_groups=g)
    term = _constrained.ConstraintTerm([gap("recall", at_most=0.05), rate("fpr", at_most=0.2)], data, step_size=0.5,
                                       surrogate="sigmoid", objective="precision_at_recall", target=0.8)
    model = torch.nn.Linear(3, 1, dtype=torch.float64)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.3, -0.2]], dtype=torch.float64))
        model.bias.zero_()
    s, labels, groups = (X @ torch.tensor([1.0, 0.3, -0.2], dtype=torch.float64)).numpy(), y.numpy(), g.numpy()
    positives = np.sort(s[labels == 1])[::-1]
    lowest = positives[int(np.ceil(0.8 * positives.size)) - 1]
    selected = s >= lowest
    recalls = [selected[(labels == 1) & (groups == k)].mean() for k in (0, 1)]
    fpr = selected[labels == 0].mean()
    term.end_epoch(model)
    (gap_entry, fpr_entry) = term.record
    assert gap_entry["value"] == pytest.approx(max(recalls) - min(recalls), abs=1e-12)
    assert fpr_entry["value"] == pytest.approx(fpr, abs=1e-12)
    assert gap_entry["multiplier"] == pytest.approx(max(0.0, 0.5 * (max(recalls) - min(recalls) - 0.05)), abs=1e-12)
    assert fpr_entry["multiplier"] == pytest.approx(max(0.0, 0.5 * (fpr - 0.2)), abs=1e-12)
    assert model.training  # predict_scores restored the mode


def test_with_a_threshold_per_group_the_multiplier_step_reads_each_groups_exact_threshold():
    # Brute force: at a 30 % rate in each group the thresholds select each group's top ceil(0.3 n_g) rows (distinct
    # scores); the step reads the false positive rate over all rows there, and every row's weight counts.
    X, y, g = _data(400, seed=4)
    w = torch.as_tensor(np.random.default_rng(4).integers(1, 3, size=400)).double()
    data = TrainingData(X, y.bool(), torch.ones(400, dtype=torch.bool), groups=g, weight=w, constraint_groups=g)
    term = _constrained.ConstraintTerm([rate("fpr", at_most=0.1)], data, step_size=1.0, surrogate="sigmoid",
                                       objective="precision_at_rate", target=0.3)
    model = torch.nn.Linear(3, 1, dtype=torch.float64)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.0, 0.5]], dtype=torch.float64))
        model.bias.zero_()
    s, labels, groups, weights = X[:, 0].numpy() + 0.5 * X[:, 2].numpy(), y.numpy(), g.numpy(), w.numpy()
    selected = np.zeros(400, dtype=bool)
    for k in (0, 1):
        rows = np.flatnonzero(groups == k)
        order = rows[np.argsort(-s[rows])]
        mass = np.cumsum(weights[order])
        selected[order[:int(np.searchsorted(mass, 0.3 * weights[rows].sum() - 1e-9)) + 1]] = True
    negatives = labels == 0
    fpr = weights[selected & negatives].sum() / weights[negatives].sum()
    term.end_epoch(model)
    (entry,) = term.record
    assert entry["value"] == pytest.approx(fpr, abs=1e-12)
    assert entry["multiplier"] == pytest.approx(max(0.0, fpr - 0.1), abs=1e-12)


def test_minibatch_constraint_rows_keep_every_cell_and_weigh_it_to_its_size():
    n = 5000
    g = torch.zeros(n, dtype=torch.long)
    g[:20] = 1  # a rare group: 20 rows, 5 of them positive
    y = torch.zeros(n, dtype=torch.bool)
    y[:5] = True
    y[100:1100] = True
    data = TrainingData(torch.zeros(n, 1, dtype=torch.float64), y, y, constraint_groups=g)
    term = _constrained.ConstraintTerm([gap("recall", at_most=0.05)], data, step_size=1.0, surrogate="sigmoid",
                                       objective="precision_at_recall", target=0.8)
    generator = torch.Generator().manual_seed(0)
    rows, weight = term.draw(generator)
    cells = (g[rows] * 2 + y[rows].long())
    sizes = torch.bincount(g * 2 + y.long(), minlength=4).double()
    sums = torch.zeros(4, dtype=torch.float64).index_add(0, cells, weight)
    torch.testing.assert_close(sums, sizes)  # each cell's weights sum to its size
    assert set(rows[cells == 3].tolist()) == set(range(5))  # the rare group's positives, every one, every step
    # The weighted rate of a column over draws is unbiased for its rate on all the rows.
    values = (torch.arange(n) % 3 == 0).double()
    estimates = []
    for _ in range(400):
        rows, weight = term.draw(generator)
        keep = g[rows] == 0
        estimates.append(float((values[rows] * weight)[keep].sum() / weight[keep].sum()))
    assert np.mean(estimates) == pytest.approx(float(values[g == 0].mean()), abs=0.01)


def test_the_same_seed_gives_the_same_model():
    X, y, g = _data(400)
    a, b = (_fit(X, y, g, max_epochs=10, batch_size=100) for _ in range(2))
    for key, value in a.model.state_dict().items():
        assert torch.equal(value, b.model.state_dict()[key])
    assert a.constraint_curve == b.constraint_curve


def test_validation_keeps_the_best_epoch_that_meets_the_constraint_there():
    X, y, g = _data(1600, seed=1)
    n_fit = 1200
    result = _fit(X[:n_fit], y[:n_fit], g[:n_fit], max_epochs=60, validation=(X[n_fit:], y[n_fit:], g[n_fit:]),
                  select="validation", early_stopping=False, n_restarts=2, init="mixed")
    excess = np.array(result.validation_excess)
    curve = np.array(result.validation_curve)
    assert excess.shape == curve.shape == (61,)
    assert excess[0] > 0 and (excess <= 0).any()  # the logistic start violates it; training meets it
    feasible = excess <= 0
    assert feasible[result.best_epoch]
    assert curve[result.best_epoch] == curve[feasible].max()


def test_the_validation_reuses_the_multiplier_steps_scores_with_the_same_result(monkeypatch):
    # Reference: the validation scores the training rows itself every epoch (the scores are never handed over).
    X, y, g = _data(900, seed=3)
    settings = dict(max_epochs=25, batch_size=300, validation=(X[600:], y[600:], g[600:]), select="validation")
    shared = _fit(X[:600], y[:600], g[:600], **settings)
    monkeypatch.setattr(_constrained.ConstraintTerm, "pop_fit_scores", lambda self: None)
    computed = _fit(X[:600], y[:600], g[:600], **settings)
    for key, value in shared.model.state_dict().items():
        assert torch.equal(value, computed.model.state_dict()[key])
    assert shared.validation_excess == computed.validation_excess
    assert shared.validation_curve == computed.validation_curve and shared.best_epoch == computed.best_epoch


def test_bad_constraint_input_is_refused_before_training():
    X, y, g = _data(300)
    one = torch.zeros_like(g)
    model = torch.nn.Linear(3, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="one group only"):
        train(model, X, y, constraints=[gap("recall", at_most=0.05)], groups=one, group_thresholds=False)
    no_positive = g.clone()
    no_positive[(y == 0)] = 2  # group 2 has no positive
    no_positive[(y == 1)] = torch.remainder(torch.arange(int(y.sum())), 2)
    with pytest.raises(ValueError, match="group 2 has no row that the rate counts"):
        train(model, X, y, constraints=[gap("recall", at_most=0.05)], groups=no_positive, group_thresholds=False)
    with pytest.raises(ValueError, match=r"group 2 has no row that the rate counts \(positives: without one"):
        train(model, X, y, constraints=[rate("precision", at_least=0.5, in_each_group=True)], groups=no_positive,
              group_thresholds=False)
    with pytest.raises(ValueError, match="cannot hold together"):
        train(model, X, y, target=0.8, constraints=[rate("recall", at_least=0.9)])
    with pytest.raises(ValueError, match="set no threshold and enter no constraint"):
        train(model, X, y, constraints=[rate("fpr", at_most=0.5)], groups=g, group_thresholds=False)
    with pytest.raises(ValueError, match="is measured per group"):
        train(model, X, y, constraints=[gap("recall", at_most=0.05)])
    with pytest.raises(TypeError, match="built by quantile_surrogate.constraints"):
        train(model, X, y, constraints=["recall gap <= 0.05"])


def test_integer_weights_train_as_repeated_rows_under_constraints():
    X, y, g = _data(300, seed=2)
    w = torch.as_tensor(np.random.default_rng(2).integers(0, 3, size=300))
    repeat = torch.repeat_interleave(torch.arange(300), w)
    settings = dict(max_epochs=15, init="random", constraint_step_size=2.0)
    weighted = _fit(X, y, g, sample_weight=w.double(), **settings)
    repeated = _fit(X[repeat], y[repeat], g[repeat], **settings)
    for key, value in weighted.model.state_dict().items():
        torch.testing.assert_close(value, repeated.model.state_dict()[key])
    assert [r[0]["multiplier"] for r in weighted.constraint_curve] == pytest.approx(
        [r[0]["multiplier"] for r in repeated.constraint_curve])


@pytest.mark.parametrize("batch_size", [None, 300], ids=["full batch", "minibatch"])
@pytest.mark.parametrize("stop", [(0, 5), (1, 3)], ids=["in restart 0", "in restart 1"])
def test_a_constrained_fit_resumes_from_its_checkpoint_bit_identically(tmp_path, batch_size, stop):
    """The multipliers, the records and the validation excesses of every restart travel in the checkpoint."""
    X, y, g = _data(600)
    settings = dict(max_epochs=8, n_restarts=2, batch_size=batch_size, validation=(X[:200], y[:200], g[:200]))
    reference = _fit(X, y, g, **settings)
    path = tmp_path / "fit.pt"

    def interrupt(info):
        if (info["restart"], info["epoch"]) == stop:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _fit(X, y, g, checkpoint=path, callback=interrupt, **settings)
    resumed = _fit(X, y, g, checkpoint=path, **settings)
    assert torch.equal(torch.cat([p.reshape(-1) for p in resumed.model.parameters()]),
                       torch.cat([p.reshape(-1) for p in reference.model.parameters()]))
    assert resumed.constraint_curve == reference.constraint_curve and len(resumed.constraint_curve) == 8
    assert resumed.validation_excess == reference.validation_excess and resumed.restart_losses == reference.restart_losses
    other = dict(settings, constraints=[gap("recall", at_most=0.1)], groups=g, group_thresholds=False)
    with pytest.raises(ValueError, match="other constraints"):
        _fit(X, y, g, constrained=False, checkpoint=path, **other)
