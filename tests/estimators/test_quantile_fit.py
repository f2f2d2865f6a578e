"""quantile_surrogate.estimators._quantile_fit: the steps of QuantileClassifier.fit.

The settings each step derives (batch size, folds, early stopping), the selection paths (validation
split, K-fold cross-fitting, refit on every row), the seed drawn for a checkpoint, the linear
coefficients in the original units, and the checks of the settings made in fit.
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from quantile_surrogate import QuantileClassifier
from quantile_surrogate.constraints import gap
from quantile_surrogate.estimators._quantile_fit import (
    AUTO_CONSTRAINED_FULL_BATCH_ROWS,
    AUTO_FULL_BATCH_ROWS,
    AUTO_VALIDATION_ROWS,
)
from quantile_surrogate.training import train
from tests.estimators._data import QUICK, blobs

torch.set_num_threads(1)


@pytest.mark.parametrize("n_rows,batch_size",
                         [(1, None), (AUTO_FULL_BATCH_ROWS, None), (AUTO_FULL_BATCH_ROWS + 1, 1000)])
def test_auto_batch_size_is_full_batch_up_to_the_limit_then_minibatches_of_1000(n_rows, batch_size):
    clf = QuantileClassifier(batch_size="auto", random_state=0)
    settings = clf._train_settings(seed=3, n_rows=n_rows)
    assert settings["batch_size"] == batch_size
    assert settings["random_state"] == 3 and settings["target"] == 0.95  # the objective's default target
    assert QuantileClassifier(batch_size=64)._train_settings(seed=3, n_rows=n_rows)["batch_size"] == 64


@pytest.mark.parametrize("n_rows,batch_size", [(AUTO_FULL_BATCH_ROWS + 1, None), (AUTO_CONSTRAINED_FULL_BATCH_ROWS, None),
                                               (AUTO_CONSTRAINED_FULL_BATCH_ROWS + 1, 1000)])
def test_auto_batch_size_with_constraints_is_full_batch_up_to_their_limit(n_rows, batch_size):
    clf = QuantileClassifier(constraints=[gap("recall", at_most=0.05)])
    assert clf._train_settings(seed=0, n_rows=n_rows)["batch_size"] == batch_size
    assert QuantileClassifier(constraints=[gap("recall", at_most=0.05)], batch_size=64)._train_settings(
        seed=0, n_rows=n_rows)["batch_size"] == 64


def test_k_fold_selection_applies_only_to_small_ungrouped_data_with_enough_rows_per_fold():
    clf = QuantileClassifier(selection_folds=3)
    y = np.r_[np.zeros(100, dtype=np.int64), np.ones(12, dtype=np.int64)]  # 12 positives = 4 per fold
    assert clf._cross_fit_folds(y, None) == 3
    assert clf._cross_fit_folds(y[:-1], None) is None  # 11 positives: fewer than 4 in some fold
    assert clf._cross_fit_folds(y, np.zeros(len(y), dtype=np.int64)) is None  # groups: a validation split
    assert QuantileClassifier(early_stopping=False)._cross_fit_folds(y, None) is None
    assert QuantileClassifier(checkpoint="x.pt")._cross_fit_folds(y, None) is None
    large = np.r_[np.zeros(AUTO_VALIDATION_ROWS, dtype=np.int64), np.ones(12, dtype=np.int64)]
    assert clf._cross_fit_folds(large, None) is None
    assert clf._early_stopping(AUTO_VALIDATION_ROWS + 1) and not clf._early_stopping(AUTO_VALIDATION_ROWS)


def test_refit_trains_the_selected_start_on_every_row():
    X, y = make_classification(400, n_features=6, weights=[0.8, 0.2], flip_y=0.05, random_state=1)
    settings = dict(max_epochs=20, early_stopping=True, selection_se=0, random_state=0)  # a trained model wins
    held_out = QuantileClassifier(**settings).fit(X, y)
    refitted = QuantileClassifier(refit=True, **settings).fit(X, y)
    assert held_out.best_epoch_ == refitted.best_epoch_ > 0  # the same selection ...
    assert not np.array_equal(held_out.coef_, refitted.coef_)  # ... then trained on more rows
    assert len(refitted.loss_curve_) == refitted.best_epoch_
    assert (refitted.predict(X)[y == 1] == 1).mean() >= 0.95


def test_a_kept_logistic_start_is_refitted_on_every_row_without_refit():
    X, y = blobs(n=300)
    kept = QuantileClassifier(max_epochs=20, early_stopping=True, random_state=0).fit(X, y)
    assert kept.best_epoch_ == 0 and kept.selection_["start_kept"]
    # What train() makes of the logistic start on every row (standardised as the estimator does it).
    Xt = torch.as_tensor((X - kept.mean_) / kept.scale_)
    every = train(lambda: torch.nn.Linear(4, 1, dtype=torch.float64), Xt, torch.as_tensor(y), max_epochs=0,
                  n_restarts=1, init="logistic", objective="precision_at_recall", target=0.95)
    # To L-BFGS's tolerance: the estimator sums the rows in its (fit, validation) order. The start on the
    # fit rows alone differs from this by about 0.1.
    np.testing.assert_allclose(kept.model_.weight.detach().numpy(), every.model.weight.detach().numpy(), atol=1e-5)


def test_auto_early_stopping_holds_out_rows_only_on_large_data():
    rng = np.random.default_rng(0)
    y = (rng.random(10_500) < 0.2).astype(np.int64)
    X = rng.standard_normal((10_500, 2)) + y[:, None]
    large = QuantileClassifier(max_epochs=2, n_restarts=1, random_state=0).fit(X, y)
    assert large.validation_curve_ is not None and large.best_epoch_ is not None
    small = QuantileClassifier(max_epochs=2, n_restarts=1, random_state=0).fit(X[:500], y[:500])
    # Small data: no validation split; K-fold cross-fitting picks the epochs, then every row trains that long.
    assert small.validation_curve_ is None and small.selection_ is not None
    assert small.n_iter_ == small.selection_["epochs_"] == len(small.loss_curve_)
    paper = QuantileClassifier(max_epochs=2, n_restarts=1, random_state=0, early_stopping=False).fit(X[:500], y[:500])
    assert paper.validation_curve_ is None and paper.selection_ is None and paper.n_iter_ == 2  # every epoch, every row


def test_k_fold_selection_records_the_out_of_fold_rule():
    X, y = make_classification(600, n_features=4, weights=[0.85, 0.15], random_state=3)
    clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y)
    sel = clf.selection_
    assert sel["fold_metric"].shape == (3, clf._restarts(), len(sel["epochs"]))
    assert sel["pooled_metric"].shape == sel["win_share"].shape == sel["mean_loss"].shape
    assert np.isnan(sel["mean_metric"][1:, 0]).all()  # a random start is no candidate; the logistic start is
    chosen = (sel["restart"], list(sel["epochs"]).index(sel["epochs_"]))
    if sel["decided_by"] == "metric":  # the largest out-of-fold metric among those that beat the start clearly
        clear = (sel["win_share"] >= 0.9) & (sel["pooled_metric"] > sel["pooled_metric"][0, 0])
        assert clear[chosen] and sel["pooled_metric"][chosen] == np.max(sel["pooled_metric"][clear])
    # With selection_se=0 the largest out-of-fold metric wins (ties keep the start).
    plain = QuantileClassifier(target=0.9, max_epochs=20, selection_se=0.0, random_state=0).fit(X, y).selection_
    best = np.max(plain["pooled_metric"])
    picked = plain["pooled_metric"][plain["restart"], list(plain["epochs"]).index(plain["epochs_"])]
    assert picked == best and (plain["epochs_"] == 0 or best > plain["pooled_metric"][0, 0])


def test_k_fold_selection_on_a_metric_tie_the_held_out_loss_decides():
    # Well separated classes: every candidate reaches precision 1.0 out of fold, a tie the metric cannot break.
    X, y = make_classification(600, n_features=4, weights=[0.85, 0.15], class_sep=4.0, random_state=3)
    clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y)
    sel = clf.selection_
    assert sel["pooled_metric"][0, 0] == 1.0 and (sel["win_share"] == 0).all()
    lowest = np.unravel_index(np.nanargmin(sel["mean_loss"]), sel["mean_loss"].shape)
    assert sel["decided_by"] == "loss" and (sel["restart"], list(sel["epochs"]).index(sel["epochs_"])) == lowest
    assert clf.best_epoch_ == sel["epochs_"] > 0 and len(clf.loss_curve_) == sel["epochs_"]
    assert QuantileClassifier(early_stopping=False, max_epochs=2).fit(X, y).selection_ is None


def test_linear_attributes_reproduce_the_decision_function():
    X, y = blobs()
    X = X * [1.0, 10.0, 0.1, 100.0] + [0.0, 5.0, -3.0, 1.0]  # standardisation must be undone in coef_
    clf = QuantileClassifier(early_stopping=False, **QUICK).fit(X, y)
    assert clf.coef_.shape == (1, 4) and clf.intercept_.shape == (1,)
    np.testing.assert_allclose(X @ clf.coef_.ravel() + clf.intercept_[0], clf.decision_function(X), atol=1e-9)
    assert clf.n_features_in_ == 4 and clf.n_iter_ == len(clf.loss_curve_) >= 1


@pytest.mark.parametrize("params,name", [
    (dict(hidden_layer_sizes=(4, 0)), "hidden_layer_sizes"), (dict(device="gpu0"), "device"),
    (dict(module_factory=lambda d: "not a module"), "module_factory"),
])
def test_bad_values_caught_in_fit(params, name):
    X, y = blobs(n=40)
    with pytest.raises((ValueError, TypeError), match=name):
        QuantileClassifier(**{**QUICK, **params}).fit(X, y)


def test_checkpoint_resumes_without_a_random_state(tmp_path):
    # With random_state=None a resumed fit used to draw a new seed and fail on the fingerprint.
    X, y = blobs()
    path = tmp_path / "clf.pt"
    settings = {**QUICK, "random_state": None}
    first = QuantileClassifier(checkpoint=str(path), **settings).fit(X, y)
    second = QuantileClassifier(checkpoint=str(path), **settings).fit(X, y)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))



def test_a_start_state_is_loaded_without_rounding_through_float32():
    from quantile_surrogate.estimators._quantile_fit import _model_from_state

    state = {"weight": torch.tensor([[1 + 2**-40, -3.0]], dtype=torch.float64), "bias": torch.tensor([2**-30 + 0.1],
                                                                                               dtype=torch.float64)}
    before = torch.random.get_rng_state()
    model = _model_from_state(lambda: torch.nn.Linear(2, 1), state, torch.zeros(1, dtype=torch.float64))
    assert model.weight.dtype == torch.float64 and torch.equal(model.weight, state["weight"])  # float32 would round
    assert torch.equal(model.bias, state["bias"]) and torch.equal(torch.random.get_rng_state(), before)
