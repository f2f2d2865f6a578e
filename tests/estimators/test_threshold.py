"""The shared thresholded-classifier base: one decision_function / predict / score for every estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from quantile_surrogate import GuaranteedThresholdClassifier, QuantileClassifier
from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate._utils.checks import WEIGHT_NEGATIVE_MESSAGE
from quantile_surrogate.estimators._threshold import (MISSING_LABELS_MESSAGE, NOT_2D_MESSAGE, TEXT_COLUMNS_MESSAGE,
                                                      UNSEEN_LABELS_MESSAGE, ThresholdedClassifier)
from quantile_surrogate.objectives import objective_metric
from quantile_surrogate.objectives.thresholds import TIED_SCORES_MESSAGE, TiedScoresWarning
from tests._messages import exact, prefix


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] + 0.8 * rng.standard_normal(n) > 1.0).astype(int)
    return X, y


ESTIMATORS = [
    QuantileClassifier(target=0.8, max_epochs=5, n_restarts=1, random_state=0),
    LogisticRegressionBaseline(objective="precision_at_recall", target=0.8),
    GuaranteedThresholdClassifier(LogisticRegression(), constraint="recall", target=0.8, random_state=0),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_thresholded_classifier_shares_the_base(estimator):
    assert isinstance(estimator, ThresholdedClassifier)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_score_rejects_labels_not_seen_in_fit(estimator):
    # The copies used to drift: one score rejected unseen labels, another did not.
    X, y = _data()
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match=exact(UNSEEN_LABELS_MESSAGE, shown=[5, 6], classes=[0, 1])):
        fitted.score(X, y + 5)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_predict_is_the_sign_of_decision_function_and_score_is_the_metric(estimator):
    X, y = _data()
    labels = np.where(y == 1, "fraud", "ok")  # classes_ = ["fraud", "ok"]: "ok" is the positive class
    fitted = clone(estimator).fit(X, labels)
    decision = fitted.decision_function(X)
    np.testing.assert_array_equal(fitted.predict(X), np.where(decision > 0, "ok", "fraud"))
    expected = objective_metric((labels == "ok").astype(int), decision, objective="precision_at_recall", target=0.8)
    assert fitted.score(X, labels) == expected


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_score_with_integer_sample_weight_is_the_score_on_repeated_rows(estimator):
    X, y = _data()
    fitted = clone(estimator).fit(X, y)
    w = np.random.default_rng(0).integers(0, 4, len(y))
    w[:2] = 1
    rows = np.repeat(np.arange(len(y)), w)
    assert fitted.score(X, y, sample_weight=w) == pytest.approx(fitted.score(X[rows], y[rows]))
    assert fitted.score(X, y, sample_weight=np.ones(len(y))) == pytest.approx(fitted.score(X, y))
    with pytest.raises(ValueError, match=prefix(WEIGHT_NEGATIVE_MESSAGE, name="sample_weight", count=len(y))):
        fitted.score(X, y, sample_weight=-np.ones(len(y)))


def _binary_feature(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random(n) < 0.2).astype(float)  # one binary feature: two distinct scores at most
    y = (rng.random(n) < np.where(x == 1, 0.5, 0.05)).astype(int)
    return x.reshape(-1, 1), y


def test_a_capacity_is_never_exceeded_and_random_tie_break_meets_it_in_expectation():
    X, y = _binary_feature()
    settings = dict(objective="precision_at_rate", target=0.05, max_epochs=20, n_restarts=1, random_state=0)
    with pytest.warns(Warning, match=prefix(TIED_SCORES_MESSAGE)):
        strict = QuantileClassifier(**settings).fit(X, y)
    assert np.mean(strict.predict(X) == 1) <= 0.05  # was every row (rate 1.0) before the tie policy
    with pytest.warns(Warning, match=prefix(TIED_SCORES_MESSAGE)):
        fair = QuantileClassifier(tie_break="random", **settings).fit(X, y)
    rate = np.mean(fair.predict(X) == 1)
    assert abs(rate - 0.05) < 4 * np.sqrt(0.05 * 0.95 / len(y))  # binomial noise of the draws among ~400 tied rows
    np.testing.assert_array_equal(fair.predict(X), fair.predict(X))  # seeded: the same random_state, the same rows
    assert fair.tie_fraction_ == pytest.approx(100 / np.sum(X[:, 0] == X[np.argmax(fair.decision_function(X)), 0]))


def test_random_tie_break_with_groups_meets_each_group_rate():
    X, y = _binary_feature(4000, seed=1)
    groups = np.where(np.arange(len(y)) % 3 == 0, "a", "b")
    with pytest.warns(Warning, match=prefix(TIED_SCORES_MESSAGE)):
        clf = QuantileClassifier(objective="precision_at_rate", target=0.1, max_epochs=20, n_restarts=1,
                                 random_state=0, tie_break="random").fit(X, y, sensitive_features=groups)
    predicted = clf.predict(X, sensitive_features=groups) == 1
    for g in ("a", "b"):
        n_g = np.sum(groups == g)
        assert abs(predicted[groups == g].mean() - 0.1) < 4 * np.sqrt(0.1 * 0.9 / n_g)


@pytest.mark.parametrize("estimator", ESTIMATORS[:2], ids=lambda e: type(e).__name__)
def test_a_dataframe_with_a_text_column_names_the_column_and_the_fix(estimator):
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(city=np.where(y == 1, "x", "y"))
    name, dtype = type(estimator).__name__, frame["city"].dtype
    with pytest.raises(ValueError, match=exact(TEXT_COLUMNS_MESSAGE, columns=["city"], dtype=dtype, name=name,
                                               first="city")):
        clone(estimator).fit(frame, y)
    fitted = clone(estimator).fit(frame[["a", "b", "c"]], y)
    with pytest.raises(ValueError, match=exact(TEXT_COLUMNS_MESSAGE, columns=["c"], dtype=dtype, name=name, first="c")):
        fitted.predict(frame[["a", "b"]].assign(c=frame["city"]))



@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_a_label_that_is_none_is_named_with_its_row(estimator):
    X, y = _data()
    labels = y.astype(object)
    labels[[7, 30]] = None, float("nan")
    with pytest.raises(ValueError, match=exact(MISSING_LABELS_MESSAGE, count=2, rows=[7, 30])):
        clone(estimator).fit(X, labels)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_an_object_array_with_a_text_column_names_the_column_and_the_fix(estimator):
    X, y = _data()
    mixed = X.astype(object)
    mixed[:, 2] = np.where(y == 1, "x", "y")
    name = type(estimator.estimator if hasattr(estimator, "estimator") else estimator).__name__
    message = exact(TEXT_COLUMNS_MESSAGE, columns=[2], dtype=np.dtype(object), name=name, first=[2])
    with pytest.raises(ValueError, match=message) as raised:
        clone(estimator).fit(mixed, y)
    assert str(raised.value).count("\n") == 0
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match=message):
        fitted.predict(mixed)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_a_one_dimensional_x_is_one_line_not_the_whole_array(estimator):
    # scikit-learn's own message prints every value (301 lines for 1,200 rows); its checks look for "Reshape your data".
    X, y = _data()
    with pytest.raises(ValueError, match=exact(NOT_2D_MESSAGE, ndim=1, shape=(400,))) as raised:
        clone(estimator).fit(X[:, 0], y)
    assert "\n" not in str(raised.value) and "Reshape your data" in str(raised.value)
    fitted = clone(estimator).fit(X, y)
    with pytest.raises(ValueError, match=exact(NOT_2D_MESSAGE, ndim=1, shape=(3,))):
        fitted.predict(X[0])
    with pytest.raises(ValueError, match=exact(NOT_2D_MESSAGE, ndim=0, shape=())):
        fitted.decision_function(1.5)

# -- one API: keyword-only parameters, one order of fit/score/predict's extra arguments, one default target --
def _every_estimator_class():
    from quantile_surrogate import QuantileBoostingClassifier, QuantileClassifierCV
    from quantile_surrogate.baselines import BASELINES

    return [QuantileClassifier, QuantileClassifierCV, QuantileBoostingClassifier, GuaranteedThresholdClassifier,
            *BASELINES.values()]


@pytest.mark.parametrize("cls", _every_estimator_class(), ids=lambda c: c.__name__)
def test_parameters_are_keyword_only(cls):
    import inspect

    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    positional = [p.name for p in parameters if p.kind is not p.KEYWORD_ONLY]
    # A meta-estimator takes the estimator it wraps first, as scikit-learn's do.
    assert positional == (["estimator"] if cls is GuaranteedThresholdClassifier else [])
    with pytest.raises(TypeError):
        cls("precision_at_recall") if cls is not GuaranteedThresholdClassifier else cls(LogisticRegression(), "recall")


@pytest.mark.parametrize("cls", _every_estimator_class(), ids=lambda c: c.__name__)
def test_extra_arguments_have_one_order_and_are_keyword_only(cls):
    import inspect

    def extras(method):
        parameters = inspect.signature(method).parameters.values()
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in parameters
                   if p.name not in ("self", "X", "y")), method
        return [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]

    order = ["sample_weight", "sensitive_features"]
    for method, allowed in ((cls.fit, order + ["groups"]), (cls.score, order), (cls.predict, order[1:]),
                            (cls.decision_function, order[1:])):
        names = extras(method)
        assert names == [name for name in allowed if name in names], (method, names)


@pytest.mark.parametrize("estimator", ESTIMATORS[1:], ids=lambda e: type(e).__name__)
def test_no_target_means_the_objectives_default(estimator):
    from quantile_surrogate.objectives import OBJECTIVES

    X, y = _data(3000)  # enough held-out positives for the guarantee at the default recall 0.95
    default = clone(estimator).set_params(target=None).fit(X, y)
    spec = default._objective_spec()
    explicit = clone(estimator).set_params(target=OBJECTIVES[spec.name].default_target).fit(X, y)
    np.testing.assert_array_equal(default.decision_function(X), explicit.decision_function(X))


class _FirstColumn(ThresholdedClassifier):
    """The first column of X as the raw score: the base's threshold and tie-break on scores given by hand."""

    def __init__(self, *, objective="precision_at_rate", target=0.5, tie_break="random", random_state=0):
        self.objective, self.target, self.tie_break, self.random_state = objective, target, tie_break, random_state

    def fit(self, X, y):  # pragma: no cover - the test sets the threshold by hand
        return self

    def _check_X(self, X):
        return np.asarray(X, dtype=np.float64)

    def _raw_scores(self, X):
        return X[:, 0]


def test_random_tie_break_with_groups_takes_each_groups_own_boundary():
    # Rate 0.5 of 4 rows is 2 rows per group. Group "a": 4 above, then three tied at 1, so 1 of the 3 is asked for;
    # group "b": 5 above, then two tied at 4, so 1 of the 2. All rows pooled would give one boundary (score 1).
    scores = np.array([4.0, 1.0, 1.0, 1.0, 5.0, 4.0, 4.0, 0.0])
    y01 = np.array([0, 1, 0, 1, 1, 0, 1, 0])
    clf = _FirstColumn()
    clf.classes_, clf.groups_ = np.array([0, 1]), np.array(["a", "b"])
    with pytest.warns(TiedScoresWarning):
        clf._set_threshold(scores, y01, codes=np.array([0, 0, 0, 0, 1, 1, 1, 1]))
    assert clf.tie_score_.tolist() == [1.0, 4.0]
    assert clf.tie_fraction_.tolist() == pytest.approx([1 / 3, 1 / 2])
    # Predictions: the group-"a" row at 4 is above its threshold, never drawn; tied rows are drawn at their fraction.
    n = 3000
    X = np.repeat([[4.0], [1.0], [4.0], [0.0]], n, axis=0)
    groups = np.repeat(["a", "a", "b", "b"], n)
    positive = clf.predict(X, sensitive_features=groups) == 1
    assert positive[:n].all() and not positive[3 * n:].any()
    assert abs(positive[n:2 * n].mean() - 1 / 3) < 0.05 and abs(positive[2 * n:3 * n].mean() - 1 / 2) < 0.05
