"""quantile_surrogate.objectives._registry: the one table of objectives, get_objective and subset_mask."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from quantile_surrogate.objectives import (
    OBJECTIVES,
    get_objective,
    objective_loss,
    objective_metric,
    subset_mask,
)
from quantile_surrogate.objectives._registry import OBJECTIVE_TYPE_MESSAGE, UNKNOWN_OBJECTIVE_MESSAGE
from quantile_surrogate.objectives.thresholds import constraint_threshold

from tests._messages import exact

NAMES = sorted(OBJECTIVES)


def test_registry_rows_match_the_losses_and_metrics_they_name():
    # The record must say what the loss does: A is the subset whose scores set the threshold.
    torch.manual_seed(0)
    scores = torch.randn(200, dtype=torch.float64)
    labels = torch.rand(200) < 0.3
    for name in NAMES:
        spec = OBJECTIVES[name]
        subset = spec.subset_mask(labels)
        direct = spec.loss(scores, labels, **{spec.target_keyword: 0.2}, return_threshold=True)
        explicit = spec.loss(scores, labels, **{spec.target_keyword: 0.2}, threshold_scores=scores[subset],
                             return_threshold=True)
        torch.testing.assert_close(direct.threshold, explicit.threshold)
        torch.testing.assert_close(direct.loss, explicit.loss)
        y = labels.numpy().astype(int)
        assert spec.metric(y, scores.numpy(), 0.2) == objective_metric(y, scores.numpy(), objective=name, target=0.2)


def test_subset_mask_is_the_same_in_numpy_and_torch():
    labels = np.array([1, 0, 1, 1, 0])
    for name in NAMES:
        from_numpy = subset_mask(labels, name)
        from_torch = subset_mask(torch.as_tensor(labels), name)
        np.testing.assert_array_equal(np.asarray(from_numpy), from_torch.numpy())
    np.testing.assert_array_equal(subset_mask(labels, "precision_at_recall"), labels == 1)
    np.testing.assert_array_equal(subset_mask(labels, "recall_at_fpr"), labels == 0)
    assert subset_mask(labels, "precision_at_rate").all()


@pytest.mark.parametrize("call, name", [
    (lambda: get_objective("recall_at_precision"), "recall_at_precision"),
    (lambda: objective_loss(torch.zeros(4), torch.tensor([0, 1, 0, 1]), objective="accuracy", target=0.5), "accuracy"),
    (lambda: objective_metric([0, 1], [0.1, 0.2], objective="accuracy", target=0.5), "accuracy"),
    (lambda: constraint_threshold([0.1, 0.2], [0, 1], objective="recall_at_fpr_typo", target=0.5), "recall_at_fpr_typo"),
])
def test_an_unknown_objective_is_an_error_everywhere(call, name):
    # objective_loss used to fall back to recall at FPR for any unknown name.
    with pytest.raises(ValueError, match=exact(UNKNOWN_OBJECTIVE_MESSAGE, names=NAMES, value=name)):
        call()


def test_a_non_string_objective_is_a_type_error():
    with pytest.raises(TypeError, match=exact(OBJECTIVE_TYPE_MESSAGE, type_name="int")):
        get_objective(3)
