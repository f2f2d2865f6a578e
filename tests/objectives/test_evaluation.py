"""quantile_surrogate.objectives.evaluation: objective_loss and objective_metric, by the objective's name."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.exceptions import UndefinedMetricWarning

from quantile_surrogate import losses, metrics
from quantile_surrogate.objectives import objective_loss, objective_metric
from quantile_surrogate.objectives.evaluation import UNDEFINED_RATE_MESSAGE

from tests._messages import exact


def test_form_reaches_the_rate_loss_only():
    scores = torch.linspace(-1, 1, 50, dtype=torch.float64)
    labels = torch.arange(50) % 3 == 0
    fp = objective_loss(scores, labels, objective="precision_at_rate", target=0.2, form="fp").loss
    tp = objective_loss(scores, labels, objective="precision_at_rate", target=0.2, form="tp").loss
    assert not torch.isclose(fp, tp)
    torch.testing.assert_close(tp, losses.precision_at_rate_loss(scores, labels, rate=0.2, form="tp"))


def test_metric_is_the_exact_metric_at_the_boundary():
    # Recall targets drawn from achievable values j / n_pos: ">=" against ">" matters exactly there.
    y = np.array([1, 0, 1, 0, 1, 1, 0, 0])
    s = np.array([8, 7, 6, 5, 4, 3, 2, 1], dtype=float)
    assert objective_metric(y, s, objective="precision_at_recall", target=0.5) == metrics.precision_at_recall(y, s, 0.5)
    assert metrics.precision_at_recall(y, s, 0.5) == pytest.approx(2 / 3)


def test_grouped_metric_is_nan_with_a_warning_when_undefined():
    # No positive in y: recall at FPR is undefined, not 0.0.
    y = np.zeros(6, dtype=int)
    s = np.arange(6.0)
    groups = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(UndefinedMetricWarning, match=exact(UNDEFINED_RATE_MESSAGE, why="recall: no row is positive")):
        value = objective_metric(y, s, objective="recall_at_fpr", target=0.3, groups=groups)
    assert math.isnan(value)


def test_objective_loss_matches_the_named_losses():
    generator = torch.Generator().manual_seed(0)
    y = (torch.rand(200, generator=generator) < 0.3).long()
    scores = torch.randn(200, generator=generator, dtype=torch.float64) + y
    out = objective_loss(scores, y, objective="recall_at_fpr", target=0.1, threshold_scores=scores[y == 0],
                         quantile="point")
    from quantile_surrogate.losses import recall_at_fpr_loss

    assert torch.equal(out.loss, recall_at_fpr_loss(scores, y, fpr=0.1, quantile="point"))


def test_weighted_grouped_metric_uses_weighted_group_thresholds():
    # Group 0's weight 3 on the row scoring 3 moves its top half (a mass of 3 of 6) above that row: only the row
    # scoring 4 (a negative) is flagged. Unweighted group thresholds would flag the weight-3 positive too (2/3).
    s = np.array([4.0, 3.0, 2.0, 1.0, 4.0, 3.0, 2.0, 1.0])
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    w = np.array([1, 3, 1, 1, 1, 1, 1, 1])
    value = objective_metric(y, s, objective="precision_at_rate", target=0.5, groups=groups, sample_weight=w)
    assert value == pytest.approx(1 / 3)
    repeated = objective_metric(np.repeat(y, w), np.repeat(s, w), objective="precision_at_rate", target=0.5,
                                groups=np.repeat(groups, w))
    assert value == pytest.approx(repeated)
    assert objective_metric(y, s, objective="precision_at_rate", target=0.5, groups=groups) == pytest.approx(0.5)
