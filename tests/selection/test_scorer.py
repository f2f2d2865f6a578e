"""The one held-out scorer against the public metric and loss computed by hand in float64."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from quantile_surrogate.objectives import get_objective, objective_loss, objective_metric
from quantile_surrogate.selection._scorer import FoldData, HeldOutCurve, held_out_scores, held_out_value

SETTINGS = dict(objective="precision_at_recall", target=0.8, form="fp", quantile="kernel", bandwidth=0.1,
                surrogate="logistic")


def data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(np.int64)
    scores = np.round(rng.normal(size=n) + y, 1)  # rounded: ties
    return y, scores


@pytest.mark.parametrize("weighted, grouped", [(False, False), (True, False), (False, True), (True, True)])
def test_metric_loss_and_average_precision_are_the_public_ones(weighted, grouped):
    y, scores = data()
    w = np.random.default_rng(1).integers(1, 4, len(y)).astype(float) if weighted else None
    codes = (np.arange(len(y)) % 2) if grouped else None
    Xt, yt = torch.as_tensor(scores[:, None]), torch.as_tensor(y)
    in_subset = get_objective("precision_at_recall").subset_mask(yt == 1)
    rows = np.arange(10, len(y))
    held = FoldData(Xt, yt, rows, w, codes, in_subset)
    metric, loss, ap = held_out_scores(torch.as_tensor(scores[rows]), held, SETTINGS, average_precision=True)
    sub = None if w is None else w[rows]
    assert metric == objective_metric(y[rows], scores[rows], objective="precision_at_recall", target=0.8,
                                      groups=None if codes is None else codes[rows], sample_weight=sub)
    kwargs = {}
    s = torch.as_tensor(scores[rows])
    mask = in_subset[rows]
    if codes is not None:
        kwargs.update(groups=torch.as_tensor(codes[rows]), threshold_groups=torch.as_tensor(codes[rows])[mask])
    if w is not None:
        kwargs.update(weight=torch.as_tensor(sub), threshold_weight=torch.as_tensor(sub)[mask])
    expected = objective_loss(s, torch.as_tensor(y[rows]), threshold_scores=s[mask], bandwidth=0.1,
                              objective="precision_at_recall", target=0.8, **kwargs).loss
    assert loss == float(expected)
    assert ap == pytest.approx(average_precision_score(y[rows], scores[rows], sample_weight=sub), rel=1e-12)


def test_a_diverged_model_scores_minus_infinity():
    y, scores = data()
    held = FoldData(torch.as_tensor(scores[:, None]), torch.as_tensor(y), np.arange(len(y)))
    scores[3] = np.nan
    assert held_out_scores(torch.as_tensor(scores), held, SETTINGS, average_precision=True) == (-np.inf, np.inf,
                                                                                                -np.inf)


def test_a_model_is_scored_on_its_rows():
    y, scores = data()
    Xt = torch.as_tensor(scores[:, None])
    held = FoldData(Xt, torch.as_tensor(y), np.arange(len(y)))
    model = torch.nn.Linear(1, 1).double()
    with torch.no_grad():
        model.weight.fill_(2.0)
        model.bias.fill_(1.0)
    assert held_out_value(model, held, SETTINGS) == held_out_scores(torch.as_tensor(2 * scores + 1), held, SETTINGS)


def test_the_curve_computes_the_loss_only_at_a_new_best_and_stops_after_patience():
    y, scores = data()
    held = FoldData.from_labels(y)
    curve = HeldOutCurve(held, dict(SETTINGS), patience=2, lazy_loss=True)
    assert not curve(scores)  # the best so far: a loss
    assert not curve(-scores)  # worse: no loss
    assert curve(-scores)  # two rounds after the best
    values = curve.values()
    assert math.isfinite(values[0, 1]) and math.isnan(values[1, 1])
    expected = objective_loss(torch.as_tensor(scores), torch.as_tensor(y == 1), objective="precision_at_recall",
                              target=0.8, bandwidth=0.1).loss  # the threshold from the rows' own A
    assert values[0, 1] == float(expected)
    assert values[0, 0] == objective_metric(y, scores, objective="precision_at_recall", target=0.8)
