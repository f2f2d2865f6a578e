"""The one divergence error (quantile_surrogate._utils.errors)."""

import pickle

import quantile_surrogate
import quantile_surrogate.training
from quantile_surrogate._utils.errors import TrainingDivergedError


def test_the_divergence_error_is_one_class_that_pickles_with_its_fields():
    # One class wherever it is imported from; a FloatingPointError; rebuilt from its fields when unpickled
    # (a joblib worker's error is pickled to the parent process).
    assert quantile_surrogate.TrainingDivergedError is quantile_surrogate.training.TrainingDivergedError \
        is TrainingDivergedError
    error = TrainingDivergedError("the scores", "after training", learning_rate=0.5, remedy="try again")
    assert isinstance(error, FloatingPointError)
    assert str(error) == ("Training diverged: the scores became NaN or inf after training (learning_rate=0.5). "
                          "Use a smaller learning_rate, e.g. 0.05, or try again.")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is TrainingDivergedError and str(copy) == str(error)
    assert (copy.what, copy.where, copy.learning_rate, copy.remedy) == ("the scores", "after training", 0.5,
                                                                         "try again")
    assert str(TrainingDivergedError("x", "here")) == "Training diverged: x became NaN or inf here. Use a smaller " \
        "learning_rate, or standardise the features."
