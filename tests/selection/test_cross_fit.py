"""The epoch grid, the starts and the K-fold cross-fitting of one setting."""

import numpy as np
import pytest
import torch

from quantile_surrogate.objectives import get_objective
from quantile_surrogate.selection._cross_fit import (
    EPOCH_GRID,
    build_start,
    cross_fit_selection,
    epoch_grid,
    logistic_restarts,
)
from quantile_surrogate.selection._family_rule import rank_candidates
from quantile_surrogate.selection._out_of_fold_rule import WIN
from quantile_surrogate.selection._scorer import FoldData
from quantile_surrogate.training.models import build_scorer

torch.set_num_threads(1)


def test_the_grid_is_the_start_the_geometric_counts_below_max_and_max():
    assert epoch_grid(1).tolist() == [0, 1]
    assert epoch_grid(200).tolist() == [0, *[e for e in EPOCH_GRID if e < 200], 200]
    assert epoch_grid(7).tolist() == [0, 1, 2, 5, 7]


def test_which_restarts_start_from_logistic_regression():
    assert logistic_restarts("mixed", 3) == [True, False, False]
    assert logistic_restarts("logistic", 2) == [True, True]
    assert logistic_restarts("random", 2) == [False, False]


def test_a_start_is_the_same_in_every_call():
    rng = np.random.default_rng(0)
    Xt, yt = torch.as_tensor(rng.normal(size=(50, 3))), torch.as_tensor((rng.random(50) < 0.4).astype(np.int64))
    data = FoldData(Xt, yt, np.arange(50))
    for logistic in (False, True):
        a, b = (build_start(lambda: build_scorer(3, (4,), None), data, 7, logistic) for _ in range(2))
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def small(init):
    rng = np.random.default_rng(1)
    y = (rng.random(120) < 0.4).astype(np.int64)
    Xt = torch.as_tensor(rng.normal(size=(120, 2)) + y[:, None])
    yt = torch.as_tensor(y)
    settings = dict(objective="precision_at_recall", target=0.8, form="fp", quantile="kernel", bandwidth=0.1,
                    surrogate="logistic", learning_rate=0.1, momentum=0.9, alpha=1e-3, batch_size=None,
                    subset_batch_size=None, subset_from_batch=False, verbose=False)
    in_subset = get_objective("precision_at_recall").subset_mask(yt == 1)
    return cross_fit_selection(lambda: build_scorer(2, (), None), Xt, yt, in_subset, folds=3, seed=0,
                               settings=settings, max_epochs=5, n_restarts=2, init=init)


def test_without_a_logistic_restart_the_plain_argmax_wins():
    sel = small("random")
    assert sel["decided_by"] is None and np.isnan(sel["fold_metric"][:, :, 0]).all()  # a random start: no candidate
    first = rank_candidates(sel["mean_metric"][None], sel["mean_loss"][None], np.zeros(sel["mean_metric"].shape))[0]
    restart, column = np.unravel_index(first, sel["mean_metric"].shape)
    assert (sel["restart"], sel["epochs_"], sel["start"]) == (restart, sel["epochs"][column], "random")


def test_with_a_logistic_restart_the_out_of_fold_rule_decides():
    sel = small("mixed")
    assert np.isfinite(sel["fold_metric"][:, 0, 0]).all() and np.isnan(sel["fold_metric"][:, 1, 0]).all()
    assert np.isneginf(sel["pooled_metric"][1, 0]) and sel["win_share"][0, 0] == 0
    chosen = (sel["restart"], list(sel["epochs"]).index(sel["epochs_"]))
    if sel["decided_by"] == "metric":
        assert sel["win_share"][chosen] >= WIN and sel["pooled_metric"][chosen] > sel["pooled_metric"][0, 0]
    elif sel["decided_by"] == "loss":
        assert chosen == np.unravel_index(np.nanargmin(sel["mean_loss"]), sel["mean_loss"].shape)
    else:
        assert chosen == (0, 0)
    assert sel["rule"].startswith(sel["decided_by"] + ": ")


def test_the_pooled_metric_is_the_metric_of_the_folds_held_out_scores():
    # Rebuild every fold's logistic start by hand, pool its held-out scores, and compare.
    from quantile_surrogate.objectives import objective_metric, predict_scores
    from quantile_surrogate.selection._splits import k_folds
    from quantile_surrogate._utils.seeding import restart_seeds

    rng = np.random.default_rng(1)
    y = (rng.random(120) < 0.4).astype(np.int64)
    Xt, yt = torch.as_tensor(rng.normal(size=(120, 2)) + y[:, None]), torch.as_tensor(y)
    sel = small("mixed")
    pooled = np.empty(120)
    for fit_rows, held_rows in k_folds(y, None, 3, 0):
        start = build_start(lambda: build_scorer(2, (), None), FoldData(Xt, yt, fit_rows), restart_seeds(0, 2)[0][0], True)
        pooled[held_rows] = predict_scores(start, Xt[held_rows]).detach().numpy()
    expected = objective_metric(y, pooled, objective="precision_at_recall", target=0.8)
    assert sel["pooled_metric"][0, 0] == pytest.approx(expected, abs=1e-12)
