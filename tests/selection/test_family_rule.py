"""The ranking and the family rule on constructed held-out arrays (end to end: tests/estimators/test_cv.py)."""

import numpy as np

from quantile_surrogate.selection._family_rule import describe_choice, rank_candidates, select_by_family, select_entries


def test_the_ranking_puts_a_logistic_start_then_the_earlier_candidate_then_the_lower_loss_first():
    mean_metric = np.array([[[0.6, 0.7, 0.7]], [[0.7, 0.7, np.nan]]])
    mean_loss = np.array([[[1.0, 0.5, 0.4]], [[0.9, 0.1, 0.0]]])
    is_start = np.array([[1.0, 0.0, 0.0]])
    assert rank_candidates(mean_metric, mean_loss, is_start).tolist() == [3, 2, 1, 4, 0, 5]


def test_without_a_reference_each_candidate_keeps_its_best_entry():
    metric = np.array([[[[0.5, 0.6]]], [[[0.7, 0.4]]]]).repeat(3, axis=1)  # (candidates, folds, restarts, epochs)
    chosen, entries, record = select_entries(metric, np.zeros_like(metric), np.zeros((1, 2)), None,
                                             [np.ones(10)] * 3, "precision_at_recall", 0.9, 2.0)
    assert chosen == 1 and entries == [(0, 1), (0, 0)] and record is None


def test_families_within_noise_are_told_apart_by_average_precision():
    # Two families of one candidate each; the MLP's mean is 0.01 higher, far within the binomial noise of 20 rows.
    base = np.array([0.5, 0.6, 0.55])
    metric = np.empty((2, 3, 1, 2))  # (candidates, folds, restarts, epochs)
    metric[0, :, 0, 0], metric[0, :, 0, 1] = base, base + 0.01
    metric[1, :, 0, 0], metric[1, :, 0, 1] = base + 0.01, base + 0.02
    ranking = np.zeros_like(metric)
    ranking[0] = 0.9  # the linear family ranks better
    labels = [np.r_[np.ones(20), np.zeros(80)]] * 3
    is_start = np.array([[1.0, 0.0]])
    chosen, _, record = select_by_family(metric, np.zeros_like(metric), is_start, [[0], [1]], labels,
                                         "precision_at_recall", 0.9, 2.0, ranking=ranking)
    assert record["family_within_noise"].all() and chosen == 0
    chosen, _, record = select_by_family(metric, np.zeros_like(metric), is_start, [[0], [1]], labels,
                                         "precision_at_recall", 0.9, 0.0, ranking=ranking)
    assert not record["family_within_noise"][0] and chosen == 1  # z = 0: only exact ties are within noise


def test_describe_choice_names_the_criterion_that_decided():
    record = dict(family_means=np.array([0.70, 0.66, 0.58]), family_bar=np.array([0.0, 0.05, 0.10]),
                  family_within_noise=np.array([True, True, False]),
                  family_average_precision=np.array([0.80, 0.85, 0.90]))
    line = describe_choice(["linear", "mlp (64,)", "boosted"], record, 1)
    assert line == ("mlp (64,): the highest held-out average precision among the families within noise of the best "
                    "mean (linear): linear mean 0.700, AP 0.800, mlp (64,) mean 0.660, AP 0.850; more than noise "
                    "below: boosted 0.580, bar 0.100")
    alone = dict(record, family_within_noise=np.array([True, False, False]))
    assert describe_choice(["linear", "mlp (64,)", "boosted"], alone, 0).startswith("linear: the best held-out mean, 0.700")


def test_describe_choice_with_one_family_says_so():
    record = dict(family_means=np.array([0.41]), family_bar=np.array([0.0]), family_within_noise=np.array([True]),
                  family_average_precision=np.array([0.5]))
    assert describe_choice(["linear"], record, 0) == "linear: the only family, held-out mean 0.410"
