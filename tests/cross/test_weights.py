"""Row weights (``weight=`` / ``sample_weight=``) everywhere, tested against the rows repeated.

The definition under test: weights are frequency weights, so an integer weight ``w`` must give
exactly what repeating the row ``w`` times gives (loss, gradient, threshold, model), and weight 0
exactly what dropping the row gives. A weighted quantile computed on the wrong scale (ranks
instead of cumulative weights), a penalised sum or mean that ignores the weights, or an
estimator that drops ``sample_weight`` on the way fails these comparisons.
"""

import warnings

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from quantile_surrogate import losses, metrics
from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate.boosting import objective_gradient_hessian
from quantile_surrogate.estimators import GuaranteedThresholdClassifier, QuantileClassifier
from quantile_surrogate.objectives import OBJECTIVES
from quantile_surrogate.objectives.evaluation import training_loss
from quantile_surrogate.objectives.thresholds import TiedScoresWarning, constraint_threshold, group_constraint_thresholds
from quantile_surrogate.quantiles import QUANTILE_ESTIMATORS, interval_quantile, quantile_estimates
from quantile_surrogate._utils.checks import (NOT_TENSOR_MESSAGE, WEIGHT_NEGATIVE_MESSAGE, WEIGHT_NONFINITE_MESSAGE,
                                              WEIGHT_SHAPE_MESSAGE, WEIGHT_ZERO_MESSAGE)
from quantile_surrogate.estimators.calibration import SAMPLE_WEIGHT_GUARANTEE_MESSAGE
from quantile_surrogate.training import CHECKPOINT_WEIGHT_MESSAGE, LOADER_WEIGHT_MESSAGE, train

from tests._cli import FIT, make_frame, run
from tests._messages import exact

ESTIMATORS = ("point", "kernel", "epanechnikov", "lower_mean", "interval", "harrell_davis")
LEVELS = (0.0, 0.02, 0.3, 0.5, 0.77, 0.95, 1.0)


def _weights(n, seed, high=4):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, high, n)
    w[:2] = 1  # never all zero
    return w


def _repeat(w):
    return np.repeat(np.arange(len(w)), w)


# -- quantiles ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("n", [5, 60, 900])  # 900 rows repeated pass 1024: the kernel's window path
def test_integer_weights_give_the_quantile_and_gradient_of_the_repeated_rows(name, n):
    torch.manual_seed(n)
    scores = torch.randn(n, dtype=torch.float64, requires_grad=True)
    w = _weights(n, n)
    rows = torch.as_tensor(_repeat(w))
    weight = torch.as_tensor(w, dtype=torch.float64)
    estimator = QUANTILE_ESTIMATORS[name]
    for level in LEVELS:
        weighted = estimator(scores, level, 0.05, weight=weight)
        grad_w, = torch.autograd.grad(weighted, scores)
        repeated = estimator(scores[rows], level, 0.05)
        grad_r, = torch.autograd.grad(repeated, scores)
        torch.testing.assert_close(weighted, repeated, rtol=0, atol=1e-12)
        torch.testing.assert_close(grad_w, grad_r, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_zero_weight_is_dropping_the_row_and_ties_share_the_cumulative_rank(name):
    scores = torch.tensor([0.5, 2.0, 2.0, -1.0, 3.0, 0.5, 7.0], dtype=torch.float64)
    w = torch.tensor([1.0, 2.0, 0.0, 1.0, 3.0, 1.0, 0.0], dtype=torch.float64)
    kept = w > 0
    for level in LEVELS:
        weighted = QUANTILE_ESTIMATORS[name](scores, level, 0.2, weight=w)
        dropped = QUANTILE_ESTIMATORS[name](scores[kept], level, 0.2, weight=w[kept])
        repeated = QUANTILE_ESTIMATORS[name](scores[torch.as_tensor(_repeat(w.long().numpy()))], level, 0.2)
        assert float(weighted) == pytest.approx(float(dropped), abs=1e-12)
        assert float(weighted) == pytest.approx(float(repeated), abs=1e-12)


def test_quantile_estimates_with_a_subset_and_several_levels_and_interval_bounds():
    torch.manual_seed(0)
    scores = torch.randn(80, dtype=torch.float64)
    subset = torch.rand(80) < 0.5
    w = torch.as_tensor(_weights(80, 1), dtype=torch.float64)
    levels = (0.1, 0.5, 0.9)
    for name in ESTIMATORS:
        got = quantile_estimates(name, scores, levels, bandwidth=0.05, subset=subset, weight=w)
        rows = torch.as_tensor(_repeat(w[subset].long().numpy()))
        want = quantile_estimates(name, scores[subset][rows], levels, bandwidth=0.05)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    rows = torch.as_tensor(_repeat(w.long().numpy()))
    assert float(interval_quantile(scores, 0.2, 0.45, weight=w)) == pytest.approx(
        float(interval_quantile(scores[rows], 0.2, 0.45)), abs=1e-12)
    # No weight in the subset: NaN, as an empty subset.
    nothing = torch.zeros(80, dtype=torch.float64)
    nothing[~subset] = 1.0
    assert torch.isnan(quantile_estimates("kernel", scores, levels, subset=subset, weight=nothing)).all()


@pytest.mark.parametrize("kernel", ["kernel", "epanechnikov"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weighted_window_path_is_taken_and_equals_the_repeated_rows(kernel, dtype):
    from quantile_surrogate.quantiles._kernel_window import weighted_window_selection
    from quantile_surrogate.quantiles._rank_selection import KERNEL_OF_ESTIMATOR, KERNELS

    torch.manual_seed(7)
    n = 5000
    scores = torch.randn(n, dtype=dtype, requires_grad=True)
    w = _weights(n, 13)
    rows = torch.as_tensor(_repeat(w))
    weight = torch.as_tensor(w, dtype=dtype)
    for level in (0.02, 0.5, 0.9):
        positive = w > 0
        window = weighted_window_selection(scores.detach().numpy()[positive].astype(np.float64) if dtype == torch.float64
                                           else scores.detach().numpy()[positive], w[positive].astype(np.float64),
                                           level, 0.05, KERNEL_OF_ESTIMATOR[kernel],
                                           KERNELS[KERNEL_OF_ESTIMATOR[kernel]], torch.promote_types(dtype, torch.float32))
        assert window is not None and window[0].size < positive.sum()  # the window, not every row
        weighted = QUANTILE_ESTIMATORS[kernel](scores, level, 0.05, weight=weight)
        grad_w, = torch.autograd.grad(weighted, scores)
        repeated = QUANTILE_ESTIMATORS[kernel](scores[rows], level, 0.05)
        grad_r, = torch.autograd.grad(repeated, scores)
        eps = torch.finfo(dtype).eps
        span = float(scores.detach().max() - scores.detach().min())
        assert abs(float(weighted) - float(repeated)) <= 4 * eps * span
        torch.testing.assert_close(grad_w, grad_r, rtol=0, atol=8 * eps)


def test_fractional_weights_scale_like_counts_for_the_kernel():
    # The kernel depends on C_j / W only: scaling every weight leaves it unchanged.
    torch.manual_seed(3)
    scores = torch.randn(200, dtype=torch.float64)
    w = torch.rand(200, dtype=torch.float64) + 0.1
    a = QUANTILE_ESTIMATORS["kernel"](scores, 0.8, 0.05, weight=w)
    b = QUANTILE_ESTIMATORS["kernel"](scores, 0.8, 0.05, weight=7.5 * w)
    assert float(a) == pytest.approx(float(b), abs=1e-12)


# -- losses ---------------------------------------------------------------------------------------
LOSSES = [
    (losses.precision_at_recall_loss, {"recall": 0.8}),
    (losses.precision_at_rate_loss, {"rate": 0.1}),
    (losses.precision_at_rate_loss, {"rate": 0.1, "form": "tp"}),
    (losses.recall_at_fpr_loss, {"fpr": 0.1}),
    (losses.pr_auc_loss, {}),
]


@pytest.mark.parametrize("loss_fn, kwargs", LOSSES)
@pytest.mark.parametrize("quantile", ESTIMATORS)
def test_integer_weights_give_the_loss_and_gradient_of_the_repeated_rows(loss_fn, kwargs, quantile):
    torch.manual_seed(0)
    n = 150
    X = torch.randn(n, 3, dtype=torch.float64)
    y = (torch.rand(n) < 0.3).long()
    w = _weights(n, 2)
    rows = torch.as_tensor(_repeat(w))
    beta = torch.randn(3, dtype=torch.float64, requires_grad=True)
    for reduction in ("mean", "sum"):
        weighted = loss_fn(X @ beta, y, weight=torch.as_tensor(w, dtype=torch.float64), quantile=quantile,
                           reduction=reduction, **kwargs)
        grad_w, = torch.autograd.grad(weighted, beta)
        repeated = loss_fn(X[rows] @ beta, y[rows], quantile=quantile, reduction=reduction, **kwargs)
        grad_r, = torch.autograd.grad(repeated, beta)
        torch.testing.assert_close(weighted, repeated, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad_w, grad_r, rtol=1e-10, atol=1e-12)


def test_weighted_loss_with_groups_threshold_scores_and_reduction_none():
    torch.manual_seed(1)
    n = 120
    s = torch.randn(n, dtype=torch.float64)
    y = (torch.rand(n) < 0.4).long()
    g = torch.randint(0, 2, (n,))
    w = _weights(n, 5)
    rows = torch.as_tensor(_repeat(w))
    wt = torch.as_tensor(w, dtype=torch.float64)
    a = losses.precision_at_recall_loss(s, y, 0.8, weight=wt, groups=g, return_threshold=True)
    b = losses.precision_at_recall_loss(s[rows], y[rows], 0.8, groups=g[rows], return_threshold=True)
    torch.testing.assert_close(a.loss, b.loss)
    torch.testing.assert_close(a.threshold, b.threshold)
    pos = y == 1
    c = losses.precision_at_recall_loss(s, y, 0.8, threshold_scores=s[pos], threshold_weight=wt[pos], weight=wt)
    torch.testing.assert_close(c, losses.precision_at_recall_loss(s, y, 0.8, weight=wt))
    per_row = losses.precision_at_recall_loss(s, y, 0.8, weight=wt, reduction="none")
    torch.testing.assert_close(per_row.sum(), losses.precision_at_recall_loss(s, y, 0.8, weight=wt, reduction="sum"))
    assert (per_row[wt == 0] == 0).all()


# Each bad weight column of n rows and the message it gets, as a function of the argument's name.
BAD_WEIGHTS = [
    (lambda n: [1.0, -1.0] + [1.0] * (n - 2),
     lambda name, n: exact(WEIGHT_NEGATIVE_MESSAGE, name=name, count=1, low=np.float64(-1.0))),
    (lambda n: [1.0, np.nan] + [1.0] * (n - 2), lambda name, n: exact(WEIGHT_NONFINITE_MESSAGE, name=name, count=1)),
    (lambda n: [1.0] * (n - 1), lambda name, n: exact(WEIGHT_SHAPE_MESSAGE, name=name, shape=(n - 1,), n=n)),
    (lambda n: [0.0] * n, lambda name, n: exact(WEIGHT_ZERO_MESSAGE, name=name)),
]


@pytest.mark.parametrize("bad, message", BAD_WEIGHTS)
def test_losses_refuse_bad_weights(bad, message):
    with pytest.raises(ValueError, match=message("weight", 3)):
        losses.precision_at_recall_loss(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1, 0, 1]), 0.5,
                                        weight=torch.tensor(bad(3)))
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="weight", type_name="list")):
        losses.precision_at_recall_loss(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1, 0, 1]), 0.5,
                                        weight=[1.0, 1.0, 1.0])


# -- metrics and thresholds ----------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_weighted_metrics_and_thresholds_equal_the_repeated_rows(seed):
    rng = np.random.default_rng(seed)
    n = 80
    y = (rng.random(n) < 0.35).astype(int)
    s = np.round(rng.normal(size=n), 1)  # ties on purpose
    w = _weights(n, seed + 10)
    w[np.argmax(y == 1)] = w[np.argmax(y == 0)] = 1
    r = _repeat(w)
    for fn, target in ((metrics.precision_at_recall, 0.7), (metrics.recall_at_fpr, 0.2),
                       (metrics.precision_at_rate, 0.1)):
        assert fn(y, s, target, sample_weight=w) == pytest.approx(fn(y[r], s[r], target))
    assert metrics.predicted_positive_rate(s, 0.1, y == 1, sample_weight=w) == pytest.approx(
        metrics.predicted_positive_rate(s[r], 0.1, y[r] == 1))
    groups = rng.integers(0, 2, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)
        for name in OBJECTIVES:
            for target in (0.05, 0.3, 0.9):
                assert constraint_threshold(s, y, objective=name, target=target, sample_weight=w) == \
                    constraint_threshold(s[r], y[r], objective=name, target=target)
                np.testing.assert_array_equal(
                    group_constraint_thresholds(s, y, groups, objective=name, target=target, sample_weight=w),
                    group_constraint_thresholds(s[r], y[r], groups[r], objective=name, target=target))


@pytest.mark.parametrize("bad, message", BAD_WEIGHTS)
def test_metrics_estimators_and_train_refuse_bad_sample_weight(bad, message):
    y, s = np.array([1, 0, 1, 0]), np.array([0.1, 0.2, 0.3, 0.4])
    bad, message = np.array(bad(4)), message("sample_weight", 4)
    with pytest.raises(ValueError, match=message):
        metrics.precision_at_recall(y, s, 0.5, sample_weight=bad)
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValueError, match=message):
        QuantileClassifier(max_epochs=1).fit(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match=message):
        LogisticRegressionBaseline().fit(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match=message):
        train(torch.nn.Linear(2, 1).double(), torch.as_tensor(X), torch.as_tensor(y), sample_weight=bad,
              max_epochs=1)


# -- training and estimators ---------------------------------------------------------------------
def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0.8).astype(int)
    return X, y


@pytest.mark.parametrize("init", ["random", "logistic"])
@pytest.mark.parametrize("quantile", ["kernel", "point", "lower_mean"])
def test_full_batch_training_on_integer_weights_is_training_on_repeated_rows(init, quantile):
    X, y = _data()
    w = _weights(len(y), 3)
    r = _repeat(w)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    settings = dict(max_epochs=15, init=init, random_state=0, quantile=quantile, target=0.8)
    a = train(torch.nn.Linear(3, 1).double(), Xt, yt, sample_weight=w, **settings)
    b = train(torch.nn.Linear(3, 1).double(), Xt[r], yt[r], **settings)
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        # random start: the same steps to rounding; logistic start: L-BFGS from another start, to its tolerance
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12 if init == "random" else 1e-4)
    assert a.loss == pytest.approx(b.loss, abs=1e-12 if init == "random" else 1e-5)


def test_train_with_minibatches_runs_and_refuses_a_loader_and_checkpoints(tmp_path):
    X, y = _data()
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    w = _weights(len(y), 4)
    common = dict(batch_size=32, max_epochs=2, random_state=0, target=0.8, subset_from_batch=True)
    result = train(torch.nn.Linear(3, 1).double(), Xt, yt, sample_weight=w, **common)
    # The reported loss is the loss of the returned model on the rows repeated (float64, to rounding).
    r = _repeat(w)
    repeated = training_loss(result.model, Xt[r], yt[r], objective="precision_at_recall", target=0.8)
    assert result.loss == pytest.approx(repeated, rel=1e-12, abs=0)
    # Every step weighs its rows and its own batch's A: rows of weight 0 moved far away change nothing at all.
    X_moved = Xt.clone()
    X_moved[torch.as_tensor(w == 0)] += 100.0
    moved = train(torch.nn.Linear(3, 1).double(), X_moved, yt, sample_weight=w, **common)
    for p, q in zip(result.model.parameters(), moved.model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12)
    assert moved.loss_curve == pytest.approx(result.loss_curve, rel=1e-12)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xt, yt), batch_size=32)
    with pytest.raises(ValueError, match=exact(LOADER_WEIGHT_MESSAGE)):
        train(torch.nn.Linear(3, 1).double(), loader, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match=exact(CHECKPOINT_WEIGHT_MESSAGE)):
        train(torch.nn.Linear(3, 1).double(), Xt, yt, sample_weight=np.ones(len(y)),
              checkpoint=tmp_path / "state.pt")


def test_quantile_classifier_on_integer_weights_is_the_classifier_on_repeated_rows():
    X, y = _data(300, 1)
    w = _weights(len(y), 6)
    r = _repeat(w)
    settings = dict(max_epochs=20, random_state=0, early_stopping=False, standardize=False, target=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)
        a = QuantileClassifier(**settings).fit(X, y, sample_weight=w)
        b = QuantileClassifier(**settings).fit(X[r], y[r])
        dropped = QuantileClassifier(**settings).fit(X[w > 0], y[w > 0], sample_weight=w[w > 0])
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-5)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-5)
    np.testing.assert_allclose(a.decision_function(X), dropped.decision_function(X), atol=1e-5)
    assert a.score(X, y, sample_weight=w) == pytest.approx(b.score(X[r], y[r]))


def test_logistic_baseline_weights_and_the_other_baselines_have_no_sample_weight():
    import inspect

    from quantile_surrogate.baselines import aatp, eban, kar

    X, y = _data(300, 2)
    w = _weights(len(y), 7)
    r = _repeat(w)
    a = LogisticRegressionBaseline(target=0.1, tol=1e-10).fit(X, y, sample_weight=w)
    b = LogisticRegressionBaseline(target=0.1, tol=1e-10).fit(X[r], y[r])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-5)
    # AATP's and Eban's solvers take row weights (tests/baselines/test_base.py checks them); Kar's surrogate has
    # none: no `sample_weight` in fit, so a call with weights is a TypeError naming the alternatives, and
    # metadata routing refuses to request it, rather than a silently unweighted model.
    for cls in (aatp.AccuracyAtTheTop, eban.LagrangianBaseline):
        assert "sample_weight" in inspect.signature(cls.fit).parameters
    assert "sample_weight" not in inspect.signature(kar.KarAverageSurrogate.fit).parameters
    with pytest.raises(TypeError, match=exact(kar.KAR_NO_WEIGHTS_MESSAGE)):
        kar.KarAverageSurrogate().fit(X, y, sample_weight=w)


def test_guaranteed_threshold_refuses_weights_and_says_why():
    X, y = _data()
    with pytest.raises(ValueError, match=exact(SAMPLE_WEIGHT_GUARANTEE_MESSAGE)):
        GuaranteedThresholdClassifier(LogisticRegressionBaseline(), constraint="recall", target=0.8,
                                      delta=0.1).fit(X, y, sample_weight=np.ones(len(y)))


def test_boosting_objective_weights_are_repeated_rows():
    rng = np.random.default_rng(4)
    n = 60
    scores, y = rng.normal(size=n), (rng.random(n) < 0.4).astype(int)
    w = _weights(n, 8)
    r = _repeat(w)
    for quantile in ("point", "kernel"):
        a = objective_gradient_hessian(scores, y, target=0.8, quantile=quantile, sample_weight=w, logloss_weight=0.3)
        b = objective_gradient_hessian(scores[r], y[r], target=0.8, quantile=quantile, logloss_weight=0.3)
        assert a.loss == pytest.approx(b.loss)
        np.testing.assert_allclose(a.threshold, b.threshold, atol=1e-12)
        np.testing.assert_allclose(a.grad, np.bincount(r, b.grad, n), atol=1e-12)
        unclamped = np.bincount(r, b.hess, n) > 1e-3
        np.testing.assert_allclose(a.hess[unclamped], np.bincount(r, b.hess, n)[unclamped], atol=1e-12)
        assert (a.grad[w == 0] == 0).all()


def test_boosted_classifier_uses_the_weights():
    pytest.importorskip("lightgbm")
    from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier

    X, y = _data(400, 5)
    w = _weights(len(y), 9)
    settings = dict(early_stopping=False, random_state=0, n_estimators=5, n_quantile_estimators=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unit = QuantileBoostingClassifier(**settings).fit(X, y, sample_weight=np.ones(len(y)))
        plain = QuantileBoostingClassifier(**settings).fit(X, y)
        weighted = QuantileBoostingClassifier(**settings).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(unit.decision_function(X), plain.decision_function(X))
    scores = weighted._raw_scores(X)
    assert weighted.threshold_ == constraint_threshold(scores, y, objective="precision_at_recall",
                                                       target=weighted._target(), sample_weight=w)
    assert not np.array_equal(weighted.decision_function(X), plain.decision_function(X))


# -- metadata routing -----------------------------------------------------------------------------
def test_metadata_routing_passes_sample_weight_through_pipeline_and_grid_search(routing):
    X, y = _data(200, 6)
    w = _weights(len(y), 11)
    seen = []

    class Spy(LogisticRegressionBaseline):
        def fit(self, X, y, sample_weight=None):
            seen.append(None if sample_weight is None else np.asarray(sample_weight).copy())
            return super().fit(X, y, sample_weight=sample_weight)

    classifier = Spy(target=0.1).set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
    pipe = Pipeline([("scale", StandardScaler().set_fit_request(sample_weight=False)), ("clf", classifier)])
    pipe.fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(seen[-1], w)
    grid = GridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, cv=2).fit(X, y, sample_weight=w)
    assert all(s is not None for s in seen) and len(seen) == 1 + 2 * 2 + 1
    np.testing.assert_array_equal(seen[-1], w)  # the refit on every row
    assert np.isfinite(grid.best_score_)
    q = QuantileClassifier(max_epochs=2).set_fit_request(sample_weight=True)
    Pipeline([("clf", q)]).fit(X, y, sample_weight=w)
    assert hasattr(q, "threshold_")


# -- the command line -----------------------------------------------------------------------------
def test_cli_fit_weight_column_is_not_a_feature(tmp_path, capsys):
    frame = make_frame(300, 0)
    frame["w"] = _weights(len(frame), 12)
    data = tmp_path / "train.csv"
    frame.to_csv(data, index=False)
    code, _, err = run([*FIT, data, "--weight", "w", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    from quantile_surrogate.cli.model_file import load_model

    saved = load_model(tmp_path / "m.qs")
    assert "w" not in saved.schema["numeric"] + saved.schema["categorical"]
    frame["w"] = -1.0
    frame.to_csv(data, index=False)
    code, _, err = run([*FIT, data, "--weight", "w", "--out", tmp_path / "m2.qs"], capsys)
    assert code == 1 and "--weight" in err and "negative" in err
    assert not (tmp_path / "m2.qs").exists()
