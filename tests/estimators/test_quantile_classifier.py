"""QuantileClassifier: the paper's claims, the scikit-learn API, labels, bad input."""

import pickle
import re

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from quantile_surrogate import QuantileClassifier
from quantile_surrogate._utils.checks import BINARY_CLASSES, NOT_BINARY_MESSAGE
from quantile_surrogate.datasets import load_ionosphere, make_gaussian_mixture
from quantile_surrogate.metrics import precision_at_rate, precision_at_recall, recall_at_fpr
from quantile_surrogate._utils.errors import DIVERGED_MESSAGE
from quantile_surrogate.estimators._threshold import ONE_CLASS_MESSAGE, ROWS_MISMATCH_MESSAGE
from quantile_surrogate.training import TrainingDivergedError
from tests._messages import exact, prefix
from tests.estimators._data import QUICK, blobs

torch.set_num_threads(1)


# -- what the paper claims ------------------------------------------------------------------
def test_synthetic_mixture_beats_thresholded_logistic_regression():
    X, y = make_gaussian_mixture(6000, random_state=0)
    X_test, y_test = make_gaussian_mixture(6000, random_state=1)
    clf = QuantileClassifier(objective="precision_at_recall", target=0.95, random_state=0).fit(X, y)
    lr = LogisticRegression().fit(X, y)
    ours = clf.score(X_test, y_test)
    theirs = precision_at_recall(y_test, lr.decision_function(X_test), 0.95)
    # Measured: 0.358 against 0.148 (the paper's figure: 0.37 against 0.13); at the training
    # thresholds, precision 0.357 (recall 0.952) against 0.140 (recall 0.962).
    assert ours > theirs + 0.15, (ours, theirs)
    # LR moved to recall 0.95 on the training data, then applied to the test data.
    lr_threshold = np.quantile(lr.decision_function(X)[y == 1], 0.05)
    lr_predicted = lr.decision_function(X_test) > lr_threshold
    ours_predicted = clf.predict(X_test) == 1
    assert y_test[ours_predicted].mean() > y_test[lr_predicted].mean() + 0.15
    assert ours_predicted[y_test == 1].mean() > 0.93  # the recall target roughly holds on new data


@pytest.mark.slow
def test_ionosphere_precision_at_5_percent_at_least_logistic_regression():
    X, y = load_ionosphere()
    paper, default, theirs = [], [], []
    for split in range(10):
        X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=0.3, random_state=split, stratify=y)
        settings = dict(objective="precision_at_rate", target=0.05, random_state=split)
        paper.append(QuantileClassifier(early_stopping=False, **settings).fit(X_train, y_train).score(X_test, y_test))
        default.append(QuantileClassifier(**settings).fit(X_train, y_train).score(X_test, y_test))
        lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
        theirs.append(precision_at_rate(y_test, lr.decision_function(X_test), 0.05))
    # The paper's protocol (every row, all epochs): measured 0.985 against 0.754 (the paper: Q3 0.98, LR 0.76).
    assert np.mean(paper) >= np.mean(theirs) + 0.1, (np.mean(paper), np.mean(theirs))
    # The defaults on 105 rows: a held-out fold's top 5 % is 2 rows, too few to show a gain over the
    # logistic start beyond its noise, so they keep it (measured: 0.754, equal to logistic regression).
    assert np.mean(default) >= np.mean(theirs) - 0.005, (np.mean(default), np.mean(theirs))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_restarts_never_raise_the_training_loss(seed):
    X, y = blobs(seed=seed)
    settings = dict(early_stopping=False, max_epochs=20, init="random", random_state=seed)
    one = QuantileClassifier(n_restarts=1, **settings).fit(X, y)
    three = QuantileClassifier(n_restarts=3, **settings).fit(X, y)
    assert three.train_loss_ <= one.train_loss_
    assert three.restart_losses_[0] == one.train_loss_


def test_same_random_state_is_bit_identical():
    X, y = blobs()
    a = QuantileClassifier(max_epochs=30, random_state=7).fit(X, y)
    b = QuantileClassifier(max_epochs=30, random_state=7).fit(X, y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    assert np.array_equal(a.coef_, b.coef_)


# -- the fitted model ---------------------------------------------------------------------------
@pytest.mark.parametrize("objective,target", [
    ("precision_at_recall", 0.9), ("precision_at_rate", 0.1), ("recall_at_fpr", 0.1),
])
def test_threshold_meets_the_constraint_on_training_data(objective, target):
    X, y = blobs(n=203)
    clf = QuantileClassifier(objective=objective, target=target, **QUICK).fit(X, y)
    predicted = clf.predict(X) == 1
    if objective == "precision_at_recall":
        assert predicted[y == 1].sum() == np.ceil(target * (y == 1).sum())
    elif objective == "precision_at_rate":
        assert predicted.sum() == np.ceil(target * len(y))
    else:
        assert predicted[y == 0].sum() == np.floor(target * (y == 0).sum())
    metric = {"precision_at_recall": precision_at_recall, "precision_at_rate": precision_at_rate,
              "recall_at_fpr": recall_at_fpr}[objective]
    assert clf.score(X, y) == metric(y, clf.decision_function(X), target)


def test_mlp_and_module_factory():
    X, y = blobs()
    mlp = QuantileClassifier(hidden_layer_sizes=(8, 4), **QUICK).fit(X, y)
    assert not hasattr(mlp, "coef_")
    assert isinstance(mlp.model_, torch.nn.Sequential) and len(mlp.model_) == 5
    custom = QuantileClassifier(module_factory=lambda d: torch.nn.Sequential(torch.nn.Linear(d, 3),
                                                                             torch.nn.Tanh(), torch.nn.Linear(3, 1)),
                                **QUICK).fit(X, y)
    # decision_function is the user's module on the standardised features, minus the threshold.
    with torch.no_grad():
        raw = custom.model_(torch.as_tensor((X - custom.mean_) / custom.scale_)).numpy().ravel()
    np.testing.assert_allclose(custom.decision_function(X), raw - custom.threshold_, atol=1e-12)
    assert np.mean(custom.predict(X)[y == 1] == 1) >= QUICK.get("target", 0.95) - 1e-12


def test_scoring_puts_dropout_in_eval_mode():
    # A module left in train mode at scoring time gives a different (random) score on every call.
    X, y = blobs()
    factory = lambda d: torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.ReLU(), torch.nn.Dropout(0.5),  # noqa: E731
                                            torch.nn.Linear(16, 1))
    clf = QuantileClassifier(module_factory=factory, **QUICK).fit(X, y)
    np.testing.assert_array_equal(clf.decision_function(X), clf.decision_function(X))
    assert np.mean(clf.predict(X)[y == 1] == 1) >= QUICK.get("target", 0.95) - 1e-12


@pytest.mark.parametrize("labels", [
    np.array(["bad", "good"]), np.array([-1, 1]), np.array([False, True]), np.array([0, 1]),
])
def test_any_two_labels_come_back(labels):
    X, y = blobs()
    clf = QuantileClassifier(**QUICK).fit(X, labels[y])
    assert list(clf.classes_) == list(labels)
    predicted = clf.predict(X)
    assert predicted.dtype == labels.dtype and set(predicted) <= set(labels)
    assert np.array_equal(predicted == labels[1], clf.decision_function(X) > 0)
    assert clf.score(X, labels[y]) == QuantileClassifier(**QUICK).fit(X, y).score(X, y)


@pytest.mark.parametrize("container", [list, np.asarray, pd.DataFrame,
                                       lambda v: torch.tensor(v, dtype=torch.float64)])
def test_input_containers(container):
    X, y = blobs()
    clf = QuantileClassifier(**QUICK).fit(container(X.tolist()), list(y))
    reference = QuantileClassifier(**QUICK).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(container(X.tolist())), reference.decision_function(X))


# -- scikit-learn integration -----------------------------------------------------------------
def test_pipeline_grid_search_clone_and_pickle():
    X, y = blobs(n=300)
    pipe = make_pipeline(StandardScaler(), QuantileClassifier(objective="precision_at_recall", target=0.8, **QUICK))
    pipe.fit(X, y)
    assert pipe.score(X, y) == pipe[-1].score(pipe[0].transform(X), y)
    search = GridSearchCV(pipe, {"quantileclassifier__alpha": [1e-4, 1e-1]}, cv=2).fit(X, y)
    assert search.best_params_["quantileclassifier__alpha"] in (1e-4, 1e-1)
    assert search.best_score_ == max(search.cv_results_["mean_test_score"])
    twin = clone(pipe[-1])
    assert twin.get_params() == pipe[-1].get_params() and not hasattr(twin, "threshold_")
    restored = pickle.loads(pickle.dumps(pipe))
    assert np.array_equal(restored.decision_function(X), pipe.decision_function(X))
    assert np.array_equal(restored.predict(X), pipe.predict(X))


def test_verbose_into_a_pipe_writes_one_summary_line_per_restart_and_no_bar(capsys):
    # Captured stderr is not a terminal: no carriage-return frames, one line per restart of every run.
    X, y = blobs()
    QuantileClassifier(verbose=True, **QUICK).fit(X, y)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines and "\r" not in err
    assert all(re.fullmatch(r"restart \d+/\d+: \d+ of \d+ epochs, training loss \S+", line) for line in lines), lines


def test_checkpoint_resumes_to_the_same_model(tmp_path):
    X, y = blobs()
    path = tmp_path / "clf.pt"
    first = QuantileClassifier(checkpoint=str(path), **QUICK).fit(X, y)
    assert path.exists()
    second = QuantileClassifier(checkpoint=str(path), **QUICK).fit(X, y)
    assert np.array_equal(first.decision_function(X), second.decision_function(X))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_device():
    X, y = blobs()
    gpu = QuantileClassifier(device="cuda", **QUICK).fit(X, y)
    assert next(gpu.model_.parameters()).is_cuda
    cpu = QuantileClassifier(**QUICK).fit(X, y)
    # float32 on the GPU against float64 on the CPU: close, not equal.
    np.testing.assert_allclose(gpu.decision_function(X), cpu.decision_function(X), atol=1e-2)
    assert (gpu.predict(X)[y == 1] == 1).mean() >= 0.95


# -- bad input ------------------------------------------------------------------------------------
def test_nan_or_inf_in_X():
    X, y = blobs()
    for bad in (np.nan, np.inf):
        X_bad = X.copy()
        X_bad[3, 1] = bad
        with pytest.raises(ValueError, match="Input X contains"):
            QuantileClassifier(**QUICK).fit(X_bad, y)


def test_wrong_classes():
    X, y = blobs()
    with pytest.raises(ValueError, match=exact(ONE_CLASS_MESSAGE, shown=[0], name="QuantileClassifier")):
        QuantileClassifier(**QUICK).fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match=exact(NOT_BINARY_MESSAGE, name="y", accepted=BINARY_CLASSES, values=[0, 1, 2])):
        QuantileClassifier(**QUICK).fit(X, np.arange(len(y)) % 3)


def test_lengths_differ():
    X, y = blobs()
    with pytest.raises(ValueError, match=prefix(ROWS_MISMATCH_MESSAGE)):
        QuantileClassifier(**QUICK).fit(X, y[:-1])


@pytest.mark.parametrize("params,name", [
    (dict(target=0.0), "target"), (dict(target=1.0), "target"), (dict(target=1.5), "target"),
    (dict(target=-0.1), "target"), (dict(objective="accuracy"), "objective"), (dict(form="fn"), "form"),
    (dict(bandwidth=0.0), "bandwidth"), (dict(alpha=-1.0), "alpha"), (dict(learning_rate=0.0), "learning_rate"),
    (dict(momentum=1.0), "momentum"), (dict(batch_size=0), "batch_size"), (dict(max_epochs=0), "max_epochs"),
    (dict(n_restarts=0), "n_restarts"), (dict(init="zeros"), "init"), (dict(surrogate="square"), "surrogate"),
    (dict(validation_fraction=1.0), "validation_fraction"), (dict(quantile="median"), "quantile"),
])
def test_bad_parameters_name_themselves(params, name):
    X, y = blobs(n=40)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        QuantileClassifier(**{**QUICK, **params}).fit(X, y)


def test_divergence_stops_with_a_clear_error():
    X, y = blobs()
    clf = QuantileClassifier(hidden_layer_sizes=(16,), learning_rate=1e300, **QUICK)
    diverged = prefix(DIVERGED_MESSAGE, what="the loss or the parameters")
    with pytest.raises(TrainingDivergedError, match=diverged) as info:
        clf.fit(X, y)
    assert info.value.learning_rate == 1e300  # so the message suggests a smaller one
    assert not hasattr(clf, "threshold_")  # no NaN model is left behind


def _best_line_precision(X, y, recall, n_angles=3600):
    """Exhaustive search over directions (2-D): the best precision at ``recall`` of any linear rule."""
    from quantile_surrogate.metrics import precision_at_recall

    angles = np.linspace(0, 2 * np.pi, n_angles, endpoint=False)
    return max(precision_at_recall(y, X @ np.array([np.cos(a), np.sin(a)]), recall) for a in angles)


def test_mixture_reaches_the_best_linear_rule_at_recall_095():
    # The README's mixture: thresholded logistic regression is far from the best line (about 0.14 vs 0.38).
    X, y = make_gaussian_mixture(3000, random_state=0)
    best = _best_line_precision(X, y, 0.95)
    clf = QuantileClassifier(target=0.95, random_state=0).fit(X, y)
    assert clf.score(X, y) >= best - 0.01
    assert clf.score(X, y) <= best + 1e-12  # the search is the reference: nothing linear beats it


