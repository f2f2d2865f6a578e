"""QuantileClassifierCV's blend (step 3): the MLP's and the trees' standardised scores, averaged, and its threshold."""

import numpy as np
import pytest

from quantile_surrogate import QuantileClassifier, QuantileClassifierCV
from quantile_surrogate.estimators._blend import BLEND, ScoreBlend, standardising
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier
from quantile_surrogate.objectives.thresholds import constraint_threshold
from tests.estimators._data import interaction, needs_backends

TREES = QuantileBoostingClassifier(n_estimators=20, n_quantile_estimators=10)
FAST = dict(alphas=(1e-3,), estimator=QuantileClassifier(max_epochs=20, n_restarts=1), boosting=TREES)


def test_standardising_is_the_mean_and_sd_of_the_rows_repeated_by_their_weights():
    scores = np.array([0.5, -1.0, 2.0, 3.5])
    weight = np.array([1, 3, 0, 2])
    repeated = np.repeat(scores, weight)
    assert standardising(scores, weight) == pytest.approx((repeated.mean(), repeated.std()), rel=1e-14)
    assert standardising(scores) == pytest.approx((scores.mean(), scores.std()), rel=1e-14)
    assert standardising(np.full(5, 2.0)) == (2.0, 1.0)  # constant scores keep their scale


class _Member:
    def __init__(self, slope, shift):
        self.slope, self.shift = slope, shift

    def _raw_scores(self, X):
        return self.slope * X[:, 0] + self.shift


def test_a_blend_averages_its_members_standardised_scores():
    X = np.random.default_rng(0).normal(size=(50, 2))
    weight = np.arange(50) % 3
    a, b = _Member(2.0, 1.0), _Member(-0.5, 4.0)
    blend, training = ScoreBlend.fit_on((a, b), X, weight)
    np.testing.assert_array_equal(training, blend._raw_scores(X))  # the same numbers, scored once
    (mu_a, sd_a), (mu_b, sd_b) = standardising(a._raw_scores(X), weight), standardising(b._raw_scores(X), weight)
    new = np.random.default_rng(1).normal(size=(7, 2))
    expected = ((a._raw_scores(new) - mu_a) / sd_a + (b._raw_scores(new) - mu_b) / sd_b) / 2
    np.testing.assert_allclose(blend._raw_scores(new), expected, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(blend.offsets_, [mu_a, mu_b])
    # a standardised member has mean 0 and sd 1 on the weighted training rows
    assert standardising(blend._raw_scores(X) * 2, weight)[0] == pytest.approx(0.0, abs=1e-12)


@needs_backends
@pytest.mark.filterwarnings("ignore::quantile_surrogate.TiedScoresWarning")  # tied scores of small folds
def test_where_the_trees_win_the_cv_deploys_the_blend_of_both_refits():
    X, y = interaction()
    clf = QuantileClassifierCV(target=0.9, cv=3, random_state=0, **FAST).fit(X, y)
    alone = QuantileClassifierCV(target=0.9, cv=3, random_state=0, blend=False, **FAST).fit(X, y)
    assert alone.family_ in ("mlp", "boosted")  # the rule's choice, which the blend replaces
    assert clf.family_ == BLEND and isinstance(clf.best_estimator_, ScoreBlend)
    assert "deployed as the blend" in clf.selection_["reason"] and "blend" not in alone.selection_["reason"]
    mlp, trees = clf.best_estimator_.estimators_
    assert mlp.hidden_layer_sizes == (64,) and isinstance(trees, QuantileBoostingClassifier)
    # the winner's member is the refit that the CV without the blend deploys, to the bit
    member = trees if alone.family_ == "boosted" else mlp
    np.testing.assert_array_equal(member._raw_scores(X), alone.best_estimator_._raw_scores(X))
    # the scores are the blend formula, the threshold the exact constraint threshold on them
    raw = clf.decision_function(X) + clf.threshold_
    expected = np.mean([(m._raw_scores(X) - o) / s for m, o, s in
                        zip((mlp, trees), clf.best_estimator_.offsets_, clf.best_estimator_.scales_)], axis=0)
    np.testing.assert_allclose(raw, expected, rtol=0, atol=1e-12)
    assert clf.threshold_ == constraint_threshold(raw, y, objective="precision_at_recall", target=0.9)
    assert clf.predict(X)[y == 1].mean() >= 0.9
    # the same seed, the same model
    again = QuantileClassifierCV(target=0.9, cv=3, random_state=0, **FAST).fit(X, y)
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


@needs_backends
@pytest.mark.filterwarnings("ignore::quantile_surrogate.TiedScoresWarning")
def test_a_blend_with_groups_and_weights_thresholds_each_group_on_the_blended_scores():
    X, y = interaction(seed=2)
    groups = np.where(np.arange(len(y)) % 3 == 0, "a", "b")
    weight = 1.0 + (np.arange(len(y)) % 2)
    clf = QuantileClassifierCV(target=0.8, cv=3, random_state=0, **FAST)
    clf.fit(X, y, sample_weight=weight, sensitive_features=groups)
    assert clf.family_ == BLEND
    offsets = [standardising(m._raw_scores(X), weight)[0] for m in clf.best_estimator_.estimators_]
    np.testing.assert_allclose(clf.best_estimator_.offsets_, offsets, rtol=1e-14)
    predicted = clf.predict(X, sensitive_features=groups) == 1
    for g in ("a", "b"):  # the weighted recall of each group's positives on the training rows
        rows = (groups == g) & (y == 1)
        assert np.average(predicted[rows], weights=weight[rows]) >= 0.8


@needs_backends
@pytest.mark.filterwarnings("ignore::quantile_surrogate.TiedScoresWarning")
def test_no_blend_where_the_linear_model_wins_or_a_family_is_missing():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5))
    y = (X @ np.array([1.5, -1.0, 0.5, 0.0, 0.0]) + 0.3 * rng.normal(size=500) > 1.2).astype(np.int64)
    linear = QuantileClassifierCV(target=0.9, cv=3, random_state=0, **FAST).fit(X, y)
    assert linear.family_ == "linear" and isinstance(linear.best_estimator_, QuantileClassifier)
    X, y = interaction()
    no_mlp = QuantileClassifierCV(target=0.9, cv=3, random_state=0, hidden_layer_sizes_grid=((),), **FAST).fit(X, y)
    assert no_mlp.family_ != BLEND
    no_trees = QuantileClassifierCV(target=0.9, cv=3, random_state=0, alphas=(1e-3,), boosting=None,
                                    estimator=QuantileClassifier(max_epochs=20, n_restarts=1)).fit(X, y)
    assert no_trees.family_ != BLEND
