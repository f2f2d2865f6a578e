"""Sparse X through the estimators: the same model as the dense matrix, every SciPy format, float32, pipelines.

The reference is the dense path: a sparse matrix left unscaled (``standardize="auto"``) must give the
same model as its dense copy with ``standardize=False``, to rounding.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.compose import make_column_transformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from quantile_surrogate import GuaranteedThresholdClassifier, QuantileClassifier, QuantileClassifierCV
from quantile_surrogate.baselines import LogisticRegressionBaseline
from quantile_surrogate.training import train
from tests._data import sparse_classification
from tests.estimators._data import QUICK

FORMATS = ["csr", "csc", "coo", "lil", "dok", "bsr"]


def _decisions(a, b, X, Xb=None):
    return a.decision_function(X), b.decision_function(X.toarray() if Xb is None else Xb)


@pytest.mark.parametrize("settings", [
    dict(max_epochs=12, n_restarts=2, random_state=0),  # K-fold selection (small data)
    dict(max_epochs=12, n_restarts=2, random_state=0, early_stopping=True),  # a validation split
    dict(max_epochs=12, n_restarts=1, random_state=0, early_stopping=False, hidden_layer_sizes=(8,), init="random",
         learning_rate=0.02),  # an MLP, its first layer sparse
])
def test_sparse_fit_equals_dense_fit_unscaled(settings):
    X, y = sparse_classification(300, 40)
    sparse = QuantileClassifier(**settings).fit(X, y)
    dense = QuantileClassifier(standardize=False, **settings).fit(X.toarray(), y)
    np.testing.assert_allclose(*_decisions(sparse, dense, X), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(sparse.scale_, np.ones(40))
    assert sparse.best_epoch_ == dense.best_epoch_
    if not settings.get("hidden_layer_sizes"):
        np.testing.assert_allclose(X @ sparse.coef_[0] + sparse.intercept_[0], sparse.decision_function(X), atol=1e-12)


def test_standardize_true_scales_sparse_columns_without_centring():
    X, y = sparse_classification(300, 40)
    weight = np.random.default_rng(0).integers(1, 3, size=300).astype(float)
    clf = QuantileClassifier(standardize=True, **QUICK).fit(X, y, sample_weight=weight)
    reference = StandardScaler(with_mean=False).fit(X, sample_weight=weight)
    np.testing.assert_allclose(clf.scale_, reference.scale_, rtol=1e-12)
    np.testing.assert_array_equal(clf.mean_, np.zeros(40))
    dense = QuantileClassifier(standardize=False, **QUICK).fit(X.toarray() / clf.scale_, y, sample_weight=weight)
    np.testing.assert_allclose(clf.decision_function(X), dense.decision_function(X.toarray() / clf.scale_), atol=1e-9)


@pytest.mark.parametrize("form", FORMATS + ["csr_array"])
def test_every_format_gives_the_csr_model(form):
    X, y = sparse_classification(200, 30)
    converted = sp.csr_array(X) if form == "csr_array" else X.asformat(form)
    reference = QuantileClassifier(**QUICK).fit(X, y)
    clf = QuantileClassifier(**QUICK).fit(converted, y)
    np.testing.assert_allclose(clf.decision_function(converted), reference.decision_function(X), atol=1e-12)


def test_float32_is_kept_and_input_untouched():
    X, y = sparse_classification(200, 30)
    X32 = X.astype(np.float32)
    stored = (X32.data.copy(), X32.indices.copy(), X32.indptr.copy())
    clf = QuantileClassifier(**QUICK).fit(X32, y)
    assert next(clf.model_.parameters()).dtype == torch.float32
    reference = QuantileClassifier(**QUICK).fit(X32.astype(np.float64), y)
    np.testing.assert_allclose(clf.decision_function(X32), reference.decision_function(X), atol=5e-3)  # float32 L-BFGS
    for kept, now in zip(stored, (X32.data, X32.indices, X32.indptr)):
        np.testing.assert_array_equal(kept, now)


def test_empty_rows_and_columns_score_the_intercept():
    X, y = sparse_classification(200, 30)
    X = sp.hstack([X, sp.csr_matrix((200, 2))]).tocsr()  # two empty columns
    X = sp.vstack([X, sp.csr_matrix((1, 32))]).tocsr()  # and an empty row
    y = np.append(y, 0)
    clf = QuantileClassifier(**QUICK).fit(X, y)
    assert clf.decision_function(X)[-1] == pytest.approx(clf.intercept_[0], abs=1e-12)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_stored_values_are_refused(value):
    X, y = sparse_classification(100, 10)
    X.data[3] = value
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        QuantileClassifier(**QUICK).fit(X, y)
    with pytest.raises(ValueError, match="`X` contains NaN or inf"):
        train(torch.nn.Linear(10, 1, dtype=torch.float64), X, torch.as_tensor(y), objective="precision_at_recall",
              target=0.9, max_epochs=1)


def test_cv_guaranteed_and_baseline_take_sparse_input():
    X, y = sparse_classification(300, 40)
    D = X.toarray()
    cv = dict(alphas=(1e-3,), hidden_layer_sizes_grid=((),), random_state=0,
              estimator=QuantileClassifier(max_epochs=6, n_restarts=1))
    dense_cv = dict(cv, estimator=QuantileClassifier(max_epochs=6, n_restarts=1, standardize=False))
    np.testing.assert_allclose(QuantileClassifierCV(**cv).fit(X, y).decision_function(X),
                               QuantileClassifierCV(**dense_cv).fit(D, y).decision_function(D), atol=1e-9)
    guaranteed = [GuaranteedThresholdClassifier(QuantileClassifier(standardize=s, **QUICK), target=0.8, random_state=0)
                  .fit(data, y) for s, data in (("auto", X), (False, D))]
    assert guaranteed[0].threshold_ == pytest.approx(guaranteed[1].threshold_, abs=1e-9)
    np.testing.assert_array_equal(guaranteed[0].predict(X), guaranteed[1].predict(D))
    baseline = [LogisticRegressionBaseline(objective="precision_at_recall", target=0.9).fit(data, y) for data in (X, D)]
    np.testing.assert_allclose(baseline[0].decision_function(X), baseline[1].decision_function(D), atol=1e-6)


def test_text_and_one_hot_pipelines_in_a_grid_search():
    rng = np.random.default_rng(0)
    words = np.array(["good", "bad", "fine", "awful", "ok", "great", "poor", "nice"])
    docs = [" ".join(rng.choice(words, size=6)) for _ in range(240)]
    y = np.array([int(sum(w in ("bad", "awful", "poor") for w in d.split()) >= 3) for d in docs])
    text = make_pipeline(TfidfVectorizer(), QuantileClassifier(target=0.9, max_epochs=5, n_restarts=1, random_state=0))
    search = GridSearchCV(text, {"quantileclassifier__alpha": [1e-3, 1e-2]}, cv=2).fit(docs, y)
    assert search.best_estimator_[-1].coef_.shape == (1, len(words))  # trained on the vocabulary, sparse
    assert (search.predict(docs)[y == 1] == 1).mean() >= 0.9  # recall 0.9 on the training rows
    columns = np.column_stack([rng.integers(0, 50, 240), rng.integers(0, 30, 240)])
    encoder = OneHotEncoder(sparse_output=True, handle_unknown="ignore")
    onehot = make_pipeline(make_column_transformer((encoder, [0, 1])), QuantileClassifier(**QUICK))
    labels = (columns[:, 0] % 7 == 0).astype(int)
    fitted = onehot.fit(columns, labels)
    width = len(np.unique(columns[:, 0])) + len(np.unique(columns[:, 1]))
    assert sp.issparse(fitted[0].transform(columns)) and fitted[-1].n_features_in_ == width


def test_groups_and_weights_on_sparse_rows_equal_the_dense_fit():
    X, y = sparse_classification(300, 40, seed=2)
    groups = np.where(np.arange(300) % 3 == 0, "a", "b")
    weight = np.random.default_rng(1).integers(1, 3, size=300).astype(float)
    fits = [QuantileClassifier(standardize=s, **QUICK).fit(data, y, sample_weight=weight, sensitive_features=groups)
            for s, data in (("auto", X), (False, X.toarray()))]
    np.testing.assert_allclose(fits[0].decision_function(X, sensitive_features=groups),
                               fits[1].decision_function(X.toarray(), sensitive_features=groups), atol=1e-9)
    np.testing.assert_allclose(fits[0].group_thresholds_, fits[1].group_thresholds_, atol=1e-9)


def test_more_columns_than_int32_indexes_is_one_clear_error():
    n = 40  # two stored entries a row, in columns up to 2**31 + 9: a few hundred bytes of data
    X = sp.csr_matrix((np.ones(2 * n), np.tile([5, 2**31 + 9], n).astype(np.int64), np.arange(0, 2 * n + 1, 2)),
                      shape=(n, 2**31 + 10))
    with pytest.raises(ValueError, match=r"`X` has 2,147,483,658 columns, more than 2\*\*31 - 1.*FeatureHasher"):
        QuantileClassifier(**QUICK).fit(X, np.arange(n) % 2)


@pytest.mark.parametrize("early_stopping", ["auto", True])
def test_auto_restarts_are_one_on_sparse_input(early_stopping, monkeypatch):
    """The restarts that the selection trains (K-fold or validation split), read off its calls."""
    from quantile_surrogate.estimators import _quantile_fit, quantile_classifier

    counts = []
    for module, name in ((_quantile_fit, "cross_fit_selection"), (quantile_classifier, "train")):
        def spy(*args, _real=getattr(module, name), **kwargs):
            counts.append(kwargs.get("n_restarts"))
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)
    X, y = sparse_classification(300, 40, seed=2)
    settings = dict(max_epochs=8, random_state=0, early_stopping=early_stopping)

    def restarts(X, **extra):
        counts.clear()
        QuantileClassifier(**settings, **extra).fit(X, y)
        return counts[0]

    assert restarts(X) == 1 and restarts(X, hidden_layer_sizes=(4,)) == 1  # a linear model or an MLP
    assert restarts(X, n_restarts=3) == 3 and restarts(X, init="random") == 3  # asked for, or not measured
    assert restarts(X.toarray()) == 3  # dense input keeps three
