"""The out-of-fold rule: the paired bootstrap against explicit resampling, each step on constructed candidates, end to end."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.objectives import objective_metric
from quantile_surrogate.objectives.bootstrap import _resample_counts
from quantile_surrogate.selection._out_of_fold_rule import GUARD, WIN, paired_resamples, select_out_of_fold
from tests._data import shifted_gaussians

POINTS = [("precision_at_rate", 0.1), ("precision_at_recall", 0.9), ("recall_at_fpr", 0.05)]


def rows(n=120, seed=0):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.3
    positive[:2] = [True, False]
    return rng, positive


@pytest.mark.parametrize("objective,target", POINTS)
def test_the_resamples_are_the_metric_on_explicitly_resampled_rows(objective, target):
    rng, positive = rows()
    scores = np.stack([rng.normal(size=positive.size) + k * positive for k in (0.5, 1.5)])
    scores[1, :10] = scores[1, 10]  # ties
    metric, resampled = paired_resamples(positive, scores, objective, target, n_resamples=7, seed=3)
    counts = _resample_counts(np.random.default_rng(3), positive.size, 7, np.arange(positive.size))
    for c in range(2):
        assert metric[c] == pytest.approx(objective_metric(positive, scores[c], objective=objective, target=target),
                                          abs=1e-12)
        for b in range(7):
            take = np.repeat(np.arange(positive.size), counts[b])  # the same rows for both candidates: paired
            expected = objective_metric(positive[take], scores[c][take], objective=objective, target=target)
            assert resampled[b, c] == pytest.approx(expected, abs=1e-12, nan_ok=True)


def test_integer_weights_are_repeated_rows():
    rng, positive = rows(60, 1)
    scores = rng.normal(size=(1, 60)) + positive
    w = rng.integers(1, 4, 60)
    metric, _ = paired_resamples(positive, scores, "precision_at_rate", 0.2, sample_weight=w.astype(float))
    take = np.repeat(np.arange(60), w)
    assert metric[0] == pytest.approx(objective_metric(positive[take], scores[0][take], objective="precision_at_rate",
                                                       target=0.2), abs=1e-12)


def candidates(positive, rng, strengths):
    return np.stack([rng.normal(size=positive.size) + s * positive for s in strengths])


def test_step_1_the_largest_clear_metric_gain_wins():
    rng, positive = rows(400)
    scores = candidates(positive, rng, [0.3, 1.5, 2.5])
    loss = np.tile([0.1, 0.5, 0.9], (3, 1))  # the loss would pick the start: the metric decides first
    index, record = select_out_of_fold(scores, loss, positive, "precision_at_rate", 0.1, (0,))
    metric = record["pooled_metric"]
    assert metric[2] > metric[1] > metric[0] and record["win_share"][1] >= WIN  # both clear: the larger wins
    assert index == (2,) and record["decided_by"] == "metric"
    assert record["win_share"][2] >= WIN and record["win_share"][0] == 0
    assert record["rule"].startswith("metric: candidate (2,) beats the logistic start")


def test_step_2_the_lowest_loss_decides_where_the_metric_cannot():
    rng, positive = rows(400)
    start = rng.normal(size=400) + positive
    twin = start + 1e-3 * rng.normal(size=400)  # the same ranking: the metric cannot tell them apart
    loss = np.tile([0.5, 0.2], (3, 1))
    index, record = select_out_of_fold(np.stack([start, twin]), loss, positive, "precision_at_rate", 0.1, (0,),
                                       label=lambda i: f"model {i[0]}")
    assert index == (1,) and record["decided_by"] == "loss"
    assert "model 1 has the lowest held-out loss" in record["rule"]


def test_step_3_the_start_stays_where_it_looks_better_than_the_lowest_loss():
    rng, positive = rows(400)
    start = rng.normal(size=400) + 2 * positive
    worse = start + 0.8 * rng.normal(size=400)  # worse on the metric, but the lower loss
    loss = np.tile([0.5, 0.2], (3, 1))
    index, record = select_out_of_fold(np.stack([start, worse]), loss, positive, "precision_at_rate", 0.1, (0,))
    assert index == (0,) and record["decided_by"] == "start" and "but the start beats it" in record["rule"]
    # with a guard of 1 the start's lead never counts: the loss decides
    assert select_out_of_fold(np.stack([start, worse]), loss, positive, "precision_at_rate", 0.1, (0,),
                              guard=1.0)[0] == (1,)


def test_missing_and_diverged_candidates_are_never_chosen():
    rng, positive = rows(300)
    scores = candidates(positive, rng, [1.0, 5.0, 5.0])
    scores[1] = np.nan  # does not exist (a random restart before training)
    scores[2, 0] = np.inf  # diverged
    loss = np.tile([0.5, np.nan, np.inf], (3, 1))
    index, record = select_out_of_fold(scores, loss, positive, "precision_at_rate", 0.1, (0,))
    assert index == (0,) and np.isneginf(record["pooled_metric"][1:]).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.floats(0, 3), min_size=2, max_size=5),
       st.sampled_from(POINTS), st.floats(0.0, 1.0))
def test_the_choice_is_always_one_of_the_three_steps(seed, strengths, point, guard):
    rng = np.random.default_rng(seed)
    positive = rng.random(80) < 0.3
    positive[:2] = [True, False]
    scores = candidates(positive, rng, strengths)
    loss = np.tile(rng.random(len(strengths)), (3, 1))
    (chosen,), record = select_out_of_fold(scores, loss, positive, *point, (0,), guard=guard, n_resamples=50, seed=seed)
    metric, share = record["pooled_metric"], record["win_share"]
    clear = (metric > metric[0]) & (share >= WIN)
    clear[0] = False
    if clear.any():
        assert record["decided_by"] == "metric" and metric[chosen] == metric[clear].max()
    elif record["decided_by"] == "loss":
        assert chosen == int(np.argmin(record["mean_loss"])) != 0
    else:
        assert chosen == 0
    assert 0 <= share.min() and share.max() <= 1 and share[0] == 0 and 0 < GUARD < WIN


# -- end to end through QuantileClassifier's K-fold selection ----------------------------------------
def test_kfold_selection_keeps_the_start_where_logistic_regression_is_already_best():
    X, y = shifted_gaussians(600, seed=1)
    clf = QuantileClassifier(target=0.9, max_epochs=50, random_state=0).fit(X, y)
    sel = clf.selection_
    assert (sel["restart"], sel["epochs_"], sel["start"], sel["decided_by"]) == (0, 0, "logistic", "start")
    assert np.nanmin(sel["mean_loss"][:, 1:]) < sel["mean_loss"][0, 0]  # a trained candidate had the lower loss
    assert "but the start beats it" in sel["rule"]  # and step 3 refused it
    # The start is scikit-learn's LogisticRegression (C=1) on standardised data, so nothing is lost to it.
    lr = make_pipeline(StandardScaler(), LogisticRegression(tol=1e-10)).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X) + clf.threshold_, lr.decision_function(X), atol=1e-4)
    assert clf.score(X, y) == pytest.approx(precision_at_recall(y, lr.decision_function(X), 0.9))


def test_kfold_selection_leaves_the_start_for_the_mixtures_clear_gain():
    X, y = make_gaussian_mixture(1500, random_state=0)
    clf = QuantileClassifier(target=0.9, max_epochs=50, n_restarts=1, random_state=0).fit(X, y)
    sel = clf.selection_
    chosen = (sel["restart"], list(sel["epochs"]).index(sel["epochs_"]))
    assert sel["epochs_"] > 0 and sel["decided_by"] == "metric" and sel["win_share"][chosen] >= WIN
    assert sel["pooled_metric"][chosen] == np.nanmax(np.where(sel["win_share"] >= WIN, sel["pooled_metric"], np.nan))
    X_test, y_test = make_gaussian_mixture(6000, random_state=1)
    lr = LogisticRegression().fit(X, y)
    assert clf.score(X_test, y_test) > precision_at_recall(y_test, lr.decision_function(X_test), 0.9) + 0.1


