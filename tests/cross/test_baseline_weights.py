"""``sample_weight`` in the baselines: frequency weights where the solver takes them, a clear refusal where not.

LogisticRegressionBaseline's weights are tested in tests/cross/test_weights.py. Here: Eban's Lagrangian on
integer weights must be the Lagrangian of the rows repeated (exactly: full-batch and deterministic);
AATP's zero weight must be dropping the row (its candidates count rows, so a repeated row is not a
weight there) and its rates must be weighted; Kar's fit must refuse weights by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from quantile_surrogate._utils.checks import WEIGHT_NEGATIVE_MESSAGE, WEIGHT_SHAPE_MESSAGE, WEIGHT_ZERO_MESSAGE
from quantile_surrogate.baselines import AccuracyAtTheTop, KarAverageSurrogate, LagrangianBaseline
from quantile_surrogate.baselines._base import SUBSET_NO_WEIGHT_MESSAGE
from quantile_surrogate.baselines.kar import KAR_FIT_PARAMS_MESSAGE, KAR_NO_WEIGHTS_MESSAGE
from quantile_surrogate.datasets import make_gaussian_mixture

from tests._messages import exact
from tests.baselines._data import separable


def _weights(n, seed):
    w = np.random.default_rng(seed).integers(0, 4, n)
    w[:2] = 1
    return w


@pytest.mark.parametrize("objective,target", [("precision_at_recall", 0.9), ("precision_at_rate", 0.1)])
@pytest.mark.parametrize("surrogate", ["logistic", "hinge"])
def test_eban_integer_weights_are_the_rows_repeated(objective, target, surrogate):
    # Every sum in the Lagrangian counts copies, so the full-batch iterates are those of the repeated rows
    # (a mean that ignored the weights, or a budget on the row count, moves every step).
    X, y = make_gaussian_mixture(300, random_state=2)
    w = _weights(len(y), 3)
    r = np.repeat(np.arange(len(y)), w)
    kw = dict(objective=objective, target=target, surrogate=surrogate, max_iter=200, random_state=0)
    weighted = LagrangianBaseline(**kw).fit(X, y, sample_weight=w)
    repeated = LagrangianBaseline(**kw).fit(X[r], y[r])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-9, atol=1e-12)
    assert weighted.dual_ == pytest.approx(repeated.dual_, rel=1e-9)
    assert weighted.constrained_rate_ == pytest.approx(repeated.constrained_rate_)
    assert weighted.threshold_ == pytest.approx(repeated.threshold_, rel=1e-9)
    unit = LagrangianBaseline(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(unit.coef_, LagrangianBaseline(**kw).fit(X, y).coef_, rtol=1e-12)


@pytest.mark.parametrize("penalize", ["both", "negatives"])
def test_aatp_zero_weight_is_dropping_the_row_and_the_rates_are_weighted(penalize):
    X, y = make_gaussian_mixture(200, random_state=4)
    w = _weights(len(y), 5).astype(float)
    keep = w > 0
    kw = dict(target=0.1, loss="logistic", penalize=penalize, n_candidates=7, tol=1e-10, random_state=0)
    weighted = AccuracyAtTheTop(**kw).fit(X, y, sample_weight=w)
    dropped = AccuracyAtTheTop(**kw).fit(X[keep], y[keep], sample_weight=w[keep])
    # The same candidates (as rows of the original data), the same solutions and rates.
    np.testing.assert_array_equal(np.flatnonzero(keep)[dropped.candidate_indices_], weighted.candidate_indices_)
    np.testing.assert_allclose(weighted.candidate_rates_, dropped.candidate_rates_)
    np.testing.assert_allclose(weighted.coef_, dropped.coef_, rtol=1e-5, atol=1e-7)
    assert weighted.threshold_ == pytest.approx(dropped.threshold_, rel=1e-5)
    # The chosen candidate's rate is the weight scoring above it over the total weight (brute force).
    scores = X @ weighted.coef_[0]
    chosen = list(weighted.candidate_indices_).index(weighted.best_candidate_)
    above = scores > scores[weighted.best_candidate_]
    assert weighted.candidate_rates_[chosen] == pytest.approx(w[above].sum() / w.sum())
    # Unit weights are no weights.
    unit = AccuracyAtTheTop(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    plain = AccuracyAtTheTop(**kw).fit(X, y)
    np.testing.assert_allclose(unit.coef_, plain.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(unit.candidate_rates_, plain.candidate_rates_)


@pytest.mark.parametrize("estimator",
                         [AccuracyAtTheTop(n_candidates=3, loss="logistic"), LagrangianBaseline(max_iter=50)],
                         ids=lambda e: type(e).__name__)
def test_weighted_baselines_refuse_bad_weights_by_name(estimator):
    X, y = separable(60)
    with pytest.raises(ValueError, match=exact(WEIGHT_NEGATIVE_MESSAGE, name="sample_weight", count=60,
                                               low=np.float64(-1.0))):
        clone(estimator).fit(X, y, sample_weight=-np.ones(60))
    with pytest.raises(ValueError, match=exact(WEIGHT_SHAPE_MESSAGE, name="sample_weight", shape=(3,), n=60)):
        clone(estimator).fit(X, y, sample_weight=np.ones(3))
    spec = clone(estimator)._objective_spec()
    rows_of_a = spec.subset_mask(y == 1)
    # A precision-at-rate's A is every row: then the weights sum to zero, refused as such.
    message = (exact(WEIGHT_ZERO_MESSAGE, name="sample_weight") if rows_of_a.all() else
               exact(SUBSET_NO_WEIGHT_MESSAGE, subset=spec.subset, objective=spec.name))
    with pytest.raises(ValueError, match=message):
        clone(estimator).fit(X, y, sample_weight=np.where(rows_of_a, 0.0, 1.0))


def test_kar_refuses_weights_and_names_the_estimators_that_take_them():
    import inspect

    X, y = separable(60)
    with pytest.raises(TypeError, match=exact(KAR_NO_WEIGHTS_MESSAGE)):
        KarAverageSurrogate(max_iter=2).fit(X, y, sample_weight=np.ones(60))
    assert "QuantileClassifier" in KAR_NO_WEIGHTS_MESSAGE and "AccuracyAtTheTop" in KAR_NO_WEIGHTS_MESSAGE
    with pytest.raises(TypeError, match=exact(KAR_FIT_PARAMS_MESSAGE, names=["weights"])):
        KarAverageSurrogate(max_iter=2).fit(X, y, weights=np.ones(60))
    # Not a parameter of fit, so metadata routing cannot request it (no silently unweighted model).
    assert "sample_weight" not in inspect.signature(KarAverageSurrogate.fit).parameters
