"""The public entry point (quantile_surrogate.training, the package module: train): its arguments and data, checked
before training.

The loop it runs is tested in test_loop.py, one epoch's steps in test_steps.py.
"""

import pytest
import torch

import quantile_surrogate._utils.checks as validation_module
from quantile_surrogate._utils.checks import (BINARY_01, DATA_NONFINITE_MESSAGE, LABELS_PER_ROW_MESSAGE, NOT_BINARY_MESSAGE,
                                              NOT_FLOAT_MESSAGE, NOT_TENSOR_MESSAGE)
from quantile_surrogate.training import NO_SUBSET_MESSAGE, VALIDATION_ONE_CLASS_MESSAGE, train
from tests._messages import exact
from tests.training._helpers import blobs, linear

torch.set_num_threads(1)


@pytest.mark.parametrize("kwargs,name", [
    (dict(objective="nope"), "objective"), (dict(target=1.0), "target"), (dict(target=0.0), "target"),
    (dict(form="xx"), "form"), (dict(learning_rate=0.0), "learning_rate"), (dict(momentum=1.0), "momentum"),
    (dict(alpha=-1.0), "alpha"), (dict(batch_size=0), "batch_size"), (dict(max_epochs=-1), "max_epochs"),
    (dict(n_restarts=0), "n_restarts"), (dict(init="zeros"), "init"), (dict(bandwidth=0.0), "bandwidth"),
    (dict(surrogate="square"), "surrogate"), (dict(quantile="median"), "quantile"),
    (dict(select="validation"), "validation"),
])
def test_bad_arguments_name_themselves(kwargs, name):
    X, y = blobs(n=40)
    with pytest.raises(ValueError, match=name):
        train(linear(), X, y, **kwargs)

@pytest.mark.parametrize("rows, label, held", [(10, 0, "one class only (0)"), (10, 1, "one class only (1)"), (0, 0, "no rows")])
def test_a_validation_set_of_one_class_is_refused_before_training(rows, label, held):
    # Its metric is 0/0 at every epoch; it used to surface as "training diverged" after the first one.
    X, y = blobs(n=40)
    with pytest.raises(ValueError, match=exact(VALIDATION_ONE_CLASS_MESSAGE, held=held, objective="precision_at_recall")):
        train(linear(), X, y, validation=(X[:rows], torch.full((rows,), label)), max_epochs=2, random_state=0)

@pytest.mark.parametrize("kwargs,name", [
    (dict(batch_size=1.5), "batch_size"), (dict(max_epochs=True), "max_epochs"), (dict(n_restarts="2"), "n_restarts"),
    (dict(learning_rate="0.1"), "learning_rate"), (dict(momentum=None), "momentum"), (dict(tol=[1]), "tol"),
])
def test_arguments_of_the_wrong_type_are_type_errors(kwargs, name):
    X, y = blobs(n=40)
    with pytest.raises(TypeError, match=f"`{name}`"):
        train(linear(), X, y, **kwargs)

def test_bad_data_is_refused():
    X, y = blobs(n=40)
    bad = X.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match=exact(DATA_NONFINITE_MESSAGE, name="X")):
        train(linear(), bad, y)
    with pytest.raises(ValueError, match=exact(LABELS_PER_ROW_MESSAGE, name="y", name_x="X", n=40, shape=(39,))):
        train(linear(), X, y[:-1])
    with pytest.raises(ValueError, match=exact(NO_SUBSET_MESSAGE, subset="positives", objective="precision_at_recall")):
        train(linear(), X, torch.zeros_like(y), objective="precision_at_recall")
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="X", type_name="ndarray")):
        train(linear(), X.numpy(), y)
    with pytest.raises(TypeError, match=exact(NOT_FLOAT_MESSAGE, name="X", dtype=torch.int64)):
        train(linear(), X.long(), y)
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="y", type_name="list")):
        train(linear(), X, y.tolist())
    with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="y", accepted=BINARY_01, values=[0, 2])):
        train(linear(), X, 2 * y)

def test_finite_check_runs_in_chunks_and_still_finds_nan(monkeypatch):
    monkeypatch.setattr(validation_module, "FINITE_CHECK_VALUES", 14)  # 7 rows of 2 columns a chunk
    X = torch.randn(50, 2, dtype=torch.float64)
    y = (torch.arange(50) % 2).long()
    X[45, 1] = float("inf")  # in the 7th chunk
    with pytest.raises(ValueError, match=exact(DATA_NONFINITE_MESSAGE, name="X")):
        train(lambda: torch.nn.Linear(2, 1), X, y, max_epochs=1)
    X[45, 1] = 0.0
    train(lambda: torch.nn.Linear(2, 1), X, y, max_epochs=1)

