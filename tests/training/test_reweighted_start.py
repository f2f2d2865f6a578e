"""The reweighted logistic start of a constrained fit (training._reweighted_start), against scikit-learn."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from quantile_surrogate import train
from quantile_surrogate.constraints import gap, rate
from quantile_surrogate.objectives.thresholds import constraint_threshold
from quantile_surrogate.training import _reweighted_start
from quantile_surrogate.training._constrained import GAP_MARGIN as MARGIN
from quantile_surrogate.training._reweighted_start import ROUNDS, STEP

TARGET, BOUND = 0.8, 0.05


def _data(n=1500, seed=0, lift=2.5):
    """The group is not a feature; group 1's positives stand out on the first one (by ``lift``), group 0's on the
    second (by 1): one threshold at recall 0.8 leaves a recall gap, which weighting group 0's positives up narrows
    (the second feature gains weight)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, size=n)
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = np.c_[rng.normal(size=n) + lift * y * g, rng.normal(size=n) + y * (1 - g), rng.normal(size=n)]
    return X, y, g


def _fit_start(X, y, g, constraints, rounds=None, monkeypatch=None):
    """The constrained fit's start (0 epochs) as ``train`` returns it: the reweighted one, or with ``rounds=0``
    the plain one."""
    if rounds is not None:
        monkeypatch.setattr(_reweighted_start, "ROUNDS", rounds)
    model = torch.nn.Linear(X.shape[1], 1, dtype=torch.float64)
    result = train(model, torch.as_tensor(X), torch.as_tensor(y), objective="precision_at_recall", target=TARGET,
                   max_epochs=0, init="logistic", constraints=constraints, groups=torch.as_tensor(g),
                   group_thresholds=False, random_state=0)
    return result


def _start(X, y, g, constraints, rounds=None, monkeypatch=None):
    """The start's ``(coef, intercept)`` (see :func:`_fit_start`)."""
    result = _fit_start(X, y, g, constraints, rounds, monkeypatch)
    return result.model.weight.detach().numpy().ravel(), float(result.model.bias.detach())


def _recall_gap(coef, intercept, X, y, g):
    s = X @ coef + intercept
    t = constraint_threshold(s, y, objective="precision_at_recall", target=TARGET)
    recalls = [(s[(g == k) & (y == 1)] > t).mean() for k in (0, 1)]
    return max(recalls) - min(recalls)


def _reference(X, y, g):
    """The same search in NumPy with scikit-learn's LogisticRegression(C=1) solved to convergence: the kept
    ``(coef, intercept, refits, log-weights)``."""
    n, log_weight, last = len(y), np.zeros((2, 2)), None
    for round_ in range(ROUNDS + 1):
        w = np.exp(log_weight[g, y])
        model = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=w * n / w.sum())
        coef, intercept = model.coef_.ravel(), float(model.intercept_[0])
        s = X @ coef + intercept
        t = constraint_threshold(s, y, objective="precision_at_recall", target=TARGET)
        recalls = np.array([(s[(g == k) & (y == 1)] > t).mean() for k in (0, 1)])
        excess = recalls.max() - recalls.min() - (BOUND - MARGIN)
        if excess <= 0:
            return coef, intercept, round_, log_weight
        if last is not None and excess >= (last - excess) * (ROUNDS - round_):
            break
        last = excess
        log_weight[:, 1] += STEP * (recalls.mean() - recalls)
        log_weight -= log_weight.mean()
    raise AssertionError("the reference search did not meet the gap")


def test_the_start_is_reweighted_until_the_gap_holds_with_the_margin_as_the_scikit_learn_search_does(monkeypatch):
    X, y, g = _data()
    plain = _start(X, y, g, [gap("recall", at_most=BOUND)], rounds=0, monkeypatch=monkeypatch)
    monkeypatch.undo()
    result = _fit_start(X, y, g, [gap("recall", at_most=BOUND)])
    coef, intercept = result.model.weight.detach().numpy().ravel(), float(result.model.bias.detach())
    assert _recall_gap(*plain, X, y, g) > 0.15
    assert _recall_gap(coef, intercept, X, y, g) <= BOUND - MARGIN
    ref_coef, ref_intercept, ref_refits, ref_log_weight = _reference(X, y, g)
    np.testing.assert_allclose(coef, ref_coef, atol=1e-5)
    assert intercept == pytest.approx(ref_intercept, abs=1e-5)
    # The record says what was kept: the refits and each (group, class) weight factor, [negatives, positives].
    record = result.start_reweighting
    assert record["held"] and record["margin"] == MARGIN and record["refits"] == ref_refits > 0
    np.testing.assert_allclose(record["weights"], np.exp(ref_log_weight), rtol=1e-12)
    assert record["weights"][0][1] > 1 > record["weights"][1][1]  # group 0's positives weigh more


def test_a_start_that_holds_the_gap_already_is_the_plain_start_bit_for_bit(monkeypatch):
    X, y, g = _data(lift=0.0)  # both groups alike but for the second feature: a small gap
    constraints = [gap("recall", at_most=0.3)]
    result = _fit_start(X, y, g, constraints)
    reweighted = result.model.weight.detach().numpy().ravel(), float(result.model.bias.detach())
    assert result.start_reweighting == dict(refits=0, held=True, weights=[[1.0, 1.0], [1.0, 1.0]], margin=MARGIN)
    plain = _start(X, y, g, constraints, rounds=0, monkeypatch=monkeypatch)
    assert _recall_gap(*plain, X, y, g) <= 0.3 - MARGIN
    np.testing.assert_array_equal(reweighted[0], plain[0])
    assert reweighted[1] == plain[1]


def test_constraints_other_than_gaps_of_class_rates_leave_the_plain_start(monkeypatch):
    X, y, g = _data()
    for constraints in ([rate("recall", at_least=0.7, in_each_group=True)],
                        [gap("recall", at_most=BOUND), rate("precision", at_least=0.2, in_each_group=True)]):
        assert not _reweighted_start.applies(constraints)
        assert _fit_start(X, y, g, constraints).start_reweighting is None
        reweighted = _start(X, y, g, constraints)
        plain = _start(X, y, g, constraints, rounds=0, monkeypatch=monkeypatch)
        monkeypatch.undo()
        np.testing.assert_array_equal(reweighted[0], plain[0])


def test_a_gap_no_round_meets_falls_back_to_the_plain_start_bit_for_bit(monkeypatch):
    X, y, g = _data()
    plain = _start(X, y, g, [gap("recall", at_most=0.0)], rounds=0, monkeypatch=monkeypatch)
    monkeypatch.undo()
    refits = []
    original = _reweighted_start.fit_logistic
    monkeypatch.setattr(_reweighted_start, "fit_logistic", lambda *a, **k: refits.append(1) or original(*a, **k))
    result = _fit_start(X, y, g, [gap("recall", at_most=0.0)])  # 0 - MARGIN: no start can hold it
    kept = result.model.weight.detach().numpy().ravel(), float(result.model.bias.detach())
    # It searched, and stopped before its last round: once the gap stalls near 0, the last refit's fall times the
    # rounds left cannot bring the excess (the gap + MARGIN) to 0.
    assert 0 < len(refits) < ROUNDS
    assert result.start_reweighting == dict(refits=len(refits), held=False, weights=[[1.0, 1.0], [1.0, 1.0]],
                                            margin=MARGIN)
    np.testing.assert_array_equal(kept[0], plain[0])
    assert kept[1] == plain[1]


def test_a_positive_rate_gap_moves_both_classes_weights_and_a_false_positive_rate_gap_the_negatives():
    def gap(rate, rates, seen=None):  # _gaps' entry: the gap of 0.1 or 0.2 here is above 0.05 - MARGIN
        rates = torch.tensor(rates)
        seen = torch.ones(len(rates), dtype=torch.bool) if seen is None else torch.tensor(seen)
        return rate, float(rates[seen].max() - rates[seen].min()) - (BOUND - MARGIN), rates, seen

    step = _reweighted_start._step([gap("positive_rate", [0.05, 0.15])])
    assert step[:, 1].tolist() == pytest.approx([STEP * 0.025, -STEP * 0.025])
    assert step[:, 0].tolist() == pytest.approx([-STEP * 0.025, STEP * 0.025])
    step = _reweighted_start._step([gap("false_positive_rate", [0.05, 0.15])])
    assert step[:, 1].tolist() == [0.0, 0.0] and step[:, 0].tolist() == pytest.approx([-STEP * 0.05, STEP * 0.05])
    # A gap inside its bound minus the margin moves nothing; an unseen group is not moved.
    assert not _reweighted_start._step([gap("recall", [0.5, 0.51])]).any()
    step = _reweighted_start._step([gap("recall", [0.4, 0.6, 0.0], [True, True, False])])
    assert step[2].tolist() == [0.0, 0.0] and step[0, 1] > 0 > step[1, 1]


@pytest.mark.parametrize("stop", [(0, 3), (1, 2)], ids=["in restart 0", "in restart 1"])
def test_the_reweighting_record_travels_in_the_checkpoint(tmp_path, stop):
    X, y, g = (torch.as_tensor(a) for a in _data())
    settings = dict(objective="precision_at_recall", target=TARGET, max_epochs=5, n_restarts=2, init="mixed",
                    constraints=[gap("recall", at_most=BOUND)], groups=g, group_thresholds=False, random_state=0,
                    validation=tuple(torch.as_tensor(a) for a in _data(600, seed=1)))

    def fit(**extra):
        return train(torch.nn.Linear(3, 1, dtype=torch.float64), X, y, **settings, **extra)

    def interrupt(info):
        if (info["restart"], info["epoch"]) == stop:
            raise KeyboardInterrupt

    reference = fit()
    path = tmp_path / "fit.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(checkpoint=path, callback=interrupt)
    resumed = fit(checkpoint=path)
    assert reference.restart == 0 and reference.start == "logistic"  # the reweighted restart is the one kept
    assert reference.start_reweighting["refits"] > 0 and reference.start_reweighting["held"]
    assert resumed.start_reweighting == reference.start_reweighting
    assert torch.equal(resumed.model.weight, reference.model.weight)


def test_the_search_refits_briefly_and_the_start_kept_is_its_refit_run_to_convergence(monkeypatch):
    calls = []
    original = _reweighted_start.fit_logistic

    def recording(model, X, y, *, alpha, sample_weight=None, **kw):
        calls.append((kw.get("max_iter"), sample_weight.clone()))
        return original(model, X, y, alpha=alpha, sample_weight=sample_weight, **kw)

    monkeypatch.setattr(_reweighted_start, "fit_logistic", recording)
    X, y, g = _data()
    result = _fit_start(X, y, g, [gap("recall", at_most=BOUND)])
    searched, final = calls[:-1], calls[-1]
    assert len(searched) == result.start_reweighting["refits"] >= 1
    assert all(iterations == _reweighted_start.SEARCH_ITERATIONS for iterations, _ in searched)
    assert final[0] is None and torch.equal(final[1], searched[-1][1])  # the last weights, fit_logistic's own limit
