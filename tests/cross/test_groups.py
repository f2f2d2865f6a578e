"""Group-wise rate constraints: train(groups=), QuantileClassifier.fit(X, y, groups=), the fairness script."""

import importlib.util
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone

from quantile_surrogate import QuantileClassifier
from quantile_surrogate._utils.checks import GROUP_CODES_TYPE_MESSAGE, GROUP_WITHOUT_A_MESSAGE, GROUPS_NEGATIVE_MESSAGE
from quantile_surrogate._utils.checks import GROUPS_SHAPE_MESSAGE as CODES_SHAPE_MESSAGE
from quantile_surrogate.estimators._groups import (
    GROUP_WITHOUT_SUBSET_MESSAGE,
    GROUPS_INCOMPARABLE_MESSAGE,
    GROUPS_MISSING_MESSAGE,
    GROUPS_NONFINITE_MESSAGE,
    GROUPS_SHAPE_MESSAGE,
    GROUPS_UNEXPECTED_MESSAGE,
    GROUPS_UNSEEN_MESSAGE,
)
from quantile_surrogate.losses import precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss
from quantile_surrogate.objectives import objective_loss, objective_metric, predict_scores, training_loss
from quantile_surrogate.training import (VALIDATION_FORM_MESSAGE, VALIDATION_GROUPS_FIX, VALIDATION_NO_GROUPS_FIX,
                                         train)
from tests._messages import exact, prefix

torch.set_num_threads(1)

QUICK = dict(max_epochs=15, n_restarts=1, random_state=0)
TARGETS = {"precision_at_recall": 0.8, "precision_at_rate": 0.2, "recall_at_fpr": 0.1}


def grouped_blobs(n=360, seed=0):
    """Three groups of unequal size whose scores are shifted apart, so one threshold cannot serve all three."""
    rng = np.random.default_rng(seed)
    groups = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.6, 0.3, 0.1])
    shift = np.select([groups == "a", groups == "b"], [0.0, 2.0], -2.0)
    y = (rng.random(n) < 0.3).astype(np.int64)
    X = rng.standard_normal((n, 3)) + 1.5 * y[:, None]
    X[:, 0] += shift
    return X, y, groups


def counts_per_group(predicted, y, groups, objective):
    """Per group: (rows of the constraint predicted positive, rows of the constraint)."""
    out = {}
    for g in np.unique(groups):
        rows = groups == g
        subset = {"precision_at_recall": rows & (y == 1), "precision_at_rate": rows,
                  "recall_at_fpr": rows & (y == 0)}[objective]
        out[g] = (int(predicted[subset].sum()), int(subset.sum()))
    return out


# -- the constraint holds in every group on the training data -----------------------------------
@pytest.mark.parametrize("objective", list(TARGETS))
def test_the_constraint_holds_exactly_in_every_group_on_training_data(objective):
    X, y, groups = grouped_blobs()
    target = TARGETS[objective]
    clf = QuantileClassifier(objective=objective, target=target, **QUICK).fit(X, y, sensitive_features=groups)
    assert list(clf.groups_) == ["a", "b", "c"] and clf.group_thresholds_.shape == (3,)
    assert clf.threshold_ is clf.group_thresholds_
    predicted = clf.predict(X, sensitive_features=groups) == 1
    for g, (hit, size) in counts_per_group(predicted, y, groups, objective).items():
        if objective == "recall_at_fpr":
            assert hit == math.floor(target * size), g  # FPR <= target, as high as it may be
        else:
            assert hit == math.ceil(target * size), g  # recall or rate >= target, the fewest rows that do it
    if objective == "precision_at_rate":
        rates = [hit / size for hit, size in counts_per_group(predicted, y, groups, objective).values()]
        sizes = [size for _, size in counts_per_group(predicted, y, groups, objective).values()]
        assert max(rates) - min(rates) <= 1 / min(sizes)  # demographic parity up to rounding
    # Without groups one threshold meets it overall only; the shifted groups then miss it.
    single = QuantileClassifier(objective=objective, target=target, **QUICK).fit(X, y).predict(X) == 1
    rates = [hit / size for hit, size in counts_per_group(single, y, groups, objective).values()]
    assert max(rates) - min(rates) > 0.15


def test_score_with_groups_is_the_metric_at_the_group_thresholds():
    X, y, groups = grouped_blobs()
    clf = QuantileClassifier(objective="precision_at_recall", target=0.8, **QUICK).fit(X, y, sensitive_features=groups)
    predicted = clf.predict(X, sensitive_features=groups) == 1
    # On the training rows the thresholds re-derived by score() are the fitted ones.
    assert clf.score(X, y, sensitive_features=groups) == pytest.approx(y[predicted].mean(), abs=1e-12)
    codes = np.searchsorted(clf.groups_, groups)
    assert clf.score(X, y, sensitive_features=groups) == objective_metric(
        y, clf.decision_function(X, sensitive_features=groups), objective="precision_at_recall", target=0.8, groups=codes)


def test_linear_attributes_reproduce_the_grouped_decision_function():
    X, y, groups = grouped_blobs()
    clf = QuantileClassifier(objective="precision_at_rate", target=0.2, **QUICK).fit(X, y, sensitive_features=groups)
    codes = np.searchsorted(clf.groups_, groups)
    expected = X @ clf.coef_.ravel() + clf.intercept_[0] - clf.group_thresholds_[codes]
    np.testing.assert_allclose(clf.decision_function(X, sensitive_features=groups), expected, atol=1e-9)


# -- the loss with groups is the sum of per-group losses ----------------------------------------------
@pytest.mark.parametrize("objective", list(TARGETS))
def test_estimator_training_loss_is_the_sum_of_per_group_losses(objective):
    X, y, groups = grouped_blobs()
    target = TARGETS[objective]
    clf = QuantileClassifier(objective=objective, target=target, **QUICK).fit(X, y, sensitive_features=groups)
    codes = np.searchsorted(clf.groups_, groups)
    scores = torch.tensor(clf.decision_function(X, sensitive_features=groups) + clf.group_thresholds_[codes])
    labels = torch.tensor(y)
    function = {"precision_at_recall": precision_at_recall_loss, "precision_at_rate": precision_at_rate_loss,
                "recall_at_fpr": recall_at_fpr_loss}[objective]
    total, penalised = 0.0, 0
    for g in range(3):
        rows = torch.tensor(codes == g)
        in_subset = {"precision_at_recall": labels[rows] == 1, "precision_at_rate": torch.ones_like(labels[rows]) == 1,
                     "recall_at_fpr": labels[rows] == 0}[objective]
        total += float(function(scores[rows], labels[rows], target, threshold_scores=scores[rows][in_subset],
                                reduction="sum"))
        penalised += int((labels[rows] == (1 if objective == "recall_at_fpr" else 0)).sum())
    # train_loss_ is the "mean" reduction: the sum over every penalised row, divided by their number.
    assert clf.train_loss_ == pytest.approx(total / penalised, rel=1e-9)


@pytest.mark.parametrize("batch_size", [None, 32])
def test_a_single_group_is_the_ungrouped_training(batch_size):
    X, y, _ = grouped_blobs(n=200)
    X, y = torch.tensor(X), torch.tensor(y)
    settings = dict(objective="precision_at_recall", target=0.8, batch_size=batch_size, subset_batch_size=16,
                    max_epochs=4, learning_rate=0.1, random_state=0)
    plain = train(lambda: torch.nn.Linear(3, 1), X, y, **settings)
    grouped = train(lambda: torch.nn.Linear(3, 1), X, y, groups=torch.zeros(200, dtype=torch.long), **settings)
    # Equal up to rounding (the grouped graph sums its gradients in another order); the same
    # minibatches of A are drawn, so a different draw would show as a difference far above 1e-10.
    assert grouped.loss_curve == pytest.approx(plain.loss_curve, rel=1e-10)
    torch.testing.assert_close(grouped.model.weight, plain.model.weight, rtol=1e-10, atol=1e-12)


def test_minibatch_training_with_groups_and_validation_lowers_the_grouped_loss():
    X, y, groups = grouped_blobs(n=400)
    codes = torch.tensor(np.searchsorted(["a", "b", "c"], groups))
    X, y = torch.tensor(X), torch.tensor(y)
    settings = dict(objective="precision_at_rate", target=0.2, groups=codes[:300], random_state=0)
    start = train(lambda: torch.nn.Linear(3, 1), X[:300], y[:300], max_epochs=1, learning_rate=1e-12, **settings)
    result = train(lambda: torch.nn.Linear(3, 1), X[:300], y[:300], batch_size=64, max_epochs=10, learning_rate=0.1,
                   validation=(X[300:], y[300:], codes[300:]), **settings)
    assert result.loss < start.loss
    assert len(result.validation_curve) == 11 and all(0 <= v <= 1 for v in result.validation_curve)
    assert result.loss == pytest.approx(training_loss(result.model, X[:300], y[:300], objective="precision_at_rate",
                                                      target=0.2, groups=codes[:300]))


def test_early_stopping_split_keeps_every_group_on_both_sides():
    X, y, groups = grouped_blobs(n=400)
    clf = QuantileClassifier(objective="precision_at_recall", target=0.8, early_stopping=True, max_epochs=3, n_restarts=1,
                             random_state=0).fit(X, y, sensitive_features=groups)
    assert clf.validation_curve_ is not None
    predicted = clf.predict(X, sensitive_features=groups) == 1
    for g in "abc":
        hit, size = counts_per_group(predicted, y, groups, "precision_at_recall")[g]
        assert hit == math.ceil(0.8 * size)


# -- bad input ----------------------------------------------------------------------------------
def test_bad_groups_in_fit():
    X, y, groups = grouped_blobs()
    clf = QuantileClassifier(objective="precision_at_recall", target=0.8, **QUICK)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, shape=(359,), n=360)):
        clf.fit(X, y, sensitive_features=groups[:-1])
    no_positive = groups.copy()
    no_positive[(groups == "c") & (y == 1)] = "a"
    with pytest.raises(ValueError, match=exact(GROUP_WITHOUT_SUBSET_MESSAGE, group="c", subset="positives",
                                               objective="precision_at_recall")):
        clf.fit(X, y, sensitive_features=no_positive)
    # The same groups are fine for precision at a rate, where A is every row.
    QuantileClassifier(objective="precision_at_rate", target=0.2, **QUICK).fit(X, y, sensitive_features=no_positive)
    with pytest.raises(ValueError, match=exact(GROUPS_NONFINITE_MESSAGE)):
        clf.fit(X, y, sensitive_features=np.where(groups == "a", np.nan, 1.0))
    with pytest.raises(TypeError, match=prefix(GROUPS_INCOMPARABLE_MESSAGE)):
        clf.fit(X, y, sensitive_features=np.array([1, "a"] * 180, dtype=object))


def test_bad_groups_in_predict():
    X, y, groups = grouped_blobs()
    grouped = QuantileClassifier(**QUICK).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match=exact(GROUPS_MISSING_MESSAGE, count=3)):
        grouped.predict(X)
    with pytest.raises(ValueError, match=exact(GROUPS_UNSEEN_MESSAGE, shown=["d"], known=["a", "b", "c"])):
        grouped.decision_function(X, sensitive_features=np.where(groups == "c", "d", groups))
    with pytest.raises(ValueError, match=exact(GROUPS_UNSEEN_MESSAGE, shown=["0", "1", "2"], known=["a", "b", "c"])):
        grouped.predict(X, sensitive_features=np.arange(360) % 3)  # numbers where strings were fitted
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, shape=(10,), n=360)):
        grouped.predict(X, sensitive_features=groups[:10])
    plain = QuantileClassifier(**QUICK).fit(X, y)
    with pytest.raises(ValueError, match=exact(GROUPS_UNEXPECTED_MESSAGE)):
        plain.predict(X, sensitive_features=groups)


@pytest.mark.parametrize("groups,error,match", [
    (torch.zeros(100), TypeError, exact(GROUP_CODES_TYPE_MESSAGE, name="groups")),
    (torch.zeros(100, dtype=torch.bool), TypeError, exact(GROUP_CODES_TYPE_MESSAGE, name="groups")),
    (torch.zeros(99, dtype=torch.long), ValueError, exact(CODES_SHAPE_MESSAGE, name="groups", shape=(99,), n=100)),
    (-torch.ones(100, dtype=torch.long), ValueError, exact(GROUPS_NEGATIVE_MESSAGE, name="groups", value=-1)),
    (torch.cat([torch.zeros(99, dtype=torch.long), torch.tensor([1])]), ValueError,
     exact(GROUP_WITHOUT_A_MESSAGE, group=1, name="groups", subset="positives", objective="precision_at_recall",
           more=".")),
])
def test_bad_groups_in_train(groups, error, match):
    X = torch.randn(100, 2, dtype=torch.float64)
    y = torch.zeros(100, dtype=torch.long)
    y[:30] = 1
    with pytest.raises(error, match=match):
        train(lambda: torch.nn.Linear(2, 1), X, y, groups=groups, max_epochs=1)


def test_validation_must_carry_groups_exactly_when_training_does():
    X = torch.randn(60, 2, dtype=torch.float64)
    y = (torch.arange(60) % 3 == 0).long()
    codes = torch.arange(60) % 2
    with pytest.raises(ValueError, match=exact(VALIDATION_FORM_MESSAGE, fix=VALIDATION_GROUPS_FIX)):
        train(lambda: torch.nn.Linear(2, 1), X, y, groups=codes, validation=(X, y), max_epochs=1)
    with pytest.raises(ValueError, match=exact(VALIDATION_FORM_MESSAGE, fix=VALIDATION_NO_GROUPS_FIX)):
        train(lambda: torch.nn.Linear(2, 1), X, y, validation=(X, y, codes), max_epochs=1)


# -- persistence ----------------------------------------------------------------------------------
def test_pickle_and_clone_with_groups():
    X, y, groups = grouped_blobs()
    clf = QuantileClassifier(objective="precision_at_rate", target=0.2, **QUICK).fit(X, y, sensitive_features=groups)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.group_thresholds_, clf.group_thresholds_)
    np.testing.assert_array_equal(restored.decision_function(X, sensitive_features=groups), clf.decision_function(X, sensitive_features=groups))
    fresh = clone(clf)
    assert not hasattr(fresh, "groups_") and fresh.get_params() == clf.get_params()
    refitted = fresh.fit(X, y, sensitive_features=groups)
    np.testing.assert_array_equal(refitted.group_thresholds_, clf.group_thresholds_)
    # Refitting without groups drops them: one threshold again.
    refitted.fit(X, y)
    assert refitted.groups_ is None and isinstance(refitted.threshold_, float)
    refitted.predict(X)


# -- the memory fix -------------------------------------------------------------------------------
def test_training_loss_in_chunks_equals_one_forward_pass():
    torch.manual_seed(0)
    n = 70_000  # more than predict_scores' default chunk of 65,536 rows
    X = torch.randn(n, 2, dtype=torch.float64)
    y = (torch.rand(n, dtype=torch.float64) < 0.2).long()
    codes = (torch.arange(n) % 2)
    model = torch.nn.Linear(2, 1).double()
    with torch.no_grad():
        scores = model(X).reshape(-1)
    for groups in (None, codes):
        extra = {} if groups is None else dict(groups=groups, threshold_groups=groups[y == 1])
        expected = float(objective_loss(scores, y.bool(), objective="precision_at_recall", target=0.8,
                                        threshold_scores=scores[y == 1], **extra).loss)
        got = training_loss(model, X, y, objective="precision_at_recall", target=0.8, groups=groups)
        assert got == pytest.approx(expected, rel=1e-12)
    assert torch.allclose(predict_scores(model, X), scores, rtol=0, atol=1e-12)


# -- the fairness comparison, quickly -------------------------------------------------------------
def test_fairness_comparison_quick_run():
    pytest.importorskip("fairlearn")
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "fairness_comparison.py"
    spec = importlib.util.spec_from_file_location("fairness_comparison", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frame = module.run(datasets=("housing",), splits=1, quick=True)
    assert set(frame.method) == set(module.METHODS) and set(frame.constraint) == {"dp", "eo"}
    train_rows = frame[frame.side == "train"].set_index(["constraint", "method"])
    # Per-group thresholds meet the constraint in every group on the training rows: rates equal
    # up to rounding (the river group has ~17 training rows), every group's recall >= 0.8.
    for method in ("lr_groups", "qc_groups"):
        assert train_rows.loc[("dp", method), "violation"] <= 1 / 15
        assert train_rows.loc[("eo", method), "min_recall"] >= 0.8
    table = module.summary(frame)
    assert "| qc_groups |" in table and "demographic parity at rate 0.2" in table
