"""The binomial start rule: QuantileClassifierCV's families and QuantileClassifier's validation split.

Unit tests on constructed fold arrays (``select_over_start``, ``metric_noise``), then end to end on
the validation-split path: data where logistic regression is already the best linear rule (the
start must stay) and the README's mixture, where it is far from it (training must be kept). The
K-fold path of QuantileClassifier has its own rule: tests/selection/test_out_of_fold_rule.py.
"""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.selection._start_rule import (
    clears_bar,
    keep_start_unless_gain,
    metric_noise,
    metric_noises,
    select_over_start,
    select_rounds,
)
from tests._data import shifted_gaussians

torch.set_num_threads(1)

START = np.array([0.50, 0.60, 0.55])


def folds(*gains):
    """Fold metrics of shape (3, 1 + len(gains)): column 0 the start, column j the start + gains[j - 1]."""
    return np.stack([START] + [START + np.asarray(g, dtype=float) for g in gains], axis=1)


# -- select_over_start on constructed folds ---------------------------------------------------------
def test_gains_within_their_fold_to_fold_noise_keep_the_start():
    # Mean +0.043, paired s.e. 0.047: the argmax of the mean (the rule before) would leave the start.
    metric = folds([0.10, -0.05, 0.08], [0.0, 0.0, -0.01])
    choice, record = select_over_start(metric, np.zeros_like(metric), (0,), [0.0] * 3, 1.0)
    assert choice == (0,)
    assert record["mean_gain"][1] == pytest.approx(0.13 / 3)
    assert record["gain_se"][1] == pytest.approx(np.std([0.10, -0.05, 0.08], ddof=1) / np.sqrt(3))


def test_equal_fold_gains_below_the_binomial_floor_keep_the_start():
    # One row of 13 on every fold: the paired s.e. is 0, but the metric's own noise is not.
    metric = folds([1 / 13] * 3)
    noise = [metric_noise("precision_at_rate", 0.05, np.r_[np.ones(30), np.zeros(230)], p) for p in START]
    choice, record = select_over_start(metric, np.zeros_like(metric), (0,), noise, 2.0)
    assert record["gain_se"][1] == pytest.approx(0.0, abs=1e-12)
    assert record["noise_floor"] == pytest.approx(np.sqrt(np.sum(np.square(noise))) / 3)
    assert choice == (0,)
    assert select_over_start(metric, np.zeros_like(metric), (0,), [0.0] * 3, 2.0)[0] == (1,)  # no floor: it leaves


def test_a_clear_gain_leaves_the_start_for_the_largest_eligible_gain():
    metric = folds([0.20, 0.25, 0.22], [0.30, 0.31, 0.29], [0.80, -0.20, 0.50])  # the last: large but noisy
    choice, record = select_over_start(metric, np.zeros_like(metric), (0,), [0.02] * 3, 2.0)
    assert record["mean_gain"][3] > record["mean_gain"][2]  # the noisy one has the largest mean ...
    assert choice == (2,)  # ... but is not eligible; of the two that are, the larger gain


def test_a_tie_between_eligible_candidates_goes_to_the_lower_loss_and_the_bar_is_strict():
    metric = folds([0.2] * 3, [0.2] * 3)
    loss = np.tile([1.0, 0.7, 0.5], (3, 1))
    assert select_over_start(metric, loss, (0,), [0.01] * 3, 2.0)[0] == (2,)
    floor = 0.1 / 2.0  # sigma_0 = sqrt(3 * s^2) / 3 = s / sqrt(3); a gain of exactly z * sigma_0 does not pass
    s = floor * np.sqrt(3)
    exact = folds([0.1] * 3)
    assert select_over_start(exact, np.zeros_like(exact), (0,), [s] * 3, 2.0 * (1 + 1e-9))[0] == (0,)
    assert select_over_start(exact, np.zeros_like(exact), (0,), [s] * 3, 2.0 * (1 - 1e-9))[0] == (1,)


def test_zero_standard_errors_is_the_argmax_with_ties_to_the_start():
    metric = folds([0.0] * 3, [0.01, -0.02, 0.02])  # a tie, and a noisy +0.0033
    loss = np.tile([1.0, 0.1, 0.5], (3, 1))
    assert select_over_start(metric, loss, (0,), [0.05] * 3, 0.0)[0] == (2,)
    assert select_over_start(folds([0.0] * 3), loss[:, :2], (0,), [0.05] * 3, 0.0)[0] == (0,)


def test_candidates_that_do_not_exist_or_diverged_are_never_chosen():
    metric = np.stack([START, np.full(3, np.nan), np.full(3, -np.inf)], axis=1)
    choice, _ = select_over_start(metric, np.zeros_like(metric), (0,), [0.0] * 3, 0.0)
    assert choice == (0,)


def test_the_start_may_sit_anywhere_in_a_multi_dimensional_candidate_grid():
    metric = np.zeros((3, 2, 3))
    metric[:, 1, 0] = START  # the start is restart 1, epoch 0
    metric[:, 0, 2] = START + 0.3
    choice, record = select_over_start(metric, np.zeros_like(metric), (1, 0), [0.01] * 3, 2.0)
    assert choice == (0, 2) and record["mean_gain"][1, 0] == 0.0


def test_the_candidates_own_noise_widens_the_floor():
    # 47_yeast at 5 %, split 14: 13 held-out rows at the operating point per fold. A random restart trained 100
    # epochs scored (8, 6, 7) / 13 against the start's (7, 2, 5) / 13: mean gain 0.179, paired s.e. 0.068, the
    # start's floor 0.0725 (bar 0.145: it passed, and lost 0.21 on test); with its own noise the floor is
    # sqrt(sum_k var_start + var_candidate) / 3 = 0.107 and the bar 0.215.
    y = np.r_[np.ones(25), np.zeros(235)]  # ceil(0.05 * 260) = 13 rows at the top
    start, candidate = np.array([7, 2, 5]) / 13, np.array([8, 6, 7]) / 13
    metric = np.stack([start, candidate], axis=1)
    noise = [metric_noise("precision_at_rate", 0.05, y, p) for p in start]
    own = metric_noises("precision_at_rate", 0.05, y, metric)
    assert select_over_start(metric, np.zeros_like(metric), (0,), noise, 2.0)[0] == (1,)
    choice, record = select_over_start(metric, np.zeros_like(metric), (0,), noise, 2.0, own)
    expected = np.sqrt(np.sum(start * (1 - start) / 13 + candidate * (1 - candidate) / 13)) / 3
    assert choice == (0,) and record["floor"][1] == pytest.approx(expected)
    assert record["bar"][1] == pytest.approx(2 * expected) and record["noise_floor"] == pytest.approx(0.0725, abs=1e-4)
    # A clear gain still passes: (12, 12, 12) / 13 against the same start.
    clear = np.stack([start, np.full(3, 12 / 13)], axis=1)
    assert select_over_start(clear, np.zeros_like(clear), (0,), noise, 2.0,
                             metric_noises("precision_at_rate", 0.05, y, clear))[0] == (1,)


@pytest.mark.parametrize("objective, target", [("precision_at_rate", 0.05), ("precision_at_recall", 0.9),
                                               ("recall_at_fpr", 0.05)])
def test_metric_noises_is_metric_noise_of_each_value(objective, target):
    y = np.r_[np.ones(30), np.zeros(230)]
    w = np.random.default_rng(0).integers(1, 4, y.size)
    values = np.array([[0.0, 0.2, 0.6], [1.0, np.nan, 0.95]])
    for weight in (None, w):
        got = metric_noises(objective, target, y, values, weight)
        assert got.shape == values.shape and np.isnan(got[1, 1])
        for i, v in np.ndenumerate(values):
            if not np.isnan(v):
                assert got[i] == pytest.approx(metric_noise(objective, target, y, v, weight), rel=1e-12)


# -- metric_noise --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective, target, expected_rows", [
    ("precision_at_rate", 0.05, 13),  # ceil(0.05 * 260) rows at the top
    ("precision_at_recall", 0.9, 27 / 0.6),  # ceil(0.9 * 30) true positives at precision 0.6
    ("recall_at_fpr", 0.05, 30),  # a recall: a proportion of the 30 positives
])
def test_metric_noise_is_the_binomial_standard_error_over_the_metric_rows(objective, target, expected_rows):
    y = np.r_[np.ones(30), np.zeros(230)]
    assert metric_noise(objective, target, y, 0.6) == pytest.approx(np.sqrt(0.6 * 0.4 / expected_rows))


@pytest.mark.parametrize("objective, target", [("precision_at_rate", 0.05), ("precision_at_recall", 0.9),
                                               ("recall_at_fpr", 0.05)])
def test_metric_noise_counts_integer_weights_as_repeated_rows(objective, target):
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(30), np.zeros(230)]
    w = rng.integers(0, 4, y.size)
    weighted = metric_noise(objective, target, y, 0.6, sample_weight=w)
    assert weighted == pytest.approx(metric_noise(objective, target, np.repeat(y, w), 0.6), rel=1e-12)
    assert weighted != pytest.approx(metric_noise(objective, target, y, 0.6))  # the weights matter here


def test_metric_noise_matches_a_simulated_precision_at_rate():
    # The precision of the top K rows when each is positive with probability p: Binomial(K, p) / K.
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(100), np.zeros(900)]
    draws = rng.binomial(50, 0.3, size=200_000) / 50
    assert metric_noise("precision_at_rate", 0.05, y, 0.3) == pytest.approx(draws.std(), rel=0.01)


def test_metric_noise_stays_positive_at_a_perfect_held_out_value():
    y = np.r_[np.ones(20), np.zeros(180)]
    assert metric_noise("precision_at_rate", 0.05, y, 1.0) == pytest.approx(np.sqrt(0.05 * 0.95 / 10))


# -- end to end -------------------------------------------------------------------------------------------
def test_validation_split_keeps_the_start_unless_the_gain_is_real():
    X, y = shifted_gaussians(10_500, seed=2)  # above AUTO_VALIDATION_ROWS: a validation split
    kept = QuantileClassifier(target=0.9, max_epochs=3, n_restarts=1, random_state=0).fit(X, y)
    assert kept.selection_["start_kept"] and kept.best_epoch_ == 0
    assert kept.selection_["decided_by"] == "start" and kept.selection_["rule"].startswith("start: the validation gain")
    assert abs(kept.selection_["validation_gain"]) < 2 * kept.selection_["noise_floor"]
    X, y = make_gaussian_mixture(10_500, random_state=0)
    left = QuantileClassifier(target=0.9, max_epochs=20, n_restarts=1, random_state=0).fit(X, y)
    assert not left.selection_["start_kept"] and left.best_epoch_ > 0
    assert left.selection_["decided_by"] == "metric" and " is above 2 x " in left.selection_["rule"]
    assert left.selection_["validation_gain"] > 2 * left.selection_["noise_floor"]
    off = QuantileClassifier(target=0.9, max_epochs=20, n_restarts=1, selection_se=0.0, random_state=0).fit(X, y)
    assert off.selection_ is None  # selection_se=0: the validation split alone decides, as before


def test_kfold_selection_trains_and_scores_each_fold_with_the_weights():
    # Fold 0's logistic start, fitted on that fold's weighted rows and scored with the held-out weights,
    # rebuilt here from fit_logistic and the weighted metric: the selection's epoch-0 entry must equal it.
    from sklearn.model_selection import StratifiedKFold

    from quantile_surrogate.objectives import objective_metric, predict_scores
    from quantile_surrogate._utils.seeding import restart_seeds, seed_torch
    from quantile_surrogate.training.models import fit_logistic, linear_scorer

    X, y = shifted_gaussians(600, 3)
    w = np.random.default_rng(0).integers(1, 5, len(y)).astype(float)
    settings = dict(objective="precision_at_rate", target=0.1, max_epochs=5, n_restarts=1, random_state=0)
    clf = QuantileClassifier(**settings).fit(X, y, sample_weight=w)
    plain = QuantileClassifier(**settings).fit(X, y)
    Xt = torch.as_tensor((X - clf.mean_) / clf.scale_)
    fit_rows, held_rows = next(StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros((len(y), 1)), y))
    seed_torch(restart_seeds(0, 1)[0][0])
    start = linear_scorer(X.shape[1]).double()
    weight = torch.as_tensor(w[fit_rows])
    fit_logistic(start, Xt[fit_rows], torch.as_tensor(y[fit_rows]), alpha=1 / float(weight.sum()), sample_weight=weight)
    scores = predict_scores(start, Xt[held_rows]).numpy()
    expected = objective_metric(y[held_rows], scores, objective="precision_at_rate", target=0.1,
                                sample_weight=w[held_rows])
    assert clf.selection_["fold_metric"][0, 0, 0] == pytest.approx(expected, abs=1e-12)
    assert clf.selection_["fold_metric"][0, 0, 0] != plain.selection_["fold_metric"][0, 0, 0]  # weights matter


def test_validation_split_scores_its_rows_with_their_weights():
    # early_stopping=True: a validation split whatever the size; epoch 0 of the logistic restart is the
    # weighted start scored on the validation rows with their weights, rebuilt here by hand.
    from quantile_surrogate.objectives import objective_metric, predict_scores
    from quantile_surrogate._utils.seeding import restart_seeds, seed_torch
    from quantile_surrogate.training.models import fit_logistic, linear_scorer

    X, y = shifted_gaussians(800, 4)
    w = np.random.default_rng(1).integers(1, 5, len(y)).astype(float)
    params = dict(objective="precision_at_rate", target=0.1, max_epochs=4, n_restarts=1, init="logistic",
                  early_stopping=True, random_state=0)
    clf = QuantileClassifier(**params).fit(X, y, sample_weight=w)
    plain = QuantileClassifier(**params).fit(X, y)
    fit_rows, val_rows = QuantileClassifier(**params)._split(y, 0)
    Xt = torch.as_tensor((X - clf.mean_) / clf.scale_)
    seed_torch(restart_seeds(0, 1)[0][0])
    start = linear_scorer(X.shape[1]).double()
    weight = torch.as_tensor(w[fit_rows])
    fit_logistic(start, Xt[fit_rows], torch.as_tensor(y[fit_rows]), alpha=1 / float(weight.sum()), sample_weight=weight)
    expected = objective_metric(y[val_rows], predict_scores(start, Xt[val_rows]).numpy(), objective="precision_at_rate",
                                target=0.1, sample_weight=w[val_rows])
    assert clf.validation_curve_[0] == pytest.approx(expected, abs=1e-12)
    assert clf.validation_curve_[0] != plain.validation_curve_[0]  # the weights matter here


# -- the core and its one-fold and boosting variants ------------------------------------------------
VALUES = st.one_of(st.floats(0, 1), st.just(-np.inf), st.just(np.nan))


@hsettings(max_examples=200, deadline=None)
@given(chosen=VALUES, start=VALUES, noise=st.one_of(st.floats(0, 0.5), st.just(np.nan)), z=st.floats(0.1, 3))
def test_the_one_fold_variant_is_the_validation_splits_old_test(chosen, start, noise, z):
    with np.errstate(invalid="ignore"):
        expected = not chosen - start > z * noise  # QuantileClassifier's test before the one core
    assert keep_start_unless_gain(chosen, start, noise, z)["start_kept"] == expected


@hsettings(max_examples=200, deadline=None)
@given(metric=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, -np.inf]), min_size=1, max_size=8),
       seed=st.integers(0, 100))
def test_the_rounds_variant_is_boostings_old_rule(metric, seed):
    metric = np.array(metric)
    loss = np.random.default_rng(seed).random(len(metric))
    best = np.flatnonzero(metric == metric.max())
    expected = 0 if metric[0] == metric[best[0]] else int(best[np.nanargmin(loss[best])])
    assert select_rounds(metric, loss) == expected


def test_the_core_needs_a_positive_gain_above_the_bar():
    assert clears_bar(0.1, 0.05) and not clears_bar(0.05, 0.05) and not clears_bar(np.nan, 0.0)
    assert not clears_bar(0.0, -1.0)  # never a zero or negative gain
    assert clears_bar(np.array([0.2, 0.01]), np.array([0.1, 0.1])).tolist() == [True, False]
