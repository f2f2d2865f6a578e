"""The loop's typed records (quantile_surrogate.training._state): which restart a Candidate beats, and the
subset columns a TrainingData gathers once."""

import pytest
import torch

from quantile_surrogate.training._state import Candidate, TrainingData


def _candidate(restart, loss, best_value=None):
    return Candidate(restart=restart, loss=loss, model={}, loss_curve=[], n_iter=0, start="random",
                     initial_model={}, best_value=best_value)


def test_a_candidate_beats_another_by_the_lower_training_loss_and_a_tie_keeps_the_first():
    low, high = _candidate(1, 0.5), _candidate(0, 0.7)
    assert low.beats(high, "loss") and not high.beats(low, "loss")
    assert not _candidate(1, 0.5).beats(_candidate(0, 0.5), "loss")  # strict: the earlier restart stays


@pytest.mark.parametrize("value, other, loss, expected", [
    ([0.8, -0.3], [0.7, -0.1], 0.9, True),  # the higher metric wins, whatever the training loss
    ([0.7, -0.1], [0.7, -0.3], 0.9, True),  # equal metrics: the validation loss (the second entry) decides
    ([0.7, -0.3], [0.7, -0.3], 0.4, True),  # an equal validation value: the lower training loss
    ([0.7, -0.3], [0.7, -0.3], 0.6, False),
])
def test_with_validation_the_higher_best_value_wins_and_a_tie_goes_to_the_training_loss(value, other, loss,
                                                                                        expected):
    challenger, best = _candidate(1, loss, value), _candidate(0, 0.5, other)
    assert challenger.beats(best, "validation") is expected
    assert challenger.beats(best, "loss") is (loss < 0.5)  # select="loss" never reads the validation value


def test_training_data_gathers_the_rows_of_A_and_their_columns_once():
    X = torch.arange(10.0).reshape(5, 2)
    in_subset = torch.tensor([True, False, True, True, False])
    data = TrainingData(X, in_subset.clone(), in_subset, torch.tensor([0, 1, 1, 0, 1]),
                        torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert data.subset_index.tolist() == [0, 2, 3]
    assert data.subset_groups.tolist() == [0, 1, 0] and data.subset_weight.tolist() == [1.0, 3.0, 4.0]
    plain = TrainingData(X, in_subset.clone(), in_subset)
    assert plain.subset_groups is None and plain.subset_weight is None and plain.n == 5
